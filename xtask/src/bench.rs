//! `cargo xtask bench client`: what measuring costs and how exact it is.
//!
//! First, side by side in one run: the release `benchpass` of this tree and of a baseline
//! revision (by default where this branch left `main`) stream from one reference engine (a
//! separate process: TTFT 10 ms, 3 tokens an event, an event a millisecond) at 32 streams,
//! alternating which goes first, for several repetitions. Each repetition gives, for each
//! build, the client's marginal CPU time per streamed token and per event (the pass of 1,024
//! requests minus the pass of 256, over the tokens and events between, so that start-up
//! cancels; CPU from the pass's `harness_cpu_seconds`), its peak resident memory (GNU time's
//! maximum RSS of the whole process; of it, sampled, the anonymous memory the process
//! allocated and the file-backed pages of its own binary; and the pass's own
//! `measurer.peak_rss_bytes`, up to its last run, before the figures and the leaderboard
//! cache are worked out), and its median
//! TTFT beside the median that a raw-socket client (HTTP/1.1 written by hand over
//! `std::net`, below) measures against the same engine in the
//! same repetition: the floor of the kernel and the engine, not of benchpass. The raw client
//! makes both passes too, and its marginal CPU per token (its threads' own CPU time) is the
//! floor under benchpass's: what reading the same streams costs the kernel and a client that
//! does nothing else.
//!
//! Then, for this tree alone, the client's timing error at 1, 32 and 256 streams against when
//! the engine actually sent its tokens (the sim's `timings` object), and the engine's own
//! lateness against its schedule beside it.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::Context as _;
use harness::metrics::decode_tps;

struct Options {
    /// The revision compared with this tree [default: `git merge-base HEAD main`, or on main
    /// the commit before HEAD].
    baseline: Option<String>,
    repetitions: usize,
    /// Fewer requests and repetitions, and no accuracy table: a check that it all runs.
    quick: bool,
}

const USAGE: &str = "usage: cargo xtask bench client [--quick] [--baseline REV] [--repetitions R]";

impl Options {
    fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut options = Options { baseline: None, repetitions: 5, quick: false };
        let mut repetitions = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match *arg {
                "--quick" => options.quick = true,
                "--baseline" => options.baseline = Some(args.next().context(USAGE)?.to_string()),
                "--repetitions" => repetitions = Some(args.next().context(USAGE)?.parse::<usize>().context(USAGE)?),
                _ => anyhow::bail!(USAGE),
            }
        }
        options.repetitions = repetitions.unwrap_or(if options.quick { 1 } else { 5 });
        anyhow::ensure!(options.repetitions >= 1, "{USAGE}: at least one repetition");
        Ok(options)
    }
}

/// The comparison's workload: 32 streams, passes of [`FEW`] and [`MANY`] requests of
/// [`TOKENS`] tokens each.
const STREAMS: u32 = 32;
const TOKENS: u64 = 256;
const FEW: u32 = 256;
const MANY: u32 = 1024;

/// The reference engine of the comparison: TTFT 10 ms (prefill too fast to count), then an
/// event of 3 tokens every millisecond, on the timer wheel (the events of many streams leave
/// together at each tick, as a batching engine sends them).
const COMPARISON_SIM: &[&str] =
    &["--base-latency-ms", "10", "--prefill-tps", "1e12", "--decode-tps", "3000", "--tokens-per-event", "3", "--timings", "--coarse-timer"];

/// A row of the side-by-side table: its name and how a repetition gives it.
type Figure = (&'static str, fn(&Repetition) -> f64);

pub fn client(args: &[&str]) -> anyhow::Result<()> {
    let options = Options::parse(args)?;
    let root = crate::workspace_root();
    let scratch = root.join("target/bench-client");
    let baseline_rev = match &options.baseline {
        Some(rev) => git(&root, &["rev-parse", "--verify", &format!("{rev}^{{commit}}")])?,
        // Where this tree is a branch off main, what it left main at; on main itself (or with
        // no main), the commit before this one.
        None => {
            let head = git(&root, &["rev-parse", "HEAD"])?;
            match git(&root, &["merge-base", "HEAD", "main"]) {
                Ok(base) if base != head => base,
                _ => git(&root, &["rev-parse", "HEAD~1"])?,
            }
        }
    };
    let baseline = build_baseline(&root, &scratch, &baseline_rev)?;
    let current = build_current(&root, &scratch)?;
    if std::fs::read(&baseline)? == std::fs::read(&current)? {
        println!("note: the baseline's binary and this tree's are the same bytes: the table compares a build with itself");
    }

    let (few, many) = if options.quick { (64, 256) } else { (FEW, MANY) };
    // The engine runs from a copy of its own: run from either side's file, it would keep that
    // side's code pages in the page cache, and the kernel maps cached pages around each page a
    // process first runs, so that side's client would show more of its binary resident (2.3 MB
    // more, seen in two runs, each on the side that shared its file with the engine).
    let sim_binary = scratch.join("sim").join("benchpass");
    copy_binary(&current, &sim_binary)?;
    let sim = SimProcess::start(&sim_binary, COMPARISON_SIM)?;
    let mut baseline_reps = Vec::new();
    let mut current_reps = Vec::new();
    let mut raw_ttft_medians = Vec::new();
    let mut raw_marginal_us = Vec::new();
    for rep in 0..options.repetitions {
        // Alternating which goes first, so that neither always meets a warmer machine.
        let order = if rep % 2 == 0 { [("baseline", &baseline), ("current", &current)] } else { [("current", &current), ("baseline", &baseline)] };
        for (name, binary) in order {
            let dir = scratch.join(format!("rep-{rep}-{name}"));
            let measured = Repetition::measure(binary, &sim.url, &dir, few, many)?;
            if name == "baseline" { &mut baseline_reps } else { &mut current_reps }.push(measured);
        }
        let raw_few = raw_pass(sim.addr()?, few as usize, STREAMS as usize)?;
        let raw_many = raw_pass(sim.addr()?, many as usize, STREAMS as usize)?;
        raw_ttft_medians.push(median(&raw_many.ttfts_ms));
        raw_marginal_us.push((raw_many.cpu_seconds - raw_few.cpu_seconds) * 1e6 / (u64::from(many - few) * TOKENS) as f64);
    }
    drop(sim);

    println!(
        "{} repetitions, each: baseline and this tree in turn (alternating which goes first), {STREAMS} streams, passes of {few} and {many} requests of {TOKENS} tokens, then a raw-socket client's {few} and {many} requests at {STREAMS} streams; the reference engine: TTFT 10 ms, 3 tokens an event, an event a millisecond (coarse timer)",
        options.repetitions
    );
    println!("baseline {} ({}), current: this tree\n", &baseline_rev[..12], options.baseline.as_deref().unwrap_or("the default: merge-base with main, or HEAD~1 on main"));
    println!("| figure | baseline median (min–max) | current median (min–max) | current ÷ baseline |");
    println!("|---|---:|---:|---:|");
    let rows: [Figure; 9] = [
        ("marginal CPU per token (µs)", |r| r.marginal_us_per_token),
        ("marginal CPU per token event (µs)", |r| r.marginal_us_per_event),
        ("CPU per token with start-up, larger pass (µs)", |r| r.us_per_token_whole),
        ("peak RSS, larger pass, whole process (MB)", |r| r.peak_rss_bytes as f64 / 1e6),
        // Of it, sampled every 5 ms: what the process allocated, and the pages of its own
        // binary the kernel mapped (shared with the page cache; mapped in 64 KiB windows
        // around each page the code first runs).
        ("peak anonymous memory, larger pass, sampled (MB)", |r| r.sampled.anon_bytes as f64 / 1e6),
        ("peak file-backed memory (its binary), larger pass, sampled (MB)", |r| r.sampled.file_bytes as f64 / 1e6),
        // The pass's own record: up to its last run, before the figures are worked out (NaN
        // for a build from before it was recorded).
        ("peak RSS, larger pass, while measuring (MB)", |r| r.measuring_peak_rss_bytes.map_or(f64::NAN, |b| b as f64 / 1e6)),
        ("median TTFT, larger pass (ms)", |r| r.ttft_median_ms),
        ("median TTFT − engine's send of the first token (ms)", |r| r.ttft_error_median_ms),
    ];
    for (what, figure) in rows {
        let b: Vec<f64> = baseline_reps.iter().map(figure).collect();
        let c: Vec<f64> = current_reps.iter().map(figure).collect();
        println!("| {what} | {} | {} | {:.2} |", spread(&b), spread(&c), median(&c) / median(&b));
    }
    let versus_raw = |reps: &[Repetition]| -> Vec<f64> { reps.iter().zip(&raw_ttft_medians).map(|(r, raw)| r.ttft_median_ms - raw).collect() };
    let (b, c) = (versus_raw(&baseline_reps), versus_raw(&current_reps));
    println!("| median TTFT − raw-socket client's median, same repetition (ms) | {} | {} | {:.2} |", spread(&b), spread(&c), median(&c) / median(&b));
    println!("\nraw-socket client's median TTFT (ms): {}", spread(&raw_ttft_medians));
    // The floor under the first row: what reading the same streams costs with nothing in the
    // client but the reads (the kernel's TCP work on each read, its acknowledgement included).
    let current_marginal: Vec<f64> = current_reps.iter().map(|r| r.marginal_us_per_token).collect();
    println!(
        "raw-socket client's marginal CPU per token (µs): {}; this tree's ÷ the raw client's, medians: {:.2}",
        spread(&raw_marginal_us),
        median(&current_marginal) / median(&raw_marginal_us)
    );
    println!("passes kept under {}\n", scratch.display());

    if !options.quick {
        accuracy(&current, &scratch)?;
    }
    Ok(())
}

/// One build's figures in one repetition.
struct Repetition {
    marginal_us_per_token: f64,
    marginal_us_per_event: f64,
    us_per_token_whole: f64,
    peak_rss_bytes: u64,
    sampled: Resident,
    measuring_peak_rss_bytes: Option<u64>,
    ttft_median_ms: f64,
    ttft_error_median_ms: f64,
}

impl Repetition {
    fn measure(binary: &Path, url: &str, dir: &Path, few: u32, many: u32) -> anyhow::Result<Repetition> {
        let small = Pass::run(binary, url, &dir.join(format!("runs-{few}")), few)?;
        let large = Pass::run(binary, url, &dir.join(format!("runs-{many}")), many)?;
        let cpu = large.cpu_seconds - small.cpu_seconds;
        // The raw client counts no tokens: it takes every reply to be TOKENS long, as these are.
        anyhow::ensure!(large.tokens == u64::from(many) * TOKENS, "{} tokens in {many} replies of {TOKENS}", large.tokens);
        Ok(Repetition {
            marginal_us_per_token: cpu * 1e6 / (large.tokens - small.tokens) as f64,
            marginal_us_per_event: cpu * 1e6 / (large.token_events - small.token_events) as f64,
            us_per_token_whole: large.cpu_seconds * 1e6 / large.tokens as f64,
            peak_rss_bytes: large.peak_rss_bytes,
            sampled: large.sampled,
            measuring_peak_rss_bytes: large.measuring_peak_rss_bytes,
            ttft_median_ms: large.ttft_median_ms,
            ttft_error_median_ms: large.ttft_error_median_ms,
        })
    }
}

/// One `benchpass run` at [`STREAMS`] streams and what it cost.
struct Pass {
    cpu_seconds: f64,
    tokens: u64,
    token_events: u64,
    peak_rss_bytes: u64,
    sampled: Resident,
    measuring_peak_rss_bytes: Option<u64>,
    ttft_median_ms: f64,
    ttft_error_median_ms: f64,
}

impl Pass {
    fn run(binary: &Path, url: &str, out: &Path, runs: u32) -> anyhow::Result<Pass> {
        let _ = std::fs::remove_dir_all(out);
        std::fs::create_dir_all(out.parent().context("a parent")?)?;
        let rss_file = out.with_extension("maxrss");
        // GNU time's %M: the process's maximum resident set (getrusage's ru_maxrss), in KiB.
        let child = Command::new("/usr/bin/time")
            .args(["-f", "%M", "-o"])
            .arg(&rss_file)
            .arg(binary)
            .args(["run", "--url", url, "--model", "sim-model", "--engine", "sim", "--progress", "quiet"])
            .args(["--max-tokens", &TOKENS.to_string(), "--runs", &runs.to_string()])
            .args(["--concurrency", &STREAMS.to_string(), "--out"])
            .arg(out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running benchpass under /usr/bin/time (GNU time)")?;
        let sampled = Resident::sample_child_of(child.id());
        let status = child.wait_with_output()?;
        let sampled = sampled.join().map_err(|_| anyhow::anyhow!("the memory sampler panicked"))?;
        anyhow::ensure!(status.status.success(), "benchpass run failed ({runs} runs): {}", String::from_utf8_lossy(&status.stderr));
        let maxrss_kib: u64 = std::fs::read_to_string(&rss_file)?.trim().lines().last().unwrap_or("").parse().context("GNU time's %M")?;
        let pass = harness::pass::read_pass(out)?;
        anyhow::ensure!(pass.runs.len() == runs as usize, "{} runs recorded of {runs}", pass.runs.len());
        let mut ttfts = Vec::new();
        let mut errors = Vec::new();
        let (mut tokens, mut token_events) = (0, 0);
        for run in &pass.runs {
            anyhow::ensure!(run.error.is_none(), "a run failed: {:?}", run.error);
            let ttft = run.ttft_ms.context("a ttft")?;
            let sent = run.timings.as_ref().and_then(|t| t["sim_sent_first_token_ms"].as_f64()).context("the sim's timings")?;
            ttfts.push(ttft);
            errors.push(ttft - sent);
            tokens += run.completion_tokens.context("a token count")?;
            token_events += run.events.iter().filter(|e| e.carries_tokens()).count() as u64;
        }
        Ok(Pass {
            cpu_seconds: pass.info.harness_cpu_seconds.context("CPU time is read on Unix only")?,
            tokens,
            token_events,
            peak_rss_bytes: maxrss_kib * 1024,
            sampled,
            measuring_peak_rss_bytes: pass.info.measurer.as_ref().and_then(|m| m.peak_rss_bytes),
            ttft_median_ms: median(&ttfts),
            ttft_error_median_ms: median(&errors),
        })
    }
}

/// The largest anonymous and file-backed resident memory seen of a process (each on its own:
/// they need not peak together), from `/proc/PID/status` every 5 ms; zero where it cannot be
/// read.
#[derive(Debug, Clone, Copy, Default)]
struct Resident {
    anon_bytes: u64,
    file_bytes: u64,
}

impl Resident {
    /// Samples the first child of process `parent` (benchpass under GNU time) until it ends.
    fn sample_child_of(parent: u32) -> std::thread::JoinHandle<Resident> {
        std::thread::spawn(move || {
            let children = format!("/proc/{parent}/task/{parent}/children");
            let mut pid = None;
            let mut peak = Resident::default();
            loop {
                if pid.is_none() {
                    match std::fs::read_to_string(&children) {
                        Ok(text) => pid = text.split_whitespace().next().map(str::to_owned),
                        Err(_) => return peak,
                    }
                }
                if let Some(pid) = &pid {
                    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return peak };
                    let kib = |key: &str| status.lines().find_map(|l| l.strip_prefix(key)?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok());
                    peak.anon_bytes = peak.anon_bytes.max(kib("RssAnon:").unwrap_or(0) * 1024);
                    peak.file_bytes = peak.file_bytes.max(kib("RssFile:").unwrap_or(0) * 1024);
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    }
}

/// What a raw-socket client's pass gave: each request's TTFT in milliseconds, and the CPU time
/// (user and system) of the threads that made the requests, in seconds.
struct RawPass {
    ttfts_ms: Vec<f64>,
    cpu_seconds: f64,
}

/// `requests` streamed chat requests, `streams` at a time, by a client with nothing in it:
/// HTTP/1.1 by hand over a kept-alive `TcpStream` per stream, the clock started before the
/// request is written (before the connection is opened, for a stream's first request, as
/// benchpass's is) and read when the `read` that brought the first `"content"` with text
/// returns. Each reply is read to its end, so the engine's load is benchpass's. Each thread's
/// CPU time is read from the kernel's scheduler statistics for the thread, before its first
/// request and after its last.
fn raw_pass(addr: SocketAddr, requests: usize, streams: usize) -> anyhow::Result<RawPass> {
    let body = format!(
        r#"{{"model":"sim-model","max_tokens":{TOKENS},"temperature":0.0,"stream":true,"stream_options":{{"include_usage":true}},"messages":[{{"role":"user","content":"Write a story."}}]}}"#
    );
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nAccept-Encoding: identity\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..streams)
            .map(|_| {
                scope.spawn(|| -> anyhow::Result<(Vec<f64>, f64)> {
                    let cpu_at_start = thread_cpu_seconds()?;
                    let mut ttfts = Vec::new();
                    let mut connection: Option<TcpStream> = None;
                    let mut buffer = vec![0u8; 64 << 10];
                    while next.fetch_add(1, Ordering::Relaxed) < requests {
                        let started = Instant::now();
                        let mut stream = match connection.take() {
                            Some(stream) => stream,
                            None => {
                                let stream = TcpStream::connect(addr)?;
                                stream.set_nodelay(true)?;
                                stream
                            }
                        };
                        stream.write_all(request.as_bytes())?;
                        let mut seen: Vec<u8> = Vec::new();
                        let mut first = None;
                        loop {
                            let n = stream.read(&mut buffer)?;
                            anyhow::ensure!(n > 0, "the engine closed the connection mid-reply");
                            let at = started.elapsed();
                            // Only the tail is searched again: a pattern may straddle two reads.
                            let from = seen.len().saturating_sub(16);
                            seen.extend_from_slice(&buffer[..n]);
                            if first.is_none() && has_content(&seen[from..]) {
                                first = Some(at);
                            }
                            // The last chunk of a chunked reply: the reply is over.
                            if seen.ends_with(b"data: [DONE]\n\n\r\n0\r\n\r\n") {
                                break;
                            }
                        }
                        ttfts.push(first.context("a reply without content")?.as_secs_f64() * 1e3);
                        connection = Some(stream);
                    }
                    Ok((ttfts, thread_cpu_seconds()? - cpu_at_start))
                })
            })
            .collect();
        let mut pass = RawPass { ttfts_ms: Vec::new(), cpu_seconds: 0.0 };
        for worker in workers {
            let (ttfts, cpu) = worker.join().map_err(|_| anyhow::anyhow!("a raw-client thread panicked"))??;
            pass.ttfts_ms.extend(ttfts);
            pass.cpu_seconds += cpu;
        }
        anyhow::ensure!(pass.ttfts_ms.len() == requests, "{} of {requests} raw requests answered", pass.ttfts_ms.len());
        Ok(pass)
    })
}

/// The CPU time the calling thread has run, in seconds: the first field of Linux's
/// `/proc/thread-self/schedstat`, nanoseconds on a CPU (user and system alike).
fn thread_cpu_seconds() -> anyhow::Result<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").context("reading /proc/thread-self/schedstat (Linux)")?;
    let ns: u64 = text.split_whitespace().next().context("an empty schedstat")?.parse().context("schedstat's run time")?;
    Ok(ns as f64 / 1e9)
}

/// The bytes hold a `"content":"` with at least one character after it.
fn has_content(bytes: &[u8]) -> bool {
    const KEY: &[u8] = b"\"content\":\"";
    bytes.windows(KEY.len() + 1).any(|w| &w[..KEY.len()] == KEY && w[KEY.len()] != b'"')
}

fn median(values: &[f64]) -> f64 {
    analysis::summary::median(values).unwrap_or(f64::NAN)
}

/// `median (min–max)`.
fn spread(values: &[f64]) -> String {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:.2} ({:.2}–{:.2})", median(values), min, max)
}

fn git(root: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("git").args(args).current_dir(root).output()?;
    anyhow::ensure!(output.status.success(), "git {} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
    Ok(String::from_utf8(output.stdout)?.trim().to_owned())
}

/// The release `benchpass` of `rev`, kept under `scratch` by its source tree (two commits of
/// one tree share a build). The tree is exported with `git archive` (no worktree to register
/// or prune) and built in a target folder of its own: cargo names a workspace's units by their
/// paths inside the workspace, so two trees built in one folder share their fingerprints, and
/// an exported tree, its files dated at their commit, looks older than the last build and is
/// taken for it (both sides of a comparison were once one binary). Its files are dated now
/// (`tar -m`) so that a tree exported after another is never taken for it either.
fn build_baseline(root: &Path, scratch: &Path, rev: &str) -> anyhow::Result<PathBuf> {
    let tree = git(root, &["rev-parse", &format!("{rev}^{{tree}}")])?;
    let kept = scratch.join(format!("baseline-tree-{}", &tree[..12])).join("benchpass");
    if kept.exists() {
        return Ok(kept);
    }
    let source = scratch.join("baseline-src");
    let _ = std::fs::remove_dir_all(&source);
    std::fs::create_dir_all(&source)?;
    let archive = Command::new("git").args(["archive", rev]).current_dir(root).stdout(Stdio::piped()).spawn()?;
    let status = Command::new("tar").args(["-x", "-m", "-C"]).arg(&source).stdin(archive.stdout.context("git archive's output")?).status()?;
    anyhow::ensure!(status.success(), "exporting {rev} failed");
    println!("building the baseline's release benchpass ({})…", &rev[..12]);
    println!("(in {}; the first time, its dependencies too)", scratch.join("baseline-target").display());
    let built = build_release_benchpass(&source, Some(&scratch.join("baseline-target")))?;
    copy_binary(&built, &kept)?;
    Ok(kept)
}

/// This tree's release `benchpass`, copied beside the baseline's.
fn build_current(root: &Path, scratch: &Path) -> anyhow::Result<PathBuf> {
    let built = build_release_benchpass(root, None)?;
    let kept = scratch.join("current").join("benchpass");
    copy_binary(&built, &kept)?;
    Ok(kept)
}

/// `from` copied to a new file at `to`, its folder made where missing.
fn copy_binary(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to.parent().context("a parent")?)?;
    // Removed first: a copy still running (a sim left behind) keeps its own file.
    let _ = std::fs::remove_file(to);
    std::fs::copy(from, to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// Builds the release `benchpass` of the tree at `source` and returns the executable cargo
/// says it built.
fn build_release_benchpass(source: &Path, target_dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["build", "--release", "--quiet", "-p", "benchpass", "--bin", "benchpass", "--message-format", "json-render-diagnostics"]);
    if let Some(dir) = target_dir {
        cargo.env("CARGO_TARGET_DIR", dir);
    }
    let output = cargo.current_dir(source).stderr(Stdio::inherit()).output()?;
    anyhow::ensure!(output.status.success(), "building the release benchpass in {} failed", source.display());
    let executable = String::from_utf8(output.stdout)?
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact" && message["target"]["name"] == "benchpass")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from));
    executable.with_context(|| format!("cargo named no benchpass executable built in {}", source.display()))
}

struct Setting {
    streams: u32,
    runs: u32,
}

/// The client's timing error at 1, 32 and 256 streams, for `binary` alone.
fn accuracy(binary: &Path, scratch: &Path) -> anyhow::Result<()> {
    let settings = [Setting { streams: 1, runs: 10 }, Setting { streams: 32, runs: 64 }, Setting { streams: 256, runs: 256 }];
    println!("| streams | runs | tokens | client CPU µs/token | decode error median / max | TTFT error median / max | sim first token late median / max | sim timer |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---|");
    for setting in &settings {
        // Many streams run on the timer wheel alone: its 1 ms ticks send the tokens of many
        // streams together, as a batching engine does at each decode step. Each stream on a
        // precise timer of its own would cost the client ~60 % more CPU per token at 256
        // streams (one wake-up per event instead of per batch), measuring a load no real
        // engine makes.
        let precise = setting.streams == 1;
        let sim_args: &[&str] = if precise { &["--decode-tps", "50", "--timings"] } else { &["--decode-tps", "50", "--timings", "--coarse-timer"] };
        let sim = SimProcess::start(binary, sim_args)?;
        let out = scratch.join(format!("streams-{}", setting.streams));
        let _ = std::fs::remove_dir_all(&out);
        let status = Command::new(binary)
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
    fn start(binary: &Path, args: &[&str]) -> anyhow::Result<SimProcess> {
        let mut child = Command::new(binary).args(["sim", "--port", "0"]).args(args).stdout(Stdio::piped()).spawn()?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().context("sim stdout")?).read_line(&mut line)?;
        let url = line.trim().strip_prefix("benchpass sim listening on ").context("the sim's first line")?.to_owned();
        Ok(SimProcess { child, url })
    }

    fn addr(&self) -> anyhow::Result<SocketAddr> {
        let host = self.url.strip_prefix("http://").context("an http URL")?.trim_end_matches('/');
        host.parse().with_context(|| format!("the sim's address in {}", self.url))
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
