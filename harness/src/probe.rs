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
