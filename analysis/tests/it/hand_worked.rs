//! fixtures/diff/hand-worked/: drift both ways, a skewed band, a cold start, the smallest p at
//! the sizes at hand, and Holm's correction. Every figure below is worked out in that folder's
//! README from the CSVs, not taken from what the code printed.

use std::path::Path;

use analysis::cells::{summarize, CellStep, MetricKind};
use analysis::diff::{diff, diff_with, Correction, Diff, DiffRow, Verdict};
use analysis::reasons::ReasonCode;
use harness::pass::{read_pass, Pass};

fn import(name: &str, pass_id: &str, tmp: &tempfile::TempDir) -> (Pass, Vec<CellStep>) {
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff/hand-worked").join(name);
    harness::pass::csv::import_runs(&csv, tmp.path()).unwrap();
    let pass = read_pass(&tmp.path().join(pass_id)).unwrap();
    let steps = summarize(&pass).unwrap();
    (pass, steps)
}

fn engine<'a>(steps: &'a [CellStep], name: &str) -> &'a CellStep {
    steps.iter().find(|s| s.engine == name).unwrap_or_else(|| panic!("no {name}"))
}

fn detail(step: &CellStep, code: ReasonCode) -> Option<&str> {
    step.reasons.iter().find(|r| r.code == code).map(|r| r.detail.as_str())
}

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() < 1e-3
}

#[test]
fn drift_is_flagged_rising_and_falling_and_not_inside_the_margin() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, steps) = import("trend.csv", "fx-trend", &tmp);
    assert_eq!(detail(engine(&steps, "warming"), ReasonCode::Drift), Some("rising: 100.0 → 106.0 tok/s over 3 runs, +6.0%"));
    assert_eq!(detail(engine(&steps, "throttling"), ReasonCode::Drift), Some("falling: 100.0 → 94.0 tok/s over 3 runs, −6.0%"));
    assert_eq!(detail(engine(&steps, "gentle"), ReasonCode::Drift), None, "+4 % is inside the margin");
    assert_eq!(detail(engine(&steps, "cold"), ReasonCode::Drift), None, "80, 101, 100 is not monotone");
}

#[test]
fn a_skewed_ttft_gets_a_band_from_its_own_runs_that_stays_above_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, steps) = import("trend.csv", "fx-trend", &tmp);
    let ttft = engine(&steps, "skewed").ttft.as_ref().unwrap();
    assert!(close(ttft.median, 21.0));
    assert!(close(ttft.band.low, 20.0) && close(ttft.band.high, 60.0), "{:?}", ttft.band);
    assert!(close(ttft.band.above(21.0), 39.0 / 21.0) && close(ttft.band.below(21.0), 1.0 / 21.0));
    // The leaderboard carries the same ends.
    let csv = analysis::leaderboard::to_csv([steps.as_slice()]);
    assert!(csv.lines().any(|l| l.contains(",skewed,") && l.contains(",ttft_ms,ms,21.000,20.000,60.000,3,")), "{csv}");
    // A cold first run widens only the low side of the decode band: 80 to 102 around 100.
    let decode = engine(&steps, "cold").decode.as_ref().unwrap();
    assert!(close(decode.median, 100.0) && close(decode.band.low, 80.0) && close(decode.band.high, 102.0), "{:?}", decode.band);
}

#[test]
fn a_first_run_far_from_the_rest_without_warmup_is_a_cold_start() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, steps) = import("trend.csv", "fx-trend", &tmp);
    assert_eq!(
        detail(engine(&steps, "cold"), ReasonCode::ColdStart),
        Some("decode: run 1 at 80.0 tok/s, the other 2 at 100.0–101.0 tok/s; TTFT: run 1 at 300.0 ms, the other 2 at 100.0–101.0 ms")
    );
    assert_eq!(detail(engine(&steps, "warmed"), ReasonCode::ColdStart), None, "a warmup run took the cold start");
    assert_eq!(detail(engine(&steps, "warming"), ReasonCode::ColdStart), None, "100 is within 5 % of 103");
}

fn row<'a>(d: &'a Diff, engine: &str, metric: MetricKind) -> &'a DiffRow {
    d.rows.iter().find(|r| r.engine == engine && r.metric == metric).unwrap_or_else(|| panic!("no {engine} {metric:?}"))
}

#[test]
fn low_n_says_the_smallest_p_of_the_sizes_at_hand() {
    let tmp = tempfile::tempdir().unwrap();
    let ((pa, a), (pb, b)) = (import("low-n-a.csv", "fx-lown-a", &tmp), import("low-n-b.csv", "fx-lown-b", &tmp));
    let d = diff(&pa, &a, &pb, &b);
    for (engine, p, text) in [
        ("three-three", 2.0 / 20.0, "3 vs 3 runs: the smallest p any outcome can give is 2/20 = 0.100"),
        ("three-four", 2.0 / 35.0, "3 vs 4 runs: the smallest p any outcome can give is 2/35 ≈ 0.057"),
        ("two-five", 2.0 / 21.0, "2 vs 5 runs: the smallest p any outcome can give is 2/21 ≈ 0.095"),
    ] {
        let r = row(&d, engine, MetricKind::DecodeTps);
        assert_eq!(r.verdict, Verdict::Faster, "{engine}");
        assert!((r.p_value.unwrap() - p).abs() < 1e-12, "{engine}: {:?}", r.p_value);
        assert_eq!(r.alpha, Some(0.10), "{engine}");
        let low_n = r.reasons.iter().find(|x| x.code == ReasonCode::LowN).unwrap_or_else(|| panic!("{engine}: {:?}", r.reasons));
        assert_eq!(low_n.detail, text);
    }
    let r = row(&d, "two-four", MetricKind::DecodeTps);
    assert_eq!((r.verdict, r.p_value, r.alpha), (Verdict::WithinNoise, None, None));
    assert!(r.reasons.iter().any(|x| x.code == ReasonCode::FewRuns));
    // 9 rows tested (3 metrics × 3 engines) at α = 0.10.
    assert_eq!(d.n_tested, 9);
    assert!(close(d.expected_false_calls, 0.9));
    // Holm: 0.10 / 9 is below every p these sizes can give.
    let holm = diff_with(&pa, &a, &pb, &b, Correction::Holm);
    assert!(holm.rows.iter().all(|r| !matches!(r.verdict, Verdict::Faster | Verdict::Slower)));
    assert!(holm.rows.iter().all(|r| r.reasons.iter().all(|x| x.code != ReasonCode::LowN)), "no call, no low-n");
    assert_eq!(holm.withdrawn, 3);
}

#[test]
fn holm_keeps_the_call_that_clears_its_share_and_withdraws_the_next() {
    let tmp = tempfile::tempdir().unwrap();
    let ((pa, a), (pb, b)) = (import("holm-a.csv", "fx-holm-a", &tmp), import("holm-b.csv", "fx-holm-b", &tmp));
    let plain = diff(&pa, &a, &pb, &b);
    let (big, edge) = (row(&plain, "big", MetricKind::DecodeTps), row(&plain, "edge", MetricKind::DecodeTps));
    assert!(close(big.delta_pct.unwrap(), 19.608) && close(edge.delta_pct.unwrap(), 9.804));
    assert!((big.p_value.unwrap() - 2.0 / 252.0).abs() < 1e-12);
    assert!((edge.p_value.unwrap() - 4.0 / 252.0).abs() < 1e-12);
    assert!(close(edge.threshold.unwrap(), 110.0 / 102.0 - 1.0));
    assert_eq!((big.verdict, edge.verdict), (Verdict::Faster, Verdict::Faster));
    assert_eq!(plain.n_tested, 6);
    assert!(close(plain.expected_false_calls, 0.3));
    assert_eq!((plain.correction, plain.family_alpha, plain.withdrawn), (Correction::None, None, 0));

    let holm = diff_with(&pa, &a, &pb, &b, Correction::Holm);
    let (big, edge) = (row(&holm, "big", MetricKind::DecodeTps), row(&holm, "edge", MetricKind::DecodeTps));
    assert_eq!(big.verdict, Verdict::Faster);
    assert!((big.alpha.unwrap() - 0.05 / 6.0).abs() < 1e-12);
    assert_eq!(edge.verdict, Verdict::WithinNoise);
    assert!((edge.alpha.unwrap() - 0.05 / 5.0).abs() < 1e-12);
    assert_eq!((holm.withdrawn, holm.family_alpha), (1, Some(0.05)));
    // Everything else about the rows is as without the correction.
    assert_eq!(holm.rows.len(), plain.rows.len());
    assert!(holm.rows.iter().zip(&plain.rows).all(|(h, p)| (h.p_value, h.delta_pct, h.threshold) == (p.p_value, p.delta_pct, p.threshold)));
}
