//! The API key stays in memory: whatever a server echoes of it (a 401 body that quotes the
//! `Authorization` header, an error event, a model id, a reply that spells it out) is redacted
//! from every string benchpass keeps or prints.
//!
//! The key is registered once, where it is read from the environment, in every form a server
//! is likely to echo it in ([`forms_of`]: as sent, JSON-escaped, percent-encoded, hex, base64).
//! From then on every line written to runs.jsonl or pass.json and every line printed passes
//! through [`redact`]. Redacting at those few exits, rather than at each place a server string
//! enters, means a new field cannot forget to. Two things an exit cannot see are done where
//! they happen: a server string cut short is redacted before the cut ([`redacted_cut`]: a key
//! straddling the cut would leave its start), and a run's streamed text is redacted across its
//! events ([`redact_events`]: a key split over two events is in neither).

use std::borrow::Cow;
use std::sync::RwLock;

use crate::format::EventRecord;

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// Keys shorter than this are placeholders that local servers accept (`x`, `EMPTY`, `none`),
/// not secrets: redacting every `x` would corrupt the recorded text.
pub const MIN_SECRET_CHARS: usize = 8;

/// Every form of every registered key, longest first (a form that holds another goes whole).
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

fn secrets() -> std::sync::RwLockReadGuard<'static, Vec<String>> {
    SECRETS.read().unwrap_or_else(|p| p.into_inner())
}

/// Registers `key` for redaction; returns false (and registers nothing) for a placeholder
/// shorter than [`MIN_SECRET_CHARS`].
pub fn register(key: &str) -> bool {
    let key = key.trim();
    if key.chars().count() < MIN_SECRET_CHARS {
        return false;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|p| p.into_inner());
    for form in forms_of(key) {
        if !secrets.contains(&form) {
            secrets.push(form);
        }
    }
    secrets.sort_by_key(|form| std::cmp::Reverse(form.len()));
    true
}

/// The forms a key takes in what a server may echo and benchpass writes:
/// - as sent, and escaped inside JSON;
/// - percent-encoded: its reserved characters only (what a URL or form encoder does), or every
///   byte (`%73%6B…`), with upper- or lowercase hex;
/// - hex of its bytes, lower- or uppercase;
/// - base64, standard and URL-safe alphabets. The base64 of a key inside a longer text depends
///   on where the key starts within a 3-byte group, so each of the three starts gives a form:
///   the groups that hold only the key's bytes, encoded (with or without padding, the groups
///   are the same). The up to two bytes at each end that share a group with the text around
///   them are left: no more than 4 bytes of a key of at least 8 can remain.
///
/// Forms shorter than [`MIN_SECRET_CHARS`] are left out (none is, for a key that long).
fn forms_of(key: &str) -> Vec<String> {
    use base64::Engine as _;
    let bytes = key.as_bytes();
    let escaped = serde_json::to_string(key).expect("a string serializes");
    let reserved_encoded = |upper: bool| -> String {
        key.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => char::from(b).to_string(),
                b if upper => format!("%{b:02X}"),
                b => format!("%{b:02x}"),
            })
            .collect()
    };
    let every_byte_encoded = |upper: bool| -> String { bytes.iter().map(|b| if upper { format!("%{b:02X}") } else { format!("%{b:02x}") }).collect() };
    let hex = |upper: bool| -> String { bytes.iter().map(|b| if upper { format!("{b:02X}") } else { format!("{b:02x}") }).collect() };
    let mut forms = vec![
        key.to_owned(),
        escaped[1..escaped.len() - 1].to_owned(),
        reserved_encoded(true),
        reserved_encoded(false),
        every_byte_encoded(true),
        every_byte_encoded(false),
        hex(false),
        hex(true),
    ];
    for engine in [base64::engine::general_purpose::STANDARD_NO_PAD, base64::engine::general_purpose::URL_SAFE_NO_PAD] {
        for start_in_group in 0..3 {
            // The key's first byte is `start_in_group` bytes into a group: its first whole
            // group starts at the next boundary.
            let skip = (3 - start_in_group) % 3;
            let whole = bytes.len().saturating_sub(skip) / 3 * 3;
            forms.push(engine.encode(&bytes[skip..skip + whole]));
        }
    }
    forms.retain(|form| form.chars().count() >= MIN_SECRET_CHARS);
    forms
}

/// `text` with every registered secret, and whatever follows `Bearer ` up to the next space
/// or quote, replaced by [`REDACTED`]. Borrowed (no copy) when there is nothing to redact.
pub fn redact(text: &str) -> Cow<'_, str> {
    let secrets = secrets();
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
    if secrets().is_empty() {
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

/// `text` redacted, then cut to `max_chars` characters with `…` where it was cut: every
/// server string benchpass keeps only the start of is cut here. Redacting first means a key
/// that straddles the cut is replaced whole instead of leaving its first characters.
pub fn redacted_cut(text: &str, max_chars: usize) -> String {
    let text = redact(text);
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.into_owned(),
    }
}

/// Redacts what a run's events spell together: a key (in any of its forms) that a server split
/// over several events is in none of them alone, so the exits' [`redact`] would pass each
/// piece. Searched in: each of `text`, `reasoning` and `tool_args` joined over the events, the
/// three joined in the order the output is hashed (event by event: reasoning, text, tool
/// arguments), and the tokens of the events' logprobs joined. Every piece of a match is
/// replaced by [`REDACTED`] in the event that holds it; a logprob token that held a piece loses
/// its `bytes`, and an alternative equal to it is redacted the same way.
pub fn redact_events(events: &mut [EventRecord]) {
    let secrets = secrets();
    if secrets.is_empty() {
        return;
    }
    redact_pieces(&secrets, events.iter_mut().map(|e| &mut e.text).collect());
    redact_pieces(&secrets, events.iter_mut().map(|e| &mut e.reasoning).collect());
    redact_pieces(&secrets, events.iter_mut().map(|e| &mut e.tool_args).collect());
    redact_pieces(&secrets, events.iter_mut().flat_map(|e| [&mut e.reasoning, &mut e.text, &mut e.tool_args]).collect());
    let chosen: Vec<String> = events.iter().flat_map(|e| &e.logprobs).map(|l| l.token.clone()).collect();
    let tokens = events.iter_mut().flat_map(|e| e.logprobs.iter_mut()).map(|l| &mut l.token).collect();
    let changed = redact_pieces(&secrets, tokens);
    let logprobs = events.iter_mut().flat_map(|e| e.logprobs.iter_mut());
    for ((logprob, before), changed) in logprobs.zip(&chosen).zip(changed) {
        if !changed {
            continue;
        }
        logprob.bytes = None;
        for alternative in logprob.top.iter_mut().filter(|alt| alt.token == *before) {
            alternative.token = logprob.token.clone();
            alternative.bytes = None;
        }
    }
}

/// Finds `secrets` in `pieces` joined, and replaces each piece's part of every match by
/// [`REDACTED`]; says which pieces changed.
fn redact_pieces(secrets: &[String], mut pieces: Vec<&mut String>) -> Vec<bool> {
    let mut changed = vec![false; pieces.len()];
    let joined: String = pieces.iter().map(|p| p.as_str()).collect();
    let mut matches: Vec<(usize, usize)> =
        secrets.iter().flat_map(|s| joined.match_indices(s.as_str()).map(|(at, m)| (at, at + m.len()))).collect();
    if matches.is_empty() {
        return changed;
    }
    // Sorted and merged: overlapping forms (a key inside its percent-encoded form) are one.
    matches.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(matches.len());
    for (start, end) in matches {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    let mut next = 0;
    let mut piece_start = 0;
    for (piece, changed) in pieces.iter_mut().zip(&mut changed) {
        let piece_end = piece_start + piece.len();
        while next < merged.len() && merged[next].1 <= piece_start {
            next += 1;
        }
        let mut out = String::new();
        let mut at = piece_start;
        for &(start, end) in merged[next..].iter().take_while(|(start, _)| *start < piece_end) {
            out.push_str(&joined[at..start.max(piece_start)]);
            out.push_str(REDACTED);
            at = end.min(piece_end);
            *changed = true;
        }
        if *changed {
            out.push_str(&joined[at..piece_end]);
            **piece = out;
        }
        piece_start = piece_end;
    }
    changed
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
    use crate::format::{TokenLogprob, TopLogprob};

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

    #[test]
    fn a_key_encoded_in_hex_percent_or_base64_at_any_offset_is_redacted() {
        use base64::Engine as _;
        const KEY: &str = "sk-enc/0123+abcdef=z";
        assert!(register(KEY));
        let b64 = base64::engine::general_purpose::STANDARD;
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
        let every: String = KEY.bytes().map(|b| format!("%{b:02X}")).collect();
        for echo in [hex.clone(), hex.to_uppercase(), "sk-enc%2F0123%2Babcdef%3Dz".to_owned(), every.clone(), every.to_lowercase()] {
            let redacted = redact(&echo);
            assert_eq!(redacted, REDACTED, "{echo}");
        }
        // Base64 of the key after 0 to 5 bytes of other text, in both alphabets, padded or not.
        for prefix in ["", "a", "ab", "abc", "abcd", "abcde"] {
            for suffix in ["", "!", "!!"] {
                let plain = format!("{prefix}{KEY}{suffix}");
                for encoded in [b64.encode(&plain), url.encode(&plain)] {
                    let redacted = redact(&encoded);
                    assert!(redacted.contains(REDACTED), "{plain}: {encoded}");
                    // 6 whole groups (18 of the key's 20 bytes) are gone, wherever it started.
                    let left = redacted.replace(REDACTED, "");
                    assert!(encoded.len() - left.len() >= 24, "{plain}: {encoded} → {redacted}");
                }
            }
        }
    }

    #[test]
    fn a_key_straddling_a_cut_is_redacted_before_it_and_leaves_no_start() {
        const KEY: &str = "sk-straddle-4f9a8b7c6d";
        assert!(register(KEY));
        let body = format!("{}{KEY} and more", "x".repeat(1995));
        let cut = redacted_cut(&body, 2000);
        // 1,995 characters, then the first 5 of `[redacted]`: the cut falls in the marker.
        assert_eq!(cut, format!("{}[reda…", "x".repeat(1995)));
    }

    #[test]
    fn a_key_split_across_events_is_redacted_in_each_piece() {
        const KEY: &str = "sk-split-77aa88bb99cc";
        assert!(register(KEY));
        let event = |text: &str| EventRecord { text: text.to_owned(), ..EventRecord::default() };
        let mut events = vec![event("the key is sk-spl"), event("it-77aa8"), event("8bb99cc, said the server"), event("nothing")];
        redact_events(&mut events);
        let texts: Vec<&str> = events.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(texts, ["the key is [redacted]", "[redacted]", "[redacted], said the server", "nothing"]);
        // Across fields, in the order the output is hashed in: reasoning, then text.
        let mut events = vec![EventRecord { reasoning: "x sk-split-77".into(), text: "aa88bb99cc y".into(), ..EventRecord::default() }];
        redact_events(&mut events);
        assert_eq!((events[0].reasoning.as_str(), events[0].text.as_str()), ("x [redacted]", "[redacted] y"));
        // Logprob tokens that spell it, with their bytes and the alternatives equal to them.
        let token = |t: &str| TokenLogprob {
            token: t.to_owned(),
            bytes: Some(t.as_bytes().to_vec()),
            logprob: -0.1,
            top: vec![TopLogprob { token: t.to_owned(), logprob: -0.1, bytes: Some(t.as_bytes().to_vec()) }, TopLogprob { token: "other".into(), logprob: -2.0, bytes: None }],
        };
        let mut events = vec![EventRecord { logprobs: vec![token("sk-split"), token("-77aa88bb"), token("99cc"), token(" ok")], ..EventRecord::default() }];
        redact_events(&mut events);
        let logprobs = &events[0].logprobs;
        for lp in &logprobs[..3] {
            assert_eq!((lp.token.as_str(), lp.bytes.as_ref(), lp.top[0].token.as_str(), lp.top[1].token.as_str()), (REDACTED, None, REDACTED, "other"));
        }
        assert_eq!((logprobs[3].token.as_str(), logprobs[3].bytes.as_deref()), (" ok", Some(&b" ok"[..])));
    }
}
