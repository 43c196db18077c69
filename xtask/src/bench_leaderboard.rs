//! `cargo xtask bench leaderboard`: a synthetic corpus of 10,000 passes (about 1.3 million
//! runs) read and summarised into one leaderboard CSV, timed, with the process's peak memory.
//! The claim to check: at most 10 s and 2 GiB on a 2-core machine.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use harness::pass::*;

const ENGINES: [&str; 6] = ["llama.cpp", "vllm", "mlx-lm", "ollama", "lm-studio", "omlx"];

pub fn run(args: &[&str]) -> anyhow::Result<()> {
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

    let started = Instant::now();
    let passes = read_passes(&dirs)?;
    let read = started.elapsed();
    let n_runs: usize = passes.iter().map(|p| p.runs.len()).sum();
    let steps = analysis::cells::summarize_many(&passes)?;
    let summarized = started.elapsed();
    let csv = analysis::leaderboard::to_csv(steps.iter().map(Vec::as_slice));
    let total = started.elapsed();
    let out = corpus.join("leaderboard.csv");
    std::fs::write(&out, &csv)?;

    println!("| passes | runs | read | + summarise | + CSV | rows | peak memory |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {} | {:.2} s | {:.2} s | {:.2} s | {} | {} |",
        passes.len(),
        n_runs,
        read.as_secs_f64(),
        summarized.as_secs_f64(),
        total.as_secs_f64(),
        csv.lines().count() - 1,
        peak_memory().unwrap_or_else(|| "unknown".to_owned()),
    );
    println!("\nleaderboard: {}", out.display());
    Ok(())
}

/// Peak resident memory of this process (Linux: VmHWM in /proc/self/status).
fn peak_memory() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(format!("{:.0} MiB", kib as f64 / 1024.0))
}

/// Writes the corpus once (it is reused while it exists): 6 engines a pass, each with the
/// seed protocol's 9 runs (sustained 3, prompt matrix 3/2/1) and pp512/pp2048 (1 warmup + 5).
fn generate(root: &Path, n_passes: usize) -> anyhow::Result<Vec<PathBuf>> {
    let dirs: Vec<PathBuf> = (0..n_passes).map(|i| root.join(format!("pass-{i:05}"))).collect();
    if dirs.iter().all(|d| d.join(RUNS_FILE).exists()) {
        return Ok(dirs);
    }
    let _ = std::fs::remove_dir_all(root);
    eprintln!("writing {n_passes} synthetic passes under {} …", root.display());
    let mut seed = 0x2545F4914F6CDD1Du64;
    let mut noise = move || {
        // xorshift64*: cheap, deterministic; ±3 % around each engine's rate.
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        let u = (seed.wrapping_mul(0x2545F4914F6CDD1D) >> 11) as f64 / (1u64 << 53) as f64;
        1.0 + 0.06 * (u - 0.5)
    };
    for (p, dir) in dirs.iter().enumerate() {
        std::fs::create_dir_all(dir)?;
        let cells: Vec<CellInfo> = ENGINES
            .iter()
            .enumerate()
            .map(|(i, engine)| CellInfo {
                build: BuildInfo { sha256: Some(format!("{:064x}", i + 1)), files: vec![] },
                ..CellInfo::new(format!("c{i}"), EngineInfo { name: (*engine).to_owned(), version: format!("1.{}", p % 7), version_source: "user".to_owned(), ..EngineInfo::default() }, "qwen3-8b".to_owned())
            })
            .collect();
        let info = PassInfo::synthetic(format!("pass-{p:05}"), format!("machine-{}", p % 50), cells);
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
    }
    Ok(dirs)
}
