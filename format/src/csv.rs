//! Runs in and out as CSV, with the exact columns that other tools depend on. This is how
//! results from other harnesses and older passes come in; export → import → export gives the
//! same bytes.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::format::*;
use crate::metrics;
use super::store::{read_pass_info, write_imported, Damage, Pass, PassError, RunReader, TornTail};

/// The columns, in this order. Changing them breaks every consumer: don't. Columns that came
/// later are added at the end ([`LATER_COLUMNS`]), so a reader by position finds the others
/// where they were.
pub const COLUMNS: [&str; 31] = [
    "pass_id",
    "machine",
    "engine",
    "engine_version",
    "engine_sha256",
    "model",
    "build_sha256",
    "lane",
    "workload",
    "target_prompt_tokens",
    "prompt_tokens",
    "max_tokens",
    "completion_tokens",
    "ttft_ms",
    "decode_ms",
    "finish_reason",
    "warmup",
    "rep",
    "error",
    "token_count_source",
    "concurrency",
    "attempt",
    "api",
    "temperature",
    "request_rate",
    "past_eos",
    "session",
    "turn",
    "prompt_id",
    "cached_prompt_tokens",
    "prompt_set",
];

/// The columns a file written before them may lack, and what a run without them imports as:
/// its counts from usage (where it has counts), one stream at a time, a first attempt, and
/// nothing known of how it was requested (a diff then names no difference in API,
/// temperature, arrivals or way past EOS, and the leaderboard leaves those columns empty).
pub const LATER_COLUMNS: [(&str, &str); 12] = [
    ("token_count_source", "usage"),
    ("concurrency", "1"),
    ("attempt", "0"),
    ("api", "unknown"),
    ("temperature", "unknown"),
    ("request_rate", "unknown"),
    ("past_eos", "unknown"),
    ("session", "none"),
    ("turn", "none"),
    ("prompt_id", "none"),
    ("cached_prompt_tokens", "none"),
    ("prompt_set", "unknown"),
];

/// Later columns whose absence needs no warning: a file from before them has nothing they
/// would say (no superseded runs, no agent sessions: benchpass exported neither).
const SILENT_WHEN_MISSING: [&str; 5] = ["attempt", "session", "turn", "prompt_id", "cached_prompt_tokens"];

/// The [`LATER_COLUMNS`] the header of `csv_path` lacks, for a warning that says what their
/// runs were imported as (a file from an older benchpass, or another tool's).
pub fn missing_later_columns(csv_path: &Path) -> Vec<(&'static str, &'static str)> {
    let Ok(mut reader) = csv::ReaderBuilder::new().trim(csv::Trim::All).from_path(csv_path) else { return Vec::new() };
    let Ok(headers) = reader.headers() else { return Vec::new() };
    LATER_COLUMNS.into_iter().filter(|(name, _)| !SILENT_WHEN_MISSING.contains(name) && !headers.iter().any(|h| h == *name)).collect()
}

/// Writes every run of `pass`, warmups and failures included, in the order they were recorded.
/// Every value is written as it is: this file is for tools, and export → import → export gives
/// the same bytes. For a file a person opens in a spreadsheet, use
/// [`export_runs_for_spreadsheet`]; for a pass on disk, [`export_pass`] holds one run at a time.
pub fn export_runs(pass: &Pass, out: impl Write) -> anyhow::Result<()> {
    let mut rows = Rows::new(out, Audience::Tools)?;
    for run in &pass.runs {
        rows.write(&pass.info, run)?;
    }
    rows.finish()
}

/// As [`export_runs`], with every text cell that came from an engine, a user or a file passed
/// through [`spreadsheet_cell`] (`benchpass export --for-spreadsheet`): a spreadsheet does not
/// run an engine's version string as a formula. Numbers are written as they are. What this
/// writes does not round-trip: importing it keeps the leading `'`.
pub fn export_runs_for_spreadsheet(pass: &Pass, out: impl Write) -> anyhow::Result<()> {
    let mut rows = Rows::new(out, Audience::Spreadsheet)?;
    for run in &pass.runs {
        rows.write(&pass.info, run)?;
    }
    rows.finish()
}

/// Who a runs CSV is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Every value as it is ([`export_runs`]).
    Tools,
    /// Text cells through [`spreadsheet_cell`] ([`export_runs_for_spreadsheet`]).
    Spreadsheet,
}

/// What [`export_pass`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    pub runs: usize,
    /// The last line of runs.jsonl was cut short (the writer stopped mid-run): the runs before
    /// it were exported.
    pub torn_tail: Option<TornTail>,
    /// Lines of runs.jsonl that could not be read: left out, every other run exported.
    pub damage: Damage,
}

/// The pass in `dir` as a runs CSV, the same bytes [`export_runs`] (or, for a spreadsheet,
/// [`export_runs_for_spreadsheet`]) writes of it read whole, but read and written one run at
/// a time: memory for `pass.json` and one run, whatever the size of the pass. A line that is
/// not a run, or a run that no measurement wrote, is left out and named in
/// [`Exported::damage`]; a failed read stops it with its file, after the rows before it were
/// written, and the caller decides what becomes of them (`benchpass export` removes a file it
/// was writing).
pub fn export_pass(dir: &Path, out: impl Write, audience: Audience) -> anyhow::Result<Exported> {
    let info = read_pass_info(dir)?;
    let mut reader = RunReader::open(dir)?;
    let mut rows = Rows::new(out, audience)?;
    let mut runs = 0;
    for run in reader.by_ref() {
        rows.write(&info, &run?)?;
        runs += 1;
    }
    rows.finish()?;
    Ok(Exported { runs, torn_tail: reader.torn_tail().cloned(), damage: reader.damage().clone() })
}

/// The characters that make a spreadsheet read a cell as a formula (or, for tab and carriage
/// return, shift it into one), as OWASP's CSV-injection guidance lists them.
pub const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// A text cell a spreadsheet will show and not evaluate: a value starting with one of
/// [`FORMULA_STARTS`] gets a single quote in front (OWASP's advice); any other value is
/// returned as it is. For text only: a number such as `-2.5` must not go through it.
pub fn spreadsheet_cell(value: &str) -> std::borrow::Cow<'_, str> {
    if value.starts_with(FORMULA_STARTS) {
        std::borrow::Cow::Owned(format!("'{value}"))
    } else {
        std::borrow::Cow::Borrowed(value)
    }
}

/// The CSV being written: the header first, then one row per run.
struct Rows<W: Write> {
    writer: csv::Writer<W>,
    audience: Audience,
}

impl<W: Write> Rows<W> {
    fn new(out: W, audience: Audience) -> anyhow::Result<Rows<W>> {
        let mut writer = csv::Writer::from_writer(out);
        writer.write_record(COLUMNS)?;
        Ok(Rows { writer, audience })
    }

    fn write(&mut self, info: &PassInfo, run: &RunRecord) -> anyhow::Result<()> {
        let text = |value: String| match self.audience {
            Audience::Spreadsheet => spreadsheet_cell(&value).into_owned(),
            Audience::Tools => value,
        };
        let cell = info
            .cells
            .iter()
            .find(|c| c.id == run.cell)
            .ok_or_else(|| anyhow::anyhow!("run names cell `{}` that pass.json does not list", run.cell))?;
        let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let request = info.step_request(&run.cell, run.workload, run.target_prompt_tokens, run.concurrency);
        let ms = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
        self.writer.write_record([
            text(info.pass_id.clone()),
            text(info.machine.name.clone()),
            text(cell.engine.name.clone()),
            text(cell.engine.version.clone()),
            text(cell.engine.sha256.clone().unwrap_or_default()),
            text(cell.model.clone()),
            text(cell.build.sha256.clone().unwrap_or_default()),
            text(cell.lane.clone()),
            run.workload.as_str().to_owned(),
            run.target_prompt_tokens.to_string(),
            opt(run.prompt_tokens),
            run.max_tokens.to_string(),
            opt(run.completion_tokens),
            ms(run.ttft_ms),
            ms(run.decode_ms),
            text(run.finish_reason.clone().unwrap_or_default()),
            run.warmup.to_string(),
            run.rep.to_string(),
            text(run.error.as_ref().map(|e| e.class.clone()).unwrap_or_default()),
            run.token_count_source.map(|s| s.as_str().to_owned()).unwrap_or_default(),
            run.concurrency.to_string(),
            run.attempt.to_string(),
            request.api,
            key_number(request.temperature),
            key_number(request.request_rate),
            request.past_eos,
            run.session.map(|s| s.to_string()).unwrap_or_default(),
            run.turn.map(|t| t.to_string()).unwrap_or_default(),
            text(run.prompt_id.clone().unwrap_or_default()),
            opt(run.cached_prompt_tokens),
            request.prompt_set,
        ])?;
        Ok(())
    }

    fn finish(mut self) -> anyhow::Result<()> {
        self.writer.flush()?;
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    // `cause`, not `source`: the message carries it, and a chain would print it twice.
    #[error("{path}: {cause}")]
    Read { path: PathBuf, cause: csv::Error },
    #[error("{path}:1: missing column `{column}`; the header must name: {}", COLUMNS.join(", "))]
    MissingColumn { path: PathBuf, column: &'static str },
    #[error("{path}:{line}: column `{column}`: expected {expected}, found `{found}`")]
    BadValue { path: PathBuf, line: u64, column: &'static str, expected: &'static str, found: String },
    #[error("{path}:{line}: pass `{pass_id}` has machine `{found}` here but `{first}` earlier; a pass runs on one machine")]
    MixedMachines { path: PathBuf, line: u64, pass_id: String, first: String, found: String },
    #[error("{path}: {message}")]
    BadPassId { path: PathBuf, message: String },
    #[error(transparent)]
    MixedRequest(Box<MixedRequest>),
    #[error("{path}: no runs in the file")]
    Empty { path: PathBuf },
    #[error(transparent)]
    Pass(#[from] PassError),
}

/// Two rows of one step that say it was requested two ways (boxed: the error stays small).
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: the {step} step of `{engine}` has {column} `{found}` here but `{first}` earlier; a step's runs are requested one way")]
pub struct MixedRequest {
    pub path: PathBuf,
    pub line: u64,
    pub step: String,
    pub engine: String,
    pub column: &'static str,
    pub first: String,
    pub found: String,
}

struct PassBuild {
    pass_id: String,
    machine: String,
    cells: Vec<CellInfo>,
    runs: Vec<RunRecord>,
}

/// Reads `csv_path` and writes one pass folder per `pass_id` under `out_dir`; returns them in
/// the order the file first names them.
pub fn import_runs(csv_path: &Path, out_dir: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let path = csv_path.to_owned();
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_path(csv_path)
        .map_err(|cause| ImportError::Read { path: path.clone(), cause })?;
    let headers = reader.headers().map_err(|cause| ImportError::Read { path: path.clone(), cause })?.clone();
    let index: HashMap<&str, usize> = headers.iter().enumerate().map(|(i, h)| (h, i)).collect();
    let mut columns = HashMap::new();
    for column in COLUMNS {
        match index.get(column) {
            Some(&i) => {
                columns.insert(column, i);
            }
            None if LATER_COLUMNS.iter().any(|(later, _)| *later == column) => {}
            None => return Err(ImportError::MissingColumn { path, column }),
        }
    }

    let mut passes: Vec<PassBuild> = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|cause| ImportError::Read { path: path.clone(), cause })?;
        let line = record.position().map_or(0, |p| p.line());
        let row = Row { path: &path, line, record: &record, columns: &columns };
        let pass_id = row.text("pass_id")?;
        if pass_id.is_empty() {
            return Err(row.bad("pass_id", "a pass id"));
        }
        let machine = row.text("machine")?;
        let at = match passes.iter().position(|p| p.pass_id == pass_id) {
            Some(at) => at,
            None => {
                passes.push(PassBuild { pass_id: pass_id.clone(), machine: machine.clone(), cells: vec![], runs: vec![] });
                passes.len() - 1
            }
        };
        let build = &mut passes[at];
        if build.machine != machine {
            return Err(ImportError::MixedMachines {
                path,
                line,
                pass_id,
                first: build.machine.clone(),
                found: machine,
            });
        }
        let engine = EngineInfo {
            name: row.text("engine")?,
            version: row.text("engine_version")?,
            version_source: "imported".to_owned(),
            sha256: row.sha256("engine_sha256")?,
            ..EngineInfo::default()
        };
        let cell = CellInfo {
            lane: row.text("lane")?,
            build: BuildInfo { sha256: row.sha256("build_sha256")?, files: vec![] },
            ..CellInfo::new(String::new(), engine, row.text("model")?)
        };
        let cell_id = match build.cells.iter().find(|c| same_cell(c, &cell)) {
            Some(existing) => existing.id.clone(),
            None => {
                let id = format!("c{}", build.cells.len());
                build.cells.push(CellInfo { id: id.clone(), ..cell });
                id
            }
        };
        let run = row.run(cell_id)?;
        let request = row.request()?;
        if request != StepRequest::default() {
            let cell = build.cells.iter_mut().find(|c| c.id == run.cell).expect("the cell was found or added above");
            record_request(cell, &run, request).map_err(|(column, first, found)| {
                ImportError::MixedRequest(Box::new(MixedRequest {
                    path: path.clone(),
                    line,
                    step: step_name(&run),
                    engine: cell_label(cell),
                    column,
                    first,
                    found,
                }))
            })?;
        }
        build.runs.push(run);
    }
    if passes.is_empty() {
        return Err(ImportError::Empty { path });
    }

    // Check every folder before writing any, so that a failed import leaves nothing behind.
    for build in &passes {
        crate::pass_id::check_pass_id(&build.pass_id).map_err(|e| ImportError::BadPassId {
            path: path.clone(),
            message: format!("{e:#}"),
        })?;
        let dir = out_dir.join(&build.pass_id);
        if dir.join(super::store::PASS_FILE).exists() || dir.join(super::store::RUNS_FILE).exists() {
            return Err(PassError::AlreadyExists { path: dir }.into());
        }
    }
    let file_name = csv_path.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut written = Vec::new();
    for build in passes {
        let dir = out_dir.join(&build.pass_id);
        write_imported(&dir, build.pass_id, build.machine, build.cells, &build.runs, file_name.clone())?;
        written.push(dir);
    }
    Ok(written)
}

/// Keeps how `run`'s step was requested on its cell; the runs of one step must agree, else
/// the column that differs, with the value seen first and the one found now.
fn record_request(cell: &mut CellInfo, run: &RunRecord, request: StepRequest) -> Result<(), (&'static str, String, String)> {
    let place = (run.workload, run.target_prompt_tokens, run.concurrency);
    let Some(known) = cell.imported_steps.iter().find(|s| (s.workload, s.target_prompt_tokens, s.concurrency) == place) else {
        cell.imported_steps.push(ImportedStep { workload: run.workload, target_prompt_tokens: run.target_prompt_tokens, concurrency: run.concurrency, request });
        return Ok(());
    };
    let fields = [
        ("api", known.request.api.clone(), request.api.clone()),
        ("temperature", key_number(known.request.temperature), key_number(request.temperature)),
        ("request_rate", key_number(known.request.request_rate), key_number(request.request_rate)),
        ("past_eos", known.request.past_eos.clone(), request.past_eos.clone()),
        ("prompt_set", known.request.prompt_set.clone(), request.prompt_set.clone()),
    ];
    match fields.into_iter().find(|(_, first, found)| first != found) {
        Some(mismatch) => Err(mismatch),
        None => Ok(()),
    }
}

fn step_name(run: &RunRecord) -> String {
    match run.workload {
        Workload::Sustained => format!("sustained × {} streams", run.concurrency),
        w => format!("{} {} × {} streams", w.as_str(), run.target_prompt_tokens, run.concurrency),
    }
}

fn cell_label(cell: &CellInfo) -> String {
    format!("{} {} · {}", cell.engine.name, cell.engine.version, cell.model).replace("  ", " ")
}

/// Exactly 64 characters of `0-9a-f`: a SHA-256 written as benchpass writes one.
pub fn is_sha256(value: &str) -> bool {
    value.len() == 64 && value.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn same_cell(a: &CellInfo, b: &CellInfo) -> bool {
    (&a.engine.name, &a.engine.version, &a.engine.sha256, &a.model, &a.build.sha256, &a.lane)
        == (&b.engine.name, &b.engine.version, &b.engine.sha256, &b.model, &b.build.sha256, &b.lane)
}

struct Row<'a> {
    path: &'a Path,
    line: u64,
    record: &'a csv::StringRecord,
    columns: &'a HashMap<&'static str, usize>,
}

impl Row<'_> {
    fn raw(&self, column: &'static str) -> Option<&str> {
        self.columns.get(column).map(|&i| self.record.get(i).unwrap_or(""))
    }

    fn bad(&self, column: &'static str, expected: &'static str) -> ImportError {
        ImportError::BadValue {
            path: self.path.to_owned(),
            line: self.line,
            column,
            expected,
            found: self.raw(column).unwrap_or("").to_owned(),
        }
    }

    fn text(&self, column: &'static str) -> Result<String, ImportError> {
        Ok(self.raw(column).unwrap_or("").to_owned())
    }

    fn optional_text(&self, column: &'static str) -> Result<Option<String>, ImportError> {
        Ok(self.raw(column).filter(|s| !s.is_empty()).map(str::to_owned))
    }

    /// A SHA-256 as benchpass writes it: exactly 64 lowercase hex characters, or empty. Anything
    /// else is refused, not carried into a report (where a hash is shown as it is).
    fn sha256(&self, column: &'static str) -> Result<Option<String>, ImportError> {
        match self.optional_text(column)? {
            Some(hash) if !is_sha256(&hash) => Err(self.bad(column, "64 hex characters (a SHA-256)")),
            hash => Ok(hash),
        }
    }

    fn parsed<T: std::str::FromStr>(&self, column: &'static str, expected: &'static str) -> Result<Option<T>, ImportError> {
        match self.raw(column).filter(|s| !s.is_empty()) {
            None => Ok(None),
            Some(s) => s.parse().map(Some).map_err(|_| self.bad(column, expected)),
        }
    }

    fn required<T: std::str::FromStr>(&self, column: &'static str, expected: &'static str) -> Result<T, ImportError> {
        self.parsed(column, expected)?.ok_or_else(|| self.bad(column, expected))
    }

    /// Milliseconds: finite, 0 or more, and at most [`metrics::MAX_MS`] (30 days).
    fn millis(&self, column: &'static str) -> Result<Option<f64>, ImportError> {
        const EXPECTED: &str = "milliseconds as a number from 0 to 2592000000 (30 days), e.g. 123.456, or empty";
        match self.parsed::<f64>(column, EXPECTED)? {
            Some(v) if !(v.is_finite() && (0.0..=metrics::MAX_MS).contains(&v)) => Err(self.bad(column, EXPECTED)),
            v => Ok(v),
        }
    }

    /// A token count: a whole number up to [`metrics::MAX_COUNT`] (2^32), or empty.
    fn count(&self, column: &'static str) -> Result<Option<u64>, ImportError> {
        const EXPECTED: &str = "a whole number of tokens up to 4294967296, or empty";
        match self.parsed::<u64>(column, EXPECTED)? {
            Some(n) if n > metrics::MAX_COUNT => Err(self.bad(column, EXPECTED)),
            n => Ok(n),
        }
    }

    /// How the row's step was requested; all empty in a file from before these columns.
    fn request(&self) -> Result<StepRequest, ImportError> {
        let api = self.text("api")?;
        if !matches!(api.as_str(), "" | "chat" | "completions") {
            return Err(self.bad("api", "chat or completions, or empty"));
        }
        const TEMPERATURE: &str = "a temperature, a number from 0 to 100, or empty";
        let temperature = match self.parsed::<f64>("temperature", TEMPERATURE)? {
            Some(t) if !(t.is_finite() && (0.0..=100.0).contains(&t)) => return Err(self.bad("temperature", TEMPERATURE)),
            t => t,
        };
        const RATE: &str = "requests a second, a number above 0 and up to 1000000, or empty for streams kept busy";
        let request_rate = match self.parsed::<f64>("request_rate", RATE)? {
            Some(r) if !(r.is_finite() && r > 0.0 && r <= 1e6) => return Err(self.bad("request_rate", RATE)),
            r => r,
        };
        let past_eos = self.text("past_eos")?;
        if !past_eos.is_empty() && engines::presets::IgnoreEos::parse(&past_eos).is_none() {
            return Err(self.bad("past_eos", "field, logit-bias or unsupported, or empty when EOS was not ignored"));
        }
        let prompt_set = self.optional_text("prompt_set")?.unwrap_or_default();
        if !prompt_set.is_empty() && !is_sha256(&prompt_set) {
            return Err(self.bad("prompt_set", "64 hex characters (the SHA-256 of the shipped prompts), or empty"));
        }
        Ok(StepRequest { api, temperature, past_eos, request_rate, prompt_set, slo: String::new() })
    }

    fn run(&self, cell: String) -> Result<RunRecord, ImportError> {
        let workload = Workload::parse(self.raw("workload").unwrap_or(""))
            .ok_or_else(|| self.bad("workload", "one of sustained, prompt-matrix, pp-tg"))?;
        let warmup = match self.raw("warmup").unwrap_or("") {
            "true" | "1" => true,
            "false" | "0" | "" => false,
            _ => return Err(self.bad("warmup", "true or false")),
        };
        let completion_tokens = self.count("completion_tokens")?;
        let token_count_source = match self.raw("token_count_source") {
            // The column is optional: files from before it existed counted from usage (where
            // they counted at all: a failed run may have no counts).
            None => completion_tokens.map(|_| TokenCountSource::Usage),
            Some("") => None,
            Some(s) => Some(
                TokenCountSource::parse(s)
                    .ok_or_else(|| self.bad("token_count_source", "one of usage, tokenizer, estimate"))?,
            ),
        };
        let target = self.required("target_prompt_tokens", "a whole number of tokens (0 for sustained)")?;
        let rep = self.required("rep", "the repetition index, a whole number")?;
        let max_tokens = self.required("max_tokens", "the token cap, a whole number")?;
        // Optional (a file from before the column): one stream at a time.
        let concurrency = match self.parsed::<u32>("concurrency", "the streams in flight at once, a whole number from 1")? {
            Some(0) => return Err(self.bad("concurrency", "the streams in flight at once, a whole number from 1")),
            n => n.unwrap_or(1),
        };
        // Optional: a superseded run (a session cut short and run again) stays superseded.
        let attempt = self.parsed::<u32>("attempt", "the attempt at the run's slot, a whole number from 0")?.unwrap_or(0);
        let ttft_ms = self.millis("ttft_ms")?;
        let decode_ms = self.millis("decode_ms")?;
        // A span exists only between two token events; under 1 µs it is not one that was
        // measured (docs/metrics.md, "Bounds").
        if decode_ms.is_some_and(|ms| ms > 0.0 && ms < metrics::MIN_DECODE_MS) {
            return Err(self.bad("decode_ms", "0, or a decode span of at least 0.001 ms (1 µs)"));
        }
        // Agent sessions: which session and turn, the trace, the tokens served from the cache.
        let session = self.parsed::<u32>("session", "the session of the step, a whole number from 0, or empty")?;
        let turn = self.parsed::<u32>("turn", "the turn of the session, a whole number from 0, or empty")?;
        let cached_prompt_tokens = self.count("cached_prompt_tokens")?;
        Ok(RunRecord {
            session,
            turn,
            prompt_id: self.optional_text("prompt_id")?,
            cached_prompt_tokens,
            prompt_tokens: self.count("prompt_tokens")?,
            completion_tokens,
            token_count_source,
            ttft_ms,
            decode_ms,
            finish_reason: self.optional_text("finish_reason")?,
            error: self.optional_text("error")?.map(|class| RunError { class, message: String::new() }),
            concurrency,
            attempt,
            ..RunRecord::unmeasured(&cell, workload, target, rep, warmup, max_tokens)
        })
    }
}
