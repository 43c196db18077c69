//! What the terminal shows while a pass runs: a bar on a terminal, one plain line per run
//! otherwise (CI logs, pipes), nothing when asked to be quiet. Always on stderr, so stdout
//! stays clean for what a script reads.

use std::io::IsTerminal as _;

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
    total: u64,
    done: std::cell::Cell<u64>,
}

impl Progress {
    pub fn new(mode: ProgressMode, total_runs: u64) -> Progress {
        let bar = mode.wants_bar().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total_runs), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs  {msg}  ETA {eta}")
                    .expect("the template is valid"),
            );
            bar
        });
        Progress { mode, bar, total: total_runs, done: std::cell::Cell::new(0) }
    }

    pub fn on_run(&self, run: &RunRecord) {
        self.done.set(self.done.get() + 1);
        let line = describe(run);
        match &self.bar {
            Some(bar) => {
                bar.set_message(line);
                bar.inc(1);
            }
            None if self.mode != ProgressMode::Quiet => {
                eprintln!("run {}/{} {line}", self.done.get(), self.total);
            }
            None => {}
        }
    }

    /// A line about what the pass is doing (starting an engine, clearing a cache).
    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None if self.mode != ProgressMode::Quiet => eprintln!("{line}"),
            None => {}
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// `prompt-matrix 2048 rep 1: ttft 123.4 ms, 45.6 tok/s, 256 tokens (length)`.
fn describe(run: &RunRecord) -> String {
    let kind = if run.warmup { "warmup" } else { "rep" };
    let head = format!("{} {} {kind} {}", run.workload.as_str(), run.target_prompt_tokens, run.rep);
    if let Some(error) = &run.error {
        return format!("{head}: failed ({}): {}", error.class, error.message);
    }
    let ttft = run.ttft_ms.map_or("-".to_owned(), |ms| format!("{ms:.1} ms"));
    let rate = metrics::decode_tps(run.completion_tokens, run.decode_ms).map_or("-".to_owned(), |r| format!("{r:.1} tok/s"));
    let tokens = run.completion_tokens.map_or("?".to_owned(), |n| n.to_string());
    let finish = run.finish_reason.as_deref().unwrap_or("?");
    format!("{head}: ttft {ttft}, {rate}, {tokens} tokens ({finish})")
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
