//! Rules over a pass's recorded runs that more than one reader must decide the same way: which
//! runs stopped short of their cap, and which a later attempt superseded (the analysis leaves
//! them out of every figure; `--resume` runs their slot again).

use crate::format::{RunRecord, Workload};

/// A run that ended before its token cap: its decode rate is a burst, not sustained decode.
/// A failed run is a failure, not a short stop. An imported run whose source kept neither
/// the cap (`max_tokens` 0) nor a finish reason cannot be called either way, and is not.
pub fn is_short_stop(run: &RunRecord) -> bool {
    let cap_unknown = run.max_tokens == 0 && run.finish_reason.is_none();
    run.error.is_none()
        && !cap_unknown
        && (run.finish_reason.as_deref() != Some("length") || run.completion_tokens.is_some_and(|n| n < run.max_tokens))
}

/// The slot a run fills: its cell, workload, target, repetition and whether it is a warmup.
type SlotOf<'a> = (&'a str, Workload, u64, u32, bool);

fn slot_of(run: &RunRecord) -> SlotOf<'_> {
    (&run.cell, run.workload, run.target_prompt_tokens, run.rep, run.warmup)
}

/// Which of `runs` are superseded: those whose slot has runs of a later `attempt` (an agent
/// session that `--resume` ran again whole, after an interruption had cut it short). They stay
/// in `runs.jsonl`, and every figure leaves them out: the one rule the analysis and the resume
/// share.
pub fn superseded(runs: &[RunRecord]) -> Vec<bool> {
    if runs.iter().all(|r| r.attempt == 0) {
        return vec![false; runs.len()];
    }
    let mut latest: std::collections::HashMap<SlotOf<'_>, u32> = std::collections::HashMap::new();
    for run in runs {
        let attempt = latest.entry(slot_of(run)).or_insert(0);
        *attempt = (*attempt).max(run.attempt);
    }
    runs.iter().map(|run| run.attempt < latest[&slot_of(run)]).collect()
}
