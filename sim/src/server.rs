//! The HTTP side of the reference engine: routes, request parsing, and streaming each event at
//! the instant its schedule says.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use harness::corpus;
use harness::tokens::count_reference_tokens;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::time::Instant;

use crate::{chat, logprobs, Fault, PrefixCache, Schedule, ScheduleInput, SimProfile};

struct Sim {
    profile: SimProfile,
    requests: AtomicU64,
    started: Instant,
    /// What `leak_bytes_per_request` keeps.
    leaked: std::sync::Mutex<Vec<Vec<u8>>>,
    /// The prompts served, when `prefix_cache` is on.
    prefix_cache: PrefixCache,
    /// `batch_width` slots; a request holds one from its schedule's start to its reply's end.
    /// Tokio's semaphore is fair: waiters are served in the order they came.
    slots: Option<Arc<tokio::sync::Semaphore>>,
}

impl Sim {
    /// llama.cpp's answer on every route while its model loads.
    fn loading(&self) -> Option<Response> {
        (self.started.elapsed().as_secs_f64() < self.profile.loading_s).then(|| {
            let error = json!({"error": {"message": "Loading model", "type": "unavailable_error", "code": 503}});
            (StatusCode::SERVICE_UNAVAILABLE, Json(error)).into_response()
        })
    }
}

/// Binds the listener; `addr` with port 0 picks a free port (read it back from the listener).
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    use anyhow::Context as _;
    TcpListener::bind(addr).await.with_context(|| format!("binding the sim server to {addr}"))
}

/// Serves the reference engine on `listener` until the process ends.
pub async fn serve(profile: SimProfile, listener: TcpListener) -> anyhow::Result<()> {
    profile.validate()?;
    let slots = profile.batch_width.map(|n| Arc::new(tokio::sync::Semaphore::new(n as usize)));
    let sim = Arc::new(Sim { profile, requests: AtomicU64::new(0), started: Instant::now(), leaked: Default::default(), prefix_cache: PrefixCache::default(), slots });
    let mut app = Router::new()
        .route("/health", get(health))
        .route("/version", get(version))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/completions", post(completions));
    if sim.profile.tokenize_endpoint {
        app = app.route("/tokenize", post(tokenize));
    }
    if sim.profile.prefix_cache {
        // The two engines' ways to empty the cache: SGLang's answers in text, vLLM's with nothing.
        app = app.route("/flush_cache", get(flush_cache).post(flush_cache)).route("/reset_prefix_cache", post(reset_prefix_cache));
    }
    // Without TCP_NODELAY, Nagle's algorithm holds small events back until the previous one is
    // acknowledged, and the client's delayed ACK makes that tens of milliseconds.
    use axum::serve::ListenerExt as _;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app.with_state(sim)).await?;
    Ok(())
}

async fn health(State(sim): State<Arc<Sim>>) -> Response {
    sim.loading().unwrap_or_else(|| Json(json!({"status": "ok"})).into_response())
}

async fn version() -> Json<Value> {
    Json(json!({"version": format!("benchpass-sim {}", env!("CARGO_PKG_VERSION"))}))
}

async fn models(State(sim): State<Arc<Sim>>) -> Response {
    if let Some(loading) = sim.loading() {
        return loading;
    }
    Json(json!({
        "object": "list",
        "data": [{"id": sim.profile.model, "object": "model", "created": 0, "owned_by": "benchpass-sim"}]
    }))
    .into_response()
}

async fn flush_cache(State(sim): State<Arc<Sim>>) -> &'static str {
    sim.prefix_cache.flush();
    "Cache flushed.\n"
}

async fn reset_prefix_cache(State(sim): State<Arc<Sim>>) -> StatusCode {
    sim.prefix_cache.flush();
    StatusCode::OK
}

async fn tokenize(Json(body): Json<Value>) -> Json<Value> {
    let content = body.get("content").and_then(Value::as_str).unwrap_or_default();
    let ids: Vec<u64> = harness::tokens::reference_tokens(content).iter().map(|t| token_id(t)).collect();
    Json(json!({ "tokens": ids }))
}

/// A stable pseudo id in a 32000-token vocabulary, so `/tokenize` looks like llama.cpp's.
fn token_id(token: &str) -> u64 {
    token.bytes().fold(1469598103934665603u64, |h, b| (h ^ b as u64).wrapping_mul(1099511628211)) % 32000
}

#[derive(Clone, Copy, PartialEq)]
enum Api {
    Chat,
    Completions,
}

// The body is taken as bytes and parsed after the arrival instant is taken: an agent turn's
// body is tens of kilobytes of JSON, and its parsing is the engine's time, not the network's.
async fn chat_completions(State(sim): State<Arc<Sim>>, body: Bytes) -> Response {
    respond(sim, Api::Chat, body).await
}

async fn completions(State(sim): State<Arc<Sim>>, body: Bytes) -> Response {
    respond(sim, Api::Completions, body).await
}

/// What one request asks for, read the way OpenAI-compatible servers read it.
struct Ask {
    prompt_text: String,
    max_tokens: u64,
    stream: bool,
    include_usage: bool,
    ignore_eos: bool,
    /// The name of the tool the reply calls, when it is a tool call (docs/agent.md).
    tool_call: Option<String>,
    /// K when the request asks for logprobs (chat `logprobs: true` with `top_logprobs: K`,
    /// completions `logprobs: K`); the reply then comes from the logprobs model.
    top_logprobs: Option<usize>,
}

fn read_ask(api: Api, body: &Value) -> Result<Ask, String> {
    let (prompt_text, tool_call) = match api {
        Api::Chat => {
            let messages = body
                .get("messages")
                .and_then(Value::as_array)
                .ok_or("`messages` must be an array")?;
            let tools = body.get("tools");
            (chat::prompt_text(messages, tools), chat::wants_tool_call(messages, tools))
        }
        Api::Completions => match body.get("prompt") {
            Some(Value::String(s)) => (s.clone(), None),
            _ => return Err("`prompt` must be a string".to_owned()),
        },
    };
    let max_tokens = body
        .get("max_completion_tokens")
        .or_else(|| body.get("max_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(16);
    Ok(Ask {
        prompt_text,
        max_tokens,
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        include_usage: body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false),
        ignore_eos: body.get("ignore_eos").and_then(Value::as_bool).unwrap_or(false),
        tool_call,
        top_logprobs: match api {
            Api::Chat if body.get("logprobs").and_then(Value::as_bool) == Some(true) => {
                Some(body.get("top_logprobs").and_then(Value::as_u64).unwrap_or(0).min(MAX_TOP_LOGPROBS) as usize)
            }
            Api::Chat => None,
            Api::Completions => body.get("logprobs").and_then(Value::as_u64).map(|k| k.min(MAX_TOP_LOGPROBS) as usize),
        },
    })
}

/// The most alternatives the sim gives per token, as the OpenAI API.
const MAX_TOP_LOGPROBS: u64 = 20;

async fn respond(sim: Arc<Sim>, api: Api, body: Bytes) -> Response {
    let arrived = Instant::now();
    if let Some(loading) = sim.loading() {
        return loading;
    }
    let body: Value = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => {
            let error = json!({"error": {"message": format!("the body is not JSON: {e}"), "type": "invalid_request_error"}});
            return (StatusCode::BAD_REQUEST, Json(error)).into_response();
        }
    };
    let index = sim.requests.fetch_add(1, Ordering::Relaxed);
    let profile = &sim.profile;
    if profile.leak_bytes_per_request > 0 {
        // Written, not just reserved, so that the pages are resident.
        let kept = vec![0xA5u8; profile.leak_bytes_per_request as usize];
        sim.leaked.lock().unwrap_or_else(|e| e.into_inner()).push(kept);
    }
    if profile.fail_every.is_some_and(|n| index % n == n - 1) {
        let status = StatusCode::from_u16(profile.fail_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let error = json!({"error": {"message": "injected failure", "type": "server_error", "code": status.as_u16()}});
        let mut response = (status, Json(error)).into_response();
        if status == StatusCode::TOO_MANY_REQUESTS {
            response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        }
        return response;
    }
    let ask = match read_ask(api, &body) {
        Ok(ask) => ask,
        Err(message) => {
            let error = json!({"error": {"message": message, "type": "invalid_request_error"}});
            return (StatusCode::BAD_REQUEST, Json(error)).into_response();
        }
    };
    // Past the batch width the request waits for a slot; its schedule starts once it has one,
    // and its `timings` still count from its arrival (the wait is part of what a client sees).
    let slot = match &sim.slots {
        // The semaphore is never closed: every acquire ends with a permit.
        Some(slots) => slots.clone().acquire_owned().await.ok(),
        None => None,
    };
    let started = Instant::now();
    let (prefill_factor, decode_factor) = jitter_factors(profile, index);
    let cached_prompt_tokens = if profile.prefix_cache { sim.prefix_cache.serve(&ask.prompt_text) } else { 0 };
    let schedule = Schedule::plan(ScheduleInput {
        prompt_tokens: count_reference_tokens(&ask.prompt_text),
        cached_prompt_tokens,
        max_tokens: ask.max_tokens,
        eos_after: if ask.ignore_eos { None } else { profile.eos_after },
        reasoning_tokens: profile.reasoning_tokens,
        base_latency_ms: profile.base_latency_ms,
        prefill_tps: profile.prefill_tps * prefill_factor,
        decode_tps: profile.decode_tps * decode_factor,
        tokens_per_event: profile.tokens_per_event,
    });
    // Greedy decoding of the logprobs model, every token the schedule will send, at once: the
    // model is prefix-stable, so each event takes its slice.
    let positions = ask
        .top_logprobs
        .map(|k| logprobs::Model::perturbed(profile.perturb).generate(&ask.prompt_text, schedule.completion_tokens as usize, k));
    let reply = Reply {
        api,
        positions,
        id: format!("{}-sim-{index}", if api == Api::Chat { "chatcmpl" } else { "cmpl" }),
        model: profile.model.clone(),
        words: corpus::words_from(seed_of(&ask.prompt_text)),
        // A streamed reply carries usage only when asked; a whole reply always does (as OpenAI's).
        usage: profile.usage && (ask.include_usage || !ask.stream),
        timings: profile.timings,
        prefix_cache: profile.prefix_cache,
        tool_call: ask.tool_call.map(|name| (format!("call_sim_{index}"), name)),
        role_event: profile.role_event && api == Api::Chat,
        stall_after_tokens: match profile.fault {
            Some(Fault::HangBeforeFirstToken) => Some(0),
            _ => profile.stall_after_tokens,
        },
        fault: profile.fault,
        fault_after_tokens: profile.fault_after_tokens,
        precise_timer: profile.precise_timer,
        log_draft_acceptance: profile.log_draft_acceptance,
        arrived,
        started,
        _slot: slot,
        schedule,
        sent_ns: None,
    };
    if ask.stream {
        stream_reply(reply)
    } else {
        whole_reply(reply).await
    }
}

/// Seeded per request: the same seed and request order give the same rates.
fn jitter_factors(profile: &SimProfile, index: u64) -> (f64, f64) {
    if profile.jitter == 0.0 {
        return (1.0, 1.0);
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(profile.seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut factor = || 1.0 + profile.jitter * (2.0 * rng.random::<f64>() - 1.0);
    (factor(), factor())
}

/// Temperature 0 is deterministic: the same prompt gets the same text.
fn seed_of(prompt: &str) -> u64 {
    prompt.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

struct Reply {
    api: Api,
    /// Where the request asked for logprobs: every token's choice and top-K from the logprobs
    /// model, which then also gives the text.
    positions: Option<Vec<logprobs::Position>>,
    id: String,
    model: String,
    words: corpus::Words,
    usage: bool,
    timings: bool,
    /// Report cached prompt tokens (usage and timings).
    prefix_cache: bool,
    /// The reply is a call of this tool: (call id, name). Its tokens are the arguments.
    tool_call: Option<(String, String)>,
    role_event: bool,
    stall_after_tokens: Option<u64>,
    fault: Option<Fault>,
    fault_after_tokens: u64,
    precise_timer: bool,
    /// Log oMLX's DFlash line with this acceptance when the reply has been streamed.
    log_draft_acceptance: Option<f64>,
    arrived: Instant,
    /// When its schedule began: its arrival, or when it got a slot past the batch width.
    started: Instant,
    /// Its slot of the batch width, given back when the reply is dropped (it ended, or the
    /// client went away).
    _slot: Option<tokio::sync::OwnedSemaphorePermit>,
    schedule: Schedule,
    /// When the first and the last token events were actually handed to the connection, in
    /// nanoseconds after the request arrived: the truth a test holds a client to, since on a
    /// loaded machine the timer itself can wake a few milliseconds past the schedule.
    sent_ns: Option<(u64, u64)>,
}

impl Reply {
    /// The text of tokens `[first, first + n)`, split into (reasoning, content).
    fn texts(&mut self, first: u64, n: u64) -> (String, String) {
        let mut reasoning = String::new();
        let mut content = String::new();
        for i in first..first + n {
            if let Some(position) = self.positions.as_ref().and_then(|p| p.get(i as usize)) {
                // The model's words carry their leading space.
                let target = if i < self.schedule.reasoning_tokens { &mut reasoning } else { &mut content };
                target.push_str(&logprobs::vocab()[position.token]);
                continue;
            }
            let word = self.words.next_word();
            let target = if i < self.schedule.reasoning_tokens { &mut reasoning } else { &mut content };
            target.push(' ');
            target.push_str(word);
        }
        (reasoning, content)
    }

    fn chunk(&self, delta: Value, text: &str, finish_reason: Option<&str>) -> Value {
        match self.api {
            Api::Chat => json!({
                "id": self.id, "object": "chat.completion.chunk", "created": 0, "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
            }),
            Api::Completions => json!({
                "id": self.id, "object": "text_completion", "created": 0, "model": self.model,
                "choices": [{"index": 0, "text": text, "finish_reason": finish_reason}]
            }),
        }
    }

    /// The `logprobs` of a choice carrying tokens `[first, first + n)`, in the chat shape (which
    /// the sim sends on both APIs, as llama.cpp does); `None` when none were asked for.
    fn logprobs_json(&self, first: u64, n: u64) -> Option<Value> {
        let positions = self.positions.as_ref()?;
        let words = logprobs::vocab();
        let entry = |token: usize, logprob: f64| json!({"token": words[token], "logprob": logprob, "bytes": words[token].as_bytes()});
        let content: Vec<Value> = positions
            .iter()
            .skip(first as usize)
            .take(n as usize)
            .map(|p| {
                let mut chosen = entry(p.token, p.logprob);
                chosen["top_logprobs"] = p.top.iter().map(|&(t, lp)| entry(t, lp)).collect();
                chosen
            })
            .collect();
        Some(json!({"content": content}))
    }

    fn usage_json(&self) -> Value {
        let s = &self.schedule;
        let mut usage = json!({
            "prompt_tokens": s.prompt_tokens,
            "completion_tokens": s.completion_tokens,
            "total_tokens": s.prompt_tokens + s.completion_tokens
        });
        if self.prefix_cache {
            usage["prompt_tokens_details"] = json!({"cached_tokens": s.cached_prompt_tokens});
        }
        usage
    }

    /// The delta of a token event: reasoning text, then content, or a tool call's argument
    /// text (its opening before the first token, its closing after the last).
    fn token_delta(&self, reasoning: &str, content: &str, first_token: u64, n_tokens: u64) -> Value {
        let mut delta = serde_json::Map::new();
        if !reasoning.is_empty() {
            delta.insert("reasoning_content".into(), reasoning.into());
        }
        match &self.tool_call {
            Some(_) if !content.is_empty() => {
                let open = if first_token <= self.schedule.reasoning_tokens { "{\"query\":\"" } else { "" };
                let close = if first_token + n_tokens == self.schedule.completion_tokens { "\"}" } else { "" };
                // The words come as " word"; the first goes right after the opening quote.
                let words = if open.is_empty() { content } else { content.strip_prefix(' ').unwrap_or(content) };
                let arguments = format!("{open}{words}{close}");
                delta.insert("tool_calls".into(), json!([{"index": 0, "function": {"arguments": arguments}}]));
            }
            Some(_) => {}
            None => {
                if !content.is_empty() || reasoning.is_empty() {
                    delta.insert("content".into(), content.into());
                }
            }
        }
        Value::Object(delta)
    }

    /// A tool call's first delta: its id and name, no arguments (not a token).
    fn tool_name_delta(&self) -> Option<Value> {
        let (id, name) = self.tool_call.as_ref()?;
        Some(json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}))
    }

    /// llama.cpp's `timings` fields, filled with the schedule; a streamed reply adds when its
    /// first and last token events actually left (`sim_sent_*_ms`, after the request arrived).
    fn timings_json(&self) -> Value {
        let s = &self.schedule;
        let prompt_ms = s.ttft_ns as f64 / 1e6;
        let predicted_ms = s.decode_ns() as f64 / 1e6;
        // As llama.cpp: the prompt figures are over the tokens it processed, not those cached.
        let processed = s.prompt_tokens - s.cached_prompt_tokens;
        let mut timings = json!({
            "prompt_n": processed,
            "prompt_ms": prompt_ms,
            "prompt_per_token_ms": prompt_ms / processed.max(1) as f64,
            "prompt_per_second": processed as f64 / (prompt_ms / 1e3),
            "predicted_n": s.completion_tokens,
            "predicted_ms": predicted_ms,
            "predicted_per_token_ms": 1e3 / s.decode_tps,
            "predicted_per_second": s.decode_tps
        });
        if self.prefix_cache {
            // llama.cpp's name for the prompt tokens taken from its cache (`prompt_n` then
            // counts only those it processed).
            timings["cache_n"] = s.cached_prompt_tokens.into();
        }
        if let Some((first, last)) = self.sent_ns {
            timings["sim_sent_first_token_ms"] = (first as f64 / 1e6).into();
            timings["sim_sent_last_token_ms"] = (last as f64 / 1e6).into();
        }
        timings
    }
}

fn sse(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// Streams the reply: a role event at once, each scheduled event at its instant, then the
/// finish event, usage and `[DONE]`.
fn stream_reply(mut reply: Reply) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    let fault = reply.fault;
    tokio::spawn(async move {
        if reply.role_event || fault == Some(Fault::OnlyRole) {
            let role = reply.chunk(json!({"role": "assistant", "content": ""}), "", None);
            if tx.send(Ok(sse(&role))).await.is_err() {
                return;
            }
        }
        if fault == Some(Fault::OnlyRole) {
            let _ = tx.send(Ok(Bytes::from_static(b"data: [DONE]\n\n"))).await;
            return;
        }
        // The name goes out at once, long before the arguments: a client that took it for the
        // first token would measure a TTFT of about nothing, and a test would see it.
        if let Some(delta) = reply.tool_name_delta() {
            if tx.send(Ok(sse(&reply.chunk(delta, "", None)))).await.is_err() {
                return;
            }
        }
        let events = reply.schedule.events.clone();
        for event in events {
            let (reasoning, mut content) = reply.texts(event.first_token, event.n_tokens);
            if fault == Some(Fault::HugeEvent) && event.first_token == 1 {
                // About a megabyte in one event: a client must neither choke nor miscount.
                content.push_str(&" huge".repeat(200_000));
            }
            let delta = reply.token_delta(&reasoning, &content, event.first_token, event.n_tokens);
            let text = reasoning + &content;
            let mut chunk = reply.chunk(delta, &text, None);
            if let Some(logprobs) = reply.logprobs_json(event.first_token, event.n_tokens) {
                chunk["choices"][0]["logprobs"] = logprobs;
            }
            sleep_until(reply.started + Duration::from_nanos(event.at_ns), reply.precise_timer).await;
            // A fault strikes when the event it replaces is due, after the earlier ones left.
            if event.first_token >= reply.fault_after_tokens {
                match fault {
                    Some(Fault::CrashMidStream) => {
                        // An error from the body stream makes the server abort the connection.
                        let _ = tx.send(Err(std::io::Error::other("injected crash"))).await;
                        return;
                    }
                    Some(Fault::TruncatedJson) => {
                        let _ = tx.send(Ok(Bytes::from_static(b"data: {\"choices\":[{\"delta\":{\"content\":\" cut\n\n"))).await;
                    }
                    Some(Fault::MalformedSseLine) => {
                        let _ = tx.send(Ok(Bytes::from_static(b"garbage without a field\n"))).await;
                    }
                    Some(Fault::ErrorEvent) => {
                        let error = json!({"error": {"message": "injected server error", "type": "server_error", "code": 500}});
                        let _ = tx.send(Ok(sse(&error))).await;
                        return;
                    }
                    // Dropping the sender ends the body cleanly.
                    Some(Fault::EndsEarly) => return,
                    _ => {}
                }
            }
            if reply.stall_after_tokens.is_some_and(|n| event.first_token >= n) {
                // Hold the connection open and send nothing until the client gives up.
                tx.closed().await;
                return;
            }
            let sent = (Instant::now() - reply.arrived).as_nanos() as u64;
            reply.sent_ns = Some((reply.sent_ns.map_or(sent, |(first, _)| first), sent));
            if tx.send(Ok(sse(&chunk))).await.is_err() {
                return;
            }
        }
        if let Some(acceptance) = reply.log_draft_acceptance {
            // oMLX writes this before it queues the last chunk (omlx/engine/dflash.py#L1023-L1042).
            let tokens = reply.schedule.completion_tokens;
            let seconds = (Instant::now() - reply.arrived).as_secs_f64().max(1e-3);
            eprintln!(
                "{} - omlx.engine.dflash - INFO - DFlash generation complete: {tokens} tokens, {:.1} tok/s, acceptance={:.1}%, cycles={}",
                harness::provenance::utc_now_rfc3339(),
                tokens as f64 / seconds,
                acceptance * 100.0,
                tokens.div_ceil(4),
            );
        }
        let mut last = reply.chunk(json!({}), "", Some(reply.schedule.finish_reason));
        if reply.timings {
            last["timings"] = reply.timings_json();
        }
        let mut tail = vec![sse(&last)];
        if reply.usage {
            let mut usage = reply.chunk(json!({}), "", None);
            usage["choices"] = json!([]);
            usage["usage"] = reply.usage_json();
            tail.push(sse(&usage));
        }
        tail.push(Bytes::from_static(b"data: [DONE]\n\n"));
        match fault {
            Some(Fault::DoubleDone) => tail.push(Bytes::from_static(b"data: [DONE]\n\n")),
            Some(Fault::DataAfterDone) => {
                let extra = reply.chunk(json!({"content": " after"}), " after", None);
                tail.push(sse(&extra));
            }
            _ => {}
        }
        for bytes in tail {
            if tx.send(Ok(bytes)).await.is_err() {
                return;
            }
        }
    });
    let body = Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }));
    let content_type = if fault == Some(Fault::WrongContentType) { "text/plain" } else { "text/event-stream" };
    Response::builder()
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .expect("static headers are valid")
}

async fn whole_reply(mut reply: Reply) -> Response {
    let done_at = reply.schedule.events.last().map_or(reply.schedule.ttft_ns, |e| e.at_ns);
    let n = reply.schedule.completion_tokens;
    let (reasoning, content) = reply.texts(0, n);
    sleep_until(reply.started + Duration::from_nanos(done_at), reply.precise_timer).await;
    let finish = reply.schedule.finish_reason;
    let mut body = match reply.api {
        Api::Chat => {
            let mut message = json!({"role": "assistant", "content": content});
            if let Some((id, name)) = &reply.tool_call {
                let arguments = json!({"query": content.trim_start()}).to_string();
                message = json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}]});
            }
            if !reasoning.is_empty() {
                message["reasoning_content"] = reasoning.into();
            }
            json!({
                "id": reply.id, "object": "chat.completion", "created": 0, "model": reply.model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}]
            })
        }
        Api::Completions => json!({
            "id": reply.id, "object": "text_completion", "created": 0, "model": reply.model,
            "choices": [{"index": 0, "text": reasoning + &content, "finish_reason": finish}]
        }),
    };
    if let Some(logprobs) = reply.logprobs_json(0, n) {
        body["choices"][0]["logprobs"] = logprobs;
    }
    if reply.usage {
        body["usage"] = reply.usage_json();
    }
    if reply.timings {
        body["timings"] = reply.timings_json();
    }
    Json(body).into_response()
}

/// Tokio's timer wheel wakes up to a millisecond late. When precision is asked for, a thread
/// of the blocking pool sleeps on the kernel's high-resolution timer instead, which wakes it
/// within tens of microseconds. It does not spin: a spinning engine takes a core from the
/// client it is there to measure, and made that client's own wake-ups late on two cores.
async fn sleep_until(deadline: Instant, precise: bool) {
    if !precise {
        tokio::time::sleep_until(deadline).await;
        return;
    }
    let deadline = deadline.into_std();
    if deadline <= std::time::Instant::now() {
        return;
    }
    let slept = tokio::task::spawn_blocking(move || {
        std::thread::sleep(deadline.saturating_duration_since(std::time::Instant::now()));
    });
    // Only a runtime shutting down fails the join; the reply is abandoned then anyway.
    let _ = slept.await;
}
