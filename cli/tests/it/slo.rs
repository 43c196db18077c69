//! `--request-rate` with one stream on a sim slower than the arrivals, under `--slo`: the rate
//! is marked as not held in the report, `run --json` and the leaderboard carry the schedule's
//! figures and the goodput worked out from the sim's schedule (docs/metrics.md, "Latency from
//! the schedule", "Goodput").

use crate::support::*;

/// 1000 requests a second (seed 0: five arrivals within a few ms) on one stream of a sim that
/// takes 30 ms to a first token and 15 gaps of 5 ms after it: about 105 ms a request, so run i
/// is sent at about i × 105 ms. Under `ttft=170ms` counted from the schedule, run 0 (TTFT ≈ 30)
/// and run 1 (≈ 30 + 105) meet it, run 2 (≈ 240) and later do not: 2 of 5.
#[test]
fn a_rate_one_stream_cannot_hold_is_marked_and_goodput_counts_the_queue() {
    let sim = Sim::start(&["--base-latency-ms", "30", "--decode-tps", "200", "--prefill-tps", "1000000"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let args = ["--runs", "5", "--warmup", "0", "--max-tokens", "16", "--ignore-eos", "--request-rate", "1000", "--concurrency", "1", "--slo", "ttft=170ms"];
    let output = benchpass(
        &[&["run", "--url", &sim.url, "--model", "sim-model", "--out", out.to_str().unwrap(), "--progress", "quiet", "--json"][..], &args[..]].concat(),
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("--json");
    let serving = &json["steps"][0]["serving"];
    assert_eq!(serving["goodput"]["slo"], "ttft=170ms", "{serving}");
    assert_eq!((serving["goodput"]["met"].as_u64(), serving["goodput"]["runs"].as_u64()), (Some(2), Some(5)), "{serving}");
    assert_eq!(serving["request_rate"]["held"], false, "{serving}");
    let achieved = serving["request_rate"]["achieved"].as_f64().unwrap();
    assert!(achieved < 1e3 / 105.0 * 1.02, "about one request every 105 ms: {achieved}");
    let (sent, due) = (serving["ttft_ms"]["p50"].as_f64().unwrap(), serving["ttft_scheduled_ms"]["p50"].as_f64().unwrap());
    assert!(due >= sent + 2.0 * 105.0 - 25.0, "TTFT from the schedule {due} is the send's {sent} plus run 2's wait of about 210 ms");

    let report = tmp.path().join("report");
    let rendered = benchpass(&["report", out.to_str().unwrap(), "--out", report.to_str().unwrap()]);
    assert!(rendered.status.success(), "{}", String::from_utf8_lossy(&rendered.stderr));
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    for needle in ["TTFT from the schedule", "scheduling delay", "no: rate-not-held", "| ttft=170ms | 2 of 5 (40 %) |"] {
        assert!(md.contains(needle), "the report shows {needle:?}:\n{md}");
    }
    let csv = String::from_utf8(benchpass(&["leaderboard", out.to_str().unwrap()]).stdout).unwrap();
    let attainment = csv.lines().find(|l| l.contains("slo_attainment[ttft=170ms]")).unwrap_or_else(|| panic!("{csv}"));
    assert!(attainment.contains(",ratio,0.400,") && attainment.contains("rate-not-held"), "{attainment}");
}

#[test]
fn an_objective_that_is_not_one_is_refused_with_the_names() {
    let output = benchpass(&["run", "--url", "http://127.0.0.1:9", "--slo", "speed=3ms"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("ttft, tpot, itl, e2e"), "{stderr}");
}

#[test]
fn a_diff_shows_each_sides_goodput_and_compares_it_only_under_the_same_objectives() {
    // TTFT is the 20 ms base latency: every run meets a 60 ms or a 100 ms objective.
    let sim = Sim::start(&["--decode-tps", "2000", "--prefill-tps", "1000000"]);
    let tmp = temp_dir();
    let [a, b, c] = ["a", "b", "c"].map(|n| tmp.path().join(n));
    for (dir, slo) in [(&a, "ttft=60ms"), (&b, "ttft=60ms"), (&c, "ttft=100ms")] {
        run_pass(&sim, dir, &["--concurrency", "2", "--runs", "4", "--max-tokens", "8", "--slo", slo]);
    }
    let diff = |x: &std::path::Path, y: &std::path::Path| {
        let output = benchpass(&["diff", x.to_str().unwrap(), y.to_str().unwrap(), "--format", "md"]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    };
    let same = diff(&a, &b);
    assert!(same.contains("## Goodput") && same.contains("| 100 % met, ") && same.contains(" | yes |"), "{same}");
    let other = diff(&a, &c);
    assert!(other.contains("## Goodput") && other.contains(" | no: "), "{other}");
}
