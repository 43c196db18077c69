//! Why a figure may not be read at face value or compared: reason codes, each with the
//! sentence a report prints for it. The codes are stable (the leaderboard CSV carries them).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReasonCode {
    ShortStop,
    FewRuns,
    Errors,
    EngineBuild,
    PromptSize,
    TokenEstimate,
    Nondeterministic,
    Lane,
    Params,
    Machine,
    Unhashed,
    LowN,
    Reconciliation,
    Drift,
    Thermal,
    /// The machine's swap in use rose during some runs.
    Swapped,
    /// A memory table's engines measure differently: one maps its weights (the footprint
    /// leaves them out), another holds them in its own memory.
    WeightsMapped,
    UsageMismatch,
    ColdStart,
    NoCacheInfo,
    /// Runs of a workload measured cold were served largely from the engine's prefix cache.
    PrefixCached,
    /// Lines of the pass's runs.jsonl could not be read: the figures are over the others.
    Damaged,
    /// Under `--request-rate`, the achieved request rate fell short of the offered one by more
    /// than `serving::RATE_MARGIN`.
    RateNotHeld,
    /// A diff's change is within the client's own timing error, measured by the passes'
    /// self-checks against the reference engine (`crate::floor`).
    BelowFloor,
}

impl ReasonCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::ShortStop => "short-stop",
            ReasonCode::FewRuns => "few-runs",
            ReasonCode::Errors => "errors",
            ReasonCode::EngineBuild => "engine+build",
            ReasonCode::PromptSize => "prompt-size",
            ReasonCode::TokenEstimate => "token-estimate",
            ReasonCode::Nondeterministic => "nondeterministic",
            ReasonCode::Lane => "lane",
            ReasonCode::Params => "params",
            ReasonCode::Machine => "machine",
            ReasonCode::Unhashed => "unhashed",
            ReasonCode::LowN => "low-n",
            ReasonCode::Reconciliation => "reconciliation",
            ReasonCode::Drift => "drift",
            ReasonCode::Thermal => "thermal",
            ReasonCode::Swapped => "swapped",
            ReasonCode::WeightsMapped => "weights-mapped",
            ReasonCode::UsageMismatch => "usage-mismatch",
            ReasonCode::ColdStart => "cold-start",
            ReasonCode::NoCacheInfo => "no-cache-info",
            ReasonCode::PrefixCached => "prefix-cached",
            ReasonCode::Damaged => "damaged",
            ReasonCode::RateNotHeld => "rate-not-held",
            ReasonCode::BelowFloor => "below-floor",
        }
    }

    /// What the code means, in one sentence; [`Reason::detail`] adds the particulars.
    pub fn sentence(self) -> &'static str {
        match self {
            ReasonCode::ShortStop => "runs ended before their token cap: a decode rate from them is a burst, not sustained decode",
            ReasonCode::FewRuns => "too few runs for a noise band or a test",
            ReasonCode::Errors => "some runs failed",
            ReasonCode::EngineBuild => "the weights differ between the engines compared, so the difference is engine and build together, not the engine alone",
            ReasonCode::PromptSize => "the actual prompt size is off its target, or differs between the figures compared",
            ReasonCode::TokenEstimate => "token counts are estimates (4 characters a token), not the server's",
            ReasonCode::Nondeterministic => "at temperature 0, runs of the same prompt produced different text",
            ReasonCode::Lane => "the server lanes differ",
            ReasonCode::Params => "the request parameters differ",
            ReasonCode::Machine => "the machines differ",
            ReasonCode::Unhashed => "the weights were not hashed on one side, so a change of build cannot be ruled out",
            ReasonCode::LowN => "too few runs for the exact test to reach p ≤ 0.05, so the change is called at α = 0.10",
            ReasonCode::Drift => "the decode rate moved one way run after run (falling: thermal throttling; rising: a warming cache), a trend, not noise",
            ReasonCode::ColdStart => "no warmup run, and the first measured run is far from the others: it paid for a cold start (weights paged in, caches and kernels cold)",
            ReasonCode::Thermal => "the machine reported thermal pressure heavy or worse (the level at which macOS throttles) during some runs: they may have run throttled",
            ReasonCode::Swapped => "the machine's swap in use rose during some runs: the model and its caches did not fit in memory, so those runs waited on the disk and their figures are the machine's, not the engine's",
            ReasonCode::WeightsMapped => "this engine maps its weights from their files: the physical footprint (macOS) leaves mapped file pages out, and resident size counts them only while they stay in memory, so its figure does not compare with an engine that holds its weights in memory of its own",
            ReasonCode::UsageMismatch => "the server's usage count contradicts the events it streamed (fewer tokens than token events, or far more than they could carry), so neither the count nor the decode rate built on it is trusted",
            ReasonCode::NoCacheInfo => "the engine reported no cached prompt tokens (usage prompt_tokens_details.cached_tokens or timings.cache_n): the cache figures are unknown, not zero",
            ReasonCode::PrefixCached => "the server said it served much of the prompt from its prefix cache in some runs: their TTFT and prefill rate are warm figures, not a cold prompt's",
            ReasonCode::Reconciliation => "benchpass's decode rate and the server's own timings disagree by more than 5 %: an engine that buffers tokens, or a client that mis-times",
            ReasonCode::RateNotHeld => "the requests were not served at the rate asked for (the achieved rate is more than 5 % below the rate the schedule offered): the client or the server could not keep up, so these are the figures of an overloaded server, not of one holding the rate; read the latencies from the schedule",
            ReasonCode::BelowFloor => "the change is within the client's own timing error, measured on these machines by the passes' self-checks against the reference engine: it says nothing about the engines",
            ReasonCode::Damaged => "the pass's runs.jsonl holds lines that could not be read (or a last line cut short): the runs they held, of whichever cell, are missing from these figures",
        }
    }
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub code: ReasonCode,
    /// The particulars: which runs, which values.
    pub detail: String,
}

impl Reason {
    pub fn new(code: ReasonCode, detail: impl Into<String>) -> Reason {
        Reason { code, detail: detail.into() }
    }

    /// `sentence (detail)`, as a footnote prints it.
    pub fn explain(&self) -> String {
        if self.detail.is_empty() {
            self.code.sentence().to_owned()
        } else {
            format!("{} ({})", self.code.sentence(), self.detail)
        }
    }
}

/// The `rate-not-held` reason of a step whose rate fell short, with its three rates.
pub fn rate_not_held(rate: &crate::serving::RateHeld) -> Reason {
    let show = |v: Option<f64>| v.map_or_else(|| "unknown".to_owned(), |v| format!("{v:.2}"));
    Reason::new(
        ReasonCode::RateNotHeld,
        format!("requested {:.2} req/s, offered {}, achieved {}", rate.requested, show(rate.offered), show(rate.achieved)),
    )
}

/// Codes joined by `;`, sorted and without repeats: the leaderboard's `flags` column.
pub fn join_codes(reasons: &[Reason]) -> String {
    let mut codes: Vec<ReasonCode> = reasons.iter().map(|r| r.code).collect();
    codes.sort();
    codes.dedup();
    codes.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(";")
}
