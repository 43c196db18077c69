//! `cargo xtask demo`: the whole chain on a machine with nothing installed. The reference
//! engine stands in for a real one; the pass is shaped like the seed protocol (sustained runs,
//! then a prompt-size matrix), shortened so that it takes about half a minute.

use std::path::PathBuf;
use std::time::Duration;

use harness::client::{Api, RequestConfig};
use harness::pass::{Step, Workload};
use harness::progress::ProgressMode;
use harness::runner::{run_pass, RunOptions};
use harness::sim::SimProfile;

pub fn run(args: &[&str]) -> anyhow::Result<()> {
    let out = match args {
        [] => None,
        ["--out", dir] => Some(PathBuf::from(dir)),
        _ => anyhow::bail!("usage: cargo xtask demo [--out DIR]"),
    };
    let root = crate::workspace_root();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;

    // A plausible laptop engine: 80 tok/s decode, 4000 tok/s prefill, ±3 % seeded noise.
    let profile = SimProfile { decode_tps: 80.0, prefill_tps: 4000.0, jitter: 0.03, seed: 1, timings: true, ..SimProfile::default() };
    let listener = runtime.block_on(harness::sim::bind(([127, 0, 0, 1], 0).into()))?;
    let url = format!("http://{}", listener.local_addr()?);
    runtime.spawn(harness::sim::serve(profile.clone(), listener));
    eprintln!("reference engine at {url} (decode {} tok/s, prefill {} tok/s)", profile.decode_tps, profile.prefill_tps);

    let stamp: String = harness::provenance::utc_now_rfc3339().chars().filter(char::is_ascii_digit).collect();
    let pass_id = format!("demo-{}-{}", &stamp[..8], &stamp[8..14]);
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

    let pass = harness::pass::read_pass(&summary.dir)?;
    let report_dir = out.map_or_else(|| root.join("reports").join(&pass.info.pass_id), |dir| dir.join("report"));
    crate::reports::write_report(&pass, &report_dir)?;
    let steps = analysis::cells::summarize(&pass)?;
    println!("{}", analysis::summary::render_markdown(&pass, &steps));
    println!("pass:   {}", summary.dir.display());
    println!("report: {}", report_dir.join("report.html").display());
    println!("        {}", report_dir.join("report.md").display());
    Ok(())
}
