//! What `benchpass report`, `diff`, `leaderboard` and `quality` do, and `cargo xtask` calls the
//! same: read passes, ask `analysis` for the figures and `report` for the text, write files.
//! The command line (`main.rs`) only parses flags and chooses where output goes.

pub mod demo;
pub mod leaderboard;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use harness::pass::store::read_pass_keeping;
use harness::pass::{Pass, Workload};

/// A pass, with a warning for each line of runs.jsonl that could not be read and for a torn
/// last line; a folder that is not a pass says so once and names the passes near it.
pub fn load(dir: &Path) -> anyhow::Result<Pass> {
    if let Some(message) = harness::pass::listing::not_a_pass(dir) {
        anyhow::bail!(message);
    }
    // The events no figure reads are dropped as each run is read: most of a pass's memory.
    let pass = read_pass_keeping(dir, analysis::runs::events_the_figures_read)?;
    warn_if_damaged(dir, &pass.damage, pass.torn_tail.as_ref());
    Ok(pass)
}

/// On stderr, what of the runs.jsonl in `dir` could not be read: every command that reads a
/// pass says it, each line with its number and why (`harness::pass::damage_notes`), so that a
/// damaged pass never passes for a smaller whole one. What the figures say of it is the
/// `damaged` reason (in the tables, the leaderboard's `flags` and the diff's rows).
pub fn warn_if_damaged(dir: &Path, damage: &harness::pass::Damage, torn_tail: Option<&harness::pass::TornTail>) {
    warn_notes(dir, &harness::pass::damage_notes(damage, torn_tail));
}

/// [`warn_if_damaged`] with the notes already made (a pass's `leaderboard.cache` keeps them).
pub fn warn_notes(dir: &Path, notes: &[String]) {
    for note in notes {
        // A line's why may quote the line: shown, never obeyed.
        eprintln!("warning: {}: {}", harness::progress::printable(&dir.display().to_string()), harness::progress::printable(note));
    }
}

/// Writes `contents` to `path`, making its folder: into a temporary file beside it, synced,
/// then renamed over `path`, so that a kill part-way leaves the old file or none, never a
/// partial one under the final name (and a link at `path` is replaced, not written through).
pub fn write(path: &Path, contents: &str) -> anyhow::Result<()> {
    write_with(path, |file| file.write_all(contents.as_bytes()).with_context(|| format!("writing {}", path.display())))
}

/// [`write`] with the contents made by `fill`, which may stream them (the export, one run at a
/// time). When `fill` fails, nothing is left under `path` or beside it, and its error is
/// returned as it is.
pub fn write_with<T>(path: &Path, fill: impl FnOnce(&mut std::io::BufWriter<&std::fs::File>) -> anyhow::Result<T>) -> anyhow::Result<T> {
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            dir
        }
        None => Path::new("."),
    };
    let name = path.file_name().with_context(|| format!("{}: not a file name", path.display()))?;
    // Removed when dropped, on every path that does not reach `persist`.
    let prefix = format!(".{}.", name.to_string_lossy());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    // As `File::create` would make it (the umask applies), not the temporary's owner-only mode:
    // a report is often served or shared.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let temp = builder
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    let made = {
        let mut buffered = std::io::BufWriter::new(temp.as_file());
        let made = fill(&mut buffered)?;
        buffered.flush().with_context(|| format!("writing {}", path.display()))?;
        made
    };
    temp.as_file().sync_all().with_context(|| format!("writing {}", path.display()))?;
    temp.persist(path).with_context(|| format!("writing {}", path.display()))?;
    Ok(made)
}

/// Writes report.md, report.html, charts/*.svg and leaderboard.csv into `out`. Deletes
/// nothing: a chart an earlier render drew and this one does not is left, unlinked from the
/// report, and named in a note.
pub fn write_report(pass: &Pass, out: &Path, options: report::ReportOptions<'_>) -> anyhow::Result<()> {
    let steps = analysis::cells::summarize(pass)?;
    let rendered = report::render_pass_with(pass, &steps, options)?;
    write(&out.join("report.md"), &rendered.markdown)?;
    write(&out.join("report.html"), &rendered.html)?;
    write(&out.join("leaderboard.csv"), &rendered.leaderboard_csv)?;
    let charts = out.join("charts");
    for chart in &rendered.charts {
        write(&charts.join(&chart.file), &chart.svg)?;
    }
    let drawn: Vec<&str> = rendered.charts.iter().map(|c| c.file.as_str()).collect();
    let stale: Vec<String> = std::fs::read_dir(&charts)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".svg") && !drawn.contains(&name.as_str()))
        .collect();
    if !stale.is_empty() {
        eprintln!(
            "note: {} also holds {} from an earlier render, which this report does not draw or link (benchpass deletes nothing it did not write in this run)",
            harness::progress::printable(&charts.display().to_string()),
            harness::progress::printable(&stale.join(", "))
        );
    }
    Ok(())
}

/// A reference cell for quality: `PASS:CELL`, unless the whole argument is a folder (a path
/// may hold a colon).
pub fn reference(arg: &str) -> (PathBuf, Option<String>) {
    match arg.rsplit_once(':') {
        Some((dir, cell)) if !Path::new(arg).is_dir() && !cell.is_empty() => (PathBuf::from(dir), Some(cell.to_owned())),
        _ => (PathBuf::from(arg), None),
    }
}

/// The folder under `reports/` that a pass's report goes to without `--out`: its pass id,
/// which comes from a file anyone may have written, so it must pass the rule `--pass-id`
/// passes (letters, digits, `.`, `_`, `-`; no leading `.`) before it names a folder.
fn default_report_folder<'p>(pass: &'p Pass, pass_dir: &Path) -> anyhow::Result<&'p str> {
    let id = pass.info.pass_id.as_str();
    harness::runner::check_pass_id(id).with_context(|| {
        format!(
            "{}: its pass id cannot name the report's folder; give the folder with --out DIR",
            pass_dir.join(harness::pass::PASS_FILE).display()
        )
    })?;
    Ok(id)
}

/// The report of the pass in `pass_dir`, written into `out` (default: `reports/<pass id>/`
/// under `root`); with a quality reference, each cell's quality beside the speed tables.
/// Returns the folder written.
pub fn report(pass_dir: &Path, out: Option<&Path>, root: &Path, quality_reference: Option<&str>) -> anyhow::Result<PathBuf> {
    let pass = load(pass_dir)?;
    let out = match out {
        Some(out) => out.to_path_buf(),
        None => root.join("reports").join(default_report_folder(&pass, pass_dir)?),
    };
    let quality = match quality_reference {
        Some(arg) => {
            let (dir, cell) = reference(arg);
            let ref_pass = load(&dir).with_context(|| format!("reading the quality reference {}", dir.display()))?;
            let ref_cell = analysis::quality::reference_cell(&ref_pass, cell.as_deref())?;
            let rows = analysis::quality::compare(&ref_pass, ref_cell, std::slice::from_ref(&pass));
            anyhow::ensure!(
                !rows.is_empty(),
                "pass {} has no measured quality runs to compare with the reference (run it with --workload quality)",
                pass.info.pass_id
            );
            // The column sits in the speed tables: a pass of quality runs alone has none.
            let speed = [Workload::Sustained, Workload::PromptMatrix, Workload::PpTg];
            if !pass.runs.iter().any(|r| speed.contains(&r.workload)) {
                eprintln!(
                    "warning: pass {} has no sustained, prompt-matrix or pp-tg runs, so no speed table to put the quality column in; \
                     `benchpass quality` writes the quality table",
                    pass.info.pass_id
                );
            }
            Some(rows)
        }
        None => None,
    };
    write_report(&pass, &out, report::ReportOptions { quality: quality.as_deref() })?;
    Ok(out)
}

/// What a finished `benchpass run` shows: the pass's table (the demo's, the same code) for the
/// terminal, and the same figures as JSON for scripts (docs/raw-format.md, "`run --json`").
pub struct RunSummary {
    pub markdown: String,
    pub json: serde_json::Value,
    /// The command to run next, with what it gives.
    pub next: String,
}

/// What to run after a pass: a pass of quality runs alone is read against a reference pass
/// (`benchpass quality`; a report has no speed table to show it in), any other is reported.
fn next_step(runs: &[harness::pass::RunRecord], dir: &Path) -> String {
    let quality_only = !runs.is_empty() && runs.iter().all(|r| r.workload == Workload::Quality);
    if quality_only {
        format!("next: benchpass quality --reference REFERENCE_PASS {}    (exact match and top-K KL against a reference pass, docs/quality.md)", dir.display())
    } else {
        format!("next: benchpass report {}    (Markdown, HTML and charts)", dir.display())
    }
}

/// The summary of the pass in `dir`.
pub fn run_summary(dir: &Path) -> anyhow::Result<RunSummary> {
    let pass = load(dir)?;
    let steps = analysis::cells::summarize(&pass)?;
    let metric = |m: Option<&analysis::cells::Metric>| match m {
        Some(m) => serde_json::json!({
            "median": m.median,
            // As the tables: no band below the runs a band needs.
            "band_low": (m.values.len() >= analysis::cells::MIN_RUNS_FOR_BAND).then_some(m.band.low),
            "band_high": (m.values.len() >= analysis::cells::MIN_RUNS_FOR_BAND).then_some(m.band.high),
            "runs": m.values.len(),
        }),
        None => serde_json::Value::Null,
    };
    let json_steps: Vec<serde_json::Value> = steps
        .iter()
        .map(|s| {
            serde_json::json!({
                "cell": s.cell,
                "engine": s.engine,
                "model": s.model,
                "lane": s.lane,
                "workload": s.workload.as_str(),
                "target_prompt_tokens": s.target_prompt_tokens,
                "concurrency": s.concurrency,
                "runs": s.n_runs,
                "failed": s.n_failed,
                "short_stopped": s.n_short,
                "decode_tps": metric(s.decode.as_ref()),
                "ttft_ms": metric(s.ttft.as_ref()),
                "prefill_tps": metric(s.prefill.as_ref()),
                "flags": s.reasons.iter().map(|r| r.code.as_str()).collect::<Vec<_>>(),
                "serving": s.serving.as_ref().map(serving_json),
            })
        })
        .collect();
    let json = serde_json::json!({
        "pass_dir": dir,
        "pass_id": pass.info.pass_id,
        "status": pass.info.status,
        "runs": pass.runs.len(),
        "failed": pass.runs.iter().filter(|r| r.is_error()).count(),
        // What of runs.jsonl could not be read; empty for a whole pass.
        "damaged": pass.damage_notes(),
        "steps": json_steps,
        // What measuring cost benchpass and its self-check (docs/metrics.md, "What measuring
        // costs"), field for field.
        "measurer": analysis::floor::floor(&pass.info),
        "sweeps": analysis::knee::sweeps(&steps).iter().map(sweep_json).collect::<Vec<_>>(),
    });
    Ok(RunSummary { markdown: report::summary::render_markdown(&pass, &steps), json, next: next_step(&pass.runs, dir) })
}

/// A sweep's knee and largest level meeting the objectives (docs/metrics.md, "The knee"),
/// each named as the report names it (`2 streams`, `4 req/s`), `null` where there is none.
fn sweep_json(sweep: &analysis::knee::Sweep) -> serde_json::Value {
    serde_json::json!({
        "cell": sweep.cell,
        "workload": sweep.workload.as_str(),
        "target_prompt_tokens": sweep.target_prompt_tokens,
        "levels": sweep.levels.iter().enumerate().map(|(i, _)| sweep.level_name(i)).collect::<Vec<_>>(),
        "knee": sweep.knee.map(|i| sweep.level_name(i)),
        "largest_meeting_slo": sweep.largest_meeting_slo.map(|i| sweep.level_name(i)),
    })
}

/// A step's serving figures (docs/metrics.md, "Serving under concurrency"), latencies in ms.
fn serving_json(s: &analysis::serving::Serving) -> serde_json::Value {
    let percentiles = |p: Option<&analysis::serving::Percentiles>| {
        p.map(|p| serde_json::json!({"p50": p.p50, "p90": p.p90, "p99": p.p99, "n": p.n}))
    };
    let mut json = serde_json::json!({
        "concurrency": s.concurrency,
        "output_tps": s.output_tps,
        "requests_per_s": s.requests_per_s,
        "ttft_ms": percentiles(s.ttft_ms.as_ref()),
        "itl_ms": percentiles(s.itl_ms.as_ref()),
        "tpot_ms": percentiles(s.tpot_ms.as_ref()),
        "e2e_ms": percentiles(s.e2e_ms.as_ref()),
    });
    // Added where they apply, so that a closed-loop pass without objectives reads as before.
    if let Some(rate) = &s.rate {
        json["ttft_scheduled_ms"] = percentiles(s.ttft_scheduled_ms.as_ref()).into();
        json["e2e_scheduled_ms"] = percentiles(s.e2e_scheduled_ms.as_ref()).into();
        json["schedule_delay_ms"] = percentiles(s.schedule_delay_ms.as_ref()).into();
        json["request_rate"] = serde_json::json!({
            "requested": rate.requested, "offered": rate.offered, "achieved": rate.achieved, "held": !rate.short(),
        });
    }
    if let Some(g) = &s.goodput {
        json["goodput"] = serde_json::json!({
            "slo": g.slo, "met": g.n_met, "runs": g.n, "attainment": g.attainment,
            "requests_per_s": g.requests_per_s, "output_tps": g.output_tps,
        });
    }
    if let Some((median, max)) = s.tokens_per_event {
        json["tokens_per_event"] = serde_json::json!({"median": median, "max": max});
    }
    json
}

/// A text format for a diff, a leaderboard or a quality table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Html,
    Csv,
    Json,
}

impl Format {
    pub fn parse(name: &str) -> Option<Format> {
        match name {
            "md" | "markdown" => Some(Format::Markdown),
            "html" => Some(Format::Html),
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            _ => None,
        }
    }

    /// The format a file's extension names.
    pub fn of_file(path: &Path) -> Option<Format> {
        path.extension().and_then(|e| e.to_str()).and_then(Format::parse)
    }
}

/// What changed from the pass in `a` to the pass in `b`, and the engine versions of each side.
pub struct DiffOf {
    pub diff: analysis::diff::Diff,
    pub sides: report::diff::Sides,
}

/// What changed from the pass in `a` to the pass in `b`.
pub fn diff(a: &Path, b: &Path, correction: analysis::diff::Correction) -> anyhow::Result<DiffOf> {
    let (a, b) = (load(a)?, load(b)?);
    let (sa, sb) = (analysis::cells::summarize(&a)?, analysis::cells::summarize(&b)?);
    Ok(DiffOf { diff: analysis::diff::diff_with(&a, &sa, &b, &sb, correction), sides: report::diff::Sides::of(&a, &b) })
}

/// A diff as `format`: Markdown or HTML (opening with its summary and both sides' engine
/// versions), or CSV (docs/leaderboard.md's columns).
pub fn render_diff(d: &DiffOf, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Markdown => report::diff::to_markdown_with(&d.diff, &d.sides)?,
        Format::Html => report::diff::to_html_with(&d.diff, &d.sides)?,
        Format::Csv => report::diff::to_csv(&d.diff),
        Format::Json => anyhow::bail!("a diff is Markdown, HTML or CSV"),
    })
}

/// One line that says what a diff found: `2 slower, 1 faster, 9 within noise, 1 incomparable`.
pub fn diff_summary(d: &DiffOf) -> String {
    report::diff::summary(&d.diff)
}

/// One leaderboard over the passes in `dirs`: CSV (docs/leaderboard.md's columns), Markdown
/// (the same columns as a table) or JSON (one object per row, keyed by column).
pub fn leaderboard(dirs: &[PathBuf], format: Format) -> anyhow::Result<String> {
    Ok(leaderboard_with(dirs, format, leaderboard::Options::default())?.0)
}

/// [`leaderboard`] with `options` (`--verify`), and what it read. The CSV of many passes is
/// better streamed: [`leaderboard::write_csv`].
pub fn leaderboard_with(dirs: &[PathBuf], format: Format, options: leaderboard::Options) -> anyhow::Result<(String, leaderboard::Tally)> {
    anyhow::ensure!(format != Format::Html, "a leaderboard is CSV, Markdown or JSON");
    if format == Format::Csv {
        let mut bytes = Vec::new();
        let tally = leaderboard::write_csv(dirs, options, &mut bytes)?;
        return Ok((String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8"), tally));
    }
    let (rows, tally) = leaderboard::rows(dirs, options)?;
    let text = match format {
        Format::Json => {
            // Figures as numbers (an empty band as null), everything else as text.
            const NUMBERS: [&str; 6] = ["target_prompt_tokens", "median", "band_low", "band_high", "n", "n_short"];
            let objects: Vec<serde_json::Map<String, serde_json::Value>> = rows
                .into_iter()
                .map(|row| {
                    let fields = analysis::leaderboard::COLUMNS.iter().zip(row).map(|(column, value)| {
                        let value = match value.parse::<f64>() {
                            _ if !NUMBERS.contains(column) => serde_json::Value::String(value),
                            Ok(number) => serde_json::json!(number),
                            Err(_) => serde_json::Value::Null,
                        };
                        ((*column).to_owned(), value)
                    });
                    fields.collect()
                })
                .collect();
            serde_json::to_string_pretty(&objects)? + "\n"
        }
        Format::Markdown => leaderboard_markdown(analysis::leaderboard::rankings(rows)),
        Format::Csv | Format::Html => unreachable!("streamed or refused above"),
    };
    Ok((text, tally))
}

/// A table cell's text with what Markdown would read as markup escaped.
/// The leaderboard as a reader wants it: a ranking per figure and way of measuring, its key
/// under its title, best first, then the rows that may not be ranked (`–`, their flags say why).
fn leaderboard_markdown(rankings: Vec<analysis::leaderboard::Ranking>) -> String {
    use analysis::leaderboard::COLUMNS;
    let at = |name: &str| COLUMNS.iter().position(|c| *c == name).expect("a column");
    let mut text = String::from("# Leaderboard\n\nEach table ranks rows measured alike (the key under its title); rows a flag keeps out of the ranking are listed last with `–`. docs/leaderboard.md defines every column.\n");
    for ranking in rankings {
        let key = |name: &str| ranking.key.iter().find(|(c, _)| *c == name).map_or(String::new(), |(_, v)| v.clone());
        text.push_str(&format!(
            "\n## {} ({}) · {} · {}\n\n",
            markdown_cell(&key("metric")),
            markdown_cell(&key("unit")),
            markdown_cell(&key("workload")),
            markdown_cell(&key("model"))
        ));
        let rest: Vec<String> = ranking
            .key
            .iter()
            .filter(|(c, _)| !["metric", "unit", "workload", "model"].contains(c))
            .map(|(c, v)| format!("{c} {}", if v.is_empty() { "–".to_owned() } else { markdown_cell(v) }))
            .collect();
        text.push_str(&rest.join(" · "));
        text.push_str("\n\n| # | engine | version | median | band | n | flags | pass |\n|---:|---|---|---:|---|---:|---|---|\n");
        // Equal figures share a place (1, 2, 2, 4): the order among them says nothing.
        let median = |r: &analysis::leaderboard::Row| r[at("median")].clone();
        let ranked = ranking.ranked.iter().enumerate().map(|(i, r)| {
            let first = ranking.ranked.iter().position(|other| median(other) == median(r)).unwrap_or(i);
            ((first + 1).to_string(), r)
        });
        for (place, row) in ranked.chain(ranking.unranked.iter().map(|r| ("–".to_owned(), r))) {
            let band = match (row[at("band_low")].as_str(), row[at("band_high")].as_str()) {
                ("", "") => String::new(),
                (low, high) => format!("{low}–{high}"),
            };
            text.push_str(&format!(
                "| {place} | {} | {} | {} | {band} | {} | {} | {} |\n",
                markdown_cell(&row[at("engine")]),
                markdown_cell(&row[at("engine_version")]),
                markdown_cell(&row[at("median")]),
                markdown_cell(&row[at("n")]),
                markdown_cell(&row[at("flags")]),
                markdown_cell(&row[at("pass_id")]),
            ));
        }
    }
    text
}

fn markdown_cell(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '|' | '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '!') {
            out.push('\\');
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

/// Every cell with quality runs in `passes` against the reference cell (`PASS[:CELL]`), as
/// `format` (Markdown, HTML or CSV with docs/quality.md's columns).
pub fn quality(reference_arg: &str, passes: &[PathBuf], format: Format) -> anyhow::Result<String> {
    let (dir, cell) = reference(reference_arg);
    let ref_pass = load(&dir).with_context(|| format!("reading the quality reference {}", dir.display()))?;
    let ref_cell = analysis::quality::reference_cell(&ref_pass, cell.as_deref())?;
    let passes = passes.iter().map(|dir| load(dir)).collect::<anyhow::Result<Vec<_>>>()?;
    let rows = analysis::quality::compare(&ref_pass, ref_cell, &passes);
    anyhow::ensure!(!rows.is_empty(), "none of the passes has measured quality runs (run them with --workload quality)");
    Ok(match format {
        Format::Markdown => report::quality::to_markdown(&rows)?,
        Format::Html => report::quality::to_html(&rows)?,
        Format::Csv => report::quality::to_csv(&rows),
        Format::Json => anyhow::bail!("a quality table is Markdown, HTML or CSV"),
    })
}

/// `--stop-at-saturation`'s check of the pass so far: the sweeps whose last two levels were
/// both past their knee (`analysis::knee::Sweep::saturated_twice`).
pub fn saturation() -> harness::plan::run::Saturation {
    harness::plan::run::Saturation(std::sync::Arc::new(|dir: &Path| {
        let pass = load(dir)?;
        let steps = analysis::cells::summarize(&pass)?;
        Ok(analysis::knee::sweeps(&steps).into_iter().filter(|s| s.saturated_twice()).map(|s| (s.cell, s.workload, s.target_prompt_tokens)).collect())
    }))
}

/// The reference engine the self-check holds the client to (`harness::self_check`): `benchpass
/// sim` with its `timings`, a 10 ms base latency and 200 tok/s one token an event, on the
/// kernel's precise timer, served on loopback from a thread and runtime of its own (the
/// client's workers are not its) until the process ends.
pub fn start_self_check_engine() -> anyhow::Result<harness::self_check::SelfCheckServer> {
    let profile = sim::SimProfile {
        base_latency_ms: 10.0,
        decode_tps: 200.0,
        tokens_per_event: 1,
        timings: true,
        precise_timer: true,
        ..sim::SimProfile::default()
    };
    let model = profile.model.clone();
    let (bound, address) = std::sync::mpsc::channel();
    std::thread::Builder::new().name("self-check engine".to_owned()).spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(e) => return drop(bound.send(Err(anyhow::Error::from(e)))),
        };
        runtime.block_on(async move {
            match sim::bind(([127, 0, 0, 1], 0).into()).await.and_then(|l| Ok((l.local_addr()?, l))) {
                Ok((addr, listener)) => {
                    let _ = bound.send(Ok(addr));
                    let _ = sim::serve(profile, listener).await;
                }
                Err(e) => drop(bound.send(Err(e))),
            }
        });
    })?;
    let addr = address.recv().context("the self-check's reference engine did not start")??;
    Ok(harness::self_check::SelfCheckServer { base_url: format!("http://{addr}"), model })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_takes_an_optional_cell() {
        assert_eq!(reference("r:llama.cpp/f16"), (PathBuf::from("r"), Some("llama.cpp/f16".to_owned())));
        assert_eq!(reference("r"), (PathBuf::from("r"), None));
        assert_eq!(reference("r:"), (PathBuf::from("r:"), None));
    }

    #[test]
    fn markdown_cells_escape_what_would_break_a_table() {
        assert_eq!(markdown_cell("a|b"), "a\\|b");
        assert_eq!(markdown_cell("<img onerror>"), "\\<img onerror\\>");
        assert_eq!(markdown_cell("x\ny"), "x y");
    }

    #[test]
    fn formats_come_from_extensions() {
        assert_eq!(Format::of_file(Path::new("d.md")), Some(Format::Markdown));
        assert_eq!(Format::of_file(Path::new("d.csv")), Some(Format::Csv));
        assert_eq!(Format::of_file(Path::new("d.json")), Some(Format::Json));
        assert_eq!(Format::of_file(Path::new("d.txt")), None);
    }

    #[test]
    fn a_pass_of_quality_runs_alone_is_read_against_a_reference_next() {
        let run = |workload| harness::pass::RunRecord::unmeasured("c0", workload, 0, 0, false, 8);
        let mut runs = vec![run(Workload::Quality), run(Workload::Quality)];
        assert!(next_step(&runs, Path::new("d")).starts_with("next: benchpass quality --reference REFERENCE_PASS d "));
        runs.push(run(Workload::Sustained));
        assert!(next_step(&runs, Path::new("d")).starts_with("next: benchpass report d "));
    }
}

