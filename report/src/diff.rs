//! Rendering a diff of two passes: Markdown and HTML through the templates, and the diff CSV
//! with its fixed columns.

use analysis::cells::MetricKind;
use analysis::diff::{Diff, Verdict};
use benchpass_format::Pass;
use benchpass_format::csv::spreadsheet_cell;
use minijinja::context;
use serde::Serialize;

use crate::view::Notes;

/// The diff CSV's columns, in this order (docs/leaderboard.md); the last three came later and
/// are at the end, so that a reader by position still finds the first twelve.
pub const CSV_COLUMNS: [&str; 15] = [
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
    "concurrency",
    "a_engine_version",
    "b_engine_version",
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
                r.concurrency.to_string(),
                r.a_engine_version.as_deref().map(spreadsheet_cell).unwrap_or_default().into_owned(),
                r.b_engine_version.as_deref().map(spreadsheet_cell).unwrap_or_default().into_owned(),
            ])
            .expect("writing to memory");
    }
    String::from_utf8(writer.into_inner().expect("writing to memory")).expect("UTF-8 fields")
}

/// One line that says what a diff found, in the order a reader acts on it: `2 slower, 1
/// faster, 9 within noise, 1 incomparable` (then `new` and `gone`); a verdict with no row is
/// left out. The counts are the rows' own, so they add up to the table's rows.
pub fn summary(diff: &Diff) -> String {
    let order = [Verdict::Slower, Verdict::Faster, Verdict::WithinNoise, Verdict::Incomparable, Verdict::New, Verdict::Gone];
    let parts: Vec<String> = order
        .iter()
        .filter_map(|&v| {
            let n = diff.rows.iter().filter(|r| r.verdict == v).count();
            (n > 0).then(|| format!("{n} {}", v.as_str().replace('-', " ")))
        })
        .collect();
    if parts.is_empty() { "no rows to compare".to_owned() } else { parts.join(", ") }
}

/// The engines of each side with their versions, shown beside the pass ids: `llama.cpp b5000`,
/// one per engine and version, in cell order; and what of each side's runs.jsonl could not be
/// read (`Pass::damage_notes`), said under them. Empty where the caller has only the diff.
#[derive(Debug, Clone, Default)]
pub struct Sides {
    pub a_engines: Vec<String>,
    pub b_engines: Vec<String>,
    pub a_damage: Vec<String>,
    pub b_damage: Vec<String>,
}

impl Sides {
    pub fn of(a: &Pass, b: &Pass) -> Sides {
        Sides { a_engines: engine_versions(a), b_engines: engine_versions(b), a_damage: a.damage_notes(), b_damage: b.damage_notes() }
    }
}

/// `engine version` for each engine and version of `pass`'s cells, each once, in cell order.
pub fn engine_versions(pass: &Pass) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cell in &pass.info.cells {
        let version = if cell.engine.version.is_empty() { "version unknown" } else { cell.engine.version.as_str() };
        let named = format!("{} {}", cell.engine.name, version);
        if !out.contains(&named) {
            out.push(named);
        }
    }
    out
}

/// A row's engine versions as a reader tells them apart: one where both sides ran the same
/// (or one side lacks the row), `A → B` where they differ; `version unknown` for an empty one.
/// The row's attribution in words. An `unknown` whose engine versions differ says what is
/// known: the engine changed, and the weights could not be compared.
fn attribution_sentence(r: &analysis::diff::DiffRow) -> String {
    let versions_differ = matches!((r.a_engine_version.as_deref(), r.b_engine_version.as_deref()), (Some(a), Some(b)) if !a.is_empty() && !b.is_empty() && a != b);
    match r.attribution {
        Some(analysis::diff::Attribution::Unknown) if versions_differ => {
            "the engine changed (its version), and the weights were not hashed on a side, so whether they changed too is unknown: not a control cell".to_owned()
        }
        Some(a) => a.sentence().to_owned(),
        None => String::new(),
    }
}

fn versions(r: &analysis::diff::DiffRow) -> String {
    let shown = |v: &str| if v.is_empty() { "version unknown".to_owned() } else { v.to_owned() };
    match (r.a_engine_version.as_deref(), r.b_engine_version.as_deref()) {
        (Some(a), Some(b)) if a != b => format!("{} → {}", shown(a), shown(b)),
        (Some(v), _) | (None, Some(v)) => shown(v),
        (None, None) => String::new(),
    }
}

#[derive(Debug, Serialize)]
struct RowView {
    engine: String,
    model: String,
    lane: String,
    workload: String,
    target: u64,
    /// Streams in flight at once: a sweep's levels are rows of their own.
    streams: u32,
    /// `b5000`, or `b5000 → b5100` where the engine's version changed.
    versions: String,
    metric: String,
    a: String,
    b: String,
    delta: String,
    verdict: String,
    /// The verdict's CSS class (`within-noise` also for a call Holm withdrew).
    verdict_class: &'static str,
    attribution: String,
    marks: String,
}

/// The rows of one engine, model and lane: what changed between its two cells (the
/// attribution) is the same for all of them, so it is said once, above them.
#[derive(Debug, Serialize)]
struct GroupView {
    engine: String,
    model: String,
    lane: String,
    versions: String,
    attribution: String,
    rows: Vec<RowView>,
}

#[derive(Debug, Serialize)]
struct DriftView {
    metric: String,
    n_controls: usize,
    max_abs_delta: String,
}

fn context(diff: &Diff, sides: &Sides) -> minijinja::Value {
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
                streams: r.concurrency,
                versions: versions(r),
                metric: r.metric.label().to_owned(),
                a: fmt(r.a_median),
                b: fmt(r.b_median),
                delta: r.delta_pct.map_or("–".to_owned(), |d| format!("{d:+.1}%")),
                verdict: if r.withdrawn { format!("{} (Holm)", r.verdict.as_str()) } else { r.verdict.as_str().to_owned() },
                verdict_class: r.verdict.as_str(),
                attribution: attribution_sentence(r),
                // A diff row's short-stop reason says a side's rate is a burst: starred.
                marks: notes.marks(&r.reasons, crate::view::ShortStopMark::Star),
            }
        })
        .collect();
    // Rows grouped by engine, model and lane, in the order the groups first appear (a pass's
    // steps are in cell order, so this seldom moves a row); the CSV keeps the diff's order.
    let mut groups: Vec<GroupView> = Vec::new();
    for row in rows {
        let same = |g: &GroupView| g.engine == row.engine && g.model == row.model && g.lane == row.lane && g.versions == row.versions && g.attribution == row.attribution;
        match groups.iter_mut().find(|g| same(g)) {
            Some(group) => group.rows.push(row),
            None => groups.push(GroupView {
                engine: row.engine.clone(),
                model: row.model.clone(),
                lane: row.lane.clone(),
                versions: row.versions.clone(),
                attribution: row.attribution.clone(),
                rows: vec![row],
            }),
        }
    }
    let drift: Vec<DriftView> = diff
        .drift
        .iter()
        .map(|d| DriftView {
            metric: d.metric.label().to_owned(),
            n_controls: d.n_controls,
            max_abs_delta: format!("{:.1}%", d.max_abs_delta * 100.0),
        })
        .collect();
    let holm = diff.correction == analysis::diff::Correction::Holm;
    let goodput: Vec<GoodputView> = diff.goodput.iter().map(goodput_view).collect();
    let step_energy: Vec<StepEnergyView> = diff.step_energy.iter().map(step_energy_view).collect();
    context! {
        goodput => goodput,
        step_energy => step_energy,
        a => diff.a_pass,
        b => diff.b_pass,
        a_engines => sides.a_engines,
        b_engines => sides.b_engines,
        a_damage => sides.a_damage,
        b_damage => sides.b_damage,
        summary => summary(diff),
        groups => groups,
        drift => drift,
        notes => notes.into_vec(),
        n_tested => diff.n_tested,
        expected_false_calls => format!("{:.1}", diff.expected_false_calls),
        holm => holm,
        family_alpha => diff.family_alpha.map(|a| format!("{a:.2}")),
        withdrawn => diff.withdrawn,
    }
}

/// A matched pair's goodput, A → B: each side's share of runs that met its objectives and its
/// goodput in req/s, or why the pair is not compared.
#[derive(Debug, Serialize)]
struct GoodputView {
    cell: String,
    workload: &'static str,
    streams: u32,
    a: String,
    b: String,
    compared: String,
}

fn goodput_view(g: &analysis::diff::GoodputDiff) -> GoodputView {
    let side = |s: Option<(f64, Option<f64>)>| match s {
        Some((share, rps)) => format!("{:.0} % met, {}", share * 100.0, rps.map_or("–".to_owned(), |r| format!("{r:.2} req/s"))),
        None => "–".to_owned(),
    };
    GoodputView {
        cell: g.cell.clone(),
        workload: g.workload.as_str(),
        streams: g.concurrency,
        a: side(g.a),
        b: side(g.b),
        compared: match &g.comparable {
            Ok(()) => "yes".to_owned(),
            Err(why) => format!("no: {why}"),
        },
    }
}

/// A matched pair's energy at N > 1 streams, A → B: each side's J/token and W with its
/// source and domain, and the change in J/token or why none is stated.
#[derive(Debug, Serialize)]
struct StepEnergyView {
    cell: String,
    workload: &'static str,
    streams: u32,
    a: String,
    b: String,
    change: String,
}

fn step_energy_view(e: &analysis::diff::StepEnergyDiff) -> StepEnergyView {
    let side = |s: &Option<analysis::serving::ServingEnergy>| match s {
        Some(e) => format!("{}, {:.1} W ({})", e.joules_per_output_token.map_or("–".to_owned(), |j| format!("{j:.3} J/token")), e.mean_watts, e.key),
        None => "–".to_owned(),
    };
    StepEnergyView {
        cell: e.cell.clone(),
        workload: e.workload.as_str(),
        streams: e.concurrency,
        a: side(&e.a),
        b: side(&e.b),
        change: match &e.change {
            Ok(c) => format!("{:+.1} % J/token", c * 100.0),
            Err(why) => format!("not compared: {why}"),
        },
    }
}

pub fn to_markdown(diff: &Diff) -> Result<String, minijinja::Error> {
    to_markdown_with(diff, &Sides::default())
}

pub fn to_html(diff: &Diff) -> Result<String, minijinja::Error> {
    to_html_with(diff, &Sides::default())
}

/// [`to_markdown`] with each side's engine versions beside its pass id.
pub fn to_markdown_with(diff: &Diff, sides: &Sides) -> Result<String, minijinja::Error> {
    crate::environment().get_template("diff.md.j2")?.render(context(diff, sides))
}

/// [`to_html`] with each side's engine versions beside its pass id.
pub fn to_html_with(diff: &Diff, sides: &Sides) -> Result<String, minijinja::Error> {
    crate::environment().get_template("diff.html.j2")?.render(context(diff, sides))
}
