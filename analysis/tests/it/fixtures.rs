//! fixtures/diff/{a,b}.csv: two passes on machine m1, four engines on family `qwen`. Every
//! expected figure below is worked out from the CSV by hand (decode rate = (256 − 1) tokens /
//! decode_ms; the CSV's decode_ms were written from round rates, e.g. 255 / 50 tok/s = 5100 ms).

use std::path::{Path, PathBuf};

use analysis::cells::{summarize, CellStep, MetricKind};
use analysis::diff::{diff, Attribution, DiffRow, Verdict};
use analysis::reasons::{join_codes, ReasonCode};
use harness::pass::{read_pass, Pass, Workload};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff").join(name)
}

fn import(name: &str, pass_id: &str, tmp: &tempfile::TempDir) -> Pass {
    harness::pass::csv::import_runs(&fixture(name), tmp.path()).unwrap();
    read_pass(&tmp.path().join(pass_id)).unwrap()
}

fn passes() -> (Pass, Vec<CellStep>, Pass, Vec<CellStep>) {
    let tmp = tempfile::tempdir().unwrap();
    let a = import("a.csv", "fx-a", &tmp);
    let b = import("b.csv", "fx-b", &tmp);
    let (sa, sb) = (summarize(&a).unwrap(), summarize(&b).unwrap());
    (a, sa, b, sb)
}

fn step<'a>(steps: &'a [CellStep], engine: &str, workload: Workload, target: u64) -> &'a CellStep {
    steps
        .iter()
        .find(|s| s.engine == engine && s.workload == workload && s.target_prompt_tokens == target)
        .unwrap_or_else(|| panic!("no {engine} {workload:?} {target}"))
}

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() < 1e-3
}

#[test]
fn cell_medians_bands_and_levels() {
    let (_, a, _, _) = passes();
    let llama = step(&a, "llama.cpp", Workload::Sustained, 0);
    assert_eq!((llama.n_runs, llama.n_failed, llama.n_short), (3, 0, 0));
    let decode = llama.decode.as_ref().unwrap();
    // Runs at 50, 51 and 49 tok/s: median 50; the band holds both ends, ±1/50 = 2 %.
    assert!(close(decode.median, 50.0), "{}", decode.median);
    assert!(close(decode.band.half_width, 0.02));
    assert!(close(decode.band.low, 49.0) && close(decode.band.high, 51.0));
    // Three runs: [min, max] covers the median with probability 1 − 2 × 0.5³ = 0.75.
    assert_eq!(decode.band.level, Some(0.75));
    // TTFT 120, 121, 119 ms → 120; prefill 30 tokens / 0.120 s = 250 tok/s.
    assert!(close(llama.ttft.as_ref().unwrap().median, 120.0));
    assert!(close(llama.prefill.as_ref().unwrap().median, 250.0));
    assert_eq!(llama.token_count_source, "usage");
}

#[test]
fn engines_with_different_weights_in_one_row_are_marked_engine_build() {
    let (_, a, _, _) = passes();
    // The sustained row of family qwen holds four engines with four build hashes.
    for engine in ["llama.cpp", "mlx-lm", "vllm", "ollama"] {
        assert!(step(&a, engine, Workload::Sustained, 0).has(ReasonCode::EngineBuild), "{engine}");
    }
    // Every engine read a 30-token prompt: no spread, no prompt-size mark.
    let llama = step(&a, "llama.cpp", Workload::Sustained, 0);
    assert_eq!(llama.row_prompt_tokens, Some((30.0, 30.0)));
    assert!(!llama.has(ReasonCode::PromptSize));
    // The 2048 row holds llama.cpp alone: nothing to compare, nothing to mark.
    assert!(!step(&a, "llama.cpp", Workload::PromptMatrix, 2048).has(ReasonCode::EngineBuild));
}

#[test]
fn failures_few_runs_and_prompt_size_are_flagged() {
    let (_, a, _, _) = passes();
    let p2048 = step(&a, "llama.cpp", Workload::PromptMatrix, 2048);
    // One of two runs failed (http-500): errors; one decode value: few-runs; 2100 actual
    // tokens is 2.5 % over 2048, inside the 10 % margin: no prompt-size.
    assert_eq!(join_codes(&p2048.reasons), "few-runs;errors");
    assert!(close(p2048.decode.as_ref().unwrap().median, 30.0));
    assert_eq!(p2048.decode.as_ref().unwrap().band.level, None, "one run has no band");
    // 5500 actual tokens for an 8192 target is 33 % short: the seed's "target 8K, actual 5.5K".
    let p8192 = step(&a, "llama.cpp", Workload::PromptMatrix, 8192);
    assert_eq!(join_codes(&p8192.reasons), "few-runs;prompt-size");
}

fn row<'a>(rows: &'a [DiffRow], engine: &str, workload: Workload, target: u64, metric: MetricKind) -> &'a DiffRow {
    rows.iter()
        .find(|r| r.engine == engine && r.workload == workload && r.target_prompt_tokens == target && r.metric == metric)
        .unwrap_or_else(|| panic!("no row {engine} {metric:?}"))
}

#[test]
fn a_ninety_percent_speed_up_at_three_runs_a_side_is_faster_and_blamed_on_the_engine() {
    let (pa, a, pb, b) = passes();
    let d = diff(&pa, &a, &pb, &b);
    let r = row(&d.rows, "llama.cpp", Workload::Sustained, 0, MetricKind::DecodeTps);
    // 50 → 95 tok/s: +90 %. The samples do not overlap: exact p = 2/20 = 0.10, the smallest a
    // 3-vs-3 test can give, so the call is made at α = 0.10 with a low-n note.
    assert!(close(r.delta_pct.unwrap(), 90.0));
    assert_eq!(r.verdict, Verdict::Faster);
    assert!(close(r.p_value.unwrap(), 0.1));
    assert_eq!(r.attribution, Some(Attribution::Engine), "b5000 → b5100, same weights");
    assert_eq!(join_codes(&r.reasons), "low-n");
    // TTFT 120 → 60 ms: −50 %, and lower is faster.
    let t = row(&d.rows, "llama.cpp", Workload::Sustained, 0, MetricKind::TtftMs);
    assert!(close(t.delta_pct.unwrap(), -50.0));
    assert_eq!(t.verdict, Verdict::Faster);
}

#[test]
fn one_percent_on_an_unchanged_engine_and_build_is_noise_and_a_control() {
    let (pa, a, pb, b) = passes();
    let d = diff(&pa, &a, &pb, &b);
    let r = row(&d.rows, "mlx-lm", Workload::Sustained, 0, MetricKind::DecodeTps);
    // 100 → 101 tok/s: +1 %, inside the 2 % floor; the runs overlap (ranks 1, 2.5, 4.5 vs 2.5, 4.5, 6).
    assert!(close(r.delta_pct.unwrap(), 1.0));
    assert_eq!(r.verdict, Verdict::WithinNoise);
    assert_eq!(r.attribution, Some(Attribution::None));
    // mlx-lm is the only control with a comparable decode rate (ollama's B side is a burst):
    // the drift is its 1 %.
    let drift = d.drift.iter().find(|x| x.metric == MetricKind::DecodeTps).unwrap();
    assert_eq!(drift.n_controls, 1);
    assert!(close(drift.max_abs_delta, 0.01));
}

#[test]
fn a_change_of_engine_and_weights_is_attributed_to_both() {
    let (pa, a, pb, b) = passes();
    let d = diff(&pa, &a, &pb, &b);
    let r = row(&d.rows, "vllm", Workload::Sustained, 0, MetricKind::DecodeTps);
    // 60 → 66 tok/s: +10 %, above the 2 % band; p = 0.10 at 3 v 3.
    assert!(close(r.delta_pct.unwrap(), 10.0));
    assert_eq!(r.verdict, Verdict::Faster);
    assert_eq!(r.attribution, Some(Attribution::EngineBuild));
}

#[test]
fn a_starred_cell_is_incomparable_on_decode_but_its_ttft_still_counts() {
    let (pa, a, pb, b) = passes();
    let ollama_b = step(&b, "ollama", Workload::Sustained, 0);
    // All three B runs stopped at 180 of 256 tokens.
    assert!(ollama_b.decode_is_burst());
    assert!(ollama_b.has(ReasonCode::ShortStop));
    let d = diff(&pa, &a, &pb, &b);
    let decode = row(&d.rows, "ollama", Workload::Sustained, 0, MetricKind::DecodeTps);
    assert_eq!(decode.verdict, Verdict::Incomparable);
    assert_eq!(join_codes(&decode.reasons), "short-stop");
    let ttft = row(&d.rows, "ollama", Workload::Sustained, 0, MetricKind::TtftMs);
    // 200 → 200 ms.
    assert_eq!(ttft.verdict, Verdict::WithinNoise);
    assert!(close(ttft.delta_pct.unwrap(), 0.0));
}

#[test]
fn cells_only_in_a_are_gone() {
    let (pa, a, pb, b) = passes();
    let d = diff(&pa, &a, &pb, &b);
    let r = row(&d.rows, "llama.cpp", Workload::PromptMatrix, 8192, MetricKind::DecodeTps);
    assert_eq!(r.verdict, Verdict::Gone);
    assert!(close(r.a_median.unwrap(), 25.0));
}

#[test]
fn swapping_a_and_b_flips_every_call() {
    let (pa, a, pb, b) = passes();
    let forward = diff(&pa, &a, &pb, &b);
    let backward = diff(&pb, &b, &pa, &a);
    for r in &forward.rows {
        let Some(back) = backward.rows.iter().find(|x| {
            (&x.engine, x.workload, x.target_prompt_tokens, x.metric) == (&r.engine, r.workload, r.target_prompt_tokens, r.metric)
        }) else {
            continue;
        };
        let expected = match r.verdict {
            Verdict::Faster => Verdict::Slower,
            Verdict::Slower => Verdict::Faster,
            Verdict::New => Verdict::Gone,
            Verdict::Gone => Verdict::New,
            other => other,
        };
        assert_eq!(back.verdict, expected, "{} {:?}", r.engine, r.metric);
    }
}

#[test]
fn a_cell_with_a_hash_missing_on_a_side_is_unknown_and_never_a_control() {
    let (pa, a, pb, mut b) = passes();
    // mlx-lm, the one control with a comparable decode rate, loses its weights hash in B.
    for step in b.iter_mut().filter(|s| s.engine == "mlx-lm") {
        step.build_sha256 = None;
    }
    let d = diff(&pa, &a, &pb, &b);
    let r = row(&d.rows, "mlx-lm", Workload::Sustained, 0, MetricKind::DecodeTps);
    assert_eq!(r.attribution, Some(Attribution::Unknown));
    assert!(r.reasons.iter().any(|x| x.code == ReasonCode::Unhashed && x.detail == "no weights hash on a side"), "{:?}", r.reasons);
    // With no control left, there is no drift to widen the other bands.
    assert!(d.drift.iter().all(|x| x.metric != MetricKind::DecodeTps), "{:?}", d.drift);
}

#[test]
fn two_quantizations_of_one_family_on_one_engine_are_told_apart_and_none_is_dropped() {
    let (pa, mut a, pb, mut b) = passes();
    // Ollama serves two quantizations of `qwen` in both passes: its cells become two models,
    // each step twice, the second copy with a decode rate 10 % up in B only.
    for side in [&mut a, &mut b] {
        let copies: Vec<CellStep> = side.iter().filter(|s| s.engine == "ollama").cloned().collect();
        for s in side.iter_mut().filter(|s| s.engine == "ollama") {
            s.model = "qwen:q4".to_owned();
        }
        side.extend(copies.into_iter().map(|mut s| {
            s.model = "qwen:q8".to_owned();
            s.cell = format!("{}-q8", s.cell);
            s
        }));
    }
    let d = diff(&pa, &a, &pb, &b);
    let ollama: Vec<&DiffRow> = d.rows.iter().filter(|r| r.engine == "ollama" && r.metric == MetricKind::TtftMs).collect();
    // Every step of each quantization appears once, matched with its own.
    let steps_a = a.iter().filter(|s| s.engine == "ollama").count();
    assert_eq!(ollama.len(), steps_a, "{ollama:?}");
    assert_eq!(ollama.iter().filter(|r| r.model == "qwen:q4").count(), steps_a / 2);
    assert_eq!(ollama.iter().filter(|r| r.model == "qwen:q8").count(), steps_a / 2);
    assert!(ollama.iter().all(|r| !matches!(r.verdict, Verdict::New | Verdict::Gone)));
    // The other engines keep matching on the family alone.
    assert!(d.rows.iter().filter(|r| r.engine == "llama.cpp").all(|r| r.model == "qwen"));
}

#[test]
fn a_change_of_concurrency_leaves_the_levels_apart_and_one_of_request_extras_makes_the_diff_incomparable() {
    let (mut pa, a, mut pb, mut b) = passes();
    let request = |concurrency: u32| {
        serde_json::from_value::<harness::pass::RequestParams>(serde_json::json!({
            "api": "chat", "temperature": 0.0, "ignore_eos": false, "concurrency": concurrency,
            "first_token_timeout_s": 60.0, "idle_timeout_s": 30.0, "steps": []
        }))
        .unwrap()
    };
    // B ran mlx-lm's steps at 4 streams: never paired with A's at 1, and each row says why.
    pa.info.request = Some(request(1));
    pb.info.request = Some(request(4));
    b.iter_mut().filter(|s| s.engine == "mlx-lm").for_each(|s| s.concurrency = 4);
    let d = diff(&pa, &a, &pb, &b);
    let rows: Vec<&DiffRow> = d.rows.iter().filter(|r| r.engine == "mlx-lm" && r.workload == Workload::Sustained && r.metric == MetricKind::TtftMs).collect();
    assert_eq!(rows.iter().map(|r| (r.verdict, r.concurrency)).collect::<Vec<_>>(), [(Verdict::Gone, 1), (Verdict::New, 4)]);
    assert!(rows[0].reasons.iter().any(|x| x.code == ReasonCode::Params && x.detail.starts_with("concurrency 1 → 4")), "{:?}", rows[0].reasons);
    assert!(rows[1].reasons.iter().any(|x| x.code == ReasonCode::Params && x.detail.starts_with("concurrency 1 → 4")), "{:?}", rows[1].reasons);
    // The pass's own concurrency (its highest level) does not make the other rows incomparable.
    let other = row(&d.rows, "llama.cpp", Workload::Sustained, 0, MetricKind::TtftMs);
    assert_ne!(other.verdict, Verdict::Incomparable, "{:?}", other.reasons);
    let (_, _, _, b) = passes();

    // Same concurrency, but one cell's requests carried cache_prompt=false in A only.
    pb.info.request = Some(request(1));
    let mlx = a.iter().find(|s| s.engine == "mlx-lm").unwrap().cell.clone();
    pa.info.cells.iter_mut().find(|c| c.id == mlx).unwrap().request_extra = Some(serde_json::json!({"cache_prompt": false}));
    let d = diff(&pa, &a, &pb, &b);
    let r = row(&d.rows, "mlx-lm", Workload::Sustained, 0, MetricKind::TtftMs);
    assert_eq!(r.verdict, Verdict::Incomparable);
    assert!(r.reasons.iter().any(|x| x.detail == r#"request extras {"cache_prompt":false} → none"#), "{:?}", r.reasons);
    let other = row(&d.rows, "llama.cpp", Workload::Sustained, 0, MetricKind::TtftMs);
    assert_ne!(other.verdict, Verdict::Incomparable, "other cells are unaffected");
}
