//! Nothing is started in a run's timed path: a process launched while streams are in flight
//! staggers their request starts and loads the machine being measured. The machine's
//! readings that a run records beside its timings (memory, thermal pressure) come from the
//! pass's samplers, on threads of their own.

#![cfg(target_os = "linux")]

use std::collections::BTreeSet;
use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use harness::pass::read_pass;

use crate::support::*;

/// The pids whose parent is `parent`, from each process's `/proc/PID/stat` (the parent is the
/// field after the state, which follows the command's closing parenthesis).
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return vec![] };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
            let after_comm = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            after_comm.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok()) == Some(parent)
        })
        .collect()
}

#[test]
fn no_process_is_started_while_runs_are_in_flight() {
    let sim = Sim::start(&["--decode-tps", "400", "--prefill-tps", "1000000"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    // Eight streams, 16 runs each of 64 tokens (160 ms at 400 tokens/s): about two seconds of
    // runs in flight.
    let mut child = Command::new(BENCHPASS)
        .args(["run", "--url", &sim.url, "--model", "sim-model", "--engine", "sim", "--progress", "quiet"])
        .args(["--concurrency", "8", "--runs", "16", "--max-tokens", "64", "--ignore-eos", "--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    // A pass against a server benchpass did not start starts no process at all on Linux (its
    // machine facts are read from /proc and sysfs), so any child seen, at any moment, would be
    // one started beside the runs.
    let mut seen = BTreeSet::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let status = loop {
        seen.extend(children_of(child.id()));
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "the pass did not end in 120 s");
        std::thread::sleep(Duration::from_millis(2));
    };
    let stderr = reader.join().unwrap();
    assert!(status.success(), "{status}: {stderr}");
    let pass = read_pass(&out).unwrap();
    assert_eq!(pass.runs.iter().filter(|r| !r.warmup && r.error.is_none()).count(), 16, "{stderr}");
    assert_eq!(seen, BTreeSet::new(), "processes started by benchpass while it ran its runs; {stderr}");
    // harness counts every process it starts while a run is in flight and says so on stderr in
    // debug builds, whatever the OS (on macOS the old per-run `notifyutil` was one).
    assert!(!stderr.contains("was started while a run was in flight"), "{stderr}");
    // Linux has no thermal pressure level: nothing is sampled and no run records one.
    assert!(pass.runs.iter().all(|r| r.thermal_pressure.is_none()));
    // The machine sampler's memory state reaches every run, read on its thread (so the count
    // of children above covers it): swap in use from /proc/meminfo (0 without swap) at both
    // ends. An awake machine fails no run as `system-sleep`, and Linux holds no assertion.
    assert!(pass.runs.iter().all(|r| r.swap_used_before_bytes.is_some() && r.swap_used_after_bytes.is_some()), "{stderr}");
    assert!(pass.runs.iter().all(|r| r.error.as_ref().is_none_or(|e| e.class != "system-sleep")));
    let awake = pass.info.keep_awake.as_ref().expect("pass.json records keep_awake");
    assert_eq!((awake.held, awake.how), (false, harness::pass::machine::KeepAwakeHow::None));
}
