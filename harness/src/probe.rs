//! What benchpass learns from a server before the first run: that it answers, which models it
//! serves, the version it reports, and whether it has a tokenizer endpoint.

use std::time::Duration;

use anyhow::Context as _;
use serde_json::{json, Value};

use crate::client::error_chain;
use crate::http_body::{describe, read_limited, tokenize_bytes, MODELS_BYTES, VERSION_BYTES};

const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// `http://host:port` from what the user typed: a trailing `/` or `/v1` is dropped, since
/// benchpass adds the API paths itself.
pub fn base_url(url: &str) -> anyhow::Result<String> {
    let trimmed = url.trim().trim_end_matches('/');
    let trimmed = trimmed.strip_suffix("/v1").unwrap_or(trimmed);
    anyhow::ensure!(
        trimmed.starts_with("http://") || trimmed.starts_with("https://"),
        "--url {url}: expected an http:// or https:// address such as http://127.0.0.1:8080"
    );
    Ok(trimmed.to_owned())
}

/// `GET /v1/models`: the one check every OpenAI-compatible server answers. Fails with a
/// one-line error naming the URL and the cause.
pub async fn served_models(http: &reqwest::Client, base: &str, api_key: Option<&str>) -> anyhow::Result<Vec<String>> {
    let url = format!("{base}/v1/models");
    let mut request = http.get(&url).timeout(PROBE_TIMEOUT);
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|e| anyhow::anyhow!("cannot reach {url}: {}", error_chain(&e)))?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        anyhow::bail!("{url} answered {status}: the server wants an API key; pass --api-key-env VAR");
    }
    anyhow::ensure!(status.is_success(), "{url} answered {status}; is this an OpenAI-compatible server?");
    let body = read_limited(response, MODELS_BYTES).await.map_err(|e| anyhow::anyhow!("reading {url}: {}", error_chain(&e)))?;
    anyhow::ensure!(
        !body.cut,
        "{url} answered more than {}, the most benchpass reads of a model list; is this an OpenAI-compatible server?",
        describe(MODELS_BYTES)
    );
    let body: Value = serde_json::from_slice(&body.bytes).with_context(|| format!("{url} did not answer JSON"))?;
    Ok(body
        .get("data")
        .and_then(Value::as_array)
        .map(|models| models.iter().filter_map(|m| m.get("id").and_then(Value::as_str)).map(str::to_owned).collect())
        .unwrap_or_default())
}

/// The bound on a server-provided string a pass keeps, and the cut to it: the pass format's,
/// since its importers cut what another tool recorded of a server the same way.
pub use benchpass_format::bounded::{server_string, MAX_SERVER_STRING_CHARS};

/// A version endpoint's JSON, read up to [`VERSION_BYTES`]; `None` when it does not answer
/// 200 with JSON within that (an endless body is not waited out).
pub async fn version_json(request: reqwest::RequestBuilder) -> Option<Value> {
    let response = request.timeout(PROBE_TIMEOUT).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = read_limited(response, VERSION_BYTES).await.ok().filter(|b| !b.cut)?;
    serde_json::from_slice(&body.bytes).ok()
}

/// The version a server reports and where it came from; endpoints tried in order: vLLM and
/// the reference engine `GET /version`, Ollama `GET /api/version`, llama.cpp `GET /props`.
pub async fn reported_version(http: &reqwest::Client, base: &str) -> Option<(String, String)> {
    const SOURCES: [(&str, &str); 3] = [("/version", "/version"), ("/api/version", "/version"), ("/props", "/build_info")];
    for (path, pointer) in SOURCES {
        let Some(body) = version_json(http.get(format!("{base}{path}"))).await else { continue };
        if let Some(version) = body.pointer(pointer).and_then(Value::as_str).filter(|v| !v.is_empty()) {
            return Some((server_string(version), format!("GET {path}")));
        }
    }
    None
}

/// How token counts are obtained when a server sends no usage.
#[derive(Debug, Clone)]
pub enum TokenCounter {
    /// llama.cpp's `POST /tokenize` at this URL.
    Endpoint { url: String },
    Estimate,
}

impl TokenCounter {
    /// Uses the server's tokenizer endpoint where it has one.
    pub async fn detect(http: &reqwest::Client, base: &str) -> TokenCounter {
        let url = format!("{base}/tokenize");
        let counter = TokenCounter::Endpoint { url };
        match counter.count(http, "Alice was beginning").await {
            Ok(n) if n > 0 => counter,
            _ => TokenCounter::Estimate,
        }
    }

    pub fn is_estimate(&self) -> bool {
        matches!(self, TokenCounter::Estimate)
    }

    pub async fn count(&self, http: &reqwest::Client, text: &str) -> anyhow::Result<u64> {
        match self {
            TokenCounter::Estimate => Ok(crate::tokens::estimate_tokens(text)),
            TokenCounter::Endpoint { url } => {
                // `add_special: false`: count the text's own tokens, not a BOS in front of them.
                let body = json!({"content": text, "add_special": false});
                let response = http.post(url).json(&body).timeout(PROBE_TIMEOUT).send().await?.error_for_status()?;
                let limit = tokenize_bytes(text.len());
                let answer = read_limited(response, limit).await?;
                anyhow::ensure!(!answer.cut, "{url} answered more than {} for {} bytes of text", describe(limit), text.len());
                let value: Value = serde_json::from_slice(&answer.bytes)?;
                let tokens = value.get("tokens").and_then(Value::as_array).context("no `tokens` array")?;
                Ok(tokens.len() as u64)
            }
        }
    }
}

/// The preset keys whose assumed values a cell's probe checks against the server: what the
/// stream carries and whether `ignore_eos` works. (The health path and the version are
/// checked by starting the engine: a wrong one fails the start and says so.)
pub const PROBED_KEYS: [&str; 3] = ["stream_usage", "cached_tokens", "ignore_eos"];

/// A prompt any chat model answers in a few tokens, far below [`BEHAVIOUR_CAP`].
const BEHAVIOUR_PROMPT: &str = "Reply with the single word OK.";
/// The probe's token cap: a reply that reaches it without `ignore_eos` did not stop early,
/// and the `ignore_eos` test is then inconclusive.
pub const BEHAVIOUR_CAP: u64 = 64;

/// What the server does, for the keys of [`PROBED_KEYS`] its preset assumes: `None` where it
/// assumes none of them (nothing is sent). One short request, and a second with
/// `ignore_eos: true` where the first stopped early and the way past EOS is assumed; both at
/// temperature 0 with the cell's model, fields and headers, before the cell's cache is emptied.
pub async fn assumed_behaviour(
    http: &reqwest::Client,
    chat_url: &str,
    api_key: Option<&str>,
    request: &crate::client::RequestConfig,
    preset: &engines::presets::Preset,
) -> Option<benchpass_format::ProbedBehaviour> {
    use crate::client::{stream_request, Prompt, RequestConfig};
    if !PROBED_KEYS.iter().any(|k| preset.is_assumed(k)) {
        return None;
    }
    let config = RequestConfig { api: crate::client::Api::Chat, temperature: 0.0, seed: None, ignore_eos: false, min_tokens: None, ..request.clone() };
    let prompt = Prompt::Text(BEHAVIOUR_PROMPT.to_owned());
    let control = stream_request(http, chat_url, api_key, &config, &config.body(&prompt, BEHAVIOUR_CAP, None), None).await;
    let mut seen = benchpass_format::ProbedBehaviour::default();
    if let Some(error) = &control.error {
        seen.notes.push(format!("the probe request failed ({}: {}), so the assumed values were not checked", error.class, server_string(&error.message)));
        return Some(seen);
    }
    seen.stream_usage = Some(control.usage.is_some());
    seen.cached_tokens = Some(benchpass_format::metrics::cached_prompt_tokens(control.usage.as_ref(), control.timings.as_ref()).is_some());
    if preset.is_assumed("ignore_eos") {
        if control.finish_reason.as_deref() == Some("stop") {
            let held = RequestConfig { ignore_eos: true, ..config.clone() };
            let outcome = stream_request(http, chat_url, api_key, &held, &held.body(&prompt, BEHAVIOUR_CAP, None), None).await;
            match (&outcome.error, outcome.finish_reason.as_deref()) {
                (None, Some("length")) => seen.ignore_eos = Some(true),
                (None, Some("stop")) => seen.ignore_eos = Some(false),
                (Some(error), _) => seen.notes.push(format!("`ignore_eos: true` was answered with an error ({}), so the way past EOS is unknown", error.class)),
                (None, other) => seen.notes.push(format!("with `ignore_eos: true` the reply ended with finish reason {other:?}, so the way past EOS is unknown")),
            }
        } else {
            seen.notes.push(format!(
                "the probe's reply did not stop early (finish reason {:?} within {BEHAVIOUR_CAP} tokens), so whether `ignore_eos` works is unknown",
                control.finish_reason.as_deref().map(server_string)
            ));
        }
    }
    seen.notes.extend(contradictions(preset, &seen));
    Some(seen)
}

/// Where what the server did contradicts its preset's assumed values, each as a warning that
/// says what follows for the figures and what to change.
pub fn contradictions(preset: &engines::presets::Preset, seen: &benchpass_format::ProbedBehaviour) -> Vec<String> {
    use engines::presets::IgnoreEos;
    let name = preset.name;
    let said = |yes: bool| if yes { "does" } else { "does not" };
    let mut out = Vec::new();
    let assumed = |key: &str| preset.is_assumed(key);
    if let Some(usage) = seen.stream_usage.filter(|&u| assumed("stream_usage") && u != preset.capabilities.stream_usage) {
        out.push(format!(
            "{name} {} send usage in its stream, but its preset assumes it {}: token counts {}; the preset's `stream_usage` should be {usage} (docs/plans.md)",
            said(usage),
            said(!usage),
            if usage { "are the server's" } else { "come from its tokenizer endpoint or are estimates (4 characters a token)" }
        ));
    }
    if let Some(cached) = seen.cached_tokens.filter(|&c| assumed("cached_tokens") && c != preset.capabilities.cached_tokens) {
        out.push(format!(
            "{name} {} report cached prompt tokens, but its preset assumes it {}: {}; the preset's `cached_tokens` should be {cached} (docs/plans.md)",
            said(cached),
            said(!cached),
            if cached { "runs served from its prefix cache are marked `prefix-cached`" } else { "a warm TTFT cannot be told from a cold one, and agent cache figures are unknown" }
        ));
    }
    if let Some(honoured) = seen.ignore_eos.filter(|_| assumed("ignore_eos")) {
        match (preset.ignore_eos, honoured) {
            (IgnoreEos::Unsupported, true) => out.push(format!(
                "{name} held a reply to its {BEHAVIOUR_CAP}-token cap with `ignore_eos: true` (without it the reply stopped early), but its preset assumes no way past EOS: \
                 steps that ignore EOS are marked as unable to reach their cap; the preset's `ignore_eos` should be `field` (docs/plans.md)"
            )),
            (IgnoreEos::Field, false) => out.push(format!(
                "{name} stopped early with `ignore_eos: true`, but its preset assumes the field holds a reply to its cap: runs of steps that ignore EOS will stop short \
                 (marked short-stop); the preset's `ignore_eos` should be `unsupported` (docs/plans.md)"
            )),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_drops_trailing_slash_and_v1() {
        assert_eq!(base_url("http://127.0.0.1:8080/v1/").unwrap(), "http://127.0.0.1:8080");
        assert_eq!(base_url("http://h:1").unwrap(), "http://h:1");
        assert!(base_url("127.0.0.1:8080").is_err());
    }
}
