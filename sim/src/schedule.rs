//! The reference engine's token schedule: when each stream event is due and what it carries.
//!
//! This is the ground truth that measurement tests compare against, so it is plain arithmetic
//! over the profile, with no clocks in it:
//!
//! - time to first token = `base_latency_ms` + uncached prompt tokens / prefill rate, where
//!   uncached = prompt tokens − those served from the prefix cache (all of them uncached
//!   without `--prefix-cache`);
//! - token `i` (0-based) is produced at TTFT + i / decode rate, so the last of `n` tokens lands
//!   (n − 1) / decode rate after the first, and benchpass's decode tok/s, (n − 1) / decode
//!   seconds, gives back the decode rate exactly;
//! - the first token travels alone (it comes out of prefill); later tokens travel in events of
//!   `tokens_per_event` (speculative-decoding bursts when above 1), each sent when its last
//!   token is produced.

use serde::{Deserialize, Serialize};

/// What a request to the reference engine will get: rates after jitter, and the token plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    pub prompt_tokens: u64,
    /// Of the prompt tokens, how many the prefix cache served (no prefill charged for them).
    pub cached_prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of the completion tokens, how many come first as reasoning text.
    pub reasoning_tokens: u64,
    pub ttft_ns: u64,
    pub prefill_tps: f64,
    pub decode_tps: f64,
    /// `stop` when the engine reached EOS before the cap, `length` when it hit the cap.
    pub finish_reason: &'static str,
    pub events: Vec<ScheduledEvent>,
}

/// One content-carrying stream event: tokens `[first_token, first_token + n_tokens)` sent at `at_ns`
/// after the request arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledEvent {
    pub at_ns: u64,
    pub first_token: u64,
    pub n_tokens: u64,
}

/// The rates and shape that a schedule is built from (the profile after jitter).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScheduleInput {
    pub prompt_tokens: u64,
    /// At most `prompt_tokens`.
    pub cached_prompt_tokens: u64,
    pub max_tokens: u64,
    pub eos_after: Option<u64>,
    pub reasoning_tokens: u64,
    pub base_latency_ms: f64,
    pub prefill_tps: f64,
    pub decode_tps: f64,
    pub tokens_per_event: u64,
}

impl Schedule {
    pub fn plan(input: ScheduleInput) -> Schedule {
        let (completion_tokens, finish_reason) = match input.eos_after {
            Some(eos) if eos < input.max_tokens => (eos, "stop"),
            _ => (input.max_tokens, "length"),
        };
        let cached_prompt_tokens = input.cached_prompt_tokens.min(input.prompt_tokens);
        let uncached = input.prompt_tokens - cached_prompt_tokens;
        let ttft_s = input.base_latency_ms / 1e3 + uncached as f64 / input.prefill_tps;
        let ttft_ns = seconds_to_ns(ttft_s);
        let token_at = |i: u64| ttft_ns + seconds_to_ns(i as f64 / input.decode_tps);

        let mut events = Vec::new();
        if completion_tokens > 0 {
            events.push(ScheduledEvent { at_ns: ttft_ns, first_token: 0, n_tokens: 1 });
        }
        let burst = input.tokens_per_event.max(1);
        let mut next = 1;
        while next < completion_tokens {
            let n_tokens = burst.min(completion_tokens - next);
            let last = next + n_tokens - 1;
            events.push(ScheduledEvent { at_ns: token_at(last), first_token: next, n_tokens });
            next += n_tokens;
        }
        Schedule {
            prompt_tokens: input.prompt_tokens,
            cached_prompt_tokens,
            completion_tokens,
            reasoning_tokens: input.reasoning_tokens.min(completion_tokens),
            ttft_ns,
            prefill_tps: input.prefill_tps,
            decode_tps: input.decode_tps,
            finish_reason,
            events,
        }
    }

    /// Last token event − first token event, the span benchpass calls decode time.
    pub fn decode_ns(&self) -> u64 {
        match (self.events.first(), self.events.last()) {
            (Some(first), Some(last)) => last.at_ns - first.at_ns,
            _ => 0,
        }
    }
}

fn seconds_to_ns(seconds: f64) -> u64 {
    (seconds * 1e9).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> ScheduleInput {
        ScheduleInput {
            prompt_tokens: 100,
            cached_prompt_tokens: 0,
            max_tokens: 8,
            eos_after: None,
            reasoning_tokens: 0,
            base_latency_ms: 10.0,
            prefill_tps: 1000.0,
            decode_tps: 50.0,
            tokens_per_event: 1,
        }
    }

    #[test]
    fn ttft_is_base_latency_plus_prefill() {
        // 10 ms + 100 tokens / 1000 tok/s = 110 ms.
        assert_eq!(Schedule::plan(input()).ttft_ns, 110_000_000);
    }

    #[test]
    fn cached_prompt_tokens_are_not_prefilled() {
        // 10 ms + (100 − 60) tokens / 1000 tok/s = 50 ms.
        let s = Schedule::plan(ScheduleInput { cached_prompt_tokens: 60, ..input() });
        assert_eq!((s.ttft_ns, s.cached_prompt_tokens), (50_000_000, 60));
        let s = Schedule::plan(ScheduleInput { cached_prompt_tokens: 500, ..input() });
        assert_eq!((s.ttft_ns, s.cached_prompt_tokens), (10_000_000, 100), "never more than the prompt");
    }

    #[test]
    fn plain_decoding_sends_one_token_per_event_at_the_decode_rate() {
        let s = Schedule::plan(input());
        assert_eq!(s.events.len(), 8);
        // 8 tokens at 50 tok/s: the last lands 7 × 20 ms after the first.
        assert_eq!(s.decode_ns(), 140_000_000);
        assert_eq!(s.events[3], ScheduledEvent { at_ns: 170_000_000, first_token: 3, n_tokens: 1 });
        assert_eq!(s.finish_reason, "length");
    }

    #[test]
    fn bursts_carry_k_tokens_after_a_lone_first_token() {
        let s = Schedule::plan(ScheduleInput { tokens_per_event: 3, ..input() });
        // tokens 0 | 1 2 3 | 4 5 6 | 7
        let shape: Vec<_> = s.events.iter().map(|e| (e.first_token, e.n_tokens)).collect();
        assert_eq!(shape, vec![(0, 1), (1, 3), (4, 3), (7, 1)]);
        // Each burst is sent when its last token is produced: token 3 at 110 + 3 × 20 ms.
        assert_eq!(s.events[1].at_ns, 170_000_000);
        assert_eq!(s.decode_ns(), 140_000_000, "bursts do not change the decode span");
    }

    #[test]
    fn early_eos_stops_short_with_finish_reason_stop() {
        let s = Schedule::plan(ScheduleInput { eos_after: Some(5), ..input() });
        assert_eq!((s.completion_tokens, s.finish_reason), (5, "stop"));
        let s = Schedule::plan(ScheduleInput { eos_after: Some(8), ..input() });
        assert_eq!((s.completion_tokens, s.finish_reason), (8, "length"));
    }
}
