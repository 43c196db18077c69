//! Bad input and faults: nothing half-written, nothing dropped, nothing leaked.

use harness::pass::{PassStatus, RUNS_FILE};

use crate::support::*;

#[test]
fn an_unreachable_server_is_one_line_naming_the_url_and_leaves_no_pass() {
    // Port 9 (discard) on loopback: nothing listens there on a test machine.
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let output = benchpass(&["run", "--url", "http://127.0.0.1:9", "--model", "m", "--out", out.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("http://127.0.0.1:9/v1/models"), "{stderr}");
    assert!(stderr.contains("refused"), "{stderr}");
    assert!(!out.exists(), "no half-written pass");
}

#[test]
fn a_stalled_stream_is_recorded_with_its_error_class_and_the_pass_goes_on() {
    let sim = Sim::start(&["--decode-tps", "1000", "--stall-after-tokens", "5"]);
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "2", "--max-tokens", "20", "--idle-timeout", "0.3"]);
    assert_eq!(pass.info.status, PassStatus::Complete);
    assert_eq!(pass.runs.len(), 2);
    for run in &pass.runs {
        assert_eq!(run.error.as_ref().unwrap().class, "idle-timeout");
        // What arrived before the stall is kept.
        assert_eq!(run.events.iter().filter(|e| e.carries_tokens()).count(), 5);
    }
}

#[test]
fn http_errors_are_recorded_and_the_pass_goes_on() {
    let sim = Sim::start(&["--decode-tps", "1000", "--fail-every", "2"]);
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "4", "--max-tokens", "8"]);
    let classes: Vec<_> = pass.runs.iter().map(|r| r.error.as_ref().map(|e| e.class.as_str())).collect();
    // Requests 1 and 3 (0-based) fail; /tokenize probes are not completions and do not count.
    assert_eq!(classes, [None, Some("http-500"), None, Some("http-500")]);
    assert_eq!(pass.runs[1].http_status, Some(500));
    assert!(pass.runs[1].error.as_ref().unwrap().message.contains("injected failure"));
}

#[test]
fn without_model_the_one_model_the_server_lists_is_picked_and_recorded_as_picked() {
    let sim = Sim::start(&["--decode-tps", "1000", "--model", "only-model"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let output = benchpass(&["run", "--url", &sim.url, "--runs", "1", "--max-tokens", "4", "--progress", "quiet", "--out", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("model: only-model (the only model"), "{stderr}");
    let pass = harness::pass::read_pass(&out).unwrap();
    assert_eq!(pass.info.cells[0].model, "only-model");
    assert!(pass.info.request.as_ref().unwrap().model_picked);
}

#[test]
fn failed_runs_exit_3_unless_allowed_and_the_pass_is_recorded_either_way() {
    let sim = Sim::start(&["--decode-tps", "1000", "--fail-every", "2"]);
    let tmp = temp_dir();
    for (allow, code) in [(false, 3), (true, 0)] {
        let out = tmp.path().join(format!("pass-{allow}"));
        let mut args = vec!["run", "--url", &sim.url, "--model", "sim-model", "--runs", "2", "--max-tokens", "4", "--progress", "quiet"];
        args.extend(["--out", out.to_str().unwrap()]);
        if allow {
            args.push("--allow-failures");
        }
        let output = benchpass(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{stderr}");
        assert_eq!(stderr.contains("1 of 2 runs failed"), !allow, "{stderr}");
        let pass = harness::pass::read_pass(&out).unwrap();
        assert_eq!((pass.runs.len(), pass.info.status), (2, PassStatus::Complete));
    }
}

#[test]
fn the_api_key_never_reaches_the_disk() {
    const KEY: &str = "sk-planted-4f1d9c2b7e";
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let output = std::process::Command::new(BENCHPASS)
        .args(["run", "--url", &sim.url, "--model", "sim-model", "--runs", "1", "--max-tokens", "4"])
        .args(["--api-key-env", "BENCHPASS_TEST_KEY", "--progress", "plain", "--out", out.to_str().unwrap()])
        .env("BENCHPASS_TEST_KEY", KEY)
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(!String::from_utf8_lossy(&output.stderr).contains(KEY));
    assert!(!String::from_utf8_lossy(&output.stdout).contains(KEY));
    for entry in std::fs::read_dir(&out).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(KEY));
    }
}

#[test]
fn a_missing_api_key_variable_is_an_error_before_anything_runs() {
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let output = benchpass(&[
        "run", "--url", "http://127.0.0.1:9", "--model", "m", "--api-key-env", "BENCHPASS_SURELY_UNSET", "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("BENCHPASS_SURELY_UNSET"));
}

#[test]
fn a_pass_folder_is_never_overwritten() {
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    run_pass(&sim, &out, &["--runs", "1", "--max-tokens", "4"]);
    let output = benchpass(&["run", "--url", &sim.url, "--model", "sim-model", "--out", out.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("already holds a pass"));
    assert_eq!(harness::pass::read_pass(&out).unwrap().runs.len(), 1);
}

#[test]
fn a_torn_last_line_is_reported_and_the_runs_before_it_survive() {
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    run_pass(&sim, &out, &["--runs", "2", "--max-tokens", "4"]);
    // A writer killed mid-append leaves a line without its newline.
    let runs = out.join(RUNS_FILE);
    let mut text = std::fs::read_to_string(&runs).unwrap();
    text.push_str("{\"cell\":\"c0\",\"workl");
    std::fs::write(&runs, text).unwrap();

    let pass = harness::pass::read_pass(&out).unwrap();
    assert_eq!(pass.runs.len(), 2);
    assert_eq!(pass.torn_tail.as_ref().map(|t| t.line), Some(3));
    let output = benchpass(&["export", out.to_str().unwrap(), "--out", "-"]);
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("line 3 is cut short"));
    assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 3, "header and two runs");
}

#[test]
fn weights_are_hashed_into_the_pass() {
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let tmp = temp_dir();
    let weights = tmp.path().join("model");
    std::fs::create_dir(&weights).unwrap();
    std::fs::write(weights.join("model.gguf"), "abc").unwrap();
    let cache = tmp.path().join("cache.json");
    let pass = run_pass(
        &sim,
        &pass_dir(&tmp),
        &["--runs", "1", "--max-tokens", "4", "--weights", weights.to_str().unwrap(), "--hash-cache", cache.to_str().unwrap()],
    );
    let build = &pass.info.cells[0].build;
    assert_eq!(build.files[0].sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    // sha256 of the one-line listing "ba78…15ad  model.gguf\n".
    let listing = format!("{}  model.gguf\n", build.files[0].sha256);
    assert_eq!(build.sha256.as_deref(), Some(harness::provenance::hex(&sha2_digest(listing.as_bytes())).as_str()));
    assert!(cache.exists(), "the hash cache is saved");
}

fn sha2_digest(bytes: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).to_vec()
}

#[test]
fn ctrl_c_keeps_the_finished_runs_and_marks_the_pass_interrupted() {
    // 20 tokens at 20 tok/s: about a second a run, so the interrupt lands mid-pass.
    let sim = Sim::start(&["--decode-tps", "20"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let mut child = std::process::Command::new(BENCHPASS)
        .args(["run", "--url", &sim.url, "--model", "sim-model", "--runs", "10", "--max-tokens", "20"])
        .args(["--progress", "quiet", "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the first run to land on disk, then interrupt as a terminal's Ctrl-C would.
    let runs = out.join(RUNS_FILE);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::read_to_string(&runs).map_or(true, |t| t.lines().count() < 1) {
        assert!(std::time::Instant::now() < deadline, "no run finished in 30 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(130));

    let pass = harness::pass::read_pass(&out).unwrap();
    assert_eq!(pass.info.status, PassStatus::Interrupted);
    assert!(pass.torn_tail.is_none());
    assert!((1..10).contains(&pass.runs.len()), "{} runs", pass.runs.len());
    assert!(pass.runs.iter().all(|r| r.error.is_none() && r.completion_tokens == Some(20)));
}

/// One run against a sim with `fault`; returns the run.
fn run_with_fault(fault: &str, extra: &[&str]) -> harness::pass::RunRecord {
    let sim = Sim::start(&["--decode-tps", "1000", "--fault", fault]);
    let tmp = temp_dir();
    let mut args = vec!["--runs", "2", "--max-tokens", "20", "--first-token-timeout", "1", "--idle-timeout", "1"];
    args.extend_from_slice(extra);
    let pass = run_pass(&sim, &pass_dir(&tmp), &args);
    assert_eq!(pass.info.status, PassStatus::Complete, "{fault}: the pass goes on");
    assert_eq!(pass.runs.len(), 2, "{fault}: every run is recorded");
    pass.runs[0].clone()
}

fn token_events(run: &harness::pass::RunRecord) -> usize {
    run.events.iter().filter(|e| e.carries_tokens()).count()
}

#[test]
fn a_server_crash_mid_stream_keeps_what_arrived() {
    let run = run_with_fault("crash-mid-stream", &[]);
    assert_eq!(run.error.as_ref().unwrap().class, "stream-broken");
    // Tokens 0–4 arrived (events of one token each) before the cut.
    assert_eq!(token_events(&run), 5);
}

#[test]
fn a_hang_before_the_first_token_times_out() {
    let run = run_with_fault("hang-before-first-token", &[]);
    assert_eq!(run.error.as_ref().unwrap().class, "first-token-timeout");
    assert_eq!(token_events(&run), 0);
    assert_eq!(run.ttft_ms, None);
}

#[test]
fn truncated_json_is_a_malformed_event_and_the_rest_is_kept() {
    let run = run_with_fault("truncated-json", &[]);
    assert_eq!(run.error.as_ref().unwrap().class, "malformed-event");
    assert_eq!(token_events(&run), 20, "every well-formed event is still recorded");
}

#[test]
fn a_line_that_is_not_sse_is_ignored() {
    let run = run_with_fault("malformed-sse-line", &[]);
    assert_eq!(run.error, None);
    assert_eq!(run.completion_tokens, Some(20));
}

#[test]
fn a_reply_that_is_not_an_event_stream_is_named() {
    let run = run_with_fault("wrong-content-type", &[]);
    let error = run.error.as_ref().unwrap();
    assert_eq!(error.class, "not-a-stream");
    assert!(error.message.contains("text/plain"), "{}", error.message);
}

#[test]
fn a_huge_event_is_taken_whole() {
    let run = run_with_fault("huge-event", &[]);
    assert_eq!(run.error, None);
    assert!(run.events.iter().any(|e| e.text.len() > 1_000_000));
    assert_eq!(run.completion_tokens, Some(20), "usage, not the text, gives the count");
}

#[test]
fn a_stream_of_only_a_role_event_has_no_tokens() {
    let run = run_with_fault("only-role", &[]);
    assert_eq!(run.error.as_ref().unwrap().class, "no-tokens");
}

#[test]
fn a_second_done_and_data_after_done_change_nothing() {
    for fault in ["double-done", "data-after-done"] {
        let run = run_with_fault(fault, &[]);
        assert_eq!(run.error, None, "{fault}");
        assert_eq!((run.completion_tokens, token_events(&run)), (Some(20), 20), "{fault}");
    }
}

#[test]
fn an_error_event_mid_stream_is_a_server_error_with_its_message_and_what_came_before() {
    // The default fault point: after 5 tokens.
    let run = run_with_fault("error-event", &[]);
    let error = run.error.as_ref().unwrap();
    assert_eq!((error.class.as_str(), error.message.as_str()), ("server-error", "injected server error"));
    assert_eq!(token_events(&run), 5, "the 5 tokens before the error are kept");
}

#[test]
fn a_stream_that_just_ends_is_an_incomplete_stream() {
    let run = run_with_fault("ends-early", &[]);
    let error = run.error.as_ref().unwrap();
    assert_eq!(error.class, "incomplete-stream", "{}", error.message);
    assert!(error.message.contains("without a finish reason or [DONE]"));
    assert_eq!((token_events(&run), run.finish_reason.as_deref()), (5, None));
}

#[test]
fn a_429_is_recorded_and_its_retry_after_honoured() {
    let sim = Sim::start(&["--decode-tps", "1000", "--fail-every", "2", "--fail-status", "429"]);
    let tmp = temp_dir();
    let started = std::time::Instant::now();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "3", "--max-tokens", "8"]);
    let classes: Vec<_> = pass.runs.iter().map(|r| r.error.as_ref().map(|e| e.class.as_str())).collect();
    assert_eq!(classes, [None, Some("http-429"), None]);
    assert!(started.elapsed().as_secs_f64() >= 1.0, "Retry-After: 1 was waited before the next request");
}

#[test]
fn a_server_that_goes_away_mid_pass_leaves_connect_errors_and_a_complete_pass() {
    // 20 tokens at 10 tok/s: the first run streams for about 2 s from benchpass's start up
    // (a debug build on two busy cores: a few hundred ms; no self-check before it), and the
    // sim is killed 0.7 s in, during it. It was 20 tok/s and 0.4 s, with the self-check
    // before the run: on a loaded machine the kill came first.
    let mut sim = Sim::start(&["--decode-tps", "10"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let child = std::process::Command::new(BENCHPASS)
        .args(["run", "--url", &sim.url, "--model", "sim-model", "--runs", "3", "--max-tokens", "20", "--progress", "quiet", "--no-self-check"])
        .args(["--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    sim.kill();
    let status = child.wait_with_output().unwrap().status;
    assert_eq!(status.code(), Some(3), "recorded, with failed runs");
    let pass = harness::pass::read_pass(&out).unwrap();
    assert_eq!(pass.info.status, PassStatus::Complete);
    let classes: Vec<_> = pass.runs.iter().map(|r| r.error.as_ref().map(|e| e.class.clone())).collect();
    assert_eq!(classes[0].as_deref(), Some("stream-broken"), "{classes:?}");
    assert!(classes[1..].iter().all(|c| c.as_deref() == Some("connect")), "{classes:?}");
}

#[test]
fn a_newer_schema_or_a_corrupt_pass_json_is_one_clear_line() {
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    run_pass(&sim, &out, &["--runs", "1", "--max-tokens", "4"]);
    let pass_json = out.join(harness::pass::PASS_FILE);
    let text = std::fs::read_to_string(&pass_json).unwrap();

    std::fs::write(&pass_json, text.replace("\"schema_version\": 1", "\"schema_version\": 99")).unwrap();
    let output = benchpass(&["export", out.to_str().unwrap(), "--out", "-"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("pass.json: schema version 99 is newer than this benchpass reads (1); upgrade benchpass"), "{stderr}");

    std::fs::write(&pass_json, &text[..text.len() / 2]).unwrap();
    let stderr = String::from_utf8_lossy(&benchpass(&["export", out.to_str().unwrap(), "--out", "-"]).stderr).into_owned();
    assert!(stderr.contains("pass.json: not a benchpass pass.json"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
fn a_pass_json_without_a_schema_version_or_a_bad_middle_line_is_named() {
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    run_pass(&sim, &out, &["--runs", "3", "--max-tokens", "4"]);
    let pass_json = out.join(harness::pass::PASS_FILE);
    let text = std::fs::read_to_string(&pass_json).unwrap();
    std::fs::write(&pass_json, text.replace("\"schema_version\": 1,", "")).unwrap();
    let stderr = String::from_utf8_lossy(&benchpass(&["export", out.to_str().unwrap(), "--out", "-"]).stderr).into_owned();
    assert!(stderr.contains("pass.json: not a benchpass pass.json: missing field `schema_version`"), "{stderr}");
    std::fs::write(&pass_json, text).unwrap();

    // A damaged line that is not the last is not a torn tail: it is named with its line, and
    // the other runs are read (hostile_records.rs follows it through every command).
    let runs = out.join(RUNS_FILE);
    let lines: Vec<String> = std::fs::read_to_string(&runs).unwrap().lines().map(str::to_owned).collect();
    std::fs::write(&runs, format!("{}\n{{\"not\": \"a run\"}}\n{}\n", lines[0], lines[2])).unwrap();
    let output = benchpass(&["export", out.to_str().unwrap(), "--out", "-"]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("runs.jsonl:2 could not be read (not a run record: missing field `cell`"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 3, "the header and the two other runs");
}

#[test]
fn an_empty_weights_folder_is_named_before_anything_runs() {
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let tmp = temp_dir();
    let (out, weights) = (pass_dir(&tmp), tmp.path().join("empty-model"));
    std::fs::create_dir_all(&weights).unwrap();
    let output = benchpass(&["run", "--url", &sim.url, "--model", "m", "--weights", weights.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the folder holds no files"), "{stderr}");
    assert!(!out.exists(), "no half-written pass");
}

#[test]
fn a_missing_weight_file_is_named_before_anything_runs() {
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let output = benchpass(&["run", "--url", &sim.url, "--model", "m", "--weights", "/nonexistent/model.gguf", "--out", out.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("weights /nonexistent/model.gguf: cannot open"), "{stderr}");
    assert!(!out.exists(), "no half-written pass");
}

#[test]
fn a_line_cut_inside_a_character_is_a_torn_tail_and_resume_ends_a_line_left_open() {
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    run_pass(&sim, &out, &["--runs", "2", "--max-tokens", "4"]);
    let runs = out.join(RUNS_FILE);
    let mut bytes = std::fs::read(&runs).unwrap();
    // Half of "é" (0xC3 0xA9): not UTF-8, and no newline.
    bytes.extend_from_slice(b"{\"cell\":\"c0\",\"text\":\"caf\xC3");
    std::fs::write(&runs, &bytes).unwrap();
    let pass = harness::pass::read_pass(&out).unwrap();
    assert_eq!((pass.runs.len(), pass.torn_tail.as_ref().map(|t| t.line)), (2, Some(3)));

    // Reopening for a resume cuts the torn line, so the next record starts a line of its own.
    let mut writer = harness::pass::PassWriter::reopen(&out).unwrap();
    writer.append(&pass.runs[0]).unwrap();
    let pass = harness::pass::read_pass(&out).unwrap();
    assert_eq!((pass.runs.len(), pass.torn_tail), (3, None));

    // A whole record whose newline was lost: reopening ends its line first.
    let mut text = std::fs::read_to_string(&runs).unwrap();
    text.pop();
    std::fs::write(&runs, text).unwrap();
    let mut writer = harness::pass::PassWriter::reopen(&out).unwrap();
    writer.append(&pass.runs[0]).unwrap();
    assert_eq!(harness::pass::read_pass(&out).unwrap().runs.len(), 4);
}

/// An address of this machine that is not loopback, if it has one: the local end of a UDP
/// socket "connected" towards a private address (no packet is sent).
fn non_loopback_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("10.255.255.255:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn the_sim_listens_on_loopback_unless_told_otherwise() {
    let sim = Sim::start(&[]);
    assert!(sim.url.starts_with("http://127.0.0.1:"), "{}", sim.url);
    let port: u16 = sim.url.rsplit(':').next().unwrap().parse().unwrap();
    // Reachable on loopback, and not on the machine's other address.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    match non_loopback_address() {
        Some(ip) => {
            let refused = std::net::TcpStream::connect_timeout(&(ip, port).into(), std::time::Duration::from_secs(2));
            assert!(refused.is_err(), "the sim answered on {ip}:{port}");
        }
        None => eprintln!("note: this machine has no non-loopback address; checked loopback only"),
    }
    // `--help` says so too.
    let help = String::from_utf8_lossy(&benchpass(&["sim", "--help"]).stdout).into_owned();
    assert!(help.contains("loopback unless you say otherwise") && help.contains("[default: 127.0.0.1]"), "{help}");
}

/// Whether this machine lets an unprivileged process have its own mount namespace.
fn private_mounts_work() -> bool {
    std::process::Command::new("unshare").args(["-rm", "true"]).status().is_ok_and(|s| s.success())
}

#[test]
fn a_full_disk_stops_the_pass_with_a_clear_error_and_the_runs_written_intact() {
    if !private_mounts_work() {
        eprintln!("note: `unshare -rm` is not allowed here; the disk-full test needs a private 64 KiB tmpfs");
        return;
    }
    let sim = Sim::start(&["--decode-tps", "4000"]);
    let tmp = temp_dir();
    let (mount, kept) = (tmp.path().join("small-disk"), tmp.path().join("kept"));
    std::fs::create_dir_all(&mount).unwrap();
    // A 64 KiB disk of its own, in a private mount namespace; the pass is copied out before the
    // namespace (and its disk) goes away.
    let script = r#"mount -t tmpfs -o size=64k tmpfs "$1" || exit 99
"$2" run --url "$3" --model sim-model --engine sim --runs 500 --max-tokens 16 --out "$1/pass" --progress quiet
code=$?
cp -r "$1/pass" "$4"
exit $code"#;
    let output = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", script, "sh"])
        .args([mount.to_str().unwrap(), BENCHPASS, &sim.url, kept.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(99), "mounting the small disk failed: {stderr}");
    assert!(!output.status.success(), "500 runs cannot fit in 64 KiB: {stderr}");
    assert!(stderr.contains("runs.jsonl: could not write run") && stderr.contains("No space left on device"), "{stderr}");
    assert!(stderr.contains("(the disk is full: free space, then resume the pass or measure again)"), "{stderr}");
    // As many runs on disk as the error says, every one whole: the half-written line was taken back.
    let before: usize = stderr.split("; the ").nth(1).and_then(|s| s.split(' ').next()).and_then(|n| n.parse().ok()).unwrap();
    let pass = harness::pass::read_pass(&kept).unwrap();
    assert!(pass.torn_tail.is_none());
    assert_eq!(pass.runs.len(), before);
    assert!(before >= 10, "{before} runs fitted");
    assert!(pass.runs.iter().all(|r| r.error.is_none() && r.completion_tokens == Some(16)));
}
