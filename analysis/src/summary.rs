//! A first per-step summary of one pass: medians and ranges of the measured runs, with the
//! runs that must not be read as sustained decode counted beside them.

use std::fmt::Write as _;

use harness::pass::{Pass, Workload};

use crate::runs::{run_facts, RunFacts};

#[derive(Debug, Clone, PartialEq)]
pub struct StepSummary {
    pub engine: String,
    pub model: String,
    pub workload: Workload,
    pub target_prompt_tokens: u64,
    pub n: usize,
    pub n_failed: usize,
    pub n_short: usize,
    pub median_prompt_tokens: Option<f64>,
    pub median_ttft_ms: Option<f64>,
    pub median_decode_tps: Option<f64>,
    pub decode_tps_range: Option<(f64, f64)>,
    pub median_prefill_tps: Option<f64>,
    pub estimated_counts: bool,
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 { sorted[mid] } else { (sorted[mid - 1] + sorted[mid]) / 2.0 })
}

/// Measured runs (warmups left out) grouped by cell, workload and target, in pass order.
pub fn summarize(pass: &Pass) -> Vec<StepSummary> {
    let facts = run_facts(pass);
    let mut keys: Vec<(&str, Workload, u64)> = Vec::new();
    for f in facts.iter().filter(|f| !f.warmup) {
        let key = (f.cell.as_str(), f.workload, f.target_prompt_tokens);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .map(|(cell, workload, target)| {
            let group: Vec<&RunFacts> = facts
                .iter()
                .filter(|f| !f.warmup && f.cell == cell && f.workload == workload && f.target_prompt_tokens == target)
                .collect();
            let ok: Vec<&RunFacts> = group.iter().copied().filter(|f| !f.failed).collect();
            let collect = |get: fn(&RunFacts) -> Option<f64>| ok.iter().filter_map(|f| get(f)).collect::<Vec<_>>();
            let decode = collect(|f| f.decode_tps);
            let range = decode.iter().copied().fold(None, |acc: Option<(f64, f64)>, v| {
                Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
            });
            StepSummary {
                engine: group[0].engine.clone(),
                model: group[0].model.clone(),
                workload,
                target_prompt_tokens: target,
                n: group.len(),
                n_failed: group.len() - ok.len(),
                n_short: ok.iter().filter(|f| f.short_stop).count(),
                median_prompt_tokens: median(&collect(|f| f.prompt_tokens.map(|n| n as f64))),
                median_ttft_ms: median(&collect(|f| f.ttft_ms)),
                median_decode_tps: median(&decode),
                decode_tps_range: range,
                median_prefill_tps: median(&collect(|f| f.prefill_tps)),
                estimated_counts: ok.iter().any(|f| f.token_count_source == Some(harness::pass::TokenCountSource::Estimate)),
            }
        })
        .collect()
}

/// A Markdown table of [`summarize`], with `*` on steps that hold short stops and footnotes
/// that say why.
pub fn render_markdown(pass: &Pass) -> String {
    let rows = summarize(pass);
    let mut out = String::new();
    let _ = writeln!(out, "# Pass {}\n", pass.info.pass_id);
    let _ = writeln!(out, "Machine: {} · benchpass {}\n", pass.info.machine.name, pass.info.benchpass.version);
    out.push_str("| engine | model | workload | target | prompt tokens | TTFT ms | decode tok/s (min–max) | prefill tok/s | runs |\n");
    out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|\n");
    let fmt = |v: Option<f64>, digits: usize| v.map_or("–".to_owned(), |v| format!("{v:.digits$}"));
    let mut notes = Vec::new();
    for row in &rows {
        let mut marks = String::new();
        if row.n_short > 0 {
            marks.push('*');
        }
        if row.estimated_counts {
            marks.push('~');
        }
        let range = row.decode_tps_range.map_or(String::new(), |(lo, hi)| format!(" ({lo:.1}–{hi:.1})"));
        let runs = if row.n_failed > 0 { format!("{} ({} failed)", row.n, row.n_failed) } else { row.n.to_string() };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {}{marks}{range} | {} | {runs} |",
            escape(&row.engine),
            escape(&row.model),
            row.workload.as_str(),
            row.target_prompt_tokens,
            fmt(row.median_prompt_tokens, 0),
            fmt(row.median_ttft_ms, 1),
            fmt(row.median_decode_tps, 1),
            fmt(row.median_prefill_tps, 0),
        );
    }
    if rows.iter().any(|r| r.n_short > 0) {
        notes.push("\\* some runs ended before their token cap: their decode rate is a burst, not sustained decode.");
    }
    if rows.iter().any(|r| r.estimated_counts) {
        notes.push("~ token counts are estimates (4 characters a token): the server sent no usage and has no tokenizer endpoint.");
    }
    if !notes.is_empty() {
        out.push('\n');
        for note in notes {
            let _ = writeln!(out, "{note}  ");
        }
    }
    out
}

/// Keeps engine-provided strings from breaking the table or injecting markup.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('|', "\\|").replace('<', "&lt;").replace('>', "&gt;").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn table_breakers_are_escaped() {
        assert_eq!(escape("a|b<script>"), "a\\|b&lt;script&gt;");
    }
}
