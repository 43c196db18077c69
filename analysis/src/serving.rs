//! The serving figures of a step whose streams ran side by side (`--concurrency N`, N > 1):
//! what vLLM's `bench serve` and aiperf users read first. docs/metrics.md ("Serving under
//! concurrency") gives the definitions in words; this module is them in code.
//!
//! - **output tok/s**: Σ completion tokens of the step's successful measured runs ÷ the wall
//!   span from the earliest run's start to the latest run's end, where a run's start is its
//!   `started_unix_ms` and its end that plus its last event's `t_ns`;
//! - **requests/s**: successful measured runs ÷ the same span;
//! - **TTFT**: each run's time to first token (`benchpass_format::metrics`);
//! - **ITL** (inter-token latency): for each token event after a run's first, the gap since the
//!   token event before it ÷ the tokens the event carried, one value per event, pooled over the
//!   step's runs. Tokens per event: the event's logprobs where every token event of the run
//!   carries them (one entry per token, exact); else the run's completion tokens spread evenly
//!   over its later token events, (n − 1) ÷ (k − 1) each, the first token event counting one
//!   token (it comes out of prefill, as in the decode rate);
//! - **TPOT** (time per output token): decode span ÷ (completion tokens − 1), one per run;
//! - **E2E** (end-to-end latency): the run's last event's `t_ns`, one per run.
//!
//! The percentiles are nearest-rank ([`percentile`]): always one of the values measured. With
//! few values a high percentile is the largest of them, and [`Percentiles::tail_is_max`] says so.

use benchpass_format::metrics;
use benchpass_format::{PassInfo, RunRecord, Workload};

/// The percentiles every latency figure gives, in the order rows list them.
pub const PERCENTILES: [u32; 3] = [50, 90, 99];

/// The p-th percentile of `sorted` (ascending) by nearest rank: the value at rank ⌈p·n/100⌉
/// (1-based), the smallest value with at least p % of the values at or below it (NIST's
/// "nearest rank", the definition that never interpolates a value nobody measured). Worked in
/// integers so that 90 % of 10 is rank 9, not 9.000000000000002. `None` when empty.
pub fn percentile(sorted: &[f64], p: u32) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = nearest_rank(n, p);
    Some(sorted[rank - 1])
}

/// ⌈p·n/100⌉, at least 1 and at most n.
fn nearest_rank(n: usize, p: u32) -> usize {
    (((p as usize) * n).div_ceil(100)).clamp(1, n)
}

/// p50, p90 and p99 of one figure, over `n` values.
#[derive(Debug, Clone, PartialEq)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    /// The values they were taken over (runs, or events for ITL).
    pub n: usize,
}

impl Percentiles {
    /// Of `values` in any order; `None` when there is no finite value.
    pub fn of(values: &[f64]) -> Option<Percentiles> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        Some(Percentiles {
            p50: percentile(&sorted, 50)?,
            p90: percentile(&sorted, 90)?,
            p99: percentile(&sorted, 99)?,
            n: sorted.len(),
        })
    }

    pub fn get(&self, p: u32) -> f64 {
        match p {
            50 => self.p50,
            90 => self.p90,
            _ => self.p99,
        }
    }

    /// The p-th percentile is the largest value (its rank is n): with 8 runs, p90 and p99 are
    /// both the slowest run, not a tail anyone measured (p90 needs 10 values to be anything
    /// else, p99 needs 100). Flagged `tail-is-max` (docs/leaderboard.md).
    pub fn tail_is_max(&self, p: u32) -> bool {
        nearest_rank(self.n, p) == self.n
    }
}

/// The serving figures of one step (one cell, workload, target and concurrency).
#[derive(Debug, Clone, PartialEq)]
pub struct Serving {
    /// Streams in flight at once.
    pub concurrency: u32,
    /// Successful measured runs: what the throughput counts.
    pub n_ok: usize,
    pub n_failed: usize,
    /// Σ completion tokens of the successful runs.
    pub completion_tokens: u64,
    /// Earliest start to latest end of the successful runs, in milliseconds.
    pub span_ms: Option<f64>,
    pub output_tps: Option<f64>,
    pub requests_per_s: Option<f64>,
    pub ttft_ms: Option<Percentiles>,
    pub itl_ms: Option<Percentiles>,
    pub tpot_ms: Option<Percentiles>,
    pub e2e_ms: Option<Percentiles>,
    /// TTFT and E2E counted from when each run was due rather than when it was sent: what a
    /// user of the server waits, the time queued in benchpass for a free stream included
    /// (MLPerf LoadGen's and inference-perf's clock). Equal to the figures from the send where
    /// streams were kept busy; `None` where the runs do not record when they were due.
    pub ttft_scheduled_ms: Option<Percentiles>,
    pub e2e_scheduled_ms: Option<Percentiles>,
    /// Each run's wait between when it was due and when it was sent ([`RunRecord::schedule_delay_ms`]).
    pub schedule_delay_ms: Option<Percentiles>,
    /// Under `--request-rate`: the rate asked for, offered and achieved ([`rate_held`]).
    pub rate: Option<RateHeld>,
    /// Under `--slo`: the runs that met every objective, and their throughput ([`goodput`]).
    pub goodput: Option<Goodput>,
    /// Tokens carried by each token event after a run's first (median, max), pooled over the
    /// step's runs ([`tokens_per_event`]): above 1, ITL is per event, not per token.
    pub tokens_per_event: Option<(f64, f64)>,
    /// The machine's energy over the step's span, where the cell had a source ([`energy`]).
    pub energy: Option<ServingEnergy>,
}

/// A step's energy at N > 1 streams (docs/metrics.md, "Energy under concurrency"): the
/// joules of its whole span, prefill and decode of every stream together, over what the span
/// served.
#[derive(Debug, Clone, PartialEq)]
pub struct ServingEnergy {
    /// `source:domain`: energy of two steps is compared only where this is the same.
    pub key: String,
    pub joules: f64,
    pub seconds: f64,
    /// Joules ÷ seconds.
    pub mean_watts: f64,
    /// Joules ÷ Σ completion tokens of the successful runs: output tok/s's tokens.
    pub joules_per_output_token: Option<f64>,
    /// The same above the cell's idle baseline: (joules − idle watts × seconds) ÷ tokens.
    pub joules_per_output_token_above_idle: Option<f64>,
}

/// The energy of a step with `serving`'s figures, from its cell's record in pass.json (the
/// step's `workload`, `target`, `max_tokens` and streams); `None` where the cell has no source,
/// the step's span was not recorded once (a step resumed in a second session has two, each
/// over part of its runs), or the span is over other runs than the figures count.
pub fn energy(cell: &benchpass_format::CellInfo, workload: Workload, target: u64, max_tokens: u64, serving: &Serving) -> Option<ServingEnergy> {
    let source = cell.energy.as_ref()?;
    let key = source.key();
    let mut recorded = cell
        .step_energy
        .iter()
        .filter(|e| e.workload == workload && e.target_prompt_tokens == target && e.max_tokens == max_tokens && e.concurrency == serving.concurrency);
    let step = recorded.next()?;
    if key.is_empty() || recorded.next().is_some() || step.runs != serving.n_ok || !step.seconds.is_finite() || step.seconds <= 0.0 || !step.joules.is_finite() {
        return None;
    }
    let tokens = (serving.completion_tokens > 0).then_some(serving.completion_tokens as f64);
    let above = source.idle_watts.map(|w| step.joules - w * step.seconds);
    Some(ServingEnergy {
        key,
        joules: step.joules,
        seconds: step.seconds,
        mean_watts: step.joules / step.seconds,
        joules_per_output_token: tokens.map(|n| step.joules / n),
        joules_per_output_token_above_idle: above.zip(tokens).map(|(j, n)| j / n),
    })
}

/// How far the achieved request rate may fall below the offered one before a step is marked
/// `rate-not-held` (docs/metrics.md, "Achieved request rate"): 5 %.
pub const RATE_MARGIN: f64 = 0.05;

/// A step's request rate under `--request-rate` (docs/metrics.md, "Achieved request rate").
#[derive(Debug, Clone, PartialEq)]
pub struct RateHeld {
    /// `--request-rate`: the mean of the Poisson arrivals, requests/s.
    pub requested: f64,
    /// The seeded schedule's own rate over the step's runs: (n − 1) ÷ (last due − first due).
    /// A handful of Poisson gaps is rarely the mean's, so the achieved rate is held to this.
    pub offered: Option<f64>,
    /// The rate the server delivered: (n − 1) ÷ (last run's end − first run's end), ends on
    /// the runs' monotonic clock.
    pub achieved: Option<f64>,
}

impl RateHeld {
    /// Whether the achieved rate fell short of the offered one by more than [`RATE_MARGIN`]:
    /// the client or the server could not keep up, and the step's figures are not those of a
    /// server holding the rate. `false` where either is unknown.
    pub fn short(&self) -> bool {
        matches!((self.offered, self.achieved), (Some(o), Some(a)) if a < o * (1.0 - RATE_MARGIN))
    }
}

/// The one rule for a step's request rate: `requested` as asked, the offered and achieved
/// rates of `runs` (its measured runs; failed ones included in what was offered, left out
/// of what was achieved). Every caller (figures, reasons, report, JSON) reads it from here.
pub fn rate_held(requested: f64, runs: &[&RunRecord]) -> RateHeld {
    let rate = |instants: Vec<u64>| {
        let n = instants.len();
        let (first, last) = (instants.iter().min()?, instants.iter().max()?);
        let span_s = last.saturating_sub(*first) as f64 / 1e9;
        (n >= 2 && span_s > 0.0).then(|| (n - 1) as f64 / span_s)
    };
    let due: Vec<u64> = runs.iter().filter_map(|r| r.scheduled_ns).collect();
    let ends: Vec<u64> = runs.iter().filter(|r| !r.is_error()).filter_map(|r| Some(r.sent_ns? + r.token_times()?.last_event_ns?)).collect();
    RateHeld { requested, offered: if due.len() == runs.len() { rate(due) } else { None }, achieved: rate(ends) }
}

/// What a step was measured under beyond its runs: the arrival rate and the objectives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Load {
    pub request_rate: Option<f64>,
    pub slo: Option<benchpass_format::Slo>,
}

/// The goodput of a step under its objectives (docs/metrics.md, "Goodput").
#[derive(Debug, Clone, PartialEq)]
pub struct Goodput {
    /// The objectives, as [`benchpass_format::Slo::key`] writes them.
    pub slo: String,
    /// Measured runs that met every objective; a failed run never does.
    pub n_met: usize,
    /// Measured runs, failed ones included.
    pub n: usize,
    /// n_met ÷ n.
    pub attainment: f64,
    /// n_met ÷ the step's span, and their completion tokens ÷ the span.
    pub requests_per_s: Option<f64>,
    pub output_tps: Option<f64>,
}

/// Whether `run` met every objective of `slo`: TTFT and E2E from when it was due (from the
/// send where that is not recorded), TPOT, and its slowest ITL. A failed run, or one without
/// a figure an objective needs, did not.
pub fn meets(run: &RunRecord, slo: &benchpass_format::Slo) -> bool {
    if run.is_error() {
        return false;
    }
    let delay = run.schedule_delay_ms().unwrap_or(0.0);
    let within = |limit: Option<f64>, value: Option<f64>| limit.is_none_or(|l| value.is_some_and(|v| v <= l));
    let slowest_itl = itl_ms(run).into_iter().reduce(f64::max);
    within(slo.ttft_ms, times(run).ttft_ms.map(|t| t + delay))
        && within(slo.tpot_ms, tpot_ms(run))
        // A run whose tokens came in one event had no gap to exceed.
        && within(slo.itl_ms, Some(slowest_itl.unwrap_or(0.0)))
        && within(slo.e2e_ms, e2e_ms(run).map(|t| t + delay))
}

/// The goodput of `runs` (a step's measured runs) under `slo`, over `span_ms` ([`span_ms`]).
pub fn goodput(runs: &[&RunRecord], slo: &benchpass_format::Slo, span_ms: Option<f64>) -> Goodput {
    let met: Vec<&RunRecord> = runs.iter().copied().filter(|r| meets(r, slo)).collect();
    let per_second = |count: f64| span_ms.filter(|&ms| ms > 0.0).map(|ms| count / (ms / 1e3));
    let tokens: u64 = met.iter().filter_map(|r| r.completion_tokens).sum();
    Goodput {
        slo: slo.key(),
        n_met: met.len(),
        n: runs.len(),
        attainment: if runs.is_empty() { 0.0 } else { met.len() as f64 / runs.len() as f64 },
        requests_per_s: per_second(met.len() as f64),
        output_tps: per_second(tokens as f64),
    }
}

/// One latency figure of [`Serving`], as rows and tables name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    Ttft,
    Itl,
    Tpot,
    E2e,
}

impl Latency {
    pub const ALL: [Latency; 4] = [Latency::Ttft, Latency::Itl, Latency::Tpot, Latency::E2e];

    /// The stem of its leaderboard metrics: `ttft` gives `ttft_p50_ms`, `ttft_p90_ms`, ….
    pub fn as_str(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft",
            Latency::Itl => "itl",
            Latency::Tpot => "tpot",
            Latency::E2e => "e2e",
        }
    }

    /// As a table heads it.
    pub fn label(self) -> &'static str {
        match self {
            Latency::Ttft => "TTFT",
            Latency::Itl => "ITL",
            Latency::Tpot => "TPOT",
            Latency::E2e => "E2E",
        }
    }

    /// What the `n` of its percentiles counts.
    pub fn counts(self) -> &'static str {
        match self {
            Latency::Itl => "events",
            _ => "runs",
        }
    }
}

impl Serving {
    pub fn latency(&self, which: Latency) -> Option<&Percentiles> {
        match which {
            Latency::Ttft => self.ttft_ms.as_ref(),
            Latency::Itl => self.itl_ms.as_ref(),
            Latency::Tpot => self.tpot_ms.as_ref(),
            Latency::E2e => self.e2e_ms.as_ref(),
        }
    }
}

/// Whether a step's runs get serving figures: streams side by side in a speed workload. Agent
/// sessions run side by side too, but their turns wait on each other and differ in size by
/// design (docs/agent.md has their figures); quality runs measure output, not speed.
pub fn applies(workload: Workload, concurrency: u32) -> bool {
    concurrency > 1 && !matches!(workload, Workload::Agent | Workload::Quality)
}

/// Whether the step of `workload` at `target` and `concurrency` in the pass of `info` gets
/// serving figures: its streams ran side by side ([`applies`]), or it is a level of a sweep
/// (a step that names its own streams, as `--concurrency 1,2,4` makes them), whose 1-stream
/// level is the first point of the throughput–latency curve. Agent sessions and quality
/// rounds have figures of their own. The one rule that both the figures
/// (`cells::summarize_many`) and the light read (`runs::events_the_figures_read`: which runs
/// keep the events the figures need) follow; when they disagreed, a sweep's 1-stream step
/// was given a throughput over the one run whose events were kept, 8× too high.
pub fn step_has_figures(info: &PassInfo, workload: Workload, target: u64, concurrency: u32) -> bool {
    let own_figures = !matches!(workload, Workload::Agent | Workload::Quality);
    let swept = || {
        info.request
            .as_ref()
            .is_some_and(|r| r.steps.iter().any(|s| (s.workload, s.target_prompt_tokens) == (workload, target) && s.concurrency.is_some()))
    };
    // Arrivals at a rate are a load test at any cap, one stream included.
    let at_a_rate = || info.request.as_ref().is_some_and(|r| r.request_rate.is_some());
    applies(workload, concurrency) || (own_figures && (swept() || at_a_rate()))
}

/// The load the steps of the pass of `info` were measured under: its arrival rate and
/// objectives, as its request records them.
pub fn load_of(info: &PassInfo) -> Load {
    let request = info.request.as_ref();
    Load { request_rate: request.and_then(|r| r.request_rate), slo: request.and_then(|r| r.slo.clone()) }
}

/// The serving figures of one step's measured runs (warmups already left out by the caller),
/// with no arrival rate and no objectives.
pub fn figures(concurrency: u32, runs: &[&RunRecord]) -> Serving {
    figures_under(concurrency, runs, &Load::default())
}

/// [`figures`] of a step measured under `load`.
pub fn figures_under(concurrency: u32, runs: &[&RunRecord], load: &Load) -> Serving {
    let ok: Vec<&RunRecord> = runs.iter().copied().filter(|r| !r.is_error()).collect();
    let completion_tokens: u64 = ok.iter().filter_map(|r| r.completion_tokens).sum();
    let span_ms = span_ms(&ok);
    let per_second = |count: f64| span_ms.filter(|&ms| ms > 0.0).map(|ms| count / (ms / 1e3));
    let ttft: Vec<f64> = ok.iter().filter_map(|r| times(r).ttft_ms).collect();
    let itl: Vec<f64> = ok.iter().flat_map(|r| itl_ms(r)).collect();
    let tpot: Vec<f64> = ok.iter().filter_map(|r| tpot_ms(r)).collect();
    let e2e: Vec<f64> = ok.iter().filter_map(|r| e2e_ms(r)).collect();
    let delays: Vec<f64> = ok.iter().filter_map(|r| r.schedule_delay_ms()).collect();
    let scheduled = |figure: fn(&RunRecord) -> Option<f64>| -> Vec<f64> {
        ok.iter().filter_map(|r| Some(figure(r)? + r.schedule_delay_ms()?)).collect()
    };
    let per_event: Vec<f64> = ok.iter().filter_map(|r| tokens_per_event(r)).flat_map(|t| t.into_iter().skip(1)).collect();
    let per_event_median = Percentiles::of(&per_event).map(|p| p.p50);
    let per_event_max = per_event.iter().copied().reduce(f64::max);
    Serving {
        concurrency,
        n_ok: ok.len(),
        n_failed: runs.len() - ok.len(),
        completion_tokens,
        span_ms,
        output_tps: per_second(completion_tokens as f64),
        requests_per_s: per_second(ok.len() as f64),
        ttft_ms: Percentiles::of(&ttft),
        itl_ms: Percentiles::of(&itl),
        tpot_ms: Percentiles::of(&tpot),
        e2e_ms: Percentiles::of(&e2e),
        ttft_scheduled_ms: Percentiles::of(&scheduled(|r| times(r).ttft_ms)),
        e2e_scheduled_ms: Percentiles::of(&scheduled(e2e_ms)),
        schedule_delay_ms: Percentiles::of(&delays),
        rate: load.request_rate.map(|requested| rate_held(requested, runs)),
        goodput: load.slo.as_ref().filter(|s| !s.limits().is_empty()).map(|slo| goodput(runs, slo, span_ms)),
        tokens_per_event: per_event_median.zip(per_event_max),
        energy: None,
    }
}

/// TTFT and decode span from the events where the run has them (measured runs), else as the
/// record gives them (imported runs).
fn times(run: &RunRecord) -> metrics::EventTimes {
    match run.token_times() {
        Some(times) => times.event_times(),
        None => metrics::EventTimes { ttft_ms: run.ttft_ms, decode_ms: run.decode_ms },
    }
}

/// The run's last event, of any kind (the finish and usage events included: the response is
/// not complete before them), in milliseconds after the request was sent; `None` without events.
pub fn e2e_ms(run: &RunRecord) -> Option<f64> {
    run.token_times()?.last_event_ns.map(|ns| ns as f64 / 1e6)
}

/// Decode span ÷ (completion tokens − 1): the mean gap between tokens after the first.
/// `None` under two tokens or without a span (all tokens in one event).
pub fn tpot_ms(run: &RunRecord) -> Option<f64> {
    let n = run.completion_tokens?;
    let decode_ms = times(run).decode_ms?;
    (n >= 2 && decode_ms > 0.0).then(|| decode_ms / (n - 1) as f64)
}

/// Tokens carried by each of the run's token events, in order (see the module docs): the
/// logprobs' count where every token event has logprobs, else 1 for the first and
/// (n − 1) ÷ (k − 1) for each later one. `None` where neither can be told: no completion count,
/// or one that contradicts the events (fewer tokens than events, `usage-mismatch`).
pub fn tokens_per_event(run: &RunRecord) -> Option<Vec<f64>> {
    tokens_per_event_of(run, &*run.token_times()?)
}

/// [`tokens_per_event`] with the run's token times already read.
fn tokens_per_event_of(run: &RunRecord, times: &metrics::TokenTimes) -> Option<Vec<f64>> {
    let k = times.arrivals_ns.len();
    if k == 0 {
        return None;
    }
    if let Some(counts) = &times.logprob_counts {
        return Some(counts.iter().map(|&n| f64::from(n)).collect());
    }
    let n = run.completion_tokens?;
    if (n as usize) < k {
        return None;
    }
    let later = if k > 1 { (n - 1) as f64 / (k - 1) as f64 } else { 0.0 };
    Some(std::iter::once(1.0).chain(std::iter::repeat_n(later, k - 1)).collect())
}

/// The run's inter-token latencies: for each token event after the first, (its arrival − the
/// previous token event's) ÷ its tokens, in milliseconds.
pub fn itl_ms(run: &RunRecord) -> Vec<f64> {
    let Some(times) = run.token_times() else { return Vec::new() };
    let Some(tokens) = tokens_per_event_of(run, &times) else { return Vec::new() };
    times
        .arrivals_ns
        .windows(2)
        .zip(&tokens[1..])
        .filter(|(_, &n)| n > 0.0)
        .map(|(pair, &n)| (pair[1].saturating_sub(pair[0])) as f64 / 1e6 / n)
        .collect()
}

/// From the earliest start to the latest end of `runs`, in milliseconds: a run starts at its
/// `started_unix_ms` (wall clock, whole milliseconds, read just before the request is sent)
/// and ends its last event's `t_ns` later. `None` unless every run has both: a span over some
/// of a step's runs would divide all their tokens by part of their time.
pub fn span_ms(runs: &[&RunRecord]) -> Option<f64> {
    let timed: Vec<(f64, f64)> = runs
        .iter()
        .map(|r| (r.started_unix_ms > 0).then_some(r.started_unix_ms as f64).zip(e2e_ms(r)).map(|(start, e2e)| (start, start + e2e)))
        .collect::<Option<_>>()?;
    let start = timed.iter().map(|t| t.0).reduce(f64::min)?;
    let end = timed.iter().map(|t| t.1).reduce(f64::max)?;
    Some(end - start)
}

/// The leaderboard's name for `metric` of a step at `concurrency`: unchanged at 1, suffixed
/// `@c<N>` above it (`decode_tps@c4`, `ttft_p99_ms@c4`), so that rows of one cell at different
/// concurrency never share a name (docs/leaderboard.md).
pub fn metric_name(metric: &str, concurrency: u32) -> String {
    if concurrency > 1 {
        format!("{metric}@c{concurrency}")
    } else {
        metric.to_owned()
    }
}

/// One leaderboard row's figure: metric (before the concurrency suffix), unit, value, what `n`
/// counts, and whether it is a percentile that is only the largest value.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub metric: String,
    pub unit: &'static str,
    pub value: f64,
    pub n: usize,
    pub tail_is_max: bool,
}

/// The flag of a percentile row that is only the largest value.
pub const TAIL_IS_MAX: &str = "tail-is-max";

/// The serving rows of `s`, in order: `output_tps`, `requests_per_s`, then p50, p90 and p99 of
/// TTFT, ITL, TPOT and E2E. A figure with nothing to compute it from has no row.
pub fn rows(s: &Serving) -> Vec<Row> {
    let mut rows = Vec::new();
    if let Some(v) = s.output_tps {
        rows.push(Row { metric: "output_tps".to_owned(), unit: "tok/s", value: v, n: s.n_ok, tail_is_max: false });
    }
    if let Some(v) = s.requests_per_s {
        rows.push(Row { metric: "requests_per_s".to_owned(), unit: "req/s", value: v, n: s.n_ok, tail_is_max: false });
    }
    let percentile_rows = |rows: &mut Vec<Row>, stem: &str, p: &Percentiles, qs: &[u32]| {
        for &q in qs {
            rows.push(Row { metric: format!("{stem}_p{q}_ms"), unit: "ms", value: p.get(q), n: p.n, tail_is_max: p.tail_is_max(q) });
        }
    };
    for which in Latency::ALL {
        let Some(p) = s.latency(which) else { continue };
        percentile_rows(&mut rows, which.as_str(), p, &PERCENTILES);
    }
    // Under arrivals at a rate: the clock of the schedule, and whether the rate held.
    if let Some(rate) = &s.rate {
        for (stem, p) in [("ttft_sched", &s.ttft_scheduled_ms), ("e2e_sched", &s.e2e_scheduled_ms)] {
            if let Some(p) = p {
                percentile_rows(&mut rows, stem, p, &PERCENTILES);
            }
        }
        if let Some(p) = &s.schedule_delay_ms {
            percentile_rows(&mut rows, "schedule_delay", p, &[50, 99]);
        }
        for (metric, value) in [("offered_request_rate", rate.offered), ("achieved_request_rate", rate.achieved)] {
            if let Some(value) = value {
                rows.push(Row { metric: metric.to_owned(), unit: "req/s", value, n: s.n_ok + s.n_failed, tail_is_max: false });
            }
        }
    }
    if let Some(g) = &s.goodput {
        // The objectives are in the name: rows under other objectives are other rows.
        let named = |stem: &str| format!("{stem}[{}]", g.slo);
        rows.push(Row { metric: named("slo_attainment"), unit: "ratio", value: g.attainment, n: g.n, tail_is_max: false });
        for (stem, unit, value) in [("goodput_rps", "req/s", g.requests_per_s), ("goodput_tps", "tok/s", g.output_tps)] {
            if let Some(value) = value {
                rows.push(Row { metric: named(stem), unit, value, n: g.n, tail_is_max: false });
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_is_a_value_measured_and_the_max_when_n_is_small() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&v, 50), Some(5.0), "⌈5⌉ = rank 5");
        assert_eq!(percentile(&v, 90), Some(9.0), "⌈9⌉ = rank 9, exactly");
        assert_eq!(percentile(&v, 99), Some(10.0), "⌈9.9⌉ = rank 10");
        let eight = Percentiles::of(&v[..8]).unwrap();
        assert_eq!((eight.p50, eight.p90, eight.p99), (4.0, 8.0, 8.0));
        assert!(!eight.tail_is_max(50) && eight.tail_is_max(90) && eight.tail_is_max(99));
        let hundred = Percentiles::of(&(1..=100).map(f64::from).collect::<Vec<_>>()).unwrap();
        assert_eq!(hundred.p99, 99.0);
        assert!(!hundred.tail_is_max(99));
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn concurrency_one_keeps_the_names_and_above_it_every_name_says_it() {
        assert_eq!(metric_name("decode_tps", 1), "decode_tps");
        assert_eq!(metric_name("ttft_p99_ms", 4), "ttft_p99_ms@c4");
    }
}
