//! The `quality` workload: shipped prompts run greedily with the top-K logprobs of every token
//! (docs/quality.md).

use crate::pass::Step;
use crate::runner::Job;

/// The cap per quality prompt: enough tokens to diverge, few enough to run 50 prompts quickly.
pub const MAX_TOKENS: u64 = 128;
/// The OpenAI API's maximum `top_logprobs`.
pub const MAX_TOP_LOGPROBS: u32 = 20;
pub const DEFAULT_TOP_LOGPROBS: u32 = MAX_TOP_LOGPROBS;

/// The jobs of a quality step: every shipped prompt once, and a subset repeated for
/// run-to-run self-agreement.
pub fn jobs(step: &Step, rep: u32, warmup: bool) -> anyhow::Result<Vec<Job>> {
    let _ = (step, rep, warmup);
    anyhow::bail!("the quality workload is not built yet")
}
