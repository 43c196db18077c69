//! Plans run by the real binary against reference engines that benchpass starts and stops
//! itself, with gaps scaled to 0.

use harness::pass::{read_pass, Workload};

use crate::support::*;

/// A seed-protocol-shaped plan: two engines (plain decoding, and one that stops at 40 tokens),
/// a KV-cache folder to clear, sustained then the prompt matrix.
fn seed_like_plan(dir: &std::path::Path) -> std::path::PathBuf {
    seed_like_plan_with(dir, "", 0)
}

/// [`seed_like_plan`] with `head` put at the top and `warmup` warmups per workload.
fn seed_like_plan_with(dir: &std::path::Path, head: &str, warmup: u32) -> std::path::PathBuf {
    let cache = dir.join("kv-cache");
    std::fs::create_dir_all(cache.join("old-session")).unwrap();
    std::fs::write(cache.join("prefix.bin"), "stale").unwrap();
    std::fs::write(dir.join("weights.gguf"), "abc").unwrap();
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            r#"{head}
name = "seed-like"

[gaps]
between_workloads_s = 150
between_cells_s = 300

[[engines]]
name = "plain"
preset = "benchpass-sim"
start = ["{{benchpass}}", "sim", "--port", "{{port}}", "--model", "{{model}}", "--decode-tps", "2000"]
port = {p1}
kv_cache_dir = "{cache}"

[[engines]]
name = "early-eos"
preset = "benchpass-sim"
start = ["{{benchpass}}", "sim", "--port", "{{port}}", "--model", "{{model}}", "--decode-tps", "2000", "--eos-after", "40"]
port = {p2}

[[models]]
name = "m"
family = "fam"
weights = "weights.gguf"

[[cells]]
engine = "plain"
model = "m"

[[cells]]
engine = "early-eos"
model = "m"

[[workloads]]
kind = "sustained"
runs = 3
warmup = {warmup}
max_tokens = 64

[[workloads]]
kind = "prompt-matrix"
max_tokens = 64
warmup = {warmup}
targets = [{{ tokens = 128, runs = 3 }}, {{ tokens = 512, runs = 2 }}, {{ tokens = 1024, runs = 1 }}]
"#,
            p1 = free_port(),
            p2 = free_port(),
            cache = cache.display(),
        ),
    )
    .unwrap();
    plan
}

#[test]
fn a_seed_shaped_plan_runs_every_cell_workload_and_repetition_in_order() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let plan = seed_like_plan(tmp.path());
    let out = tmp.path().join("pass");
    let started = std::time::Instant::now();
    let output = benchpass(&["run", plan.to_str().unwrap(), "--gap-scale", "0", "--out", out.to_str().unwrap(), "--progress", "plain"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(started.elapsed().as_secs() < 60, "gaps of 150 and 300 s were scaled to 0");

    let pass = read_pass(&out).unwrap();
    let order: Vec<(String, Workload, u64, u32)> =
        pass.runs.iter().map(|r| (r.cell.clone(), r.workload, r.target_prompt_tokens, r.rep)).collect();
    let mut expected = Vec::new();
    for cell in ["c0", "c1"] {
        for (workload, target, runs) in [(Workload::Sustained, 0, 3), (Workload::PromptMatrix, 128, 3), (Workload::PromptMatrix, 512, 2), (Workload::PromptMatrix, 1024, 1)] {
            for rep in 0..runs {
                expected.push((cell.to_owned(), workload, target, rep));
            }
        }
    }
    assert_eq!(order, expected);
    assert!(pass.runs.iter().all(|r| r.error.is_none()));

    // Versions and hashes captured: the sim reports its version; the engine executable and the
    // weights ("abc") are hashed.
    for cell in &pass.info.cells {
        assert!(cell.engine.version.starts_with("benchpass-sim "), "{:?}", cell.engine);
        assert_eq!(cell.engine.version_source, "GET /version");
        assert_eq!(cell.engine.sha256.as_ref().map(String::len), Some(64));
        assert_eq!(cell.build.files[0].sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(cell.family.as_deref(), Some("fam"));
    }
    // The early-EOS engine's runs are short stops with finish reason `stop`.
    for run in pass.runs.iter().filter(|r| r.cell == "c1") {
        assert_eq!((run.completion_tokens, run.finish_reason.as_deref()), (Some(40), Some("stop")));
    }
    // Every run knows the engine's peak memory (the sim is a few MiB at least) and its output
    // hash; the sustained runs share one prompt, and at temperature 0 one output.
    assert!(pass.runs.iter().all(|r| r.server_peak_rss_bytes.is_some_and(|b| b > 1 << 20)));
    let sustained: std::collections::HashSet<_> =
        pass.runs.iter().filter(|r| r.cell == "c0" && r.workload == Workload::Sustained).map(|r| r.output_sha256.clone().unwrap()).collect();
    assert_eq!(sustained.len(), 1);
    // Prompt targets met exactly (the sim has /tokenize).
    assert!(pass.runs.iter().filter(|r| r.workload == Workload::PromptMatrix).all(|r| r.prompt_tokens == Some(r.target_prompt_tokens)));
    // The KV-cache folder was emptied before the engine started, and each engine's output kept.
    assert_eq!(std::fs::read_dir(tmp.path().join("kv-cache")).unwrap().count(), 0);
    assert!(out.join("logs/c0-plain.log").exists() && out.join("logs/c1-early-eos.log").exists());
    // Both engines were stopped: their ports are free again.
    for cell in &pass.info.cells {
        let port = cell.engine.url.as_ref().unwrap().rsplit(':').next().unwrap();
        assert!(std::net::TcpListener::bind(format!("127.0.0.1:{port}")).is_ok(), "engine on {port} still running");
    }
}

#[test]
fn an_interleaved_plan_rotates_engines_between_repetitions() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let plan = seed_like_plan_with(tmp.path(), "order = \"interleaved\"", 1);
    let dry = benchpass(&["run", plan.to_str().unwrap(), "--dry-run"]);
    let dry = String::from_utf8_lossy(&dry.stdout).into_owned();
    assert!(dry.contains("order: interleaved"), "{dry}");
    // 3 rounds × 2 cells = 6 turns, each starting its engine fresh.
    assert_eq!(dry.matches("start, wait for health").count(), 6, "{dry}");

    let out = tmp.path().join("pass");
    let output = benchpass(&["run", plan.to_str().unwrap(), "--gap-scale", "0", "--out", out.to_str().unwrap(), "--progress", "plain"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = read_pass(&out).unwrap();
    assert_eq!(pass.info.request.as_ref().unwrap().order, harness::pass::Order::Interleaved);

    // Round k: for each cell, every step that has a repetition k, each preceded by its warmup
    // (numbered on, round by round, because every turn starts the engine afresh).
    let steps = [(Workload::Sustained, 0, 3), (Workload::PromptMatrix, 128, 3), (Workload::PromptMatrix, 512, 2), (Workload::PromptMatrix, 1024, 1)];
    let mut expected = Vec::new();
    for round in 0..3 {
        for cell in ["c0", "c1"] {
            for (workload, target, runs) in steps {
                if runs > round {
                    expected.push((cell.to_owned(), workload, target, round, true));
                    expected.push((cell.to_owned(), workload, target, round, false));
                }
            }
        }
    }
    let order: Vec<_> = pass.runs.iter().map(|r| (r.cell.clone(), r.workload, r.target_prompt_tokens, r.rep, r.warmup)).collect();
    assert_eq!(order, expected);
    assert!(pass.runs.iter().all(|r| r.error.is_none()));
    // Each turn's server output is appended to the cell's one log: three starts each.
    let log = std::fs::read_to_string(out.join("logs/c0-plain.log")).unwrap();
    assert_eq!(log.matches("benchpass sim listening on").count(), 3, "{log}");

    // The analysis sees the same cells as a sequential pass would: 3 measured sustained runs each.
    let sustained = pass.runs.iter().filter(|r| r.workload == Workload::Sustained && !r.warmup);
    assert_eq!(sustained.filter(|r| r.cell == "c0").count(), 3);
}

#[test]
fn interleaved_order_is_checked() {
    let tmp = temp_dir();
    let plan = seed_like_plan_with(tmp.path(), "order = \"shuffled\"", 0);
    let output = benchpass(&["plan", "check", plan.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("plan.toml:1: order `shuffled`") && stderr.contains("`sequential` (the default) or `interleaved`"), "{stderr}");
}

#[test]
fn gaps_are_waited_unless_scaled() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let plan = tmp.path().join("gaps.toml");
    let port = free_port();
    std::fs::write(
        &plan,
        format!(
            r#"
[gaps]
between_workloads_s = 1.5

[[engines]]
name = "sim"
start = ["{{benchpass}}", "sim", "--port", "{{port}}", "--decode-tps", "5000"]
port = {port}
preset = "benchpass-sim"

[[models]]
name = "m"

[[cells]]
engine = "sim"
model = "m"

[[workloads]]
kind = "sustained"
runs = 1
max_tokens = 8

[[workloads]]
kind = "prompt-matrix"
runs = 1
max_tokens = 8
targets = [{{ tokens = 32 }}]
"#
        ),
    )
    .unwrap();
    let out = tmp.path().join("pass");
    let started = std::time::Instant::now();
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "quiet"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(started.elapsed().as_secs_f64() >= 1.5, "the 1.5 s cool-down between workloads was waited");
    assert_eq!(read_pass(&out).unwrap().runs.len(), 2);
}

#[test]
fn an_engine_that_exits_while_starting_leaves_its_runs_recorded_as_failed() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let plan = tmp.path().join("broken.toml");
    let port = free_port();
    // `sim --profile nonexistent` exits at once with an error.
    std::fs::write(
        &plan,
        format!(
            r#"
[[engines]]
name = "broken"
start = ["{{benchpass}}", "sim", "--port", "{{port}}", "--profile", "nonexistent"]
port = {port}
preset = "benchpass-sim"

[[models]]
name = "m"

[[cells]]
engine = "broken"
model = "m"

[[workloads]]
kind = "sustained"
runs = 2
"#
        ),
    )
    .unwrap();
    let out = tmp.path().join("pass");
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "quiet"]);
    assert_eq!(output.status.code(), Some(3), "the pass goes on and completes, its failed runs recorded: {}", String::from_utf8_lossy(&output.stderr));
    let pass = read_pass(&out).unwrap();
    assert_eq!(pass.runs.len(), 2);
    for run in &pass.runs {
        let error = run.error.as_ref().unwrap();
        assert_eq!(error.class, "engine-start");
        assert!(error.message.contains("exited while starting"), "{}", error.message);
    }
    let log = std::fs::read_to_string(out.join("logs/c0-broken.log")).unwrap();
    assert!(log.contains("no sim profile `nonexistent`"), "the engine's own output is kept: {log}");
}

#[test]
fn plan_check_names_the_file_line_and_a_hint_for_every_problem() {
    let tmp = temp_dir();
    let plan = tmp.path().join("bad.toml");
    std::fs::write(
        &plan,
        r#"[[engines]]
name = "llama"
preset = "llama-cpp"
url = "http://127.0.0.1:8080"

[[models]]
name = "m"
weights = "missing.gguf"

[[cells]]
engine = "lama"
model = "m"

[[workloads]]
kind = "sustained"

[[workloads]]
kind = "sustained"
"#,
    )
    .unwrap();
    let output = benchpass(&["plan", "check", plan.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.toml:8: weights `missing.gguf` do not exist"), "{stderr}");
    assert!(stderr.contains("bad.toml:11: the cell names engine `lama`, which no [[engines]] entry defines"), "{stderr}");
    assert!(stderr.contains("hint: engines in this plan: llama"), "{stderr}");
    // Runs are keyed on workload and target: the same pair twice is refused.
    assert!(stderr.contains("bad.toml:18: sustained at target 0 appears twice"), "{stderr}");

    std::fs::write(&plan, "[[engines]]\nname = \"x\"\nstrat = [\"llama-server\"]\n").unwrap();
    let stderr = String::from_utf8_lossy(&benchpass(&["plan", "check", plan.to_str().unwrap()]).stderr).into_owned();
    assert!(stderr.contains("bad.toml:3: unknown field `strat`"), "{stderr}");
}

#[test]
fn the_shipped_plans_check_and_dry_run() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for plan in ["plans/seed-protocol.toml", "plans/pp-tg.toml", "plans/soak.toml"] {
        let path = root.join(plan);
        let output = benchpass(&["plan", "check", path.to_str().unwrap()]);
        assert!(output.status.success(), "{plan}: {}", String::from_utf8_lossy(&output.stderr));
    }
    let output = benchpass(&["run", root.join("plans/seed-protocol.toml").to_str().unwrap(), "--dry-run"]);
    let schedule = String::from_utf8_lossy(&output.stdout);
    // 2 cells × (3 + 3 + 2 + 1) runs; one 300 s gap between cells and a 150 s gap in each.
    assert!(schedule.contains("2 cells, 18 runs, 4608 tokens: 600 s of gaps"), "{schedule}");
    assert!(schedule.contains("prompt-matrix 8192: 0 warmup + 1 runs × 256 tokens"));
    let output = benchpass(&["run", root.join("plans/soak.toml").to_str().unwrap(), "--dry-run"]);
    let schedule = String::from_utf8_lossy(&output.stdout);
    assert!(schedule.contains("soak: 1 warmup + runs back to back for 12h00m00s × 256 tokens"), "{schedule}");
}

#[test]
fn a_pass_killed_mid_cell_resumes_without_repeating_a_run() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let plan = seed_like_plan(tmp.path());
    // Slow the first engine down so that the kill lands inside its cell: 64 tokens at 200 tok/s.
    let text = std::fs::read_to_string(&plan).unwrap().replacen("\"--decode-tps\", \"2000\"]", "\"--decode-tps\", \"200\"]", 1);
    std::fs::write(&plan, text).unwrap();
    let out = tmp.path().join("pass");
    let mut child = start_plan_until_runs(&plan, &out, 4);
    // kill -9: no cleanup at all, the engine it started is left running.
    child.kill().unwrap();
    child.wait().unwrap();
    let before = read_pass(&out).unwrap();
    assert!(before.runs.len() < 9, "killed inside the first cell ({} runs)", before.runs.len());
    assert_eq!(before.info.status, harness::pass::PassStatus::Running);

    let output = benchpass(&["run", plan.to_str().unwrap(), "--gap-scale", "0", "--progress", "quiet", "--resume", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let after = read_pass(&out).unwrap();
    assert_eq!(after.info.status, harness::pass::PassStatus::Complete);

    // The same runs as an uninterrupted pass, each once, and the first ones untouched.
    let places = |pass: &harness::pass::Pass| {
        let mut p: Vec<_> = pass.runs.iter().map(|r| (r.cell.clone(), r.workload, r.target_prompt_tokens, r.rep, r.warmup)).collect();
        p.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        p
    };
    let fresh_out = tmp.path().join("fresh");
    let fresh = benchpass(&["run", plan.to_str().unwrap(), "--gap-scale", "0", "--progress", "quiet", "--out", fresh_out.to_str().unwrap()]);
    assert!(fresh.status.success());
    assert_eq!(places(&after), places(&read_pass(&fresh_out).unwrap()));
    assert_eq!(after.runs[..before.runs.len()], before.runs[..]);
    assert!(after.runs.iter().all(|r| r.error.is_none()), "the orphaned engine was stopped, the new one answered");
    // The first cell's engine was started again mid-cell; the second started only once.
    assert!(after.info.cells[0].restarted_on_resume);
    assert!(!after.info.cells[1].restarted_on_resume);
}

#[test]
fn kill_9_at_many_points_then_resume_loses_and_repeats_nothing() {
    kill_9_then_resume("", 0, 18);
}

#[test]
fn an_interleaved_pass_killed_at_many_points_resumes_without_repeating_a_run() {
    // 2 cells × (9 measured runs + 9 warmups: 4 steps in round 0, 3 in round 1, 2 in round 2).
    kill_9_then_resume("order = \"interleaved\"", 1, 36);
}

fn kill_9_then_resume(head: &str, warmup: u32, n_runs: usize) {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let plan = seed_like_plan_with(tmp.path(), head, warmup);
    // 64 tokens at 500 tok/s: a run takes ~130 ms, so kills land before, inside and between runs.
    let text = std::fs::read_to_string(&plan).unwrap().replace("\"--decode-tps\", \"2000\"", "\"--decode-tps\", \"500\"");
    std::fs::write(&plan, text).unwrap();
    let out = tmp.path().join("pass");
    let run_args = |resume: bool| {
        let mut args = vec!["run".to_owned(), plan.display().to_string(), "--gap-scale".into(), "0".into(), "--progress".into(), "quiet".into()];
        args.extend(if resume { ["--resume".to_owned(), out.display().to_string()] } else { ["--out".to_owned(), out.display().to_string()] });
        args
    };
    // Seeded kill points (ms after start); the first attempt creates the pass.
    let mut state = 0x5EEDu64;
    let mut kills = 0;
    for attempt in 0..6 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let delay = 300 + (state >> 33) % 900;
        let resume = attempt > 0 && out.join(harness::pass::PASS_FILE).exists();
        let mut child = std::process::Command::new(BENCHPASS)
            .args(run_args(resume))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            kills += 1;
        }
        child.wait().unwrap();
        // Whatever the kill interrupted, the pass on disk reads.
        if out.join(harness::pass::PASS_FILE).exists() {
            read_pass(&out).unwrap();
        }
    }
    assert!(kills >= 3, "the kills landed mid-pass ({kills})");
    let finish = benchpass(&run_args(out.join(harness::pass::PASS_FILE).exists()).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(finish.status.success(), "{:?}: {}", finish.status, String::from_utf8_lossy(&finish.stderr));

    let pass = read_pass(&out).unwrap();
    assert_eq!(pass.info.status, harness::pass::PassStatus::Complete);
    assert!(pass.torn_tail.is_none());
    let mut places: Vec<String> =
        pass.runs.iter().map(|r| format!("{} {:?} {} {} {}", r.cell, r.workload, r.target_prompt_tokens, r.rep, r.warmup)).collect();
    let n = places.len();
    places.sort();
    places.dedup();
    assert_eq!(places.len(), n, "no run was recorded twice");
    assert_eq!(n, n_runs, "none lost");
    assert!(pass.runs.iter().all(|r| r.error.is_none()), "every engine left behind was stopped before its cell ran again");
}

/// A one-engine, one-run plan whose engine is started with `start` on `port`.
fn one_engine_plan(dir: &std::path::Path, start: &str, port: u16, extra: &str) -> std::path::PathBuf {
    let plan = dir.join("one.toml");
    std::fs::write(
        &plan,
        format!(
            "[[engines]]\nname = \"e\"\nstart = {start}\nport = {port}\n{extra}\n\n[[models]]\nname = \"m\"\n\n\
             [[cells]]\nengine = \"e\"\nmodel = \"m\"\n\n[[workloads]]\nkind = \"sustained\"\nruns = 1\nmax_tokens = 4\n"
        ),
    )
    .unwrap();
    plan
}

#[test]
fn an_engine_that_never_becomes_healthy_is_given_up_on_in_bounded_time() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    // `sleep` starts and never answers: the health wait must end at its timeout.
    let plan = one_engine_plan(tmp.path(), r#"["sleep", "30"]"#, free_port(), "health_timeout_s = 1");
    let out = tmp.path().join("pass");
    let started = std::time::Instant::now();
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "quiet"]);
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(started.elapsed().as_secs() < 20, "given up after the 1 s health timeout, then stopped");
    let run = &read_pass(&out).unwrap().runs[0];
    let error = run.error.as_ref().unwrap();
    assert_eq!(error.class, "engine-start");
    assert!(error.message.contains("did not answer 200 within 1 s"), "{}", error.message);
}

#[test]
fn an_engine_answering_503_while_it_loads_is_waited_for_then_measured() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let start = r#"["{benchpass}", "sim", "--port", "{port}", "--decode-tps", "1000", "--loading-s", "1.5"]"#;
    let plan = one_engine_plan(tmp.path(), start, free_port(), "preset = \"benchpass-sim\"\nhealth_timeout_s = 20");
    let out = tmp.path().join("pass");
    let started = std::time::Instant::now();
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "quiet"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(started.elapsed().as_secs_f64() >= 1.5, "the 503s were waited out");
    let pass = read_pass(&out).unwrap();
    assert!(pass.runs.iter().all(|r| r.error.is_none() && r.http_status == Some(200)), "{:?}", pass.runs[0].error);
}

#[test]
fn an_engine_still_loading_at_its_health_timeout_is_given_up_on_with_its_answer() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let start = r#"["{benchpass}", "sim", "--port", "{port}", "--loading-s", "60"]"#;
    let plan = one_engine_plan(tmp.path(), start, free_port(), "preset = \"benchpass-sim\"\nhealth_timeout_s = 1");
    let out = tmp.path().join("pass");
    let started = std::time::Instant::now();
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "quiet"]);
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(started.elapsed().as_secs() < 20);
    let run = &read_pass(&out).unwrap().runs[0];
    let error = run.error.as_ref().unwrap();
    assert_eq!(error.class, "engine-start");
    assert!(error.message.contains("did not answer 200 within 1 s (last: HTTP 503 Service Unavailable)"), "{}", error.message);
}

#[test]
fn a_server_that_already_answers_is_refused_not_measured() {
    // Something benchpass did not start listens on the engine's port.
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let port: u16 = sim.url.rsplit(':').next().unwrap().parse().unwrap();
    let tmp = temp_dir();
    let plan = one_engine_plan(tmp.path(), r#"["{benchpass}", "sim", "--port", "{port}"]"#, port, "preset = \"benchpass-sim\"");
    let out = tmp.path().join("pass");
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "quiet"]);
    // Refused before the first cell (cli/tests/it/busy_port.rs): no pass, no failed runs.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("port {port} is taken by benchpass (pid {}", sim.pid())), "{stderr}");
    assert!(!out.exists());
}

/// A soak plan: one leaking engine (`leak` bytes kept per request), `seconds` of runs.
fn soak_plan(dir: &std::path::Path, leak: u64, seconds: u64) -> std::path::PathBuf {
    let start = format!(
        r#"["{{benchpass}}", "sim", "--port", "{{port}}", "--decode-tps", "1000", "--leak-bytes-per-request", "{leak}"]"#
    );
    let plan = dir.join("soak.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"soak\"\n\n[[engines]]\nname = \"leaky\"\npreset = \"benchpass-sim\"\nstart = {start}\nport = {port}\n\n\
             [[models]]\nname = \"m\"\n\n[[cells]]\nengine = \"leaky\"\nmodel = \"m\"\n\n\
             [[workloads]]\nkind = \"soak\"\nwarmup = 1\nduration_s = {seconds}\nmax_tokens = 32\n",
            port = free_port()
        ),
    )
    .unwrap();
    plan
}

#[test]
fn a_soak_runs_back_to_back_for_its_duration_and_sees_a_leak_grow() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let leak = 2 << 20;
    let plan = soak_plan(tmp.path(), leak, 4);
    let dry = String::from_utf8_lossy(&benchpass(&["run", plan.to_str().unwrap(), "--dry-run"]).stdout).into_owned();
    assert!(dry.contains("soak: 1 warmup + runs back to back for 0h00m04s × 32 tokens"), "{dry}");
    let out = tmp.path().join("pass");
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "plain"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = read_pass(&out).unwrap();
    let runs: Vec<_> = pass.runs.iter().filter(|r| r.workload == Workload::Soak && !r.warmup).collect();
    // 32 tokens at 1000 tok/s plus 20 ms of latency: ~55 ms a run, so dozens in 4 s.
    assert!(runs.len() >= 20, "{} runs", runs.len());
    assert!(runs.iter().all(|r| r.error.is_none() && r.completion_tokens == Some(32)));
    assert_eq!(runs.iter().map(|r| r.rep).collect::<Vec<_>>(), (0..runs.len() as u32).collect::<Vec<_>>());
    let span_ms = runs.last().unwrap().started_unix_ms - runs[0].started_unix_ms;
    assert!((3_500..5_000).contains(&span_ms), "runs cover the 4 s ({span_ms} ms)");
    // The engine keeps 2 MiB per request: from the first soak run to the last, its resident
    // memory grows by 2 MiB a request, give or take one 100 ms memory reading either end.
    let (first, last) = (runs[0].server_peak_rss_bytes.unwrap(), runs.last().unwrap().server_peak_rss_bytes.unwrap());
    let per_run = (last - first) as f64 / (runs.len() - 1) as f64;
    assert!((per_run / leak as f64 - 1.0).abs() < 0.15, "{per_run} bytes a run, leak {leak}");
}

#[test]
fn a_server_benchpass_did_not_start_has_its_memory_sampled_when_it_listens_here() {
    // The test starts the engine, so for benchpass it is a `url` engine it found running.
    let leak = 2 << 20;
    let sim = Sim::start(&["--decode-tps", "1000", "--leak-bytes-per-request", &leak.to_string()]);
    let tmp = temp_dir();
    let plan = tmp.path().join("url-soak.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"url-soak\"\n\n[[engines]]\nname = \"yours\"\npreset = \"benchpass-sim\"\nurl = \"{}\"\n\n\
             [[models]]\nname = \"m\"\n\n[[cells]]\nengine = \"yours\"\nmodel = \"m\"\n\n\
             [[workloads]]\nkind = \"soak\"\nwarmup = 1\nduration_s = 3\nmax_tokens = 32\n",
            sim.url
        ),
    )
    .unwrap();
    let pass = run_plan(&plan, &tmp.path().join("pass"));
    let port = sim.url.rsplit(':').next().unwrap();
    let memory_of = pass.info.cells[0].engine.memory_of.as_deref();
    assert_eq!(memory_of, Some(format!("benchpass (pid {}, listening on port {port})", sim.pid()).as_str()));
    let runs: Vec<_> = pass.runs.iter().filter(|r| r.workload == Workload::Soak && !r.warmup).collect();
    assert!(runs.len() >= 15, "{} runs", runs.len());
    // As with an engine benchpass started: 2 MiB more a request, give or take one reading.
    let (first, last) = (runs[0].server_peak_rss_bytes.unwrap(), runs.last().unwrap().server_peak_rss_bytes.unwrap());
    let per_run = (last - first) as f64 / (runs.len() - 1) as f64;
    assert!((per_run / leak as f64 - 1.0).abs() < 0.15, "{per_run} bytes a run, leak {leak}");
}

/// A two-cell plan on the sim (`start_extra` added to both start commands), one sustained run
/// of 8 tokens per cell, with `gaps` as its [gaps] section.
fn two_cell_plan(dir: &std::path::Path, start_extra: &str, gaps: &str) -> std::path::PathBuf {
    let plan = dir.join("two.toml");
    let engine = |name: &str| {
        format!(
            "[[engines]]\nname = \"{name}\"\npreset = \"benchpass-sim\"\nhealth_timeout_s = 30\n\
             start = [\"{{benchpass}}\", \"sim\", \"--port\", \"{{port}}\", \"--decode-tps\", \"1000\"{start_extra}]\nport = {}\n\n",
            free_port()
        )
    };
    std::fs::write(
        &plan,
        format!(
            "[gaps]\n{gaps}\n\n{}{}[[models]]\nname = \"m\"\n\n[[cells]]\nengine = \"a\"\nmodel = \"m\"\n\n[[cells]]\nengine = \"b\"\nmodel = \"m\"\n\n\
             [[workloads]]\nkind = \"sustained\"\nruns = 2\nmax_tokens = 8\n",
            engine("a"),
            engine("b")
        ),
    )
    .unwrap();
    plan
}

/// Starts `benchpass run PLAN --out OUT`, kills it (-9) after `after`, and returns once it is dead.
/// The kill's moment is timed from the start: no self-check before the first cell (it would
/// take a loaded machine's share of that time; `self_check.rs` tests it).
fn run_then_kill(plan: &std::path::Path, out: &std::path::Path, gap_scale: &str, after: std::time::Duration) {
    let mut child = std::process::Command::new(BENCHPASS)
        .args(["run", plan.to_str().unwrap(), "--gap-scale", gap_scale, "--progress", "quiet", "--no-self-check", "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    assert!(child.try_wait().unwrap().is_none(), "the pass was still running when killed");
    child.kill().unwrap();
    child.wait().unwrap();
}

fn resume_and_check_complete(plan: &std::path::Path, out: &std::path::Path, gap_scale: &str) -> harness::pass::Pass {
    let output = benchpass(&["run", plan.to_str().unwrap(), "--gap-scale", gap_scale, "--progress", "quiet", "--resume", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = read_pass(out).unwrap();
    assert_eq!(pass.info.status, harness::pass::PassStatus::Complete);
    let mut places: Vec<_> = pass.runs.iter().map(|r| (r.cell.clone(), r.rep)).collect();
    places.sort();
    assert_eq!(places, [("c0".to_owned(), 0), ("c0".to_owned(), 1), ("c1".to_owned(), 0), ("c1".to_owned(), 1)], "each run once");
    assert!(pass.runs.iter().all(|r| r.error.is_none()), "{:?}", pass.runs.iter().map(|r| &r.error).collect::<Vec<_>>());
    for cell in &pass.info.cells {
        let port = cell.engine.url.as_ref().unwrap().rsplit(':').next().unwrap();
        assert!(std::net::TcpListener::bind(format!("127.0.0.1:{port}")).is_ok(), "engine on {port} still running");
    }
    pass
}

#[test]
fn a_kill_during_the_health_wait_leaves_an_orphan_that_the_resume_stops() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    // Each engine answers 503 for its first 3 s: the kill at 1.5 s lands in c0's health wait.
    let plan = two_cell_plan(tmp.path(), ", \"--loading-s\", \"3\"", "");
    let out = tmp.path().join("pass");
    run_then_kill(&plan, &out, "0", std::time::Duration::from_millis(1500));
    let before = read_pass(&out).unwrap();
    assert!(before.runs.is_empty() && out.join("logs/c0-a.pid").exists(), "killed while c0's engine loaded");
    let pass = resume_and_check_complete(&plan, &out, "0");
    assert!(!pass.info.cells[0].restarted_on_resume, "no run of c0 had been made: its engine simply starts");
}

#[test]
fn a_kill_in_the_gap_between_cells_resumes_with_the_next_cell() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    // c0 takes well under a second; then 4 s of gap, in which the kill at 2 s lands.
    let plan = two_cell_plan(tmp.path(), "", "between_cells_s = 4");
    let out = tmp.path().join("pass");
    run_then_kill(&plan, &out, "1", std::time::Duration::from_secs(2));
    let before = read_pass(&out).unwrap();
    assert_eq!(before.runs.iter().map(|r| r.cell.as_str()).collect::<Vec<_>>(), ["c0", "c0"], "killed in the gap");
    let pass = resume_and_check_complete(&plan, &out, "0");
    assert!(pass.info.cells.iter().all(|c| !c.restarted_on_resume), "no cell was cut in two");
    assert_eq!(pass.runs[..2], before.runs[..]);
}

#[test]
fn a_torn_last_line_is_cut_and_its_run_made_again_on_resume() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let plan = two_cell_plan(tmp.path(), "", "");
    let out = tmp.path().join("pass");
    let first = benchpass(&["run", plan.to_str().unwrap(), "--gap-scale", "0", "--progress", "quiet", "--out", out.to_str().unwrap()]);
    assert!(first.status.success());
    // What a kill in the middle of the last append leaves: half a line, and `running`.
    let runs_path = out.join(harness::pass::RUNS_FILE);
    let text = std::fs::read_to_string(&runs_path).unwrap();
    let last_start = text[..text.len() - 1].rfind('\n').unwrap() + 1;
    let torn = &text[..last_start + (text.len() - last_start) / 2];
    std::fs::write(&runs_path, torn).unwrap();
    let pass_json = out.join(harness::pass::PASS_FILE);
    let info = std::fs::read_to_string(&pass_json).unwrap().replace("\"status\": \"complete\"", "\"status\": \"running\"");
    std::fs::write(&pass_json, info).unwrap();
    let before = read_pass(&out).unwrap();
    assert_eq!((before.runs.len(), before.torn_tail.as_ref().map(|t| t.line)), (3, Some(4)));

    let pass = resume_and_check_complete(&plan, &out, "0");
    assert!(pass.torn_tail.is_none(), "the torn line was cut off before appending");
    assert_eq!(pass.runs[..3], before.runs[..]);
    assert_eq!((pass.runs[3].cell.as_str(), pass.runs[3].rep), ("c1", 1));
}

#[test]
fn ctrl_c_during_a_plan_stops_its_engine_and_marks_the_pass_interrupted() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    // 8 tokens at 2 tok/s: c0's first run takes 4 s, and Ctrl-C comes during it.
    let plan = two_cell_plan(tmp.path(), "", "");
    let text = std::fs::read_to_string(&plan).unwrap().replace("\"--decode-tps\", \"1000\"", "\"--decode-tps\", \"2\"");
    std::fs::write(&plan, text).unwrap();
    let out = tmp.path().join("pass");
    let child = std::process::Command::new(BENCHPASS)
        .args(["run", plan.to_str().unwrap(), "--progress", "quiet", "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let kill = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", String::from_utf8_lossy(&output.stderr));
    // The message says how to finish the pass.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let resume = format!("`benchpass run {} --resume {}` runs what is left", plan.display(), out.display());
    assert!(stderr.contains(&resume), "{stderr}");
    let pass = read_pass(&out).unwrap();
    assert_eq!(pass.info.status, harness::pass::PassStatus::Interrupted);
    assert!(pass.runs.is_empty(), "the run in flight was abandoned, not recorded half-done");
    let port = pass.info.cells[0].engine.url.as_ref().unwrap().rsplit(':').next().unwrap().to_owned();
    assert!(std::net::TcpListener::bind(format!("127.0.0.1:{port}")).is_ok(), "the engine was stopped");
    assert!(!out.join("logs/c0-a.pid").exists());
}

#[test]
fn a_pass_is_resumed_only_with_the_plan_that_made_it() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let plan = two_cell_plan(tmp.path(), "", "");
    let out = tmp.path().join("pass");
    assert!(benchpass(&["run", plan.to_str().unwrap(), "--progress", "quiet", "--out", out.to_str().unwrap()]).status.success());
    let text = std::fs::read_to_string(&plan).unwrap().replace("runs = 2", "runs = 3");
    std::fs::write(&plan, text).unwrap();
    let output = benchpass(&["run", plan.to_str().unwrap(), "--progress", "quiet", "--resume", out.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("was not made from this plan (its cells, steps or order differ)"), "{stderr}");
    assert_eq!(read_pass(&out).unwrap().runs.len(), 4, "nothing was added");
}

#[test]
fn a_soak_on_an_engine_that_fails_every_request_gives_up_after_five_in_a_row() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let plan = soak_plan(tmp.path(), 0, 60);
    let text = std::fs::read_to_string(&plan).unwrap().replace("\"--leak-bytes-per-request\"", "\"--fail-every\", \"1\", \"--leak-bytes-per-request\"");
    std::fs::write(&plan, text).unwrap();
    let out = tmp.path().join("pass");
    let started = std::time::Instant::now();
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "plain"]);
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(started.elapsed().as_secs() < 30, "not the whole 60 s of failures");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("soak stopped early: 5 runs in a row failed (they are recorded)"), "{stderr}");
    let pass = read_pass(&out).unwrap();
    let soak: Vec<_> = pass.runs.iter().filter(|r| r.workload == Workload::Soak && !r.warmup).collect();
    assert_eq!(soak.len(), 5);
    assert!(soak.iter().all(|r| r.error.as_ref().is_some_and(|e| e.class == "http-500")));
}

#[test]
fn weights_that_vanish_mid_plan_stop_it_naming_them_and_resume_finishes_it() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    std::fs::write(tmp.path().join("w1.gguf"), "one").unwrap();
    let w2 = tmp.path().join("w2.gguf");
    std::fs::write(&w2, "two").unwrap();
    // The first cell's engine deletes the second cell's weights as it starts: after the plan
    // was checked, before the second cell hashes them.
    let plan = tmp.path().join("vanish.toml");
    std::fs::write(
        &plan,
        format!(
            r#"name = "vanish"

[[engines]]
name = "a"
preset = "benchpass-sim"
start = ["sh", "-c", "rm -f '{w2}'; exec '{{benchpass}}' sim --port {{port}} --model {{model}} --decode-tps 2000"]
port = {p1}

[[engines]]
name = "b"
preset = "benchpass-sim"
start = ["{{benchpass}}", "sim", "--port", "{{port}}", "--model", "{{model}}", "--decode-tps", "2000"]
port = {p2}

[[models]]
name = "m1"
weights = "w1.gguf"

[[models]]
name = "m2"
weights = "w2.gguf"

[[cells]]
engine = "a"
model = "m1"

[[cells]]
engine = "b"
model = "m2"

[[workloads]]
kind = "sustained"
runs = 2
max_tokens = 8
"#,
            w2 = w2.display(),
            p1 = free_port(),
            p2 = free_port(),
        ),
    )
    .unwrap();
    let out = tmp.path().join("pass");
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "plain"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("w2.gguf"), "the error names the missing weights: {stderr}");
    let pass = read_pass(&out).unwrap();
    assert_eq!(pass.runs.iter().map(|r| (r.cell.as_str(), r.rep)).collect::<Vec<_>>(), [("c0", 0), ("c0", 1)], "the first cell's runs stay");
    assert!(pass.runs.iter().all(|r| r.error.is_none()));

    // Put back, the weights are hashed and the pass finishes without repeating a run.
    std::fs::write(&w2, "two").unwrap();
    let output = benchpass(&["run", plan.to_str().unwrap(), "--progress", "quiet", "--resume", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = read_pass(&out).unwrap();
    let order: Vec<_> = pass.runs.iter().map(|r| (r.cell.as_str(), r.rep)).collect();
    assert_eq!(order, [("c0", 0), ("c0", 1), ("c1", 0), ("c1", 1)]);
    assert_eq!(pass.info.cells[1].build.files[0].sha256, "3fc4ccfe745870e2c0d99f71f30ff0656c8dedd41cc1d7d3d376b0dbe685e2f3");
}

#[test]
fn a_plans_objectives_are_recorded_and_counted_and_one_that_does_not_read_is_named() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let start = r#"["{benchpass}", "sim", "--port", "{port}", "--decode-tps", "2000", "--prefill-tps", "1000000"]"#;
    let plan = one_engine_plan(tmp.path(), start, free_port(), "preset = \"benchpass-sim\"");
    let text = std::fs::read_to_string(&plan).unwrap();
    // Goodput is a serving figure: streams side by side.
    std::fs::write(&plan, format!("{text}\n[request]\nconcurrency = 2\nslo = \"ttft=2s\"\n")).unwrap();
    let out = tmp.path().join("pass");
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "quiet", "--no-self-check"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = read_pass(&out).unwrap();
    let slo = pass.info.request.as_ref().and_then(|r| r.slo.as_ref()).expect("the plan's objectives are recorded");
    assert_eq!(slo.ttft_ms, Some(2000.0));
    // The sim's first token comes after its 20 ms base latency: the one run met 2 s.
    let board = String::from_utf8(benchpass(&["leaderboard", out.to_str().unwrap()]).stdout).unwrap();
    assert!(board.lines().any(|l| l.contains("slo_attainment[ttft=2000ms]") && l.contains(",ratio,1.000,")), "{board}");

    std::fs::write(&plan, format!("{text}\n[request]\nslo = \"speed=3ms\"\n")).unwrap();
    let output = benchpass(&["plan", "check", plan.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("one.toml:") && stderr.contains("slo = \"speed=3ms\"") && stderr.contains("ttft, tpot, itl, e2e"), "{stderr}");
}

#[test]
fn a_thermal_gate_before_each_cell_is_recorded_and_a_bad_one_is_named() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let plan = two_cell_plan(tmp.path(), "", "cooldown = { until = \"nominal\", max_s = 600 }");
    let out = tmp.path().join("pass");
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "quiet", "--no-self-check"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = read_pass(&out).unwrap();
    // Before the second cell only; Linux tells no thermal level, so the gate waited for
    // nothing and says so (no level).
    assert_eq!(pass.info.cells[0].cooldown, None);
    let gate = pass.info.cells[1].cooldown.as_ref().expect("the gate before the second cell is recorded");
    assert_eq!((gate.until, gate.level), (harness::pass::machine::ThermalPressure::Nominal, None));
    assert!(gate.waited_s < 1.0, "{gate:?}");
    let report = tmp.path().join("report");
    assert!(benchpass(&["report", out.to_str().unwrap(), "--out", report.to_str().unwrap()]).status.success());
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("b · m: waited 0 s for nominal; this OS tells no thermal level, so nothing was waited for"), "{md}");

    let bad = two_cell_plan(tmp.path(), "", "cooldown = { until = \"cool\", max_s = 600 }");
    let output = benchpass(&["plan", "check", bad.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("two.toml:2:") && stderr.contains("nominal, moderate, heavy, trapping"), "{stderr}");
}
