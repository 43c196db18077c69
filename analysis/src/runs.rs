//! One row per run with the figures of docs/metrics.md worked out and the provenance of its
//! cell beside it: the table every statistic starts from.

use harness::metrics;
use harness::pass::{Pass, TokenCountSource, Workload};
use harness::runner::is_short_stop;

#[derive(Debug, Clone, PartialEq)]
pub struct RunFacts {
    pub pass_id: String,
    pub cell: String,
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
    pub prompt_sha256: Option<String>,
    /// SHA-256 of the text and reasoning the run produced; absent for imported runs.
    pub output_sha256: Option<String>,
    /// Speculative decoding: draft tokens proposed and accepted (llama.cpp `timings`).
    pub draft_n: Option<u64>,
    pub draft_n_accepted: Option<u64>,
    pub server_peak_rss_bytes: Option<u64>,
    /// The server's own decode rate (llama.cpp `timings.predicted_per_second`).
    pub server_decode_tps: Option<f64>,
}

pub fn run_facts(pass: &Pass) -> Vec<RunFacts> {
    pass.runs
        .iter()
        .map(|run| {
            let output_sha256 = run.output_sha256.clone().or_else(|| harness::pass::RunRecord::hash_output(&run.events));
            let timing = |key: &str| run.timings.as_ref().and_then(|t| t.get(key)).and_then(serde_json::Value::as_u64);
            RunFacts {
                pass_id: pass.info.pass_id.clone(),
                cell: run.cell.clone(),
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
                prompt_sha256: run.prompt_sha256.clone(),
                output_sha256,
                draft_n: timing("draft_n"),
                draft_n_accepted: timing("draft_n_accepted"),
                server_peak_rss_bytes: run.server_peak_rss_bytes,
                server_decode_tps: run.timings.as_ref().and_then(|t| t.get("predicted_per_second")).and_then(serde_json::Value::as_f64),
            }
        })
        .collect()
}
