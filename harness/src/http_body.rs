//! Reading a response body with a byte limit. A server decides how much it sends, so every
//! body benchpass reads whole (an error body, `/v1/models`, `/metrics`, a version endpoint, a
//! token count, a cache flush's answer) is read chunk by chunk through [`read_limited`] and
//! stopped at a bound stated here, never buffered to its end first: an endless body would
//! otherwise fill memory for as long as the request's timeout let it (1.5 GiB in 5 s on
//! loopback). The stream of a run has bounds of its own (`client::limits`).

/// An error body (a 4xx or 5xx, or a reply that is not a stream): 64 KiB are read, of which a
/// run keeps 2,000 characters (200 for a reply that is not a stream), after the key is
/// redacted from all 64 KiB.
pub const ERROR_BODY_BYTES: usize = 64 << 10;

/// `GET /v1/models`: the longest list a server published (hundreds of models with their
/// metadata) is a few MB. Past this the probe fails, naming the bound.
pub const MODELS_BYTES: usize = 8 << 20;

/// A Prometheus `/metrics` exposition: an engine's is tens to hundreds of KB (histograms
/// included). Past this the scrape gives nothing, as an endpoint that does not answer.
pub const METRICS_BYTES: usize = 8 << 20;

/// A version endpoint (`/version`, `/api/version`, llama.cpp's `/props` with its chat
/// template): tens of KB at most. Past this the endpoint is skipped, as one that does not answer.
pub const VERSION_BYTES: usize = 1 << 20;

/// A cache flush's answer, of which its first line is kept (200 characters).
pub const FLUSH_BYTES: usize = 64 << 10;

/// `POST /tokenize` for `text_bytes` of text: a token is at least a byte of text (no special
/// tokens are asked for) and its id takes at most 11 bytes of JSON (`4294967295,`), so 16 per
/// byte of text, plus 64 KiB for the rest of the object, is past any honest answer. Past this
/// the count fails and the estimate stands in.
pub fn tokenize_bytes(text_bytes: usize) -> usize {
    text_bytes.saturating_mul(16).saturating_add(64 << 10)
}

/// A body read up to a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    /// At most the limit's bytes.
    pub bytes: Vec<u8>,
    /// The server sent more than the limit: `bytes` is its start, the rest was not read.
    pub cut: bool,
}

impl Body {
    /// The bytes as text, invalid UTF-8 shown as U+FFFD.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.bytes)
    }
}

/// Reads `response`'s body, at most `limit` bytes of it: what comes past the limit is not read
/// (the connection is dropped with the response) and the body says it was cut. Time is the
/// caller's to bound (the request's timeout, or a timeout around this).
pub async fn read_limited(mut response: reqwest::Response, limit: usize) -> Result<Body, reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(Body { bytes, cut: true });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Body { bytes, cut: false })
}

/// A limit as people read it: `64 KiB`, `8 MiB`, else bytes.
pub fn describe(limit: usize) -> String {
    match limit {
        l if l >= 1 << 20 && l % (1 << 20) == 0 => format!("{} MiB", l >> 20),
        l if l >= 1 << 10 && l % (1 << 10) == 0 => format!("{} KiB", l >> 10),
        l => format!("{l} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_described_in_the_units_they_were_set_in() {
        assert_eq!(describe(ERROR_BODY_BYTES), "64 KiB");
        assert_eq!(describe(MODELS_BYTES), "8 MiB");
        assert_eq!(describe(1000), "1000 bytes");
        // 100 bytes of text: 1,600 + 65,536.
        assert_eq!(tokenize_bytes(100), 67_136);
    }
}
