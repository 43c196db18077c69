//! Reading and writing pass folders. Runs are appended one line at a time, each written as
//! it ends and synced to disk moments later by a thread of its own (`syncer.rs`), so a crash
//! of benchpass loses at most the runs in flight; a torn last line is reported, never fatal.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

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
    #[error("{path}:{line}: not a run record: {cause}")]
    BadRun { path: PathBuf, line: usize, cause: serde_json::Error },
    #[error("{path}:{line}: {message}")]
    ImpossibleRun { path: PathBuf, line: usize, message: String },
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
    /// that run is lost either way, and appending after it would corrupt the next line.
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
        // Whatever a server echoed of the API key stops here, on its way to the disk.
        let mut line = crate::secrets::redact_bytes(serde_json::to_vec(run).expect("run records always serialize"));
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
        benchpass: crate::provenance::benchpass_info(),
        machine: MachineInfo { name: machine, ..MachineInfo::default() },
        cells,
        request: None,
        harness_cpu_seconds: None,
        imported_from,
    };
    let mut writer = PassWriter::create(dir, &info)?;
    for run in runs {
        writer.append(run)?;
    }
    Ok(())
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
    let mut text = crate::secrets::redact(&serde_json::to_string_pretty(info).expect("pass info always serializes")).into_owned();
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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    pub line: usize,
    pub bytes: usize,
}

impl Pass {
    /// A pass held in memory only, never read from or written to a folder (tests, benchmarks).
    pub fn in_memory(info: PassInfo, runs: Vec<RunRecord>) -> Pass {
        Pass { dir: PathBuf::new(), info, runs, torn_tail: None }
    }

    pub fn cell(&self, id: &str) -> Option<&super::format::CellInfo> {
        self.info.cells.iter().find(|c| c.id == id)
    }
}

/// Reads a pass whole: `pass.json` and every run with every stream event.
pub fn read_pass(dir: &Path) -> Result<Pass, PassError> {
    read_pass_keeping(dir, |_| |_| true)
}

/// Reads a pass keeping the stream events only of the runs for which `keep_events` says so
/// (it sees each run whole, in file order); every other run's events are dropped as soon as
/// that run is read, after its `output_sha256` is filled in from them where the record lacks
/// it (the same hash [`RunRecord::hash_output`] gives). Events are most of a pass's memory (a
/// run of 256 tokens holds 256 of them, each with its text): a caller that needs them for a
/// few runs holds a pass in a fraction of the memory. The filter is made from the pass's
/// `pass.json` (which steps a run belongs to decides what is read of it);
/// `analysis::runs::events_the_figures_read` is the one the analysis reads passes with.
pub fn read_pass_keeping<F: FnMut(&RunRecord) -> bool>(dir: &Path, keep_events: impl FnOnce(&PassInfo) -> F) -> Result<Pass, PassError> {
    let info = read_pass_info(dir)?;
    let mut keep_events = keep_events(&info);
    let mut reader = RunReader::open(dir)?;
    let mut runs = Vec::new();
    for run in reader.by_ref() {
        let mut run = run?;
        if !keep_events(&run) {
            if run.output_sha256.is_none() {
                run.output_sha256 = RunRecord::hash_output(&run.events);
            }
            run.events = Vec::new();
        }
        runs.push(run);
    }
    Ok(Pass { dir: dir.to_owned(), info, runs, torn_tail: reader.torn_tail })
}

/// The runs of a pass read one line at a time, in the order they were recorded: memory for
/// one run, whatever the size of the pass (`benchpass export` streams through it). Blank lines
/// are skipped; a run no measurement wrote, or a line that is not a run record before the
/// last, ends the iteration with an error naming its line. A torn last line is not an error:
/// [`RunReader::torn_tail`] says so once the iteration has ended.
pub struct RunReader {
    path: PathBuf,
    reader: BufReader<File>,
    // Bytes, not text: a kill can cut a line inside a multi-byte character.
    line: Vec<u8>,
    number: usize,
    torn_tail: Option<TornTail>,
    done: bool,
}

impl RunReader {
    pub fn open(dir: &Path) -> Result<RunReader, PassError> {
        let path = dir.join(RUNS_FILE);
        let file = File::open(&path).map_err(io(&path))?;
        Ok(RunReader { path, reader: BufReader::new(file), line: Vec::new(), number: 0, torn_tail: None, done: false })
    }

    /// The last line cut short, once the iteration has ended.
    pub fn torn_tail(&self) -> Option<&TornTail> {
        self.torn_tail.as_ref()
    }

    fn fail(&mut self, error: PassError) -> Option<Result<RunRecord, PassError>> {
        self.done = true;
        Some(Err(error))
    }
}

impl Iterator for RunReader {
    type Item = Result<RunRecord, PassError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            self.line.clear();
            let read = match self.reader.read_until(b'\n', &mut self.line) {
                Ok(read) => read,
                Err(cause) => return self.fail(PassError::Io { path: self.path.clone(), cause }),
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
            let (path, line) = (self.path.clone(), self.number);
            match serde_json::from_slice::<RunRecord>(&self.line) {
                Ok(run) => match impossible(&run) {
                    None => {
                        // A line of many megabytes leaves no buffer that size behind it.
                        if self.line.capacity() > 1 << 20 {
                            self.line = Vec::new();
                        }
                        return Some(Ok(run));
                    }
                    Some(message) => return self.fail(PassError::ImpossibleRun { path, line, message }),
                },
                // Only the last line can be torn: a writer that died mid-append leaves no newline.
                Err(_) if !complete => {
                    self.torn_tail = Some(TornTail { line, bytes: self.line.len() });
                    self.done = true;
                }
                Err(cause) => return self.fail(PassError::BadRun { path, line, cause }),
            }
        }
        None
    }
}

/// What makes a run record one no measurement wrote (docs/raw-format.md, "Bounds"): a
/// negative time. (JSON holds no infinity or NaN, and serde refuses a number too large for an
/// f64.) A time above 30 days or a count above 2^32 is read, as an importer of another tool's
/// file may have written it, and gives no rate (`metrics::decode_tps`, `prefill_tps`).
fn impossible(run: &RunRecord) -> Option<String> {
    for (field, value) in [("ttft_ms", run.ttft_ms), ("decode_ms", run.decode_ms)] {
        if let Some(ms) = value.filter(|ms| !(ms.is_finite() && *ms >= 0.0)) {
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
pub fn read_passes_keeping<F: FnMut(&RunRecord) -> bool>(dirs: &[PathBuf], filter: impl Fn(&PassInfo) -> F + Sync) -> Result<Vec<Pass>, PassError> {
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
