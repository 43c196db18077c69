//! What the templates see: every figure formatted, every mark placed, every footnote written.
//! Strings are raw here; the templates escape them (HTML auto-escaping, the `md` filter).

use analysis::cells::{CellStep, Metric, MetricKind};
use analysis::quality::QualityRow;
use analysis::reasons::{Reason, ReasonCode};
use benchpass_format::{Pass, Workload};
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Table {
    pub title: String,
    pub caption: String,
    pub corner: String,
    /// The load columns after the corner (`streams`, `rate`), where the pass has steps at more
    /// than one level ([`Levels`]); empty otherwise, and the table is as it always was.
    pub level_columns: Vec<String>,
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Serialize)]
pub struct Row {
    pub label: String,
    /// The row's values of [`Table::level_columns`].
    pub levels: Vec<String>,
    pub cells: Vec<Cell>,
}

/// Which load levels a table that shows a step must name: the streams where the pass has
/// steps at more than one concurrency (a `--concurrency 1,2,4` sweep), the arrival rate where
/// it has more than one. A pass at one level names neither, so its tables keep their layout;
/// a sweep's rows of one cell and workload, otherwise alike, are told apart by them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Levels {
    pub streams: bool,
    pub rate: bool,
}

impl Levels {
    pub fn of(steps: &[CellStep]) -> Levels {
        let differ = |f: &dyn Fn(&CellStep) -> String| steps.iter().any(|s| f(s) != f(&steps[0]));
        Levels { streams: differ(&|s| s.concurrency.to_string()), rate: differ(&|s| rate_text(s.request.request_rate)) }
    }

    /// The column names, in the order [`Levels::values`] gives them.
    pub fn columns(self) -> Vec<String> {
        [(self.streams, "streams"), (self.rate, "rate")].into_iter().filter(|(shown, _)| *shown).map(|(_, name)| name.to_owned()).collect()
    }

    /// `step`'s values: its streams, its arrival rate (`2 req/s`, `–` for streams kept busy).
    pub fn values(self, step: &CellStep) -> Vec<String> {
        let mut out = Vec::new();
        if self.streams {
            out.push(step.concurrency.to_string());
        }
        if self.rate {
            out.push(rate_text(step.request.request_rate));
        }
        out
    }
}

/// An arrival rate as the tables print it: `2.5 req/s`, or `–` where the streams were kept busy.
fn rate_text(rate: Option<f64>) -> String {
    rate.map_or("–".to_owned(), |r| format!("{r} req/s"))
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Cell {
    pub text: String,
    /// `*` and footnote numbers, e.g. `*2,3`.
    pub marks: String,
    /// The best figure of its column among the cells it can be compared with ([`mark_best`]).
    pub best: bool,
}

#[derive(Debug, Serialize)]
pub struct Note {
    pub mark: String,
    /// The note's anchor in the page, which its marks link to: `note-3`, `note-s1` for `*`.
    pub id: String,
    pub code: String,
    pub text: String,
}

/// The anchor of the note behind `mark` (`3` or `**`).
pub fn note_id(mark: &str) -> String {
    if mark.starts_with('*') {
        format!("note-s{}", mark.len())
    } else {
        format!("note-{mark}")
    }
}

/// Footnotes shared by a whole report: one number per distinct reason.
#[derive(Debug, Default)]
pub struct Notes {
    notes: Vec<Note>,
}

/// How a `short-stop` reason is marked on a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShortStopMark {
    /// A star: the figure is a short-sample burst (short runs entered its median).
    Star,
    /// A numbered note like any other: runs stopped early but were left out of the figure.
    Number,
    /// Not marked: the figure does not depend on where runs stopped (TTFT, prefill).
    Omit,
}

impl ShortStopMark {
    /// For a decode rate: a star only where the median came from runs that stopped early.
    pub fn for_decode(step: &CellStep) -> ShortStopMark {
        if step.decode_is_burst() {
            ShortStopMark::Star
        } else {
            ShortStopMark::Number
        }
    }
}

impl Notes {
    /// The marks for `reasons`: stars for a burst (`*`, then `**`, … for notes that say
    /// different things), numbers for the rest.
    pub fn marks(&mut self, reasons: &[Reason], short_stop: ShortStopMark) -> String {
        let mut stars = Vec::new();
        let mut numbers = Vec::new();
        for reason in reasons {
            let starred = reason.code == ReasonCode::ShortStop && short_stop == ShortStopMark::Star;
            if reason.code == ReasonCode::ShortStop && short_stop == ShortStopMark::Omit {
                continue;
            }
            let text = reason.explain();
            let index = match self.notes.iter().position(|n| n.code == reason.code.as_str() && n.text == text && n.mark.starts_with('*') == starred) {
                Some(i) => i,
                None => {
                    let mark = if starred {
                        "*".repeat(self.notes.iter().filter(|n| n.mark.starts_with('*')).count() + 1)
                    } else {
                        (self.notes.iter().filter(|n| !n.mark.starts_with('*')).count() + 1).to_string()
                    };
                    self.notes.push(Note { id: note_id(&mark), mark, code: reason.code.as_str().to_owned(), text });
                    self.notes.len() - 1
                }
            };
            let mark = self.notes[index].mark.clone();
            let list = if starred { &mut stars } else { &mut numbers };
            if !list.contains(&mark) {
                list.push(mark);
            }
        }
        // In reading order: `*` before `**`, 3 before 5, whatever order the reasons came in.
        stars.sort_by_key(String::len);
        numbers.sort_by_key(|n| n.parse::<usize>().unwrap_or(usize::MAX));
        let mut out = stars.concat();
        out.push_str(&numbers.join(","));
        out
    }

    pub fn into_vec(self) -> Vec<Note> {
        self.notes
    }
}

/// `81.9 ±2.0%` where the band reaches as far each way (at one decimal), `21.0 +185.7%/−4.8%`
/// where it does not: a band is worked out per side on the log scale and never crosses zero
/// (docs/statistics.md). No band when fewer runs than a band needs. A median that is not a
/// finite number of 0 or more (no reader lets one through) is shown as `–`, never as `inf` or
/// `-50.0`.
pub fn with_band(metric: &Metric, digits: usize) -> String {
    if !(metric.median.is_finite() && metric.median >= 0.0) {
        return "–".to_owned();
    }
    let (above, below) = (metric.band.above(metric.median) * 100.0, metric.band.below(metric.median) * 100.0);
    if !(has_band(metric) && above.is_finite() && below.is_finite()) {
        return format!("{:.digits$}", metric.median);
    }
    let (up, down) = (format!("{above:.1}"), format!("{below:.1}"));
    if up == down {
        format!("{:.digits$} ±{up}%", metric.median)
    } else {
        format!("{:.digits$} +{up}%/−{down}%", metric.median)
    }
}

/// Whether a figure gets a band, in tables and charts alike (the leaderboard's rule too):
/// enough runs, and a positive median to scale it by.
pub fn has_band(metric: &Metric) -> bool {
    metric.values.len() >= analysis::cells::MIN_RUNS_FOR_BAND && metric.median > 0.0
}

fn engine_label(step: &CellStep, lanes_differ: bool) -> String {
    if lanes_differ {
        format!("{} · {}", step.engine, step.lane)
    } else {
        step.engine.clone()
    }
}

/// A table with one row per `row_of(step)`, one column per `column_of(step)`, and `cell` for
/// each step that falls in it.
// Each argument is one part of the table a caller shapes; a struct of them would only move the
// list elsewhere.
#[allow(clippy::too_many_arguments)]
fn grid(
    title: &str,
    caption: &str,
    corner: &str,
    levels: Levels,
    steps: &[&CellStep],
    row_of: impl Fn(&CellStep) -> String,
    column_of: impl Fn(&CellStep) -> (u64, String),
    best_of: Option<MetricKind>,
    mut cell: impl FnMut(&CellStep) -> Cell,
) -> Option<Table> {
    if steps.is_empty() {
        return None;
    }
    // A row is its label and its load levels: a sweep's steps of one engine get a row each.
    let row_of = |s: &CellStep| (row_of(s), levels.values(s));
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut columns: Vec<(u64, String)> = Vec::new();
    for s in steps {
        let r = row_of(s);
        if !rows.contains(&r) {
            rows.push(r);
        }
        let c = column_of(s);
        if !columns.contains(&c) {
            columns.push(c);
        }
    }
    columns.sort();
    let mut cells: Vec<Vec<Cell>> = vec![vec![Cell { text: "–".to_owned(), ..Cell::default() }; columns.len()]; rows.len()];
    let place = |s: &CellStep| {
        let r = rows.iter().position(|x| *x == row_of(s)).expect("row listed");
        let c = columns.iter().position(|x| *x == column_of(s)).expect("column listed");
        (r, c)
    };
    for s in steps {
        let (r, c) = place(s);
        cells[r][c] = cell(s);
    }
    if let Some(kind) = best_of {
        for s in best_in_columns(steps, kind, &column_of) {
            let (r, c) = place(s);
            cells[r][c].best = true;
        }
    }
    Some(Table {
        title: title.to_owned(),
        caption: caption.to_owned(),
        corner: corner.to_owned(),
        level_columns: levels.columns(),
        columns: columns.into_iter().map(|(_, name)| name).collect(),
        rows: rows.into_iter().zip(cells).map(|((label, levels), cells)| Row { label, levels, cells }).collect(),
    })
}

/// Which way is better: more tokens a second, fewer milliseconds to the first token.
pub fn higher_is_better(kind: MetricKind) -> bool {
    !matches!(kind, MetricKind::TtftMs | MetricKind::TtftColdMs | MetricKind::TtftCachedMs)
}

/// Whether `step`'s figure may be called the best of its column: a figure measured like the
/// others. Never a burst (`*`: short runs entered the decode median), a rate built on token
/// counts that are estimates or that the stream contradicts, a decode rate the server's own
/// timings disagree with, or a figure whose lane, parameters or machine differ.
pub fn can_be_best(step: &CellStep, kind: MetricKind) -> bool {
    let Some(metric) = step.metric(kind) else { return false };
    if !(metric.median.is_finite() && metric.median > 0.0) {
        return false;
    }
    if kind == MetricKind::DecodeTps && step.decode_is_burst() {
        return false;
    }
    let rate = matches!(kind, MetricKind::DecodeTps | MetricKind::PrefillTps);
    !step.reasons.iter().any(|r| match r.code {
        ReasonCode::Lane | ReasonCode::Params | ReasonCode::Machine => true,
        ReasonCode::TokenEstimate | ReasonCode::UsageMismatch => rate,
        ReasonCode::Reconciliation => kind == MetricKind::DecodeTps,
        _ => false,
    })
}

/// The groups of steps whose figure of `kind` may be ranked against each other: the same
/// column and the same comparison key (`analysis::key`: model family, lane, workload, token
/// cap, streams, arrival rate, API, temperature, way past EOS, machine), each of which
/// [`can_be_best`], and at least two of them. A group whose actual prompts lie further apart
/// than `analysis::cells::PROMPT_SPREAD_MARGIN` is no group (the prompts differ, not only the
/// engines). The best marks and the headline both rank within these groups and nowhere else.
pub fn comparable_groups<'a>(steps: &[&'a CellStep], kind: MetricKind, column_of: impl Fn(&CellStep) -> (u64, String)) -> Vec<Vec<&'a CellStep>> {
    type Key = ((u64, String), analysis::key::ComparisonKey);
    let mut groups: Vec<(Key, Vec<&'a CellStep>)> = Vec::new();
    for &s in steps.iter().filter(|s| can_be_best(s, kind)) {
        // One comparison key (analysis::key): figures measured otherwise are never ranked together.
        let key = (column_of(s), analysis::key::ComparisonKey::of(s));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(s),
            None => groups.push((key, vec![s])),
        }
    }
    groups
        .into_iter()
        .map(|(_, members)| members)
        .filter(|members| {
            let prompts: Vec<f64> = members.iter().filter_map(|s| s.prompt_tokens.as_ref().map(|m| m.median)).collect();
            let (lo, hi) = prompts.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &p| (lo.min(p), hi.max(p)));
            members.len() >= 2 && !(prompts.len() >= 2 && lo > 0.0 && (hi - lo) / lo > analysis::cells::PROMPT_SPREAD_MARGIN)
        })
        .collect()
}

/// The steps whose figure of `kind` is the best of their column ([`comparable_groups`]).
/// Equal medians are all marked.
pub fn best_in_columns<'a>(steps: &[&'a CellStep], kind: MetricKind, column_of: impl Fn(&CellStep) -> (u64, String)) -> Vec<&'a CellStep> {
    let mut best = Vec::new();
    for members in comparable_groups(steps, kind, column_of) {
        let median = |s: &CellStep| s.metric(kind).map_or(f64::NAN, |m| m.median);
        let top = members.iter().map(|s| median(s)).fold(if higher_is_better(kind) { f64::MIN } else { f64::MAX }, |a, b| {
            if higher_is_better(kind) { a.max(b) } else { a.min(b) }
        });
        best.extend(members.into_iter().filter(|s| median(s) == top));
    }
    best
}

/// The report's tables, in reading order, and the footnotes their marks refer to.
pub fn tables(steps: &[CellStep]) -> (Vec<Table>, Vec<Note>) {
    tables_with_quality(steps, None)
}

/// [`tables`], each with a last column `quality` when a comparison with a reference cell is
/// given: what `report::quality::column_text` says of the cells in the row ("how fast, and how
/// close to the reference" in one table). A row of one cell shows its text; a row of several
/// (an engine on several families) names each cell's family; `–` where a cell has no quality
/// runs.
pub fn tables_with_quality(steps: &[CellStep], quality: Option<&[QualityRow]>) -> (Vec<Table>, Vec<Note>) {
    let (mut tables, notes) = speed_tables(steps);
    energy_columns(&mut tables, steps);
    if let Some(quality) = quality {
        let lanes_differ = steps.iter().any(|s| s.lane != steps[0].lane);
        for table in &mut tables {
            let by_engine_only = table.corner == "engine";
            table.columns.push("quality".to_owned());
            for row in &mut table.rows {
                // The row's cells: the steps its label was made from.
                let mut cells: Vec<&CellStep> = Vec::new();
                for s in steps {
                    let label = if by_engine_only { engine_label(s, lanes_differ) } else { format!("{} · {}", engine_label(s, lanes_differ), s.family) };
                    if label == row.label && !cells.iter().any(|c| c.cell == s.cell && c.pass_id == s.pass_id) {
                        cells.push(s);
                    }
                }
                let text_of = |s: &CellStep| {
                    quality.iter().find(|q| q.pass_id == s.pass_id && q.cell == s.cell).map_or("–".to_owned(), crate::quality::column_text)
                };
                let text = match cells[..] {
                    [one] => text_of(one),
                    _ => cells.iter().map(|s| format!("{}: {}", s.family, text_of(s))).collect::<Vec<_>>().join("; "),
                };
                row.cells.push(Cell { text, ..Cell::default() });
            }
        }
    }
    (tables, notes)
}

/// The decode tables gain a last column `energy` where a step of the pass has energy: J per
/// output token over the decode span and mean watts, each a median over the runs, for the
/// steps in the row (named by their column where the row has several). The source and domain
/// are named in the provenance ([`energy_sources`]).
fn energy_columns(tables: &mut [Table], steps: &[CellStep]) {
    if !steps.iter().any(|s| s.energy.is_some()) {
        return;
    }
    let lanes_differ = steps.iter().any(|s| s.lane != steps[0].lane);
    for table in tables.iter_mut() {
        let workload = match table.title.as_str() {
            "Sustained decode (tok/s)" => Workload::Sustained,
            "ppN-tgM: decode (tok/s)" => Workload::PpTg,
            "Prompt-size matrix: decode (tok/s) · actual prompt tokens" => Workload::PromptMatrix,
            _ => continue,
        };
        let by_engine_only = table.corner == "engine";
        table.columns.push("energy".to_owned());
        for row in &mut table.rows {
            let mut texts = Vec::new();
            for s in steps.iter().filter(|s| s.workload == workload) {
                let label = if by_engine_only { engine_label(s, lanes_differ) } else { format!("{} · {}", engine_label(s, lanes_differ), s.family) };
                if label != row.label || Levels::of(steps).values(s) != row.levels {
                    continue;
                }
                let Some(text) = energy_text(s) else { continue };
                let named = match workload {
                    Workload::Sustained if by_engine_only && steps.iter().any(|o| o.workload == workload && o.family != s.family) => Some(s.family.clone()),
                    Workload::PromptMatrix => Some(s.target_prompt_tokens.to_string()),
                    Workload::PpTg => Some(format!("pp{}-tg{}", s.target_prompt_tokens, s.max_tokens)),
                    _ => None,
                };
                texts.push(named.map_or(text.clone(), |n| format!("{n}: {text}")));
            }
            let text = if texts.is_empty() { "–".to_owned() } else { texts.join("; ") };
            row.cells.push(Cell { text, ..Cell::default() });
        }
    }
}

/// `0.412 J/tok · 38.1 W`, with the J/token above idle where the cell has a baseline.
pub fn energy_text(step: &CellStep) -> Option<String> {
    let e = step.energy.as_ref()?;
    let per_token = e.joules_per_token.as_ref().map(|m| format!("{:.3} J/tok", m.median));
    let above = e.joules_per_token_above_idle.map(|j| format!("{j:.3} above idle"));
    let watts = e.mean_watts.as_ref().map(|m| format!("{:.1} W", m.median));
    let parts: Vec<String> = [per_token, above, watts].into_iter().flatten().collect();
    (!parts.is_empty()).then(|| parts.join(" · "))
}

#[derive(Debug, Serialize)]
pub struct EnergyRow {
    pub cell: String,
    /// `rapl:package+dram, counter read every 100 ms; idle 12.3 W over 3 s`, or `unavailable (why)`.
    pub energy: String,
}

/// Where each cell's energy came from, for a pass that has energy anywhere (empty otherwise,
/// and the report is as it was): the source and domain, how it was read, the idle baseline.
pub fn energy_sources(pass: &Pass) -> Vec<EnergyRow> {
    if !pass.info.cells.iter().any(|c| c.energy.as_ref().is_some_and(|e| e.source.is_some())) {
        return Vec::new();
    }
    pass.info
        .cells
        .iter()
        .map(|c| {
            let energy = match &c.energy {
                None => "not measured".to_owned(),
                Some(e) if e.source.is_none() => format!("unavailable ({})", e.unavailable.as_deref().unwrap_or("no source")),
                Some(e) => {
                    let how = match e.reading {
                        Some(benchpass_format::EnergyReading::SampledPower) => "power sampled",
                        _ => "counter read",
                    };
                    let idle = match e.idle_watts {
                        Some(w) => format!("; idle {w:.1} W over {:.1} s", e.idle_ms as f64 / 1e3),
                        None => "; no idle baseline".to_owned(),
                    };
                    let gpu = gpu_text(pass.runs.iter().filter(|r| r.cell == c.id && !r.warmup)).map(|g| format!("; {g}")).unwrap_or_default();
                    format!("{}, {how} every {} ms{idle}{gpu}", e.key(), e.interval_ms)
                }
            };
            EnergyRow { cell: c.id.clone(), energy }
        })
        .collect()
}

/// `GPU over 12 runs: 1296 MHz mean, 980 lowest; active 85 %; hottest 71 °C`, from the runs'
/// GPU samples (docs/metrics.md, "The GPU over a run"); `None` where no run has them.
pub fn gpu_text<'a>(runs: impl Iterator<Item = &'a benchpass_format::RunRecord>) -> Option<String> {
    let gpus: Vec<&benchpass_format::RunGpu> = runs.filter_map(|r| r.gpu.as_ref()).collect();
    if gpus.is_empty() {
        return None;
    }
    let means: Vec<f64> = gpus.iter().filter_map(|g| g.freq_mhz_mean).collect();
    let freq = match (means.is_empty(), gpus.iter().filter_map(|g| g.freq_mhz_min).reduce(f64::min)) {
        (false, Some(low)) => format!("{:.0} MHz mean, {low:.0} lowest", means.iter().sum::<f64>() / means.len() as f64),
        _ => "idle".to_owned(),
    };
    let active = gpus.iter().map(|g| g.active_mean).sum::<f64>() / gpus.len() as f64;
    let hottest = gpus.iter().filter_map(|g| g.temp_max_c).reduce(f64::max).map(|t| format!("; hottest {t:.0} °C")).unwrap_or_default();
    let runs = if gpus.len() == 1 { "1 run".to_owned() } else { format!("{} runs", gpus.len()) };
    Some(format!("GPU over {runs}: {freq}; active {:.0} %{hottest}", active * 100.0))
}

#[derive(Debug, Serialize)]
pub struct QualityNote {
    /// The reference cell: `pass · engine · model`.
    pub reference: String,
    pub flags: Vec<QualityFlagNote>,
}

#[derive(Debug, Serialize)]
pub struct QualityFlagNote {
    pub code: &'static str,
    pub text: &'static str,
}

/// What the quality column is measured against, and the flags it shows, explained.
pub fn quality_note(rows: &[QualityRow]) -> QualityNote {
    let reference = rows.first().map_or_else(String::new, |r| format!("{} · {} · {}", r.ref_pass_id, r.ref_engine, r.ref_model));
    let mut flags: Vec<QualityFlagNote> = Vec::new();
    for flag in rows.iter().flat_map(|r| &r.flags) {
        if !flags.iter().any(|f| f.code == flag.as_str()) {
            flags.push(QualityFlagNote { code: flag.as_str(), text: flag.sentence() });
        }
    }
    flags.sort_by_key(|f| f.code);
    QualityNote { reference, flags }
}

fn speed_tables(steps: &[CellStep]) -> (Vec<Table>, Vec<Note>) {
    let mut notes = Notes::default();
    let lanes_differ = steps.iter().any(|s| s.lane != steps[0].lane);
    let levels = Levels::of(steps);
    let of = |w: Workload| steps.iter().filter(|s| s.workload == w).collect::<Vec<_>>();
    let (sustained, matrix, pptg) = (of(Workload::Sustained), of(Workload::PromptMatrix), of(Workload::PpTg));
    let by_engine = |s: &CellStep| engine_label(s, lanes_differ);
    let by_engine_family = |s: &CellStep| format!("{} · {}", engine_label(s, lanes_differ), s.family);
    let by_target = |s: &CellStep| (s.target_prompt_tokens, s.target_prompt_tokens.to_string());
    let by_pptg = |s: &CellStep| (s.target_prompt_tokens, format!("pp{}-tg{}", s.target_prompt_tokens, s.max_tokens));
    let mut out = Vec::new();

    out.extend(grid(
        "Sustained decode (tok/s)",
        "Engines × model families: the same short prose prompt, decoded to the token cap.",
        "engine",
        levels,
        &sustained,
        by_engine,
        |s| (0, s.family.clone()),
        Some(MetricKind::DecodeTps),
        |s| decode_cell(s, &mut notes),
    ));
    out.extend(grid(
        "Prompt-size matrix: decode (tok/s) · actual prompt tokens",
        "Decode rate at each prompt-size target, with the prompt tokens the engine actually counted.",
        "engine · family",
        levels,
        &matrix,
        by_engine_family,
        by_target,
        Some(MetricKind::DecodeTps),
        |s| {
            let mut cell = decode_cell(s, &mut notes);
            if let Some(p) = &s.prompt_tokens {
                cell.text = format!("{} · {:.0} tok", cell.text, p.median);
            }
            cell
        },
    ));
    let ttft_steps: Vec<&CellStep> = sustained.iter().chain(matrix.iter()).copied().collect();
    out.extend(grid(
        "Time to first token (ms)",
        "Request sent → first token received, at each prompt-size target (0: the sustained prompt).",
        "engine · family",
        levels,
        &ttft_steps,
        by_engine_family,
        by_target,
        Some(MetricKind::TtftMs),
        |s| other_cell(s, s.ttft.as_ref(), 1, &mut notes),
    ));
    // Not the sustained prompt: every run sends the same one, so an engine with a prompt cache
    // skips most of its prefill after the first run (docs/metrics.md).
    out.extend(grid(
        "Prefill (tok/s)",
        "Actual prompt tokens ÷ time to first token: an end-to-end prefill rate, network and queueing included. Prompt-size matrix only: the sustained prompt repeats, and a prompt cache skips its prefill.",
        "engine · family",
        levels,
        &matrix,
        by_engine_family,
        by_target,
        Some(MetricKind::PrefillTps),
        |s| other_cell(s, s.prefill.as_ref(), 0, &mut notes),
    ));
    out.extend(grid(
        "ppN-tgM: decode (tok/s)",
        "The standardized protocol: N prompt tokens, M generated.",
        "engine · family",
        levels,
        &pptg,
        by_engine_family,
        by_pptg,
        Some(MetricKind::DecodeTps),
        |s| decode_cell(s, &mut notes),
    ));
    out.extend(grid(
        "ppN-tgM: prefill (tok/s)",
        "Actual prompt tokens ÷ time to first token.",
        "engine · family",
        levels,
        &pptg,
        by_engine_family,
        by_pptg,
        Some(MetricKind::PrefillTps),
        |s| other_cell(s, s.prefill.as_ref(), 0, &mut notes),
    ));
    (out, notes.into_vec())
}

fn decode_cell(step: &CellStep, notes: &mut Notes) -> Cell {
    Cell {
        text: step.decode.as_ref().map_or("–".to_owned(), |m| with_band(m, 1)),
        marks: notes.marks(&step.reasons, ShortStopMark::for_decode(step)),
        best: false,
    }
}

/// TTFT and prefill still count for short-stopped runs: no `*`.
fn other_cell(step: &CellStep, metric: Option<&Metric>, digits: usize, notes: &mut Notes) -> Cell {
    Cell { text: metric.map_or("–".to_owned(), |m| with_band(m, digits)), marks: notes.marks(&step.reasons, ShortStopMark::Omit), best: false }
}

#[derive(Debug, Serialize)]
pub struct PassHeader {
    pub pass_id: String,
    pub machine: String,
    pub machine_detail: String,
    pub started_at: String,
    pub finished_at: String,
    pub status: String,
    pub n_runs: usize,
    /// Runs of sessions cut short and run again whole on resume, left out of every figure.
    pub n_superseded: usize,
    pub benchpass: String,
    pub protocol: String,
    /// What measuring cost benchpass, and its self-check (docs/metrics.md, "What measuring
    /// costs"): [`measuring_cost`] and [`self_check_text`].
    pub measuring_cost: String,
    pub self_check: String,
    /// What of runs.jsonl could not be read (`Pass::damage_notes`), shown at the top of the
    /// report; empty for a whole pass, which then renders as it always did.
    pub damage: Vec<String>,
}

/// What a Mac benchmarker checks before trusting a figure, in the order they would say it:
/// `Mac15,9`, `10P+4E cores`, `30-core GPU`, `macOS 15.1 (24B83)`, `AC power`, `High Power
/// Mode`, `GPU wired limit 30720 MB`, `Metal working set 40.0 GiB`, `swap 1.0 GiB used`, `thermal
/// pressure nominal at start`.
fn mac_detail(mac: Option<&benchpass_format::machine::MacFacts>) -> Vec<String> {
    use benchpass_format::machine::{PowerMode, PowerSource};
    let Some(mac) = mac else { return Vec::new() };
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
    // The chip is `cpu` already (machdep.cpu.brand_string on a Mac).
    [
        mac.model_identifier.clone(),
        mac_cores(mac),
        mac.gpu_cores.map(|g| format!("{g}-core GPU")),
        mac.os.as_ref().map(|o| format!("{} {} ({})", o.product_name, o.product_version, o.build_version)),
        mac.rosetta.filter(|r| *r).map(|_| "under Rosetta".to_owned()),
        mac.power_source.map(|p| match p {
            PowerSource::Ac => "AC power".to_owned(),
            PowerSource::Battery => "on battery".to_owned(),
        }),
        mac.power_mode.map(|m| match m {
            PowerMode::Automatic => "Automatic power mode".to_owned(),
            PowerMode::Low => "Low Power Mode".to_owned(),
            PowerMode::High => "High Power Mode".to_owned(),
        }),
        mac.gpu_wired_limit_mb.map(|mb| if mb == 0 { "GPU wired limit default".to_owned() } else { format!("GPU wired limit {mb} MB") }),
        mac.metal_recommended_working_set_bytes.map(|b| format!("Metal working set {}", gib(b))),
        mac.swap.as_ref().map(|s| format!("swap {} used", gib(s.used_bytes))),
        mac.thermal_pressure.map(|t| format!("thermal pressure {} at start", t.as_str())),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The CPU levels by the names macOS gives them (`6 Super + 12 Performance cores` on an M5 Max),
/// or, for a pass that recorded no names, the two counts as before (`10P+4E cores`).
fn mac_cores(mac: &benchpass_format::machine::MacFacts) -> Option<String> {
    if !mac.cpu_levels.is_empty() {
        let levels: Vec<String> = mac.cpu_levels.iter().map(|l| format!("{} {}", l.physical_cores, l.name)).collect();
        return Some(format!("{} cores", levels.join(" + ")));
    }
    match (mac.performance_cores, mac.efficiency_cores) {
        (Some(p), Some(e)) => Some(format!("{p}P+{e}E cores")),
        _ => None,
    }
}

/// The Linux equivalents: CPU governor and mains power.
fn power_detail(power: Option<&benchpass_format::machine::LinuxPowerFacts>) -> Vec<String> {
    let Some(power) = power else { return Vec::new() };
    [
        power.cpu_governor.as_ref().map(|g| format!("CPU governor {g}")),
        power.on_mains_power.map(|on| if on { "mains power".to_owned() } else { "on battery".to_owned() }),
    ]
    .into_iter()
    .flatten()
    .collect()
}

pub fn header(pass: &Pass) -> PassHeader {
    let m = &pass.info.machine;
    let detail: Vec<String> = [
        m.os.clone(),
        m.kernel.as_ref().map(|k| format!("kernel {k}")),
        m.cpu.clone(),
        m.cores.map(|c| format!("{c} cores")),
        m.memory_bytes.map(|b| format!("{:.0} GiB", b as f64 / (1u64 << 30) as f64)),
    ]
    .into_iter()
    .flatten()
    .chain(mac_detail(m.mac.as_ref()))
    .chain(power_detail(m.power.as_ref()))
    .collect();
    let protocol = match &pass.info.request {
        Some(r) => {
            let steps: Vec<String> = r
                .steps
                .iter()
                .map(|s| {
                    match (s.workload, s.duration_s) {
                        (Workload::Soak, Some(d)) => format!("soak: {} warmup + runs back to back for {} s × {} tokens", s.warmup, d, s.max_tokens),
                        (Workload::Sustained, _) => format!("sustained: {} warmup + {} runs × {} tokens", s.warmup, s.runs, s.max_tokens),
                        (w, _) => format!("{} {}: {} warmup + {} runs × {} tokens", w.as_str(), s.target_prompt_tokens, s.warmup, s.runs, s.max_tokens),
                    }
                })
                .collect();
            format!(
                "{} API, temperature {}, concurrency {}{}{}; {}",
                r.api,
                r.temperature,
                r.concurrency,
                if r.ignore_eos { ", ignore_eos" } else { "" },
                if r.order.is_sequential() { "" } else { ", cells interleaved repetition by repetition" },
                steps.join("; ")
            )
        }
        None => match &pass.info.imported_from {
            Some(file) => format!("imported from {file}"),
            None => "not recorded".to_owned(),
        },
    };
    // Levels a sweep left out on purpose (`--stop-at-saturation`), said with what was run.
    let stops: Vec<String> = pass
        .info
        .stopped_sweeps
        .iter()
        .map(|s| format!("{} {} stopped after {} streams, two levels past its knee (--stop-at-saturation)", s.cell, s.workload.as_str(), s.after_concurrency))
        .collect();
    let protocol = if stops.is_empty() { protocol } else { format!("{protocol}; {}", stops.join("; ")) };
    let benchpass = match &pass.info.benchpass.git_commit {
        Some(commit) => format!("{} ({})", pass.info.benchpass.version, commit),
        None => pass.info.benchpass.version.clone(),
    };
    PassHeader {
        pass_id: pass.info.pass_id.clone(),
        machine: m.name.clone(),
        machine_detail: if detail.is_empty() { "not recorded".to_owned() } else { detail.join(", ") },
        started_at: if pass.info.started_at.is_empty() { "–".to_owned() } else { pass.info.started_at.clone() },
        finished_at: pass.info.finished_at.clone().unwrap_or_else(|| "–".to_owned()),
        status: format!("{:?}", pass.info.status).to_lowercase(),
        n_runs: pass.runs.len(),
        n_superseded: analysis::runs::n_superseded(pass),
        benchpass,
        protocol,
        measuring_cost: measuring_cost(pass),
        self_check: self_check_text(pass),
        damage: pass.damage_notes(),
    }
}

/// "1.24 s of CPU: 8.6 µs per streamed token, 27.1 µs per event, 2.1 % of one core over
/// 58.3 s; peak memory 18.0 MB; the clock steps by 25 ns".
pub fn measuring_cost(pass: &Pass) -> String {
    let Some(f) = analysis::floor::floor(&pass.info) else {
        return "not recorded (a pass from before benchpass recorded it, or imported)".to_owned();
    };
    // The figures every branch ends with.
    let memory_and_clock = match f.peak_rss_bytes {
        Some(bytes) => format!("peak memory {:.1} MB; the clock steps by {} ns", bytes as f64 / 1e6, f.clock_tick_ns),
        None => format!("the clock steps by {} ns", f.clock_tick_ns),
    };
    let Some(cpu) = f.cpu_seconds else {
        return format!("CPU time not told by this OS; {} tokens in {} events over {:.1} s; {memory_and_clock}", f.streamed_tokens, f.stream_events, f.wall_seconds);
    };
    let per = |us: Option<f64>, what: &str| us.map(|us| format!("{us:.1} µs per {what}"));
    let parts: Vec<String> = [per(f.us_per_token, "streamed token"), per(f.us_per_event, "event"), f.core_share.map(|s| format!("{:.1} % of one core over {:.1} s", s * 100.0, f.wall_seconds))]
        .into_iter()
        .flatten()
        .collect();
    format!("{cpu:.2} s of CPU{}{}; {memory_and_clock}", if parts.is_empty() { "" } else { ": " }, parts.join(", "))
}

/// "TTFT within 0.42 ms (median 0.21 ms), decode rate within 0.31 % (median 0.12 %): 16
/// requests at 8 streams against the reference engine on loopback, before the first cell".
pub fn self_check_text(pass: &Pass) -> String {
    match pass.info.measurer.as_ref().map(|m| m.self_check.as_ref()) {
        None => "not recorded".to_owned(),
        Some(None) => "none (skipped with --no-self-check, or it failed: the pass's output said why); a diff has no timing floor for this pass".to_owned(),
        Some(Some(c)) => format!("{}, before the first cell", c.describe()),
    }
}

#[derive(Debug, Serialize)]
pub struct EngineRow {
    pub cell: String,
    pub engine: String,
    pub version: String,
    pub version_source: String,
    pub engine_sha256: String,
    pub model: String,
    pub family: String,
    pub lane: String,
    pub build_sha256: String,
    pub n_files: usize,
}

pub fn engines(pass: &Pass) -> Vec<EngineRow> {
    pass.info
        .cells
        .iter()
        .map(|c| EngineRow {
            cell: c.id.clone(),
            engine: c.engine.name.clone(),
            version: if c.engine.version.is_empty() { "unknown".to_owned() } else { c.engine.version.clone() },
            version_source: c.engine.version_source.clone(),
            engine_sha256: c.engine.sha256.clone().unwrap_or_else(|| "not hashed".to_owned()),
            model: c.model.clone(),
            family: c.family().to_owned(),
            lane: c.lane.clone(),
            build_sha256: c.build.sha256.clone().unwrap_or_else(|| "not hashed".to_owned()),
            n_files: c.build.files.len(),
        })
        .collect()
}

#[derive(Debug, Serialize)]
pub struct SpecRow {
    pub cell: String,
    pub workload: String,
    pub target: u64,
    /// Its values of [`Levels::columns`] (`level_columns` in the templates).
    pub levels: Vec<String>,
    pub acceptance: String,
}

#[derive(Debug, Serialize)]
pub struct MemoryRow {
    pub cell: String,
    pub workload: String,
    pub target: u64,
    pub levels: Vec<String>,
    pub peak: String,
    /// `¹` where the cell's engine maps its weights and the table holds another engine
    /// ([`weights_mapped_cells`]): the row does not compare with the others.
    pub mark: &'static str,
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// Peak server memory per step, where benchpass started the engine and could sample it.
pub fn memory(steps: &[CellStep], pass: &Pass) -> Vec<MemoryRow> {
    let levels = Levels::of(steps);
    let mapped = weights_mapped_cells(pass);
    steps
        .iter()
        .filter_map(|s| {
            let bytes = s.server_peak_rss_bytes?;
            Some(MemoryRow {
                cell: format!("{} · {}", s.engine, s.family),
                workload: s.workload.as_str().to_owned(),
                target: s.target_prompt_tokens,
                levels: levels.values(s),
                peak: mib(bytes),
                mark: if mapped.contains(&s.cell.as_str()) { "¹" } else { "" },
            })
        })
        .collect()
}

/// The cells whose memory does not compare with the rest of the table: their engine maps its
/// weights (`weights_mapped`, recorded at the cell's end) while the pass holds another engine
/// that is not known to map them. Engines that all map their weights measure alike, and a pass
/// of one engine compares nothing across engines: neither marks anything.
pub fn weights_mapped_cells(pass: &Pass) -> Vec<&str> {
    let cells = &pass.info.cells;
    let mapped = |c: &benchpass_format::CellInfo| c.engine.weights_mapped == Some(true);
    cells
        .iter()
        .filter(|c| mapped(c) && cells.iter().any(|other| other.engine.name != c.engine.name && !mapped(other)))
        .map(|c| c.id.as_str())
        .collect()
}

/// The sentence under the memory table for the `¹` mark, where some row has it.
pub fn weights_mapped_note(pass: &Pass) -> Option<String> {
    (!weights_mapped_cells(pass).is_empty())
        .then(|| format!("{} ({}).", analysis::reasons::ReasonCode::WeightsMapped.sentence(), analysis::reasons::ReasonCode::WeightsMapped.as_str()))
}

#[derive(Debug, Serialize)]
pub struct MemoryCell {
    pub cell: String,
    /// The kernel's lifetime peak of the measure, or `—`.
    pub lifetime_peak: String,
    /// `mapped from their files`, `held in the engine's memory`, or `not known`.
    pub weights: &'static str,
}

/// Per cell, what its engine's memory said of the whole cell: the lifetime peak in the pass's
/// measure and whether it maps its weights. Only cells with either recorded.
pub fn memory_cells(pass: &Pass) -> Vec<MemoryCell> {
    pass.info
        .cells
        .iter()
        .filter(|c| c.engine.memory_lifetime_peak_bytes.is_some() || c.engine.weights_mapped.is_some())
        .map(|c| MemoryCell {
            cell: format!("{} · {}", c.engine.name, c.family()),
            lifetime_peak: c.engine.memory_lifetime_peak_bytes.map_or_else(|| "—".to_owned(), mib),
            weights: match c.engine.weights_mapped {
                Some(true) => "mapped from their files",
                Some(false) => "held in the engine's memory",
                None => "not known",
            },
        })
        .collect()
}

/// What the lifetime peak is, as the caption names it.
pub fn memory_lifetime_measure(pass: &Pass) -> &'static str {
    match pass.info.cells.iter().find_map(|c| c.engine.memory_measure) {
        Some(benchpass_format::machine::MemoryMeasure::PhysFootprint) => "the kernel's lifetime peak of the physical footprint (ri_lifetime_max_phys_footprint)",
        _ => "the peak resident size of each process over its life (VmHWM), summed over the tree",
    }
}

/// What the memory figures measure, as the caption names it: the cells' recorded measure
/// (one machine, one measure), or resident size for passes from before it was recorded.
pub fn memory_measure(pass: &Pass) -> &'static str {
    let measure = pass.info.cells.iter().find_map(|c| c.engine.memory_measure);
    measure.unwrap_or(benchpass_format::machine::MemoryMeasure::Rss).label()
}

#[derive(Debug, Serialize)]
pub struct MemorySource {
    pub cell: String,
    pub process: String,
}

/// The cells whose server benchpass did not start but found listening on this machine: their
/// memory is that process's, which the reader should see named (a port proxy is not the engine).
pub fn memory_sources(pass: &Pass) -> Vec<MemorySource> {
    pass.info
        .cells
        .iter()
        .filter_map(|c| Some(MemorySource { cell: format!("{} · {}", c.engine.name, c.family()), process: c.engine.memory_of.clone()? }))
        .collect()
}

#[derive(Debug, Serialize)]
pub struct CacheFlushRow {
    pub cell: String,
    pub request: String,
    /// `emptied (HTTP 200)`, or why not.
    pub outcome: String,
    pub flushed: bool,
}

/// The cells whose server benchpass did not start and whose prefix cache it emptied (or tried
/// to) before their runs: a reader should know such a server was not fresh, and whether a
/// warm cache could have served its prompts.
pub fn cache_flushes(pass: &Pass) -> Vec<CacheFlushRow> {
    pass.info
        .cells
        .iter()
        .filter_map(|c| {
            let flush = c.cache_flush.as_ref()?;
            let outcome = match (&flush.detail, flush.status) {
                (None, Some(status)) => format!("emptied (HTTP {status})"),
                (None, None) => "emptied".to_owned(),
                (Some(why), _) => format!("not emptied ({why}): its runs may have been served from an earlier request's cache"),
            };
            Some(CacheFlushRow { cell: format!("{} · {}", c.engine.name, c.family()), request: flush.request.clone(), outcome, flushed: flush.flushed })
        })
        .collect()
}

/// The plan's thermal gate before each cell that had one: how long it waited, and whether the
/// cell started hot (docs/plans.md, `[gaps] cooldown`).
#[derive(Debug, Serialize)]
pub struct CooldownRow {
    pub cell: String,
    pub text: String,
    pub hot: bool,
}

pub fn cooldowns(pass: &Pass) -> Vec<CooldownRow> {
    pass.info
        .cells
        .iter()
        .filter_map(|c| {
            let gate = c.cooldown.as_ref()?;
            let waited = format!("waited {:.0} s for {}", gate.waited_s, gate.until.as_str());
            let text = match gate.level {
                None => format!("{waited}; this OS tells no thermal level, so nothing was waited for"),
                Some(level) if gate.started_hot() => format!("{waited}; still {} when it began: the cell started hot", level.as_str()),
                Some(level) => format!("{waited}; {} when it began", level.as_str()),
            };
            Some(CooldownRow { cell: format!("{} · {}", c.engine.name, c.family()), text, hot: gate.started_hot() })
        })
        .collect()
}

#[derive(Debug, Serialize)]
pub struct SoakRow {
    pub cell: String,
    pub runs: String,
    pub duration: String,
    pub rss: String,
    pub growth: String,
    pub decode: String,
}

/// The soak of every cell that ran one: memory growth per hour with its 95 % interval.
pub fn soak(pass: &Pass) -> Vec<SoakRow> {
    let mib = |b: Option<u64>| b.map_or("-".to_owned(), |b| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64));
    let tps = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{r:.1}"));
    analysis::soak::soaks(pass)
        .into_iter()
        .map(|s| SoakRow {
            cell: format!("{} · {}", s.engine, s.family),
            runs: if s.failed > 0 { format!("{} ({} failed)", s.runs, s.failed) } else { s.runs.to_string() },
            duration: {
                let t = (s.hours * 3600.0).round() as u64;
                format!("{}h{:02}m{:02}s", t / 3600, t % 3600 / 60, t % 60)
            },
            rss: format!("{} → {}", mib(s.first_rss_bytes), mib(s.last_rss_bytes)),
            growth: match s.growth {
                Some(g) => format!("{:+.1} ± {:.1} MiB/h", g.mib_per_hour, g.ci95_mib_per_hour),
                None if s.restarted => "not fitted: the engine was restarted when the pass resumed".to_owned(),
                None => "not fitted: no memory readings (a server benchpass neither started nor found listening on this machine) or fewer than 3 runs".to_owned(),
            },
            decode: format!("{} → {}", tps(s.decode_first_tps), tps(s.decode_last_tps)),
        })
        .collect()
}

#[derive(Debug, Serialize)]
pub struct ReconcileRow {
    pub cell: String,
    pub workload: String,
    pub target: u64,
    pub levels: Vec<String>,
    pub ratio: String,
}

/// benchpass's decode rate against the server's own, where the server reports timings.
pub fn reconciliation(steps: &[CellStep]) -> Vec<ReconcileRow> {
    let levels = Levels::of(steps);
    steps
        .iter()
        .filter_map(|s| {
            Some(ReconcileRow {
                cell: format!("{} · {}", s.engine, s.family),
                workload: s.workload.as_str().to_owned(),
                target: s.target_prompt_tokens,
                levels: levels.values(s),
                ratio: format!("{:.3}", s.reconciliation?),
            })
        })
        .collect()
}

pub fn spec(steps: &[CellStep]) -> Vec<SpecRow> {
    let levels = Levels::of(steps);
    steps
        .iter()
        .filter_map(|s| {
            let a = s.spec_acceptance?;
            Some(SpecRow {
                cell: format!("{} · {}", s.engine, s.family),
                workload: s.workload.as_str().to_owned(),
                target: s.target_prompt_tokens,
                levels: levels.values(s),
                acceptance: format!("{:.1}%", a * 100.0),
            })
        })
        .collect()
}

#[cfg(test)]
mod mac_detail_tests {
    use super::mac_detail;
    use benchpass_format::machine::{CpuLevel, MacFacts};

    #[test]
    fn cores_are_shown_by_level_name_and_old_passes_as_before() {
        let level = |name: &str, physical_cores: u32| CpuLevel { name: name.to_owned(), physical_cores };
        // An M5 Max: its Super level is not shown as performance cores.
        let m5max = MacFacts { cpu_levels: vec![level("Super", 6), level("Performance", 12)], performance_cores: Some(12), ..MacFacts::default() };
        assert_eq!(mac_detail(Some(&m5max)), ["6 Super + 12 Performance cores"]);
        // A pass written before levels were recorded.
        let old = MacFacts { performance_cores: Some(10), efficiency_cores: Some(4), ..MacFacts::default() };
        assert_eq!(mac_detail(Some(&old)), ["10P+4E cores"]);
    }
}

#[cfg(test)]
mod gpu_text_tests {
    use super::gpu_text;
    use benchpass_format::{RunGpu, RunRecord, Workload};

    fn run(gpu: Option<RunGpu>) -> RunRecord {
        RunRecord { gpu, ..RunRecord::unmeasured("c0", Workload::Sustained, 0, 0, false, 64) }
    }

    /// Two runs with samples (mean frequencies 1200 and 1000: 1100; lowest 850; active 0.8 and
    /// 0.6: 70 %; hottest 74 °C) and one without, which is not counted.
    #[test]
    fn the_gpu_of_a_cells_runs_is_said_in_one_line() {
        let a = RunGpu { samples: 4, freq_mhz_mean: Some(1200.0), freq_mhz_min: Some(1100.0), active_mean: 0.8, temp_max_c: Some(68.0) };
        let b = RunGpu { samples: 3, freq_mhz_mean: Some(1000.0), freq_mhz_min: Some(850.0), active_mean: 0.6, temp_max_c: Some(74.0) };
        let runs = [run(Some(a)), run(Some(b)), run(None)];
        assert_eq!(gpu_text(runs.iter()).unwrap(), "GPU over 2 runs: 1100 MHz mean, 850 lowest; active 70 %; hottest 74 °C");
        let idle = RunGpu { samples: 1, freq_mhz_mean: None, freq_mhz_min: None, active_mean: 0.0, temp_max_c: None };
        assert_eq!(gpu_text([run(Some(idle))].iter()).unwrap(), "GPU over 1 run: idle; active 0 %");
        assert_eq!(gpu_text([run(None)].iter()), None);
    }
}
