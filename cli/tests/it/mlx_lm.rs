//! A real mlx-lm server (MLX's Linux CPU backend, from `cargo xtask engine install mlx-lm`)
//! with the tiny locally made model, started and stopped by a plan. `#[ignore]`d: they run when
//! asked for (`--include-ignored`, as CI does), and then a missing install fails them.

use harness::pass::TokenCountSource;

use crate::support::*;

fn install() -> Option<std::path::PathBuf> {
    real_engine("mlx-lm", harness::installs::mlx_lm_dir(), &["venv/bin/mlx_lm.server", "models/tiny/model.safetensors"])
}

/// The `[[engines]]` entry of the installed mlx-lm server on a free port: prompt cache off,
/// offline, and no `version_command`: the preset's `mlx_lm --version` is found beside
/// `mlx_lm.server` and run.
fn engine_section(dir: &std::path::Path) -> String {
    let port = free_port();
    format!(
        r#"[[engines]]
name = "mlx-lm"
preset = "mlx-lm"
start = ["{server}", "--model", "{{weights}}", "--host", "127.0.0.1", "--port", "{{port}}", "--prompt-cache-size", "0"]
port = {port}
env = {{ HF_HUB_OFFLINE = "1", HF_HUB_CACHE = "{hf_cache}" }}
"#,
        server = dir.join("venv/bin/mlx_lm.server").display(),
        hf_cache = dir.join("hf-cache").display(),
    )
}

#[test]
#[ignore = "needs mlx-lm (cargo xtask engine install mlx-lm); run with --include-ignored"]
fn a_real_mlx_lm_server_is_measured_despite_its_quirks() {
    let Some(dir) = install() else { return };
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let model = dir.join("models/tiny");
    let plan = tmp.path().join("mlx.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
{engine}
[[models]]
name = "tiny"
# mlx-lm serves the --model model as `default_model`; any other name it tries to fetch.
id = "default_model"
weights = "{model}"

[[cells]]
engine = "mlx-lm"
model = "tiny"

[[workloads]]
kind = "sustained"
runs = 2
max_tokens = 48

[[workloads]]
kind = "prompt-matrix"
max_tokens = 32
targets = [{{ tokens = 256, runs = 1 }}]
"#,
            engine = engine_section(&dir),
            model = model.display(),
        ),
    )
    .unwrap();
    let pass = run_plan(&plan, &tmp.path().join("pass"));
    assert_eq!(pass.runs.len(), 3);
    let cell = &pass.info.cells[0];
    assert_eq!(cell.engine.version, harness::installs::MLX_LM, "from the preset's program");
    assert_eq!(cell.engine.version_source, "mlx_lm --version");
    assert_eq!(cell.build.files.len(), 6, "config, weights and four tokenizer files hashed");
    for run in &pass.runs {
        assert_eq!(run.error, None, "{:?}", run.error);
        // Usage arrives in a chunk labelled `chat.completion` with no choices: still read.
        assert_eq!(run.token_count_source, Some(TokenCountSource::Usage));
        assert_eq!((run.completion_tokens, run.finish_reason.as_deref()), (Some(run.max_tokens), Some("length")));
        // Every chunk repeats `role`; the finish chunk carries only the role: not a token.
        let token_events = run.events.iter().filter(|e| e.carries_tokens()).count() as u64;
        assert_eq!(token_events, run.max_tokens, "one event per token on this model");
        assert!(run.ttft_ms.is_some() && run.decode_ms.is_some());
    }
}

/// The tiny model with its EOS row made large, so that greedy decoding stops within a few
/// tokens, made in `dir` with the install's own Python.
fn eos_prone_model(install: &std::path::Path, dir: &std::path::Path) -> std::path::PathBuf {
    let model = dir.join("eos-prone");
    std::fs::create_dir_all(&model).unwrap();
    for entry in std::fs::read_dir(install.join("models/tiny")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), model.join(entry.file_name())).unwrap();
    }
    let script = r#"
import json, sys
import numpy as np
from safetensors.numpy import load_file, save_file
path = sys.argv[1]
t = load_file(path + "/model.safetensors")
eos = json.load(open(path + "/config.json"))["eos_token_id"]
w = t["lm_head.weight"]
w[eos] = np.random.default_rng(7).standard_normal(w.shape[1]).astype(np.float32) * 100.0
save_file(t, path + "/model.safetensors", metadata={"format": "pt"})
"#;
    let status = std::process::Command::new(install.join("venv/bin/python")).args(["-c", script]).arg(&model).status().unwrap();
    assert!(status.success());
    model
}

#[test]
#[ignore = "needs mlx-lm (cargo xtask engine install mlx-lm); run with --include-ignored"]
fn mlx_lm_runs_past_eos_through_logit_bias_where_a_step_ignores_eos() {
    let Some(dir) = install() else { return };
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let model = eos_prone_model(&dir, tmp.path());
    let plan = tmp.path().join("mlx-eos.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
{engine}
[[models]]
name = "eos-prone"
id = "default_model"
weights = "{model}"

[[cells]]
engine = "mlx-lm"
model = "eos-prone"

[[workloads]]
kind = "sustained"
runs = 1
max_tokens = 48

[[workloads]]
kind = "pp-tg"
ignore_eos = true
max_tokens = 48
targets = [{{ tokens = 64, runs = 1 }}]
"#,
            engine = engine_section(&dir),
            model = model.display(),
        ),
    )
    .unwrap();
    let pass = run_plan(&plan, &tmp.path().join("pass"));
    // The model's EOS id (1, from config.json) is pushed out of reach, and the pass says so.
    assert_eq!(pass.info.cells[0].ignore_eos_logit_bias, Some(serde_json::json!({"1": -1.0e9})));
    let (sustained, pptg) = (&pass.runs[0], &pass.runs[1]);
    // Without ignore_eos the model stops within a few tokens: a short stop, as it should be.
    assert_eq!(sustained.finish_reason.as_deref(), Some("stop"));
    assert!(sustained.completion_tokens.unwrap() < 48, "{:?}", sustained.completion_tokens);
    // With it, mlx-lm (which reads no ignore_eos) runs to the cap.
    assert_eq!((pptg.completion_tokens, pptg.finish_reason.as_deref()), (Some(48), Some("length")));
}
