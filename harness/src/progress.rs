//! What the terminal shows while a pass runs: a bar on a terminal, one plain line per run
//! otherwise (CI logs, pipes), nothing when asked to be quiet. Always on stderr, so stdout
//! stays clean for what a script reads.

use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::metrics;
use crate::pass::RunRecord;
use crate::provenance::HashProgress;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A bar when stderr is a terminal, plain lines when it is not.
    Auto,
    Plain,
    Quiet,
}

impl ProgressMode {
    fn wants_bar(self) -> bool {
        self == ProgressMode::Auto && std::io::stderr().is_terminal()
    }
}

pub struct Progress {
    mode: ProgressMode,
    bar: Option<ProgressBar>,
    total: std::cell::Cell<u64>,
    done: std::cell::Cell<u64>,
    live: Arc<Live>,
}

/// What is streaming right now, for the bar's live figure: token-carrying events as they
/// arrive, and how many tokens an event has carried so far in this pass (engines may put
/// several tokens in one event; the exact count only comes with the run's usage).
#[derive(Default)]
pub struct Live {
    events: AtomicU64,
    /// What the latest run to start is, e.g. `c1 sustained rep 2`.
    now: Mutex<String>,
    /// Tokens and token events of the finished runs, for tokens per event.
    tokens_seen: AtomicU64,
    events_seen: AtomicU64,
    stopped: AtomicBool,
}

impl Live {
    /// A token-carrying event arrived on some stream.
    pub fn on_token_event(&self) {
        self.events.fetch_add(1, Ordering::Relaxed);
    }

    pub fn on_start(&self, what: String) {
        *self.now.lock().unwrap_or_else(|e| e.into_inner()) = what;
    }

    fn tokens_per_event(&self) -> f64 {
        let (tokens, events) = (self.tokens_seen.load(Ordering::Relaxed), self.events_seen.load(Ordering::Relaxed));
        if events == 0 { 1.0 } else { tokens as f64 / events as f64 }
    }
}

/// Redraws the bar's live figure twice a second: tokens per second over about the last
/// second, across every stream in flight.
fn tick_live(bar: ProgressBar, live: Arc<Live>) {
    const EVERY: Duration = Duration::from_millis(500);
    std::thread::spawn(move || {
        let mut last = (Instant::now(), live.events.load(Ordering::Relaxed));
        let mut rate = 0.0;
        while !live.stopped.load(Ordering::Relaxed) {
            std::thread::sleep(EVERY);
            if live.stopped.load(Ordering::Relaxed) {
                // The bar is finished and cleared: drawing now would bring it back.
                break;
            }
            let now = (Instant::now(), live.events.load(Ordering::Relaxed));
            let dt = now.0.duration_since(last.0).as_secs_f64();
            let instant = (now.1 - last.1) as f64 * live.tokens_per_event() / dt;
            // Two ticks of smoothing: steady enough to read, quick to show a stall.
            rate = 0.5 * rate + 0.5 * instant;
            last = now;
            let what = live.now.lock().unwrap_or_else(|e| e.into_inner()).clone();
            bar.set_prefix(format!("{what} · now ≈ {rate:.1} tok/s"));
        }
    });
}

impl Progress {
    pub fn new(mode: ProgressMode, total_runs: u64) -> Progress {
        let bar = mode.wants_bar().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total_runs), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs  ETA {eta}  {prefix}\n  last: {msg}")
                    .expect("the template is valid"),
            );
            bar
        });
        let live = Arc::new(Live::default());
        if let Some(bar) = &bar {
            tick_live(bar.clone(), live.clone());
        }
        Progress { mode, bar, total: std::cell::Cell::new(total_runs), done: std::cell::Cell::new(0), live }
    }

    /// One more run than counted at the start (a soak runs as many as fit its duration).
    pub fn expect_more(&self, runs: u64) {
        self.total.set(self.total.get() + runs);
        if let Some(bar) = &self.bar {
            bar.inc_length(runs);
        }
    }

    /// The live counters the client feeds while a stream runs.
    pub fn live(&self) -> &Arc<Live> {
        &self.live
    }

    pub fn on_run(&self, run: &RunRecord) {
        self.done.set(self.done.get() + 1);
        if let Some(tokens) = run.completion_tokens.filter(|_| run.error.is_none()) {
            let events = run.events.iter().filter(|e| e.carries_tokens()).count() as u64;
            if events > 0 {
                self.live.tokens_seen.fetch_add(tokens, Ordering::Relaxed);
                self.live.events_seen.fetch_add(events, Ordering::Relaxed);
            }
        }
        let line = printable(&describe(run));
        match &self.bar {
            Some(bar) => {
                bar.set_message(line);
                bar.inc(1);
            }
            None if self.mode != ProgressMode::Quiet => {
                eprintln!("run {}/{} {line}", self.done.get(), self.total.get());
            }
            None => {}
        }
    }

    /// A line about what the pass is doing (starting an engine, clearing a cache).
    pub fn note(&self, line: &str) {
        let line = &printable(line);
        match &self.bar {
            Some(bar) => bar.println(line),
            None if self.mode != ProgressMode::Quiet => eprintln!("{line}"),
            None => {}
        }
    }

    pub fn finish(&self) {
        self.live.stopped.store(true, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.live.stopped.store(true, Ordering::Relaxed);
    }
}

/// `text` fit for a terminal line: secrets redacted, and control characters (escape
/// sequences that recolour, retitle or clear the terminal, newlines that forge progress lines)
/// shown escaped instead of obeyed. Every line benchpass prints that holds a server's or a
/// file's words goes through here.
pub fn printable(text: &str) -> String {
    escape_controls(&crate::secrets::redact(text), &['\t']).replace('\t', " ")
}

/// [`printable`] line by line: a block of several lines (a table) keeps its line breaks, and
/// nothing inside a line can start another.
pub fn printable_block(text: &str) -> String {
    text.lines().map(printable).collect::<Vec<_>>().join("\n")
}

/// A whole document for stdout (a CSV, a Markdown table): line ends and tabs kept as they
/// are, every other control character escaped, secrets redacted. What `diff`, `leaderboard`,
/// `quality` and `export` print goes through here (or [`PrintableWriter`]); the same output
/// written with `--out FILE` keeps its bytes.
pub fn printable_document(text: &str) -> String {
    escape_controls(&crate::secrets::redact(text), &['\n', '\t'])
}

/// Whether a terminal obeys `c` instead of showing it: the C0 and C1 controls (ESC starts
/// every escape sequence; CSI, OSC and DCS have one-character forms in C1), DEL, and the
/// bidirectional overrides and isolates that reorder what is shown around them.
pub fn is_terminal_control(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every [`is_terminal_control`] character but those in `keep` written as its
/// Rust escape (`\u{1b}`), so that it is seen and not obeyed.
fn escape_controls(text: &str, keep: &[char]) -> String {
    if !text.chars().any(|c| is_terminal_control(c) && !keep.contains(&c)) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if keep.contains(&c) => out.push(c),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.extend(c.escape_default()),
            c if is_terminal_control(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// A writer for stdout that passes each line through [`printable_document`] as it is
/// completed: a streamed document (the export's CSV, one row at a time) gets the same rule
/// as one printed whole. Lines end at `\n`, so a UTF-8 sequence is never split.
pub struct PrintableWriter<W: std::io::Write> {
    inner: W,
    line: Vec<u8>,
}

impl<W: std::io::Write> PrintableWriter<W> {
    pub fn new(inner: W) -> PrintableWriter<W> {
        PrintableWriter { inner, line: Vec::new() }
    }

    fn write_line(&mut self) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(&self.line);
        self.inner.write_all(printable_document(&text).as_bytes())?;
        self.line.clear();
        Ok(())
    }
}

impl<W: std::io::Write> std::io::Write for PrintableWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..=end]);
            self.write_line()?;
            rest = &rest[end + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    /// Writes out a line still open (the document's last, without its line end).
    fn flush(&mut self) -> std::io::Result<()> {
        if !self.line.is_empty() {
            self.write_line()?;
        }
        self.inner.flush()
    }
}

/// `c0 prompt-matrix 2048 rep 1: ttft 123.4 ms, 45.6 tok/s, 256 tokens (length)`.
fn describe(run: &RunRecord) -> String {
    let head = format!("{} {}", run.cell, job_name(run.workload, run.target_prompt_tokens, run.warmup, run.rep, run.turn));
    if let Some(error) = &run.error {
        return format!("{head}: failed ({}): {}", error.class, error.message);
    }
    let ttft = run.ttft_ms.map_or("-".to_owned(), |ms| format!("{ms:.1} ms"));
    let rate = metrics::decode_tps(run.completion_tokens, run.decode_ms).map_or("-".to_owned(), |r| format!("{r:.1} tok/s"));
    let tokens = run.completion_tokens.map_or("?".to_owned(), |n| n.to_string());
    let finish = run.finish_reason.as_deref().unwrap_or("?");
    format!("{head}: ttft {ttft}, {rate}, {tokens} tokens ({finish})")
}

/// `sustained rep 2`, `prompt-matrix 2048 warmup 1`: counted from 1, as the `run N/M` beside
/// it (runs.jsonl counts `rep` and `turn` from 0).
pub fn job_name(workload: crate::pass::Workload, target: u64, warmup: bool, rep: u32, turn: Option<u32>) -> String {
    let kind = if warmup { "warmup" } else { "rep" };
    let rep = rep.saturating_add(1);
    if let Some(turn) = turn {
        // `agent session 2 turn 5`, `agent warmup session 1 turn 3`
        let warmup = if warmup { " warmup" } else { "" };
        return format!("{}{warmup} session {rep} turn {}", workload.as_str(), turn.saturating_add(1));
    }
    match workload {
        w if w.has_prompt_targets() => format!("{} {target} {kind} {rep}", workload.as_str()),
        _ => format!("{} {kind} {rep}", workload.as_str()),
    }
}

/// Progress of weight hashing, in bytes.
pub struct HashBar {
    bar: Option<ProgressBar>,
}

impl HashBar {
    pub fn new(mode: ProgressMode) -> HashBar {
        HashBar { bar: mode.wants_bar().then(ProgressBar::hidden) }
    }
}

impl HashProgress for HashBar {
    fn start(&self, total_bytes: u64, n_files: usize) {
        if let Some(bar) = &self.bar {
            if n_files == 0 {
                return;
            }
            bar.set_length(total_bytes);
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("hashing {msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}")
                    .expect("the template is valid"),
            );
            bar.set_message(format!("{n_files} weight files"));
        }
    }

    fn advance(&self, bytes: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(bytes);
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{printable, printable_document, PrintableWriter};
    use std::io::Write as _;

    #[test]
    fn terminal_escapes_and_newlines_are_shown_not_obeyed() {
        // Colour, window title (OSC), clear screen, and a forged progress line.
        let hostile = "m\u{1b}[31mred\u{1b}]0;owned\u{7}\u{1b}[2J\nrun 9/9 ok\r";
        let shown = printable(hostile);
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert_eq!(shown, r"m\u{1b}[31mred\u{1b}]0;owned\u{7}\u{1b}[2J\nrun 9/9 ok\r");
        assert_eq!(printable("plain 12.5 tok/s"), "plain 12.5 tok/s");
    }

    #[test]
    fn a_document_keeps_its_lines_and_tabs_and_shows_every_other_control() {
        // ESC (title, clear), a C1 CSI, DEL, a carriage return that would overwrite the line,
        // and a right-to-left override that would reorder it.
        let csv = "engine,tps\nevil\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}1m\u{7f}\r\u{202e}x,1\tok\n";
        let shown = printable_document(csv);
        assert_eq!(shown, "engine,tps\nevil\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{9b}1m\\u{7f}\\r\\u{202e}x,1\tok\n");
        assert!(!shown.chars().any(|c| super::is_terminal_control(c) && c != '\n' && c != '\t'));
        assert_eq!(printable_document("a,b\n1,2\n"), "a,b\n1,2\n");
    }

    #[test]
    fn the_writer_gives_the_same_bytes_in_any_chunking() {
        let text = "h\u{e9}\u{1b}[2J,\u{9b}x\n2,\u{202e}\ntail";
        let whole = printable_document(text);
        for size in 1..=text.len() {
            let mut out = PrintableWriter::new(Vec::new());
            for chunk in text.as_bytes().chunks(size) {
                out.write_all(chunk).unwrap();
            }
            out.flush().unwrap();
            assert_eq!(String::from_utf8(out.inner).unwrap(), whole, "chunks of {size}");
        }
    }
}
