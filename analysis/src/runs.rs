//! One row per run with the figures of docs/metrics.md worked out: the table every statistic
//! starts from.

use harness::metrics;
use harness::pass::{Pass, TokenCountSource, Workload};
use harness::runner::is_short_stop;

#[derive(Debug, Clone, PartialEq)]
pub struct RunFacts {
    pub cell: String,
    pub engine: String,
    pub model: String,
    pub lane: String,
    pub workload: Workload,
    pub target_prompt_tokens: u64,
    pub rep: u32,
    pub warmup: bool,
    pub max_tokens: u64,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub ttft_ms: Option<f64>,
    pub decode_tps: Option<f64>,
    pub prefill_tps: Option<f64>,
    pub failed: bool,
    pub short_stop: bool,
    pub token_count_source: Option<TokenCountSource>,
}

pub fn run_facts(pass: &Pass) -> Vec<RunFacts> {
    pass.runs
        .iter()
        .map(|run| {
            let cell = pass.cell(&run.cell);
            let field = |f: fn(&harness::pass::CellInfo) -> &String| cell.map(f).cloned().unwrap_or_default();
            RunFacts {
                cell: run.cell.clone(),
                engine: field(|c| &c.engine.name),
                model: field(|c| &c.model),
                lane: field(|c| &c.lane),
                workload: run.workload,
                target_prompt_tokens: run.target_prompt_tokens,
                rep: run.rep,
                warmup: run.warmup,
                max_tokens: run.max_tokens,
                prompt_tokens: run.prompt_tokens,
                completion_tokens: run.completion_tokens,
                ttft_ms: run.ttft_ms,
                decode_tps: metrics::decode_tps(run.completion_tokens, run.decode_ms),
                prefill_tps: metrics::prefill_tps(run.prompt_tokens, run.ttft_ms),
                failed: run.is_error(),
                short_stop: is_short_stop(run),
                token_count_source: run.token_count_source,
            }
        })
        .collect()
}
