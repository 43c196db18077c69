//! `cargo xtask bench report`: how long rendering a 12-cell pass takes (6 engines × 2 model
//! families, the seed protocol, every run with its 256 stream events), from the pass in memory
//! to every file's text: figures, Markdown, HTML, charts and leaderboard. Median of 20 renders.

use std::time::Instant;

use harness::pass::*;

pub fn run(args: &[&str]) -> anyhow::Result<()> {
    anyhow::ensure!(args.is_empty(), "usage: cargo xtask bench report");
    if crate::rerun_in_release(&["bench", "report"], args)? {
        return Ok(());
    }
    let pass = twelve_cell_pass();
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..20 {
        let started = Instant::now();
        let steps = analysis::cells::summarize(&pass)?;
        let rendered = report::render_pass(&pass, &steps)?;
        times.push(started.elapsed().as_secs_f64());
        bytes = rendered.html.len() + rendered.markdown.len() + rendered.charts.iter().map(|c| c.svg.len()).sum::<usize>();
    }
    times.sort_by(f64::total_cmp);
    let events: usize = pass.runs.iter().map(|r| r.events.len()).sum();
    println!("| cells | runs | events | render (median of 20) | fastest | slowest | output |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {} KiB |",
        pass.info.cells.len(),
        pass.runs.len(),
        events,
        times[times.len() / 2] * 1e3,
        times[0] * 1e3,
        times[times.len() - 1] * 1e3,
        bytes / 1024
    );
    Ok(())
}

fn twelve_cell_pass() -> Pass {
    let engines = ["llama.cpp", "vllm", "mlx-lm", "ollama", "lm-studio", "omlx"];
    let families = ["qwen3-8b", "gemma-3-12b"];
    let mut cells = Vec::new();
    for family in families {
        for engine in engines {
            cells.push(CellInfo {
                build: BuildInfo { sha256: Some(format!("{:064x}", cells.len() + 1)), files: vec![] },
                ..CellInfo::new(format!("c{}", cells.len()), EngineInfo { name: engine.to_owned(), version: "1.0".to_owned(), version_source: "user".to_owned(), ..EngineInfo::default() }, family.to_owned())
            });
        }
    }
    let mut runs = Vec::new();
    for (c, cell) in cells.iter().enumerate() {
        let rate = 30.0 + 5.0 * c as f64;
        for (workload, target, n) in [(Workload::Sustained, 0, 3), (Workload::PromptMatrix, 128, 3), (Workload::PromptMatrix, 2048, 2), (Workload::PromptMatrix, 8192, 1)] {
            for rep in 0..n {
                let ttft_ns = (20.0 + target as f64 / 2.0) as u64 * 1_000_000;
                let step_ns = (1e9 / (rate * (1.0 + 0.01 * rep as f64))) as u64;
                let events: Vec<EventRecord> = (0..256)
                    .map(|i| EventRecord { t_ns: ttft_ns + i * step_ns, bytes: 120, text: " word".to_owned(), ..EventRecord::default() })
                    .collect();
                runs.push(RunRecord {
                    prompt_sha256: Some(format!("{c}-{target}-{rep}")),
                    prompt_tokens: Some(target.max(41)),
                    completion_tokens: Some(256),
                    token_count_source: Some(TokenCountSource::Usage),
                    ttft_ms: Some(ttft_ns as f64 / 1e6),
                    decode_ms: Some((255 * step_ns) as f64 / 1e6),
                    finish_reason: Some("length".to_owned()),
                    http_status: Some(200),
                    events,
                    ..RunRecord::unmeasured(&cell.id, workload, target, rep, false, 256)
                });
            }
        }
    }
    Pass { dir: "bench".into(), ..Pass::in_memory(PassInfo::synthetic("bench-12-cells", "bench", cells), runs) }
}
