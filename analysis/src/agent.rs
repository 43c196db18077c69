//! The "Agent sessions" figures (docs/agent.md): per cell, what its prefix cache is worth over
//! replayed multi-turn sessions.
//!
//! From the measured runs of the `agent` workload (one run per turn), per cell:
//! - **cold TTFT**: the first turn of each session, median over sessions (nothing is cached
//!   yet: the system prompt, the tools and the task are all prefilled);
//! - **cached TTFT**: the median TTFT of later turns (turn ≥ 1), whose prompt starts with the
//!   whole previous turn;
//! - **cache hit ratio**: Σ cached prompt tokens ÷ Σ prompt tokens over every turn that says
//!   both — a ratio of sums, so long turns weigh as much as the tokens they hold;
//! - **effective prefill rate**: uncached prompt tokens ÷ TTFT of each later turn, median —
//!   what a turn's new tokens cost, the fixed cost of a request included;
//! - **decode**: the median decode rate of turns that reached their cap (a tool call that ends
//!   early decodes a burst, flagged `short-stop` when no turn reached its cap);
//! - **by turn**: the median TTFT, prompt and cached tokens at each turn index, for the chart.
//!
//! Cached tokens come only from what the engine said (`cached_prompt_tokens` in runs.jsonl);
//! where no turn of a cell says, the cache figures are absent and the cell carries
//! `no-cache-info`, never a guess.

use benchpass_format::metrics;
use benchpass_format::{Pass, RunRecord, Workload};

use crate::band::{band, Band};
use crate::cells::MIN_RUNS_FOR_BAND;
use crate::summary::median;

/// A figure with the values it is the median of, and its noise band where there are enough.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub median: f64,
    pub values: Vec<f64>,
    pub band: Option<Band>,
}

impl Figure {
    /// The median of values that measure the same thing (one session's cold turn each, or
    /// turns' decode), with its noise band from 3 values on.
    fn of(values: Vec<f64>) -> Option<Figure> {
        let median = median(&values)?;
        let band = (values.len() >= MIN_RUNS_FOR_BAND).then(|| band(&values, median, 0.0));
        Some(Figure { median, values, band })
    }

    /// The median of values that differ by design (turns of different sizes): their spread is
    /// the trace's, not noise, so it gets no band. Passes that replay the same sessions compare.
    fn without_band(values: Vec<f64>) -> Option<Figure> {
        Some(Figure { median: median(&values)?, values, band: None })
    }
}

/// One turn index of a cell's sessions (medians over the sessions that reached it).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnPoint {
    pub turn: u32,
    pub n: usize,
    pub ttft_ms: Option<f64>,
    pub prompt_tokens: Option<f64>,
    pub cached_prompt_tokens: Option<f64>,
}

/// Why an agent figure may not be read at face value. The codes are stable (the leaderboard's
/// `flags` column carries them); `errors`, `short-stop`, `few-runs` and `token-estimate` mean
/// what they mean everywhere else (analysis/src/reasons.rs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentReason {
    pub code: &'static str,
    pub detail: String,
}

pub const NO_CACHE_INFO: &str = "no-cache-info";

impl AgentReason {
    pub fn sentence(&self) -> &'static str {
        match self.code {
            NO_CACHE_INFO => "the engine reported no cached prompt tokens (usage prompt_tokens_details.cached_tokens or timings.cache_n): the cache figures are unknown, not zero",
            "errors" => "some turns failed",
            "short-stop" => "no turn reached its token cap: the decode rate is a burst, not sustained decode",
            "few-runs" => "fewer than 3 sessions: the cold TTFT has no noise band",
            "token-estimate" => "token counts are estimates (4 characters a token), not the server's",
            _ => "",
        }
    }

    /// `sentence (detail)`, as a footnote prints it.
    pub fn explain(&self) -> String {
        if self.detail.is_empty() {
            self.sentence().to_owned()
        } else {
            format!("{} ({})", self.sentence(), self.detail)
        }
    }
}

/// One cell's agent sessions in one pass.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCell {
    pub pass_id: String,
    pub machine: String,
    pub cell: String,
    pub engine: String,
    pub engine_version: String,
    pub engine_sha256: Option<String>,
    pub model: String,
    pub build_sha256: Option<String>,
    pub lane: String,
    /// Measured sessions with at least one turn recorded.
    pub n_sessions: usize,
    /// Measured turns recorded, failed ones included.
    pub n_turns: usize,
    pub n_failed: usize,
    /// Turns that ended before their cap (tool calls often do on real engines).
    pub n_short: usize,
    pub ttft_cold_ms: Option<Figure>,
    pub ttft_cached_ms: Option<Figure>,
    pub cache_hit_ratio: Option<f64>,
    /// The turns the ratio is over (those that said both counts).
    pub n_cache_turns: usize,
    pub effective_prefill_tps: Option<Figure>,
    pub decode_tps: Option<Figure>,
    /// `decode_tps` is the rate of turns that stopped early (no turn that reached its cap
    /// had a rate): a burst. Decided where the figure is picked, and nowhere else.
    pub decode_is_burst: bool,
    /// The trace each session replayed (`prompt_id`), in session order: turn t of one set is
    /// not turn t of another, so figures over different sets are not compared.
    pub session_set: Vec<String>,
    pub by_turn: Vec<TurnPoint>,
    pub token_count_source: String,
    pub reasons: Vec<AgentReason>,
}

impl AgentCell {
    /// Reason codes joined by `;`, sorted: the leaderboard's `flags`.
    pub fn flags(&self) -> String {
        let mut codes: Vec<&str> = self.reasons.iter().map(|r| r.code).collect();
        codes.sort_unstable();
        codes.dedup();
        codes.join(";")
    }
}

/// The agent cells of `pass`, in the pass's cell order; empty when it ran no agent workload.
pub fn summarize(pass: &Pass) -> Vec<AgentCell> {
    let mut cell_ids: Vec<&str> = pass.info.cells.iter().map(|c| c.id.as_str()).collect();
    // Runs of a cell the pass.json does not list (a torn pass) still count, after the rest.
    for run in crate::runs::counted(pass) {
        if !cell_ids.contains(&run.cell.as_str()) {
            cell_ids.push(&run.cell);
        }
    }
    cell_ids
        .into_iter()
        .filter_map(|id| {
            let runs: Vec<&RunRecord> = crate::runs::counted(pass).filter(|r| r.cell == id && r.workload == Workload::Agent && !r.warmup).collect();
            (!runs.is_empty()).then(|| summarize_cell(pass, id, &runs))
        })
        .collect()
}

fn summarize_cell(pass: &Pass, id: &str, runs: &[&RunRecord]) -> AgentCell {
    let info = pass.info.cells.iter().find(|c| c.id == id);
    let text = |f: fn(&benchpass_format::CellInfo) -> String| info.map(f).unwrap_or_default();
    let ok: Vec<&RunRecord> = runs.iter().copied().filter(|r| !r.is_error()).collect();
    let turn = |r: &RunRecord| r.turn.unwrap_or(0);

    let mut sessions: Vec<u32> = runs.iter().filter_map(|r| r.session).collect();
    sessions.sort_unstable();
    sessions.dedup();
    let session_set: Vec<String> = sessions
        .iter()
        .map(|&s| runs.iter().find(|r| r.session == Some(s)).and_then(|r| r.prompt_id.clone()).unwrap_or_else(|| "?".to_owned()))
        .collect();

    let ttfts = |cold: bool| -> Vec<f64> { ok.iter().filter(|r| (turn(r) == 0) == cold).filter_map(|r| r.ttft_ms).collect() };
    let with_cache: Vec<(&RunRecord, u64, u64)> =
        ok.iter().filter_map(|r| Some((*r, r.prompt_tokens?, r.cached_prompt_tokens?))).filter(|(_, p, c)| c <= p).collect();
    let (sum_cached, sum_prompt) = with_cache.iter().fold((0u64, 0u64), |(c, p), (_, pt, ct)| (c + ct, p + pt));
    let cache_hit_ratio = (sum_prompt > 0).then(|| sum_cached as f64 / sum_prompt as f64);
    let effective: Vec<f64> = with_cache
        .iter()
        .filter(|(r, _, _)| turn(r) > 0)
        .filter_map(|(r, p, c)| metrics::prefill_tps(Some(p - c), r.ttft_ms))
        .collect();

    let short = |r: &RunRecord| benchpass_format::runs::is_short_stop(r);
    let n_short = ok.iter().filter(|r| short(r)).count();
    let decode_of = |reached_cap_only: bool| -> Vec<f64> {
        ok.iter()
            .filter(|r| !reached_cap_only || !short(r))
            .filter_map(|r| metrics::decode_tps(r.completion_tokens, r.decode_ms))
            .collect()
    };
    let mut decode = decode_of(true);
    let mut reasons = Vec::new();
    let decode_is_burst = decode.is_empty() && n_short > 0;
    if decode_is_burst {
        decode = decode_of(false);
        reasons.push(AgentReason { code: "short-stop", detail: format!("{n_short} of {} turns", ok.len()) });
    }

    let n_failed = runs.len() - ok.len();
    if n_failed > 0 {
        reasons.push(AgentReason { code: "errors", detail: format!("{n_failed} of {} turns", runs.len()) });
    }
    if with_cache.is_empty() && !ok.is_empty() {
        reasons.push(AgentReason { code: NO_CACHE_INFO, detail: String::new() });
    }
    if sessions.len() < MIN_RUNS_FOR_BAND {
        reasons.push(AgentReason { code: "few-runs", detail: format!("{} {}", sessions.len(), if sessions.len() == 1 { "session" } else { "sessions" }) });
    }
    let mut sources: Vec<&str> = ok.iter().filter_map(|r| r.token_count_source).map(|s| s.as_str()).collect();
    sources.sort_unstable();
    sources.dedup();
    if sources.contains(&"estimate") {
        reasons.push(AgentReason { code: "token-estimate", detail: String::new() });
    }

    let mut turns: Vec<u32> = ok.iter().map(|r| turn(r)).collect();
    turns.sort_unstable();
    turns.dedup();
    let by_turn = turns
        .into_iter()
        .map(|t| {
            let at: Vec<&&RunRecord> = ok.iter().filter(|r| turn(r) == t).collect();
            let of = |f: fn(&RunRecord) -> Option<f64>| median(&at.iter().filter_map(|r| f(r)).collect::<Vec<_>>());
            TurnPoint {
                turn: t,
                n: at.len(),
                ttft_ms: of(|r| r.ttft_ms),
                prompt_tokens: of(|r| r.prompt_tokens.map(|n| n as f64)),
                cached_prompt_tokens: of(|r| r.cached_prompt_tokens.map(|n| n as f64)),
            }
        })
        .collect();

    AgentCell {
        pass_id: pass.info.pass_id.clone(),
        machine: pass.info.machine.name.clone(),
        cell: id.to_owned(),
        engine: text(|c| c.engine.name.clone()),
        engine_version: text(|c| c.engine.version.clone()),
        engine_sha256: info.and_then(|c| c.engine.sha256.clone()),
        model: text(|c| c.model.clone()),
        build_sha256: info.and_then(|c| c.build.sha256.clone()),
        lane: text(|c| c.lane.clone()),
        n_sessions: sessions.len(),
        n_turns: runs.len(),
        n_failed,
        n_short,
        ttft_cold_ms: Figure::of(ttfts(true)),
        ttft_cached_ms: Figure::without_band(ttfts(false)),
        cache_hit_ratio,
        n_cache_turns: with_cache.len(),
        effective_prefill_tps: Figure::without_band(effective),
        decode_tps: Figure::of(decode),
        decode_is_burst,
        session_set,
        by_turn,
        token_count_source: sources.join("+"),
        reasons,
    }
}

/// The leaderboard metrics of workload `agent`: name, unit.
pub const LEADERBOARD_METRICS: [(&str, &str); 4] =
    [("ttft_cold_ms", "ms"), ("ttft_cached_ms", "ms"), ("cache_hit_ratio", "ratio"), ("decode_tps", "tok/s")];

/// The leaderboard rows of `cells`, in the columns of [`crate::leaderboard::COLUMNS`]
/// (`target_prompt_tokens` 0; a metric with no value gets no row; `ttft_cached_ms` and
/// `cache_hit_ratio` have no band, being over turns of different sizes; `n` is the values a
/// figure is over: sessions for the cold TTFT, turns for the rest). Text is as it was recorded:
/// the leaderboard's CSV guards its text cells against spreadsheets when it writes them.
pub fn leaderboard_rows(cells: &[AgentCell]) -> Vec<[String; 19]> {
    let mut rows = Vec::new();
    for cell in cells {
        let flags = cell.flags();
        for (metric, unit) in LEADERBOARD_METRICS {
            let (value, band, n) = match metric {
                "ttft_cold_ms" => figure_cells(cell.ttft_cold_ms.as_ref()),
                "ttft_cached_ms" => figure_cells(cell.ttft_cached_ms.as_ref()),
                "decode_tps" => figure_cells(cell.decode_tps.as_ref()),
                _ => (cell.cache_hit_ratio, None, cell.n_cache_turns),
            };
            let Some(value) = value else { continue };
            let (low, high) = band.map_or((String::new(), String::new()), |b| (number(b.low), number(b.high)));
            rows.push([
                cell.pass_id.clone(),
                cell.machine.clone(),
                cell.engine.clone(),
                cell.engine_version.clone(),
                cell.engine_sha256.clone().unwrap_or_default(),
                cell.model.clone(),
                cell.build_sha256.clone().unwrap_or_default(),
                cell.lane.clone(),
                Workload::Agent.as_str().to_owned(),
                "0".to_owned(),
                metric.to_owned(),
                unit.to_owned(),
                number(value),
                low,
                high,
                n.to_string(),
                cell.n_short.to_string(),
                flags.clone(),
                cell.token_count_source.clone(),
            ]);
        }
    }
    rows
}

fn figure_cells(figure: Option<&Figure>) -> (Option<f64>, Option<Band>, usize) {
    figure.map_or((None, None, 0), |f| (Some(f.median), f.band, f.values.len()))
}

/// Three decimals, as the leaderboard writes every number.
fn number(v: f64) -> String {
    format!("{v:.3}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchpass_format::TokenCountSource;

    /// A pass of one cell with the given turns: (session, turn, prompt, cached, ttft ms).
    fn pass(turns: &[(u32, u32, u64, Option<u64>, f64)]) -> Pass {
        // Any pass's provenance will do: its one cell, `c0`, is the cell these turns ran in.
        let info = serde_json::from_str(include_str!("../../fixtures/soak/leaky-sim/pass.json")).unwrap();
        let mut pass = Pass::in_memory(info, vec![]);
        for &(session, turn, prompt, cached, ttft) in turns {
            let mut run = RunRecord::unmeasured("c0", Workload::Agent, 0, session, false, 8);
            run.session = Some(session);
            run.turn = Some(turn);
            run.prompt_tokens = Some(prompt);
            run.cached_prompt_tokens = cached;
            run.completion_tokens = Some(8);
            run.finish_reason = Some("length".to_owned());
            run.token_count_source = Some(TokenCountSource::Usage);
            run.ttft_ms = Some(ttft);
            // 8 tokens, 7 intervals over 70 ms: 100 tok/s.
            run.decode_ms = Some(70.0);
            pass.runs.push(run);
        }
        pass
    }

    #[test]
    fn figures_worked_out_by_hand() {
        // Two sessions of three turns. Session 0: 1000 cold at 100 ms, then 1200 (1000 cached)
        // at 30 ms, then 1500 (1200 cached) at 40 ms. Session 1 the same, 10 ms slower throughout.
        let p = pass(&[
            (0, 0, 1000, Some(0), 100.0),
            (0, 1, 1200, Some(1000), 30.0),
            (0, 2, 1500, Some(1200), 40.0),
            (1, 0, 1000, Some(0), 110.0),
            (1, 1, 1200, Some(1000), 40.0),
            (1, 2, 1500, Some(1200), 50.0),
        ]);
        let cells = summarize(&p);
        assert_eq!(cells.len(), 1);
        let c = &cells[0];
        assert_eq!((c.n_sessions, c.n_turns, c.n_failed), (2, 6, 0));
        assert_eq!(c.ttft_cold_ms.as_ref().unwrap().median, 105.0);
        // Cached turns: 30, 40, 40, 50 → 40.
        assert_eq!(c.ttft_cached_ms.as_ref().unwrap().median, 40.0);
        // (0 + 1000 + 1200) × 2 ÷ (1000 + 1200 + 1500) × 2 = 2200 ÷ 3700.
        assert!((c.cache_hit_ratio.unwrap() - 2200.0 / 3700.0).abs() < 1e-12);
        // Uncached ÷ TTFT: 200/0.030, 300/0.040, 200/0.040, 300/0.050 = 6667, 7500, 5000, 6000 → 6333.3.
        assert!((c.effective_prefill_tps.as_ref().unwrap().median - (6000.0 + 20000.0 / 3.0) / 2.0).abs() < 1e-6);
        assert!((c.decode_tps.as_ref().unwrap().median - 100.0).abs() < 1e-9);
        assert_eq!(c.by_turn.iter().map(|t| t.ttft_ms.unwrap()).collect::<Vec<_>>(), vec![105.0, 35.0, 45.0]);
        assert_eq!(c.by_turn[2].cached_prompt_tokens, Some(1200.0));
        assert_eq!(c.flags(), "few-runs", "two sessions have no band");

        let rows = leaderboard_rows(&cells);
        let metrics: Vec<(&str, &str)> = rows.iter().map(|r| (r[10].as_str(), r[12].as_str())).collect();
        assert_eq!(metrics, vec![("ttft_cold_ms", "105.000"), ("ttft_cached_ms", "40.000"), ("cache_hit_ratio", "0.595"), ("decode_tps", "100.000")]);
        assert_eq!((rows[0][8].as_str(), rows[0][9].as_str()), ("agent", "0"));
        assert_eq!((rows[1][13].as_str(), rows[1][14].as_str()), ("", ""), "turns of different sizes have no band");
        assert_eq!(rows[1][15], "4");
        assert_eq!(rows[2][15], "6", "the ratio is over six turns");
    }

    #[test]
    fn an_engine_that_says_nothing_of_its_cache_gets_no_cache_figures_and_the_reason() {
        let p = pass(&[(0, 0, 1000, None, 100.0), (0, 1, 1200, None, 110.0), (1, 0, 1000, None, 100.0), (2, 0, 1000, None, 100.0)]);
        let c = &summarize(&p)[0];
        assert_eq!((c.cache_hit_ratio, c.effective_prefill_tps.as_ref()), (None, None));
        assert_eq!(c.flags(), NO_CACHE_INFO);
        assert!(c.reasons[0].explain().contains("unknown, not zero"));
        assert!(c.ttft_cached_ms.is_some(), "TTFT needs no cache counts");
        let rows = leaderboard_rows(std::slice::from_ref(c));
        assert!(rows.iter().all(|r| r[10] != "cache_hit_ratio"), "no row for a figure nobody measured");
    }
}
