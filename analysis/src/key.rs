//! The comparison key: every fact of how a step was measured that changes its figures, other
//! than which engine and build measured it. Two figures whose keys differ are never ranked
//! together (the report's best marks), and a leaderboard row carries every field of its key
//! in columns of its own, so that rows that cannot be compared can be told apart without
//! reading the pass. The diff pairs steps on its own key (`diff::keys`: the engine's identity,
//! family, lane, workload, target, streams) and names the other fields that differ as reasons.
//!
//! docs/statistics.md ("Diffs") and docs/leaderboard.md say which fields are in it.

use benchpass_format::{CellInfo, Pass, Workload};

/// How a step's requests were made, beyond its workload and size: the parts of the key that
/// the pass (not the step's runs) records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestFacts {
    /// `chat` or `completions`; empty where the pass does not say (an import).
    pub api: String,
    pub temperature: Option<f64>,
    /// How the engine was asked to run past EOS for this step: empty when it was not asked
    /// (`ignore_eos` off), else `field`, `logit-bias` or `unsupported`.
    pub past_eos: String,
    /// Seeded arrivals of this many requests a second (`--request-rate`), the step's streams
    /// then capping the requests in flight; `None` for streams kept busy (closed loop).
    pub request_rate: Option<f64>,
}

impl RequestFacts {
    /// The facts of the step of `workload` at `target` in `pass`, for the cell `cell`.
    pub fn of(pass: &Pass, cell: Option<&CellInfo>, workload: Workload, target: u64) -> RequestFacts {
        let Some(request) = pass.info.request.as_ref() else { return RequestFacts::default() };
        let step = request.steps.iter().find(|s| s.workload == workload && s.target_prompt_tokens == target);
        let ignore_eos = request.ignore_eos || step.is_some_and(|s| s.ignore_eos);
        let past_eos = match cell {
            _ if !ignore_eos => String::new(),
            Some(c) => match c.past_eos {
                Some(way) => way.as_str().to_owned(),
                None if c.ignore_eos_logit_bias.is_some() => engines::presets::IgnoreEos::LogitBias.as_str().to_owned(),
                None => engines::presets::IgnoreEos::Field.as_str().to_owned(),
            },
            None => engines::presets::IgnoreEos::Field.as_str().to_owned(),
        };
        RequestFacts { api: request.api.clone(), temperature: Some(request.temperature), past_eos, request_rate: request.request_rate }
    }
}

/// The key of a step: what it was measured with, the engine's identity aside. Fields are
/// compared as they are written (numbers in their shortest exact form).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComparisonKey {
    pub family: String,
    pub lane: String,
    pub workload: Workload,
    pub target_prompt_tokens: u64,
    pub max_tokens: u64,
    pub concurrency: u32,
    pub request_rate: String,
    pub api: String,
    pub temperature: String,
    pub past_eos: String,
    pub machine: String,
}

impl ComparisonKey {
    pub fn of(step: &crate::cells::CellStep) -> ComparisonKey {
        ComparisonKey {
            family: step.family.clone(),
            lane: step.lane.clone(),
            workload: step.workload,
            target_prompt_tokens: step.target_prompt_tokens,
            max_tokens: step.max_tokens,
            concurrency: step.concurrency,
            request_rate: optional(step.request.request_rate),
            api: step.request.api.clone(),
            temperature: optional(step.request.temperature),
            past_eos: step.request.past_eos.clone(),
            machine: step.machine.clone(),
        }
    }
}

/// A number as the key writes it: its shortest exact form, empty when absent.
fn optional(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}
