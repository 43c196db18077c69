//! The "Agent sessions" section of a pass report, its figures held to the reference engine's
//! schedule: a pass shaped like the demo's (one replayed session, sustained runs) against
//! the in-process `benchpass sim` with its prefix cache and no jitter, where each turn's TTFT is
//! base latency + (prompt tokens − cached tokens) ÷ prefill rate, and the prompt and cached
//! tokens are worked out from the shipped trace and the sim's own rendering of it. Then the
//! report's HTML opened in headless Chromium, the section's chart and figures in it.

use std::time::Duration;

use harness::client::Prompt;
use harness::pass::{read_pass, Step, Workload};
use harness::runner::{run_pass, RunOptions};
use harness::tokens::reference_tokens;
use sim::SimProfile;

use crate::artifacts;
use crate::browser::{chromium, headless};

const BASE_LATENCY_MS: f64 = 20.0;
const PREFILL_TPS: f64 = 4000.0;
const DECODE_TPS: f64 = 80.0;
/// How far the sim's sending and the client's clock may put one turn's first token from the
/// schedule on two busy cores (as harness/tests/it/agent.rs allows).
const SLACK_MS: f64 = 20.0;

/// A step as a plan or pass.json says it: what it leaves out takes its default.
pub fn step(json: serde_json::Value) -> Step {
    serde_json::from_value(json).expect("a step")
}

fn agent_step() -> Step {
    step(serde_json::json!({ "workload": "agent", "target_prompt_tokens": 0, "max_tokens": 8, "warmup": 0, "runs": 1 }))
}

/// (prompt tokens, cached tokens) of each turn of session 0, from the trace and the sim's
/// rendering: a turn's cached tokens are its longest common prefix with any prompt served before.
fn schedule() -> Vec<(u64, u64)> {
    let turns: Vec<Vec<String>> = harness::workloads::agent::jobs(&agent_step(), 0, false)
        .unwrap()
        .iter()
        .map(|job| {
            let Prompt::Conversation { messages, tools } = &*job.prompt else { panic!("agent turns are conversations") };
            reference_tokens(&sim::prompt_text(messages, tools.as_ref())).into_iter().map(str::to_owned).collect()
        })
        .collect();
    turns
        .iter()
        .enumerate()
        .map(|(t, tokens)| {
            let cached = turns[..t].iter().map(|p| p.iter().zip(tokens).take_while(|(a, b)| a == b).count()).max().unwrap_or(0);
            (tokens.len() as u64, cached as u64)
        })
        .collect()
}

fn ttft_ms((prompt, cached): (u64, u64)) -> f64 {
    BASE_LATENCY_MS + (prompt - cached) as f64 / PREFILL_TPS * 1000.0
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
}

/// The demo's pass, without its jitter, the agent session first (so that nothing else was
/// served before its turns), then three sustained runs for the speed tables.
fn run_demo_shaped_pass(tmp: &tempfile::TempDir) -> harness::pass::Pass {
    let profile = SimProfile {
        base_latency_ms: BASE_LATENCY_MS,
        prefill_tps: PREFILL_TPS,
        decode_tps: DECODE_TPS,
        timings: true,
        prefix_cache: true,
        ..SimProfile::default()
    };
    let sustained = step(serde_json::json!({ "workload": "sustained", "target_prompt_tokens": 0, "max_tokens": 16, "warmup": 0, "runs": 3 }));
    run_sim_pass(profile, vec![agent_step(), sustained], &tmp.path().join("pass"), "agent-demo")
}

/// A pass of `steps` against the in-process reference engine with `profile`, in `dir`.
pub fn run_sim_pass(profile: SimProfile, steps: Vec<Step>, dir: &std::path::Path, pass_id: &str) -> harness::pass::Pass {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let listener = runtime.block_on(sim::bind(([127, 0, 0, 1], 0).into())).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    runtime.spawn(sim::serve(profile.clone(), listener));
    let mut options = RunOptions::new(&url, &profile.model, steps);
    options.engine = "benchpass-sim".to_owned();
    options.request.first_token_timeout = Duration::from_secs(60);
    options.request.idle_timeout = Duration::from_secs(30);
    options.out = Some(dir.to_owned());
    options.pass_id = Some(pass_id.to_owned());
    let summary = runtime.block_on(run_pass(options)).unwrap();
    read_pass(&summary.dir).unwrap()
}

/// The cells of the Agent sessions table's one row, by column name.
fn agent_row(markdown: &str) -> std::collections::BTreeMap<String, String> {
    let section = markdown.split("## Agent sessions").nth(1).expect("the section is there");
    let mut table = section.lines().filter(|l| l.starts_with('|'));
    let split = |l: &str| l.trim_matches('|').split(" | ").map(|c| c.trim().to_owned()).collect::<Vec<_>>();
    let header = split(table.next().unwrap());
    let row = split(table.nth(1).unwrap());
    header.into_iter().zip(row).collect()
}

fn number(text: &str) -> f64 {
    text.split_whitespace().next().unwrap().parse().unwrap_or_else(|_| panic!("a number: {text}"))
}

#[test]
fn the_agent_section_holds_the_schedules_figures_and_opens_in_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let pass = run_demo_shaped_pass(&tmp);
    let truth = schedule();
    assert!(truth.len() >= 10, "the first trace has {} turns", truth.len());

    // Each turn as the schedule has it: prompt and cached tokens exactly, TTFT within the slack.
    let mut turns: Vec<_> = pass.runs.iter().filter(|r| r.workload == Workload::Agent).collect();
    turns.sort_by_key(|r| r.turn);
    assert_eq!(turns.len(), truth.len());
    // On two busy cores (Chromium may run beside this test) a timer can wake late now and
    // then: each turn is held to when the sim actually sent its first token, and the turns
    // together to the schedule, by their median error.
    let mut errors = Vec::new();
    for (run, &(prompt, cached)) in turns.iter().zip(&truth) {
        assert_eq!((run.prompt_tokens, run.cached_prompt_tokens), (Some(prompt), Some(cached)), "turn {:?}", run.turn);
        let ttft = run.ttft_ms.unwrap();
        let sent = run.timings.as_ref().and_then(|t| t["sim_sent_first_token_ms"].as_f64()).expect("the sim runs with timings");
        assert!((ttft - sent).abs() < SLACK_MS, "turn {:?}: {ttft} ms measured, sent at {sent} ms", run.turn);
        errors.push((ttft - ttft_ms((prompt, cached))).abs());
    }
    assert!(median(errors.clone()) < 5.0, "median error against the schedule: {errors:?}");

    // The figures: cold TTFT is turn 0's; cached TTFT the median of the later turns'; the hit
    // ratio Σ cached ÷ Σ prompt.
    // As measured (each turn held to the schedule above), so that the table is checked to the
    // digit it prints.
    let cold = turns[0].ttft_ms.unwrap();
    let cached = median(turns[1..].iter().map(|r| r.ttft_ms.unwrap()).collect());
    assert!((cached - median(truth[1..].iter().map(|&t| ttft_ms(t)).collect())).abs() < SLACK_MS);
    let hit = truth.iter().map(|t| t.1).sum::<u64>() as f64 / truth.iter().map(|t| t.0).sum::<u64>() as f64;
    assert!(truth[1..].iter().all(|t| t.1 > 0) && hit > 0.5, "later turns find the previous one cached");

    let steps = analysis::cells::summarize(&pass).unwrap();
    let rendered = report::render_pass(&pass, &steps).unwrap();
    let md = &rendered.markdown;
    crate::plain_markdown::assert_plain("a report with an agent section", md);
    let row = agent_row(md);
    assert_eq!((row["sessions"].as_str(), row["turns"].as_str()), ("1", truth.len().to_string().as_str()));
    assert!((number(&row["cold TTFT"]) - cold).abs() < 0.051, "{} against {cold:.1}", row["cold TTFT"]);
    assert!((number(&row["cached TTFT"]) - cached).abs() < 0.051, "{} against {cached:.1}", row["cached TTFT"]);
    assert_eq!(row["cache hit"], format!("{:.1} %", hit * 100.0));
    assert!((number(&row["decode"]) / DECODE_TPS - 1.0).abs() < 0.05, "{}", row["decode"]);
    assert_eq!(row["flags"], "`few-runs`", "one session: no band on the cold TTFT");

    // Placed after the speed tables, its chart written beside the others but listed only in
    // its own section; the agent runs are in no speed table.
    let (agent_at, charts_at) = (md.find("## Agent sessions").unwrap(), md.find("## Charts").unwrap());
    assert!(md.find("## Sustained decode").unwrap() < agent_at && agent_at < charts_at);
    assert!(md[agent_at..charts_at].contains("](charts/agent-ttft-by-turn.svg)"));
    assert!(!md[charts_at..].contains("agent-ttft-by-turn"));
    assert!(rendered.charts.iter().any(|c| c.file == "agent-ttft-by-turn.svg"));
    // The speed tables end where the first section of another kind begins (here the
    // reconciliation, which lists the agent step as a step of its own, by name).
    let tables = &md[md.find("## Sustained decode").unwrap()..md.find("\n## Reconciliation").unwrap()];
    assert!(!tables.contains("agent"), "no speed table lists the agent step:\n{tables}");
    assert!(md.contains("| benchpass-sim · sim-model | agent | 0 |"), "the agent step is named in the tables of steps");

    // The leaderboard carries the four session metrics, from the same truth.
    let lb: Vec<Vec<&str>> = rendered.leaderboard_csv.lines().map(|l| l.split(',').collect()).collect();
    let agent_rows: Vec<&Vec<&str>> = lb.iter().filter(|r| r[8] == "agent").collect();
    let metrics: Vec<&str> = agent_rows.iter().map(|r| r[10]).collect();
    assert_eq!(metrics, ["ttft_cold_ms", "ttft_cached_ms", "cache_hit_ratio", "decode_tps"]);
    assert_eq!(agent_rows[2][12], format!("{hit:.3}"));
    assert!((agent_rows[0][12].parse::<f64>().unwrap() - cold).abs() < 0.001);

    // The HTML in a real browser: the section, its chart and its figures.
    let Some(browser) = chromium() else {
        assert!(std::env::var_os("CI").is_none(), "Chromium is missing in CI");
        eprintln!("skipped the browser half: no chromium on PATH (apt-get install chromium)");
        return;
    };
    let html = tmp.path().join("report.html");
    std::fs::write(&html, &rendered.html).unwrap();
    let url = format!("file://{}", html.display());
    let dom = headless(browser, &["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    let section = dom.split("<section id=\"agent-sessions\">").nth(1).expect("the section is in the DOM").split("</section>").next().unwrap();
    assert!(section.contains("<h2>Agent sessions</h2>"));
    assert_eq!(section.matches("<svg").count(), 1, "the TTFT-by-turn chart is inline");
    assert!(section.contains("prompt tokens, dashed"), "its second axis is drawn");
    for figure in [&row["cold TTFT"], &row["cached TTFT"], &row["cache hit"], &row["decode"]] {
        assert!(section.contains(&format!("<td>{figure}</td>")), "{figure} is in the table:\n{section}");
    }
    let shot = artifacts().join("agent-demo-phone.png");
    let _ = std::fs::remove_file(&shot);
    headless(browser, &["--window-size=412,3000", &format!("--screenshot={}", shot.display()), &url]);
    assert_eq!(&std::fs::read(&shot).expect("the screenshot was written")[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn a_server_that_says_nothing_of_its_cache_has_its_later_turns_not_called_cached() {
    let tmp = tempfile::tempdir().unwrap();
    // No prefix cache: the sim reports no cached count, and each later turn, a longer prompt,
    // is slower than the first, not faster.
    let profile = SimProfile { base_latency_ms: BASE_LATENCY_MS, prefill_tps: PREFILL_TPS, decode_tps: DECODE_TPS, ..SimProfile::default() };
    let pass = run_sim_pass(profile, vec![agent_step()], &tmp.path().join("pass"), "agent-no-cache");
    let steps = analysis::cells::summarize(&pass).unwrap();
    let rendered = report::render_pass(&pass, &steps).unwrap();
    let row = agent_row(&rendered.markdown);
    assert!(row["cached TTFT"].ends_with(" ms (no cache info)"), "{row:?}");
    assert_eq!(row["cache hit"], "–");
    let summary = report::summary::render_markdown(&pass, &steps);
    assert!(summary.contains(" · later turns (no cache info) "), "{summary}");
    assert!(!summary.contains(" · cached "), "{summary}");
}
