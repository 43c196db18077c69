//! The comparison key: every fact of how a step was measured that changes its figures, other
//! than which engine and build measured it. Two figures whose keys differ are never ranked
//! together (the report's best marks), and a leaderboard row carries every field of its key
//! in columns of its own, so that rows that cannot be compared can be told apart without
//! reading the pass. The diff pairs steps on its own key (`diff::keys`: the engine's identity,
//! family, lane, workload, target, streams) and names the other fields that differ as reasons.
//!
//! docs/statistics.md ("Diffs") and docs/leaderboard.md say which fields are in it.

use benchpass_format::Workload;

/// How a step's requests were made, beyond its workload and size: the parts of the key that
/// the pass (not the step's runs) records, decided by [`benchpass_format::PassInfo::step_request`].
pub type RequestFacts = benchpass_format::StepRequest;

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
    /// The SHA-256 of the shipped texts the prompts were drawn from; empty where not known.
    pub prompt_set: String,
    pub machine: String,
    /// The objectives goodput was counted against ([`benchpass_format::Slo::key`]); empty
    /// where none. Only goodput figures depend on it: [`ComparisonKey::for_goodput`] keeps it,
    /// [`ComparisonKey::of`] leaves it empty, so that other figures of passes with other
    /// objectives still pair.
    pub slo: String,
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
            request_rate: benchpass_format::key_number(step.request.request_rate),
            api: step.request.api.clone(),
            temperature: benchpass_format::key_number(step.request.temperature),
            past_eos: step.request.past_eos.clone(),
            prompt_set: step.request.prompt_set.clone(),
            machine: step.machine.clone(),
            slo: String::new(),
        }
    }

    /// The key of `step`'s goodput figures: [`ComparisonKey::of`] with its objectives.
    pub fn for_goodput(step: &crate::cells::CellStep) -> ComparisonKey {
        ComparisonKey { slo: step.request.slo.clone(), ..ComparisonKey::of(step) }
    }
}

/// Whether two steps' goodput figures may be compared: their objectives are the same (two
/// passes with other `--slo` count other runs as good). The one rule the diff follows.
pub fn goodput_comparable(a: &crate::cells::CellStep, b: &crate::cells::CellStep) -> Result<(), String> {
    let (ka, kb) = (&a.request.slo, &b.request.slo);
    if ka == kb {
        Ok(())
    } else {
        let shown = |k: &str| if k.is_empty() { "none".to_owned() } else { k.to_owned() };
        Err(format!("objectives {} → {}: goodput under other objectives counts other runs as good", shown(ka), shown(kb)))
    }
}

/// The energy part of a step's key: `source:domain` (`rapl:package+dram`, `nvml:gpu`), empty
/// without energy. Energy figures of two steps are paired, ranked or compared only where it is
/// the same and not empty ([`energy_comparable`]): joules of a CPU package and of a GPU, or of
/// one package and two, measure different things.
pub fn energy_key(step: &crate::cells::CellStep) -> &str {
    step.energy.as_ref().map_or("", |e| e.key.as_str())
}

/// Whether the energy figures of `a` and `b` may be compared: the one rule the diff and the
/// report's marks follow.
pub fn energy_comparable(a: &crate::cells::CellStep, b: &crate::cells::CellStep) -> bool {
    energy_keys_comparable(energy_key(a), energy_key(b))
}

/// The rule itself, on two `source:domain` keys (a step's, or a serving step's
/// [`crate::serving::ServingEnergy::key`]): the same, and not empty.
pub fn energy_keys_comparable(a: &str, b: &str) -> bool {
    !a.is_empty() && a == b
}

#[cfg(test)]
mod tests {
    use super::energy_keys_comparable;

    #[test]
    fn energy_compares_only_within_one_source_and_domain() {
        assert!(energy_keys_comparable("rapl:package", "rapl:package"));
        assert!(!energy_keys_comparable("rapl:package", "rapl:package+dram"));
        assert!(!energy_keys_comparable("nvml:gpu", "nvml:gpu×2"));
        // No energy on either side is not "the same energy".
        assert!(!energy_keys_comparable("", ""));
    }
}
