//! A real mlx-lm server (MLX's Linux CPU backend, from `cargo xtask engine install mlx-lm`)
//! with the tiny locally made model, started and stopped by a plan. Skipped where the install
//! is missing, unless BENCHPASS_REQUIRE_REAL_ENGINES=1 (CI sets it).

use harness::pass::{read_pass, TokenCountSource};

use crate::support::*;

fn install() -> Option<std::path::PathBuf> {
    real_engine("mlx-lm", harness::installs::mlx_lm_dir(), &["venv/bin/mlx_lm.server", "models/tiny/model.safetensors"])
}

#[test]
fn a_real_mlx_lm_server_is_measured_despite_its_quirks() {
    let Some(dir) = install() else { return };
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let model = dir.join("models/tiny");
    let plan = tmp.path().join("mlx.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
[[engines]]
name = "mlx-lm"
preset = "mlx-lm"
start = ["{server}", "--model", "{{weights}}", "--host", "127.0.0.1", "--port", "{{port}}", "--prompt-cache-size", "0"]
port = {port}
version_command = ["{python}", "-c", "import mlx_lm; print(mlx_lm.__version__)"]
env = {{ HF_HUB_OFFLINE = "1", HF_HUB_CACHE = "{hf_cache}" }}

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
            server = dir.join("venv/bin/mlx_lm.server").display(),
            python = dir.join("venv/bin/python").display(),
            hf_cache = dir.join("hf-cache").display(),
            model = model.display(),
        ),
    )
    .unwrap();
    let out = tmp.path().join("pass");
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "plain"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = read_pass(&out).unwrap();
    assert_eq!(pass.runs.len(), 3);
    let cell = &pass.info.cells[0];
    assert_eq!(cell.engine.version, harness::installs::MLX_LM, "from the version command");
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
