//! fixtures/diff/hand-worked/ rendered: asymmetric bands printed per side, and a diff that says
//! how many false calls chance alone would give and what Holm's correction withdrew. The
//! figures are worked out in that folder's README.

use std::path::Path;

use analysis::diff::{diff_with, Correction};
use harness::pass::{read_pass, Pass};

fn pass(name: &str, pass_id: &str, tmp: &tempfile::TempDir) -> Pass {
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff/hand-worked").join(name);
    harness::pass::csv::import_runs(&csv, tmp.path()).unwrap();
    read_pass(&tmp.path().join(pass_id)).unwrap()
}

#[test]
fn a_skewed_band_prints_each_side_and_a_symmetric_one_prints_plus_minus() {
    let tmp = tempfile::tempdir().unwrap();
    let p = pass("trend.csv", "fx-trend", &tmp);
    let r = report::render_pass(&p, &analysis::cells::summarize(&p).unwrap()).unwrap();
    // TTFT 20, 21, 60 ms: 20 to 60 around 21.
    let ttft = r.markdown.split("## Time to first token").nth(1).unwrap();
    assert!(ttft.lines().any(|l| l.starts_with("| skewed · qwen | 21.0 +185.7%/−4.8%") || l.starts_with("| skewed · qwen | **21.0 +185.7%/−4.8%**")), "{ttft}");
    // Decode 80, 101, 100: 80 to 102 around 100.
    assert!(r.markdown.contains("| cold | 100.0 +2.0%/−20.0%³"), "{}", r.markdown);
    // Decode 50, 50, 50: the floor, ÷ 1.02 and × 1.02, prints as ±2.0 %.
    assert!(r.markdown.contains("| skewed | 50.0 ±2.0%"), "{}", r.markdown);
    assert!(r.markdown.contains("`drift`: the decode rate moved one way run after run"));
    assert!(r.markdown.contains("(rising: 100.0 → 106.0 tok/s over 3 runs, +6.0%)"));
    assert!(r.markdown.contains("(falling: 100.0 → 94.0 tok/s over 3 runs, −6.0%)"));
    assert!(r.markdown.contains("`cold-start`: no warmup run"));
    // The sustained prompt has no prefill column: only the matrix has a prefill table, and
    // this pass has no matrix.
    assert!(!r.markdown.contains("## Prefill"), "{}", r.markdown);
}

#[test]
fn a_diff_counts_the_false_calls_chance_would_give_and_holm_says_what_it_withdrew() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (pass("holm-a.csv", "fx-holm-a", &tmp), pass("holm-b.csv", "fx-holm-b", &tmp));
    let (sa, sb) = (analysis::cells::summarize(&a).unwrap(), analysis::cells::summarize(&b).unwrap());

    let plain = report::diff::to_markdown(&diff_with(&a, &sa, &b, &sb, Correction::None)).unwrap();
    assert!(plain.contains("The exact test ran on 6 row(s)"), "{plain}");
    assert!(plain.contains("\n0.3 of them `faster` or `slower`"), "{plain}");
    assert!(plain.contains("diff with `--correction holm`"));

    let d = diff_with(&a, &sa, &b, &sb, Correction::Holm);
    let holm = report::diff::to_markdown(&d).unwrap();
    assert!(holm.contains("Holm's correction is applied"), "{holm}");
    assert!(holm.contains("0.05; it withdrew 1 call(s)"), "{holm}");
    assert!(holm.contains("| edge | 1.0 → 1.1 | qwen | text | sustained | 0 | 1 | decode tok/s | 102.0 | 112.0 | +9.8% | within-noise (Holm) |"), "{holm}");
    assert!(holm.contains("| big | 1.0 → 1.1 | qwen | text | sustained | 0 | 1 | decode tok/s | 102.0 | 122.0 | +19.6% | faster |"), "{holm}");
    // The CSV keeps its columns; edge's decode call is withdrawn, big's stays.
    let csv = report::diff::to_csv(&d);
    assert_eq!(csv.lines().next().unwrap(), "engine,model,lane,workload,target_prompt_tokens,metric,a_median,b_median,delta_pct,verdict,attribution,reasons,concurrency,a_engine_version,b_engine_version");
    assert!(csv.contains("big,qwen,text,sustained,0,decode_tps,102.000,122.000,19.608,faster,engine,"), "{csv}");
    assert!(csv.contains("edge,qwen,text,sustained,0,decode_tps,102.000,112.000,9.804,within-noise,engine,"), "{csv}");
    let html = report::diff::to_html(&d).unwrap();
    assert!(html.contains("it withdrew 1 call(s)"), "{html}");
}

#[test]
fn the_chart_draws_a_whisker_only_where_the_table_prints_a_band() {
    let tmp = tempfile::tempdir().unwrap();
    // Sustained decode at 3, 3, 2 and 2 runs (three-three, three-four, two-five, two-four).
    let p = pass("low-n-a.csv", "fx-lown-a", &tmp);
    let r = report::render_pass(&p, &analysis::cells::summarize(&p).unwrap()).unwrap();
    let chart = r.charts.iter().find(|c| c.file == "decode-by-cell.svg").unwrap();
    // Every cell gets its median dot; whiskers (the 2-pixel strokes) only the two 3-run cells,
    // which are also the only two with a band in the table.
    assert_eq!(chart.svg.matches("<circle").count(), 4);
    // Each whisker is a line and a cap at either end: 3 strokes a band.
    assert_eq!(chart.svg.matches(r#"stroke-width="2" points="#).count(), 2 * 3, "{}", chart.svg);
    let sustained = r.markdown.split("## Sustained decode").nth(1).unwrap().split("## ").next().unwrap();
    assert_eq!(sustained.matches('±').count() + sustained.matches("%/−").count(), 2, "{sustained}");
}
