//! Export → import keeps every field of the comparison key: the leaderboard rows of a pass
//! and every verdict of a diff between two passes are the same after both passes went through
//! the runs CSV, for a concurrency sweep, agent sessions and arrivals at a rate. Each pair of
//! passes differs in one key field, so that the diff's verdict depends on the field surviving
//! the CSV: a field the CSV dropped would turn `incomparable` into a comparison.

use std::path::{Path, PathBuf};

use crate::support::*;

/// The serving figures need each run's start and events, which the runs CSV does not carry
/// (docs/raw-format.md): an imported pass has none of these rows.
fn is_serving(metric: &str) -> bool {
    let name = metric.split('@').next().unwrap_or(metric);
    ["output_tps", "requests_per_s", "offered_request_rate", "achieved_request_rate"].contains(&name)
        || ["ttft_p", "itl_p", "tpot_p", "e2e_p", "ttft_sched_p", "e2e_sched_p", "schedule_delay_p", "slo_attainment[", "goodput_"].iter().any(|p| name.starts_with(p))
}

/// `pass` exported and imported again, under `tmp/imported/`.
fn through_csv(pass: &Path, tmp: &Path) -> PathBuf {
    let name = pass.file_name().unwrap().to_str().unwrap();
    let csv = tmp.join(format!("{name}.csv"));
    let output = benchpass(&["export", pass.to_str().unwrap(), "--out", csv.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let output = import_csv(&csv, &tmp.join("imported"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("warning"), "{}", String::from_utf8_lossy(&output.stderr));
    let pass_id = harness::pass::read_pass(pass).unwrap().info.pass_id;
    tmp.join("imported").join(pass_id)
}

/// Rows of a CSV that benchpass wrote, as named fields (no field here holds a comma: engine
/// `sim`, reasons joined by `;`).
fn table(text: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut lines = text.lines();
    let headers: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines.map(|l| headers.iter().map(|h| h.to_string()).zip(l.split(',').map(str::to_owned)).collect()).collect()
}

/// The leaderboard rows of `pass` but its serving rows.
fn board(pass: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let output = benchpass(&["leaderboard", pass.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut rows = table(&String::from_utf8(output.stdout).unwrap());
    rows.retain(|r| !is_serving(&r["metric"]));
    // The measurer's columns are pass.json's `measurer`, which the runs CSV does not carry:
    // an imported pass has none.
    for row in &mut rows {
        row.remove("harness_us_per_token");
        row.remove("self_check_ttft_error_ms");
    }
    rows
}

/// The same rows, field for field, the median and band within 0.1 % (the CSV keeps
/// milliseconds to the microsecond, so a rate may move in its fifth digit; the sim decodes at
/// 200 tok/s, so that no decode span is short enough for a microsecond to matter more).
fn assert_same_board(before: &[std::collections::BTreeMap<String, String>], after: &[std::collections::BTreeMap<String, String>]) {
    assert_eq!(before.len(), after.len(), "{before:?} against {after:?}");
    for (b, a) in before.iter().zip(after) {
        assert_eq!(b.keys().collect::<Vec<_>>(), a.keys().collect::<Vec<_>>());
        for (column, x) in b {
            let y = &a[column];
            match (x.parse::<f64>(), y.parse::<f64>()) {
                (Ok(x), Ok(y)) if ["median", "band_low", "band_high"].contains(&column.as_str()) => {
                    assert!((x - y).abs() <= x.abs() * 1e-3, "{column}: {b:?} against {a:?}")
                }
                _ => assert_eq!(x, y, "{column}: {b:?} against {a:?}"),
            }
        }
    }
}

/// The verdict rows of `benchpass diff a b`: what is compared, the verdict and its reasons.
fn verdicts(a: &Path, b: &Path) -> Vec<[String; 5]> {
    let output = benchpass(&["diff", a.to_str().unwrap(), b.to_str().unwrap(), "--format", "csv"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows = table(&String::from_utf8(output.stdout).unwrap());
    let mut out: Vec<[String; 5]> = rows
        .iter()
        .filter(|r| !is_serving(&r["metric"]))
        .map(|r| ["workload", "concurrency", "metric", "verdict", "reasons"].map(|c| r[c].clone()))
        .collect();
    out.sort();
    out
}

/// Both passes measured, then both through the CSV: the same leaderboard rows (the pass's own
/// columns included) and the same verdicts, reasons and all. The passes are made without the
/// self-check: the runs CSV carries runs, not pass.json's `measurer`, so an imported pass has no
/// timing floor, and a diff of the originals would mark `below-floor` what one of the imports
/// cannot.
fn assert_kept(a: &Path, b: &Path, tmp: &Path) -> Vec<[String; 5]> {
    let (a2, b2) = (through_csv(a, tmp), through_csv(b, tmp));
    for (before, after) in [(a, &a2), (b, &b2)] {
        let x = board(before);
        assert!(!x.is_empty(), "{}", before.display());
        assert_same_board(&x, &board(after));
    }
    let (x, y) = (verdicts(a, b), verdicts(&a2, &b2));
    assert!(!x.is_empty());
    assert_eq!(x, y, "the diff's verdicts before and after the CSV");
    y
}

#[test]
fn a_sweep_keeps_its_levels_and_their_verdicts_through_the_csv() {
    let sim = Sim::start(&["--decode-tps", "200", "--prefill-tps", "1000000"]);
    let tmp = temp_dir();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    run_pass(&sim, &a, &["--no-self-check", "--concurrency", "1,2", "--runs", "4", "--max-tokens", "8", "--pass-id", "sweep-a"]);
    run_pass(&sim, &b, &["--no-self-check", "--concurrency", "2", "--runs", "4", "--max-tokens", "8", "--pass-id", "sweep-b"]);
    let rows = assert_kept(&a, &b, tmp.path());
    // A's 1-stream level has no partner; its 2-stream level is judged against B's.
    assert!(rows.iter().any(|r| r[1] == "1" && r[3] == "gone" && r[4].contains("params")), "{rows:?}");
    assert!(rows.iter().any(|r| r[1] == "2" && r[2] == "decode_tps" && !matches!(r[3].as_str(), "gone" | "new")), "{rows:?}");
}

#[test]
fn arrivals_at_a_rate_stay_apart_from_busy_streams_through_the_csv() {
    let sim = Sim::start(&["--decode-tps", "200", "--prefill-tps", "1000000"]);
    let tmp = temp_dir();
    let (rate, closed) = (tmp.path().join("rate"), tmp.path().join("closed"));
    run_pass(&sim, &rate, &["--no-self-check", "--request-rate", "50", "--concurrency", "2", "--runs", "4", "--max-tokens", "8", "--pass-id", "rate"]);
    run_pass(&sim, &closed, &["--no-self-check", "--concurrency", "2", "--runs", "4", "--max-tokens", "8", "--pass-id", "closed"]);
    let rows = assert_kept(&rate, &closed, tmp.path());
    // Every row is incomparable, and says the arrivals differ: the imported passes know it.
    assert!(rows.iter().all(|r| r[3] == "incomparable" && r[4].contains("params")), "{rows:?}");
    let output = benchpass(&["diff", tmp.path().join("imported/rate").to_str().unwrap(), tmp.path().join("imported/closed").to_str().unwrap(), "--format", "md"]);
    let md = String::from_utf8_lossy(&output.stdout);
    assert!(md.contains("request\\_rate 50 → none"), "{md}");
    // And the leaderboard's key column says so after the import too.
    assert!(board(&tmp.path().join("imported/rate")).iter().all(|r| r["request_rate"] == "50"));
}

#[test]
fn agent_sessions_keep_their_figures_and_session_set_through_the_csv() {
    let sim = Sim::start(&["--decode-tps", "200", "--prefill-tps", "200000", "--prefix-cache"]);
    let tmp = temp_dir();
    let (two, one) = (tmp.path().join("two"), tmp.path().join("one"));
    run_pass(&sim, &two, &["--no-self-check", "--workload", "agent", "--sessions", "2", "--max-tokens", "8", "--pass-id", "two"]);
    run_pass(&sim, &one, &["--no-self-check", "--workload", "agent", "--sessions", "1", "--max-tokens", "8", "--pass-id", "one"]);
    let rows = assert_kept(&two, &one, tmp.path());
    // The cached figures of 2 sessions are not judged against 1 session's: the set differs.
    let board = board(&tmp.path().join("imported/two"));
    for metric in ["ttft_cold_ms", "ttft_cached_ms", "cache_hit_ratio"] {
        assert!(board.iter().any(|r| r["metric"] == metric), "{metric} after the import: {board:?}");
    }
    assert!(rows.iter().any(|r| r[2] == "ttft_cached_ms" && r[3] == "incomparable" && r[4].contains("params")), "{rows:?}");
}

#[test]
fn a_runs_csv_whose_rows_of_one_step_disagree_on_how_it_was_requested_is_refused_with_its_line() {
    let sim = Sim::start(&["--decode-tps", "200", "--prefill-tps", "1000000"]);
    let tmp = temp_dir();
    let pass = tmp.path().join("p");
    run_pass(&sim, &pass, &["--no-self-check", "--runs", "3", "--max-tokens", "4", "--pass-id", "p"]);
    let csv = tmp.path().join("p.csv");
    assert!(benchpass(&["export", pass.to_str().unwrap(), "--out", csv.to_str().unwrap()]).status.success());
    let text = std::fs::read_to_string(&csv).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let api = header.iter().position(|h| *h == "api").unwrap();
    let temperature = header.iter().position(|h| *h == "temperature").unwrap();
    // Line 3 (the second run) says `completions` where line 2 said `chat`.
    let with = |line: usize, column: usize, value: &str| -> String {
        text.lines()
            .enumerate()
            .map(|(i, l)| {
                let mut fields: Vec<&str> = l.split(',').collect();
                if i + 1 == line {
                    fields[column] = value;
                }
                fields.join(",") + "\n"
            })
            .collect()
    };
    let mixed = tmp.path().join("mixed.csv");
    std::fs::write(&mixed, with(3, api, "completions")).unwrap();
    assert_import_refused(&mixed, &tmp.path().join("out"), "mixed.csv:3: the sustained × 1 streams step of `sim benchpass-sim 0.1.0 · sim-model` has api `completions` here but `chat` earlier");
    let bad = tmp.path().join("bad.csv");
    std::fs::write(&bad, with(2, temperature, "NaN")).unwrap();
    assert_import_refused(&bad, &tmp.path().join("out"), "bad.csv:2: column `temperature`: expected a temperature, a number from 0 to 100, or empty, found `NaN`");
}
