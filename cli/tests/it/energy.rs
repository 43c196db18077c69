//! Energy through `benchpass run` against the reference engine, from a fake powercap tree
//! (`BENCHPASS_POWERCAP_ROOT`) that a thread of the test advances at a known power: the idle
//! baseline, each run's energy and J/token, the report's energy column and the source named
//! in its provenance, the leaderboard's energy rows.

#![cfg(unix)]

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::pass::read_pass;

use crate::support::*;

/// The counter's range: 1000 J, so that a pass of a few seconds at 20 W wraps it.
const MAX_UJ: u64 = 1_000_000_000;
const WATTS: f64 = 20.0;

/// A powercap tree with one package zone, its counter 5 J below the top of its range.
fn fake_powercap(root: &Path) {
    let zone = root.join("intel-rapl:0");
    std::fs::create_dir_all(&zone).unwrap();
    std::fs::write(zone.join("name"), "package-0\n").unwrap();
    std::fs::write(zone.join("max_energy_range_uj"), format!("{MAX_UJ}\n")).unwrap();
    std::fs::write(zone.join("energy_uj"), format!("{}\n", MAX_UJ - 5_000_000)).unwrap();
}

/// Advances the counter as a package drawing [`WATTS`] would, every 5 ms, until `stop`.
fn advance(root: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let path = root.join("intel-rapl:0/energy_uj");
    std::thread::spawn(move || {
        let start = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let uj = (MAX_UJ - 5_000_000 + (WATTS * 1e6 * start.elapsed().as_secs_f64()) as u64) % MAX_UJ;
            // Written whole, then renamed: a read never sees half a number.
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, format!("{uj}\n")).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
    })
}

/// `benchpass run` with `args` against the reference engine (200 tok/s) while the fake
/// package draws [`WATTS`], with a 1 s idle baseline: the pass folder and what it said.
fn run_at_20_watts(tmp: &tempfile::TempDir, args: &[&str]) -> (std::path::PathBuf, String) {
    let sim = Sim::start(&["--decode-tps", "200", "--prefill-tps", "1000000"]);
    let root = tmp.path().join("powercap");
    fake_powercap(&root);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = advance(&root, Arc::clone(&stop));
    let out = pass_dir(tmp);
    let output = std::process::Command::new(BENCHPASS)
        .args(["run", "--url", &sim.url, "--model", "sim-model", "--engine", "sim", "--progress", "quiet", "--out", out.to_str().unwrap()])
        .args(args)
        .env("BENCHPASS_POWERCAP_ROOT", &root)
        .env("BENCHPASS_ENERGY_IDLE_S", "1")
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    (out, stderr)
}

#[test]
fn a_pass_on_a_machine_with_rapl_records_energy_per_run_and_the_report_shows_joules_per_token() {
    let tmp = temp_dir();
    // 4 runs of 64 tokens at 200 tokens/s: 63 decode intervals of 5 ms, 0.315 s each.
    let (out, stderr) = run_at_20_watts(&tmp, &["--runs", "4", "--max-tokens", "64", "--ignore-eos"]);
    let pass = read_pass(&out).unwrap();

    // The cell names its source, domain and interval; its idle baseline is the counter's 20 W.
    let energy = pass.info.cells[0].energy.as_ref().expect("the cell records its energy");
    assert_eq!((energy.source, energy.domain.as_str(), energy.interval_ms, energy.idle_ms), (Some(harness::pass::EnergySource::Rapl), "package", 100, 1000));
    let idle = energy.idle_watts.expect("an idle baseline");
    assert!((idle - WATTS).abs() < 1.0, "idle {idle} W");

    // Every run measured through the wrap: about 20 W, and 20 W × 5 ms = 0.1 J per output token.
    let measured: Vec<_> = pass.runs.iter().filter(|r| !r.warmup).collect();
    assert_eq!(measured.len(), 4, "{stderr}");
    for run in &measured {
        let e = run.energy.as_ref().unwrap_or_else(|| panic!("run {} has no energy: {stderr}", run.rep));
        let watts = harness::pass::metrics::mean_watts(Some(e)).unwrap();
        assert!((watts - WATTS).abs() < 2.0, "{watts} W: {e:?}");
        let per_token = harness::pass::metrics::joules_per_output_token(Some(e), run.completion_tokens).unwrap();
        assert!((per_token - 0.1).abs() < 0.015, "{per_token} J/token: {e:?}, {:?} ms decode", run.decode_ms);
        assert!(e.prefill_joules.is_some_and(|j| j >= 0.0), "{e:?}");
    }

    // The report: the energy column beside tok/s, and the source in the provenance.
    let report = tmp.path().join("report");
    let rendered = benchpass(&["report", out.to_str().unwrap(), "--out", report.to_str().unwrap()]);
    assert!(rendered.status.success(), "{}", String::from_utf8_lossy(&rendered.stderr));
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("| energy |"), "{md}");
    assert!(md.contains(" J/tok · "), "{md}");
    assert!(md.contains("rapl:package, counter read every 100 ms; idle "), "{md}");
    // The trade-off chart: the cell's point at its decode rate and J/token.
    assert!(md.contains("](charts/energy-vs-decode.svg)"), "{md}");
    let svg = std::fs::read_to_string(report.join("charts/energy-vs-decode.svg")).unwrap();
    assert!(svg.contains("Energy against speed (rapl:package)") && svg.contains("J per output token"), "{svg}");
    // The leaderboard: energy rows named with their source and domain.
    let csv = benchpass(&["leaderboard", out.to_str().unwrap()]);
    let csv = String::from_utf8_lossy(&csv.stdout).into_owned();
    let row = csv.lines().find(|l| l.contains(",joules_per_token:rapl:package,J/token,")).unwrap_or_else(|| panic!("{csv}"));
    let median: f64 = row.split(',').nth(12).unwrap().parse().unwrap();
    assert!((median - 0.1).abs() < 0.015, "{row}");
}

/// A 1,2-stream sweep at 20 W: the 1-stream level's runs carry their own energy; the 2-stream
/// level's runs carry none (each run's interval holds the other stream's work), and its cell
/// records the energy of the step's span instead. Its figures, worked out here from pass.json
/// and the runs: J per output token = the span's joules ÷ Σ completion tokens, W = joules ÷ span.
#[test]
fn a_step_at_two_streams_records_the_energy_of_its_span_and_joules_per_output_token() {
    let tmp = temp_dir();
    let (out, _) = run_at_20_watts(&tmp, &["--concurrency", "1,2", "--runs", "4", "--max-tokens", "64", "--ignore-eos"]);
    let pass = read_pass(&out).unwrap();

    let at = |c: u32| pass.runs.iter().filter(move |r| !r.warmup && r.concurrency == c).collect::<Vec<_>>();
    assert!(at(1).iter().all(|r| r.energy.is_some()), "1 stream: every run has its energy");
    assert!(at(2).iter().all(|r| r.energy.is_none()), "2 streams: no run has its own");
    let cell = &pass.info.cells[0];
    assert_eq!(cell.step_energy.len(), 1, "one step at 2 streams: {:?}", cell.step_energy);
    let step = &cell.step_energy[0];
    assert_eq!((step.workload, step.target_prompt_tokens, step.max_tokens, step.concurrency, step.runs), (harness::pass::Workload::Sustained, 0, 64, 2, 4));
    let watts = step.joules / step.seconds;
    assert!((watts - WATTS).abs() < 2.0, "{watts} W over the span: {step:?}");
    // The span is the serving figures' own: earliest start to latest end of the 4 runs.
    let span_s = analysis::serving::span_ms(&at(2)).unwrap() / 1e3;
    assert!((step.seconds - span_s).abs() < 0.01, "{} s recorded, {span_s} s from the runs", step.seconds);

    let tokens: u64 = at(2).iter().map(|r| r.completion_tokens.unwrap()).sum();
    assert_eq!(tokens, 4 * 64);
    let csv = benchpass(&["leaderboard", out.to_str().unwrap()]);
    let csv = String::from_utf8_lossy(&csv.stdout).into_owned();
    let median = |metric: &str| -> String {
        let row = csv.lines().find(|l| l.split(',').nth(10) == Some(metric)).unwrap_or_else(|| panic!("no {metric} in {csv}"));
        row.split(',').nth(12).unwrap().to_owned()
    };
    assert_eq!(median("joules_per_output_token@c2:rapl:package"), format!("{:.6}", step.joules / tokens as f64));
    assert_eq!(median("mean_watts@c2:rapl:package"), format!("{:.6}", step.joules / step.seconds));

    // The report's serving section has the step's energy.
    let report = tmp.path().join("report");
    let rendered = benchpass(&["report", out.to_str().unwrap(), "--out", report.to_str().unwrap()]);
    assert!(rendered.status.success(), "{}", String::from_utf8_lossy(&rendered.stderr));
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    let line = md.lines().find(|l| l.contains("| rapl:package |")).unwrap_or_else(|| panic!("{md}"));
    assert!(line.contains(&format!("| {:.4} |", step.joules / tokens as f64)), "{line}");

    // Diffs: the same pass with its span's joules doubled is +100 % J/token (the same tokens);
    // with another domain it is not compared, and the reason names both.
    let edited = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| -> std::path::PathBuf {
        let dir = tmp.path().join(name);
        copy_dir(&out, &dir);
        let path = dir.join("pass.json");
        let mut info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        edit(&mut info["cells"][0]);
        std::fs::write(&path, serde_json::to_string_pretty(&info).unwrap()).unwrap();
        dir
    };
    let doubled = edited("doubled", &|cell| {
        let j = cell["step_energy"][0]["joules"].as_f64().unwrap();
        cell["step_energy"][0]["joules"] = serde_json::json!(2.0 * j);
    });
    let dram = edited("dram", &|cell| cell["energy"]["domain"] = serde_json::json!("package+dram"));
    let diff = |b: &Path| -> String {
        let output = benchpass(&["diff", out.to_str().unwrap(), b.to_str().unwrap(), "--format", "md"]);
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let md = diff(&doubled);
    assert!(md.contains("## Energy at more than one stream"), "{md}");
    let row = md.lines().find(|l| l.contains("| sustained | 2 |") && l.contains("J/token")).unwrap_or_else(|| panic!("{md}"));
    let per_token = step.joules / tokens as f64;
    assert!(row.contains(&format!("{per_token:.3} J/token")) && row.contains(&format!("{:.3} J/token", 2.0 * per_token)), "{row}");
    assert!(row.ends_with("| +100.0 % J/token |"), "{row}");
    let md = diff(&dram);
    let row = md.lines().find(|l| l.contains("| sustained | 2 |") && l.contains("J/token")).unwrap_or_else(|| panic!("{md}"));
    assert!(row.ends_with("| not compared: energy rapl:package → rapl:package+dram |"), "{row}");
}

/// A pass folder copied whole (a reader's copy of a shared pass).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
