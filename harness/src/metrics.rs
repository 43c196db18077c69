//! The definitions every figure in benchpass is computed by (docs/metrics.md says the same in
//! words). Pure functions over recorded events, so analysis and the harness cannot disagree.
//!
//! - first token: the first event with non-empty content or reasoning text (a role-only event
//!   is not a token);
//! - `ttft_ms` = first token − request start;
//! - `decode_ms` = last token event − first token event;
//! - decode tok/s = (completion_tokens − 1) / decode seconds: the first token belongs to
//!   prefill, so n tokens span n − 1 decode intervals;
//! - prefill tok/s = prompt_tokens / TTFT seconds.

use crate::pass::EventRecord;

/// Time to first token and decode span of a run's events, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EventTimes {
    pub ttft_ms: Option<f64>,
    pub decode_ms: Option<f64>,
}

pub fn event_times(events: &[EventRecord]) -> EventTimes {
    let mut tokens = events.iter().filter(|e| e.carries_tokens());
    let Some(first) = tokens.next() else {
        return EventTimes { ttft_ms: None, decode_ms: None };
    };
    let last = tokens.next_back().unwrap_or(first);
    EventTimes { ttft_ms: Some(ns_to_ms(first.t_ns)), decode_ms: Some(ns_to_ms(last.t_ns - first.t_ns)) }
}

fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Decode rate; `None` when it is undefined (fewer than two tokens, or all in one event).
pub fn decode_tps(completion_tokens: Option<u64>, decode_ms: Option<f64>) -> Option<f64> {
    let (n, ms) = (completion_tokens?, decode_ms?);
    (n >= 2 && ms > 0.0).then(|| (n - 1) as f64 / (ms / 1e3))
}

/// Prefill rate; `None` without a prompt count or a first token.
pub fn prefill_tps(prompt_tokens: Option<u64>, ttft_ms: Option<f64>) -> Option<f64> {
    let (n, ms) = (prompt_tokens?, ttft_ms?);
    (ms > 0.0).then(|| n as f64 / (ms / 1e3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(t_ms: u64, text: &str) -> EventRecord {
        EventRecord { t_ns: t_ms * 1_000_000, bytes: 0, text: text.to_owned(), reasoning: String::new() }
    }

    #[test]
    fn role_only_and_finish_events_are_not_tokens() {
        let events = [event(1, ""), event(100, " Alice"), event(120, " was"), event(140, " tired"), event(141, "")];
        let times = event_times(&events);
        assert_eq!(times, EventTimes { ttft_ms: Some(100.0), decode_ms: Some(40.0) });
        // 3 tokens, 2 intervals over 40 ms: 50 tok/s.
        assert_eq!(decode_tps(Some(3), times.decode_ms), Some(50.0));
    }

    #[test]
    fn reasoning_text_counts_as_a_first_token() {
        let thinking = EventRecord { reasoning: "Hmm".to_owned(), ..event(80, "") };
        assert_eq!(event_times(&[event(1, ""), thinking, event(90, "x")]).ttft_ms, Some(80.0));
    }

    #[test]
    fn rates_are_undefined_rather_than_infinite() {
        assert_eq!(decode_tps(Some(1), Some(0.0)), None);
        assert_eq!(decode_tps(Some(5), Some(0.0)), None, "five tokens in one event have no decode span");
        assert_eq!(prefill_tps(Some(512), Some(256.0)), Some(2000.0));
        assert_eq!(event_times(&[event(1, "")]), EventTimes { ttft_ms: None, decode_ms: None });
    }
}
