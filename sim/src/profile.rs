//! What the reference engine does: its rates, event shape and quirks, from a named preset or a
//! JSON file, then adjusted by command-line flags.

use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimProfile {
    /// The model id served at `/v1/models` and echoed in responses.
    pub model: String,
    /// Fixed time before prefill starts (request parsing, scheduling), in milliseconds.
    pub base_latency_ms: f64,
    /// Prompt tokens processed per second.
    pub prefill_tps: f64,
    /// Completion tokens produced per second.
    pub decode_tps: f64,
    /// Tokens per stream event after the first: 1 for plain decoding, k for speculative bursts.
    pub tokens_per_event: u64,
    /// Send a role-only event (`delta: {role}`, no text) as soon as the request arrives.
    pub role_event: bool,
    /// Reach EOS after this many completion tokens, unless `ignore_eos` is asked for.
    pub eos_after: Option<u64>,
    /// The first completion tokens come as `reasoning_content` rather than `content`.
    pub reasoning_tokens: u64,
    /// Send `usage` when `stream_options.include_usage` asks for it.
    pub usage: bool,
    /// Attach a llama.cpp-style `timings` object to the last event, holding the schedule's truth
    /// and, streamed, when the first and last token events actually left.
    pub timings: bool,
    /// Serve llama.cpp's `POST /tokenize`.
    pub tokenize_endpoint: bool,
    /// Relative jitter on the prefill and decode rates, drawn per request, uniform in ±jitter.
    pub jitter: f64,
    /// Seed for the jitter: the same seed gives the same rates request after request.
    pub seed: u64,
    /// Fault: stop sending (but keep the connection open) after this many completion tokens.
    pub stall_after_tokens: Option<u64>,
    /// Fault: every Nth request answers with HTTP `fail_status`.
    pub fail_every: Option<u64>,
    /// The status of `fail_every` answers: 500, or 429 (sent with `Retry-After: 1`), or any.
    pub fail_status: u16,
    /// Fault injected into every streamed reply (docs/reliability.md lists them).
    pub fault: Option<Fault>,
    /// Completion tokens sent before a mid-stream fault strikes.
    pub fault_after_tokens: u64,
    /// Sleep on the kernel's high-resolution timer (a blocking-pool thread) so that events leave
    /// within a fraction of a millisecond of their due time; the timer wheel alone is late by up
    /// to a millisecond, but sends the events of many streams together, as a batching engine does.
    pub precise_timer: bool,
    /// Answer 503 (`Loading model`, as llama.cpp does) on every route for this long after
    /// starting, in seconds.
    pub loading_s: f64,
    /// Keep this many bytes per request for good: a server that leaks memory, for soak tests.
    pub leak_bytes_per_request: u64,
    /// Keep the prompts served and charge prefill only past the longest common prefix with
    /// any of them; report the cached tokens (usage `prompt_tokens_details.cached_tokens`, and
    /// `timings.cache_n` with `timings`).
    pub prefix_cache: bool,
    /// A request that asks for logprobs is answered by the seeded language model of
    /// `sim/src/logprobs.rs` (greedy, with the top-K of every token), its logits shifted by seeded
    /// noise of this scale: 0 is the reference model, above 0 a model whose true KL from it is
    /// known (docs/quality.md).
    pub perturb: f64,
    /// After each streamed reply's last token, write oMLX's DFlash summary line with this draft
    /// acceptance (0 to 1) to stderr, as oMLX logs it (omlx/engine/dflash.py#L1023-L1030): the
    /// ground truth for reading draft acceptance from an engine's log.
    pub log_draft_acceptance: Option<f64>,
    /// Serve at most this many requests at once, as a batching engine's batch width: the rest
    /// wait, in arrival order, for a slot before their schedule (prefill, then decode) starts.
    /// Output tok/s then stops rising at this many streams (`batch_width × decode_tps` at
    /// most) while TTFT grows with the queue: a server that saturates at a known level.
    pub batch_width: Option<u32>,
}

impl Default for SimProfile {
    fn default() -> Self {
        SimProfile {
            model: "sim-model".to_owned(),
            base_latency_ms: 20.0,
            prefill_tps: 2000.0,
            decode_tps: 60.0,
            tokens_per_event: 1,
            role_event: true,
            eos_after: None,
            reasoning_tokens: 0,
            usage: true,
            timings: false,
            tokenize_endpoint: true,
            jitter: 0.0,
            seed: 0,
            stall_after_tokens: None,
            fail_every: None,
            fail_status: 500,
            fault: None,
            fault_after_tokens: 5,
            precise_timer: true,
            loading_s: 0.0,
            leak_bytes_per_request: 0,
            prefix_cache: false,
            perturb: 0.0,
            log_draft_acceptance: None,
            batch_width: None,
        }
    }
}

/// Ways a streamed reply can go wrong, on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// The connection is cut after `fault_after_tokens` tokens, as when the server dies.
    CrashMidStream,
    /// Headers and the role event, then nothing: no first token ever comes.
    HangBeforeFirstToken,
    /// An event whose JSON is cut short, sent before every event from `fault_after_tokens` on.
    TruncatedJson,
    /// A line that is not SSE at all (`garbage without a field`), sent before every event from
    /// `fault_after_tokens` on.
    MalformedSseLine,
    /// The reply is labelled `text/plain`, not `text/event-stream`.
    WrongContentType,
    /// One event carries about a megabyte of text.
    HugeEvent,
    /// A role event, then `[DONE]`: no token at all.
    OnlyRole,
    /// `[DONE]` twice.
    DoubleDone,
    /// More token events after `[DONE]`.
    DataAfterDone,
    /// An `{"error": …}` event after `fault_after_tokens` tokens, then the stream ends (how
    /// vLLM and llama.cpp report a failure once streaming has begun).
    ErrorEvent,
    /// The stream ends cleanly after `fault_after_tokens` tokens: no finish reason, no `[DONE]`.
    EndsEarly,
}

impl Fault {
    pub const ALL: [Fault; 11] = [
        Fault::CrashMidStream,
        Fault::HangBeforeFirstToken,
        Fault::TruncatedJson,
        Fault::MalformedSseLine,
        Fault::WrongContentType,
        Fault::HugeEvent,
        Fault::OnlyRole,
        Fault::DoubleDone,
        Fault::DataAfterDone,
        Fault::ErrorEvent,
        Fault::EndsEarly,
    ];

    pub fn name(self) -> String {
        serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
    }

    pub fn parse(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// Names accepted by `--profile` besides a path to a JSON file.
pub const PRESETS: &[(&str, &str)] = &[
    ("default", "plain decoding at 60 tok/s, prefill 2000 tok/s, usage, role event"),
    ("llama-cpp", "as default, plus llama.cpp's `timings` object and /tokenize"),
    ("spec-decode", "speculative decoding: 3 tokens per event at 90 tok/s"),
    ("no-usage", "no usage in the stream and no /tokenize: counts must be estimated"),
    ("eos", "reaches EOS after 40 tokens (a short stop under a larger cap)"),
];

impl SimProfile {
    pub fn preset(name: &str) -> Option<SimProfile> {
        let base = SimProfile::default();
        Some(match name {
            "default" => base,
            "llama-cpp" => SimProfile { timings: true, ..base },
            "spec-decode" => SimProfile { tokens_per_event: 3, decode_tps: 90.0, ..base },
            "no-usage" => SimProfile { usage: false, tokenize_endpoint: false, ..base },
            "eos" => SimProfile { eos_after: Some(40), ..base },
            _ => return None,
        })
    }

    /// A preset name, or a path to a JSON file whose keys override the defaults.
    pub fn load(name_or_path: &str) -> anyhow::Result<SimProfile> {
        use anyhow::Context as _;
        if let Some(profile) = SimProfile::preset(name_or_path) {
            return Ok(profile);
        }
        let path = Path::new(name_or_path);
        if !path.exists() {
            let names: Vec<_> = PRESETS.iter().map(|(name, _)| *name).collect();
            anyhow::bail!(
                "no sim profile `{name_or_path}`: give a preset ({}) or a path to a JSON file",
                names.join(", ")
            );
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading sim profile {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing sim profile {}", path.display()))
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.prefill_tps > 0.0, "prefill rate must be above 0 tok/s");
        anyhow::ensure!(self.decode_tps > 0.0, "decode rate must be above 0 tok/s");
        anyhow::ensure!(self.base_latency_ms >= 0.0, "base latency cannot be negative");
        anyhow::ensure!(self.tokens_per_event >= 1, "tokens per event must be at least 1");
        anyhow::ensure!(
            (0.0..1.0).contains(&self.jitter),
            "jitter is a fraction of the rate in [0, 1), e.g. 0.05 for ±5%"
        );
        anyhow::ensure!(self.fail_every != Some(0), "--fail-every must be at least 1");
        anyhow::ensure!(self.batch_width != Some(0), "--batch-width must be at least 1");
        anyhow::ensure!(self.loading_s >= 0.0 && self.loading_s.is_finite(), "--loading-s must be 0 or more seconds");
        anyhow::ensure!((400..600).contains(&self.fail_status), "--fail-status must be an HTTP error status (400–599)");
        anyhow::ensure!(self.perturb >= 0.0 && self.perturb <= 100.0, "--perturb must be a scale from 0 to 100");
        anyhow::ensure!(
            self.log_draft_acceptance.is_none_or(|a| (0.0..=1.0).contains(&a)),
            "--log-draft-acceptance is a fraction from 0 to 1, e.g. 0.732"
        );
        Ok(())
    }
}
