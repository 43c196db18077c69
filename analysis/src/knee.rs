//! The knee of a sweep (docs/metrics.md, "The knee"): the level past which more streams stop
//! buying throughput and only buy latency, and the largest level that met the objectives.
//!
//! A sweep here is the steps of one cell, workload and prompt target measured at several
//! levels of load — numbers of streams (`--concurrency 1,2,4,8`) or arrival rates — with
//! serving figures; they are ordered by their level and read pairwise, level after level.

use benchpass_format::Workload;

use crate::band::FLOOR;
use crate::cells::CellStep;

/// Share of a level's runs that must meet every objective for the level to have met them:
/// MLPerf's server scenario holds its latency limits at the 99th percentile.
pub const SLO_SHARE: f64 = 0.99;

/// One level of a sweep as the knee reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub concurrency: u32,
    pub request_rate: Option<f64>,
    pub output_tps: f64,
    pub ttft_p50_ms: f64,
    /// From this level to the next: output tok/s's relative gain and the noise it had to
    /// exceed, and median TTFT's relative rise and its noise (`None` at the last level).
    pub to_next: Option<Step>,
    /// Whether at least [`SLO_SHARE`] of its runs met every objective; `None` without `--slo`.
    pub met_slo: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    pub tps_gain: f64,
    pub tps_noise: f64,
    pub ttft_rise: f64,
    pub ttft_noise: f64,
}

impl Step {
    /// Past the knee: throughput rose by no more than its noise while median TTFT rose by more
    /// than its own.
    pub fn saturated(&self) -> bool {
        self.tps_gain <= self.tps_noise && self.ttft_rise > self.ttft_noise
    }
}

/// A sweep's levels and what they say.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    pub cell: String,
    pub engine: String,
    pub workload: Workload,
    pub target_prompt_tokens: u64,
    /// Ordered by level (streams, then rate).
    pub levels: Vec<Level>,
    /// Index into `levels` of the knee: the first level whose step to the next is
    /// [`Step::saturated`]; `None` where throughput rose all the way (or TTFT did not rise).
    pub knee: Option<usize>,
    /// Index of the largest level that met the objectives; `None` without `--slo` or where none
    /// met them.
    pub largest_meeting_slo: Option<usize>,
}

impl Sweep {
    /// Whether the last two levels measured were both past the knee: the steps into each of
    /// them were [`Step::saturated`] (`--stop-at-saturation` stops a sweep there).
    pub fn saturated_twice(&self) -> bool {
        let n = self.levels.len();
        n >= 3 && self.levels[n - 3..n - 1].iter().all(|l| l.to_next.is_some_and(|s| s.saturated()))
    }

    /// A level as a reader names it: `4 streams`, or `2 req/s` in a rate sweep.
    pub fn level_name(&self, i: usize) -> String {
        let level = &self.levels[i];
        match level.request_rate {
            Some(rate) if self.levels.iter().any(|l| l.request_rate != self.levels[0].request_rate) => format!("{rate} req/s"),
            _ => format!("{} stream{}", level.concurrency, if level.concurrency == 1 { "" } else { "s" }),
        }
    }
}

/// The sweeps among `steps`: groups of two or more levels of one cell, workload and target
/// with serving figures (output tok/s and median TTFT).
pub fn sweeps(steps: &[CellStep]) -> Vec<Sweep> {
    let mut groups: Vec<(&CellStep, Vec<&CellStep>)> = Vec::new();
    for step in steps.iter().filter(|s| s.serving.as_ref().is_some_and(|v| v.output_tps.is_some() && v.ttft_ms.is_some())) {
        let same = |first: &&CellStep| first.cell == step.cell && first.workload == step.workload && first.target_prompt_tokens == step.target_prompt_tokens;
        match groups.iter_mut().find(|(first, _)| same(first)) {
            Some((_, members)) => members.push(step),
            None => groups.push((step, vec![step])),
        }
    }
    groups
        .into_iter()
        .filter(|(_, members)| members.len() >= 2)
        .map(|(first, mut members)| {
            members.sort_by(|a, b| a.concurrency.cmp(&b.concurrency).then(a.request.request_rate.unwrap_or(0.0).total_cmp(&b.request.request_rate.unwrap_or(0.0))));
            sweep(first, &members)
        })
        .collect()
}

fn sweep(first: &CellStep, members: &[&CellStep]) -> Sweep {
    let mut levels: Vec<Level> = members
        .iter()
        .map(|s| {
            let serving = s.serving.as_ref().expect("sweeps() keeps steps with serving figures");
            Level {
                concurrency: s.concurrency,
                request_rate: s.request.request_rate,
                output_tps: serving.output_tps.unwrap_or(0.0),
                ttft_p50_ms: serving.ttft_ms.as_ref().map_or(0.0, |p| p.p50),
                to_next: None,
                met_slo: serving.goodput.as_ref().map(|g| g.n > 0 && g.attainment >= SLO_SHARE),
            }
        })
        .collect();
    for i in 0..levels.len().saturating_sub(1) {
        let (a, b) = (members[i], members[i + 1]);
        // Output tok/s is one figure a level, without a band of its own: its noise is taken
        // from the runs' decode rates at the two levels (the wider band), at least the band
        // floor. Median TTFT's rise is held to the band floor alone: a TTFT band is the spread
        // of its runs, and at a level past the knee that spread is the queue (runs that waited
        // a slot and runs that did not, 20 ms against 300), not noise, and would hide the very
        // rise that marks the level.
        let noise = |band: fn(&CellStep) -> Option<f64>| band(a).into_iter().chain(band(b)).fold(FLOOR, f64::max);
        let ttft_noise = FLOOR;
        let (x, y) = (&levels[i], &levels[i + 1]);
        let relative = |from: f64, to: f64| if from > 0.0 { to / from - 1.0 } else { f64::INFINITY };
        levels[i].to_next = Some(Step {
            tps_gain: relative(x.output_tps, y.output_tps),
            tps_noise: noise(|s| s.decode.as_ref().map(|m| m.band.half_width)),
            ttft_rise: relative(x.ttft_p50_ms, y.ttft_p50_ms),
            ttft_noise,
        });
    }
    let knee = levels.iter().position(|l| l.to_next.is_some_and(|s| s.saturated()));
    let largest_meeting_slo = levels.iter().rposition(|l| l.met_slo == Some(true));
    Sweep {
        cell: first.cell.clone(),
        engine: first.engine.clone(),
        workload: first.workload,
        target_prompt_tokens: first.target_prompt_tokens,
        levels,
        knee,
        largest_meeting_slo,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturated_is_flat_throughput_and_rising_latency() {
        let step = |tps_gain, ttft_rise| Step { tps_gain, tps_noise: 0.02, ttft_rise, ttft_noise: 0.02 };
        // 400 → 404 tok/s (+1 %) while TTFT doubles: past the knee.
        assert!(step(0.01, 1.0).saturated());
        // Throughput still rising by more than its noise: not yet.
        assert!(!step(0.5, 1.0).saturated());
        // Flat throughput with flat latency is a plateau of something else (a client-bound
        // sweep, say), not the knee.
        assert!(!step(0.01, 0.01).saturated());
    }
}
