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
    // Thousands of imports, each synced to disk: not beside a test that times the sim.
    let _one_at_a_time = crate::support::engine_lock();
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

#[test]
fn the_client_event_corpus_reads_back_what_it_would_write() {
    run_corpus("client_event", |data| {
        checks::client_event(data);
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

#[test]
fn the_pass_json_corpus_reads_and_writes_back_or_is_refused() {
    let scratch = Scratch::new();
    assert!(run_corpus("pass_json", |data| checks::pass_json(&scratch, data)) > 0);
}

#[test]
fn the_llama_bench_corpus_imports_soundly_or_is_refused() {
    let scratch = Scratch::new();
    assert!(run_corpus("llama_bench", |data| checks::llama_bench(&scratch, data)) > 0);
}

#[test]
fn the_vllm_bench_corpus_imports_soundly_or_is_refused() {
    let scratch = Scratch::new();
    assert!(run_corpus("vllm_bench", |data| checks::vllm_bench(&scratch, data)) > 0);
}

/// Was a bug found by reading what the `plan` target exercised: the checks accepted any
/// `warmup`, `runs` and `max_tokens`, and the dry run then overflowed (a debug build panicked,
/// a release build printed a wrapped count) or tried to list billions of runs. The checks now
/// bound every count and the total of planned runs.
#[test]
fn counts_that_would_overflow_a_plan_are_refused_by_its_checks() {
    let scratch = Scratch::new();
    let path = scratch.path().join("plan.toml");
    let load = |head: &str, workload: &str| {
        std::fs::write(
            &path,
            format!(
                "{head}\n[[engines]]\nname = \"e\"\nurl = \"http://127.0.0.1:11434\"\n\n[[models]]\nname = \"m\"\n\n\
                 [[cells]]\nengine = \"e\"\nmodel = \"m\"\n\n[[workloads]]\nkind = \"sustained\"\n{workload}\n"
            ),
        )
        .unwrap();
        harness::plan::load(&path).map_err(|errors| errors.iter().map(|e| e.message.clone()).collect::<Vec<_>>().join("\n"))
    };
    // The three inputs that overflowed or exhausted memory before.
    let refused = load("", "runs = 3\nmax_tokens = 9223372036854775807").unwrap_err();
    assert!(refused.contains("a count is out of range"), "{refused}");
    let refused = load("", "runs = 1\nwarmup = 4294967295").unwrap_err();
    assert!(refused.contains("a count is out of range"), "{refused}");
    // Interleaved, every one of 10000 rounds warms up 10000 times.
    let refused = load("order = \"interleaved\"", "runs = 10000\nwarmup = 10000").unwrap_err();
    assert!(refused.contains("the plan makes 100010000 runs, more than 1000000"), "{refused}");
    // In order, the same counts are 20000 runs: accepted, and the dry run adds them up.
    let plan = load("", "runs = 10000\nwarmup = 10000\nmax_tokens = 1048576").unwrap();
    assert!(harness::plan::dry_run(&plan, 1.0).contains("1 cells, 20000 runs, 20971520000 tokens"));
}

/// Was a bug, found by the `runs_csv` target (export → import → export gave other bytes for a
/// decode time of about 1.1e60 ms): serde_json without its `float_roundtrip` feature read
/// some floats back one ulp off what it wrote, about one rate in eight. The workspace now
/// turns the feature on; this value is one that drifted.
#[test]
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
