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
