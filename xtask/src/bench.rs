//! `cargo xtask bench client`: what measuring costs and how exact it is. The release
//! `benchpass` binary streams from the reference engine (a separate process) at 1, 32 and 256
//! concurrent streams; the client's own CPU time per streamed token comes from the pass
//! (`harness_cpu_seconds`), its timing error from comparing each run with when the engine
//! actually sent its tokens (the sim's `timings` object), and the engine's own lateness
//! against its schedule beside it.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::Context as _;
use harness::metrics::decode_tps;

struct Setting {
    streams: u32,
    runs: u32,
}

pub fn client(args: &[&str]) -> anyhow::Result<()> {
    let quick = match args {
        [] => false,
        ["--quick"] => true,
        _ => anyhow::bail!("usage: cargo xtask bench client [--quick]"),
    };
    let settings: &[Setting] = if quick {
        &[Setting { streams: 1, runs: 3 }, Setting { streams: 8, runs: 8 }]
    } else {
        &[Setting { streams: 1, runs: 10 }, Setting { streams: 32, runs: 64 }, Setting { streams: 256, runs: 256 }]
    };
    let root = crate::workspace_root();
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "-p", "benchpass", "--bin", "benchpass"])
        .current_dir(&root)
        .status()?;
    anyhow::ensure!(status.success(), "building the release benchpass failed");
    let binary = root.join("target/release/benchpass");
    let scratch = root.join("target/bench-client");
    let _ = std::fs::remove_dir_all(&scratch);

    println!("| streams | runs | tokens | client CPU µs/token | decode error median / max | TTFT error median / max | sim first token late median / max | sim timer |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---|");
    for setting in settings {
        // Many streams run on the timer wheel alone: its 1 ms ticks send the tokens of many
        // streams together, as a batching engine does at each decode step. Each stream on a
        // precise timer of its own would cost the client ~60 % more CPU per token at 256
        // streams (one wake-up per event instead of per batch), measuring a load no real
        // engine makes.
        let precise = setting.streams == 1;
        let sim = SimProcess::start(&binary, precise)?;
        let out = scratch.join(format!("streams-{}", setting.streams));
        let status = Command::new(&binary)
            .args(["run", "--url", &sim.url, "--model", "sim-model", "--engine", "sim", "--progress", "quiet"])
            .args(["--max-tokens", "128", "--runs", &setting.runs.to_string()])
            .args(["--concurrency", &setting.streams.to_string(), "--out", out.to_str().unwrap()])
            .output()?;
        drop(sim);
        anyhow::ensure!(
            status.status.success(),
            "benchpass run failed at {} streams: {}",
            setting.streams,
            String::from_utf8_lossy(&status.stderr)
        );
        let row = measure(&out)?;
        println!(
            "| {} | {} | {} | {:.1} | {:.3}% / {:.3}% | {:.2} ms / {:.2} ms | {:.2} ms / {:.2} ms | {} |",
            setting.streams,
            setting.runs,
            row.tokens,
            row.cpu_us_per_token,
            row.decode_error_median * 100.0,
            row.decode_error_max * 100.0,
            row.ttft_error_median_ms,
            row.ttft_error_max_ms,
            row.engine_late_median_ms,
            row.engine_late_max_ms,
            if precise { "precise" } else { "coarse" },
        );
    }
    println!("\npasses kept under {}", scratch.display());
    Ok(())
}

struct Row {
    tokens: u64,
    cpu_us_per_token: f64,
    decode_error_median: f64,
    decode_error_max: f64,
    ttft_error_median_ms: f64,
    ttft_error_max_ms: f64,
    engine_late_median_ms: f64,
    engine_late_max_ms: f64,
}

fn measure(dir: &Path) -> anyhow::Result<Row> {
    let pass = harness::pass::read_pass(dir)?;
    let mut decode_errors = Vec::new();
    let mut ttft_errors = Vec::new();
    let mut engine_late = Vec::new();
    let mut tokens = 0;
    for run in &pass.runs {
        anyhow::ensure!(run.error.is_none(), "a run failed: {:?}", run.error);
        let timings = run.timings.as_ref().context("the sim sends timings")?;
        let at = |key: &str| timings[key].as_f64().with_context(|| format!("{key} in the sim's timings"));
        // The client is held to when the sim actually sent its tokens; the sim's own lateness
        // against its schedule is a column of its own.
        let (first, last) = (at("sim_sent_first_token_ms")?, at("sim_sent_last_token_ms")?);
        let n = run.completion_tokens.context("a token count")?;
        let truth = (n - 1) as f64 / ((last - first) / 1e3);
        let rate = decode_tps(run.completion_tokens, run.decode_ms).context("a decode rate")?;
        decode_errors.push((rate - truth).abs() / truth);
        ttft_errors.push((run.ttft_ms.context("a ttft")? - first).abs());
        engine_late.push(first - at("prompt_ms")?);
        tokens += run.completion_tokens.unwrap_or(0);
    }
    let cpu = pass.info.harness_cpu_seconds.context("CPU time is read from /proc on Linux only")?;
    let median = |v: &[f64]| analysis::summary::median(v).unwrap_or(f64::NAN);
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    Ok(Row {
        tokens,
        cpu_us_per_token: cpu * 1e6 / tokens as f64,
        decode_error_median: median(&decode_errors),
        decode_error_max: max(&decode_errors),
        ttft_error_median_ms: median(&ttft_errors),
        ttft_error_max_ms: max(&ttft_errors),
        engine_late_median_ms: median(&engine_late),
        engine_late_max_ms: max(&engine_late),
    })
}

struct SimProcess {
    child: Child,
    url: String,
}

impl SimProcess {
    fn start(binary: &PathBuf, precise: bool) -> anyhow::Result<SimProcess> {
        let mut command = Command::new(binary);
        command.args(["sim", "--port", "0", "--decode-tps", "50", "--timings"]);
        if !precise {
            command.arg("--coarse-timer");
        }
        let mut child = command.stdout(Stdio::piped()).spawn()?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().context("sim stdout")?).read_line(&mut line)?;
        let url = line.trim().strip_prefix("benchpass sim listening on ").context("the sim's first line")?.to_owned();
        Ok(SimProcess { child, url })
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
