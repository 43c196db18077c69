//! The `agent` workload: shipped coding-agent sessions replayed turn by turn (docs/agent.md).

use crate::pass::Step;
use crate::runner::Job;

/// The jobs of session `rep` of an agent step (a warmup session when `warmup`): its turns in
/// order, each with `session: Some(rep)` and its `turn`, so that they run one after another.
pub fn jobs(step: &Step, rep: u32, warmup: bool) -> anyhow::Result<Vec<Job>> {
    let _ = (step, rep, warmup);
    anyhow::bail!("the agent workload is not built yet")
}
