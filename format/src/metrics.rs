//! The definitions every figure in benchpass is computed by (docs/metrics.md says the same in
//! words). Pure functions over recorded events, so analysis and the harness cannot disagree.
//!
//! - first token: the first event with non-empty content, reasoning text or tool-call
//!   arguments (a role-only or name-only event is not a token);
//! - `ttft_ms` = first token − request start;
//! - `decode_ms` = last token event − first token event;
//! - decode tok/s = (completion_tokens − 1) / decode seconds: the first token belongs to
//!   prefill, so n tokens span n − 1 decode intervals;
//! - prefill tok/s = prompt_tokens / TTFT seconds.

use crate::format::EventRecord;

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
    times_between(first.t_ns, last.t_ns)
}

/// TTFT and decode span from the first and last token events' arrivals.
fn times_between(first_ns: u64, last_ns: u64) -> EventTimes {
    EventTimes { ttft_ms: Some(ns_to_ms(first_ns)), decode_ms: Some(ns_to_ms(last_ns - first_ns)) }
}

/// What the serving figures read of a run's events (ITL, tokens per event, TTFT, decode span,
/// end-to-end latency), in 8 bytes a token event: what a reader keeps of a run whose events it
/// drops (`store::Keep::Times`), where the events themselves take some 150 bytes each.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TokenTimes {
    /// Each token event's `t_ns`, in order.
    pub arrivals_ns: Box<[u64]>,
    /// Each token event's count of logprobs, where every token event has some; else `None`.
    pub logprob_counts: Option<Box<[u32]>>,
    /// The last event's `t_ns`, of any kind (the finish and usage events included).
    pub last_event_ns: Option<u64>,
}

impl TokenTimes {
    pub fn of(events: &[EventRecord]) -> TokenTimes {
        let tokens = || events.iter().filter(|e| e.carries_tokens());
        let all_logprobs = tokens().next().is_some() && tokens().all(|e| !e.logprobs.is_empty());
        TokenTimes {
            arrivals_ns: tokens().map(|e| e.t_ns).collect(),
            logprob_counts: all_logprobs.then(|| tokens().map(|e| e.logprobs.len().try_into().unwrap_or(u32::MAX)).collect()),
            last_event_ns: events.last().map(|e| e.t_ns),
        }
    }

    /// [`event_times`] of the events these were kept from.
    pub fn event_times(&self) -> EventTimes {
        match (self.arrivals_ns.first(), self.arrivals_ns.last()) {
            (Some(&first), Some(&last)) => times_between(first, last),
            _ => EventTimes { ttft_ms: None, decode_ms: None },
        }
    }
}

fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The longest time a run's `ttft_ms` or `decode_ms` may hold: 30 days, in milliseconds. No
/// benchpass run lasts that long (the first-token and idle timeouts are at most a day each, and
/// a run is cut past 4 × `max_tokens` + 64 token events); a larger value is not a measurement.
pub const MAX_MS: f64 = 30.0 * 24.0 * 3600.0 * 1e3;

/// The shortest non-zero decode span: 1 µs, in milliseconds. A span exists only between two
/// token events that arrived in different network reads, and no server sends, and no client
/// reads, two chunks less than a microsecond apart (benchpass writes milliseconds with three
/// decimals in a runs CSV, so a span it measured is either 0 or at least this).
pub const MIN_DECODE_MS: f64 = 1e-3;

/// The largest token count benchpass trusts: 2^32 tokens. No context window or token cap comes
/// near it (a plan's `max_tokens` is at most 2^20); a count above it is not a count.
pub const MAX_COUNT: u64 = 1 << 32;

/// The most tokens one stream event is taken to carry. Speculative decoding accepts a draft
/// in one step (llama.cpp's `--draft-max` defaults to 16, vLLM and MLX speculate fewer), and
/// servers that batch tokens by time send a few per event; 64 is four times the largest draft
/// any preset uses, so a count beyond 64 per event (+ 64 for tokens that stream no text, such
/// as an end-of-sequence token) is not what the stream carried.
pub const MAX_TOKENS_PER_EVENT: u64 = 64;

/// The fastest rate benchpass reports: 10^9 tokens a second. A stream decodes thousands at
/// most and a prompt fully served from cache is read at millions; a larger result comes from a
/// span or a count that is not a measurement, and is reported as absent.
pub const MAX_TPS: f64 = 1e9;

/// Whether a server's usage count contradicts the stream it came with: more token events than
/// completion tokens (every token event carries at least one token), or more tokens than the
/// events could carry ([`MAX_TOKENS_PER_EVENT`] each, + 64).
pub fn usage_contradicts_events(usage_completion_tokens: u64, token_events: u64) -> bool {
    token_events > usage_completion_tokens
        || usage_completion_tokens > token_events.saturating_mul(MAX_TOKENS_PER_EVENT).saturating_add(64)
}

/// A rate, or `None` when it is not finite or beyond [`MAX_TPS`].
fn plausible(rate: f64) -> Option<f64> {
    (rate.is_finite() && (0.0..=MAX_TPS).contains(&rate)).then_some(rate)
}

/// Decode rate; `None` when it is undefined (fewer than two tokens, or all in one event), or
/// when the result is not finite or beyond [`MAX_TPS`] (a span of 1e-320 ms, a count of 10^18).
pub fn decode_tps(completion_tokens: Option<u64>, decode_ms: Option<f64>) -> Option<f64> {
    let (n, ms) = (completion_tokens?, decode_ms?);
    // NaN is refused too: it is neither above nor below zero.
    if n < 2 || ms.is_nan() || ms <= 0.0 {
        return None;
    }
    plausible((n - 1) as f64 / (ms / 1e3))
}

/// Prefill rate; `None` without a prompt count or a first token, or when the result is not
/// finite or beyond [`MAX_TPS`].
pub fn prefill_tps(prompt_tokens: Option<u64>, ttft_ms: Option<f64>) -> Option<f64> {
    let (n, ms) = (prompt_tokens?, ttft_ms?);
    if ms.is_nan() || ms <= 0.0 {
        return None;
    }
    plausible(n as f64 / (ms / 1e3))
}

/// Prompt tokens the engine served from its prefix cache, as it says: usage
/// `prompt_tokens_details.cached_tokens` (OpenAI, vLLM, SGLang), else llama.cpp's
/// `timings.cache_n`. `None` when it says neither (never guessed), or a count past
/// [`MAX_COUNT`].
pub fn cached_prompt_tokens(usage: Option<&serde_json::Value>, timings: Option<&serde_json::Value>) -> Option<u64> {
    let from_usage = usage.and_then(|u| u.pointer("/prompt_tokens_details/cached_tokens")).and_then(serde_json::Value::as_u64);
    let from_timings = || timings.and_then(|t| t.get("cache_n")).and_then(serde_json::Value::as_u64);
    from_usage.or_else(from_timings).filter(|&n| n <= MAX_COUNT)
}

/// Joules per output token over the decode span: the decode span's joules ÷ (completion
/// tokens − 1), the intervals the decode rate counts; `None` where that rate is undefined.
pub fn joules_per_output_token(energy: Option<&crate::format::RunEnergy>, completion_tokens: Option<u64>) -> Option<f64> {
    let (joules, n) = (energy?.decode_joules?, completion_tokens?);
    (n >= 2 && joules.is_finite() && joules >= 0.0).then(|| joules / (n - 1) as f64)
}

/// Joules per prompt token over prefill: the joules from the request's start to the first
/// token ÷ prompt tokens (the interval and count of the prefill rate).
pub fn joules_per_prompt_token(energy: Option<&crate::format::RunEnergy>, prompt_tokens: Option<u64>) -> Option<f64> {
    let (joules, n) = (energy?.prefill_joules?, prompt_tokens?);
    (n >= 1 && joules.is_finite() && joules >= 0.0).then(|| joules / n as f64)
}

/// Mean power over the run: its joules ÷ its seconds.
pub fn mean_watts(energy: Option<&crate::format::RunEnergy>) -> Option<f64> {
    let e = energy?;
    let w = e.joules / e.seconds;
    (e.seconds > 0.0 && w.is_finite() && w >= 0.0).then_some(w)
}

/// The run's joules above the cell's idle baseline: joules − idle watts × seconds.
pub fn joules_above_idle(energy: Option<&crate::format::RunEnergy>, idle_watts: Option<f64>) -> Option<f64> {
    let (e, idle) = (energy?, idle_watts?);
    let above = e.joules - idle * e.seconds;
    above.is_finite().then_some(above)
}

/// How far a run's TTFT and decode rate are from what the reference engine (`benchpass sim
/// --timings`) says it did: `sim_sent_first_token_ms` and `sim_sent_last_token_ms` in its
/// `timings`, on its clock from when it read the request. The TTFT error is |TTFT − first sent|
/// in ms (the time the client took to see a sent token, the request's way there included); the
/// decode error is |decode rate ÷ the engine's send rate − 1| (the same tokens over both
/// spans, so the ratio of the spans). `None` where the run or its timings lack a figure.
pub fn reference_errors(ttft_ms: Option<f64>, decode_ms: Option<f64>, timings: Option<&serde_json::Value>) -> Option<(f64, f64)> {
    let timings = timings?;
    let first = timings.get("sim_sent_first_token_ms")?.as_f64()?;
    let last = timings.get("sim_sent_last_token_ms")?.as_f64()?;
    let (ttft, decode) = (ttft_ms?, decode_ms?);
    let sent_span = last - first;
    if !(sent_span > 0.0 && decode > 0.0) {
        return None;
    }
    Some(((ttft - first).abs(), (sent_span / decode - 1.0).abs()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn energy_figures_by_hand() {
        use crate::format::RunEnergy;
        // 30 J over 2 s: 1.5 J of prefill for 300 prompt tokens, 27 J of decode for 10 tokens.
        let e = RunEnergy { joules: 30.0, seconds: 2.0, prefill_joules: Some(1.5), decode_joules: Some(27.0) };
        assert_eq!(super::joules_per_output_token(Some(&e), Some(10)), Some(3.0), "27 J over 9 intervals");
        assert_eq!(super::joules_per_output_token(Some(&e), Some(1)), None);
        assert_eq!(super::joules_per_prompt_token(Some(&e), Some(300)), Some(0.005));
        assert_eq!(super::mean_watts(Some(&e)), Some(15.0));
        assert_eq!(super::joules_above_idle(Some(&e), Some(4.0)), Some(22.0), "30 − 4 W × 2 s");
        assert_eq!(super::mean_watts(Some(&RunEnergy { seconds: 0.0, ..e })), None);
    }

    use super::*;

    #[test]
    fn cached_tokens_come_from_usage_then_timings_and_are_never_guessed() {
        let usage = serde_json::json!({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 64}});
        let timings = serde_json::json!({"cache_n": 32});
        assert_eq!(cached_prompt_tokens(Some(&usage), Some(&timings)), Some(64));
        assert_eq!(cached_prompt_tokens(Some(&serde_json::json!({"prompt_tokens": 100})), Some(&timings)), Some(32));
        assert_eq!(cached_prompt_tokens(Some(&serde_json::json!({"prompt_tokens": 100})), None), None);
    }

    fn event(t_ms: u64, text: &str) -> EventRecord {
        EventRecord { t_ns: t_ms * 1_000_000, text: text.to_owned(), ..EventRecord::default() }
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
    fn token_times_keep_what_the_figures_read_of_the_events() {
        use crate::format::TokenLogprob;
        let lp = |token: &str| TokenLogprob { token: token.to_owned(), bytes: None, logprob: -0.5, top: vec![] };
        let events = [event(1, ""), event(100, " Alice"), event(120, " was"), event(140, " tired"), event(141, "")];
        let times = TokenTimes::of(&events);
        // Three token events (the role-only and finish events are not), the finish event last.
        assert_eq!(&*times.arrivals_ns, [100_000_000, 120_000_000, 140_000_000]);
        assert_eq!((times.logprob_counts.as_deref(), times.last_event_ns), (None, Some(141_000_000)));
        assert_eq!(times.event_times(), event_times(&events));
        assert_eq!(times.event_times(), EventTimes { ttft_ms: Some(100.0), decode_ms: Some(40.0) });

        // Logprobs counted only where every token event has some: 2 and 1 here; one token
        // event without any, none at all.
        let with = |t_ms, text: &str, n| EventRecord { logprobs: (0..n).map(|_| lp("x")).collect(), ..event(t_ms, text) };
        let all = [event(1, ""), with(10, "ab", 2), with(20, "c", 1), event(21, "")];
        assert_eq!(TokenTimes::of(&all).logprob_counts.as_deref(), Some(&[2, 1][..]));
        let some = [with(10, "ab", 2), event(20, "c")];
        assert_eq!(TokenTimes::of(&some).logprob_counts, None);

        // No token event: no times, and the last event still kept.
        let none = TokenTimes::of(&[event(5, "")]);
        assert_eq!((none.arrivals_ns.len(), none.last_event_ns), (0, Some(5_000_000)));
        assert_eq!(none.event_times(), EventTimes { ttft_ms: None, decode_ms: None });
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

    #[test]
    fn absurd_rates_are_absent_not_infinite() {
        // A subnormal span: (2 − 1) / 1e-323 s is infinite.
        assert_eq!(decode_tps(Some(2), Some(1e-320)), None);
        // A server that says 10^18 tokens over a 0.5 s span.
        assert_eq!(decode_tps(Some(1_000_000_000_000_000_000), Some(500.0)), None);
        assert_eq!(decode_tps(Some(3), Some(f64::NAN)), None);
        assert_eq!(decode_tps(Some(3), Some(-5.0)), None);
        assert_eq!(prefill_tps(Some(128), Some(1e-320)), None);
        assert!(decode_tps(Some(2), Some(MIN_DECODE_MS)).is_some(), "1 µs for 2 tokens is 10^6 tok/s, kept");
    }

    #[test]
    fn usage_that_the_stream_cannot_carry_contradicts_it() {
        assert!(usage_contradicts_events(2, 100), "100 token events carry at least 100 tokens");
        assert!(usage_contradicts_events(1_000_000_000_000_000_000, 100));
        assert!(!usage_contradicts_events(100, 100));
        assert!(!usage_contradicts_events(64 * 100 + 64, 100), "64 a draft plus 64 unstreamed is the edge");
        assert!(usage_contradicts_events(64 * 100 + 65, 100));
        assert!(!usage_contradicts_events(64, 0));
        assert!(!usage_contradicts_events(u64::MAX, u64::MAX));
    }
}
