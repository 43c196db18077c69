//! What each fuzz target does with one input. The targets in `fuzz_targets/` call these, and
//! the stable test `cli/tests/it/fuzz_corpus.rs` includes this file and feeds every
//! committed corpus file through the same functions, so a crash the fuzzer once found stays
//! found without nightly Rust.
//!
//! Errors are fine: hostile input must be refused with an error, never a panic. Beyond "no
//! panic", each check asserts what the code promises (docs/reliability.md#fuzzing).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use harness::pass::csv::{export_runs, import_runs};
use harness::pass::llama_bench::{self, LlamaBenchImport};
use harness::pass::vllm_bench::{self, VllmBenchImport};
use harness::pass::{read_pass, PassWriter, PASS_FILE, RUNS_FILE};
use harness::sse::{SseEvent, SseParser};

/// A private folder under the temporary folder (`TMPDIR`), removed on drop.
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    pub fn new() -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("benchpass-fuzz-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("the temporary folder is writable");
        Scratch { dir }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch::new()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn parse(parser: &mut SseParser, chunks: impl Iterator<Item = impl AsRef<[u8]>>) -> Vec<SseEvent> {
    chunks.flat_map(|chunk| parser.feed(chunk.as_ref())).collect()
}

/// The SSE parser. Input: one byte `n`, then `n % 8` chunk sizes (one byte each, 1–256,
/// used in turn), then the stream. The stream is parsed whole, one byte at a time and in the
/// chunks the sizes give; all three must give the same events with the same wire byte counts
/// and leave the same bytes pending ("chunks split anywhere"), and the events cannot have
/// taken more bytes than the stream holds.
pub fn sse(data: &[u8]) {
    let (sizes, stream) = match data.split_first() {
        Some((&n, rest)) => rest.split_at(usize::from(n % 8).min(rest.len())),
        None => (&[][..], data),
    };
    let mut whole_parser = SseParser::new();
    let whole = whole_parser.feed(stream);

    let mut byte_parser = SseParser::new();
    let by_byte = parse(&mut byte_parser, stream.chunks(1));
    assert_eq!(by_byte, whole, "one byte at a time");
    assert_eq!(byte_parser.pending_bytes(), whole_parser.pending_bytes());

    if !sizes.is_empty() {
        let mut rest = stream;
        let mut chunks = Vec::new();
        for &size in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (chunk, tail) = rest.split_at((usize::from(size) + 1).min(rest.len()));
            chunks.push(chunk);
            rest = tail;
        }
        let mut chunk_parser = SseParser::new();
        let chunked = parse(&mut chunk_parser, chunks.iter());
        assert_eq!(chunked, whole, "chunks of {sizes:?}");
        assert_eq!(chunk_parser.pending_bytes(), whole_parser.pending_bytes());
    }

    let wire: usize = whole.iter().map(|e| e.wire_bytes).sum();
    assert!(wire <= stream.len(), "events took {wire} bytes of a {}-byte stream", stream.len());
}

/// How the client reads one event's JSON (`harness::client::read_event_data`). Input: event
/// data, one event per line, fed in order into one run's outcome. Whatever a server sends, an
/// event must write to `runs.jsonl` and read back the same (the run record is what is kept),
/// every logprob kept is finite with at most 32 alternatives, a token event is one that
/// carries text, reasoning or tool-call arguments, and the contradictions kept are bounded.
pub fn client_event(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut outcome = harness::client::StreamOutcome::default();
    for (i, line) in text.lines().enumerate() {
        let Some(event) = harness::client::read_event_data(line, i as u64, line.len(), &mut outcome) else { continue };
        let written = serde_json::to_string(&event).expect("an event serialises");
        let read: harness::pass::EventRecord = serde_json::from_str(&written).expect("an event reads back");
        assert_eq!(read, event, "an event reads back the same");
        assert_eq!(event.carries_tokens(), !(event.text.is_empty() && event.reasoning.is_empty() && event.tool_args.is_empty()));
        for token in &event.logprobs {
            assert!(token.logprob.is_finite() && token.top.len() <= 32, "{token:?}");
            assert!(token.top.iter().all(|t| t.logprob.is_finite()));
        }
    }
    assert!(outcome.conflicts.len() <= harness::client::MAX_CONFLICTS);
    assert!(outcome.usage.as_ref().is_none_or(serde_json::Value::is_object));
    assert!(outcome.timings.as_ref().is_none_or(serde_json::Value::is_object));
}

/// A valid `pass.json` whose cells are the ids the seed runs name (`c0` … `c3`). Text, not a
/// `PassInfo`, so that new optional fields need no change here.
pub const PASS_JSON: &str = r#"{
  "schema_version": 1,
  "pass_id": "fuzz",
  "status": "complete",
  "started_at": "",
  "benchpass": { "version": "0.1.0" },
  "machine": { "name": "fuzz" },
  "cells": [
    { "id": "c0", "engine": { "name": "sim", "version": "1", "version_source": "fuzz" }, "model": "m0", "lane": "text", "build": {} },
    { "id": "c1", "engine": { "name": "sim", "version": "1", "version_source": "fuzz" }, "model": "m1", "lane": "text", "build": {} },
    { "id": "c2", "engine": { "name": "sim", "version": "1", "version_source": "fuzz" }, "model": "m2", "lane": "text", "build": {} },
    { "id": "c3", "engine": { "name": "sim", "version": "1", "version_source": "fuzz" }, "model": "m3", "lane": "text", "build": {} }
  ]
}
"#;

/// The `runs.jsonl` reader. Input: the bytes of `runs.jsonl`, beside a valid `pass.json`.
/// When the pass reads, it must also export to CSV (or refuse with an error), and reopening
/// it for appending (what `--resume` does: cut a torn last line, end an unended one) must
/// leave a file that reads back to the same runs with no torn line.
pub fn runs_jsonl(scratch: &Scratch, data: &[u8]) -> bool {
    let dir = scratch.path().join("pass");
    if !dir.join(PASS_FILE).exists() {
        fs::create_dir_all(&dir).expect("scratch is writable");
        fs::write(dir.join(PASS_FILE), PASS_JSON).expect("scratch is writable");
    }
    fs::write(dir.join(RUNS_FILE), data).expect("scratch is writable");
    let Ok(pass) = read_pass(&dir) else { return false };
    for run in &pass.runs {
        let _ = harness::metrics::decode_tps(run.completion_tokens, run.decode_ms);
        let _ = harness::metrics::prefill_tps(run.prompt_tokens, run.ttft_ms);
    }
    let _ = export_runs(&pass, std::io::sink());

    let writer = PassWriter::reopen(&dir).expect("a pass that reads can be reopened");
    assert_eq!(writer.n_runs(), pass.runs.len());
    drop(writer);
    let again = read_pass(&dir).expect("a reopened pass reads");
    assert_eq!(again.torn_tail, None, "reopening cuts a torn last line");
    assert!(again.runs == pass.runs, "reopening keeps every whole run");
    true
}

/// The runs-CSV importer. Input: the bytes of a CSV file. What it imports must read back as
/// passes, and export → import → export must give the same bytes (format/src/csv.rs promises it).
pub fn runs_csv(scratch: &Scratch, data: &[u8]) -> bool {
    let csv = scratch.path().join("runs.csv");
    let out = scratch.path().join("imported");
    let _ = fs::remove_dir_all(&out);
    fs::write(&csv, data).expect("scratch is writable");
    let Ok(dirs) = import_runs(&csv, &out) else { return false };
    for dir in dirs {
        let pass = read_pass(&dir).expect("an imported pass reads");
        let mut first = Vec::new();
        export_runs(&pass, &mut first).expect("an imported pass exports");

        let again_csv = scratch.path().join("exported.csv");
        let again_out = scratch.path().join("reimported");
        let _ = fs::remove_dir_all(&again_out);
        fs::write(&again_csv, &first).expect("scratch is writable");
        let again_dirs = import_runs(&again_csv, &again_out).expect("an export imports");
        assert_eq!(again_dirs.len(), 1, "one pass exports as one pass");
        let again = read_pass(&again_dirs[0]).expect("a re-imported pass reads");
        let mut second = Vec::new();
        export_runs(&again, &mut second).expect("a re-imported pass exports");
        // Byte for byte: serde_json reads every float back exactly (its float_roundtrip
        // feature; without it this found values one ulp off).
        assert_eq!(String::from_utf8_lossy(&first), String::from_utf8_lossy(&second), "export → import → export");
    }
    let _ = fs::remove_dir_all(&out);
    let _ = fs::remove_dir_all(scratch.path().join("reimported"));
    true
}

/// The plan parser and its checks. Input: the text of a plan file. A plan that passes the
/// checks must also print its dry run (`benchpass run PLAN --dry-run`); every error must
/// print.
///
/// The checks look at the disk as plans ask them to (does this executable or weight file
/// exist?) but never write to it.
pub fn plan(scratch: &Scratch, data: &[u8]) -> bool {
    let path = scratch.path().join("plan.toml");
    fs::write(&path, data).expect("scratch is writable");
    match harness::plan::load(&path) {
        Ok(plan) => {
            // The checks bound every count, so any accepted plan dry-runs without overflow.
            let _ = harness::plan::dry_run(&plan, 1.0);
            true
        }
        Err(errors) => {
            assert!(!errors.is_empty(), "a refused plan names at least one problem");
            for error in errors {
                let _ = error.to_string();
            }
            false
        }
    }
}

/// What an importer wrote must read back as a pass and export to CSV, and every time it
/// holds must be a finite number of milliseconds, 0 or more: a table built on it must never
/// show a negative or infinite TTFT or rate.
fn imported_pass_is_sound(dir: &Path) {
    let pass = read_pass(dir).expect("an imported pass reads");
    assert!(!pass.runs.is_empty(), "an import with no runs is refused, not written");
    for run in &pass.runs {
        for (what, ms) in [("ttft_ms", run.ttft_ms), ("decode_ms", run.decode_ms)] {
            if let Some(ms) = ms {
                assert!(ms.is_finite() && ms >= 0.0, "{what} {ms}");
            }
        }
        if let Some(rate) = harness::metrics::decode_tps(run.completion_tokens, run.decode_ms) {
            assert!(rate.is_finite() && rate > 0.0, "decode rate {rate}");
        }
    }
    export_runs(&pass, std::io::sink()).expect("an imported pass exports");
}

/// Writes `data` as the file an importer reads, runs `import` into a fresh folder, and checks
/// what it wrote; `false` when the importer refused the file.
fn import_checked(scratch: &Scratch, name: &str, data: &[u8], import: impl FnOnce(&Path, &Path) -> anyhow::Result<PathBuf>) -> bool {
    let file = scratch.path().join(name);
    let out = scratch.path().join("imported");
    let _ = fs::remove_dir_all(&out);
    fs::write(&file, data).expect("scratch is writable");
    let accepted = match import(&file, &out) {
        Ok(dir) => {
            imported_pass_is_sound(&dir);
            true
        }
        Err(_) => false,
    };
    let _ = fs::remove_dir_all(&out);
    accepted
}

/// The llama-bench importer. Input: the bytes of a `llama-bench -o json` file.
pub fn llama_bench(scratch: &Scratch, data: &[u8]) -> bool {
    import_checked(scratch, "llama-bench.json", data, |file, out_dir| {
        llama_bench::import(LlamaBenchImport { file, out_dir, pass_id: Some("fuzz".into()), machine: None })
    })
}

/// The vllm-bench importer. Input: the bytes of a `vllm bench serve --save-result` file.
pub fn vllm_bench(scratch: &Scratch, data: &[u8]) -> bool {
    import_checked(scratch, "vllm-bench.json", data, |file, out_dir| {
        vllm_bench::import(VllmBenchImport { file, out_dir, pass_id: Some("fuzz".into()), machine: None, engine: None })
    })
}

/// The `pass.json` reader. Input: the bytes of `pass.json`, beside an empty `runs.jsonl`. A
/// pass.json that reads must also be written back (`--resume` rewrites it) to one that reads
/// to the same provenance.
pub fn pass_json(scratch: &Scratch, data: &[u8]) -> bool {
    let dir = scratch.path().join("pass-json");
    fs::create_dir_all(&dir).expect("scratch is writable");
    fs::write(dir.join(PASS_FILE), data).expect("scratch is writable");
    fs::write(dir.join(RUNS_FILE), "").expect("scratch is writable");
    let Ok(pass) = read_pass(&dir) else { return false };
    harness::pass::store::write_pass_info(&dir, &pass.info).expect("a pass.json that reads can be written back");
    let again = read_pass(&dir).expect("a pass.json written back reads");
    assert!(again.info == pass.info, "written back, pass.json reads to the same provenance");
    true
}
