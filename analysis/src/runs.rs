//! One row per run with the figures of docs/metrics.md worked out and the provenance of its
//! cell beside it: the table every statistic starts from.

use benchpass_format::metrics;
use benchpass_format::{Keep, Pass, PassInfo, RunRecord, TokenCountSource, Workload};
use benchpass_format::runs::is_short_stop;

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
    /// Draft acceptance as the engine's log gave it (a ratio, no counts: oMLX).
    pub logged_draft_acceptance: Option<f64>,
    pub server_peak_rss_bytes: Option<u64>,
    /// The server's own decode rate (llama.cpp `timings.predicted_per_second`).
    pub server_decode_tps: Option<f64>,
    /// The OS's thermal pressure around the run, where it reports one (macOS).
    pub thermal_pressure: Option<benchpass_format::machine::ThermalPressure>,
    /// The machine's swap in use rose during the run (`RunRecord::swapped`, the one rule).
    pub swapped: Option<bool>,
    /// The server's `usage.completion_tokens` and the run's token events, where the two
    /// contradict each other ([`metrics::usage_contradicts_events`]); `None` where they agree or
    /// there is nothing to compare (no usage, or an imported run with no events).
    pub usage_mismatch: Option<(u64, u64)>,
    /// Prompt tokens the server said it served from its prefix cache (`cached_prompt_tokens`
    /// in runs.jsonl); `None` where it said nothing.
    pub cached_prompt_tokens: Option<u64>,
    /// The run's energy (`energy` in runs.jsonl), where its cell had a source.
    pub energy: Option<benchpass_format::RunEnergy>,
    /// Last token event − first token event, for the energy above idle over the decode span.
    pub decode_ms: Option<f64>,
}

/// Draft tokens proposed and accepted during a run, from the engine's Prometheus counters
/// that moved (`server_counters`), for every engine whose preset names its counters
/// (llama.cpp, vLLM, SGLang, Rapid-MLX, Splash): one column whatever the source.
fn draft_counters(counters: &std::collections::BTreeMap<String, f64>) -> Option<(u64, u64)> {
    use engines::presets::{DraftCounters, PRESETS};
    PRESETS.iter().find_map(|preset| match preset.draft_counters {
        DraftCounters::Prometheus { drafted, accepted } => {
            let drafted = *counters.get(drafted)?;
            let accepted = counters.get(accepted).copied().unwrap_or(0.0);
            (drafted.is_finite() && accepted.is_finite() && drafted >= 0.0 && accepted >= 0.0).then_some((drafted as u64, accepted as u64))
        }
        _ => None,
    })
}

/// The server's `usage.completion_tokens` and the run's token events where the two contradict
/// each other (`RunFacts::usage_mismatch`).
fn usage_mismatch(run: &RunRecord) -> Option<(u64, u64)> {
    let usage_completion = run.usage.as_ref().and_then(|u| u.get("completion_tokens")).and_then(serde_json::Value::as_u64);
    let token_events = run.n_token_events()?;
    usage_completion
        .filter(|&n| metrics::usage_contradicts_events(n, token_events))
        .map(|n| (n, token_events))
}

/// What of each run's stream events the figures, charts and comparisons read, for one pass
/// read in file order: the filter to read it with (`benchpass_format::store::read_pass_keeping`),
/// so that a report, a diff or a leaderboard holds what it reads and nothing more. Of every
/// other run the events are read, hashed into its `output_sha256` where it lacks one, and
/// dropped; every figure stays the same (a test compares them with a full read). The readers:
/// - every event, whole ([`Keep::Events`]):
///   - `quality`: a quality run's texts and logprobs;
///   - the report's token timeline (`report::charts::token_timeline`): the first measured run
///     of each cell with a token event;
/// - the events' times only ([`Keep::Times`], `RunRecord::token_times`: 8 bytes a token event
///   where an event takes some 150):
///   - `serving`: every run in a step that has serving figures
///     ([`crate::serving::step_has_figures`], the one rule the figures follow too: times, tokens
///     per event, the last event);
///   - `usage_mismatch` above: a run whose usage contradicts its token events (a run whose
///     usage agrees gives `None` with or without them).
///
/// Any new reader of `RunRecord::events` in analysis or report belongs in this list.
pub fn events_the_figures_read(info: &PassInfo) -> impl FnMut(&RunRecord) -> Keep {
    let mut timeline_cells = std::collections::HashSet::new();
    let info = info.clone();
    move |run| {
        let first_timed = !run.warmup && run.events.iter().any(|e| e.carries_tokens()) && !timeline_cells.contains(&run.cell);
        if first_timed {
            timeline_cells.insert(run.cell.clone());
        }
        if run.workload == Workload::Quality || first_timed {
            Keep::Events
        } else if crate::serving::step_has_figures(&info, run.workload, run.target_prompt_tokens, run.concurrency) || usage_mismatch(run).is_some() {
            Keep::Times
        } else {
            Keep::Nothing
        }
    }
}

/// The runs of `pass` that its figures count, in file order: all but the superseded ones (the
/// runs of a session cut short by an interruption, which `--resume` ran again whole;
/// `benchpass_format::runs::superseded` decides). Every reader of a pass's runs in analysis and report
/// goes through this.
pub fn counted(pass: &Pass) -> impl Iterator<Item = &RunRecord> {
    pass.runs.iter().zip(benchpass_format::runs::superseded(&pass.runs)).filter(|(_, superseded)| !superseded).map(|(run, _)| run)
}

/// How many runs of `pass` are superseded and left out of its figures.
pub fn n_superseded(pass: &Pass) -> usize {
    benchpass_format::runs::superseded(&pass.runs).into_iter().filter(|s| *s).count()
}

pub fn run_facts(pass: &Pass) -> Vec<RunFacts> {
    counted(pass)
        .map(|run| {
            let output_sha256 = run.output_sha256.clone().or_else(|| benchpass_format::RunRecord::hash_output(&run.events));
            let timing = |key: &str| run.timings.as_ref().and_then(|t| t.get(key)).and_then(serde_json::Value::as_u64);
            let drafts = run.server_counters.as_ref().and_then(draft_counters);
            let usage_mismatch = usage_mismatch(run);
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
                draft_n: timing("draft_n").or(drafts.map(|(n, _)| n)),
                draft_n_accepted: timing("draft_n_accepted").or(drafts.map(|(_, a)| a)),
                logged_draft_acceptance: run.logged_draft_acceptance,
                server_peak_rss_bytes: run.server_peak_rss_bytes,
                thermal_pressure: run.thermal_pressure,
                swapped: run.swapped(),
                server_decode_tps: run.timings.as_ref().and_then(|t| t.get("predicted_per_second")).and_then(serde_json::Value::as_f64),
                usage_mismatch,
                cached_prompt_tokens: run.cached_prompt_tokens,
                energy: run.energy,
                decode_ms: run.decode_ms,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::draft_counters;

    #[test]
    fn draft_counters_of_any_preset_land_in_one_pair() {
        let counters = |pairs: &[(&str, f64)]| pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
        // Rapid-MLX and Splash name theirs differently; both give (drafted, accepted).
        let rapid = counters(&[("rapid_mlx_spec_decode_attempts_total", 40.0), ("rapid_mlx_spec_decode_accepts_total", 31.0)]);
        assert_eq!(draft_counters(&rapid), Some((40, 31)));
        let splash = counters(&[("splash_drafted_tokens_total", 12.0), ("splash_accepted_draft_tokens_total", 9.0), ("other_total", 3.0)]);
        assert_eq!(draft_counters(&splash), Some((12, 9)));
        assert_eq!(draft_counters(&counters(&[("http_requests_total", 1.0)])), None);
        assert_eq!(draft_counters(&counters(&[("splash_drafted_tokens_total", f64::NAN)])), None);
    }
}
