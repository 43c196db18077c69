//! A one-pass summary table in Markdown: each cell's figures with their noise bands, `*` on
//! figures that must not be read as sustained decode, and a footnote for every reason.

use std::fmt::Write as _;

use harness::pass::Pass;

use crate::cells::{CellStep, Metric};
use crate::reasons::ReasonCode;

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

fn with_band(metric: Option<&Metric>, digits: usize) -> String {
    match metric {
        None => "–".to_owned(),
        Some(m) if m.values.len() < 2 => format!("{:.digits$}", m.median),
        Some(m) => format!("{:.digits$} ±{:.1}%", m.median, m.band.half_width * 100.0),
    }
}

pub fn render_markdown(pass: &Pass, steps: &[CellStep]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Pass {}\n", escape(&pass.info.pass_id));
    let _ = writeln!(out, "Machine: {} · benchpass {}\n", escape(&pass.info.machine.name), pass.info.benchpass.version);
    out.push_str("| engine | model | workload | target | prompt tokens | TTFT ms | decode tok/s | prefill tok/s | runs | notes |\n");
    out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---|\n");
    let mut footnotes: Vec<String> = Vec::new();
    for step in steps {
        let mut notes = Vec::new();
        for reason in &step.reasons {
            let text = format!("`{}`: {}", reason.code, reason.explain());
            let index = match footnotes.iter().position(|f| *f == text) {
                Some(i) => i,
                None => {
                    footnotes.push(text);
                    footnotes.len() - 1
                }
            };
            notes.push((index + 1).to_string());
        }
        let star = if step.has(ReasonCode::ShortStop) { "*" } else { "" };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {}{star} | {} | {} | {} |",
            escape(&step.engine),
            escape(&step.model),
            step.workload.as_str(),
            step.target_prompt_tokens,
            step.prompt_tokens.as_ref().map_or("–".to_owned(), |m| format!("{:.0}", m.median)),
            with_band(step.ttft.as_ref(), 1),
            with_band(step.decode.as_ref(), 1),
            with_band(step.prefill.as_ref(), 0),
            step.n_runs,
            notes.join(" "),
        );
    }
    if let Some(level) = steps.iter().filter_map(|s| s.decode.as_ref()).find_map(|m| m.band.level) {
        let _ = writeln!(
            out,
            "\nBands are ± the largest of the runs' own spread and a 2 % floor; with 3 runs such a band \
             covers the true median at least {:.0} % of the time (docs/statistics.md).",
            level * 100.0
        );
    }
    if !footnotes.is_empty() {
        out.push('\n');
        for (i, note) in footnotes.iter().enumerate() {
            let _ = writeln!(out, "{}. {}", i + 1, escape_text(note));
        }
    }
    out
}

/// Keeps engine-provided strings from breaking the table or injecting markup.
pub fn escape(s: &str) -> String {
    escape_text(s).replace('|', "\\|")
}

fn escape_text(s: &str) -> String {
    s.replace('<', "&lt;").replace('>', "&gt;").replace('\n', " ")
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
