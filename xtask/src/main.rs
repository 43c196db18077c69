//! `cargo xtask`: project tasks. Thin by design: it parses arguments and calls library code,
//! so that everything worth testing lives in a crate that `cargo test` covers.

mod agent_traces;
mod bench;
mod bench_false_calls;
mod bench_leaderboard;
mod bench_read;
mod bench_report;
mod check_targets;
mod demo;
mod engine;
mod quality;
mod reports;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  demo [--engine sim|llama-cpp|mlx-lm|llama-cpp,mlx-lm] [--out DIR]
                          start the reference engine (or installed real engines), run a short
                          seed-shaped pass, render its report, print where everything is
  report PASS [--out DIR] [--quality-reference REF_PASS[:CELL]]
                          report.md, report.html, charts/*.svg and leaderboard.csv
                          (default DIR: reports/<pass id>/); with a quality reference, a
                          quality column beside the speed tables: each cell's exact match and
                          mean top-K KL against the reference cell (docs/quality.md)
  diff PASS_A PASS_B --out FILE [--correction none|holm]
                          what changed from A to B; Markdown, HTML or CSV by FILE's extension;
                          holm: Holm's family-wise correction over the rows tested
  quality --reference PASS[:CELL] PASS... --out FILE
                          every cell's greedy output and top-K KL against the reference cell
                          (docs/quality.md); Markdown, HTML or CSV by FILE's extension
  leaderboard PASS... --out FILE.csv
                          one leaderboard over several passes
  engine install llama-cpp|mlx-lm
                          llama.cpp's server built from the llama-cpp-python source package, or
                          mlx-lm on MLX's CPU backend, with tiny and small models made here;
                          cached and reused
  bench client [--quick] [--baseline REV] [--repetitions R]
                          this tree's release benchpass beside REV's (default: merge-base
                          HEAD main), alternating, R times (default 5) at 32 streams: marginal
                          CPU per token and per event, peak RSS, TTFT against a raw-socket
                          client's; then timing error at 1, 32 and 256 streams
  bench leaderboard [--passes N]
                          read and summarise a synthetic corpus of N passes (default 10,000,
                          about 1.3 million runs) into one leaderboard CSV; time and peak memory
  bench report            render a 12-cell pass (figures, Markdown, HTML, charts), timed
  bench read [--runs N]   peak memory of a report's and an export's read of one pass of N runs
                          (default 20,000) with their events, old beside new
  bench false-calls [--pairs N]
                          diff N pairs (default 2,000) of unchanged 3-run passes of the reference
                          engine: false-call rate and band coverage with 95 % intervals
  agent-traces            write the shipped agent sessions, data/agent/session-*.json, from
                          this repository's sources and the corpus (data/agent/README.md)
  check-targets [--target TRIPLE]...
                          type-check the workspace for aarch64-apple-darwin and
                          x86_64-pc-windows-msvc (Debian's rustc-web, std built from source)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["demo", rest @ ..] => demo::run(rest),
        ["agent-traces", rest @ ..] => agent_traces::run(&workspace_root(), rest),
        ["report", rest @ ..] => reports::report(rest),
        ["engine", rest @ ..] => engine::run(rest),
        ["diff", rest @ ..] => reports::diff(rest),
        ["quality", rest @ ..] => quality::run(rest),
        ["leaderboard", rest @ ..] => reports::leaderboard(rest),
        ["bench", "client", rest @ ..] => bench::client(rest),
        ["bench", "leaderboard", rest @ ..] => bench_leaderboard::run(rest),
        ["bench", "false-calls", rest @ ..] => bench_false_calls::run(rest),
        ["bench", "report", rest @ ..] => bench_report::run(rest),
        ["bench", "read", rest @ ..] => bench_read::run(rest),
        ["check-targets", rest @ ..] => check_targets::run(rest),
        ["help" | "--help" | "-h"] | [] => {
            print!("{USAGE}");
            Ok(())
        }
        _ => Err(anyhow::anyhow!("unknown task `{}`\n\n{USAGE}", args.join(" "))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Timings of unoptimised code say nothing: a benchmark started from a debug build runs
/// itself again from a release build. Returns true when it did (the caller is done).
fn rerun_in_release(task: &[&str], args: &[&str]) -> anyhow::Result<bool> {
    if !cfg!(debug_assertions) {
        return Ok(false);
    }
    let status = std::process::Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--release", "-p", "xtask", "--"])
        .args(task)
        .args(args)
        .current_dir(workspace_root())
        .status()?;
    anyhow::ensure!(status.success(), "the release run of `{}` failed", task.join(" "));
    Ok(true)
}

/// The workspace root (xtask's manifest sits one level below it).
fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_owned()
}
