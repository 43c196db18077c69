//! `cargo xtask bench leaderboard`: a synthetic corpus of passes (10,000 by default, 126 runs
//! each: about 1.3 million runs) read and summarised into one leaderboard CSV, each way in a
//! process of its own, timed, with that process's peak memory:
//!
//! - `previous`: every pass read whole into memory, then summarised and written at once (the
//!   path before `leaderboard.cache`; `--passes` above 20,000 skips it: it needs about 1.8 GiB
//!   per 10,000 passes);
//! - `cold`: `benchpass leaderboard` with no cache in any pass (the first read, which works
//!   every row out from the raw runs, a slice of passes at a time, and writes the caches);
//! - `warm`: the same with every cache in place;
//! - `parquet`: `benchpass leaderboard --parquet` through the same caches (its row count must be
//!   the CSV's).
//!
//! The claim to check: 100,000 passes (12.6 M runs) at most 10 s and 2 GiB on a 2-core machine
//! (warm). The three CSVs must be byte for byte the same; the run fails otherwise.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::Context as _;
use harness::pass::*;

const ENGINES: [&str; 6] = ["llama.cpp", "vllm", "mlx-lm", "ollama", "lm-studio", "omlx"];

/// The Parquet export's folder in the corpus, the bench's own scratch.
const EXPORT: &str = "leaderboard-parquet";

/// Above this many passes the previous path is not run (its memory grows with the corpus).
const MAX_PREVIOUS: usize = 20_000;

pub fn run(args: &[&str]) -> anyhow::Result<()> {
    if let ["--measure", mode, corpus, n] = args {
        return measure(mode, Path::new(corpus), n.parse()?);
    }
    if crate::rerun_in_release(&["bench", "leaderboard"], args)? {
        return Ok(());
    }
    let n_passes: usize = match args {
        [] => 10_000,
        ["--passes", n] => n.parse().context("--passes takes a number")?,
        _ => anyhow::bail!("usage: cargo xtask bench leaderboard [--passes N]"),
    };
    let corpus = crate::workspace_root().join("target/bench-leaderboard");
    let dirs = generate(&corpus, n_passes)?;
    let n_runs = n_passes * 126;
    let mut modes = vec!["cold", "warm", "parquet"];
    if n_passes <= MAX_PREVIOUS {
        modes.insert(0, "previous");
    }
    for dir in &dirs {
        let _ = std::fs::remove_file(dir.join(harness::pass::leaderboard_cache::CACHE_FILE));
    }
    println!("| path | passes | runs | rows | time | peak memory |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut first: Option<Vec<u8>> = None;
    for mode in modes {
        let exe = std::env::current_exe()?;
        let output = Command::new(exe).args(["bench", "leaderboard", "--measure", mode]).arg(&corpus).arg(n_passes.to_string()).output()?;
        anyhow::ensure!(output.status.success(), "the {mode} read failed: {}", String::from_utf8_lossy(&output.stderr));
        let line = String::from_utf8(output.stdout)?;
        let [seconds, kib]: [f64; 2] = line.split_whitespace().map(|w| w.parse().unwrap_or(f64::NAN)).collect::<Vec<_>>().try_into().map_err(|_| anyhow::anyhow!("{mode}: {line}"))?;
        if mode == "parquet" {
            let rows: usize = std::fs::read_to_string(corpus.join(format!("{EXPORT}.rows")))?.trim().parse()?;
            let csv_rows = first.as_ref().map(|csv| csv.iter().filter(|b| **b == b'\n').count() - 1);
            anyhow::ensure!(Some(rows) == csv_rows, "the Parquet export holds {rows} rows, the CSV {csv_rows:?}");
            println!("| {mode} | {n_passes} | {n_runs} | {rows} | {seconds:.2} s | {:.0} MiB |", kib / 1024.0);
            let _ = std::fs::remove_dir_all(corpus.join(EXPORT));
            continue;
        }
        let csv = std::fs::read(corpus.join(format!("leaderboard-{mode}.csv")))?;
        let rows = csv.iter().filter(|b| **b == b'\n').count() - 1;
        println!("| {mode} | {n_passes} | {n_runs} | {rows} | {seconds:.2} s | {:.0} MiB |", kib / 1024.0);
        match &first {
            None => first = Some(csv),
            Some(first) => anyhow::ensure!(*first == csv, "the {mode} CSV differs from the first"),
        }
        let _ = std::fs::remove_file(corpus.join(format!("leaderboard-{mode}.csv")));
    }
    println!("\nthe CSVs are byte for byte the same; corpus: {}", corpus.display());
    Ok(())
}

/// One way of reading, in this process: prints its seconds and peak memory (KiB).
fn measure(mode: &str, corpus: &Path, n_passes: usize) -> anyhow::Result<()> {
    let dirs: Vec<PathBuf> = (0..n_passes).map(|i| corpus.join(format!("pass-{i:06}"))).collect();
    let out = corpus.join(format!("leaderboard-{mode}.csv"));
    // The bench's own scratch folder, left by an earlier run cut short: removed before the
    // clock starts, for an export is timed from nothing to its last file.
    let export = corpus.join(EXPORT);
    let _ = std::fs::remove_dir_all(&export);
    let started = Instant::now();
    match mode {
        "previous" => {
            let passes = harness::pass::store::read_passes_keeping(&dirs, analysis::runs::events_the_figures_read)?;
            let steps = analysis::cells::summarize_many(&passes)?;
            std::fs::write(&out, analysis::leaderboard::to_csv(steps.iter().map(Vec::as_slice)))?;
        }
        "cold" | "warm" => {
            let tally = benchpass::write_with(&out, |file| benchpass::leaderboard::write_csv(&dirs, benchpass::leaderboard::Options::default(), file))?;
            let expected = if mode == "cold" { 0 } else { n_passes };
            anyhow::ensure!(tally.from_cache == expected, "{mode}: {} of {n_passes} passes read from their cache", tally.from_cache);
        }
        "parquet" => {
            let (tally, written) = benchpass::leaderboard::parquet::write(&dirs, benchpass::leaderboard::Options::default(), &export)?;
            anyhow::ensure!(tally.from_cache == n_passes, "parquet: {} of {n_passes} passes read from their cache", tally.from_cache);
            std::fs::write(corpus.join(format!("{EXPORT}.rows")), written.rows.to_string())?;
        }
        _ => anyhow::bail!("--measure previous, cold, warm or parquet"),
    }
    let seconds = started.elapsed().as_secs_f64();
    println!("{seconds} {}", peak_kib().unwrap_or(0));
    Ok(())
}

/// Peak resident memory of this process, KiB (Linux: VmHWM in /proc/self/status).
fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse().ok()
}

/// Writes the corpus once (it is reused while it exists): 6 engines a pass, each with the
/// seed protocol's 9 runs (sustained 3, prompt matrix 3/2/1) and pp512/pp2048 (1 warmup + 5).
fn generate(root: &Path, n_passes: usize) -> anyhow::Result<Vec<PathBuf>> {
    let dirs: Vec<PathBuf> = (0..n_passes).map(|i| root.join(format!("pass-{i:06}"))).collect();
    if dirs.iter().all(|d| d.join(RUNS_FILE).exists()) {
        return Ok(dirs);
    }
    let _ = std::fs::remove_dir_all(root);
    eprintln!("writing {n_passes} synthetic passes under {} …", root.display());
    // Eight writers: pass.json is synced as the store writes it, and the syncs overlap.
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| -> anyhow::Result<()> {
                    loop {
                        let p = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(dir) = dirs.get(p) else { return Ok(()) };
                        write_synthetic_pass(dir, p, &dirs)?;
                    }
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| w.join().expect("a writer does not panic"))
    })?;
    Ok(dirs)
}

/// Distinct runs.jsonl files: pass `p` beyond these shares the runs of pass `p % DISTINCT`
/// (a hard link) under a pass.json of its own (its id, machine and versions), so that a corpus
/// of 100,000 passes is written in a minute. Every pass is read as a pass of its own.
const DISTINCT: usize = 10_000;

/// Pass number `p` of the corpus, in `dir`.
fn write_synthetic_pass(dir: &Path, p: usize, dirs: &[PathBuf]) -> anyhow::Result<()> {
    // xorshift64*, seeded by the pass: cheap, deterministic; ±3 % around each engine's rate.
    let mut seed = 0x2545F4914F6CDD1Du64 ^ (p as u64).wrapping_mul(0x9E3779B97F4A7C15);
    let mut noise = move || {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        let u = (seed.wrapping_mul(0x2545F4914F6CDD1D) >> 11) as f64 / (1u64 << 53) as f64;
        1.0 + 0.06 * (u - 0.5)
    };
    {
        std::fs::create_dir_all(dir)?;
        let cells: Vec<CellInfo> = ENGINES
            .iter()
            .enumerate()
            .map(|(i, engine)| CellInfo {
                build: BuildInfo { sha256: Some(format!("{:064x}", i + 1)), files: vec![] },
                ..CellInfo::new(format!("c{i}"), EngineInfo { name: (*engine).to_owned(), version: format!("1.{}", p % 7), version_source: "user".to_owned(), ..EngineInfo::default() }, "qwen3-8b".to_owned())
            })
            .collect();
        let info = PassInfo::synthetic(format!("pass-{p:06}"), format!("machine-{}", p % 50), cells);
        if p >= DISTINCT {
            // Not through the store, which syncs every pass.json: a corpus needs no durability.
            std::fs::write(dir.join(PASS_FILE), serde_json::to_vec_pretty(&info)?)?;
            let source = dirs[p % DISTINCT].join(RUNS_FILE);
            // The source is written by the worker that took it, which started earlier.
            while !dirs[p % DISTINCT].join(".done").exists() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            std::fs::hard_link(&source, dir.join(RUNS_FILE))?;
            return Ok(());
        }
        harness::pass::store::write_pass_info(dir, &info)?;
        let mut out = BufWriter::new(File::create(dir.join(RUNS_FILE))?);
        for (c, _) in ENGINES.iter().enumerate() {
            let rate = 40.0 + 10.0 * c as f64;
            let plan: [(Workload, u64, u64, u32, u32); 6] = [
                (Workload::Sustained, 0, 256, 0, 3),
                (Workload::PromptMatrix, 128, 256, 0, 3),
                (Workload::PromptMatrix, 2048, 256, 0, 2),
                (Workload::PromptMatrix, 8192, 256, 0, 1),
                (Workload::PpTg, 512, 128, 1, 5),
                (Workload::PpTg, 2048, 512, 1, 5),
            ];
            for (workload, target, max_tokens, warmups, runs) in plan {
                for (warmup, n) in [(true, warmups), (false, runs)] {
                    for rep in 0..n {
                        let prompt = target.max(30);
                        let run = RunRecord {
                            prompt_tokens: Some(prompt),
                            completion_tokens: Some(max_tokens),
                            token_count_source: Some(TokenCountSource::Usage),
                            ttft_ms: Some(prompt as f64 / 2.0 * noise()),
                            decode_ms: Some((max_tokens - 1) as f64 / (rate * noise()) * 1e3),
                            finish_reason: Some("length".to_owned()),
                            http_status: Some(200),
                            ..RunRecord::unmeasured(&format!("c{c}"), workload, target, rep, warmup, max_tokens)
                        };
                        serde_json::to_writer(&mut out, &run)?;
                        out.write_all(b"\n")?;
                    }
                }
            }
        }
        out.flush()?;
        File::create(dir.join(".done"))?;
    }
    Ok(())
}
