//! `cargo xtask bench read`: the peak memory of reading one large pass with its events, the
//! old way beside the new, each in a process of its own (peak resident memory only grows, so
//! two reads in one process would hide the second):
//! - a report, diff or leaderboard: the pass read whole (`read_pass`) against the pass read
//!   without the events no figure reads (`read_pass_keeping` with
//!   `analysis::runs::events_the_figures_read`), each then summarised into its figures;
//! - `benchpass export`: the pass read whole and written as CSV against the streamed export
//!   (`csv::export_pass`).
//!
//! The synthetic pass is what a long pass of the reference engine writes: 6 cells, one
//! stream at a time, every run 256 token events of a few characters each and a finish event.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::Context as _;
use harness::pass::*;

const USAGE: &str = "usage: cargo xtask bench read [--runs N]";
const EVENTS_PER_RUN: u64 = 256;
const CELLS: usize = 6;

pub fn run(args: &[&str]) -> anyhow::Result<()> {
    if let ["--measure", mode, dir] = args {
        return measure(mode, Path::new(dir));
    }
    if crate::rerun_in_release(&["bench", "read"], args)? {
        return Ok(());
    }
    let n_runs: usize = match args {
        [] => 20_000,
        ["--runs", n] => n.parse().context("--runs takes a number")?,
        _ => anyhow::bail!(USAGE),
    };
    let dir = crate::workspace_root().join(format!("target/bench-read/pass-{n_runs}"));
    generate(&dir, n_runs)?;
    let bytes = std::fs::metadata(dir.join(RUNS_FILE))?.len();
    println!("{n_runs} runs of {EVENTS_PER_RUN} token events, {CELLS} cells; runs.jsonl {:.0} MiB\n", bytes as f64 / MIB);
    println!("| what | old | peak | new | peak | old ÷ new |");
    println!("|---|---|---:|---|---:|---:|");
    for (what, old, new) in [
        ("report, diff, leaderboard", "read_pass + summarize", "events_the_figures_read + summarize"),
        ("export", "read_pass + export_runs", "export_pass (streamed)"),
    ] {
        let (old_peak, old_s) = child(old, &dir)?;
        let (new_peak, new_s) = child(new, &dir)?;
        println!(
            "| {what} | {old} ({old_s:.1} s) | {:.0} MiB | {new} ({new_s:.1} s) | {:.0} MiB | {:.1} |",
            old_peak as f64 / MIB,
            new_peak as f64 / MIB,
            old_peak as f64 / new_peak as f64
        );
    }
    Ok(())
}

const MIB: f64 = 1024.0 * 1024.0;

/// Runs one measurement in a fresh process of this same binary: its peak memory in bytes and
/// its seconds.
fn child(mode: &str, dir: &Path) -> anyhow::Result<(u64, f64)> {
    let exe = std::env::current_exe()?;
    let output = Command::new(exe).args(["bench", "read", "--measure", mode]).arg(dir).output()?;
    anyhow::ensure!(output.status.success(), "`{mode}` failed: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout)?;
    let mut words = text.split_whitespace();
    let peak = words.next().and_then(|w| w.parse().ok()).with_context(|| format!("`{mode}` said {text}"))?;
    let seconds = words.next().and_then(|w| w.parse().ok()).with_context(|| format!("`{mode}` said {text}"))?;
    Ok((peak, seconds))
}

/// One measurement, in the child: prints the peak resident memory in bytes and the seconds.
fn measure(mode: &str, dir: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut sink = std::io::sink();
    match mode {
        "read_pass + summarize" => {
            let pass = read_pass(dir)?;
            std::hint::black_box(analysis::cells::summarize(&pass)?);
        }
        "events_the_figures_read + summarize" => {
            let pass = store::read_pass_keeping(dir, analysis::runs::events_the_figures_read)?;
            std::hint::black_box(analysis::cells::summarize(&pass)?);
        }
        "read_pass + export_runs" => csv::export_runs(&read_pass(dir)?, &mut sink)?,
        "export_pass (streamed)" => {
            csv::export_pass(dir, &mut sink, csv::Audience::Tools)?;
        }
        _ => anyhow::bail!("unknown measurement `{mode}`"),
    }
    let seconds = started.elapsed().as_secs_f64();
    println!("{} {seconds}", peak_resident_bytes().context("no peak memory on this OS (Linux's /proc/self/status)")?);
    Ok(())
}

/// Peak resident memory of this process (Linux: VmHWM in /proc/self/status).
fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// Writes the pass once (it is reused while it exists).
fn generate(dir: &PathBuf, n_runs: usize) -> anyhow::Result<()> {
    if dir.join(RUNS_FILE).exists() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    eprintln!("writing a pass of {n_runs} runs under {} …", dir.display());
    let cells: Vec<CellInfo> = (0..CELLS)
        .map(|i| CellInfo::new(format!("c{i}"), EngineInfo { name: format!("engine-{i}"), version: "1".to_owned(), version_source: "user".to_owned(), ..EngineInfo::default() }, "qwen3-8b".to_owned()))
        .collect();
    let info = PassInfo::synthetic("bench-read", "bench", cells);
    store::write_pass_info(dir, &info)?;
    let words = [" the", " river", " ran", " cold", " and", " clear", ",", " past"];
    let mut out = BufWriter::new(File::create(dir.join(RUNS_FILE))?);
    for i in 0..n_runs {
        let cell = i % CELLS;
        let ttft_ms = 80.0 + cell as f64 * 5.0 + (i % 11) as f64 * 0.3;
        let gap_ns = 20_000_000 + (cell as u64) * 1_000_000 + (i as u64 % 7) * 10_000;
        let mut events: Vec<EventRecord> = (0..EVENTS_PER_RUN)
            .map(|k| EventRecord {
                t_ns: (ttft_ms * 1e6) as u64 + k * gap_ns,
                bytes: 140,
                text: words[(i + k as usize) % words.len()].to_owned(),
                ..EventRecord::default()
            })
            .collect();
        events.push(EventRecord { t_ns: events.last().map_or(0, |e| e.t_ns) + 200_000, bytes: 90, ..EventRecord::default() });
        let run = RunRecord {
            prompt_sha256: Some(format!("{:064x}", i % 3)),
            prompt_tokens: Some(30),
            completion_tokens: Some(EVENTS_PER_RUN),
            token_count_source: Some(TokenCountSource::Usage),
            ttft_ms: Some(ttft_ms),
            decode_ms: Some((EVENTS_PER_RUN - 1) as f64 * gap_ns as f64 / 1e6),
            finish_reason: Some("length".to_owned()),
            http_status: Some(200),
            output_sha256: RunRecord::hash_output(&events),
            usage: Some(serde_json::json!({"prompt_tokens": 30, "completion_tokens": EVENTS_PER_RUN, "total_tokens": 30 + EVENTS_PER_RUN})),
            started_unix_ms: 1_700_000_000_000 + i as u64 * 6_000,
            events,
            ..RunRecord::unmeasured(&format!("c{cell}"), Workload::Sustained, 0, (i / CELLS) as u32, false, EVENTS_PER_RUN)
        };
        serde_json::to_writer(&mut out, &run)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}
