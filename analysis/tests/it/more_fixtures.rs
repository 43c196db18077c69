//! fixtures/diff/more/: build-only attribution, drift that binds, partial short stops,
//! `machine` and `prompt-size` incomparable, `nondeterministic`. Every figure below is worked
//! out by hand in that folder's README from the CSVs and the pass folder, not taken from what
//! the code printed.

use std::path::{Path, PathBuf};

use analysis::cells::{summarize, CellStep, MetricKind};
use analysis::diff::{diff, Attribution, Diff, DiffRow, Verdict};
use analysis::reasons::{join_codes, ReasonCode};
use harness::pass::{read_pass, Pass};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff/more").join(name)
}

fn import(name: &str, pass_id: &str, tmp: &tempfile::TempDir) -> (Pass, Vec<CellStep>) {
    harness::pass::csv::import_runs(&fixture(name), tmp.path()).unwrap();
    let pass = read_pass(&tmp.path().join(pass_id)).unwrap();
    let steps = summarize(&pass).unwrap();
    (pass, steps)
}

/// The two passes of `a.csv` and `b.csv`, with their figures.
fn more() -> (Pass, Vec<CellStep>, Pass, Vec<CellStep>) {
    let tmp = tempfile::tempdir().unwrap();
    let (pa, a) = import("a.csv", "fx-more-a", &tmp);
    let (pb, b) = import("b.csv", "fx-more-b", &tmp);
    (pa, a, pb, b)
}

fn engine<'a>(steps: &'a [CellStep], name: &str) -> &'a CellStep {
    steps.iter().find(|s| s.engine == name).unwrap_or_else(|| panic!("no {name}"))
}

fn row<'a>(d: &'a Diff, engine: &str, metric: MetricKind) -> &'a DiffRow {
    d.rows.iter().find(|r| r.engine == engine && r.metric == metric).unwrap_or_else(|| panic!("no {engine} {metric:?}"))
}

fn detail(reasons: &[analysis::reasons::Reason], code: ReasonCode) -> Option<&str> {
    reasons.iter().find(|r| r.code == code).map(|r| r.detail.as_str())
}

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() < 1e-3
}

/// Drops the steps of `engines` from a side, as if the pass had not run them.
fn without(steps: &[CellStep], engines: &[&str]) -> Vec<CellStep> {
    steps.iter().filter(|s| !engines.contains(&s.engine.as_str())).cloned().collect()
}

#[test]
fn new_weights_under_the_same_engine_are_a_build_only_change() {
    let (pa, a, pb, b) = more();
    let d = diff(&pa, &a, &pb, &b);
    let r = row(&d, "requant", MetricKind::DecodeTps);
    // Same engine (1.0, aaaa…), weights 1111… → 7777…: build. 60 → 66 tok/s, +10 %;
    // ln 1.10 = 0.0953 clears ln 1.05 (the 5 % drift); p = 2/20 at 3 vs 3, low-n.
    assert_eq!(r.attribution, Some(Attribution::Build));
    assert!(close(r.delta_pct.unwrap(), 10.0), "{:?}", r.delta_pct);
    assert_eq!(r.verdict, Verdict::Faster);
    assert!((r.p_value.unwrap() - 0.1).abs() < 1e-12);
    assert!(close(r.threshold.unwrap(), 0.05), "the drift, not the 2 % floor: {:?}", r.threshold);
    assert_eq!(join_codes(&r.reasons), "low-n");
    // Every metric of the cell carries the same attribution; TTFT 100 → 100 ms is no change.
    let t = row(&d, "requant", MetricKind::TtftMs);
    assert_eq!((t.attribution, t.verdict), (Some(Attribution::Build), Verdict::WithinNoise));
}

#[test]
fn control_drift_above_the_floor_turns_a_four_percent_speed_up_into_noise() {
    let (pa, a, pb, b) = more();
    let d = diff(&pa, &a, &pb, &b);
    // The controls: ctrl-up 100 → 105 (+5 %), ctrl-down 100 → 97 (−3 %), each `none`, each
    // judged against its own bands only (the 2 % floor): faster and slower.
    let up = row(&d, "ctrl-up", MetricKind::DecodeTps);
    assert_eq!((up.attribution, up.verdict), (Some(Attribution::None), Verdict::Faster));
    assert!(close(up.delta_pct.unwrap(), 5.0) && close(up.threshold.unwrap(), 0.02));
    let down = row(&d, "ctrl-down", MetricKind::DecodeTps);
    assert_eq!((down.attribution, down.verdict), (Some(Attribution::None), Verdict::Slower));
    assert!(close(down.delta_pct.unwrap(), -3.0));
    // Drift: the larger |ln(B/A)| of the two, ln 1.05 = 0.04879 over ln(100/97) = 0.03046,
    // kept as e^0.04879 − 1 = 5 %. templated, also unchanged, is incomparable (prompt-size):
    // its +20 % does not count, so 2 controls, not 3, and 5 %, not 20 %.
    let drift = d.drift.iter().find(|x| x.metric == MetricKind::DecodeTps).unwrap();
    assert_eq!(drift.n_controls, 2);
    assert!(close(drift.max_abs_delta, 0.05), "{drift:?}");
    // TTFT is 100 ms in every run of both controls: a drift of 0 from 2 controls.
    let ttft = d.drift.iter().find(|x| x.metric == MetricKind::TtftMs).unwrap();
    assert_eq!(ttft.n_controls, 2);
    assert!(close(ttft.max_abs_delta, 0.0));

    // eng (1.0 → 1.1): 50 → 52 tok/s, +4 %, ln 1.04 = 0.03922. Its own bands are the 2 %
    // floor, but the drift widens them to 5 %: 0.03922 < ln 1.05 = 0.04879, within noise,
    // though the samples are apart (p = 0.10 ≤ α = 0.10).
    let r = row(&d, "eng", MetricKind::DecodeTps);
    assert_eq!(r.attribution, Some(Attribution::Engine));
    assert!(close(r.delta_pct.unwrap(), 4.0));
    assert!((r.p_value.unwrap() - 0.1).abs() < 1e-12);
    assert!(close(r.threshold.unwrap(), 0.05));
    assert_eq!(r.verdict, Verdict::WithinNoise);
    assert!(r.reasons.is_empty(), "no call, no low-n: {:?}", r.reasons);

    // Without ctrl-up the drift is ctrl-down's: 100/97 − 1 = 3.093 %, above the floor but
    // below the change: ln 1.04 = 0.03922 > ln(100/97) = 0.03046, faster.
    let (a1, b1) = (without(&a, &["ctrl-up"]), without(&b, &["ctrl-up"]));
    let d = diff(&pa, &a1, &pb, &b1);
    let r = row(&d, "eng", MetricKind::DecodeTps);
    assert!(close(r.threshold.unwrap(), 100.0 / 97.0 - 1.0), "{:?}", r.threshold);
    assert_eq!(r.verdict, Verdict::Faster);
    // Without either control there is no decode drift at all: the 2 % floor, faster.
    let (a0, b0) = (without(&a, &["ctrl-up", "ctrl-down"]), without(&b, &["ctrl-up", "ctrl-down"]));
    let d = diff(&pa, &a0, &pb, &b0);
    assert!(d.drift.iter().all(|x| x.metric != MetricKind::DecodeTps), "{:?}", d.drift);
    let r = row(&d, "eng", MetricKind::DecodeTps);
    assert!(close(r.threshold.unwrap(), 0.02));
    assert_eq!(r.verdict, Verdict::Faster);
    assert_eq!(join_codes(&r.reasons), "low-n");
}

#[test]
fn the_binding_drift_is_the_same_both_ways_and_so_is_the_verdict() {
    let (pa, a, pb, b) = more();
    // B → A: ctrl-up 105 → 100 is |ln(100/105)| = ln 1.05 again: the drift stays 5 %.
    let back = diff(&pb, &b, &pa, &a);
    let drift = back.drift.iter().find(|x| x.metric == MetricKind::DecodeTps).unwrap();
    assert!(close(drift.max_abs_delta, 0.05), "{drift:?}");
    // eng 52 → 50: −3.846 %, |ln| = 0.03922 < ln 1.05 still: within noise, as A → B.
    let r = row(&back, "eng", MetricKind::DecodeTps);
    assert!(close(r.delta_pct.unwrap(), -100.0 * 2.0 / 52.0));
    assert_eq!(r.verdict, Verdict::WithinNoise);
    // requant 66 → 60: −9.091 %, slower (mirrors faster).
    assert_eq!(row(&back, "requant", MetricKind::DecodeTps).verdict, Verdict::Slower);
}

#[test]
fn prompts_far_from_their_target_are_named_in_the_cell_and_make_the_diff_incomparable() {
    let (pa, a, pb, b) = more();
    // A: 2050 actual tokens for a 2048 target, 0.1 % over: no mark. B: 1500, 26.8 % short.
    assert!(!engine(&a, "templated").has(ReasonCode::PromptSize));
    assert_eq!(detail(&engine(&b, "templated").reasons, ReasonCode::PromptSize), Some("median 1500 actual tokens for a 2048 target"));
    let d = diff(&pa, &a, &pb, &b);
    // |1500 − 2050| / 2050 = 26.8 % > 5 %: every metric incomparable, both sizes named; the
    // delta is still printed (100 → 120 tok/s, +20 %).
    for metric in [MetricKind::DecodeTps, MetricKind::TtftMs, MetricKind::PrefillTps] {
        let r = row(&d, "templated", metric);
        assert_eq!(r.verdict, Verdict::Incomparable, "{metric:?}");
        assert_eq!(detail(&r.reasons, ReasonCode::PromptSize), Some("2050 → 1500 actual prompt tokens"), "{metric:?}");
        assert_eq!(r.attribution, Some(Attribution::None));
    }
    assert!(close(row(&d, "templated", MetricKind::DecodeTps).delta_pct.unwrap(), 20.0));
}

#[test]
fn prompt_sizes_five_point_one_percent_apart_are_incomparable_whichever_pass_is_a() {
    let (pa, a, pb, b) = more();
    // near: 1950 → 2050 actual tokens. Apart by 2050/1950 − 1 = 5.128 % of the smaller, the
    // measure a row of engines uses (cells.rs): over the 5 % margin, whichever side is A.
    // (Measured against A alone it would be 100/1950 = 5.128 % one way, 100/2050 = 4.878 % the
    // other: incomparable A → B, within noise B → A.)
    let forward = diff(&pa, &a, &pb, &b);
    let backward = diff(&pb, &b, &pa, &a);
    let (f, r) = (row(&forward, "near", MetricKind::DecodeTps), row(&backward, "near", MetricKind::DecodeTps));
    assert_eq!(f.verdict, Verdict::Incomparable);
    assert_eq!(detail(&f.reasons, ReasonCode::PromptSize), Some("1950 → 2050 actual prompt tokens"));
    assert_eq!(r.verdict, Verdict::Incomparable, "{:?}", r.reasons);
    assert_eq!(detail(&r.reasons, ReasonCode::PromptSize), Some("2050 → 1950 actual prompt tokens"));
}

#[test]
fn passes_on_different_machines_are_incomparable_and_the_reason_names_both() {
    let tmp = tempfile::tempdir().unwrap();
    let (pa, a) = import("machine-a.csv", "fx-place-a", &tmp);
    let (pb, b) = import("machine-b.csv", "fx-place-b", &tmp);
    let d = diff(&pa, &a, &pb, &b);
    for metric in [MetricKind::DecodeTps, MetricKind::TtftMs, MetricKind::PrefillTps] {
        let r = row(&d, "same", metric);
        assert_eq!(r.verdict, Verdict::Incomparable, "{metric:?}");
        assert_eq!(join_codes(&r.reasons), "machine", "{metric:?}");
        assert_eq!(detail(&r.reasons, ReasonCode::Machine), Some("bench-1 → bench-2"));
        // Engine and weights unchanged: attribution none, but not a control of any drift.
        assert_eq!(r.attribution, Some(Attribution::None));
    }
    // 100 → 120 tok/s: +20 %, printed, not judged.
    assert!(close(row(&d, "same", MetricKind::DecodeTps).delta_pct.unwrap(), 20.0));
    assert!(d.drift.is_empty(), "{:?}", d.drift);
    assert_eq!(d.n_tested, 0);
}

#[test]
fn a_partly_short_stopped_cell_keeps_its_short_run_out_of_the_decode_median() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, steps) = import("short.csv", "fx-short", &tmp);
    let partial = engine(&steps, "partial");
    // 4 runs, the last stopped at 401 of 1001 tokens (a 150 tok/s burst).
    assert_eq!((partial.n_runs, partial.n_failed, partial.n_short), (4, 0, 1));
    assert_eq!(join_codes(&partial.reasons), "short-stop");
    assert_eq!(detail(&partial.reasons, ReasonCode::ShortStop), Some("1 of 4 runs stopped early and are left out of the decode median"));
    // Decode from the 3 full runs 100, 101, 99: median 100 (with the burst it would be
    // 100.5); the band is the 2 % floor each side, 98.039 to 102.
    let decode = partial.decode.as_ref().unwrap();
    assert_eq!(decode.values.len(), 3);
    assert!(close(decode.median, 100.0), "{}", decode.median);
    assert!(close(decode.band.low, 100.0 / 1.02) && close(decode.band.high, 102.0), "{:?}", decode.band);
    // Not a burst: the report numbers this note rather than starring the rate.
    assert!(!partial.decode_is_burst());
    // TTFT and prefill from all 4 runs: 100, 102, 104, 106 ms → (102 + 104) / 2 = 103;
    // prefill 30 tokens ÷ each: (294.118 + 288.462) / 2 = 291.290 tok/s.
    let ttft = partial.ttft.as_ref().unwrap();
    assert_eq!(ttft.values.len(), 4);
    assert!(close(ttft.median, 103.0));
    assert!(close(partial.prefill.as_ref().unwrap().median, (30.0 / 0.102 + 30.0 / 0.104) / 2.0));

    let burst = engine(&steps, "burst");
    // Every run stopped at 301 tokens: the decode rate is the short runs' (150, 152, 148 →
    // 150), a burst, starred in reports and never compared.
    assert_eq!((burst.n_runs, burst.n_short), (3, 3));
    assert_eq!(detail(&burst.reasons, ReasonCode::ShortStop), Some("all 3 successful runs stopped before 1001 tokens"));
    assert!(burst.decode_is_burst());
    assert!(close(burst.decode.as_ref().unwrap().median, 150.0));

    // The leaderboard: n is the runs each median is over, n_short the short ones.
    let csv = analysis::leaderboard::to_csv([steps.as_slice()]);
    let line = |engine: &str, metric: &str| {
        csv.lines().find(|l| l.contains(&format!(",{engine},")) && l.contains(&format!(",{metric},"))).unwrap_or_else(|| panic!("{csv}")).to_owned()
    };
    assert!(line("partial", "decode_tps").ends_with(",decode_tps,tok/s,100.000,98.039,102.000,3,1,short-stop,usage,1001,1,,,,,,,"), "{csv}");
    assert!(line("partial", "ttft_ms").contains(",ttft_ms,ms,103.000,"), "{csv}");
    assert!(line("partial", "ttft_ms").ends_with(",4,1,short-stop,usage,1001,1,,,,,,,"), "{csv}");
    // Then the rest of the key: the cap, one stream, and (a file from before those columns
    // says nothing of the request) no arrival rate, API, temperature, way past EOS or prompt set,
    // and (a fixture records no measurer) no measuring cost or self-check.
    assert!(line("burst", "decode_tps").ends_with(",decode_tps,tok/s,150.000,147.059,153.000,3,3,short-stop,usage,1001,1,,,,,,,"), "{csv}");
}

#[test]
fn different_outputs_for_one_prompt_at_temperature_zero_are_nondeterministic() {
    let mut pass = read_pass(&fixture("nondet")).unwrap();
    let steps = summarize(&pass).unwrap();
    // wobbly: outputs eeee…, ffff…, eeee… for one prompt: 2 different outputs.
    assert_eq!(detail(&engine(&steps, "wobbly").reasons, ReasonCode::Nondeterministic), Some("up to 2 different outputs for one prompt"));
    // steady: dddd… three times.
    assert!(!engine(&steps, "steady").has(ReasonCode::Nondeterministic));
    // The flag travels into a diff's rows; it does not make them incomparable.
    let d = diff(&pass, &steps, &pass, &steps);
    let r = row(&d, "wobbly", MetricKind::DecodeTps);
    assert_eq!((r.verdict, join_codes(&r.reasons).as_str()), (Verdict::WithinNoise, "nondeterministic"));
    // At temperature 0.7 different outputs are expected: no flag.
    pass.info.request.as_mut().unwrap().temperature = 0.7;
    let steps = summarize(&pass).unwrap();
    assert!(steps.iter().all(|s| !s.has(ReasonCode::Nondeterministic)), "{steps:?}");
}

/// fixtures/diff/versions/: `eng` at v1 and v2 in each pass, listed in the other order in B
/// (README.md works the figures): each version is paired with itself, never by list order.
#[test]
fn two_versions_of_one_engine_pair_version_with_version_whatever_their_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff/versions");
    for name in ["a.csv", "b.csv"] {
        harness::pass::csv::import_runs(&dir.join(name), tmp.path()).unwrap();
    }
    let (pa, pb) = (read_pass(&tmp.path().join("ver-a")).unwrap(), read_pass(&tmp.path().join("ver-b")).unwrap());
    let (a, b) = (summarize(&pa).unwrap(), summarize(&pb).unwrap());
    let d = diff(&pa, &a, &pb, &b);
    let decode: Vec<&DiffRow> = d.rows.iter().filter(|r| r.metric == MetricKind::DecodeTps).collect();
    assert_eq!(decode.len(), 2, "{decode:?}");
    for (version, a_tps, b_tps) in [("v1", 100.0, 255.0 / 2.525), ("v2", 150.0, 255.0 / 1.683)] {
        let r = decode.iter().find(|r| r.a_engine_version.as_deref() == Some(version)).unwrap_or_else(|| panic!("{version}: {decode:?}"));
        assert_eq!(r.b_engine_version.as_deref(), Some(version), "{version} paired with {:?}", r.b_engine_version);
        assert!(close(r.a_median.unwrap(), a_tps) && close(r.b_median.unwrap(), b_tps), "{r:?}");
        assert_eq!(r.attribution, Some(Attribution::None), "an unchanged re-run is a control cell");
        assert_ne!(r.verdict, Verdict::Faster);
    }
    assert!(d.rows.iter().all(|r| !matches!(r.verdict, Verdict::New | Verdict::Gone)), "{:?}", d.rows);
    let drift = d.drift.iter().find(|x| x.metric == MetricKind::DecodeTps).unwrap();
    assert_eq!(drift.n_controls, 2);
    assert!(close(drift.max_abs_delta, (255.0 / 1.683) / 150.0 - 1.0), "{drift:?}");

    // Permuting the cells inside a pass changes no row.
    let mut reversed = b.clone();
    reversed.reverse();
    let again = diff(&pa, &a, &pb, &reversed);
    let key = |r: &DiffRow| (r.a_engine_version.clone(), r.b_engine_version.clone(), r.metric.as_str(), r.verdict.as_str(), r.a_median.map(f64::to_bits), r.b_median.map(f64::to_bits));
    let mut first: Vec<_> = d.rows.iter().map(key).collect();
    let mut second: Vec<_> = again.rows.iter().map(key).collect();
    first.sort();
    second.sort();
    assert_eq!(first, second);
}
