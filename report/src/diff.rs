//! Rendering a diff of two passes: Markdown and HTML through the templates, and the diff CSV
//! with its fixed columns.

use analysis::cells::MetricKind;
use analysis::diff::Diff;
use harness::pass::csv::spreadsheet_cell;
use minijinja::context;
use serde::Serialize;

use crate::view::Notes;

/// The diff CSV's columns, in this order (docs/leaderboard.md).
pub const CSV_COLUMNS: [&str; 12] = [
    "engine",
    "model",
    "lane",
    "workload",
    "target_prompt_tokens",
    "metric",
    "a_median",
    "b_median",
    "delta_pct",
    "verdict",
    "attribution",
    "reasons",
];

fn number(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.3}")).unwrap_or_default()
}

pub fn to_csv(diff: &Diff) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(CSV_COLUMNS).expect("writing to memory");
    for r in &diff.rows {
        writer
            .write_record([
                // Text from engines, users and files: a spreadsheet must not run it as a
                // formula (docs/leaderboard.md). The numbers below are written as they are.
                spreadsheet_cell(&r.engine).into_owned(),
                spreadsheet_cell(&r.model).into_owned(),
                spreadsheet_cell(&r.lane).into_owned(),
                r.workload.as_str().to_owned(),
                r.target_prompt_tokens.to_string(),
                r.metric.as_str().to_owned(),
                number(r.a_median),
                number(r.b_median),
                number(r.delta_pct),
                r.verdict.as_str().to_owned(),
                r.attribution.map(|a| a.as_str().to_owned()).unwrap_or_default(),
                analysis::reasons::join_codes(&r.reasons),
            ])
            .expect("writing to memory");
    }
    String::from_utf8(writer.into_inner().expect("writing to memory")).expect("UTF-8 fields")
}

#[derive(Debug, Serialize)]
struct RowView {
    engine: String,
    model: String,
    lane: String,
    workload: String,
    target: u64,
    metric: String,
    a: String,
    b: String,
    delta: String,
    verdict: String,
    attribution: String,
    marks: String,
}

#[derive(Debug, Serialize)]
struct DriftView {
    metric: String,
    n_controls: usize,
    max_abs_delta: String,
}

fn context(diff: &Diff) -> minijinja::Value {
    let mut notes = Notes::default();
    let rows: Vec<RowView> = diff
        .rows
        .iter()
        .map(|r| {
            let digits = match r.metric {
                MetricKind::DecodeTps => 1,
                MetricKind::CacheHitRatio => 3,
                _ => 0,
            };
            let fmt = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.digits$}"));
            RowView {
                engine: r.engine.clone(),
                model: r.model.clone(),
                lane: r.lane.clone(),
                workload: r.workload.as_str().to_owned(),
                target: r.target_prompt_tokens,
                metric: r.metric.as_str().to_owned(),
                a: fmt(r.a_median),
                b: fmt(r.b_median),
                delta: r.delta_pct.map_or("–".to_owned(), |d| format!("{d:+.1}%")),
                verdict: if r.withdrawn { format!("{} (Holm)", r.verdict.as_str()) } else { r.verdict.as_str().to_owned() },
                attribution: r.attribution.map(|a| a.sentence().to_owned()).unwrap_or_default(),
                // A diff row's short-stop reason says a side's rate is a burst: starred.
                marks: notes.marks(&r.reasons, crate::view::ShortStopMark::Star),
            }
        })
        .collect();
    let drift: Vec<DriftView> = diff
        .drift
        .iter()
        .map(|d| DriftView {
            metric: d.metric.as_str().to_owned(),
            n_controls: d.n_controls,
            max_abs_delta: format!("{:.1}%", d.max_abs_delta * 100.0),
        })
        .collect();
    let holm = diff.correction == analysis::diff::Correction::Holm;
    context! {
        a => diff.a_pass,
        b => diff.b_pass,
        rows => rows,
        drift => drift,
        notes => notes.into_vec(),
        n_tested => diff.n_tested,
        expected_false_calls => format!("{:.1}", diff.expected_false_calls),
        holm => holm,
        family_alpha => diff.family_alpha.map(|a| format!("{a:.2}")),
        withdrawn => diff.withdrawn,
    }
}

pub fn to_markdown(diff: &Diff) -> Result<String, minijinja::Error> {
    crate::environment().get_template("diff.md.j2")?.render(context(diff))
}

pub fn to_html(diff: &Diff) -> Result<String, minijinja::Error> {
    crate::environment().get_template("diff.html.j2")?.render(context(diff))
}
