//! Every committed fuzz corpus file (`fuzz/corpus/<target>/`) through the checks the cargo-fuzz
//! targets run, on stable Rust: an input that once crashed a parser stays a test. Errors are
//! fine; a panic or a broken promise (docs/reliability.md#fuzzing) fails the test and names the
//! file.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

#[path = "../../../fuzz/src/lib.rs"]
mod checks;

use checks::Scratch;

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no corpus", dir.display());
    files
}

/// Runs `check` on every corpus file of `target`; returns how many it accepted (the rest it
/// refused with an error).
fn run_corpus(target: &str, check: impl Fn(&[u8]) -> bool) -> usize {
    let mut failed = Vec::new();
    let mut accepted = 0;
    let files = corpus(target);
    for path in &files {
        let data = std::fs::read(path).unwrap();
        match catch_unwind(AssertUnwindSafe(|| check(&data))) {
            Ok(ok) => accepted += usize::from(ok),
            Err(_) => failed.push(path.file_name().unwrap().to_string_lossy().into_owned()),
        }
    }
    assert!(failed.is_empty(), "{} of {} {target} corpus files failed: {failed:?}", failed.len(), files.len());
    accepted
}

#[test]
fn the_sse_corpus_parses_the_same_in_any_chunks() {
    run_corpus("sse", |data| {
        checks::sse(data);
        true
    });
}

// Each corpus holds inputs that are accepted, so that what is checked after acceptance (reopen,
// round trip, dry run) runs too.

#[test]
fn the_runs_jsonl_corpus_reads_or_is_refused_and_reopens_cleanly() {
    let scratch = Scratch::new();
    assert!(run_corpus("runs_jsonl", |data| checks::runs_jsonl(&scratch, data)) > 0);
}

#[test]
fn the_runs_csv_corpus_imports_or_is_refused_and_round_trips() {
    let scratch = Scratch::new();
    assert!(run_corpus("runs_csv", |data| checks::runs_csv(&scratch, data)) > 0);
}

#[test]
fn the_plan_corpus_loads_or_is_refused() {
    let scratch = Scratch::new();
    assert!(run_corpus("plan", |data| checks::plan(&scratch, data)) > 0);
}

/// A plan the checks accept whose counts are too big for the arithmetic that uses them. Known
/// bug (docs/reliability.md#fuzzing): `plan::load` accepts any `warmup`, `runs` and
/// `max_tokens`, and `dry_run` (plan/run.rs) multiplies runs by `max_tokens` unchecked: a
/// debug build panics with "attempt to multiply with overflow", a release build prints a
/// wrapped token count. Un-ignore once the checks bound the counts (or the sums saturate).
#[test]
#[ignore = "known bug: plan checks accept counts that overflow the dry run (plan/run.rs)"]
fn a_plan_with_huge_max_tokens_is_refused_or_dry_runs_without_overflow() {
    let scratch = Scratch::new();
    let path = scratch.path().join("plan.toml");
    std::fs::write(
        &path,
        "[[engines]]\nname = \"e\"\nurl = \"http://127.0.0.1:11434\"\n\n[[models]]\nname = \"m\"\n\n\
         [[cells]]\nengine = \"e\"\nmodel = \"m\"\n\n[[workloads]]\nkind = \"sustained\"\nruns = 3\n\
         max_tokens = 9223372036854775807\n",
    )
    .unwrap();
    if let Ok(plan) = harness::plan::load(&path) {
        harness::plan::dry_run(&plan, 1.0);
    }
}

/// Known bug, found by the `runs_csv` target (export → import → export gave other bytes for a
/// decode time of about 1.1e60 ms): serde_json, as the workspace builds it (without its
/// `float_roundtrip` feature), reads some floats back one ulp off what it wrote: about one
/// in eight rates (tokens / seconds, as in llama.cpp's verbatim `timings`), none of 2 million
/// times in whole nanoseconds / 1e6 tried. This value is such a rate. Un-ignore once
/// serde_json reads floats exactly.
#[test]
#[ignore = "known bug: serde_json reads some floats in runs.jsonl back one ulp off"]
fn a_float_written_to_runs_jsonl_reads_back_exactly() {
    let scratch = Scratch::new();
    let dir = scratch.path().join("pass");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(harness::pass::PASS_FILE), checks::PASS_JSON).unwrap();
    std::fs::write(dir.join(harness::pass::RUNS_FILE), "").unwrap();
    let mut writer = harness::pass::PassWriter::reopen(&dir).unwrap();
    let mut run = harness::pass::RunRecord::unmeasured("c0", harness::pass::Workload::Sustained, 0, 0, false, 16);
    run.ttft_ms = Some(28847.161572052402);
    writer.append(&run).unwrap();
    assert_eq!(harness::pass::read_pass(&dir).unwrap().runs[0].ttft_ms, run.ttft_ms);
}
