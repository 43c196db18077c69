//! Agent steps in the cell figures, the leaderboard and diffs, on passes whose turns are
//! written by hand: the session figures replace medians over turns of different sizes, the
//! leaderboard names the four agent metrics, and a diff compares cached TTFT turn by turn.

use analysis::cells::{summarize, CellStep, MetricKind};
use analysis::diff::{diff, DiffRow, Verdict};
use analysis::reasons::ReasonCode;
use harness::pass::{Pass, RunRecord, TokenCountSource, Workload};

const SESSIONS: u32 = 3;
const TURNS: u32 = 8;

/// Turn `t` of every session: 1000 + 100·t prompt tokens, the previous turn's all cached.
fn prompt(t: u32) -> u64 {
    1000 + 100 * u64::from(t)
}

/// A pass of one cell (`c0` of the leaky-sim fixture's provenance: engine hashed, weights
/// not) whose sessions' turns took `ttft(session, turn)` ms, with cached tokens reported or
/// not, and a round of quality runs that must stay out of the speed figures.
fn pass(id: &str, ttft: impl Fn(u32, u32) -> f64, cache_info: bool) -> Pass {
    let mut info: harness::pass::PassInfo = serde_json::from_str(include_str!("../../../fixtures/soak/leaky-sim/pass.json")).unwrap();
    info.pass_id = id.to_owned();
    let mut pass = Pass::in_memory(info, vec![]);
    for session in 0..SESSIONS {
        for turn in 0..TURNS {
            let mut run = RunRecord::unmeasured("c0", Workload::Agent, 0, session, false, 8);
            run.session = Some(session);
            run.turn = Some(turn);
            run.prompt_tokens = Some(prompt(turn));
            run.cached_prompt_tokens = cache_info.then(|| if turn == 0 { 0 } else { prompt(turn - 1) });
            run.completion_tokens = Some(8);
            run.finish_reason = Some("length".to_owned());
            run.token_count_source = Some(TokenCountSource::Usage);
            run.ttft_ms = Some(ttft(session, turn));
            // 8 tokens, 7 intervals over 70 ms: 100 tok/s.
            run.decode_ms = Some(70.0);
            pass.runs.push(run);
        }
    }
    for rep in 0..3 {
        let mut run = RunRecord::unmeasured("c0", Workload::Quality, 0, rep, false, 8);
        run.prompt_id = Some(format!("q{rep}"));
        run.completion_tokens = Some(8);
        run.finish_reason = Some("length".to_owned());
        run.ttft_ms = Some(5.0);
        run.decode_ms = Some(7.0);
        pass.runs.push(run);
    }
    pass
}

/// Cold turns 100, 102, 104 ms by session; a later turn 30 ms plus 1 ms a turn, times `slower`.
fn timings(slower: f64) -> impl Fn(u32, u32) -> f64 {
    move |session, turn| if turn == 0 { 100.0 + 2.0 * f64::from(session) } else { (30.0 + f64::from(turn)) * slower }
}

fn agent_step(steps: &[CellStep]) -> &CellStep {
    steps.iter().find(|s| s.workload == Workload::Agent).expect("the agent step")
}

fn row(d: &analysis::diff::Diff, metric: MetricKind) -> &DiffRow {
    d.rows.iter().find(|r| r.workload == Workload::Agent && r.metric == metric).unwrap_or_else(|| panic!("no {metric:?} row"))
}

#[test]
fn an_agent_step_carries_the_session_figures_and_no_median_over_turns() {
    let a = pass("a", timings(1.0), true);
    let steps = summarize(&a).unwrap();
    assert_eq!(steps.len(), 1, "the quality runs are no step of their own: {steps:?}");
    let s = agent_step(&steps);
    assert_eq!((s.ttft.as_ref(), s.prefill.as_ref(), s.prompt_tokens.as_ref()), (None, None, None));
    // Cold: 100, 102, 104 → 102, banded from 3 sessions.
    let cold = s.metric(MetricKind::TtftColdMs).unwrap();
    assert_eq!((cold.median, cold.values.len()), (102.0, 3));
    // Cached: turns 1–7 at 31–37 ms in each session → 34.
    assert_eq!(s.median(MetricKind::TtftCachedMs), Some(34.0));
    // Σ cached ÷ Σ prompt: (0 + 1000 + … + 1600) ÷ (1000 + … + 1700) = 9100 ÷ 10800.
    assert!((s.median(MetricKind::CacheHitRatio).unwrap() - 9100.0 / 10800.0).abs() < 1e-12);
    assert!((s.decode.as_ref().unwrap().median - 100.0).abs() < 1e-9);
    // Later turns are longer by design: their rising TTFT in run order is no drift or cold start.
    assert!(!s.has(ReasonCode::Drift) && !s.has(ReasonCode::ColdStart), "{:?}", s.reasons);

    let csv = analysis::leaderboard::to_csv([steps.as_slice()]);
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    let metrics: Vec<(&str, &str, &str)> = rows.iter().map(|r| (r[8], r[10], r[12])).collect();
    assert_eq!(
        metrics,
        [("agent", "ttft_cold_ms", "102.000"), ("agent", "ttft_cached_ms", "34.000"), ("agent", "cache_hit_ratio", "0.843"), ("agent", "decode_tps", "100.000")]
    );
    assert_eq!(rows[1][13..15], ["", ""], "turns of different sizes: no band");
}

#[test]
fn a_diff_compares_cached_ttft_turn_by_turn_and_cold_ttft_by_session() {
    let a = pass("a", timings(1.0), true);
    let b = pass("b", timings(1.2), true);
    let (sa, sb) = (summarize(&a).unwrap(), summarize(&b).unwrap());
    let d = diff(&a, &sa, &b, &sb);
    let metrics: Vec<&str> = d.rows.iter().map(|r| r.metric.as_str()).collect();
    assert_eq!(metrics, ["ttft_cold_ms", "ttft_cached_ms", "cache_hit_ratio", "decode_tps"], "the quality runs are not compared");

    // Every later turn 20 % slower: 7 of 7 turns up, sign test p = 2 / 2⁷ = 0.015625 ≤ 0.05,
    // and ln 1.2 clears the 2 % floor.
    let cached = row(&d, MetricKind::TtftCachedMs);
    assert_eq!(cached.verdict, Verdict::Slower, "{cached:?}");
    assert_eq!(cached.p_value, Some(0.015625));
    assert!((cached.delta_pct.unwrap() - 20.0).abs() < 1e-9);
    // The cold turns did not change; the cache reused as much on both sides.
    assert_eq!(row(&d, MetricKind::TtftColdMs).verdict, Verdict::WithinNoise);
    let hit = row(&d, MetricKind::CacheHitRatio);
    assert_eq!((hit.verdict, hit.p_value), (Verdict::WithinNoise, Some(1.0)));

    // Swapping A and B mirrors the call.
    let back = diff(&b, &sb, &a, &sa);
    assert_eq!(row(&back, MetricKind::TtftCachedMs).verdict, Verdict::Faster);

    // A side whose engine said nothing of its cache: no ratio to compare, and the reason.
    let c = pass("c", timings(1.0), false);
    let sc = summarize(&c).unwrap();
    assert!(agent_step(&sc).has(ReasonCode::NoCacheInfo));
    let d = diff(&a, &sa, &c, &sc);
    let hit = row(&d, MetricKind::CacheHitRatio);
    assert_eq!((hit.verdict, hit.b_median), (Verdict::Incomparable, None));
    assert!(hit.reasons.iter().any(|r| r.code == ReasonCode::NoCacheInfo), "{:?}", hit.reasons);
    assert_eq!(row(&d, MetricKind::TtftCachedMs).verdict, Verdict::WithinNoise, "TTFT needs no cache counts");
}
