//! The command line as a script sees it: what it prints, what it refuses, its exit status.

use crate::support::*;

#[test]
fn a_dry_run_against_a_url_prints_the_steps_and_touches_neither_server_nor_disk() {
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    // Port 9 (discard) has no server: a dry run must not need one.
    let output = benchpass(&[
        "run", "--url", "http://127.0.0.1:9", "--model", "m", "--prompt-tokens", "128", "--prompt-tokens", "2048",
        "--runs", "2", "--warmup", "1", "--max-tokens", "64", "--dry-run", "--out", out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("prompt-matrix 128: 1 warmup + 2 runs × 64 tokens"), "{stdout}");
    assert!(stdout.contains("prompt-matrix 2048: 1 warmup + 2 runs × 64 tokens"), "{stdout}");
    // 2 targets × (1 + 2) runs × 64 tokens.
    assert!(stdout.contains("6 runs, 384 tokens"), "{stdout}");
    assert!(!out.exists());
}

#[test]
fn plan_only_flags_with_a_url_are_refused_by_name() {
    for (flag, value) in [("--resume", "some-pass"), ("--gap-scale", "0")] {
        let output = benchpass(&["run", "--url", "http://127.0.0.1:9", "--model", "m", flag, value]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{flag}: {stderr}");
        assert!(stderr.contains(&format!("{flag} is for plans")), "{flag}: {stderr}");
    }
}

#[test]
fn list_shows_passes_newest_first_and_a_folder_that_is_not_a_pass_points_to_them() {
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let tmp = temp_dir();
    let root = tmp.path().join("passes");
    for id in ["older", "newer"] {
        let out = root.join(id);
        run_pass(&sim, &out, &["--runs", "2", "--max-tokens", "4", "--pass-id", id]);
        // Start times are whole seconds: the second pass must start in a later one.
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    let output = benchpass(&["list", root.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows: Vec<&str> = stdout.lines().collect();
    assert_eq!(rows.len(), 3, "a header and two passes: {stdout}");
    assert!(rows[1].contains("complete") && rows[1].contains("sim × sim-model") && rows[1].ends_with("newer"), "{stdout}");
    assert!(rows[2].ends_with("older"), "{stdout}");
    let json: serde_json::Value = serde_json::from_slice(&benchpass(&["list", root.to_str().unwrap(), "--json"]).stdout).unwrap();
    assert_eq!((json[0]["pass_id"].as_str(), json[0]["runs"].as_u64()), (Some("newer"), Some(2)));

    // A typo: one line that says what is wrong, and the passes it may have meant.
    let output = benchpass(&["export", root.join("nwer").to_str().unwrap(), "--out", tmp.path().join("x.csv").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("nwer is not a pass folder: it does not exist; passes nearby, newest first:"), "{stderr}");
    assert!(stderr.contains("newer") && stderr.contains("older"), "{stderr}");
    assert_eq!(stderr.matches("os error").count(), 0, "{stderr}");
}

#[test]
fn an_unreadable_file_is_named_once_with_its_cause_once() {
    let tmp = temp_dir();
    let output = benchpass(&["import", tmp.path().join("missing.csv").to_str().unwrap(), "--out", tmp.path().join("out").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches("(os error 2)").count(), 1, "{stderr}");
    let output = benchpass(&["plan", "check", tmp.path().join("missing.toml").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("1 problem in the plan:\n"), "a real line break: {stderr}");
    assert!(stderr.contains("missing.toml: cannot read the plan"), "no line 0: {stderr}");
}

/// The committed real pass (llama.cpp and mlx-lm), read-only.
fn real_pass() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/passes/llama-cpp-mlx-lm-20261130-103145")
}

/// `benchpass` run in `dir` (so that relative outputs land there).
fn benchpass_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(BENCHPASS).args(args).current_dir(dir).output().unwrap()
}

#[test]
fn report_writes_under_the_current_folder_by_default() {
    let tmp = temp_dir();
    let output = benchpass_in(tmp.path(), &["report", real_pass().to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let out = tmp.path().join("reports/llama-cpp-mlx-lm-20261130-103145");
    for file in ["report.md", "report.html", "leaderboard.csv"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    // The same bytes as the committed report: one renderer, whichever command calls it.
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/llama-cpp-mlx-lm-20261130-103145/report.md");
    assert_eq!(std::fs::read_to_string(out.join("report.md")).unwrap(), std::fs::read_to_string(committed).unwrap());
    let help = benchpass(&["report", "--help"]);
    assert!(help.status.success() && String::from_utf8_lossy(&help.stdout).contains("--quality-reference"));
}

#[test]
fn diff_prints_csv_into_a_pipe_says_what_it_found_and_fails_on_what_it_is_told() {
    let tmp = temp_dir();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff");
    let passes = tmp.path().join("passes");
    for side in ["a", "b"] {
        assert!(import_csv(&fixtures.join(format!("{side}.csv")), &passes).status.success());
    }
    let (a, b) = (passes.join("fx-a"), passes.join("fx-b"));
    let output = benchpass(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.starts_with("engine,model,lane,workload,target_prompt_tokens,metric,a_median,b_median,delta_pct,verdict,attribution,reasons,concurrency,a_engine_version,b_engine_version\n"), "{stdout}");
    // As fixtures/README.md and analysis/tests/it/fixtures.rs work them out: llama.cpp's three
    // sustained figures and vLLM's decode got better, Ollama's decode is incomparable (a starred
    // cell), llama.cpp's two prompt-matrix steps are gone.
    assert!(stderr.contains("4 faster, 7 within noise, 1 incomparable, 6 gone"), "{stderr}");
    let fail = |on: &str| benchpass(&["diff", a.to_str().unwrap(), b.to_str().unwrap(), "--fail-on", on]).status.code();
    assert_eq!(fail("slower"), Some(0), "no row is slower");
    assert_eq!(fail("incomparable"), Some(4));
    assert_eq!(fail("slower,faster"), Some(4));
    let md = tmp.path().join("d.md");
    assert!(benchpass(&["diff", a.to_str().unwrap(), b.to_str().unwrap(), "--out", md.to_str().unwrap()]).status.success());
    assert!(std::fs::read_to_string(&md).unwrap().contains('|'), "Markdown by the extension");
}

#[test]
fn the_leaderboard_format_follows_the_extension() {
    let tmp = temp_dir();
    let pass = real_pass();
    let csv = benchpass(&["leaderboard", pass.to_str().unwrap()]);
    let csv = String::from_utf8_lossy(&csv.stdout).into_owned();
    assert!(csv.starts_with("pass_id,machine,engine,"), "CSV on stdout without --out");
    let n_rows = csv.lines().count() - 1;
    let md = tmp.path().join("lb.md");
    assert!(benchpass(&["leaderboard", pass.to_str().unwrap(), "--out", md.to_str().unwrap()]).status.success());
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.starts_with("# Leaderboard\n") && !md.contains(",machine,"), "Markdown, never CSV inside .md");
    // Rankings of the same rows, less the prompt sizes (a fact of a run, not a figure to rank).
    let n_prompt_rows = csv.lines().filter(|l| l.contains(",prompt_tokens,tokens,")).count();
    let listed = md.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| # ")).count();
    assert_eq!(listed, n_rows - n_prompt_rows, "every other row, in some ranking");
    let json = tmp.path().join("lb.json");
    assert!(benchpass(&["leaderboard", pass.to_str().unwrap(), "--out", json.to_str().unwrap()]).status.success());
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(json.as_array().unwrap().len(), n_rows);
    assert!(json[0]["median"].is_number() && json[0]["engine"].is_string());
    let refused = benchpass(&["leaderboard", pass.to_str().unwrap(), "--out", tmp.path().join("lb.html").to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(1));
}

#[test]
fn export_without_out_writes_the_runs_csv_to_stdout() {
    let output = benchpass(&["export", real_pass().to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    assert!(stdout.starts_with(&format!("{RUNS_CSV_HEADER},concurrency,attempt,api,temperature,request_rate,past_eos,session,turn,prompt_id,cached_prompt_tokens,prompt_set\n")), "{stdout}");
    assert_eq!(stdout.lines().count(), 1 + harness::pass::read_pass(&real_pass()).unwrap().runs.len());
}

#[test]
fn completions_and_the_man_page_come_from_the_command_line_itself() {
    let bash = benchpass(&["completions", "bash"]);
    let bash = String::from_utf8_lossy(&bash.stdout);
    assert!(bash.contains("_benchpass()") && bash.contains("leaderboard") && bash.contains("--fail-on"), "every command and flag");
    let man = benchpass(&["man"]);
    assert!(String::from_utf8_lossy(&man.stdout).starts_with(".ie"), "roff");
}

#[test]
fn a_concurrency_sweep_runs_every_step_at_each_level_and_keeps_them_apart() {
    let sim = Sim::start(&["--decode-tps", "2000", "--prefill-tps", "100000"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let pass = run_pass(&sim, &out, &["--concurrency", "1,2", "--runs", "4", "--max-tokens", "8"]);
    let steps = &pass.info.request.as_ref().unwrap().steps;
    assert_eq!(steps.iter().map(|s| s.concurrency).collect::<Vec<_>>(), [Some(1), Some(2)]);
    let at = |n: u32| pass.runs.iter().filter(|r| r.concurrency == n).count();
    assert_eq!((at(1), at(2)), (4, 4), "every run says the streams it ran beside");
    // The levels are two steps of the analysis: the 2-stream one has serving figures.
    let rows = benchpass(&["leaderboard", out.to_str().unwrap()]);
    let rows = String::from_utf8_lossy(&rows.stdout);
    assert!(rows.contains(",decode_tps,") && rows.contains(",decode_tps@c2,") && rows.contains(",output_tps@c2,"), "{rows}");
    // In a sweep the 1-stream step has its serving figures too: the first point of the curve.
    assert!(rows.contains(",output_tps,"), "{rows}");
    let report = tmp.path().join("report");
    assert!(benchpass(&["report", out.to_str().unwrap(), "--out", report.to_str().unwrap()]).status.success());
    let svg = std::fs::read_to_string(report.join("charts/throughput-latency.svg")).unwrap();
    assert!(svg.contains("aggregate output tok/s") && svg.contains("median TTFT"), "the throughput–latency chart");
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("throughput-latency.svg") && md.contains("Serving under concurrency"), "{md}");
    let dry = benchpass(&["run", "--url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "1,4", "--dry-run"]);
    assert!(String::from_utf8_lossy(&dry.stdout).contains("sustained at 4 streams: 0 warmup + 3 runs"));
    let twice = benchpass(&["run", "--url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "2,2"]);
    assert!(String::from_utf8_lossy(&twice.stderr).contains("--concurrency 2 appears twice"));
}

#[test]
fn a_finished_run_shows_its_figures_and_the_next_command_or_json_for_scripts() {
    let sim = Sim::start(&["--decode-tps", "1000", "--prefill-tps", "100000"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let base = ["run", "--url", &sim.url, "--runs", "3", "--max-tokens", "101", "--out"];
    let output = benchpass(&[&base[..], &[out.to_str().unwrap(), "--progress", "plain"]].concat());
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), out.to_str().unwrap(), "stdout is the pass folder, for scripts");
    assert!(stderr.contains("| engine | model | workload |") && stderr.contains("| openai-compatible | sim-model | sustained |"), "{stderr}");
    assert!(stderr.contains(&format!("next: benchpass report {}", out.display())), "{stderr}");

    let json_out = tmp.path().join("json");
    let output = benchpass(&[&base[..], &[json_out.to_str().unwrap(), "--progress", "quiet", "--json"]].concat());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("stdout is JSON");
    assert_eq!((json["status"].as_str(), json["runs"].as_u64(), json["failed"].as_u64()), (Some("complete"), Some(3), Some(0)));
    let step = &json["steps"][0];
    assert_eq!((step["workload"].as_str(), step["runs"].as_u64(), step["concurrency"].as_u64()), (Some("sustained"), Some(3), Some(1)));
    // 1000 tok/s by the schedule: 100 decode intervals of 1 ms each run. A 100 ms span keeps a
    // late wake-up of a millisecond or two on a busy machine inside the 10 % (over 10 intervals,
    // a first token 1.7 ms late once read 1210 tok/s).
    let decode = &step["decode_tps"];
    assert!((decode["median"].as_f64().unwrap() / 1000.0 - 1.0).abs() < 0.1, "{decode}");
    assert!(decode["band_low"].as_f64().unwrap() <= decode["median"].as_f64().unwrap(), "3 runs: a band");
    assert!(String::from_utf8_lossy(&output.stderr).find("| engine |").is_none(), "quiet: no table");
}

#[test]
fn sim_help_gives_every_rate_its_default_and_an_import_says_what_machine_it_recorded() {
    let help = String::from_utf8_lossy(&benchpass(&["sim", "--help"]).stdout).into_owned();
    for default in ["[default profile: 20]", "[default profile: 2000]", "[default profile: 60]", "[default profile: sim-model]"] {
        assert!(help.contains(default), "{default}: {help}");
    }
    let tmp = temp_dir();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/llama-bench");
    let file = std::fs::read_dir(&fixture).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "json")).unwrap();
    let output = benchpass(&["import", "--format", "llama-bench", file.to_str().unwrap(), "--out", tmp.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("no --machine NAME: the pass records machine `unknown`"), "{stderr}");
}

#[test]
fn requests_at_a_rate_leave_at_their_seeded_poisson_arrivals() {
    let sim = Sim::start(&["--decode-tps", "5000", "--prefill-tps", "1000000", "--base-latency-ms", "1"]);
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--request-rate", "20", "--arrival-seed", "3", "--runs", "12", "--max-tokens", "4"]);
    let params = pass.info.request.as_ref().unwrap();
    assert_eq!((params.request_rate, params.arrival_seed, params.concurrency), (Some(20.0), Some(3), 4096));
    let due = harness::runner::Arrivals { rate: 20.0, seed: 3 }.offsets(12);
    let mut measured: Vec<_> = pass.runs.iter().filter(|r| !r.warmup).collect();
    measured.sort_by_key(|r| r.scheduled_ns);
    assert_eq!(measured.len(), due.len());
    for (i, (run, due)) in measured.iter().zip(&due).enumerate() {
        // Both instants are on the phase's monotonic clock: each run was due at its seeded
        // arrival, and was sent at it or after it, never before. Measuring from the first
        // run's start instead would make every run look early whenever the first woke late.
        let (scheduled, sent) = (run.scheduled_ns.unwrap(), run.sent_ns.unwrap());
        assert_eq!(scheduled, due.as_nanos() as u64, "request {i}: due at its seeded arrival");
        assert!(sent >= scheduled, "request {i}: sent {} ms before its arrival", (scheduled - sent) as f64 / 1e6);
        // A task wakes a little after its instant; on a loaded machine, later. The bound is
        // half the mean gap between arrivals.
        let late_ms = (sent - scheduled) as f64 / 1e6;
        assert!(late_ms < 25.0, "request {i}: sent {late_ms} ms after its arrival");
    }
    let refused = benchpass(&["run", "--url", &sim.url, "--request-rate", "5", "--concurrency", "1,2"]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--request-rate takes one --concurrency"));
}

#[test]
fn a_run_at_several_streams_ends_with_its_serving_figures() {
    let sim = Sim::start(&["--decode-tps", "2000", "--prefill-tps", "100000"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let output = benchpass(&["run", "--url", &sim.url, "--concurrency", "2", "--runs", "4", "--max-tokens", "8", "--progress", "plain", "--out", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("| streams | output tok/s | req/s | TTFT p50/p90/p99 ms |"), "{stderr}");
    assert!(stderr.contains("| openai-compatible | sim-model | sustained | 2 |"), "{stderr}");
}

#[test]
fn plan_check_names_every_unknown_key_and_then_every_other_problem() {
    let tmp = temp_dir();
    let plan = tmp.path().join("plan.toml");
    std::fs::write(
        &plan,
        "name = \"x\"\ncolour = \"blue\"\n\n[[engines]]\nname = \"e\"\nurl = \"http://127.0.0.1:9\"\npreset = \"no-such-preset\"\nspeed = 3\n\n\
         [[models]]\nname = \"m\"\n\n[[cells]]\nengine = \"e\"\nmodel = \"m\"\n\n[[workloads]]\nkind = \"sustained\"\n",
    )
    .unwrap();
    let output = benchpass(&["plan", "check", plan.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("3 problems in the plan:"), "{stderr}");
    // Each with its own line: the two unknown keys, then what the checks found with them set aside.
    assert!(stderr.contains("plan.toml:2: unknown field `colour`"), "{stderr}");
    assert!(stderr.contains("plan.toml:8: unknown field `speed`"), "{stderr}");
    assert!(stderr.contains("plan.toml:7: no engine preset `no-such-preset`"), "{stderr}");
}
