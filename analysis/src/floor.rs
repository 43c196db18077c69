//! The measurer's floor: what benchpass spent measuring a pass, and how far its own clock was
//! from the reference engine's on that machine (docs/metrics.md, "What measuring costs"). A
//! difference smaller than the floor says nothing about the engines: a diff calls no change
//! within it.

use benchpass_format::format::{PassInfo, SelfCheck};

use crate::cells::{CellStep, MetricKind};

/// A pass's measurer figures, derived from what its `pass.json` recorded; `run --json` writes
/// them as they are (`measurer`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Floor {
    /// CPU time benchpass used (user + system) over the session, where the OS told it.
    pub cpu_seconds: Option<f64>,
    pub wall_seconds: f64,
    pub streamed_tokens: u64,
    pub stream_events: u64,
    /// CPU µs per streamed token and per stream event: start-up, probing, hashing and prompt
    /// cutting included, since the CPU time covers them (so an upper bound on the per-event path).
    pub us_per_token: Option<f64>,
    pub us_per_event: Option<f64>,
    /// CPU seconds ÷ wall seconds: the share of one core benchpass kept busy.
    pub core_share: Option<f64>,
    pub clock_tick_ns: u64,
    /// benchpass's peak resident memory up to the session's last run, in bytes.
    pub peak_rss_bytes: Option<u64>,
    pub self_check: Option<SelfCheck>,
}

/// The floor of a pass that recorded one (passes from before it, and imported ones, did not).
pub fn floor(info: &PassInfo) -> Option<Floor> {
    let m = info.measurer.as_ref()?;
    let cpu = info.harness_cpu_seconds.filter(|c| c.is_finite() && *c >= 0.0);
    let per = |n: u64| cpu.filter(|_| n > 0).map(|c| c * 1e6 / n as f64);
    Some(Floor {
        cpu_seconds: cpu,
        wall_seconds: m.wall_seconds,
        streamed_tokens: m.streamed_tokens,
        stream_events: m.stream_events,
        us_per_token: per(m.streamed_tokens),
        us_per_event: per(m.stream_events),
        core_share: cpu.filter(|_| m.wall_seconds > 0.0).map(|c| c / m.wall_seconds),
        clock_tick_ns: m.clock_tick_ns,
        peak_rss_bytes: m.peak_rss_bytes,
        self_check: m.self_check.clone(),
    })
}

/// The relative change a diff row of `metric` must exceed to be more than the client's own
/// error: the larger of the two passes' self-check errors (a side without a check adds
/// nothing; neither side with one: `None`). Counts, ratios and energy have no floor here.
pub fn relative_floor(metric: MetricKind, a_check: Option<&SelfCheck>, b_check: Option<&SelfCheck>, a: &CellStep, b: &CellStep) -> Option<f64> {
    let worst = |f: fn(&SelfCheck) -> f64| [a_check, b_check].into_iter().flatten().map(f).reduce(f64::max);
    let basis = ttft_basis(metric);
    let medians = basis.map(|m| (a.median(m), b.median(m)));
    relative(metric, worst(|c| c.ttft_error_max_ms), worst(|c| c.decode_error_max), medians)
}

/// The TTFT figure a metric's timing error is relative to: a TTFT's own median, and for a
/// prefill rate (prompt tokens over TTFT) the step's TTFT median.
fn ttft_basis(metric: MetricKind) -> Option<MetricKind> {
    match metric {
        MetricKind::TtftMs | MetricKind::TtftColdMs | MetricKind::TtftCachedMs => Some(metric),
        MetricKind::PrefillTps => Some(MetricKind::TtftMs),
        _ => None,
    }
}

/// A TTFT error in ms is taken relative to the smaller of the two TTFT medians (the larger
/// share); a decode rate's error is relative already.
fn relative(metric: MetricKind, ttft_error_ms: Option<f64>, decode_error: Option<f64>, ttft_medians: Option<(Option<f64>, Option<f64>)>) -> Option<f64> {
    if metric == MetricKind::DecodeTps {
        return decode_error;
    }
    let (a, b) = ttft_medians?;
    let smaller = a?.min(b?);
    (smaller > 0.0).then_some(ttft_error_ms? / smaller)
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchpass_format::format::Measurer;

    #[test]
    fn cost_per_token_per_event_and_share_of_a_core() {
        let mut info = PassInfo::synthetic("p", "m", Vec::new());
        info.harness_cpu_seconds = Some(1.5);
        info.measurer =
            Some(Measurer { wall_seconds: 60.0, streamed_tokens: 100_000, stream_events: 50_000, clock_tick_ns: 25, peak_rss_bytes: Some(18_000_000), self_check: None });
        let f = floor(&info).unwrap();
        // 1.5 s over 100,000 tokens is 15 µs a token; over 50,000 events, 30 µs an event;
        // 1.5 s of CPU in 60 s is 2.5 % of one core.
        assert_eq!(f.us_per_token, Some(15.0));
        assert_eq!(f.us_per_event, Some(30.0));
        assert_eq!(f.core_share, Some(0.025));
        assert_eq!(f.clock_tick_ns, 25);
    }

    #[test]
    fn no_tokens_or_no_cpu_time_give_no_rate() {
        let mut info = PassInfo::synthetic("p", "m", Vec::new());
        info.measurer = Some(Measurer { wall_seconds: 1.0, streamed_tokens: 0, stream_events: 0, clock_tick_ns: 1, peak_rss_bytes: None, self_check: None });
        assert_eq!(floor(&info).unwrap().us_per_token, None);
        info.harness_cpu_seconds = Some(1.0);
        assert_eq!(floor(&info).unwrap().us_per_token, None);
        assert_eq!(floor(&PassInfo::synthetic("p", "m", Vec::new())), None);
    }

    #[test]
    fn a_ttft_error_is_relative_to_the_smaller_median() {
        // 2 ms of a 40 ms median is 5 %; for a prefill rate, of the step's TTFT.
        let f = relative(MetricKind::TtftMs, Some(2.0), Some(0.03), Some((Some(40.0), Some(50.0)))).unwrap();
        assert!((f - 0.05).abs() < 1e-12, "{f}");
        assert_eq!(relative(MetricKind::PrefillTps, Some(2.0), None, Some((Some(80.0), Some(40.0)))), Some(0.05));
        // The decode error is relative already.
        assert_eq!(relative(MetricKind::DecodeTps, Some(2.0), Some(0.03), None), Some(0.03));
        // A side without a median, or without a check, gives no floor; nor do counts.
        assert_eq!(relative(MetricKind::TtftMs, Some(2.0), None, Some((None, Some(40.0)))), None);
        assert_eq!(relative(MetricKind::TtftMs, None, Some(0.03), Some((Some(40.0), Some(40.0)))), None);
        assert_eq!(relative(MetricKind::PromptTokens, Some(2.0), Some(0.03), ttft_basis(MetricKind::PromptTokens).map(|_| (None, None))), None);
    }
}
