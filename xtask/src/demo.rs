//! `cargo xtask demo`: the whole chain on a machine with nothing installed. The reference
//! engine stands in for a real one; the pass is shaped like the seed protocol (sustained runs,
//! then a prompt-size matrix), shortened so that it takes about half a minute.
//!
//! `cargo xtask demo --engine llama-cpp` does the same with the real llama.cpp server that
//! `cargo xtask engine install llama-cpp` built, on its tiny and small models, through a plan.

use std::path::PathBuf;

use anyhow::Context as _;
use std::time::Duration;

use harness::client::{Api, RequestConfig};
use harness::pass::{Step, Workload};
use harness::progress::ProgressMode;
use harness::runner::{run_pass, RunOptions};
use harness::sim::SimProfile;

const USAGE: &str = "usage: cargo xtask demo [--engine sim|llama-cpp] [--out DIR]";

pub fn run(args: &[&str]) -> anyhow::Result<()> {
    let mut out = None;
    let mut engine = "sim";
    let mut rest = args;
    while let [flag, value, tail @ ..] = rest {
        match *flag {
            "--out" => out = Some(PathBuf::from(value)),
            "--engine" => engine = value,
            _ => anyhow::bail!("{USAGE}"),
        }
        rest = tail;
    }
    anyhow::ensure!(rest.is_empty(), "{USAGE}");
    match engine {
        "sim" => sim_demo(out),
        "llama-cpp" => llama_cpp_demo(out),
        other => anyhow::bail!("no demo engine `{other}`: sim or llama-cpp\n{USAGE}"),
    }
}

fn stamp() -> String {
    let digits: String = harness::provenance::utc_now_rfc3339().chars().filter(char::is_ascii_digit).collect();
    format!("{}-{}", &digits[..8], &digits[8..14])
}

/// Writes the pass's report and prints the summary and where everything is.
fn finish(pass_dir: &std::path::Path, out: Option<&PathBuf>) -> anyhow::Result<()> {
    let pass = harness::pass::read_pass(pass_dir)?;
    let report_dir = out.map_or_else(|| crate::workspace_root().join("reports").join(&pass.info.pass_id), |dir| dir.join("report"));
    crate::reports::write_report(&pass, &report_dir)?;
    let steps = analysis::cells::summarize(&pass)?;
    println!("{}", analysis::summary::render_markdown(&pass, &steps));
    println!("pass:   {}", pass_dir.display());
    println!("report: {}", report_dir.join("report.html").display());
    println!("        {}", report_dir.join("report.md").display());
    Ok(())
}

fn llama_cpp_demo(out: Option<PathBuf>) -> anyhow::Result<()> {
    let dir = harness::installs::llama_cpp_dir().context("no cache folder: set BENCHPASS_CACHE_DIR")?;
    let server = dir.join("bin/llama-server");
    anyhow::ensure!(
        server.exists() && dir.join("models/small.gguf").exists(),
        "llama.cpp is not installed at {}: run `cargo xtask engine install llama-cpp` first (about 10 minutes, once)",
        dir.display()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let pass_id = format!("demo-llama-cpp-{}", stamp());
    let pass_dir = out.as_ref().map_or_else(|| crate::workspace_root().join("data/passes").join(&pass_id), |d| d.join("pass"));
    let plan_text = format!(
        r#"# Written by `cargo xtask demo --engine llama-cpp`.
name = "demo-llama-cpp"

[[engines]]
name = "llama.cpp"
preset = "llama-cpp"
# One thread: with two on a 2-core machine, decode falls several-fold under load.
start = ["{server}", "-m", "{{weights}}", "--host", "127.0.0.1", "--port", "{{port}}", "-t", "1", "--metrics"]
port = {port}

[[models]]
name = "tiny"
family = "benchpass-tiny"
weights = "{tiny}"

[[models]]
name = "small"
family = "benchpass-small"
weights = "{small}"

[[cells]]
engine = "llama.cpp"
model = "tiny"

[[cells]]
engine = "llama.cpp"
model = "small"

[[workloads]]
kind = "sustained"
runs = 3
max_tokens = 128

[[workloads]]
kind = "prompt-matrix"
max_tokens = 128
targets = [{{ tokens = 128, runs = 3 }}, {{ tokens = 2048, runs = 2 }}]
"#,
        server = server.display(),
        tiny = dir.join("models/tiny.gguf").display(),
        small = dir.join("models/small.gguf").display(),
    );
    let scratch = std::env::temp_dir().join(format!("benchpass-{pass_id}"));
    std::fs::create_dir_all(&scratch)?;
    let plan_path = scratch.join("demo-llama-cpp.toml");
    std::fs::write(&plan_path, plan_text)?;
    let plan = harness::plan::load(&plan_path).map_err(|errors| {
        anyhow::anyhow!("{}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))
    })?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let options = harness::plan::PlanRunOptions {
        out: Some(pass_dir.clone()),
        pass_id: Some(pass_id),
        gap_scale: 0.0,
        progress: ProgressMode::Auto,
        hash_cache: None,
        api_key_env: None,
        resume: None,
    };
    runtime.block_on(harness::plan::run_plan(&plan, options))?;
    let _ = std::fs::remove_dir_all(&scratch);
    finish(&pass_dir, out.as_ref())
}

fn sim_demo(out: Option<PathBuf>) -> anyhow::Result<()> {
    let root = crate::workspace_root();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;

    // A plausible laptop engine: 80 tok/s decode, 4000 tok/s prefill, ±3 % seeded noise.
    let profile = SimProfile { decode_tps: 80.0, prefill_tps: 4000.0, jitter: 0.03, seed: 1, timings: true, ..SimProfile::default() };
    let listener = runtime.block_on(harness::sim::bind(([127, 0, 0, 1], 0).into()))?;
    let url = format!("http://{}", listener.local_addr()?);
    runtime.spawn(harness::sim::serve(profile.clone(), listener));
    eprintln!("reference engine at {url} (decode {} tok/s, prefill {} tok/s)", profile.decode_tps, profile.prefill_tps);

    let pass_id = format!("demo-{}", stamp());
    let pass_dir = out.as_ref().map_or_else(|| root.join("data/passes").join(&pass_id), |dir| dir.join("pass"));
    let step = |workload, target, runs| Step { workload, target_prompt_tokens: target, max_tokens: 128, warmup: 0, runs, ignore_eos: false };
    let options = RunOptions {
        url,
        engine: "benchpass-sim".to_owned(),
        engine_version: None,
        engine_path: None,
        weights: None,
        hash_cache: None,
        lane: "text".to_owned(),
        family: None,
        steps: vec![
            Step { warmup: 1, ..step(Workload::Sustained, 0, 3) },
            step(Workload::PromptMatrix, 128, 3),
            step(Workload::PromptMatrix, 2048, 2),
            step(Workload::PromptMatrix, 8192, 1),
        ],
        concurrency: 1,
        api_key_env: None,
        request: RequestConfig {
            api: Api::Chat,
            model: profile.model.clone(),
            temperature: 0.0,
            seed: None,
            ignore_eos: false,
            min_tokens: None,
            extra: None,
            first_token_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(30),
        },
        out: Some(pass_dir.clone()),
        pass_id: Some(pass_id.clone()),
        progress: ProgressMode::Auto,
    };
    let summary = runtime.block_on(run_pass(options))?;

    finish(&summary.dir, out.as_ref())
}
