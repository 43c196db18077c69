//! The report's first lines, readable in five seconds: per model family, the engines ranked by
//! their sustained decode rate, the leader's lead, and whether the difference is the engine's
//! alone or engine and weights together — the line a forum post opens with.
//!
//! Only figures the best marks may rank are ranked here (`view::comparable_groups`: one
//! comparison key, no bursts, no estimated or contradicted counts), so the headline never
//! says more than the table under it.

use analysis::cells::{CellStep, MetricKind};
use analysis::reasons::ReasonCode;
use benchpass_format::Workload;
use serde::Serialize;

use crate::view::{comparable_groups, has_band, with_band, Levels};

/// One headline: a family's engines ranked, or one engine's figure where it has no rival.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Headline {
    /// The model family, with the load level where the pass has more than one
    /// (`benchpass-tiny · streams 4`).
    pub family: String,
    /// Plain text: `llama.cpp 154.4 tok/s, 3.2× mlx-lm (48.3 tok/s) — engine and weights differ`.
    pub text: String,
}

/// The headlines of a pass: every group of sustained steps that may be ranked, then each
/// sustained figure that has no rival in the pass (a one-engine pass still opens with its
/// figure). Steps that may not be ranked at all (a burst, estimated counts) are left to the
/// tables and their notes.
pub fn headlines(steps: &[CellStep]) -> Vec<Headline> {
    let sustained: Vec<&CellStep> = steps.iter().filter(|s| s.workload == Workload::Sustained).collect();
    let levels = Levels::of(steps);
    let groups = comparable_groups(&sustained, MetricKind::DecodeTps, |s| (0, s.family.clone()));
    let mut out: Vec<Headline> = groups.iter().map(|members| ranked(members, levels)).collect();
    for step in &sustained {
        let grouped = groups.iter().flatten().any(|m| std::ptr::eq(*m, *step));
        if grouped || !crate::view::can_be_best(step, MetricKind::DecodeTps) {
            continue;
        }
        let decode = with_band(step.decode.as_ref().expect("can_be_best has a decode rate"), 1);
        // `95.0 ±2.0%` → `95.0 tok/s ±2.0%`: the unit beside the number.
        let figure = match decode.split_once(' ') {
            Some((median, band)) => format!("{median} tok/s {band}"),
            None => format!("{decode} tok/s"),
        };
        out.push(Headline { family: family_label(step, levels), text: format!("{} {figure}", step.engine) });
    }
    out
}

fn family_label(step: &CellStep, levels: Levels) -> String {
    let mut label = step.family.clone();
    for (name, value) in levels.columns().iter().zip(levels.values(step)) {
        label.push_str(&format!(" · {name} {value}"));
    }
    label
}

/// `leader 154.4 tok/s, 3.2× second (48.3 tok/s), 12 % ahead of third (137.9 tok/s) — why`.
fn ranked(members: &[&CellStep], levels: Levels) -> Headline {
    let median = |s: &CellStep| s.decode.as_ref().map_or(f64::NAN, |m| m.median);
    let mut order: Vec<&CellStep> = members.to_vec();
    // Highest first; equal medians keep the pass's order.
    order.sort_by(|a, b| median(b).total_cmp(&median(a)));
    let leader = order[0];
    let mut text = format!("{} {:.1} tok/s", leader.engine, median(leader));
    for other in &order[1..] {
        text.push_str(&format!(", {} {} ({:.1} tok/s)", lead(median(leader), median(other)), other.engine, median(other)));
    }
    let runner_up = order[1];
    if !has_band(leader.decode.as_ref().expect("ranked")) || !has_band(runner_up.decode.as_ref().expect("ranked")) {
        text.push_str("; too few runs for a band, so not a proven lead");
    } else if bands_overlap(leader, runner_up) {
        text.push_str(&format!("; within noise of {} (the bands overlap)", runner_up.engine));
    }
    text.push_str(" — ");
    text.push_str(attribution(members));
    Headline { family: family_label(leader, levels), text }
}

/// The lead of `a` over `b` as a reader says it: `3.2×` from twice on, `12 % ahead of` below.
fn lead(a: f64, b: f64) -> String {
    let ratio = a / b;
    if ratio >= 1.995 {
        format!("{ratio:.1}×")
    } else if ratio > 1.0005 {
        format!("{:.0} % ahead of", (ratio - 1.0) * 100.0)
    } else {
        "level with".to_owned()
    }
}

fn bands_overlap(a: &CellStep, b: &CellStep) -> bool {
    let (a, b) = (&a.decode.as_ref().expect("ranked").band, &b.decode.as_ref().expect("ranked").band);
    a.low <= b.high && b.low <= a.high
}

/// Engine alone or engine and build: `analysis::cells` puts `engine+build` on every step of a
/// row whose weights differ or were not hashed for every engine.
fn attribution(members: &[&CellStep]) -> &'static str {
    let reason = members.iter().flat_map(|s| &s.reasons).find(|r| r.code == ReasonCode::EngineBuild);
    match reason {
        Some(r) if r.detail.contains("not hashed") => "weights not hashed for every engine: engine and build cannot be told apart",
        Some(_) => "engine and weights differ",
        None => "the same weights: the engine alone",
    }
}

#[cfg(test)]
mod tests {
    use super::lead;

    #[test]
    fn leads_read_as_a_ratio_from_twice_on_and_as_a_share_below() {
        assert_eq!(lead(154.4, 48.3), "3.2×");
        assert_eq!(lead(100.0, 50.0), "2.0×");
        assert_eq!(lead(112.0, 100.0), "12 % ahead of");
        assert_eq!(lead(100.0, 100.0), "level with");
    }
}
