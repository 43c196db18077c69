//! `kill -9` inside an agent session and inside a quality round, then `--resume`: the finished
//! pass holds every planned turn and prompt exactly once among the runs that count, and says
//! `complete` only then. A session cut short is run again whole on the resumed engine (its turns
//! are timed on the prefix cache the earlier turns fill); a round resumes at its next prompt.
//!
//! The runs are read as the raw lines of `runs.jsonl`, and which count is worked out here by
//! the rule of docs/raw-format.md (a run whose slot has runs of a later `attempt` is
//! superseded), so that these tests read a pass as any other tool would.

use std::path::{Path, PathBuf};

use harness::pass::{read_pass, PassStatus};
use harness::workloads::{agent, quality};
use serde_json::Value;

use crate::support::*;

/// A one-cell plan on the sim (started with `sim_args`) with one workload, `workload` (its
/// TOML lines).
fn plan(dir: &Path, sim_args: &str, workload: &str) -> PathBuf {
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[[engines]]\nname = \"sim\"\npreset = \"benchpass-sim\"\nhealth_timeout_s = 30\n\
             start = [\"{{benchpass}}\", \"sim\", \"--port\", \"{{port}}\", {sim_args}]\nport = {}\n\n\
             [[models]]\nname = \"sim-model\"\n\n[[cells]]\nengine = \"sim\"\nmodel = \"sim-model\"\n\n\
             [[workloads]]\n{workload}\n",
            free_port()
        ),
    )
    .unwrap();
    plan
}

/// One run's place and what the tests read of it, from its raw line.
#[derive(Debug, Clone)]
struct Raw {
    /// (warmup, rep, turn or prompt id): the place within the plan's one cell and workload.
    place: (bool, u64, String),
    attempt: u64,
    failed: bool,
    prompt_tokens: Option<u64>,
    cached_prompt_tokens: Option<u64>,
    output_sha256: Option<String>,
}

fn raw_runs(out: &Path) -> Vec<Raw> {
    let text = std::fs::read_to_string(out.join(harness::pass::RUNS_FILE)).unwrap_or_default();
    // A torn last line (the kill landed mid-append) is no run.
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|run| {
            let within = match (&run["turn"], &run["prompt_id"]) {
                (Value::Number(turn), _) => format!("turn {turn}"),
                (_, Value::String(prompt)) => prompt.clone(),
                _ => String::new(),
            };
            Raw {
                place: (run["warmup"].as_bool().unwrap(), run["rep"].as_u64().unwrap(), within),
                attempt: run["attempt"].as_u64().unwrap_or(0),
                failed: !run["error"].is_null(),
                prompt_tokens: run["prompt_tokens"].as_u64(),
                cached_prompt_tokens: run["cached_prompt_tokens"].as_u64(),
                output_sha256: run["output_sha256"].as_str().map(str::to_owned),
            }
        })
        .collect()
}

/// The runs that count: those whose slot (warmup, rep) has no run of a later attempt.
fn counted(runs: &[Raw]) -> Vec<Raw> {
    let latest = |slot: (bool, u64)| runs.iter().filter(|r| (r.place.0, r.place.1) == slot).map(|r| r.attempt).max().unwrap();
    runs.iter().filter(|r| r.attempt == latest((r.place.0, r.place.1))).cloned().collect()
}

/// The slots (warmup, rep) that some but not all of their `planned` places have among the
/// runs that count: a session or round the last kill cut short.
fn cut_short(runs: &[Raw], planned: &[(bool, u64, String)]) -> Vec<(bool, u64)> {
    let counted = counted(runs);
    let mut slots: Vec<(bool, u64)> = planned.iter().map(|p| (p.0, p.1)).collect();
    slots.dedup();
    slots
        .into_iter()
        .filter(|&slot| {
            let n = counted.iter().filter(|r| (r.place.0, r.place.1) == slot).count();
            n > 0 && n < planned.iter().filter(|p| (p.0, p.1) == slot).count()
        })
        .collect()
}

/// Starts the plan `n_kills` times, kills each (-9) at a seeded moment between `from_ms` and
/// `from_ms + span_ms` after its start unless it has ended, resuming the pass after each; then
/// resumes it to the end. Returns how many kills cut a session or round short.
fn kill_9_at_seeded_moments(plan: &Path, out: &Path, seed: u64, n_kills: usize, (from_ms, span_ms): (u64, u64), planned: &[(bool, u64, String)]) -> usize {
    let args = |resume: bool| {
        // Kills are timed from the start: no self-check before the first cell to take their window.
        let mut args = vec!["run".to_owned(), plan.display().to_string(), "--gap-scale".into(), "0".into(), "--progress".into(), "quiet".into(), "--no-self-check".into()];
        args.extend([if resume { "--resume" } else { "--out" }.to_owned(), out.display().to_string()]);
        args
    };
    let mut state = seed;
    let mut cuts = 0;
    for _ in 0..n_kills {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let delay = from_ms + (state >> 33) % span_ms;
        let resume = out.join(harness::pass::PASS_FILE).exists();
        let mut child = std::process::Command::new(BENCHPASS)
            .args(args(resume))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay));
        let killed = child.try_wait().unwrap().is_none();
        if killed {
            child.kill().unwrap();
        }
        child.wait().unwrap();
        if out.join(harness::pass::PASS_FILE).exists() {
            // Whatever the kill interrupted, the pass on disk reads.
            read_pass(out).unwrap();
            cuts += usize::from(killed && !cut_short(&raw_runs(out), planned).is_empty());
        }
    }
    let finish = benchpass(&args(true).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(finish.status.success(), "{:?}: {}", finish.status, String::from_utf8_lossy(&finish.stderr));
    cuts
}

/// The planned places in sorted order, and those of the runs that count, sorted: equal when
/// every planned place has exactly one run that counts.
fn assert_each_planned_place_once(runs: &[Raw], planned: &[(bool, u64, String)]) {
    let mut expected = planned.to_vec();
    expected.sort();
    let mut got: Vec<_> = counted(runs).into_iter().map(|r| r.place).collect();
    got.sort();
    let missing: Vec<_> = expected.iter().filter(|p| !got.contains(p)).collect();
    let twice: Vec<_> = got.windows(2).filter(|w| w[0] == w[1]).map(|w| &w[0]).collect();
    assert!(missing.is_empty() && twice.is_empty(), "{} counted runs for {} planned places; missing {missing:?}; twice {twice:?}", got.len(), expected.len());
}

#[test]
fn agent_sessions_killed_mid_session_are_run_again_whole_and_the_pass_counts_every_turn_once() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    // A turn takes about 40 ms (20 ms of latency, 8 tokens at 1000 tok/s, what is not cached at
    // 100k tok/s); a session of 10 to 20 turns well under a second.
    let sim = r#""--prefix-cache", "--base-latency-ms", "20", "--prefill-tps", "100000", "--decode-tps", "1000""#;
    let plan = plan(tmp.path(), sim, "kind = \"agent\"\nsessions = 2\nwarmup = 1\nmax_tokens = 8");
    let out = tmp.path().join("pass");
    let traces = agent::traces().unwrap();
    // Measured sessions replay traces 0 and 1, the warmup session the one after them.
    let turns = |warmup: bool, rep: u64, trace: usize| (0..traces[trace].n_turns()).map(move |t| (warmup, rep, format!("turn {t}")));
    let planned: Vec<_> = turns(true, 0, 2).chain(turns(false, 0, 0)).chain(turns(false, 1, 1)).collect();

    let cuts = kill_9_at_seeded_moments(&plan, &out, 0xA6E27, 5, (500, 1500), &planned);
    let runs = raw_runs(&out);
    assert_each_planned_place_once(&runs, &planned);
    assert!(cuts >= 2, "the kills cut sessions short ({cuts} of 5)");
    let counted = counted(&runs);
    let n_superseded = runs.len() - counted.len();
    assert!(n_superseded > 0, "the turns of a session cut short stay on disk");
    assert!(runs.iter().all(|r| !r.failed), "every engine left behind was stopped before its cell ran again");
    let pass = read_pass(&out).unwrap();
    assert_eq!(pass.info.status, PassStatus::Complete);
    assert!(pass.info.cells[0].restarted_on_resume);

    // Every counted turn after the first found the whole turn before it in the engine's
    // prefix cache: each session ran whole on one engine, never continued on a cold one.
    for slot in [(true, 0), (false, 0), (false, 1)] {
        let mut session: Vec<&Raw> = counted.iter().filter(|r| (r.place.0, r.place.1) == slot).collect();
        session.sort_by_key(|r| r.place.2.trim_start_matches("turn ").parse::<u32>().unwrap());
        for pair in session.windows(2) {
            assert_eq!(pair[1].cached_prompt_tokens, pair[0].prompt_tokens, "{:?} follows {:?} on a warm cache", pair[1].place, pair[0].place);
        }
    }
    // The figures count each measured turn once.
    let cells = analysis::agent::summarize(&pass);
    assert_eq!((cells[0].n_sessions, cells[0].n_turns, cells[0].n_failed), (2, traces[0].n_turns() + traces[1].n_turns(), 0));
    // The report says how many runs were left out.
    let report = tmp.path().join("report");
    let rendered = benchpass(&["report", out.to_str().unwrap(), "--out", report.to_str().unwrap()]);
    assert!(rendered.status.success(), "{}", String::from_utf8_lossy(&rendered.stderr));
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains(&format!("{} runs recorded ({n_superseded} of them superseded", runs.len())), "{}", md.lines().nth(2).unwrap_or_default());
}

#[test]
fn quality_rounds_killed_mid_round_resume_at_the_next_prompt_and_the_pass_counts_every_prompt_once() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    // A prompt takes about 40 ms (25 ms of latency, 12 tokens at 1000 tok/s): round 0's 52
    // prompts about 2 s.
    let sim = r#""--base-latency-ms", "25", "--decode-tps", "1000""#;
    let plan = plan(tmp.path(), sim, "kind = \"quality\"\nruns = 2\nwarmup = 1\nmax_tokens = 12\ntop_logprobs = 5");
    let out = tmp.path().join("pass");
    let prompts = quality::prompts().unwrap();
    // The warmup round and round 1 run the repeated prompts, round 0 every prompt.
    let round = |warmup: bool, rep: u64| prompts.iter().filter(move |p| p.repeat || (rep == 0 && !warmup)).map(move |p| (warmup, rep, p.id.clone()));
    let planned: Vec<_> = round(true, 0).chain(round(false, 0)).chain(round(false, 1)).collect();
    assert_eq!(planned.len(), 72);

    // A resume takes about 1.4 s to stop the engine left running and start a fresh one: the
    // kills land up to 1 s into its runs: up to about 25 prompts.
    let cuts = kill_9_at_seeded_moments(&plan, &out, 0x9A117, 5, (1500, 900), &planned);
    let runs = raw_runs(&out);
    assert_each_planned_place_once(&runs, &planned);
    assert!(cuts >= 2, "the kills cut rounds short ({cuts} of 5)");
    // A prompt is one request: the resume makes the ones missing, never a whole round again.
    assert_eq!(runs.len(), planned.len(), "no prompt was run twice");
    assert!(runs.iter().all(|r| r.attempt == 0 && !r.failed));
    let pass = read_pass(&out).unwrap();
    assert_eq!(pass.info.status, PassStatus::Complete);

    // Each prompt's greedy output is the one an uninterrupted pass gives it.
    let fresh_out = tmp.path().join("fresh");
    let fresh = benchpass(&["run", plan.to_str().unwrap(), "--gap-scale", "0", "--progress", "quiet", "--out", fresh_out.to_str().unwrap()]);
    assert!(fresh.status.success(), "{}", String::from_utf8_lossy(&fresh.stderr));
    let outputs = |runs: Vec<Raw>| {
        let mut o: Vec<_> = runs.into_iter().map(|r| (r.place, r.output_sha256)).collect();
        o.sort();
        o
    };
    assert_eq!(outputs(runs), outputs(raw_runs(&fresh_out)));
}
