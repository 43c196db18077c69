//! The streaming OpenAI-compatible client: sends one request, records every SSE event with its
//! arrival time on the monotonic clock, and classifies whatever goes wrong. It counts nothing:
//! turning events into token counts and rates is the job of [`crate::metrics`] and the runner.

use std::time::Duration;

use engines::drafts::{FinalChunkStats, FINAL_CHUNK_STATS};
use futures_util::StreamExt as _;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::pass::{EventRecord, RunError, TokenLogprob, TopLogprob};
use crate::sse::SseParser;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Chat,
    Completions,
}

impl Api {
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Completions => "/v1/completions",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
        }
    }
}

/// What one request asks about: a prompt (one user message on the chat API), or a whole
/// conversation with the tools it may call (agent sessions; chat API only).
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    Text(String),
    Conversation { messages: Vec<Value>, tools: Option<Value> },
}

impl Prompt {
    /// The text a tokenizer counts when the server gives no usage: the prompt, or every
    /// message's content and tool-call arguments in order (an approximation: it leaves out the
    /// chat template and the tool definitions).
    pub fn text_for_counting(&self) -> String {
        match self {
            Prompt::Text(text) => text.clone(),
            Prompt::Conversation { messages, .. } => {
                let mut text = String::new();
                for message in messages {
                    if let Some(content) = message.get("content").and_then(Value::as_str) {
                        text.push_str(content);
                        text.push('\n');
                    }
                    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                        if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                            text.push_str(args);
                            text.push('\n');
                        }
                    }
                }
                text
            }
        }
    }

    /// The bytes the prompt's SHA-256 is taken over: the text, or the conversation and tools
    /// as JSON.
    pub fn identity_bytes(&self) -> Vec<u8> {
        match self {
            Prompt::Text(text) => text.as_bytes().to_vec(),
            Prompt::Conversation { messages, tools } => serde_json::to_vec(&json!({"messages": messages, "tools": tools})).unwrap_or_default(),
        }
    }
}

/// Request parameters shared by every run of a pass.
#[derive(Debug, Clone)]
pub struct RequestConfig {
    pub api: Api,
    pub model: String,
    pub temperature: f64,
    pub seed: Option<u64>,
    /// Sent only when the user asks for it: it changes what the engine does.
    pub ignore_eos: bool,
    pub min_tokens: Option<u64>,
    /// Merged last into every request body (engine-specific fields).
    pub extra: Option<Value>,
    /// Sent with every request, as (name, value): an engine preset's (MTPLX's cache bypass).
    pub headers: Vec<(String, String)>,
    pub first_token_timeout: Duration,
    pub idle_timeout: Duration,
}

impl RequestConfig {
    /// The request body. `top_logprobs` asks for each token's logprob and that many
    /// alternatives (`logprobs: true, top_logprobs: K` on chat, `logprobs: K` on completions).
    pub fn body(&self, prompt: &Prompt, max_tokens: u64, top_logprobs: Option<u32>) -> Value {
        let mut body = json!({
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": self.temperature,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        match (self.api, prompt) {
            (Api::Chat, Prompt::Text(text)) => body["messages"] = json!([{"role": "user", "content": text}]),
            (Api::Chat, Prompt::Conversation { messages, tools }) => {
                body["messages"] = json!(messages);
                if let Some(tools) = tools {
                    body["tools"] = tools.clone();
                }
            }
            (Api::Completions, prompt) => body["prompt"] = json!(prompt.text_for_counting()),
        }
        match (self.api, top_logprobs) {
            (Api::Chat, Some(k)) => {
                body["logprobs"] = json!(true);
                body["top_logprobs"] = json!(k);
            }
            (Api::Completions, Some(k)) => body["logprobs"] = json!(k),
            (_, None) => {}
        }
        if let Some(seed) = self.seed {
            body["seed"] = json!(seed);
        }
        if self.ignore_eos {
            body["ignore_eos"] = json!(true);
        }
        if let Some(min_tokens) = self.min_tokens {
            body["min_tokens"] = json!(min_tokens);
        }
        if let Some(Value::Object(extra)) = &self.extra {
            for (key, value) in extra {
                body[key] = value.clone();
            }
        }
        body
    }
}

/// What came back from one streamed request.
#[derive(Debug, Default)]
pub struct StreamOutcome {
    pub events: Vec<EventRecord>,
    pub finish_reason: Option<String>,
    pub usage: Option<Value>,
    pub timings: Option<Value>,
    pub http_status: Option<u16>,
    pub error: Option<RunError>,
    /// The server's `Retry-After` on a 429 or 503, capped at a minute.
    pub retry_after: Option<Duration>,
    /// The reply called a tool (a `delta.tool_calls` entry arrived, name-only included).
    pub tool_call: bool,
    /// Where the stream contradicted itself (a second, different finish reason; a second usage
    /// with another prompt count or fewer completion tokens): the last value is kept, and each
    /// contradiction is said here, at most [`MAX_CONFLICTS`].
    pub conflicts: Vec<String>,
    /// Events whose data was JSON and carried nothing (no token, logprobs, role, finish
    /// reason, usage, timings, error or tool call: `data: 0`, `{}`, an empty delta): counted,
    /// not kept in `events`, so that a server sending millions of them costs nothing.
    pub empty_events: u64,
}

/// Contradictions kept per run: enough to see the pattern, bounded for a hostile stream.
pub const MAX_CONFLICTS: usize = 8;

impl StreamOutcome {
    fn conflict(&mut self, what: String) {
        if self.conflicts.len() < MAX_CONFLICTS {
            self.conflicts.push(crate::probe::server_string(&what));
        }
    }
}

fn error(class: &str, message: impl Into<String>) -> Option<RunError> {
    Some(RunError { class: class.to_owned(), message: message.into() })
}

/// Error classes (docs/raw-format.md): `connect`, `request`, `http-<status>`, `not-a-stream`,
/// `first-token-timeout`, `idle-timeout`, `stream-broken`, `incomplete-stream`,
/// `malformed-event`, `server-error`, `no-tokens`, `runaway-stream`, `oversized-event`,
/// `oversized-run`.
pub async fn stream_request(
    http: &reqwest::Client,
    url: &str,
    api_key: Option<&str>,
    config: &RequestConfig,
    body: &Value,
    live: Option<&crate::progress::Live>,
) -> StreamOutcome {
    let mut outcome = read_stream(http, url, api_key, config, body, live).await;
    // Before anything is hashed, counted or written: a key the server split over events.
    crate::secrets::redact_events(&mut outcome.events);
    outcome
}

async fn read_stream(
    http: &reqwest::Client,
    url: &str,
    api_key: Option<&str>,
    config: &RequestConfig,
    body: &Value,
    live: Option<&crate::progress::Live>,
) -> StreamOutcome {
    use crate::http_body::{read_limited, ERROR_BODY_BYTES};
    let mut outcome = StreamOutcome::default();
    // No compression: a compressed stream's bytes are not its events, and reqwest here
    // decodes none (a server that compresses anyway is named, below).
    let mut request = http.post(url).json(body).header(reqwest::header::ACCEPT_ENCODING, "identity");
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    for (name, value) in &config.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let started = Instant::now();
    let first_token_deadline = started + config.first_token_timeout;

    let response = match tokio::time::timeout_at(first_token_deadline, request.send()).await {
        Err(_) => {
            outcome.error = error("first-token-timeout", "no response headers before the first-token timeout");
            return outcome;
        }
        Ok(Err(e)) => {
            let class = if e.is_connect() { "connect" } else { "request" };
            outcome.error = error(class, error_chain(&e));
            return outcome;
        }
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    outcome.http_status = Some(status.as_u16());
    if !status.is_success() {
        outcome.retry_after = response.headers().get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(retry_after);
        let location = response.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let body = tokio::time::timeout(Duration::from_secs(5), read_limited(response, ERROR_BODY_BYTES)).await;
        let body = body.ok().and_then(Result::ok).map(|b| b.text().into_owned()).unwrap_or_default();
        let message = match location.filter(|_| status.is_redirection()) {
            Some(to) => format!("redirected to {} (not followed: the figures would be another server's)", truncate(&to, 500)),
            None => truncate(&body, MAX_ERROR_BODY_CHARS),
        };
        outcome.error = error(&format!("http-{}", status.as_u16()), message);
        return outcome;
    }

    let content_type = response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    if !content_type.starts_with("text/event-stream") {
        let body = tokio::time::timeout(Duration::from_secs(5), read_limited(response, ERROR_BODY_BYTES)).await;
        let body = body.ok().and_then(Result::ok).map(|b| b.text().into_owned()).unwrap_or_default();
        let message = format!("asked for a stream, got `{}`: {}", truncate(&content_type, 200), truncate(&body, 200));
        outcome.error = error("not-a-stream", message);
        return outcome;
    }
    let encoding = response.headers().get(reqwest::header::CONTENT_ENCODING).and_then(|v| v.to_str().ok()).unwrap_or("identity").to_owned();
    if !encoding.eq_ignore_ascii_case("identity") {
        outcome.error = error("not-a-stream", format!("the stream is compressed (`Content-Encoding: {}`) although benchpass asked for none", truncate(&encoding, 100)));
        return outcome;
    }
    let mut parser = SseParser::new();
    let mut stream = response.bytes_stream();
    let mut saw_token = false;
    let mut last_token_at = started;
    let mut done = false;
    let mut wire_bytes: u64 = 0;
    let mut token_events: u64 = 0;
    let mut other_events: u64 = 0;
    let cap = body.get("max_tokens").and_then(Value::as_u64);
    let max_events = limits::token_events_for(cap.unwrap_or(limits::MAX_TOKENS));
    let cap_said = match cap {
        Some(cap) => format!("a cap of {cap} tokens"),
        None => format!("no cap sent (bounded as for {})", limits::MAX_TOKENS),
    };
    while !done {
        // Idle means no token: keep-alive comments, empty deltas and trickled bytes are not
        // progress, so only a token event moves the deadline.
        let deadline = if saw_token { last_token_at + config.idle_timeout } else { first_token_deadline };
        let chunk = match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => {
                let (class, what) = if saw_token {
                    ("idle-timeout", "the stream went silent for longer than the idle timeout")
                } else {
                    ("first-token-timeout", "no token before the first-token timeout")
                };
                outcome.error = error(class, what);
                return outcome;
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                outcome.error = error("stream-broken", error_chain(&e));
                return outcome;
            }
            Ok(Some(Ok(chunk))) => chunk,
        };
        // One clock read per chunk: every event in it arrived with its bytes.
        let arrived = Instant::now();
        let t_ns = arrived.duration_since(started).as_nanos() as u64;
        wire_bytes += chunk.len() as u64;
        if wire_bytes > limits::RUN_BYTES {
            outcome.error = error("oversized-run", format!("the stream passed {} bytes; what came before is kept", limits::RUN_BYTES));
            return outcome;
        }
        let events = parser.feed(&chunk);
        if parser.pending_bytes() > limits::EVENT_BYTES {
            outcome.error = error("oversized-event", format!("one event (or line) passed {} bytes without ending; what came before is kept", limits::EVENT_BYTES));
            return outcome;
        }
        for event in events {
            if event.data.trim() == "[DONE]" {
                done = true;
                break;
            }
            let Some(record) = read_event_data(&event.data, t_ns, event.wire_bytes, &mut outcome) else {
                continue;
            };
            if record.carries_tokens() {
                saw_token = true;
                last_token_at = arrived;
                token_events += 1;
                if token_events > max_events {
                    outcome.events.push(record);
                    let message = format!("the server went on past {token_events} token events for {cap_said}; what came before is kept");
                    outcome.error = error("runaway-stream", message);
                    return outcome;
                }
                if let Some(live) = live {
                    live.on_token_event();
                }
            } else {
                // A role, a finish, usage, a tool's name, logprobs of a token with no text:
                // an honest stream sends a few, or one per token, so the token bound is theirs.
                other_events += 1;
                if other_events > max_events {
                    let message = format!("the server went on past {max_events} events that carry no token text for {cap_said}; what came before is kept");
                    outcome.error = error("runaway-stream", message);
                    return outcome;
                }
            }
            outcome.events.push(record);
        }
    }
    if !done && outcome.finish_reason.is_none() && outcome.error.is_none() {
        outcome.error = error("incomplete-stream", "the stream ended without a finish reason or [DONE]");
    }
    if !saw_token && outcome.error.is_none() {
        outcome.error = error("no-tokens", "the stream ended without a single token");
    }
    outcome
}

/// Reads one SSE event's data: `None` when it is not JSON (the run's first such event becomes
/// its `malformed-event` error) or carries nothing (counted in `empty_events`). Public for the
/// fuzz target (`fuzz/src/lib.rs`), which feeds it hostile chunks.
///
/// The chunk's fields are read straight from the text ([`crate::chunk`]); a chunk that reader
/// declines is read as a `Value`, and both feed the one rule below ([`read_fields`]).
pub fn read_event_data(data: &str, t_ns: u64, wire_bytes: usize, outcome: &mut StreamOutcome) -> Option<EventRecord> {
    if let Ok(chunk) = crate::chunk::read(data) {
        return read_fields(Fields::of_chunk(&chunk), t_ns, wire_bytes, outcome);
    }
    let Ok(payload) = serde_json::from_str::<Value>(data) else {
        if outcome.error.is_none() {
            outcome.error = error("malformed-event", truncate(data, 200));
        }
        return None;
    };
    read_event(&payload, t_ns, wire_bytes, outcome)
}

/// Reads one chunk object, as [`read_event_data`] does.
fn read_event(payload: &Value, t_ns: u64, wire_bytes: usize, outcome: &mut StreamOutcome) -> Option<EventRecord> {
    read_fields(Fields::of_value(payload), t_ns, wire_bytes, outcome)
}

/// What the client reads of one chunk, wherever it was read from.
struct Fields<'a> {
    /// `choices[0].delta.role` is a string.
    role: bool,
    /// `choices[0].delta.content`, `choices[0].text`, `choices[0].delta.reasoning_content`,
    /// `choices[0].delta.reasoning`: empty where absent or not a string.
    content: &'a str,
    text: &'a str,
    reasoning_content: &'a str,
    reasoning: &'a str,
    tool_calls: Option<&'a Vec<Value>>,
    logprobs: Option<&'a Value>,
    finish: Option<&'a str>,
    /// The chunk's `usage` and `timings` where they are objects, its `error` where not null.
    usage: Option<&'a Value>,
    timings: Option<&'a Value>,
    error: Option<&'a Value>,
    /// [`final_chunk_drafts`] of the chunk.
    drafts: Option<Value>,
}

impl<'a> Fields<'a> {
    fn of_value(payload: &'a Value) -> Fields<'a> {
        let choice = payload.pointer("/choices/0");
        let text_of = |pointer: &str| choice.and_then(|c| c.pointer(pointer)).and_then(Value::as_str).unwrap_or("");
        Fields {
            role: choice.and_then(|c| c.pointer("/delta/role")).is_some_and(Value::is_string),
            content: text_of("/delta/content"),
            text: text_of("/text"),
            reasoning_content: text_of("/delta/reasoning_content"),
            reasoning: text_of("/delta/reasoning"),
            tool_calls: choice.and_then(|c| c.pointer("/delta/tool_calls")).and_then(Value::as_array),
            logprobs: choice.and_then(|c| c.get("logprobs")),
            finish: choice.and_then(|c| c.get("finish_reason")).and_then(Value::as_str),
            usage: payload.get("usage").filter(|u| u.is_object()),
            timings: payload.get("timings").filter(|t| t.is_object()),
            error: payload.get("error").filter(|e| !e.is_null()),
            drafts: final_chunk_drafts(|object| payload.get(object)),
        }
    }

    fn of_chunk(chunk: &'a crate::chunk::Chunk<'a>) -> Fields<'a> {
        let choice = chunk.choice.as_ref();
        let delta = choice.and_then(|c| c.delta.as_ref());
        let text = |t: Option<&'a std::borrow::Cow<'a, str>>| t.map_or("", |t| t.as_ref());
        Fields {
            role: delta.and_then(|d| d.role.as_ref()).is_some_and(Value::is_string),
            content: text(delta.and_then(|d| d.content.as_ref())),
            text: text(choice.and_then(|c| c.text.as_ref())),
            reasoning_content: text(delta.and_then(|d| d.reasoning_content.as_ref())),
            reasoning: text(delta.and_then(|d| d.reasoning.as_ref())),
            tool_calls: delta.and_then(|d| d.tool_calls.as_ref()).and_then(Value::as_array),
            logprobs: choice.and_then(|c| c.logprobs.as_ref()),
            finish: choice.and_then(|c| c.finish_reason.as_deref()),
            usage: chunk.usage.as_ref().filter(|u| u.is_object()),
            timings: chunk.timings.as_ref().filter(|t| t.is_object()),
            error: chunk.error.as_ref().filter(|e| !e.is_null()),
            drafts: final_chunk_drafts(|object| chunk.stats.iter().find(|(name, _)| *name == object).map(|(_, value)| value)),
        }
    }
}

/// One chunk's fields into its event: its text, and any finish reason, usage, timings or error
/// it carries. `None` for an event that carries none of these, no logprobs, no role and no tool
/// call: it is counted in `empty_events` instead of kept, since no figure reads it (the first
/// token, the decode span and the last event are all events that carry something).
fn read_fields(fields: Fields<'_>, t_ns: u64, wire_bytes: usize, outcome: &mut StreamOutcome) -> Option<EventRecord> {
    let Fields { role, content, text, reasoning_content, reasoning, tool_calls, logprobs, finish, usage, timings, error: err, drafts } = fields;
    let text = [content, text].concat();
    // Servers disagree on the field name for reasoning text.
    let reasoning = [reasoning_content, reasoning].concat();
    let tool_call = tool_calls.is_some_and(|calls| !calls.is_empty());
    if tool_call {
        outcome.tool_call = true;
    }
    let tool_args: String = tool_calls
        .into_iter()
        .flatten()
        .filter_map(|call| call.pointer("/function/arguments").and_then(Value::as_str))
        .collect();
    let logprobs = logprobs.map(read_logprobs).unwrap_or_default();
    if let Some(reason) = finish {
        if let Some(before) = outcome.finish_reason.as_deref().filter(|b| *b != reason) {
            let what = format!("finish_reason `{before}`, then `{reason}`");
            outcome.conflict(what);
        }
        outcome.finish_reason = Some(reason.to_owned());
    }
    if let Some(usage) = usage {
        // A server may send usage in every chunk (vLLM's continuous usage stats): counts that
        // grow are progress; another prompt count, or fewer completion tokens, is not.
        if let Some(before) = &outcome.usage {
            let count = |u: &Value, key: &str| u.get(key).and_then(Value::as_u64);
            let prompt_changed = count(before, "prompt_tokens") != count(usage, "prompt_tokens");
            let completion_fell = count(usage, "completion_tokens") < count(before, "completion_tokens");
            if prompt_changed || completion_fell {
                let what = format!("usage {before}, then {usage}");
                outcome.conflict(what);
            }
        }
        outcome.usage = Some(usage.clone());
    }
    if let Some(timings) = timings {
        outcome.timings = Some(timings.clone());
    }
    let has_drafts = drafts.is_some();
    if outcome.timings.is_none() {
        outcome.timings = drafts;
    }
    if let Some(err) = err {
        let message = err.get("message").and_then(Value::as_str).map_or_else(|| err.to_string(), str::to_owned);
        outcome.error = error("server-error", message);
    }
    let record = EventRecord { t_ns, bytes: wire_bytes as u32, text, reasoning, tool_args, logprobs };
    let says_something = role || tool_call || finish.is_some() || usage.is_some() || timings.is_some() || has_drafts || err.is_some();
    if !says_something && !record.carries_tokens() && record.logprobs.is_empty() {
        outcome.empty_events += 1;
        return None;
    }
    Some(record)
}

/// The characters of an error body a run keeps as its message (of the
/// [`crate::http_body::ERROR_BODY_BYTES`] read).
pub const MAX_ERROR_BODY_CHARS: usize = 2000;

/// The alternatives kept per token: the API's maximum is 20; a server sending more is cut here
/// so that one event cannot carry an unbounded list.
const MAX_ALTERNATIVES: usize = 32;

/// A choice's `logprobs`, in either shape: the chat API's `{content: [{token, logprob, bytes,
/// top_logprobs: [{token, logprob, bytes}]}]}` (which llama.cpp also sends on completions), or
/// the legacy completions `{tokens, token_logprobs, top_logprobs: [{token: logprob}]}`.
/// Entries without a finite logprob are left out.
fn read_logprobs(logprobs: &Value) -> Vec<TokenLogprob> {
    let bytes_of = |v: &Value| -> Option<Vec<u8>> {
        v.get("bytes")?.as_array()?.iter().map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok())).collect()
    };
    if let Some(content) = logprobs.get("content").and_then(Value::as_array) {
        return content
            .iter()
            .filter_map(|entry| {
                let token = entry.get("token")?.as_str()?.to_owned();
                let logprob = entry.get("logprob")?.as_f64().filter(|l| l.is_finite())?;
                let top = entry
                    .get("top_logprobs")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .take(MAX_ALTERNATIVES)
                    .filter_map(|alt| {
                        let token = alt.get("token")?.as_str()?.to_owned();
                        let logprob = alt.get("logprob")?.as_f64().filter(|l| l.is_finite())?;
                        Some(TopLogprob { token, logprob, bytes: bytes_of(alt) })
                    })
                    .collect();
                Some(TokenLogprob { token, bytes: bytes_of(entry), logprob, top })
            })
            .collect();
    }
    let (Some(tokens), Some(lps)) = (logprobs.get("tokens").and_then(Value::as_array), logprobs.get("token_logprobs").and_then(Value::as_array)) else {
        return Vec::new();
    };
    let tops = logprobs.get("top_logprobs").and_then(Value::as_array);
    tokens
        .iter()
        .zip(lps)
        .enumerate()
        .filter_map(|(i, (token, logprob))| {
            let token = token.as_str()?.to_owned();
            let logprob = logprob.as_f64().filter(|l| l.is_finite())?;
            let top = tops
                .and_then(|t| t.get(i))
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .take(MAX_ALTERNATIVES)
                .filter_map(|(token, lp)| Some(TopLogprob { token: token.clone(), logprob: lp.as_f64().filter(|l| l.is_finite())?, bytes: None }))
                .collect();
            Some(TokenLogprob { token, bytes: None, logprob, top })
        })
        .collect()
}

/// What one run may hold, so that a server that never stops cannot exhaust memory or disk
/// (docs/reliability.md). Far beyond any honest stream.
pub mod limits {
    /// The most tokens one request may ask for (`max_tokens`) or one prompt may be cut to: the
    /// bound on a plan's and the command line's counts (far beyond any real benchmark, so a
    /// typo is caught and no count overflows), and what a stream sent no cap is bounded as.
    pub const MAX_TOKENS: u64 = 1 << 20;
    /// Bytes of one SSE line or event: an honest chunk is well under a kilobyte.
    pub const EVENT_BYTES: usize = 1 << 20;
    /// Bytes of one run's stream.
    pub const RUN_BYTES: u64 = 256 << 20;

    /// Token events allowed for a cap of `max_tokens`: an event carries at least one token
    /// (or a piece of one, when a character spans tokens), so four times the cap, plus some,
    /// is past what any engine that honours the cap sends.
    pub fn token_events_for(max_tokens: u64) -> u64 {
        max_tokens.saturating_mul(4).saturating_add(64)
    }
}

/// Draft counts that an engine sends in its final chunk (MTPLX's `mtplx_stats`), as a
/// `timings` object in llama.cpp's field names (`draft_n`, `draft_n_accepted`) beside the
/// object verbatim, so that every engine's drafts reach the same figure. Each shape in
/// `engines::drafts` is looked for in every stream, whichever engine sent it: the client knows
/// what a stream may hold, not which engine is behind the URL.
fn final_chunk_drafts<'a>(top_level: impl Fn(&str) -> Option<&'a Value>) -> Option<Value> {
    FINAL_CHUNK_STATS.iter().find_map(|&FinalChunkStats { object, drafted, accepted }| {
        let stats = top_level(object).filter(|s| s.is_object())?;
        Some(json!({
            object: stats,
            "draft_n": stats.get(drafted).and_then(Value::as_u64),
            "draft_n_accepted": stats.get(accepted).and_then(Value::as_u64),
        }))
    })
}

/// The pause a `Retry-After` value asks for, in its delay-seconds form (what inference servers
/// send), capped at [`MAX_RETRY_AFTER`]: an hour's pause asked for by a misconfigured proxy
/// must not stall an unattended pass. The HTTP-date form is not honoured (no pause).
fn retry_after(value: &str) -> Option<Duration> {
    let seconds = value.trim().parse::<u64>().ok()?;
    Some(Duration::from_secs(seconds).min(MAX_RETRY_AFTER))
}

/// The longest pause benchpass takes for a `Retry-After`.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// An error and its causes on one line: reqwest's top-level message alone hides the cause.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// A server's string cut to `max_chars`, the key redacted first (a key straddling the cut
/// would leave its start).
fn truncate(s: &str, max_chars: usize) -> String {
    crate::secrets::redacted_cut(s, max_chars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_read_in_seconds_and_capped_at_a_minute() {
        assert_eq!(retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(" 0 "), Some(Duration::ZERO));
        assert_eq!(retry_after("60"), Some(Duration::from_secs(60)));
        assert_eq!(retry_after("3600"), Some(MAX_RETRY_AFTER), "an hour is cut to a minute");
        assert_eq!(retry_after("18446744073709551615"), Some(MAX_RETRY_AFTER));
        assert_eq!(retry_after("Wed, 21 Oct 2026 07:28:00 GMT"), None, "the date form is not honoured");
        assert_eq!(retry_after("-1"), None);
    }

    #[test]
    fn tool_call_argument_deltas_are_tokens_and_a_name_only_delta_is_not() {
        let mut outcome = StreamOutcome::default();
        let name = json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read_file", "arguments": ""}}]}}]});
        let event = read_event(&name, 1, 10, &mut outcome).expect("a tool call's name is kept");
        assert!(!event.carries_tokens(), "a name-only delta is not a token");
        assert!(outcome.tool_call);
        let args = json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\":"}}]}}]});
        let event = read_event(&args, 2, 10, &mut outcome).unwrap();
        assert_eq!(event.tool_args, "{\"path\":");
        assert!(event.carries_tokens());
    }

    #[test]
    fn logprobs_are_read_in_the_chat_and_the_legacy_completions_shape() {
        let chat = json!({"content": [{"token": " the", "logprob": -0.5, "bytes": [32, 116, 104, 101],
            "top_logprobs": [{"token": " the", "logprob": -0.5}, {"token": " a", "logprob": -1.25}]}]});
        let read = read_logprobs(&chat);
        assert_eq!(read.len(), 1);
        assert_eq!((read[0].token.as_str(), read[0].logprob, read[0].bytes.as_deref()), (" the", -0.5, Some(&b" the"[..])));
        assert_eq!(read[0].top[1], TopLogprob { token: " a".into(), logprob: -1.25, bytes: None });
        let legacy = json!({"tokens": [" x", " y"], "token_logprobs": [-0.1, null], "top_logprobs": [{" x": -0.1, " z": -3.0}, null]});
        let read = read_logprobs(&legacy);
        assert_eq!(read.len(), 1, "a token without a logprob is left out");
        assert_eq!(read[0].top.len(), 2);
        assert!(read_logprobs(&json!(null)).is_empty());
    }

    #[test]
    fn bodies_ask_for_logprobs_per_api_and_carry_a_conversation_with_its_tools() {
        let config = RequestConfig {
            api: Api::Chat,
            model: "m".into(),
            temperature: 0.0,
            seed: None,
            ignore_eos: false,
            min_tokens: None,
            extra: None,
            headers: Vec::new(),
            first_token_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(1),
        };
        let body = config.body(&Prompt::Text("hi".into()), 8, Some(5));
        assert_eq!((body["logprobs"].clone(), body["top_logprobs"].clone()), (json!(true), json!(5)));
        let completions = RequestConfig { api: Api::Completions, ..config.clone() };
        assert_eq!(completions.body(&Prompt::Text("hi".into()), 8, Some(5))["logprobs"], json!(5));
        let conversation = Prompt::Conversation {
            messages: vec![json!({"role": "system", "content": "s"}), json!({"role": "user", "content": "u"})],
            tools: Some(json!([{"type": "function", "function": {"name": "f"}}])),
        };
        let body = config.body(&conversation, 8, None);
        assert_eq!(body["messages"].as_array().map(Vec::len), Some(2));
        assert_eq!(body["tools"][0]["function"]["name"], "f");
        assert!(body.get("logprobs").is_none());
    }

    #[test]
    fn a_stream_that_contradicts_itself_keeps_the_last_value_and_says_so() {
        let mut outcome = StreamOutcome::default();
        for chunk in [
            json!({"choices": [{"delta": {}, "finish_reason": "length"}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
            // Growing counts are progress, not a contradiction.
            json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 7}}),
            json!({"choices": [], "usage": {"prompt_tokens": 99, "completion_tokens": 7}}),
        ] {
            read_event(&chunk, 0, 0, &mut outcome);
        }
        assert_eq!(outcome.finish_reason.as_deref(), Some("stop"));
        assert_eq!(outcome.usage.as_ref().and_then(|u| u["prompt_tokens"].as_u64()), Some(99));
        assert_eq!(outcome.conflicts.len(), 2, "{:?}", outcome.conflicts);
        assert_eq!(outcome.conflicts[0], "finish_reason `length`, then `stop`");
        assert!(outcome.conflicts[1].starts_with("usage {\"completion_tokens\":7,\"prompt_tokens\":10}, then"), "{}", outcome.conflicts[1]);
        for _ in 0..100 {
            read_event(&json!({"choices": [{"delta": {}, "finish_reason": "length"}]}), 0, 0, &mut outcome);
            read_event(&json!({"choices": [{"delta": {}, "finish_reason": "stop"}]}), 0, 0, &mut outcome);
        }
        assert_eq!(outcome.conflicts.len(), MAX_CONFLICTS, "bounded");
    }

    #[test]
    fn events_that_carry_nothing_are_counted_and_events_that_say_something_kept() {
        let mut outcome = StreamOutcome::default();
        for nothing in ["0", "{}", "null", "\"x\"", r#"{"choices":[{"delta":{}}]}"#, r#"{"choices":[{"delta":{"content":""},"finish_reason":null}]}"#, r#"{"usage":null}"#] {
            assert_eq!(read_event_data(nothing, 0, 0, &mut outcome), None, "{nothing}");
        }
        assert_eq!(outcome.empty_events, 7);
        for something in [
            r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"completion_tokens":1}}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"logprobs":{"content":[{"token":"\u00e9","logprob":-1.0}]}}]}"#,
            r#"{"choices":[],"timings":{"predicted_n":1}}"#,
        ] {
            assert!(read_event_data(something, 0, 0, &mut outcome).is_some(), "{something}");
        }
        assert_eq!(outcome.empty_events, 7, "none of these is counted");
    }

    #[test]
    fn the_chunk_reader_reads_each_chunk_as_the_value_reader_does_or_declines_it() {
        // (data, whether the chunk reader takes it): what it takes must come out exactly as the
        // Value reader has it; what it declines goes to the Value reader whole.
        let cases = [
            (r#"{"choices":[{"delta":{"content":" the"},"finish_reason":null,"index":0}],"created":0,"id":"x","model":"m","object":"chat.completion.chunk"}"#, true),
            (r#"{"choices":[{"delta":{"content":"","role":"assistant"},"finish_reason":null,"index":0}]}"#, true),
            (r#"{"choices":[{"delta":{"content":"caf\u00e9 \"q\"\n"},"finish_reason":null}]}"#, true),
            (r#"{"choices":[{"delta":{},"finish_reason":"length","index":0}],"timings":{"predicted_n":8}}"#, true),
            (r#"{"choices":[],"usage":{"completion_tokens":8,"prompt_tokens":1}}"#, true),
            (r#"{"choices":[{"text":" a","finish_reason":null},{"text":" b"}]}"#, true),
            (r#"{"choices":[{"delta":{"reasoning_content":"think","reasoning":"more"}}]}"#, true),
            (r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"a\":"}}]}}]}"#, true),
            (r#"{"choices":[{"delta":{},"logprobs":{"content":[{"token":"x","logprob":-1.0}]}}]}"#, true),
            (r#"{"choices":[],"mtplx_stats":{"accepted_drafts":3,"drafted_tokens":4}}"#, true),
            (r#"{"choices":[],"error":{"message":"overloaded"}}"#, true),
            (r#"{"choices":[{"delta":null,"logprobs":null,"finish_reason":null}],"usage":null,"error":null}"#, true),
            (r#"{"\u0063hoices":[{"delta":{"content":"escaped key"}}]}"#, true),
            (r#"{"choices":[{"delta":{"role":7,"content":"x"}}]}"#, true),
            ("{}", true),
            // Declined: the Value reader decides.
            (r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#, false),
            (r#"{"choices":[{"delta":{"content":5}}]}"#, false),
            (r#"{"choices":[{"delta":["content"]}]}"#, false),
            (r#"{"choices":{"0":{"delta":{"content":"an object, not an array"}}}}"#, false),
            (r#"{"choices":null}"#, false),
            (r#"{"choices":[7]}"#, false),
            (r#"{"choices":[{"finish_reason":1}]}"#, false),
            (r#"{"usage":{"completion_tokens":1},"usage":{"completion_tokens":2}}"#, false),
            ("0", false),
            ("null", false),
            ("[1]", false),
            (r#"{"choices":[{"delta":{"content":"cut"#, false),
        ];
        for (data, taken) in cases {
            let mut by_chunk = StreamOutcome::default();
            let read = crate::chunk::read(data).map(|chunk| read_fields(Fields::of_chunk(&chunk), 5, 9, &mut by_chunk));
            assert_eq!(read.is_ok(), taken, "{data}");
            let Ok(read) = read else { continue };
            let mut by_value = StreamOutcome::default();
            let value: Value = serde_json::from_str(data).unwrap();
            assert_eq!(read, read_event(&value, 5, 9, &mut by_value), "{data}");
            assert_eq!(format!("{by_chunk:?}"), format!("{by_value:?}"), "{data}");
        }
        let mut outcome = StreamOutcome::default();
        assert_eq!(read_event_data(r#"{"choices":{"0":{"delta":{"content":"x"}}}}"#, 0, 0, &mut outcome).map(|e| e.text), Some("x".into()), "declined, read as a Value");
        assert_eq!(read_event_data(r#"{"choices":[{"delta":{"content":"cut"#, 0, 0, &mut outcome), None);
        assert_eq!(outcome.error.map(|e| e.class).as_deref(), Some("malformed-event"));
    }

    #[test]
    fn mtplx_final_chunk_stats_become_draft_counts() {
        let chunk = json!({"choices": [], "mtplx_stats": {"accepted_drafts": 31, "drafted_tokens": 40}});
        let timings = final_chunk_drafts(|key| chunk.get(key)).unwrap();
        assert_eq!((timings["draft_n"].as_u64(), timings["draft_n_accepted"].as_u64()), (Some(40), Some(31)));
        assert_eq!(timings["mtplx_stats"]["drafted_tokens"], 40, "kept verbatim");
        let plain = json!({"choices": []});
        assert_eq!(final_chunk_drafts(|key| plain.get(key)), None);
    }
}
