//! The measurer's floor (docs/metrics.md, "What measuring costs"): every pass records what
//! benchpass spent and its self-check against the reference engine, the report prints them, and
//! a diff calls no change smaller than the client's own error.

use std::path::Path;

use crate::support::{benchpass, run_pass, temp_dir, Sim};

fn measurer(dir: &Path) -> serde_json::Value {
    let info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("pass.json")).unwrap()).unwrap();
    info["measurer"].clone()
}

#[test]
fn a_pass_records_its_cost_and_its_self_check_and_the_report_prints_them() {
    let sim = Sim::start(&["--decode-tps", "2000", "--prefill-tps", "1000000"]);
    let tmp = temp_dir();
    let dir = tmp.path().join("p");
    // 3 runs of 16 tokens at 2 streams, plus 1 warmup: the sim never stops early, so the pass
    // streamed 4 × 16 = 64 tokens.
    let pass = run_pass(&sim, &dir, &["--runs", "3", "--warmup", "1", "--max-tokens", "16", "--concurrency", "2"]);
    assert_eq!(pass.runs.iter().map(|r| r.completion_tokens.unwrap()).sum::<u64>(), 64);
    let m = measurer(&dir);
    assert_eq!(m["streamed_tokens"], 64, "{m}");
    let events: u64 = pass.runs.iter().map(|r| r.events.len() as u64 + r.empty_events).sum();
    assert_eq!(m["stream_events"], events, "{m}");
    assert!(m["clock_tick_ns"].as_u64().unwrap() > 0, "{m}");
    // The check ran at the pass's 2 streams, two rounds of them, 32 tokens each.
    let check = &m["self_check"];
    assert_eq!((check["streams"].as_u64(), check["requests"].as_u64(), check["max_tokens"].as_u64()), (Some(2), Some(4), Some(32)), "{m}");
    let (ttft_median, ttft_max) = (check["ttft_error_median_ms"].as_f64().unwrap(), check["ttft_error_max_ms"].as_f64().unwrap());
    let (decode_median, decode_max) = (check["decode_error_median"].as_f64().unwrap(), check["decode_error_max"].as_f64().unwrap());
    assert!(0.0 <= ttft_median && ttft_median <= ttft_max, "{m}");
    assert!(0.0 <= decode_median && decode_median <= decode_max, "{m}");
    // On loopback the client sees a token within milliseconds of its leaving, and reads 31
    // decode intervals of 5 ms within a few per cent of their span (bounds far above what a
    // working client makes, far below what a broken one would: a missed event is 3 %, a clock
    // in the wrong unit 1,000 ×).
    assert!(ttft_max < 50.0 && decode_max < 0.5, "{m}");

    // The report says what the pass recorded: CPU per token is CPU seconds over 64 tokens.
    let cpu = pass.info.harness_cpu_seconds.expect("Linux tells CPU time");
    let out = tmp.path().join("report");
    let report = benchpass(&["report", dir.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let per_token = format!("{:.1} µs per streamed token", cpu * 1e6 / 64.0);
    assert!(md.contains("| measuring cost |") && md.contains(&per_token), "{per_token} in\n{md}");
    let self_check = format!("TTFT within {ttft_max:.2} ms (median {ttft_median:.2} ms)");
    assert!(md.contains(&self_check) && md.contains("4 requests at 2 streams"), "{self_check} in\n{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<th>self-check</th>") && html.contains(&self_check), "{html}");

    // `run --json` carries the same figures.
    let json_dir = tmp.path().join("j");
    let out = benchpass(&[
        "run", "--url", &sim.url, "--model", "sim-model", "--out", json_dir.to_str().unwrap(), "--progress", "quiet", "--runs", "1", "--max-tokens", "4",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["measurer"]["streamed_tokens"], 4, "{json}");
    assert_eq!(json["measurer"]["self_check"]["streams"], 1, "{json}");
}

#[test]
fn no_self_check_skips_it_and_the_report_says_so() {
    let sim = Sim::start(&["--decode-tps", "2000", "--prefill-tps", "1000000"]);
    let tmp = temp_dir();
    let dir = tmp.path().join("p");
    let output = benchpass(&[
        "run", "--url", &sim.url, "--model", "sim-model", "--out", dir.to_str().unwrap(), "--progress", "plain", "--runs", "1", "--max-tokens", "4",
        "--no-self-check",
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("self-check:"));
    let m = measurer(&dir);
    assert_eq!(m["streamed_tokens"], 4, "{m}");
    assert!(m.get("self_check").is_none(), "{m}");
    let out = tmp.path().join("report");
    assert!(benchpass(&["report", dir.to_str().unwrap(), "--out", out.to_str().unwrap()]).status.success());
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| self-check | none (skipped with --no-self-check"), "{md}");
}

/// Sets a pass's self-check TTFT error (its largest) in its pass.json.
fn set_ttft_error(dir: &Path, ms: f64) {
    let path = dir.join("pass.json");
    let mut info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    info["measurer"]["self_check"]["ttft_error_max_ms"] = ms.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&info).unwrap()).unwrap();
}

/// The verdict and reasons of the diff's TTFT row.
fn ttft_row(a: &Path, b: &Path) -> (String, String) {
    let output = benchpass(&["diff", a.to_str().unwrap(), b.to_str().unwrap(), "--format", "csv"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    // No field here holds a comma or a quote (engine `sim`, reasons joined by `;`).
    let mut lines = text.lines().map(|l| l.split(',').map(str::to_owned).collect::<Vec<_>>());
    let headers = lines.next().unwrap();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let row = lines.find(|r| r[column("metric")] == "ttft_ms").unwrap_or_else(|| panic!("{text}"));
    (row[column("verdict")].clone(), row[column("reasons")].clone())
}

#[test]
fn a_diff_calls_no_change_within_the_self_checks_error() {
    let tmp = temp_dir();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    // TTFT is the base latency (prefill is instant): 20 ms, then 24 ms, 5 runs a side, so that
    // every B run is slower than every A run (p = 2/252) by 20 %, far past the 2 % band floor.
    for (dir, latency) in [(&a, "20"), (&b, "24")] {
        let sim = Sim::start(&["--decode-tps", "2000", "--prefill-tps", "1000000", "--base-latency-ms", latency]);
        run_pass(&sim, dir, &["--runs", "5", "--max-tokens", "4"]);
    }
    // A client that may be 0.01 ms off: 0.05 % of 20 ms, and the change is called.
    set_ttft_error(&a, 0.01);
    set_ttft_error(&b, 0.01);
    let (verdict, reasons) = ttft_row(&a, &b);
    assert_eq!(verdict, "slower", "{reasons}");
    assert!(!reasons.contains("below-floor"), "{reasons}");
    // One that may be 10 ms off (on one side: the larger counts): ±50 % of the smaller median;
    // the 20 % change is within it.
    set_ttft_error(&b, 10.0);
    let (verdict, reasons) = ttft_row(&a, &b);
    assert_eq!(verdict, "within-noise", "{reasons}");
    assert!(reasons.contains("below-floor"), "{reasons}");
}
