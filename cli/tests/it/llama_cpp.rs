//! A real llama.cpp server (built by `cargo xtask engine install llama-cpp`) with the small
//! seeded model, started and stopped by a plan. `#[ignore]`d: it runs when asked for
//! (`--include-ignored`, as CI does), and then a missing install fails it.

use harness::metrics::decode_tps;
use harness::pass::{TokenCountSource, Workload};

use crate::support::*;

fn install() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("BENCHPASS_LLAMA_CPP_DIR").map(Into::into).or_else(harness::installs::llama_cpp_dir);
    real_engine("llama-cpp", dir, &["bin/llama-server", "models/small.gguf"])
}

#[test]
#[ignore = "needs llama.cpp (cargo xtask engine install llama-cpp); run with --include-ignored"]
fn a_real_llama_cpp_server_is_measured_and_reconciled_with_its_own_timings() {
    let Some(dir) = install() else { return };
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let server = dir.join("bin/llama-server");
    // The small model: at ~150 tok/s a 64-token decode spans ~0.4 s, long enough for timing
    // noise on a loaded 2-core machine to stay far below the 5 % reconciliation margin (the
    // tiny model's ~1700 tok/s spans 37 ms).
    let model = dir.join("models/small.gguf");
    let port = free_port();
    let plan = tmp.path().join("llama.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "llama-cpp-small"

[[engines]]
name = "llama.cpp"
preset = "llama-cpp"
# One thread: with two on a 2-core machine, decode falls several-fold under load.
start = ["{server}", "-m", "{{weights}}", "--host", "127.0.0.1", "--port", "{{port}}", "-t", "1", "--metrics"]
port = {port}

[[models]]
name = "small"
weights = "{model}"

[[cells]]
engine = "llama.cpp"
model = "small"

[[workloads]]
kind = "sustained"
runs = 3
max_tokens = 64

[[workloads]]
kind = "prompt-matrix"
max_tokens = 64
targets = [{{ tokens = 128, runs = 2 }}, {{ tokens = 512, runs = 1 }}]
"#,
            server = server.display(),
            model = model.display(),
        ),
    )
    .unwrap();
    let pass = run_plan(&plan, &tmp.path().join("pass"));
    assert_eq!(pass.runs.len(), 6);

    let cell = &pass.info.cells[0];
    // `llama-server --version` names the commit the source package carries.
    assert!(cell.engine.version.contains("0c1e570"), "{:?}", cell.engine);
    assert_eq!(cell.engine.version_source, "llama-server --version", "the program by name, not its path");
    assert_eq!(cell.engine.sha256.as_deref(), Some(harness::provenance::hash_file(&server, &|_| {}).unwrap().as_str()));
    assert_eq!(cell.build.files[0].sha256, harness::provenance::hash_file(&model, &|_| {}).unwrap());
    // The preset turns llama.cpp's prompt cache off for every request.
    assert_eq!(cell.request_extra.as_ref().unwrap()["cache_prompt"], false);

    for run in &pass.runs {
        assert_eq!(run.error, None);
        assert_eq!(run.token_count_source, Some(TokenCountSource::Usage));
        // The model's EOS row is zeroed: greedy decoding always reaches the cap.
        assert_eq!((run.completion_tokens, run.finish_reason.as_deref()), (Some(64), Some("length")));
        let timings = run.timings.as_ref().expect("llama.cpp sends timings");
        // With the prompt cache off, the server processed every prompt token it counted.
        assert_eq!(run.prompt_tokens, timings["prompt_n"].as_u64());
        let ours = decode_tps(run.completion_tokens, run.decode_ms).unwrap();
        let theirs = timings["predicted_per_second"].as_f64().unwrap();
        assert!((ours / theirs - 1.0).abs() < 0.05, "benchpass {ours:.1} tok/s, server {theirs:.1}");
        assert!(run.server_peak_rss_bytes.is_some_and(|b| b > 100 << 20), "the model alone is 180 MB");
        // The engine's own counters (scraped from --metrics around the run) agree on the work.
        let counters = run.server_counters.as_ref().expect("llama.cpp's /metrics was scraped");
        assert_eq!(counters["llamacpp:tokens_predicted_total"], 64.0);
        assert_eq!(counters["llamacpp:prompt_tokens_total"], run.prompt_tokens.unwrap() as f64);
        if run.workload == Workload::PromptMatrix {
            // The chat template adds tokens to the cut prompt; the actual count is recorded.
            assert!(run.prompt_tokens.unwrap() >= run.target_prompt_tokens);
        }
    }
}
