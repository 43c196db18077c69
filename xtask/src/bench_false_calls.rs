//! `cargo xtask bench false-calls [--pairs N]`: how often a diff calls an unchanged engine
//! `faster` or `slower`, and how often a 3-run band covers the true decode rate, measured on
//! enough repeated passes for a 95 % interval (docs/statistics.md reports the result).
//!
//! Every pass is a real 3-run sustained pass against the reference engine over loopback HTTP,
//! with seeded jitter: each request decodes at 1000 × (1 + 0.05·U) tok/s, U uniform on [−1, 1],
//! so the true median rate is 1000. Passes are diffed in consecutive pairs. Beside the measure,
//! the same noise model without HTTP (the rates drawn directly and judged by the band and the
//! exact test) shows how much the client's own timing adds. Too slow for the test suite (about
//! 0.2 s a pass): the suite's `coverage` test runs 100 passes.

use std::time::{Duration, Instant};

use analysis::cells::{summarize, MetricKind};
use analysis::diff::{diff, Verdict};
use anyhow::Context as _;
use harness::pass::{read_pass, Step, Workload};
use harness::runner::{run_pass, RunOptions};
use sim::SimProfile;

const TRUE_RATE: f64 = 1000.0;
const JITTER: f64 = 0.05;
const RUNS: u32 = 3;
const SEED: u64 = 20261201;

pub fn run(args: &[&str]) -> anyhow::Result<()> {
    let pairs: usize = match args {
        [] => 2000,
        ["--pairs", n] => n.parse().with_context(|| format!("--pairs {n}: a whole number of pairs"))?,
        _ => anyhow::bail!("usage: cargo xtask bench false-calls [--pairs N]"),
    };
    anyhow::ensure!(pairs > 0, "--pairs must be at least 1");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let profile = SimProfile { decode_tps: TRUE_RATE, jitter: JITTER, seed: SEED, prefill_tps: 1e5, ..SimProfile::default() };
    let listener = runtime.block_on(sim::bind(([127, 0, 0, 1], 0).into())).context("binding the reference engine")?;
    let url = format!("http://{}", listener.local_addr()?);
    runtime.spawn(sim::serve(profile, listener));

    let scratch = crate::workspace_root().join("target/bench-false-calls");
    let _ = std::fs::remove_dir_all(&scratch);
    let started = Instant::now();
    let (mut covered, mut false_calls, mut test_alone) = (0usize, 0usize, 0usize);
    for pair in 0..pairs {
        let mut sides = Vec::with_capacity(2);
        for side in 0..2 {
            let id = format!("p{pair}-{side}");
            let dir = scratch.join(&id);
            runtime.block_on(run_pass(options(&url, &dir, &id))).with_context(|| format!("pass {id}"))?;
            let pass = read_pass(&dir).with_context(|| format!("reading pass {id}"))?;
            let steps = summarize(&pass)?;
            let band = steps.first().and_then(|s| s.decode.as_ref()).context("a sustained decode rate")?.band;
            covered += usize::from(band.low <= TRUE_RATE && TRUE_RATE <= band.high);
            std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
            sides.push((pass, steps));
        }
        let d = diff(&sides[0].0, &sides[0].1, &sides[1].0, &sides[1].1);
        let decode = d.rows.iter().find(|r| r.metric == MetricKind::DecodeTps).context("a decode row")?;
        false_calls += usize::from(matches!(decode.verdict, Verdict::Faster | Verdict::Slower));
        test_alone += usize::from(decode.p_value.zip(decode.alpha).is_some_and(|(p, alpha)| p <= alpha + 1e-12));
        if (pair + 1) % 100 == 0 {
            eprintln!("{} of {pairs} pairs, {:.0} s", pair + 1, started.elapsed().as_secs_f64());
        }
    }
    let passes = 2 * pairs;
    let model = model(200_000);

    println!("Reference engine: 3-run sustained passes, decode 1000 × (1 + 0.05·U) tok/s per request, U uniform on [−1, 1], seed {SEED}, over loopback HTTP");
    println!();
    println!("| measure | count | rate | 95 % interval (Wilson) | nominal |");
    println!("|---|---:|---:|---:|---:|");
    println!("| band covers the true rate | {covered} / {passes} | {} | {} | ≥ 75 % |", pct(covered, passes), wilson(covered, passes));
    println!("| unchanged pairs called faster/slower | {false_calls} / {pairs} | {} | {} | ≤ 10 % |", pct(false_calls, pairs), wilson(false_calls, pairs));
    println!("| … by the exact test alone (p ≤ α) | {test_alone} / {pairs} | {} | {} | 10 % |", pct(test_alone, pairs), wilson(test_alone, pairs));
    println!(
        "| the same noise model without HTTP: false calls | {} / {} | {} | {} | |",
        model.0,
        model.1,
        pct(model.0, model.1),
        wilson(model.0, model.1)
    );
    println!();
    println!("{passes} passes in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn options(url: &str, dir: &std::path::Path, pass_id: &str) -> RunOptions {
    // 51 tokens at ~1000 tok/s: 50 ms of decode a run, as in the suite's coverage test.
    let step = Step { workload: Workload::Sustained, target_prompt_tokens: 0, max_tokens: 51, warmup: 0, runs: RUNS, ignore_eos: false, duration_s: None, top_logprobs: None, concurrency: None };
    let mut options = RunOptions::new(url, "sim-model", vec![step]);
    options.engine = "sim".to_owned();
    options.engine_version = Some("1".to_owned());
    options.request.first_token_timeout = Duration::from_secs(10);
    options.request.idle_timeout = Duration::from_secs(10);
    options.out = Some(dir.to_owned());
    options.pass_id = Some(pass_id.to_owned());
    options
}

/// The noise model alone: 3 rates a side drawn as the reference engine draws them, judged as a
/// diff judges an unchanged cell (control: its own bands, no drift): the exact test at α = 0.10
/// (3 vs 3 is `low-n`) and the change beyond the wider side of either band. Returns (calls, pairs).
fn model(pairs: usize) -> (usize, usize) {
    let mut state = 0x2545F4914F6CDD1Du64;
    let mut uniform = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut calls = 0;
    for _ in 0..pairs {
        let mut side = || {
            let values: Vec<f64> = (0..RUNS).map(|_| TRUE_RATE * (1.0 + JITTER * (2.0 * uniform() - 1.0))).collect();
            let median = analysis::summary::median(&values).expect("three values");
            let band = analysis::band::band(&values, median, 0.0);
            (values, median, band.half_width)
        };
        let ((a, ma, ha), (b, mb, hb)) = (side(), side());
        let p = analysis::ranksum::exact_two_sided_p(&a, &b).unwrap_or(1.0);
        let change = analysis::diff::log_change(ma, mb).unwrap_or(0.0);
        calls += usize::from(p <= 0.10 + 1e-12 && change.abs() > ha.max(hb).ln_1p());
    }
    (calls, pairs)
}

fn pct(x: usize, n: usize) -> String {
    format!("{:.2} %", 100.0 * x as f64 / n as f64)
}

/// The Wilson score interval at 95 % (E. B. Wilson, *JASA* 22 (1927) 209–212): unlike p̂ ± 1.96·se
/// it stays inside [0, 1] and keeps its coverage at rates near 0.
fn wilson(x: usize, n: usize) -> String {
    let (z, n_f) = (1.959964, n as f64);
    let p = x as f64 / n_f;
    let denominator = 1.0 + z * z / n_f;
    let centre = (p + z * z / (2.0 * n_f)) / denominator;
    let half = z / denominator * (p * (1.0 - p) / n_f + z * z / (4.0 * n_f * n_f)).sqrt();
    format!("{:.2} – {:.2} %", 100.0 * (centre - half), 100.0 * (centre + half))
}
