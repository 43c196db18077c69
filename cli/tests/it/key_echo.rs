//! A server that echoes the API key in the forms that get past a plain search: split across
//! events, in base64 (either alphabet, at each of the three offsets a longer text puts it at),
//! hex, percent-encoded, spelt by logprob tokens, and straddling the 2,000-character cut of an
//! error body. No form of it may reach the pass folder or the terminal.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::hostile::{models, respond, stream_head, Hostile};
use crate::support::*;

const KEY: &str = "sk-hostile-split-5e8d2c1b9a7f";

/// Base64 written out here (not benchpass's encoder): `url` picks the URL-safe alphabet.
fn base64(bytes: &[u8], url: bool) -> String {
    let alphabet: &[u8] = if url {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    let mut out = String::new();
    for group in bytes.chunks(3) {
        let n = group.iter().enumerate().fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=group.len() {
            out.push(char::from(alphabet[((n >> (18 - 6 * i)) & 63) as usize]));
        }
        for _ in group.len()..3 {
            out.push('=');
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the server sends the key as, besides split: each is one event's text.
fn encoded_echoes() -> Vec<String> {
    let key = KEY.as_bytes();
    vec![
        base64(key, false),
        base64(&[b"x", key].concat(), true),
        base64(&[b"ab", key, b"!"].concat(), false),
        base64(&[b"abc", key].concat(), true),
        hex(key),
        hex(key).to_uppercase(),
        key.iter().map(|b| format!("%{b:02X}")).collect(),
    ]
}

fn chunk(delta: serde_json::Value) -> String {
    format!("data: {}\n\n", serde_json::json!({"choices": [{"index": 0, "delta": delta}]}))
}

/// A token with its logprob, its bytes, and itself as the top alternative.
fn logprob_chunk(token: &str) -> String {
    let entry = serde_json::json!({"token": token, "logprob": -0.1, "bytes": token.as_bytes(), "top_logprobs": [{"token": token, "logprob": -0.1, "bytes": token.as_bytes()}]});
    format!("data: {}\n\n", serde_json::json!({"choices": [{"index": 0, "delta": {"content": token}, "logprobs": {"content": [entry]}}]}))
}

/// Every file under `dir`, as text.
fn every_file(dir: &Path, into: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            every_file(&path, into);
        } else {
            into.push((path.display().to_string(), String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned()));
        }
    }
}

#[test]
fn no_form_of_an_echoed_key_reaches_the_disk_or_the_terminal() {
    // Run 0 streams the key split over two events, split between reasoning and text, spelt by
    // three logprob tokens, and in each encoded form; run 1 is a 500 whose body holds the key
    // across its 2,000th character.
    let n = Arc::new(AtomicUsize::new(0));
    let server = Hostile::start(move |req, stream| match req.path.as_str() {
        "/v1/models" => models(stream, "m"),
        "/v1/chat/completions" if n.fetch_add(1, Ordering::SeqCst) == 0 => {
            stream_head(stream);
            let (first, second) = KEY.split_at(13);
            let mut body = chunk(serde_json::json!({"role": "assistant", "content": ""}));
            body += &chunk(serde_json::json!({"content": format!("the key is {first}")}));
            body += &chunk(serde_json::json!({"content": format!("{second}, said the server. ")}));
            body += &chunk(serde_json::json!({"reasoning_content": format!("thinking {first}")}));
            body += &chunk(serde_json::json!({"content": format!("{second} again. ")}));
            for token in ["sk-hos", "tile-split-5e8", "d2c1b9a7f"] {
                body += &logprob_chunk(token);
            }
            for echo in encoded_echoes() {
                body += &chunk(serde_json::json!({"content": format!(" {echo} ")}));
            }
            body += "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
            let _ = stream.write_all(body.as_bytes());
        }
        "/v1/chat/completions" => {
            let body = format!("{}{KEY} and the rest of the body", "x".repeat(1995));
            respond(stream, "500 Internal Server Error", "text/plain", &body);
        }
        _ => respond(stream, "404 Not Found", "text/plain", "no"),
    });
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let output = std::process::Command::new(BENCHPASS)
        .args(["run", "--url", &server.url, "--model", "m", "--runs", "2", "--max-tokens", "64", "--idle-timeout", "2"])
        .args(["--api-key-env", "BENCHPASS_ECHO_KEY", "--progress", "plain", "--out", out.to_str().unwrap()])
        .env("BENCHPASS_ECHO_KEY", KEY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(3), "recorded, with a failed run: {stderr}");
    let mut texts = vec![("stdout".to_owned(), String::from_utf8_lossy(&output.stdout).into_owned()), ("stderr".to_owned(), stderr)];
    every_file(&out, &mut texts);
    let mut forms = encoded_echoes();
    forms.extend([KEY.to_owned(), KEY[..10].to_owned(), base64(KEY.as_bytes(), true)]);
    // The first logprob token's bytes, as JSON writes them.
    forms.push(KEY.as_bytes()[..6].iter().map(u8::to_string).collect::<Vec<_>>().join(","));
    for (file, text) in &texts {
        for form in &forms {
            assert!(!text.contains(form.as_str()), "{form} reached {file}: {text}");
        }
    }
    // What the server said around the key is kept.
    let runs = std::fs::read_to_string(out.join("runs.jsonl")).unwrap();
    assert!(runs.contains(r#""text":"the key is [redacted]"#), "{runs}");
    assert!(runs.contains(r#""text":"[redacted], said the server. ""#), "{runs}");
    let pass = harness::pass::read_pass(&out).unwrap();
    let message = &pass.runs[1].error.as_ref().unwrap().message;
    assert_eq!(message, &format!("{}[reda…", "x".repeat(1995)), "redacted, then cut at 2,000 characters");
}
