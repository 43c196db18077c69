//! Per-cell figures of one pass: for each cell, workload and prompt target, the run counts,
//! the median of each metric with its noise band, and every reason the figures may not be
//! read at face value, including those that come from comparing engines in one row.
//!
//! Two workloads are not speed steps like the others:
//! - **agent**: a step's runs are the turns of replayed sessions, whose prompts differ in size
//!   by design, so a median TTFT, prefill rate or prompt size over them (and a band around it)
//!   means nothing. An agent step carries the figures of `crate::agent` instead: cold TTFT
//!   (one value per session, with its band), decode, and the whole [`AgentCell`] (cached TTFT,
//!   cache hit ratio, per-turn medians); its TTFT, prefill and prompt-size figures are absent.
//! - **quality**: its runs measure output, not speed (52 different prompts, stopping at EOS);
//!   they are left out here entirely, so no speed table, leaderboard row or diff sees them.
//!   `crate::quality` compares them (docs/quality.md).

use std::collections::BTreeMap;

use benchpass_format::{Pass, TokenCountSource, Workload};
use polars::prelude::*;

use crate::agent::AgentCell;
use crate::band::{band, Band};
use crate::reasons::{Reason, ReasonCode};
use crate::runs::{run_facts, RunFacts};

/// How far actual prompt tokens may be from the target before `prompt-size` is raised: 10 %
/// (a chat template adds a few tokens; a tokenizer that differs from the cutter's adds more).
pub const PROMPT_TARGET_MARGIN: f64 = 0.10;
/// How far actual prompt tokens may differ between figures compared: 5 %.
pub const PROMPT_SPREAD_MARGIN: f64 = 0.05;
/// How far benchpass's decode rate may be from the server's own before `reconciliation` is
/// raised: 5 %. On loopback the two agree to well under 1 % (docs/statistics.md).
pub const RECONCILE_MARGIN: f64 = 0.05;
/// How far the decode rate must move from the first run to the last, every run slower (or
/// every run faster) than the one before, for `drift`: 5 % of the first. Also how far beyond
/// the other runs a first run must lie for `cold-start`.
pub const DRIFT_MARGIN: f64 = 0.05;
/// Runs a band needs.
pub const MIN_RUNS_FOR_BAND: usize = 3;
/// The share of a run's prompt the server must say it served from its prefix cache for
/// `prefix-cached`: 10 %. A chat template's shared opening is a few tokens of a prompt-matrix
/// prompt; past a tenth of the prompt, the prefill skipped moves TTFT by more than the runs'
/// usual spread.
pub const PREFIX_CACHED_SHARE: f64 = 0.10;

#[cfg(test)]
mod tests {
    use super::{beyond_the_rest, trend};

    #[test]
    fn only_a_steady_move_beyond_the_margin_is_drift_either_way() {
        // 100 → 94: −6 %, every run slower.
        assert!(trend(&[100.0, 97.0, 94.0]).is_some_and(|d| d.starts_with("falling")));
        assert!(trend(&[100.0, 98.0, 96.0]).is_none(), "−4 % is inside the margin");
        assert!(trend(&[100.0, 90.0, 92.0]).is_none(), "not monotone: scatter");
        assert!(trend(&[100.0, 90.0]).is_none(), "two runs make no trend");
        // 100 → 106: +6 %, every run faster (a warming cache).
        assert!(trend(&[100.0, 103.0, 106.0]).is_some_and(|d| d.starts_with("rising")));
        assert!(trend(&[100.0, 102.0, 104.0]).is_none(), "+4 % is inside the margin");
    }

    #[test]
    fn a_first_run_beyond_the_others_by_the_margin_is_a_cold_start() {
        // The others span 100–102; 94 is 100/94 − 1 = 6.4 % below their lowest.
        assert!(beyond_the_rest(&[94.0, 100.0, 102.0], "ms").is_some());
        // 97: 3.1 % below; 105: 2.9 % above 102: inside the margin.
        assert!(beyond_the_rest(&[97.0, 100.0, 102.0], "ms").is_none());
        assert!(beyond_the_rest(&[105.0, 100.0, 102.0], "ms").is_none());
        assert!(beyond_the_rest(&[108.0, 100.0, 102.0], "ms").is_some(), "108/102 − 1 = 5.9 %");
        assert!(beyond_the_rest(&[50.0, 100.0], "ms").is_none(), "one other run is no rest to compare with");
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MetricKind {
    DecodeTps,
    TtftMs,
    PrefillTps,
    PromptTokens,
    /// Agent steps: TTFT of each session's first turn (nothing cached).
    TtftColdMs,
    /// Agent steps: TTFT of the later turns, whose prompts start with the previous turn.
    TtftCachedMs,
    /// Agent steps: Σ cached prompt tokens ÷ Σ prompt tokens.
    CacheHitRatio,
    /// Joules per output token over the decode span (docs/metrics.md "Energy").
    JoulesPerToken,
    /// Joules per prompt token over prefill.
    JoulesPerPromptToken,
    /// Mean power over the run.
    MeanWatts,
}

impl MetricKind {
    /// The metrics of a speed step (every workload but agent).
    pub const ALL: [MetricKind; 4] = [MetricKind::DecodeTps, MetricKind::TtftMs, MetricKind::PrefillTps, MetricKind::PromptTokens];
    /// The metrics of an agent step, named as the leaderboard names them (docs/agent.md).
    pub const AGENT: [MetricKind; 4] = [MetricKind::TtftColdMs, MetricKind::TtftCachedMs, MetricKind::CacheHitRatio, MetricKind::DecodeTps];
    /// The energy metrics of a step whose runs carry energy ([`CellStep::energy`]).
    pub const ENERGY: [MetricKind; 3] = [MetricKind::JoulesPerToken, MetricKind::JoulesPerPromptToken, MetricKind::MeanWatts];

    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::DecodeTps => "decode_tps",
            MetricKind::TtftMs => "ttft_ms",
            MetricKind::PrefillTps => "prefill_tps",
            MetricKind::PromptTokens => "prompt_tokens",
            MetricKind::TtftColdMs => "ttft_cold_ms",
            MetricKind::TtftCachedMs => "ttft_cached_ms",
            MetricKind::CacheHitRatio => "cache_hit_ratio",
            MetricKind::JoulesPerToken => "joules_per_token",
            MetricKind::JoulesPerPromptToken => "joules_per_prompt_token",
            MetricKind::MeanWatts => "mean_watts",
        }
    }

    /// The metric as a reader reads it, with its unit (reports and diffs; CSVs keep
    /// [`MetricKind::as_str`]).
    pub fn label(self) -> &'static str {
        match self {
            MetricKind::DecodeTps => "decode tok/s",
            MetricKind::TtftMs => "TTFT ms",
            MetricKind::PrefillTps => "prefill tok/s",
            MetricKind::PromptTokens => "prompt tokens",
            MetricKind::TtftColdMs => "cold TTFT ms",
            MetricKind::TtftCachedMs => "cached TTFT ms",
            MetricKind::CacheHitRatio => "cache hit ratio",
            MetricKind::JoulesPerToken => "J/token",
            MetricKind::JoulesPerPromptToken => "J/prompt token",
            MetricKind::MeanWatts => "mean W",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            MetricKind::DecodeTps | MetricKind::PrefillTps => "tok/s",
            MetricKind::TtftMs | MetricKind::TtftColdMs | MetricKind::TtftCachedMs => "ms",
            MetricKind::PromptTokens => "tokens",
            MetricKind::CacheHitRatio => "ratio",
            MetricKind::JoulesPerToken | MetricKind::JoulesPerPromptToken => "J/token",
            MetricKind::MeanWatts => "W",
        }
    }

    /// For TTFT lower is faster; a higher cache hit ratio is a faster agent session. For
    /// energy, less is better: a diff calls less energy `faster`, as it calls any better figure.
    pub fn higher_is_faster(self) -> bool {
        !matches!(self, MetricKind::TtftMs | MetricKind::TtftColdMs | MetricKind::TtftCachedMs) && !self.is_energy()
    }

    pub fn is_energy(self) -> bool {
        MetricKind::ENERGY.contains(&self)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub kind: MetricKind,
    pub median: f64,
    /// The per-run values the median came from, in run order.
    pub values: Vec<f64>,
    pub band: Band,
}

/// One cell at one workload and target.
#[derive(Debug, Clone, PartialEq)]
pub struct CellStep {
    pub pass_id: String,
    pub machine: String,
    pub cell: String,
    pub engine: String,
    pub engine_version: String,
    pub engine_sha256: Option<String>,
    pub model: String,
    pub family: String,
    pub build_sha256: Option<String>,
    pub lane: String,
    pub workload: Workload,
    pub target_prompt_tokens: u64,
    /// Streams in flight at once while its runs ran (`RunRecord::concurrency`): a step of the
    /// same cell, workload and target at another concurrency is another step, never merged.
    pub concurrency: u32,
    pub max_tokens: u64,
    /// How the step's requests were made (API, temperature, way past EOS, arrival rate): with
    /// the fields above, its comparison key (`crate::key`).
    pub request: crate::key::RequestFacts,
    /// Measured runs the pass planned for this step, where the pass says.
    pub n_planned: Option<u32>,
    /// Measured runs recorded (warmups are not counted).
    pub n_runs: usize,
    pub n_failed: usize,
    pub n_short: usize,
    pub decode: Option<Metric>,
    /// `decode` is the rate of runs that stopped before their cap, because no run that
    /// reached it has a rate: a burst, never sustained decode. Set where the figure is picked
    /// ([`cell_step`], `agent_step`), so the star, the best mark and the diff cannot disagree
    /// with the figure about it.
    pub decode_burst: bool,
    pub ttft: Option<Metric>,
    pub prefill: Option<Metric>,
    pub prompt_tokens: Option<Metric>,
    /// The sources of the token counts, joined by `+` (`usage`, `usage+estimate`, …).
    pub token_count_source: String,
    /// Accepted ÷ proposed draft tokens, where the engine reports them.
    pub spec_acceptance: Option<f64>,
    /// Median of (benchpass decode rate ÷ the server's own), where the server reports timings.
    pub reconciliation: Option<f64>,
    /// The engine's peak resident memory over the step's runs, where it was sampled.
    pub server_peak_rss_bytes: Option<u64>,
    /// The lowest and highest median actual prompt tokens among the engines of this cell's
    /// row (same family, lane, workload and target), when the row holds several engines.
    pub row_prompt_tokens: Option<(f64, f64)>,
    /// Agent steps: the cold TTFT, one value per session, with its band.
    pub ttft_cold: Option<Metric>,
    /// Agent steps: the session figures (`crate::agent`), cached TTFT and cache hit ratio
    /// among them (those have no band: their turns differ in size by design).
    pub agent: Option<AgentCell>,
    /// Steps whose streams ran side by side (concurrency > 1, a speed workload): aggregate
    /// throughput and latency percentiles (`crate::serving`).
    pub serving: Option<crate::serving::Serving>,
    /// Steps whose runs carry energy (one stream at a time, a cell with a source).
    pub energy: Option<EnergyStep>,
/// The pass's measurer figures (`crate::floor`): CPU µs per streamed token and the
    /// self-check's largest TTFT error, the same for every step of a pass.
    pub measurer_us_per_token: Option<f64>,
    pub self_check_ttft_error_ms: Option<f64>,
        pub reasons: Vec<Reason>,
}

/// A step's energy figures, each a median over its runs with a band, and where they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct EnergyStep {
    /// `source:domain` (`rapl:package+dram`): energy of two steps is compared only where this is
    /// the same ([`crate::key::energy_comparable`]).
    pub key: String,
    /// The source's sampling interval, in milliseconds.
    pub interval_ms: u64,
    /// The cell's idle baseline, in watts, where it was measured.
    pub idle_watts: Option<f64>,
    pub joules_per_token: Option<Metric>,
    /// Joules per output token above the idle baseline (the decode span's joules less idle
    /// watts × its seconds, over the same tokens).
    pub joules_per_token_above_idle: Option<f64>,
    pub joules_per_prompt_token: Option<Metric>,
    pub mean_watts: Option<Metric>,
}

impl CellStep {
    /// The metric as a median over values that measure the same thing, with a band. An agent
    /// step's cached TTFT and cache hit ratio are not such a metric (see [`CellStep::agent`]).
    pub fn metric(&self, kind: MetricKind) -> Option<&Metric> {
        match kind {
            MetricKind::DecodeTps => self.decode.as_ref(),
            MetricKind::TtftMs => self.ttft.as_ref(),
            MetricKind::PrefillTps => self.prefill.as_ref(),
            MetricKind::PromptTokens => self.prompt_tokens.as_ref(),
            MetricKind::TtftColdMs => self.ttft_cold.as_ref(),
            MetricKind::TtftCachedMs | MetricKind::CacheHitRatio => None,
            MetricKind::JoulesPerToken => self.energy.as_ref()?.joules_per_token.as_ref(),
            MetricKind::JoulesPerPromptToken => self.energy.as_ref()?.joules_per_prompt_token.as_ref(),
            MetricKind::MeanWatts => self.energy.as_ref()?.mean_watts.as_ref(),
        }
    }

    /// The figure of `kind`, whatever it is a median of: [`CellStep::metric`]'s, or an agent
    /// step's cached TTFT and cache hit ratio.
    pub fn median(&self, kind: MetricKind) -> Option<f64> {
        let agent = self.agent.as_ref();
        match kind {
            MetricKind::TtftCachedMs => agent?.ttft_cached_ms.as_ref().map(|f| f.median),
            MetricKind::CacheHitRatio => agent?.cache_hit_ratio,
            _ => self.metric(kind).map(|m| m.median),
        }
    }

    /// The metrics this step has figures for, in the order rows list them: an agent step's
    /// own four, or the speed metrics.
    pub fn metric_kinds(&self) -> &'static [MetricKind] {
        if self.workload == Workload::Agent {
            &MetricKind::AGENT
        } else {
            &MetricKind::ALL
        }
    }

    pub fn has(&self, code: ReasonCode) -> bool {
        self.reasons.iter().any(|r| r.code == code)
    }

    /// The decode rate came from runs that stopped early: it is a burst.
    pub fn decode_is_burst(&self) -> bool {
        self.decode_burst
    }
}

/// The figures of every cell, workload and target of `pass`, in pass order.
pub fn summarize(pass: &Pass) -> PolarsResult<Vec<CellStep>> {
    Ok(summarize_many(std::slice::from_ref(pass))?.pop().unwrap_or_default())
}

/// [`summarize`] for many passes at once, in one polars pass over all their runs (what a
/// leaderboard over thousands of passes needs); one list of figures per pass, in order.
pub fn summarize_many(passes: &[Pass]) -> PolarsResult<Vec<Vec<CellStep>>> {
    // `run_facts` gives one row per run in order, so each fact pairs with its run's concurrency.
    let (facts, concurrency): (Vec<RunFacts>, Vec<u32>) = passes
        .iter()
        .flat_map(|p| run_facts(p).into_iter().zip(crate::runs::counted(p).map(|r| r.concurrency)))
        .filter(|(f, _)| !f.warmup && f.workload != Workload::Quality)
        .unzip();
    let groups = aggregate(&facts, &concurrency)?;
    let mut per_pass: Vec<Vec<CellStep>> = vec![Vec::new(); passes.len()];
    let index: BTreeMap<&str, usize> = passes.iter().enumerate().map(|(i, p)| (p.info.pass_id.as_str(), i)).collect();
    // Facts are grouped by pass in order, so each group's runs are one contiguous slice.
    let mut start_of: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (i, f) in facts.iter().enumerate() {
        start_of.entry(f.pass_id.as_str()).and_modify(|e| e.1 = i + 1).or_insert((i, i + 1));
    }
    // The agent figures of a pass, worked out once for all its agent steps.
    let mut agent_cells: BTreeMap<usize, Vec<AgentCell>> = BTreeMap::new();
    for g in groups {
        let Some(&i) = index.get(g.pass_id.as_str()) else { continue };
        let (from, to) = start_of[g.pass_id.as_str()];
        let mut step = cell_step(&passes[i], &facts[from..to], &concurrency[from..to], g);
        if crate::serving::step_has_figures(&passes[i].info, step.workload, step.target_prompt_tokens, step.concurrency) {
            let runs: Vec<&benchpass_format::RunRecord> = crate::runs::counted(&passes[i])
                .filter(|r| !r.warmup && r.cell == step.cell && r.workload == step.workload)
                .filter(|r| r.target_prompt_tokens == step.target_prompt_tokens && r.concurrency == step.concurrency)
                .collect();
            let mut serving = crate::serving::figures_under(step.concurrency, &runs, &crate::serving::load_of(&passes[i].info));
            if let Some(cell) = passes[i].info.cells.iter().find(|c| c.id == step.cell) {
                serving.energy = crate::serving::energy(cell, step.workload, step.target_prompt_tokens, step.max_tokens, &serving);
            }
            if let Some(rate) = serving.rate.as_ref().filter(|r| r.short()) {
                step.reasons.push(crate::reasons::rate_not_held(rate));
            }
            step.serving = Some(serving);
        }
        if step.workload == Workload::Agent {
            let cells = agent_cells.entry(i).or_insert_with(|| crate::agent::summarize(&passes[i]));
            if let Some(cell) = cells.iter().find(|c| c.cell == step.cell) {
                agent_step(&mut step, cell.clone());
            }
        }
        per_pass[i].push(step);
    }
    for steps in &mut per_pass {
        compare_rows(steps);
    }
    Ok(per_pass)
}

/// What polars works out per (pass, cell, workload, target).
struct Group {
    pass_id: String,
    cell: String,
    workload: Workload,
    target: u64,
    concurrency: u32,
    n: usize,
    n_failed: usize,
    n_short: usize,
    max_tokens: u64,
    decode_full: (Option<f64>, Vec<f64>),
    decode_short: (Option<f64>, Vec<f64>),
    ttft: (Option<f64>, Vec<f64>),
    prefill: (Option<f64>, Vec<f64>),
    prompt: (Option<f64>, Vec<f64>),
    draft_n: u64,
    draft_accepted: u64,
}

/// Groups measured runs and takes each metric's median and values. Polars' median of an even
/// count is the mean of the middle two (linear interpolation at ½), the textbook definition.
fn aggregate(facts: &[RunFacts], concurrency: &[u32]) -> PolarsResult<Vec<Group>> {
    let f64s = |get: fn(&RunFacts) -> Option<f64>| facts.iter().map(get).collect::<Vec<_>>();
    let df = df!(
        "pass_id" => facts.iter().map(|f| f.pass_id.as_str()).collect::<Vec<_>>(),
        "cell" => facts.iter().map(|f| f.cell.as_str()).collect::<Vec<_>>(),
        "workload" => facts.iter().map(|f| f.workload.as_str()).collect::<Vec<_>>(),
        "target" => facts.iter().map(|f| f.target_prompt_tokens).collect::<Vec<_>>(),
        "concurrency" => concurrency,
        "failed" => facts.iter().map(|f| f.failed).collect::<Vec<_>>(),
        "short" => facts.iter().map(|f| f.short_stop).collect::<Vec<_>>(),
        "max_tokens" => facts.iter().map(|f| f.max_tokens).collect::<Vec<_>>(),
        "decode" => f64s(|f| f.decode_tps),
        "ttft" => f64s(|f| f.ttft_ms),
        "prefill" => f64s(|f| f.prefill_tps),
        "prompt" => f64s(|f| f.prompt_tokens.map(|n| n as f64)),
        "draft_n" => facts.iter().map(|f| f.draft_n).collect::<Vec<_>>(),
        "draft_accepted" => facts.iter().map(|f| f.draft_n_accepted).collect::<Vec<_>>(),
    )?;
    let ok = col("failed").not();
    let full = ok.clone().and(col("short").not());
    let short = ok.clone().and(col("short"));
    let metric = |name: &str, keep: Expr, out: &str| {
        let values = col(name).filter(keep).drop_nulls();
        [values.clone().median().alias(format!("{out}_median")), values.alias(format!("{out}_values"))]
    };
    let mut aggs = vec![
        len().alias("n"),
        col("failed").cast(DataType::UInt32).sum().alias("n_failed"),
        col("short").and(ok.clone()).cast(DataType::UInt32).sum().alias("n_short"),
        col("max_tokens").max().alias("max_tokens"),
        col("draft_n").sum().alias("draft_n_sum"),
        col("draft_accepted").sum().alias("draft_accepted_sum"),
    ];
    aggs.extend(metric("decode", full, "decode"));
    aggs.extend(metric("decode", short, "decode_short"));
    for name in ["ttft", "prefill", "prompt"] {
        aggs.extend(metric(name, ok.clone(), name));
    }
    let out = df.lazy().group_by_stable([col("pass_id"), col("cell"), col("workload"), col("target"), col("concurrency")]).agg(aggs).collect()?;

    let strs = |name: &str| -> PolarsResult<Vec<String>> {
        Ok(out.column(name)?.str()?.iter().map(|s| s.unwrap_or_default().to_owned()).collect())
    };
    let u64s = |name: &str| -> PolarsResult<Vec<u64>> {
        let column = out.column(name)?.cast(&DataType::UInt64)?;
        Ok(column.u64()?.iter().map(|v| v.unwrap_or(0)).collect())
    };
    let metric_of = |name: &str| -> PolarsResult<Vec<(Option<f64>, Vec<f64>)>> {
        let medians: Vec<Option<f64>> = out.column(&format!("{name}_median"))?.f64()?.iter().collect();
        let lists = out.column(&format!("{name}_values"))?.list()?.clone();
        let mut result = Vec::with_capacity(medians.len());
        for (i, median) in medians.into_iter().enumerate() {
            let values: Vec<f64> = match lists.get_as_series(i) {
                Some(series) => series.f64()?.iter().flatten().collect(),
                None => Vec::new(),
            };
            result.push((median, values));
        }
        Ok(result)
    };
    let (pass_ids, cells, workloads, targets) = (strs("pass_id")?, strs("cell")?, strs("workload")?, u64s("target")?);
    let concurrencies = u64s("concurrency")?;
    let (n, n_failed, n_short, max_tokens) = (u64s("n")?, u64s("n_failed")?, u64s("n_short")?, u64s("max_tokens")?);
    let (draft_n, draft_accepted) = (u64s("draft_n_sum")?, u64s("draft_accepted_sum")?);
    let mut decode_full = metric_of("decode")?.into_iter();
    let mut decode_short = metric_of("decode_short")?.into_iter();
    let mut ttft = metric_of("ttft")?.into_iter();
    let mut prefill = metric_of("prefill")?.into_iter();
    let mut prompt = metric_of("prompt")?.into_iter();
    Ok((0..out.height())
        .map(|i| Group {
            pass_id: pass_ids[i].clone(),
            cell: cells[i].clone(),
            workload: Workload::parse(&workloads[i]).expect("workload names round-trip"),
            target: targets[i],
            concurrency: concurrencies[i] as u32,
            n: n[i] as usize,
            n_failed: n_failed[i] as usize,
            n_short: n_short[i] as usize,
            max_tokens: max_tokens[i],
            decode_full: decode_full.next().expect("one row each"),
            decode_short: decode_short.next().expect("one row each"),
            ttft: ttft.next().expect("one row each"),
            prefill: prefill.next().expect("one row each"),
            prompt: prompt.next().expect("one row each"),
            draft_n: draft_n[i],
            draft_accepted: draft_accepted[i],
        })
        .collect())
}

fn metric(kind: MetricKind, (median, values): (Option<f64>, Vec<f64>)) -> Option<Metric> {
    let median = median?;
    Some(Metric { kind, median, band: band(&values, median, 0.0), values })
}

/// Accepted over drafted tokens, summed over the runs; for an engine that only logs a ratio per
/// run (oMLX), the median of the successful runs' ratios.
fn spec_acceptance((drafted, accepted): (u64, u64), group: &[&RunFacts]) -> Option<f64> {
    if drafted > 0 {
        return Some(accepted as f64 / drafted as f64);
    }
    let logged: Vec<f64> = group.iter().filter(|f| !f.failed).filter_map(|f| f.logged_draft_acceptance).collect();
    crate::summary::median(&logged)
}

/// The engine's name, when the step asked to run past EOS and the engine's preset has no way to
/// (`past_eos = unsupported`, as [`benchpass_format::PassInfo::step_request`] decides it): its
/// short stops are the engine's EOS, not a fault.
fn cannot_be_held_to_cap<'a>(request: &crate::key::RequestFacts, info: Option<&'a benchpass_format::CellInfo>) -> Option<&'a str> {
    (request.past_eos == engines::presets::IgnoreEos::Unsupported.as_str()).then_some(info?.engine.name.as_str())
}

fn cell_step(pass: &Pass, facts: &[RunFacts], concurrency: &[u32], g: Group) -> CellStep {
    let info = pass.cell(&g.cell);
    let text = |get: fn(&benchpass_format::CellInfo) -> String| info.map(get).unwrap_or_default();
    let mut reasons = Vec::new();

    // A line that could not be read held a run of some cell: every figure of the pass may
    // miss it.
    if let Some(detail) = pass.damage_summary() {
        reasons.push(Reason::new(ReasonCode::Damaged, detail));
    }
    if g.n_failed > 0 {
        reasons.push(Reason::new(ReasonCode::Errors, format!("{} of {} runs failed", g.n_failed, g.n)));
    }
    // Decode from runs that reached their cap; only when none did, from the short ones, marked.
    let request = pass.info.step_request(&g.cell, g.workload, g.target, g.concurrency);
    let why_short = match cannot_be_held_to_cap(&request, info) {
        Some(engine) => format!(": {engine} has no way past EOS, so it cannot be held to its token cap"),
        None => String::new(),
    };
    // One decision: the figure comes from the runs that reached their cap when any of them
    // has a rate, else from the short ones, and then it is a burst (whatever else is true of
    // the step: full-length runs whose tokens all came in one event have no rate).
    let decode_burst = g.decode_full.1.is_empty() && g.n_short > 0;
    let n_ok = g.n - g.n_failed;
    let decode = if decode_burst {
        let reached = n_ok - g.n_short;
        let detail = if reached == 0 {
            format!("all {} successful runs stopped before {} tokens{why_short}", g.n_short, g.max_tokens)
        } else {
            format!(
                "{} of {n_ok} successful runs stopped before {} tokens, and the {reached} that reached it have no decode rate \
                 (all their tokens in one event): the figure is the short runs' burst{why_short}",
                g.n_short, g.max_tokens
            )
        };
        reasons.push(Reason::new(ReasonCode::ShortStop, detail));
        metric(MetricKind::DecodeTps, g.decode_short)
    } else {
        if g.n_short > 0 {
            let detail = format!("{} of {} runs stopped early and are left out of the decode median{why_short}", g.n_short, g.n);
            reasons.push(Reason::new(ReasonCode::ShortStop, detail));
        }
        metric(MetricKind::DecodeTps, g.decode_full)
    };
    // The planned step at this concurrency (a sweep plans one per level); a pass whose runs
    // and plan disagree on concurrency still finds its step by workload and target.
    let n_planned = pass.info.request.as_ref().and_then(|r| r.step_at(g.workload, g.target, g.concurrency)).map(|s| s.runs);
    let n_decode = decode.as_ref().map_or(0, |m| m.values.len());
    if n_planned.is_some_and(|planned| (g.n as u32) < planned) {
        reasons.push(Reason::new(ReasonCode::FewRuns, format!("{} of {} planned runs recorded", g.n, n_planned.unwrap_or(0))));
    } else if n_decode < MIN_RUNS_FOR_BAND && g.max_tokens > 1 {
        // (A step that generates nothing, such as llama-bench's prompt test, has no decode rate to band.)
        reasons.push(Reason::new(ReasonCode::FewRuns, format!("{n_decode} {} with a decode rate; a band needs {MIN_RUNS_FOR_BAND}", if n_decode == 1 { "run" } else { "runs" })));
    }

    let prompt_tokens = metric(MetricKind::PromptTokens, g.prompt);
    if let Some(prompt) = &prompt_tokens {
        let target = g.target as f64;
        if g.target > 0 && (prompt.median - target).abs() / target > PROMPT_TARGET_MARGIN {
            let detail = format!("median {:.0} actual tokens for a {} target", prompt.median, g.target);
            reasons.push(Reason::new(ReasonCode::PromptSize, detail));
        }
    }

    let group: Vec<&RunFacts> = facts
        .iter()
        .zip(concurrency)
        .filter(|(f, &c)| f.cell == g.cell && f.workload == g.workload && f.target_prompt_tokens == g.target && c == g.concurrency && !f.failed)
        .map(|(f, _)| f)
        .collect();
    let mut sources: Vec<TokenCountSource> = group.iter().filter_map(|f| f.token_count_source).collect();
    sources.sort_by_key(|s| s.as_str());
    sources.dedup();
    if sources.contains(&TokenCountSource::Estimate) {
        reasons.push(Reason::new(ReasonCode::TokenEstimate, ""));
    }
    let mismatched: Vec<(u64, u64)> = group.iter().filter_map(|f| f.usage_mismatch).collect();
    if let Some(&(usage, events)) = mismatched.first() {
        let detail = format!("{} of {} runs: usage says {usage} tokens for {events} token events", mismatched.len(), group.len());
        reasons.push(Reason::new(ReasonCode::UsageMismatch, detail));
    }
    if let Some(detail) = nondeterminism(pass, &group) {
        reasons.push(Reason::new(ReasonCode::Nondeterministic, detail));
    }
    if let Some(detail) = prefix_cached(&group) {
        reasons.push(Reason::new(ReasonCode::PrefixCached, detail));
    }

    // Run order: repetitions as recorded (warmups are already out).
    let mut in_order: Vec<(u32, f64)> =
        group.iter().filter(|f| !f.short_stop).filter_map(|f| Some((f.rep, f.decode_tps?))).collect();
    in_order.sort_by_key(|(rep, _)| *rep);
    let thermal: Vec<_> = group.iter().filter_map(|f| f.thermal_pressure).collect();
    // Heavy is where macOS throttles; moderate is elevated pressure, not yet a slowed run.
    let hot = thermal.iter().filter(|t| t.is_throttling()).count();
    if let Some(mut detail) = trend(&in_order.iter().map(|(_, r)| *r).collect::<Vec<_>>()) {
        // Whether the machine said it was throttling tells the two causes apart.
        if !thermal.is_empty() {
            detail.push_str(&match hot {
                0 => "; the machine reported no throttling thermal pressure".to_owned(),
                n => format!("; thermal pressure heavy or worse in {n} of {} runs", thermal.len()),
            });
        }
        reasons.push(Reason::new(ReasonCode::Drift, detail));
    }
    // Without a warmup the first measured run pays for whatever a cold engine does once.
    let warmed = crate::runs::counted(pass).any(|r| {
        r.warmup && r.cell == g.cell && r.workload == g.workload && r.target_prompt_tokens == g.target && r.concurrency == g.concurrency
    });
    if !warmed {
        let mut ttft: Vec<(u32, f64)> = group.iter().filter_map(|f| Some((f.rep, f.ttft_ms?))).collect();
        ttft.sort_by_key(|(rep, _)| *rep);
        let values = |runs: &[(u32, f64)]| runs.iter().map(|(_, v)| *v).collect::<Vec<_>>();
        let far: Vec<String> = [("decode", "tok/s", values(&in_order)), ("TTFT", "ms", values(&ttft))]
            .into_iter()
            .filter_map(|(name, unit, runs)| Some(format!("{name}: {}", beyond_the_rest(&runs, unit)?)))
            .collect();
        if !far.is_empty() {
            reasons.push(Reason::new(ReasonCode::ColdStart, far.join("; ")));
        }
    }
    if hot > 0 {
        let worst = thermal.iter().max().expect("hot runs are among them");
        reasons.push(Reason::new(ReasonCode::Thermal, format!("{hot} of {} runs, at worst {}", thermal.len(), worst.as_str())));
    }
    let swap_known = group.iter().filter(|f| f.swapped.is_some()).count();
    let swapped = group.iter().filter(|f| f.swapped == Some(true)).count();
    if swapped > 0 {
        reasons.push(Reason::new(ReasonCode::Swapped, format!("{swapped} of {swap_known} runs")));
    }

    let ratios: Vec<f64> = group
        .iter()
        .filter(|f| !f.short_stop)
        .filter_map(|f| Some(f.decode_tps? / f.server_decode_tps.filter(|s| *s > 0.0)?))
        .collect();
    let reconciliation = crate::summary::median(&ratios);
    if let Some(ratio) = reconciliation {
        if (ratio - 1.0).abs() > RECONCILE_MARGIN {
            reasons.push(Reason::new(ReasonCode::Reconciliation, format!("benchpass ÷ server = {ratio:.3}")));
        }
    }

    let floor = crate::floor::floor(&pass.info);
    CellStep {
        measurer_us_per_token: floor.as_ref().and_then(|f| f.us_per_token),
        self_check_ttft_error_ms: floor.as_ref().and_then(|f| Some(f.self_check.as_ref()?.ttft_error_max_ms)),
        pass_id: pass.info.pass_id.clone(),
        machine: pass.info.machine.name.clone(),
        cell: g.cell,
        engine: text(|c| c.engine.name.clone()),
        engine_version: text(|c| c.engine.version.clone()),
        engine_sha256: info.and_then(|c| c.engine.sha256.clone()),
        model: text(|c| c.model.clone()),
        family: text(|c| c.family().to_owned()),
        build_sha256: info.and_then(|c| c.build.sha256.clone()),
        lane: text(|c| c.lane.clone()),
        workload: g.workload,
        target_prompt_tokens: g.target,
        concurrency: g.concurrency,
        max_tokens: g.max_tokens,
        request,
        n_planned,
        n_runs: g.n,
        n_failed: g.n_failed,
        n_short: g.n_short,
        decode,
        decode_burst,
        ttft: metric(MetricKind::TtftMs, g.ttft),
        prefill: metric(MetricKind::PrefillTps, g.prefill),
        prompt_tokens,
        token_count_source: sources.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("+"),
        spec_acceptance: spec_acceptance((g.draft_n, g.draft_accepted), &group),
        row_prompt_tokens: None,
        ttft_cold: None,
        agent: None,
        serving: None,
        server_peak_rss_bytes: group.iter().filter_map(|f| f.server_peak_rss_bytes).max(),
        reconciliation,
        energy: energy_step(info, &group),
        reasons,
    }
}

/// A step's energy figures over its successful runs that carry energy: those that reached
/// their cap where any did (a short run's last tokens are its cheapest or dearest, as its rate
/// is a burst), else the short ones. `None` where the cell has no source or no run energy.
fn energy_step(info: Option<&benchpass_format::CellInfo>, group: &[&RunFacts]) -> Option<EnergyStep> {
    let cell = info?.energy.as_ref()?;
    let key = cell.key();
    if key.is_empty() {
        return None;
    }
    let with: Vec<&&RunFacts> = group.iter().filter(|f| f.energy.is_some()).collect();
    if with.is_empty() {
        return None;
    }
    let full: Vec<&&RunFacts> = with.iter().copied().filter(|f| !f.short_stop).collect();
    let runs = if full.is_empty() { with } else { full };
    let of = |kind: MetricKind, value: &dyn Fn(&RunFacts) -> Option<f64>| {
        let values: Vec<f64> = runs.iter().filter_map(|f| value(f)).collect();
        metric(kind, (crate::summary::median(&values), values))
    };
    use benchpass_format::metrics;
    let above: Vec<f64> = runs
        .iter()
        .filter_map(|f| {
            let e = f.energy.as_ref()?;
            let decode_s = f.decode_ms? / 1e3;
            let above = benchpass_format::RunEnergy { decode_joules: Some(e.decode_joules? - cell.idle_watts? * decode_s), ..*e };
            metrics::joules_per_output_token(Some(&above), f.completion_tokens)
        })
        .collect();
    Some(EnergyStep {
        key,
        interval_ms: cell.interval_ms,
        idle_watts: cell.idle_watts,
        joules_per_token: of(MetricKind::JoulesPerToken, &|f| metrics::joules_per_output_token(f.energy.as_ref(), f.completion_tokens)),
        joules_per_token_above_idle: crate::summary::median(&above),
        joules_per_prompt_token: of(MetricKind::JoulesPerPromptToken, &|f| metrics::joules_per_prompt_token(f.energy.as_ref(), f.prompt_tokens)),
        mean_watts: of(MetricKind::MeanWatts, &|f| metrics::mean_watts(f.energy.as_ref())),
    })
}

/// An agent step takes its figures from the sessions (`crate::agent`): decode and the cold
/// TTFT as banded metrics, the rest in [`CellStep::agent`]. The medians over all turns —
/// TTFT, prefill, prompt size — are dropped, and so are the reasons read off them in run
/// order (drift, a cold start: a later turn is longer by design); the session reasons replace
/// the generic ones they stand for.
fn agent_step(step: &mut CellStep, cell: AgentCell) {
    let of = |kind: MetricKind, figure: Option<&crate::agent::Figure>| {
        figure.map(|f| Metric { kind, median: f.median, band: band(&f.values, f.median, 0.0), values: f.values.clone() })
    };
    step.decode = of(MetricKind::DecodeTps, cell.decode_tps.as_ref());
    step.ttft_cold = of(MetricKind::TtftColdMs, cell.ttft_cold_ms.as_ref());
    step.ttft = None;
    step.prefill = None;
    step.prompt_tokens = None;
    step.n_short = cell.n_short;
    step.decode_burst = cell.decode_is_burst;
    let replaced = [ReasonCode::Errors, ReasonCode::ShortStop, ReasonCode::FewRuns, ReasonCode::TokenEstimate, ReasonCode::Drift, ReasonCode::ColdStart, ReasonCode::PromptSize, ReasonCode::PrefixCached];
    step.reasons.retain(|r| !replaced.contains(&r.code));
    for reason in &cell.reasons {
        let code = match reason.code {
            "errors" => ReasonCode::Errors,
            "short-stop" => ReasonCode::ShortStop,
            "few-runs" => ReasonCode::FewRuns,
            "token-estimate" => ReasonCode::TokenEstimate,
            crate::agent::NO_CACHE_INFO => ReasonCode::NoCacheInfo,
            // A code this module does not know yet still reaches the report through the
            // agent section's own flags.
            _ => continue,
        };
        step.reasons.push(Reason::new(code, reason.detail.clone()));
    }
    step.agent = Some(cell);
}

/// Three or more rates, each below (or each above) the one before, the last more than
/// [`DRIFT_MARGIN`] from the first: a trend, not scatter (a random order of 3 is strictly
/// monotone 2 times in 6, one each way, and the margin keeps sub-noise slides out). Falling
/// is throttling's signature, rising a warming cache's; the detail starts with which.
fn trend(rates: &[f64]) -> Option<String> {
    if rates.len() < 3 || rates.iter().any(|r| r.is_nan() || *r <= 0.0) {
        return None;
    }
    let falling = rates.windows(2).all(|w| w[1] < w[0]);
    let rising = rates.windows(2).all(|w| w[1] > w[0]);
    let (first, last) = (rates[0], rates[rates.len() - 1]);
    let change = last / first - 1.0;
    if !(falling || rising) || change.abs() <= DRIFT_MARGIN {
        return None;
    }
    let (word, sign) = if rising { ("rising", '+') } else { ("falling", '−') };
    Some(format!("{word}: {first:.1} → {last:.1} tok/s over {} runs, {sign}{:.1}%", rates.len(), change.abs() * 100.0))
}

/// The first of three or more values lying more than [`DRIFT_MARGIN`] beyond the range of
/// the others (below their lowest ÷ 1.05 or above their highest × 1.05): what a cold first
/// run looks like.
fn beyond_the_rest(values: &[f64], unit: &str) -> Option<String> {
    let (&first, rest) = values.split_first()?;
    if rest.len() < 2 || first.is_nan() || first <= 0.0 {
        return None;
    }
    let (lo, hi) = rest.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    if lo.is_nan() || lo <= 0.0 || (first >= lo / (1.0 + DRIFT_MARGIN) && first <= hi * (1.0 + DRIFT_MARGIN)) {
        return None;
    }
    Some(format!("run 1 at {first:.1} {unit}, the other {} at {lo:.1}–{hi:.1} {unit}", rest.len()))
}

/// The runs the server said it served in good part from its prefix cache (at least
/// [`PREFIX_CACHED_SHARE`] of the prompt), as `k of n runs, median m % of the prompt cached`.
/// Only what the server reported counts: a run with no cached count is not guessed warm.
/// Agent sessions measure the cache on purpose and drop this reason (`agent_step`).
fn prefix_cached(runs: &[&RunFacts]) -> Option<String> {
    let shares: Vec<f64> = runs
        .iter()
        .filter_map(|r| Some(r.cached_prompt_tokens? as f64 / r.prompt_tokens.filter(|p| *p > 0)? as f64))
        .filter(|share| *share >= PREFIX_CACHED_SHARE)
        .collect();
    let median = crate::summary::median(&shares)?;
    Some(format!("{} of {} runs, median {:.0} % of the prompt cached", shares.len(), runs.len(), (median * 100.0).min(100.0)))
}

/// At temperature 0, the same prompt should give the same text; several outputs for one
/// prompt mean the engine is not deterministic (batching, kernels), which readers should know.
fn nondeterminism(pass: &Pass, runs: &[&RunFacts]) -> Option<String> {
    let temperature = pass.info.request.as_ref()?.temperature;
    if temperature != 0.0 {
        return None;
    }
    let mut outputs: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for run in runs {
        if let (Some(prompt), Some(output)) = (&run.prompt_sha256, &run.output_sha256) {
            let seen = outputs.entry(prompt).or_default();
            if !seen.contains(&output.as_str()) {
                seen.push(output);
            }
        }
    }
    let worst = outputs.values().map(Vec::len).max()?;
    (worst > 1).then(|| format!("up to {worst} different outputs for one prompt"))
}

/// Rows compare engines: the cells whose steps share a comparison key (`crate::key`: family,
/// lane, workload, target, cap, streams, how the requests were made) side by side, as the
/// report's best marks rank them. Where their weights differ (or are unknown), or their actual
/// prompts differ in size, every cell in the row says so.
fn compare_rows(steps: &mut [CellStep]) {
    let mut rows: BTreeMap<crate::key::ComparisonKey, Vec<usize>> = BTreeMap::new();
    for (i, s) in steps.iter().enumerate() {
        rows.entry(crate::key::ComparisonKey::of(s)).or_default().push(i);
    }
    for members in rows.values() {
        let mut engines: Vec<&str> = members.iter().map(|&i| steps[i].engine.as_str()).collect();
        engines.sort();
        engines.dedup();
        if engines.len() < 2 {
            continue;
        }
        let builds: Vec<Option<&str>> = members.iter().map(|&i| steps[i].build_sha256.as_deref()).collect();
        let build_reason = if builds.iter().any(Option::is_none) {
            Some("the weights were not hashed for every engine in the row, so they may differ".to_owned())
        } else {
            let mut distinct: Vec<_> = builds.iter().flatten().collect();
            distinct.sort();
            distinct.dedup();
            (distinct.len() > 1).then(|| {
                let short: Vec<String> = distinct.iter().map(|b| b.chars().take(12).collect()).collect();
                format!("builds {}", short.join(", "))
            })
        };
        let prompts: Vec<f64> =
            members.iter().filter_map(|&i| steps[i].prompt_tokens.as_ref().map(|m| m.median)).collect();
        let spread = (prompts.len() >= 2)
            .then(|| prompts.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &p| (lo.min(p), hi.max(p))));
        let spread_reason = spread.and_then(|(lo, hi)| {
            (lo > 0.0 && (hi - lo) / lo > PROMPT_SPREAD_MARGIN)
                .then(|| format!("actual prompts of {lo:.0} to {hi:.0} tokens between engines in the row"))
        });
        for &i in members {
            steps[i].row_prompt_tokens = spread;
            if let Some(detail) = &build_reason {
                steps[i].reasons.push(Reason::new(ReasonCode::EngineBuild, detail.clone()));
            }
            if let Some(detail) = &spread_reason {
                steps[i].reasons.push(Reason::new(ReasonCode::PromptSize, detail.clone()));
            }
        }
    }
}
