//! The API key stays in memory: whatever a server echoes of it (a 401 body that quotes the
//! `Authorization` header, an error event, a model id) is redacted from every string benchpass
//! keeps or prints.
//!
//! The key is registered once, where it is read from the environment; from then on every
//! line written to runs.jsonl or pass.json and every line printed passes through [`redact`].
//! Redacting at those few exits, rather than at each place a server string enters, means a
//! new field cannot forget to.

use std::borrow::Cow;
use std::sync::RwLock;

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// Keys shorter than this are placeholders that local servers accept (`x`, `EMPTY`, `none`),
/// not secrets: redacting every `x` would corrupt the recorded text.
pub const MIN_SECRET_CHARS: usize = 8;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Registers `key` for redaction; returns false (and registers nothing) for a placeholder
/// shorter than [`MIN_SECRET_CHARS`].
pub fn register(key: &str) -> bool {
    let key = key.trim();
    if key.chars().count() < MIN_SECRET_CHARS {
        return false;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|p| p.into_inner());
    // The forms a key takes in what benchpass writes: as sent, and escaped inside JSON.
    let escaped = serde_json::to_string(key).expect("a string serializes");
    for form in [key.to_owned(), escaped[1..escaped.len() - 1].to_owned()] {
        if !secrets.contains(&form) {
            secrets.push(form);
        }
    }
    true
}

/// `text` with every registered secret, and whatever follows `Bearer ` up to the next space
/// or quote, replaced by [`REDACTED`]. Borrowed (no copy) when there is nothing to redact.
pub fn redact(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.read().unwrap_or_else(|p| p.into_inner());
    if secrets.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = Cow::Borrowed(text);
    for secret in secrets.iter() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
        }
    }
    match redact_bearer(&out) {
        Some(cleaned) => Cow::Owned(cleaned),
        None => out,
    }
}

/// Bytes as [`redact`] would leave them (for lines serialized straight to bytes).
pub fn redact_bytes(bytes: Vec<u8>) -> Vec<u8> {
    if SECRETS.read().unwrap_or_else(|p| p.into_inner()).is_empty() {
        return bytes;
    }
    match std::str::from_utf8(&bytes) {
        Ok(text) => match redact(text) {
            Cow::Borrowed(_) => bytes,
            Cow::Owned(text) => text.into_bytes(),
        },
        Err(_) => bytes,
    }
}

/// An echoed `Authorization: Bearer …` header may carry the key in a form we did not
/// register (cut, or with a prefix a proxy added): the token after `Bearer ` goes too.
fn redact_bearer(text: &str) -> Option<String> {
    const BEARER: &str = "bearer ";
    let lower = text.to_ascii_lowercase();
    if !lower.contains(BEARER) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    let mut changed = false;
    for (at, _) in lower.match_indices(BEARER) {
        if at < rest {
            continue;
        }
        let token_start = at + BEARER.len();
        let token_len = text[token_start..].find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}' | '\\')).unwrap_or(text.len() - token_start);
        let token = &text[token_start..token_start + token_len];
        // A secret is long and not a plain word: "bearer bonds" in a model's reply stays.
        if token.chars().count() < MIN_SECRET_CHARS || token.chars().all(char::is_alphabetic) || token == REDACTED {
            continue;
        }
        out.push_str(&text[rest..token_start]);
        out.push_str(REDACTED);
        rest = token_start + token_len;
        changed = true;
    }
    out.push_str(&text[rest..]);
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The registry is process-wide: these tests register keys no other test uses.
    #[test]
    fn a_registered_key_is_redacted_wherever_it_appears() {
        assert!(register("sk-test-0123456789abcdef"));
        assert_eq!(redact("key sk-test-0123456789abcdef!"), "key [redacted]!");
        assert_eq!(
            redact(r#"{"error":"bad header Authorization: Bearer sk-test-0123456789abcdef"}"#),
            r#"{"error":"bad header Authorization: Bearer [redacted]"}"#
        );
        // A key cut short by the server is still caught after `Bearer `.
        assert_eq!(redact("authorization: bearer sk-test-0123 was refused"), "authorization: bearer [redacted] was refused");
        assert!(matches!(redact("nothing secret here"), Cow::Borrowed(_)));
        assert_eq!(redact("the bearer bonds"), "the bearer bonds", "a word after `bearer` is no secret");
    }

    #[test]
    fn a_key_with_json_specials_is_redacted_in_its_escaped_form_too() {
        assert!(register(r#"quote"and\slash-key"#));
        let line = serde_json::to_string(&serde_json::json!({"message": "echo quote\"and\\slash-key"})).unwrap();
        assert!(!redact(&line).contains("slash-key"), "{line}");
    }

    #[test]
    fn placeholders_are_not_secrets() {
        assert!(!register("EMPTY"));
        assert!(!register("x"));
        assert_eq!(redact("EMPTY x"), "EMPTY x");
    }
}
