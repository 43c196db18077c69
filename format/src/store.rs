//! Reading and writing pass folders. Runs are appended one line at a time, each written as
//! it ends and synced to disk moments later by a thread of its own (`syncer.rs`), so a crash
//! of benchpass loses at most the runs in flight; a torn last line is reported, never fatal.
//! Everything written passes through `bounded.rs` first, so the readers here take back every
//! line the writer wrote; a line they cannot read (a file damaged or written by hand) is named
//! with why, and the other runs are read ([`Damage`]).

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use super::bounded;
use super::format::{PassInfo, RunRecord, SCHEMA_VERSION};

pub const PASS_FILE: &str = "pass.json";
pub const RUNS_FILE: &str = "runs.jsonl";

#[derive(Debug, thiserror::Error)]
pub enum PassError {
    // `cause`, not `source`, here and below: the message carries it, and a chain would print
    // it twice ("(os error 2): … (os error 2)").
    #[error("{path}: {cause}")]
    Io { path: PathBuf, cause: std::io::Error },
    #[error("{path}: not a benchpass pass.json: {cause}")]
    BadPassFile { path: PathBuf, cause: serde_json::Error },
    #[error(
        "{path}: schema version {found} is newer than this benchpass reads ({SCHEMA_VERSION}); \
         upgrade benchpass"
    )]
    NewerSchema { path: PathBuf, found: u32 },
    #[error("{path} already holds a pass; choose an empty or new --out folder")]
    AlreadyExists { path: PathBuf },
    #[error(
        "{path}: could not write run {n}: {cause}; the {before} runs before it are intact{hint}",
        n = before + 1,
        hint = disk_full_hint(cause)
    )]
    // Not `source`: the message already carries it, and a chain would print it twice.
    Append { path: PathBuf, before: usize, cause: std::io::Error },
    #[error(
        "{path}: could not sync the runs written to disk: {cause}; they may not survive a crash of the machine{hint}",
        hint = disk_full_hint(cause)
    )]
    Sync { path: PathBuf, cause: std::io::Error },
    #[error(
        "{path}: could not rewrite it: {cause}; the previous one is intact{hint}",
        hint = disk_full_hint(cause)
    )]
    Rewrite { path: PathBuf, cause: std::io::Error },
}

/// What to do when a write failed for want of space (no space left on the device, or over a
/// quota or the file-size limit); nothing for other errors.
fn disk_full_hint(e: &std::io::Error) -> &'static str {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded | ErrorKind::FileTooLarge => {
            " (the disk is full: free space, then resume the pass or measure again)"
        }
        _ => "",
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PassError + '_ {
    move |cause| PassError::Io { path: path.to_owned(), cause }
}

/// A pass being written.
pub struct PassWriter {
    dir: PathBuf,
    runs: File,
    n_runs: usize,
    syncer: super::syncer::Syncer,
}

impl PassWriter {
    /// Creates `dir` (and parents), writes `pass.json` and an empty `runs.jsonl`. Refuses a
    /// folder that already holds a pass, so that nothing is overwritten.
    pub fn create(dir: &Path, info: &PassInfo) -> Result<PassWriter, PassError> {
        if dir.join(PASS_FILE).exists() || dir.join(RUNS_FILE).exists() {
            return Err(PassError::AlreadyExists { path: dir.to_owned() });
        }
        fs::create_dir_all(dir).map_err(io(dir))?;
        write_pass_info(dir, info)?;
        let runs_path = dir.join(RUNS_FILE);
        let runs = OpenOptions::new().create_new(true).append(true).open(&runs_path).map_err(io(&runs_path))?;
        PassWriter::new(dir, runs, 0)
    }

    /// Opens an existing pass to append to (resuming it). A torn last line is cut off first:
    /// that run is lost either way, and appending after it would corrupt the next line. A
    /// damaged line before it ([`Damage`]) is left where it is, whole, and still named by every
    /// read: it ends with its newline, so what is appended after it starts a line of its own
    /// and nothing is lost, and the bytes stay there for whoever looks into why.
    pub fn reopen(dir: &Path) -> Result<PassWriter, PassError> {
        let pass = read_pass(dir)?;
        let runs_path = dir.join(RUNS_FILE);
        if let Some(torn) = &pass.torn_tail {
            let len = std::fs::metadata(&runs_path).map_err(io(&runs_path))?.len();
            let file = OpenOptions::new().write(true).open(&runs_path).map_err(io(&runs_path))?;
            file.set_len(len - torn.bytes as u64).map_err(io(&runs_path))?;
        }
        let mut runs = OpenOptions::new().append(true).open(&runs_path).map_err(io(&runs_path))?;
        // A whole record whose newline never made it to disk: end its line before appending.
        let text = std::fs::read(&runs_path).map_err(io(&runs_path))?;
        if text.last().is_some_and(|&b| b != b'\n') {
            runs.write_all(b"\n").map_err(io(&runs_path))?;
        }
        PassWriter::new(dir, runs, pass.runs.len())
    }

    fn new(dir: &Path, runs: File, n_runs: usize) -> Result<PassWriter, PassError> {
        let runs_path = dir.join(RUNS_FILE);
        let syncer = runs.try_clone().and_then(super::syncer::Syncer::start).map_err(io(&runs_path))?;
        Ok(PassWriter { dir: dir.to_owned(), runs, n_runs, syncer })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn n_runs(&self) -> usize {
        self.n_runs
    }

    /// Appends one run as one line, and asks for it to be synced to disk (which happens on a
    /// thread of its own: the caller may be timing other streams). A sync that failed since
    /// the last append is reported here.
    pub fn append(&mut self, run: &RunRecord) -> Result<(), PassError> {
        let path = self.dir.join(RUNS_FILE);
        if let Some(cause) = self.syncer.take_failure() {
            return Err(PassError::Sync { path, cause });
        }
        // Held to what every reader takes back (bounded.rs), and whatever a server echoed of
        // the API key stops here, on its way to the disk.
        let run = bounded::bound_run(run);
        let mut line = redacted(&*run, Layout::Compact, |text| parse_run_line(text.as_bytes()).is_ok()).into_bytes();
        line.push(b'\n');
        let before = self.runs.metadata().map(|m| m.len());
        if let Err(cause) = self.runs.write_all(&line) {
            // Take back the part of the line that did get written (a full disk takes what
            // fits), so the file still ends on a whole record.
            if let Ok(len) = before {
                let _ = self.runs.set_len(len);
            }
            return Err(PassError::Append { path, before: self.n_runs, cause });
        }
        self.syncer.request();
        self.n_runs += 1;
        Ok(())
    }

    /// Waits until every run appended so far is on disk.
    pub fn sync(&self) -> Result<(), PassError> {
        self.syncer.wait().map_err(|cause| PassError::Sync { path: self.dir.join(RUNS_FILE), cause })
    }

    /// Rewrites `pass.json` (status, finish time, CPU used) atomically, once the runs it
    /// describes are on disk: it is never ahead of them.
    pub fn update_info(&self, info: &PassInfo) -> Result<(), PassError> {
        self.sync()?;
        write_pass_info(&self.dir, info)
    }
}

/// Writes a pass made from another tool's results (or a runs CSV) into `dir`: status
/// `imported`, made by this benchpass, with no start time and no request parameters.
pub fn write_imported(
    dir: &Path,
    pass_id: String,
    machine: String,
    cells: Vec<super::format::CellInfo>,
    runs: &[RunRecord],
    imported_from: Option<String>,
) -> Result<(), PassError> {
    use super::format::{MachineInfo, PassStatus};
    let info = PassInfo {
        schema_version: SCHEMA_VERSION,
        pass_id,
        status: PassStatus::Imported,
        started_at: String::new(),
        finished_at: None,
        benchpass: super::format::benchpass_info(),
        machine: MachineInfo { name: machine, ..MachineInfo::default() },
        cells,
        request: None,
        harness_cpu_seconds: None,
        imported_from,
        keep_awake: None,
        measurer: None,
        stopped_sweeps: Vec::new(),
    };
    let mut writer = PassWriter::create(dir, &info)?;
    for run in runs {
        writer.append(run)?;
    }
    Ok(())
}

/// How a file lays its JSON out: runs.jsonl a record a line, pass.json pretty-printed.
#[derive(Clone, Copy)]
enum Layout {
    Compact,
    Pretty,
}

fn to_text<T: serde::Serialize + ?Sized>(value: &T, layout: Layout) -> String {
    match layout {
        Layout::Compact => serde_json::to_string(value),
        Layout::Pretty => serde_json::to_string_pretty(value),
    }
    .expect("records always serialize")
}

/// `value` as JSON laid out as `layout` says, with the API key redacted
/// (secrets.rs). The text is redacted as written, which leaves it as it is when no key is in
/// it; where that cut something and the result no longer `reads` (a key that also spells JSON
/// syntax, say `a":"b…`, or digits of a number), the key is cut from each string of the JSON
/// instead, which cannot break it.
fn redacted<T: serde::Serialize>(value: &T, layout: Layout, reads: impl Fn(&str) -> bool) -> String {
    let text = to_text(value, layout);
    match crate::secrets::redact(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(cut) if reads(&cut) => cut,
        std::borrow::Cow::Owned(_) => {
            let mut json = serde_json::to_value(value).expect("records always serialize");
            redact_strings(&mut json);
            to_text(&json, layout)
        }
    }
}

/// Every string and key in `value` with the API key redacted.
fn redact_strings(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(cut) = crate::secrets::redact(s) {
                *s = cut;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_strings),
        Value::Object(members) => {
            let taken = std::mem::take(members);
            for (key, mut member) in taken {
                redact_strings(&mut member);
                members.insert(crate::secrets::redact(&key).into_owned(), member);
            }
        }
        _ => {}
    }
}

/// Writes `pass.json` through a temporary file and a rename, so a reader never sees half of it.
pub fn write_pass_info(dir: &Path, info: &PassInfo) -> Result<(), PassError> {
    // create_new is O_EXCL: it neither follows a link put there since nor opens another file.
    write_pass_info_through(dir, info, |tmp| fs::OpenOptions::new().write(true).create_new(true).open(tmp))
}

/// [`write_pass_info`] with the temporary opened by `open_tmp` (a test puts a full disk behind
/// the file it creates).
fn write_pass_info_through(
    dir: &Path,
    info: &PassInfo,
    open_tmp: impl FnOnce(&Path) -> std::io::Result<File>,
) -> Result<(), PassError> {
    let path = dir.join(PASS_FILE);
    let tmp = dir.join(".pass.json.tmp");
    let info = bounded::bound_info(info);
    let mut text = redacted(&*info, Layout::Pretty, |text| serde_json::from_str::<PassInfo>(text).is_ok());
    text.push('\n');
    // A temporary left by a killed writer, or planted as a link: removed as what it is (a link
    // itself, never its target). Anything else there (a folder) makes the create below fail.
    if fs::symlink_metadata(&tmp).is_ok_and(|m| m.file_type().is_file() || m.file_type().is_symlink()) {
        let _ = fs::remove_file(&tmp);
    }
    let written = open_tmp(&tmp).and_then(|mut file| {
        file.write_all(text.as_bytes())?;
        file.sync_all()
    });
    if let Err(cause) = written {
        // What did get written would only hold on to the space a full disk lacks.
        let _ = fs::remove_file(&tmp);
        return Err(PassError::Rewrite { path, cause });
    }
    fs::rename(&tmp, &path).map_err(io(&path))?;
    // The rename reaches the disk with the folder.
    if let Ok(folder) = File::open(dir) {
        let _ = folder.sync_all();
    }
    Ok(())
}

/// A pass read back from disk.
#[derive(Debug, Clone)]
pub struct Pass {
    pub dir: PathBuf,
    pub info: PassInfo,
    pub runs: Vec<RunRecord>,
    /// Set when the last line of runs.jsonl was cut short (the writer died mid-write): that
    /// run is lost and the rest is intact.
    pub torn_tail: Option<TornTail>,
    /// The lines of runs.jsonl that could not be read, each left out and every other run read.
    pub damage: Damage,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    pub line: usize,
    pub bytes: usize,
}

/// The lines of `runs.jsonl` that could not be read: not a run record, or a run no
/// measurement wrote. A torn last line is not among them ([`TornTail`]: the crash case).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Damage {
    /// The first [`Damage::MAX_NAMED`] of them, in file order.
    pub lines: Vec<DamagedLine>,
    /// How many there are in all (more than `lines` holds once past [`Damage::MAX_NAMED`]).
    pub total: usize,
}

/// One line of `runs.jsonl` that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedLine {
    /// 1-based, as an editor counts.
    pub line: usize,
    pub bytes: usize,
    /// Why, in a sentence of at most [`Damage::MAX_WHY_CHARS`] characters (it may quote the
    /// line: print it through `progress::printable`, escape it in a report).
    pub why: String,
}

impl Damage {
    /// Lines named one by one; the rest are counted. A file of a million bad lines still
    /// reads in bounded memory, and no report lists them all.
    pub const MAX_NAMED: usize = 20;
    /// What is kept of why a line could not be read (a serde message may quote a whole
    /// unknown string).
    pub const MAX_WHY_CHARS: usize = 300;

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    fn push(&mut self, line: usize, bytes: usize, why: String) {
        self.total += 1;
        if self.lines.len() < Damage::MAX_NAMED {
            let why = match why.char_indices().nth(Damage::MAX_WHY_CHARS) {
                Some((at, _)) => format!("{}…", &why[..at]),
                None => why,
            };
            self.lines.push(DamagedLine { line, bytes, why });
        }
    }
}

/// What could not be read of runs.jsonl, one sentence each, for every output that shows a
/// damaged pass (a warning on the terminal, a report's note): each damaged line with its
/// number and why, how many more, and a torn last line. Empty for a whole pass.
pub fn damage_notes(damage: &Damage, torn_tail: Option<&TornTail>) -> Vec<String> {
    let mut notes: Vec<String> = damage
        .lines
        .iter()
        .map(|d| format!("{RUNS_FILE}:{} could not be read ({}): the run it held is left out", d.line, d.why))
        .collect();
    if damage.total > damage.lines.len() {
        notes.push(format!("{} more lines of {RUNS_FILE} could not be read and are left out", damage.total - damage.lines.len()));
    }
    if let Some(torn) = torn_tail {
        notes.push(format!("{RUNS_FILE}:{} is cut short (the writer stopped mid-run): that run is left out", torn.line));
    }
    notes
}

impl Pass {
    /// A pass held in memory only, never read from or written to a folder (tests, benchmarks).
    pub fn in_memory(info: PassInfo, runs: Vec<RunRecord>) -> Pass {
        Pass { dir: PathBuf::new(), info, runs, torn_tail: None, damage: Damage::default() }
    }

    pub fn cell(&self, id: &str) -> Option<&super::format::CellInfo> {
        self.info.cells.iter().find(|c| c.id == id)
    }

    /// Whether some line of runs.jsonl was left out: damaged, or a torn last line.
    pub fn is_damaged(&self) -> bool {
        !self.damage.is_empty() || self.torn_tail.is_some()
    }

    /// [`damage_notes`] of this pass.
    pub fn damage_notes(&self) -> Vec<String> {
        damage_notes(&self.damage, self.torn_tail.as_ref())
    }

    /// What was left out of this pass in one line (a figure's reason, a table's note):
    /// `2 lines of runs.jsonl could not be read (7, 9); 10 runs read`; `None` for a whole pass.
    pub fn damage_summary(&self) -> Option<String> {
        if !self.is_damaged() {
            return None;
        }
        let mut parts = Vec::new();
        if !self.damage.is_empty() {
            let mut numbers: Vec<String> = self.damage.lines.iter().map(|d| d.line.to_string()).collect();
            if self.damage.total > numbers.len() {
                numbers.push("…".to_owned());
            }
            let lines = if self.damage.total == 1 { "1 line".to_owned() } else { format!("{} lines", self.damage.total) };
            parts.push(format!("{lines} of {RUNS_FILE} could not be read ({})", numbers.join(", ")));
        }
        if let Some(torn) = &self.torn_tail {
            parts.push(format!("its last line ({}) is cut short", torn.line));
        }
        let runs = if self.runs.len() == 1 { "run" } else { "runs" };
        Some(format!("{}; {} {runs} read", parts.join(" and "), self.runs.len()))
    }
}

/// Reads a pass whole: `pass.json` and every run with every stream event.
pub fn read_pass(dir: &Path) -> Result<Pass, PassError> {
    read_pass_keeping(dir, |_| |_| true)
}

/// Reads a pass keeping of each run's stream events what `keep_events` says ([`Keep`]; `true`
/// is every event, `false` none): it sees each run whole, in file order. Events not kept are
/// dropped as soon as that run is read, after its `output_sha256` is filled in from them
/// where the record lacks it (the same hash [`RunRecord::hash_output`] gives), and, for
/// [`Keep::Times`], their times kept in `dropped_events`. Events are most of a pass's memory (a
/// run of 256 tokens holds 256 of them, each with its text): a caller that needs them for a
/// few runs holds a pass in a fraction of the memory. The filter is made from the pass's
/// `pass.json` (which steps a run belongs to decides what is read of it);
/// `analysis::runs::events_the_figures_read` is the one the analysis reads passes with.
pub fn read_pass_keeping<K: Into<Keep>, F: FnMut(&RunRecord) -> K>(dir: &Path, keep_events: impl FnOnce(&PassInfo) -> F) -> Result<Pass, PassError> {
    let info = read_pass_info(dir)?;
    let mut keep_events = keep_events(&info);
    let mut reader = RunReader::open(dir)?;
    let mut runs = Vec::new();
    for run in reader.by_ref() {
        let mut run = run?;
        let keep = keep_events(&run).into();
        if keep == Keep::Events {
            // Read an event at a time, the events' vector grew by doubling: up to half of it
            // empty, in every run the pass holds.
            run.events.shrink_to_fit();
        } else {
            if run.output_sha256.is_none() {
                run.output_sha256 = RunRecord::hash_output(&run.events);
            }
            if keep == Keep::Times && !run.events.is_empty() {
                run.dropped_events = Some(crate::metrics::TokenTimes::of(&run.events));
            }
            run.events = Vec::new();
        }
        runs.push(run);
    }
    Ok(Pass { dir: dir.to_owned(), info, runs, torn_tail: reader.torn_tail, damage: reader.damage })
}

/// What [`read_pass_keeping`] keeps of a run's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Every event, whole.
    Events,
    /// Only what the serving figures read of them ([`RunRecord::token_times`]: each token
    /// event's arrival and logprob count, the last event's arrival), in 8 bytes a token event.
    Times,
    /// Nothing (its `output_sha256` is still filled in from them).
    Nothing,
}

impl From<bool> for Keep {
    /// `true`: every event; `false`: none.
    fn from(keep: bool) -> Keep {
        if keep { Keep::Events } else { Keep::Nothing }
    }
}

/// The runs of a pass read one line at a time, in the order they were recorded: memory for
/// one run, whatever the size of the pass (`benchpass export` streams through it). Blank lines
/// are skipped. A line that is not a run record, or a run no measurement wrote, is left out
/// and the iteration goes on: [`RunReader::damage`] names it. A torn last line is not damage
/// but the crash case: [`RunReader::torn_tail`] says so. Both are known once the iteration has
/// ended. Only a failed read of the file ends it with an error.
pub struct RunReader {
    path: PathBuf,
    reader: BufReader<File>,
    // Bytes, not text: a kill can cut a line inside a multi-byte character.
    line: Vec<u8>,
    number: usize,
    torn_tail: Option<TornTail>,
    damage: Damage,
    done: bool,
}

impl RunReader {
    pub fn open(dir: &Path) -> Result<RunReader, PassError> {
        let path = dir.join(RUNS_FILE);
        let file = File::open(&path).map_err(io(&path))?;
        Ok(RunReader {
            path,
            reader: BufReader::new(file),
            line: Vec::new(),
            number: 0,
            torn_tail: None,
            damage: Damage::default(),
            done: false,
        })
    }

    /// The last line cut short, once the iteration has ended.
    pub fn torn_tail(&self) -> Option<&TornTail> {
        self.torn_tail.as_ref()
    }

    /// The lines left out so far (all of them once the iteration has ended).
    pub fn damage(&self) -> &Damage {
        &self.damage
    }
}

impl Iterator for RunReader {
    type Item = Result<RunRecord, PassError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            self.line.clear();
            let read = match self.reader.read_until(b'\n', &mut self.line) {
                Ok(read) => read,
                Err(cause) => {
                    self.done = true;
                    return Some(Err(PassError::Io { path: self.path.clone(), cause }));
                }
            };
            if read == 0 {
                self.done = true;
                break;
            }
            self.number += 1;
            let complete = self.line.ends_with(b"\n");
            if self.line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let parsed = parse_run_line(&self.line);
            // A line of many megabytes leaves no buffer that size behind it.
            let bytes = self.line.len();
            if self.line.capacity() > 1 << 20 {
                self.line = Vec::new();
            }
            match parsed {
                Ok(run) => return Some(Ok(run)),
                // Only the last line can be torn: a writer that died mid-append leaves no newline.
                Err(LineError::NotARecord(_)) if !complete => {
                    self.torn_tail = Some(TornTail { line: self.number, bytes });
                    self.done = true;
                }
                Err(error) => self.damage.push(self.number, bytes, error.to_string()),
            }
        }
        None
    }
}

/// Why a line of runs.jsonl is not a run.
enum LineError {
    NotARecord(serde_json::Error),
    /// A run no measurement wrote ([`impossible`]).
    Impossible(String),
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // The line is one line: serde's "at line 1 column 15" says only the column.
            LineError::NotARecord(cause) => {
                let text = cause.to_string();
                let place = format!(" at line {} column {}", cause.line(), cause.column());
                match text.strip_suffix(&place) {
                    Some(what) => write!(f, "not a run record: {what} (column {})", cause.column()),
                    None => write!(f, "not a run record: {text}"),
                }
            }
            LineError::Impossible(message) => f.write_str(message),
        }
    }
}

/// One line of runs.jsonl as a run: what every reader here reads, and what the writer checks
/// a line it had to redact against.
fn parse_run_line(line: &[u8]) -> Result<RunRecord, LineError> {
    let run = serde_json::from_slice::<RunRecord>(line).map_err(LineError::NotARecord)?;
    match impossible(&run) {
        None => Ok(run),
        Some(message) => Err(LineError::Impossible(message)),
    }
}

/// What makes a run record one no measurement wrote (docs/raw-format.md, "Bounds"): a
/// negative time ([`bounded::possible_ms`]; the writer writes none). (JSON holds no infinity
/// or NaN, and serde refuses a number too large for an f64.) A time above 30 days or a count
/// above 2^32 is read, as an importer of another tool's file may have written it, and gives no
/// rate (`metrics::decode_tps`, `prefill_tps`).
fn impossible(run: &RunRecord) -> Option<String> {
    for (field, value) in [("ttft_ms", run.ttft_ms), ("decode_ms", run.decode_ms)] {
        if let Some(ms) = value.filter(|ms| !bounded::possible_ms(*ms)) {
            return Some(format!("`{field}` is {ms}; expected milliseconds, 0 or more"));
        }
    }
    None
}

pub fn read_pass_info(dir: &Path) -> Result<PassInfo, PassError> {
    let path = dir.join(PASS_FILE);
    let text = fs::read_to_string(&path).map_err(io(&path))?;
    // Read the version first so that a newer schema is reported as such, not as a parse error.
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: u32,
    }
    let version: Version =
        serde_json::from_str(&text).map_err(|cause| PassError::BadPassFile { path: path.clone(), cause })?;
    if version.schema_version > SCHEMA_VERSION {
        return Err(PassError::NewerSchema { path, found: version.schema_version });
    }
    serde_json::from_str(&text).map_err(|cause| PassError::BadPassFile { path, cause })
}

/// Reads many passes, spread over all cores (a leaderboard may read thousands); in order.
pub fn read_passes(dirs: &[PathBuf]) -> Result<Vec<Pass>, PassError> {
    read_passes_keeping(dirs, |_: &PassInfo| |_: &RunRecord| true)
}

/// [`read_passes`] with [`read_pass_keeping`]'s filter of events, a new one for each pass
/// (made by `filter`).
pub fn read_passes_keeping<K: Into<Keep>, F: FnMut(&RunRecord) -> K>(dirs: &[PathBuf], filter: impl Fn(&PassInfo) -> F + Sync) -> Result<Vec<Pass>, PassError> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Pass, PassError>>>> = Mutex::new((0..dirs.len()).map(|_| None).collect());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(dirs.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(dir) = dirs.get(i) else { break };
                let pass = read_pass_keeping(dir, &filter);
                results.lock().expect("no reader panics holding the lock")[i] = Some(pass);
            });
        }
    });
    results.into_inner().expect("readers have ended").into_iter().map(|r| r.expect("every pass was read")).collect()
}

// The test writes through /dev/full, which only Linux has.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    const PASS_JSON: &str = r#"{"schema_version": 1, "pass_id": "p", "status": "running", "started_at": "",
        "benchpass": {"version": "0.1.0"}, "machine": {"name": "m"}, "cells": []}"#;

    #[test]
    #[cfg(target_os = "linux")]
    fn a_full_disk_while_rewriting_pass_json_leaves_the_old_one_whole() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(PASS_FILE), PASS_JSON).unwrap();
        fs::write(dir.path().join(RUNS_FILE), "").unwrap();
        let mut info = read_pass(dir.path()).unwrap().info;
        info.status = super::super::format::PassStatus::Complete;
        // Writes to /dev/full fail as on a full disk: ENOSPC from the kernel. The temporary
        // is created as usual (a link planted there would not be followed), then written
        // through a handle on /dev/full.
        let tmp = dir.path().join(".pass.json.tmp");
        let full_disk = |tmp: &Path| {
            fs::OpenOptions::new().write(true).create_new(true).open(tmp)?;
            fs::OpenOptions::new().write(true).open("/dev/full")
        };
        let error = write_pass_info_through(dir.path(), &info, full_disk).unwrap_err().to_string();
        assert!(error.contains("pass.json: could not rewrite it: No space left on device"), "{error}");
        assert!(error.ends_with("the previous one is intact (the disk is full: free space, then resume the pass or measure again)"), "{error}");
        assert_eq!(fs::read_to_string(dir.path().join(PASS_FILE)).unwrap(), PASS_JSON);
        assert!(!tmp.exists() && tmp.symlink_metadata().is_err(), "the temporary file is removed");

        // With room again, the rewrite goes through.
        write_pass_info(dir.path(), &info).unwrap();
        assert_eq!(read_pass(dir.path()).unwrap().info.status, super::super::format::PassStatus::Complete);
    }
}

#[cfg(test)]
mod damaged_lines {
    use super::super::format::Workload;
    use super::*;

    fn run(rep: u32) -> RunRecord {
        RunRecord { ttft_ms: Some(10.0 + rep as f64), ..RunRecord::unmeasured("c0", Workload::Sustained, 0, rep, false, 8) }
    }

    #[test]
    fn a_bad_line_anywhere_is_named_and_left_out_and_resuming_keeps_it_and_every_run() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("p");
        let mut writer = PassWriter::create(&dir, &PassInfo::synthetic("p", "m", vec![])).unwrap();
        for rep in 0..4 {
            writer.append(&run(rep)).unwrap();
        }
        drop(writer);
        let runs = dir.join(RUNS_FILE);
        let good: Vec<String> = fs::read_to_string(&runs).unwrap().lines().map(str::to_owned).collect();
        // Line 1 garbage, line 3 a run no measurement wrote, line 5 not JSON at all, then a
        // torn last line.
        let impossible = good[1].replace("\"ttft_ms\":11.0", "\"ttft_ms\":-11.0");
        let text = format!("\u{1b}[31mnot json\n{}\n{impossible}\n{}\n\x00\x01\n{}\n{{\"cell\":\"c0\",\"wor", good[0], good[2], good[3]);
        fs::write(&runs, &text).unwrap();

        let pass = read_pass(&dir).unwrap();
        assert_eq!(pass.runs.iter().map(|r| r.rep).collect::<Vec<_>>(), [0, 2, 3]);
        let named: Vec<(usize, &str)> = pass.damage.lines.iter().map(|d| (d.line, d.why.as_str())).collect();
        assert_eq!(
            named,
            [
                (1, "not a run record: expected value (column 1)"),
                (3, "`ttft_ms` is -11; expected milliseconds, 0 or more"),
                (5, "not a run record: expected value (column 1)"),
            ]
        );
        assert_eq!((pass.damage.total, pass.torn_tail.as_ref().map(|t| t.line)), (3, Some(7)));
        assert_eq!(pass.damage_summary().as_deref(), Some("3 lines of runs.jsonl could not be read (1, 3, 5) and its last line (7) is cut short; 3 runs read"));
        assert_eq!(
            pass.damage_notes(),
            [
                "runs.jsonl:1 could not be read (not a run record: expected value (column 1)): the run it held is left out",
                "runs.jsonl:3 could not be read (`ttft_ms` is -11; expected milliseconds, 0 or more): the run it held is left out",
                "runs.jsonl:5 could not be read (not a run record: expected value (column 1)): the run it held is left out",
                "runs.jsonl:7 is cut short (the writer stopped mid-run): that run is left out",
            ]
        );
        // The light read and the line-by-line read say the same.
        let light = read_pass_keeping(&dir, |_| |_| false).unwrap();
        assert_eq!((light.runs.len(), &light.damage, &light.torn_tail), (3, &pass.damage, &pass.torn_tail));
        let mut reader = RunReader::open(&dir).unwrap();
        assert_eq!(reader.by_ref().map(|r| r.unwrap().rep).collect::<Vec<_>>(), [0, 2, 3]);
        assert_eq!(reader.damage(), &pass.damage);

        // Resuming: the torn line is cut, the damaged ones stay whole where they are (named
        // at the same lines), and a run appended after them is read.
        let mut writer = PassWriter::reopen(&dir).unwrap();
        assert_eq!(writer.n_runs(), 3);
        writer.append(&run(1)).unwrap();
        drop(writer);
        let after = fs::read_to_string(&runs).unwrap();
        assert!(after.starts_with(&text[..text.rfind("{\"cell\":\"c0\",\"wor").unwrap()]), "nothing before the torn line changed: {after}");
        let again = read_pass(&dir).unwrap();
        assert_eq!(again.runs.iter().map(|r| r.rep).collect::<Vec<_>>(), [0, 2, 3, 1]);
        assert_eq!((&again.damage, again.torn_tail.as_ref()), (&pass.damage, None));
    }

    #[test]
    fn damage_past_what_is_named_is_counted_and_a_long_why_is_cut() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("p");
        let writer = PassWriter::create(&dir, &PassInfo::synthetic("p", "m", vec![])).unwrap();
        drop(writer);
        let long = format!("{{\"cell\":\"c0\",\"workload\":\"{}\"}}\n", "w".repeat(5000));
        fs::write(dir.join(RUNS_FILE), long + &"x\n".repeat(100_000)).unwrap();
        let pass = read_pass(&dir).unwrap();
        assert_eq!((pass.runs.len(), pass.damage.total, pass.damage.lines.len()), (0, 100_001, Damage::MAX_NAMED));
        let why = &pass.damage.lines[0].why;
        assert!(why.starts_with("not a run record: unknown variant `www") && why.ends_with('…'), "{why}");
        assert_eq!(why.chars().count(), Damage::MAX_WHY_CHARS + 1);
        assert_eq!(pass.damage_notes().last().unwrap(), "99981 more lines of runs.jsonl could not be read and are left out");
    }

    #[test]
    fn a_key_that_spells_json_is_redacted_string_by_string_and_the_line_still_reads() {
        // Digits of a number, and JSON syntax: redacting the written text would break both.
        const KEY: &str = "\":\"r3dact-me-json";
        assert!(crate::secrets::register(KEY));
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("p");
        let mut writer = PassWriter::create(&dir, &PassInfo::synthetic("p", "m", vec![])).unwrap();
        let mut echoed = run(0);
        echoed.usage = Some(serde_json::json!({ format!("k{KEY}"): 1, "said": format!("echo {KEY} back") }));
        echoed.error = Some(super::super::format::RunError { class: "http-401".to_owned(), message: format!("bad key {KEY}") });
        writer.append(&echoed).unwrap();
        drop(writer);
        let text = fs::read_to_string(dir.join(RUNS_FILE)).unwrap();
        assert!(!text.contains("r3dact-me-json"), "{text}");
        let pass = read_pass(&dir).unwrap();
        assert!(pass.damage.is_empty(), "{:?}", pass.damage);
        let read = &pass.runs[0];
        assert_eq!(read.error.as_ref().unwrap().message, "bad key [redacted]");
        assert_eq!(read.usage.as_ref().unwrap()["said"], "echo [redacted] back");
        assert_eq!(read.usage.as_ref().unwrap()["k[redacted]"], 1);
    }
}
