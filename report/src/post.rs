//! `benchpass report PASS --format post`: the pass as one compact table to paste into a forum
//! post or an issue, shaped like `llama-bench -o md` (one row per engine, model and test; the
//! rate with its band), under the report's headline and over one footnote line per mark.
//! Plain CommonMark/GFM: no HTML, marks as superscript digits, so that GitHub, Reddit and a
//! terminal show the same thing.

use analysis::cells::CellStep;
use benchpass_format::{Pass, Workload};

use crate::view::{with_band, Levels, Notes, ShortStopMark};
use crate::{md_escape, md_marks};

/// `tg128` for sustained decode, `pp2048+tg128` where a prompt of that target came first.
fn test_name(step: &CellStep) -> String {
    match step.workload {
        Workload::Sustained => format!("tg{}", step.max_tokens),
        _ => format!("pp{}+tg{}", step.target_prompt_tokens, step.max_tokens),
    }
}

/// The post: headline, table, footnotes, and where the figures come from.
pub fn render(pass: &Pass, steps: &[CellStep]) -> String {
    let shown: Vec<&CellStep> =
        steps.iter().filter(|s| matches!(s.workload, Workload::Sustained | Workload::PromptMatrix | Workload::PpTg)).collect();
    let levels = Levels::of(steps);
    let mut notes = Notes::default();
    let mut out = String::new();
    for h in crate::headline::headlines(steps) {
        out.push_str(&format!("**{}**: {}\n", md_escape(h.family), md_escape(h.text)));
    }
    if !out.is_empty() {
        out.push('\n');
    }
    let level_columns = levels.columns();
    out.push_str("| engine | version | model |");
    for c in &level_columns {
        out.push_str(&format!(" {c} |"));
    }
    out.push_str(" test | decode tok/s | TTFT ms | prompt tok |\n|---|---|---|");
    out.push_str(&"---:|".repeat(level_columns.len()));
    out.push_str("---|---:|---:|---:|\n");
    for step in &shown {
        let decode = match &step.decode {
            Some(m) => format!("{}{}", md_escape(with_band(m, 1)), md_marks(notes.marks(&step.reasons, ShortStopMark::for_decode(step)))),
            None => "–".to_owned(),
        };
        let ttft = step.ttft.as_ref().map_or("–".to_owned(), |m| md_escape(with_band(m, 1)));
        let prompt = step.prompt_tokens.as_ref().map_or("–".to_owned(), |m| format!("{:.0}", m.median));
        out.push_str(&format!("| {} | {} | {} |", md_escape(step.engine.clone()), md_escape(step.engine_version.clone()), md_escape(step.family.clone())));
        for value in levels.values(step) {
            out.push_str(&format!(" {value} |"));
        }
        out.push_str(&format!(" {} | {decode} | {ttft} | {prompt} |\n", test_name(step)));
    }
    let notes = notes.into_vec();
    if !notes.is_empty() {
        out.push('\n');
    }
    for n in &notes {
        out.push_str(&format!("{} `{}`: {}  \n", md_marks(n.mark.clone()), n.code, md_escape(n.text.clone())));
    }
    out.push_str(&format!(
        "\nMedian of the measured runs ± its noise band (docs/statistics.md). benchpass {} · machine {} · pass {}\n",
        md_escape(pass.info.benchpass.version.clone()),
        md_escape(pass.info.machine.name.clone()),
        md_escape(pass.info.pass_id.clone())
    ));
    out
}
