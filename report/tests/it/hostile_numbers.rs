//! Values that pass a reader's checks but would break the pipeline: a subnormal decode span
//! (an infinite rate that made plotters step forever), usage that contradicts the stream, a
//! negative time. No input hangs or panics the report, and none prints `inf` or `-50.0`.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use analysis::cells::summarize;
use analysis::reasons::ReasonCode;
use harness::pass::{read_pass, Pass, Workload};

use crate::fixture_pass;

/// Renders on a thread of its own, so that a hang fails the test instead of holding it.
/// The fixture pass with `usage` (JSON text) and 100 token events, 50 ms apart, written into
/// the runs of llama.cpp's sustained step whose repetitions `usages` names (0, 1, 2), as a
/// server would have sent them: through runs.jsonl and its reader.
fn with_usage(tmp: &tempfile::TempDir, usages: &[(u32, &str)]) -> Pass {
    let pass = fixture_pass("a.csv", "fx-a", tmp);
    let events: Vec<String> = (0..100u64).map(|i| format!(r#"{{"t_ns":{},"bytes":40,"text":"x"}}"#, 120_000_000 + i * 50_000_000)).collect();
    let file = pass.dir.join("runs.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<String> = text
        .lines()
        .zip(&pass.runs)
        .map(|(line, run)| {
            let usage = usages.iter().find(|(rep, _)| run.cell == "c0" && run.workload == Workload::Sustained && !run.warmup && run.rep == *rep);
            match usage {
                Some((_, usage)) => line.replacen('{', &format!(r#"{{"usage":{usage},"events":[{}],"#, events.join(",")), 1),
                None => line.to_owned(),
            }
        })
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    read_pass(&pass.dir).unwrap()
}

fn render_within(pass: Pass, limit: Duration) -> report::Rendered {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let steps = summarize(&pass).unwrap();
        let _ = tx.send(report::render_pass(&pass, &steps).unwrap());
    });
    rx.recv_timeout(limit).expect("the report renders within its limit")
}

#[test]
fn a_subnormal_decode_span_renders_in_seconds_without_inf() {
    let tmp = tempfile::tempdir().unwrap();
    let mut pass = fixture_pass("a.csv", "fx-a", &tmp);
    // One of llama.cpp's three sustained runs says its 256 tokens took 1e-320 ms: finite and
    // not negative, and (256 − 1) / 1e-323 s is infinite.
    let run = pass.runs.iter_mut().find(|r| r.cell == "c0" && r.workload == Workload::Sustained && !r.warmup).unwrap();
    run.decode_ms = Some(1e-320);
    let started = Instant::now();
    let rendered = render_within(pass, Duration::from_secs(30));
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    for text in [&rendered.markdown, &rendered.html, &rendered.leaderboard_csv] {
        assert!(!text.to_lowercase().contains("inf,") && !text.contains("inf "), "an infinite figure");
        assert!(!text.contains("NaN"));
    }
    // The two runs left give the decode median; the run with no rate is counted as such.
    let llama = rendered.leaderboard_csv.lines().find(|l| l.contains(",llama.cpp,") && l.contains(",sustained,0,decode_tps,")).unwrap();
    assert!(llama.contains(",decode_tps,tok/s,50.000,"), "{llama}");
    assert!(!llama.contains("inf"), "{llama}");
    assert!(rendered.charts.iter().any(|c| c.file == "decode-by-cell.svg"), "the chart is drawn, not left out");
}

#[test]
fn every_run_with_an_absurd_span_leaves_a_chart_with_a_real_axis() {
    let tmp = tempfile::tempdir().unwrap();
    let mut pass = fixture_pass("a.csv", "fx-a", &tmp);
    for run in pass.runs.iter_mut() {
        run.decode_ms = Some(1e-320);
    }
    let rendered = render_within(pass, Duration::from_secs(30));
    assert!(!rendered.leaderboard_csv.contains("inf"), "{}", rendered.leaderboard_csv);
    for chart in &rendered.charts {
        assert!(!chart.svg.contains("inf") && !chart.svg.contains("NaN"), "{}", chart.file);
    }
}

#[test]
fn usage_that_contradicts_the_stream_is_flagged_usage_mismatch() {
    let tmp = tempfile::tempdir().unwrap();
    // Two of three runs: the server says 2 tokens for 100 token events (1.9 tok/s at face
    // value); the third agrees with its stream (256 tokens in 100 events).
    let two = r#"{"prompt_tokens":30,"completion_tokens":2}"#;
    let pass = with_usage(&tmp, &[(0, two), (1, two), (2, r#"{"prompt_tokens":30,"completion_tokens":256}"#)]);
    let steps = summarize(&pass).unwrap();
    let cell = steps.iter().find(|s| s.cell == "c0" && s.workload == Workload::Sustained).unwrap();
    let flagged: Vec<_> = cell.reasons.iter().filter(|r| r.code == ReasonCode::UsageMismatch).collect();
    assert_eq!(flagged.len(), 1, "{:?}", cell.reasons);
    assert_eq!(flagged[0].detail, "2 of 3 runs: usage says 2 tokens for 100 token events");
    assert!(steps.iter().filter(|s| s.cell != "c0").all(|s| !s.has(ReasonCode::UsageMismatch)), "imported runs have no events to compare");

    let rendered = report::render_pass(&pass, &steps).unwrap();
    assert!(rendered.markdown.contains("usage says 2 tokens for 100 token events"));
    assert!(rendered.leaderboard_csv.contains("usage-mismatch"), "the leaderboard carries the code");
}

#[test]
fn a_server_count_of_a_billion_billion_tokens_is_flagged_and_gives_no_rate() {
    let tmp = tempfile::tempdir().unwrap();
    let mut pass = with_usage(&tmp, &[(0, r#"{"completion_tokens":1000000000000000000}"#)]);
    // As a benchpass before the usage bound would have recorded it.
    let run = pass.runs.iter_mut().find(|r| r.cell == "c0" && r.workload == Workload::Sustained && !r.warmup && r.rep == 0).unwrap();
    run.completion_tokens = Some(1_000_000_000_000_000_000);
    let rendered = render_within(pass.clone(), Duration::from_secs(30));
    assert!(!rendered.leaderboard_csv.contains("e18") && !rendered.markdown.contains("1900000000"), "{}", rendered.leaderboard_csv);
    let steps = summarize(&pass).unwrap();
    let cell = steps.iter().find(|s| s.cell == "c0" && s.workload == Workload::Sustained).unwrap();
    assert!(cell.has(ReasonCode::UsageMismatch), "{:?}", cell.reasons);
    assert_eq!(cell.decode.as_ref().unwrap().values.len(), 2, "the run's rate is absent, not 1.9e18");
}

#[test]
fn a_negative_time_built_in_memory_is_shown_as_absent_not_as_a_number() {
    let tmp = tempfile::tempdir().unwrap();
    let mut pass = fixture_pass("a.csv", "fx-a", &tmp);
    // The readers refuse a negative time; a pass built in memory can still hold one.
    for run in pass.runs.iter_mut().filter(|r| r.cell == "c0") {
        run.ttft_ms = Some(-50.0);
    }
    let rendered = render_within(pass, Duration::from_secs(30));
    assert!(!rendered.markdown.contains("-50.0"), "{}", rendered.markdown);
    assert!(!rendered.html.contains("-50.0"));
}
