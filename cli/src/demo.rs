//! `benchpass demo` (and `cargo xtask demo`): the whole chain on a machine with nothing
//! installed. The reference engine stands in for a real one, served in process on loopback;
//! the pass is shaped like the seed protocol (sustained runs, then a prompt-size matrix),
//! shortened so that it takes about half a minute, and ends with one replayed agent session
//! (docs/agent.md) so that the report shows its section.
//!
//! The reference engine runs with its prefix cache (`--prefix-cache`), as vLLM and SGLang do
//! by default, since the agent session is about what the cache is worth. The other steps see
//! it too: after the first sustained run the sustained prompt is cached (its TTFT is the base
//! latency, and the step is marked `prefix-cached`), and prompt-matrix prompts, cut from
//! different places in the corpus, share only their first few tokens.

use std::path::{Path, PathBuf};
use std::time::Duration;

use harness::pass::{Step, Workload};
use harness::progress::ProgressMode;
use harness::runner::{run_pass, RunOptions};
use sim::SimProfile;

/// Where a demo put its pass and its report, and the table it printed.
pub struct Demo {
    pub pass_dir: PathBuf,
    pub report_dir: PathBuf,
    pub summary: String,
}

/// A pass id for a demo: `demo-YYYYMMDD-HHMMSS` (UTC).
pub fn pass_id() -> String {
    let digits: String = harness::provenance::utc_now_rfc3339().chars().filter(char::is_ascii_digit).collect();
    format!("demo-{}-{}", &digits[..8], &digits[8..14])
}

/// Runs the demo pass `pass_id` against the in-process reference engine into `pass_dir` and
/// writes its report into `report_dir`.
pub fn run(pass_id: &str, pass_dir: &Path, report_dir: &Path, progress: ProgressMode) -> anyhow::Result<Demo> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;

    // A plausible laptop engine: 80 tok/s decode, 4000 tok/s prefill, ±3 % seeded noise, and a
    // prefix cache for the agent session.
    let profile = SimProfile { decode_tps: 80.0, prefill_tps: 4000.0, jitter: 0.03, seed: 1, timings: true, prefix_cache: true, ..SimProfile::default() };
    let listener = runtime.block_on(sim::bind(([127, 0, 0, 1], 0).into()))?;
    let url = format!("http://{}", listener.local_addr()?);
    runtime.spawn(sim::serve(profile.clone(), listener));
    eprintln!("reference engine at {url} (decode {} tok/s, prefill {} tok/s)", profile.decode_tps, profile.prefill_tps);

    let step = |workload, target, runs| Step { workload, target_prompt_tokens: target, max_tokens: 128, warmup: 0, runs, ignore_eos: false, duration_s: None, top_logprobs: None, concurrency: None };
    let steps = vec![
        Step { warmup: 1, ..step(Workload::Sustained, 0, 3) },
        step(Workload::PromptMatrix, 128, 3),
        step(Workload::PromptMatrix, 2048, 2),
        step(Workload::PromptMatrix, 8192, 1),
        // One session of the first shipped trace (11 turns up to about 8.6k tokens), each
        // reply capped at 8 tokens: about 4 seconds, most of them prefill.
        Step { max_tokens: 8, ..step(Workload::Agent, 0, 1) },
    ];
    let mut options = RunOptions::new(&url, &profile.model, steps);
    options.engine = "benchpass-sim".to_owned();
    options.request.first_token_timeout = Duration::from_secs(60);
    options.request.idle_timeout = Duration::from_secs(30);
    options.out = Some(pass_dir.to_path_buf());
    options.pass_id = Some(pass_id.to_owned());
    options.progress = progress;
    options.self_check = Some(crate::start_self_check_engine()?);
    let summary = runtime.block_on(run_pass(options))?;
    finish(&summary.dir, report_dir)
}

/// Writes the report of the pass in `pass_dir` into `report_dir`, with the summary table a
/// finished run prints.
pub fn finish(pass_dir: &Path, report_dir: &Path) -> anyhow::Result<Demo> {
    let pass = crate::load(pass_dir)?;
    crate::write_report(&pass, report_dir, report::ReportOptions::default())?;
    let steps = analysis::cells::summarize(&pass)?;
    Ok(Demo { pass_dir: pass_dir.to_path_buf(), report_dir: report_dir.to_path_buf(), summary: report::summary::render_markdown(&pass, &steps) })
}

impl Demo {
    /// The summary, then where everything is.
    pub fn print(&self) {
        println!("{}", self.summary);
        println!("pass:   {}", self.pass_dir.display());
        println!("report: {}", self.report_dir.join("report.html").display());
        println!("        {}", self.report_dir.join("report.md").display());
    }
}
