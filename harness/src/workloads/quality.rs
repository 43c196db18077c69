//! The `quality` workload: shipped prompts run greedily with the top-K logprobs of every token
//! (docs/quality.md).
//!
//! The prompts are `data/quality/prompts.jsonl` (52 of them, documented in its README). A step
//! with `runs = N` runs every prompt once (its round 0) and the repeated subset N − 1 more
//! times (rounds 1 … N − 1), so that `cargo xtask quality` can pair every prompt with a
//! reference cell's and say how often a cell agrees with itself. Each run's `prompt_id` is its
//! prompt's id: the analysis pairs runs by it, never by position in the pass.

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::client::Prompt;
use crate::pass::{Step, Workload};
use crate::runner::Job;

/// The cap per quality prompt: enough tokens to diverge, few enough to run 50 prompts quickly.
pub const MAX_TOKENS: u64 = 128;
/// The OpenAI API's maximum `top_logprobs`.
pub const MAX_TOP_LOGPROBS: u32 = 20;
pub const DEFAULT_TOP_LOGPROBS: u32 = MAX_TOP_LOGPROBS;

/// One shipped prompt, a line of `data/quality/prompts.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QualityPrompt {
    /// Recorded as each run's `prompt_id`.
    pub id: String,
    /// `prose`, `code`, `arithmetic`, `list` or `instruction` (for people reading the file).
    pub kind: String,
    /// In the subset run again for self-agreement.
    pub repeat: bool,
    pub prompt: String,
}

/// Embedded so that a pass does not depend on the working directory.
pub(crate) const SHIPPED: &str = include_str!("../../../data/quality/prompts.jsonl");

/// The shipped prompts, in file order, parsed and checked once.
pub fn prompts() -> anyhow::Result<&'static [QualityPrompt]> {
    static PROMPTS: OnceLock<Result<Vec<QualityPrompt>, String>> = OnceLock::new();
    let parsed = PROMPTS.get_or_init(|| parse(SHIPPED).map_err(|e| format!("{e:#}")));
    match parsed {
        Ok(prompts) => Ok(prompts),
        Err(e) => anyhow::bail!("{e}"),
    }
}

fn parse(text: &str) -> anyhow::Result<Vec<QualityPrompt>> {
    let mut prompts: Vec<QualityPrompt> = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let prompt: QualityPrompt =
            serde_json::from_str(line).map_err(|e| anyhow::anyhow!("data/quality/prompts.jsonl line {}: {e}", i + 1))?;
        anyhow::ensure!(!prompt.prompt.is_empty(), "data/quality/prompts.jsonl line {}: an empty prompt", i + 1);
        // Runs are paired by id: two prompts with one id would pair the wrong texts.
        anyhow::ensure!(
            !prompts.iter().any(|p| p.id == prompt.id),
            "data/quality/prompts.jsonl line {}: the id `{}` is used twice",
            i + 1,
            prompt.id
        );
        prompts.push(prompt);
    }
    anyhow::ensure!(prompts.iter().any(|p| p.repeat), "data/quality/prompts.jsonl: no prompt is marked `repeat`");
    Ok(prompts)
}

/// The jobs of round `rep` of a quality step: round 0 runs every shipped prompt, later rounds
/// the repeated subset. A warmup round runs the repeated subset: it warms the engine without
/// costing a full round, and warmups are never compared.
pub fn jobs(step: &Step, rep: u32, warmup: bool) -> anyhow::Result<Vec<Job>> {
    jobs_of(prompts()?, step, rep, warmup)
}

fn jobs_of(prompts: &[QualityPrompt], step: &Step, rep: u32, warmup: bool) -> anyhow::Result<Vec<Job>> {
    anyhow::ensure!(step.workload == Workload::Quality, "a {} step is not a quality step", step.workload.as_str());
    let every = rep == 0 && !warmup;
    Ok(prompts
        .iter()
        .filter(|p| every || p.repeat)
        .map(|p| Job {
            workload: Workload::Quality,
            target: step.target_prompt_tokens,
            max_tokens: step.max_tokens,
            ignore_eos: false,
            rep,
            warmup,
            prompt: Arc::new(Prompt::Text(p.prompt.clone())),
            session: None,
            turn: None,
            prompt_id: Some(p.id.clone()),
            top_logprobs: Some(step.top_logprobs.unwrap_or(DEFAULT_TOP_LOGPROBS)),
            concurrency: step.concurrency,
            attempt: 0,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(runs: u32) -> Step {
        Step {
            workload: Workload::Quality,
            target_prompt_tokens: 0,
            max_tokens: MAX_TOKENS,
            warmup: 1,
            runs,
            ignore_eos: false,
            duration_s: None,
            top_logprobs: Some(5),
            concurrency: None,
        }
    }

    #[test]
    fn the_shipped_prompts_are_at_least_fifty_of_every_kind_with_two_of_each_repeated() {
        let prompts = prompts().unwrap();
        assert!(prompts.len() >= 50, "{}", prompts.len());
        for kind in ["prose", "code", "arithmetic", "list", "instruction"] {
            let of_kind: Vec<_> = prompts.iter().filter(|p| p.kind == kind).collect();
            assert!(of_kind.len() >= 10, "{kind}: {}", of_kind.len());
            assert_eq!(of_kind.iter().filter(|p| p.repeat).count(), 2, "{kind}");
        }
    }

    #[test]
    fn round_zero_runs_every_prompt_and_later_rounds_and_warmups_the_repeated_subset() {
        let prompts = prompts().unwrap();
        let first = jobs(&step(3), 0, false).unwrap();
        assert_eq!(first.len(), prompts.len());
        assert_eq!(first[0].prompt_id.as_deref(), Some(prompts[0].id.as_str()));
        assert_eq!(*first[0].prompt, Prompt::Text(prompts[0].prompt.clone()));
        assert!(first.iter().all(|j| j.top_logprobs == Some(5) && j.max_tokens == MAX_TOKENS && !j.warmup && j.session.is_none()));
        let repeated: Vec<_> = prompts.iter().filter(|p| p.repeat).map(|p| Some(p.id.clone())).collect();
        for (rep, warmup) in [(1, false), (2, false), (0, true)] {
            let round = jobs(&step(3), rep, warmup).unwrap();
            assert_eq!(round.iter().map(|j| j.prompt_id.clone()).collect::<Vec<_>>(), repeated, "round {rep} warmup {warmup}");
            assert!(round.iter().all(|j| j.rep == rep && j.warmup == warmup));
        }
    }

    #[test]
    fn a_duplicate_id_or_no_repeated_prompt_is_refused() {
        let line = r#"{"id": "a", "kind": "code", "repeat": true, "prompt": "x"}"#;
        assert!(parse(&format!("{line}\n{line}\n")).unwrap_err().to_string().contains("used twice"));
        assert!(parse(r#"{"id": "a", "kind": "code", "repeat": false, "prompt": "x"}"#).unwrap_err().to_string().contains("repeat"));
        assert!(parse(r#"{"id": "a", "kind": "code", "repeat": true, "prompt": "x", "extra": 1}"#).is_err());
    }
}
