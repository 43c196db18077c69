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
