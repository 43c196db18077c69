//! Quality against a real engine: llama.cpp serving one seeded random model as f16 and as
//! q8_0 (both made by `cargo xtask engine install llama-cpp` with `llama-quantize` from the
//! same source package), over the whole quality workload. The q8_0 must differ from the f16
//! (KL above 0, exact match below 100 %); the f16 in a second pass, a fresh server, must agree
//! with the first (KL below 1e-6, exact match 100 %). `#[ignore]`d: it runs when
//! asked for (`--include-ignored`, as CI does), and then a missing install fails it.

use harness::pass::Workload;

use crate::support::*;

fn install() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("BENCHPASS_LLAMA_CPP_DIR").map(Into::into).or_else(harness::installs::llama_cpp_dir);
    real_engine("llama-cpp", dir, &["bin/llama-server", "models/tiny-f16.gguf", "models/tiny-q8_0.gguf"])
}

/// A plan of one quality workload (every prompt once, the repeated ten twice) over `models`.
fn plan(dir: &std::path::Path, name: &str, models: &[&str]) -> std::path::PathBuf {
    let server = dir.join("bin/llama-server");
    let port = free_port();
    let mut text = format!(
        r#"
name = "{name}"

[[engines]]
name = "llama.cpp"
preset = "llama-cpp"
start = ["{server}", "-m", "{{weights}}", "--host", "127.0.0.1", "--port", "{{port}}", "-t", "1"]
port = {port}

[[workloads]]
kind = "quality"
runs = 2
"#,
        server = server.display(),
    );
    for model in models {
        text.push_str(&format!(
            "\n[[models]]\nname = \"{model}\"\nweights = \"{}\"\n\n[[cells]]\nengine = \"llama.cpp\"\nmodel = \"{model}\"\n",
            dir.join(format!("models/{model}.gguf")).display()
        ));
    }
    let path = std::env::temp_dir().join(format!("benchpass-{name}-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
#[ignore = "needs llama.cpp (cargo xtask engine install llama-cpp); run with --include-ignored"]
fn q8_0_differs_from_f16_and_f16_agrees_with_itself_over_the_quality_prompts() {
    let Some(dir) = install() else { return };
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let n_prompts = harness::workloads::quality::prompts().unwrap().len();
    let n_repeated = harness::workloads::quality::prompts().unwrap().iter().filter(|p| p.repeat).count();

    let both = plan(&dir, "quality-f16-q8", &["tiny-f16", "tiny-q8_0"]);
    let first = run_plan(&both, &tmp.path().join("first"));
    let again = plan(&dir, "quality-f16-again", &["tiny-f16"]);
    let second = run_plan(&again, &tmp.path().join("second"));
    let _ = std::fs::remove_file(both);
    let _ = std::fs::remove_file(again);

    for pass in [&first, &second] {
        for run in &pass.runs {
            assert_eq!((run.workload, &run.error), (Workload::Quality, &None));
            assert_eq!(run.top_logprobs, Some(harness::workloads::quality::DEFAULT_TOP_LOGPROBS));
            // Every generated token came with its logprob and 20 alternatives.
            let tokens: Vec<_> = run.events.iter().flat_map(|e| &e.logprobs).collect();
            assert_eq!(tokens.len() as u64, run.completion_tokens.unwrap(), "{:?}", run.prompt_id);
            assert!(tokens.iter().all(|t| t.top.len() == 20));
        }
    }
    assert_eq!(first.runs.len(), 2 * (n_prompts + n_repeated));

    let f16 = first.info.cells.iter().find(|c| c.model == "tiny-f16").unwrap();
    let rows = analysis::quality::compare(&first, f16, &[first.clone(), second.clone()]);
    let row = |pass: &str, model: &str| rows.iter().find(|r| r.pass_id == pass && r.model == model).unwrap();

    let q8 = row(&first.info.pass_id, "tiny-q8_0");
    assert_eq!(q8.prompts, n_prompts);
    assert!(q8.kl_mean.unwrap() > 0.0, "{q8:?}");
    assert!(q8.exact_match.unwrap() < 1.0, "{q8:?}");
    assert!(q8.positions >= n_prompts, "at least the first position of every prompt is compared");

    let f16_again = row(&second.info.pass_id, "tiny-f16");
    assert_eq!(f16_again.prompts, n_prompts);
    assert_eq!(f16_again.exact_match, Some(1.0), "{f16_again:?}");
    assert!(f16_again.kl_max.unwrap() < 1e-6, "{f16_again:?}");
    // Identical outputs: every position of every prompt is compared.
    let n_tokens: u64 = second.runs.iter().filter(|r| r.rep == 0).map(|r| r.completion_tokens.unwrap()).sum();
    assert_eq!(f16_again.positions as u64, n_tokens);
    // One engine, one server build: greedy decoding agrees with itself run to run.
    assert_eq!(f16_again.self_agreement, Some(1.0));
    assert!(!f16_again.flags.contains(&analysis::quality::QualityFlag::Nondeterministic));
}
