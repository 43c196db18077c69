//! Hostile servers that decide how much benchpass holds: millions of events that carry
//! nothing, and bodies that never end (an error body, `/v1/models`, a version endpoint, a
//! cache flush's answer, `/metrics`, `/tokenize`). Each test runs the real binary, samples its
//! peak resident memory while it runs, and checks the bound docs/reliability.md states.
//!
//! The runs are read back as JSON values, not as `RunRecord`s, so that these tests build
//! against a benchpass without the bounds too (they were checked to fail there).

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::hostile::{models, respond, stream_head, Hostile};
use crate::support::*;

/// What a test server sends at most of a body that "never ends": enough to be far past every
/// bound, and bounded so that a benchpass that reads it all still ends.
const ENDLESS_CAP: usize = 256 << 20;

/// Writes `head`, then `block` again and again until the client stops reading (or
/// [`ENDLESS_CAP`] bytes went out).
fn endless(stream: &mut TcpStream, head: &str, block: &[u8]) {
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    let mut sent = 0;
    while sent < ENDLESS_CAP {
        if stream.write_all(block).is_err() {
            return;
        }
        sent += block.len();
    }
}

fn endless_response(stream: &mut TcpStream, status: &str, content_type: &str, block: &[u8]) {
    endless(stream, &format!("HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n"), block);
}

/// A finished benchpass: its exit code, what it printed, how long it took, and its peak
/// resident memory (Linux: `VmHWM` from `/proc/PID/status`, sampled every 5 ms).
struct Measured {
    code: Option<i32>,
    stderr: String,
    elapsed: Duration,
    peak_mib: Option<u64>,
}

fn run_measured(args: &[&str], dir: &Path) -> Measured {
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let started = Instant::now();
    let mut child = Command::new(BENCHPASS)
        .args(args)
        .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&err).unwrap()))
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = None;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file) {
            let hwm = text.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
            peak_kib = peak_kib.max(hwm);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "benchpass ran for 2 minutes");
        std::thread::sleep(Duration::from_millis(5));
    };
    Measured {
        code: status.code(),
        stderr: std::fs::read_to_string(&err).unwrap(),
        elapsed: started.elapsed(),
        peak_mib: peak_kib.map(|k| k >> 10),
    }
}

/// The most memory these runs may take. benchpass itself takes about 20 MiB here; before the
/// bounds, the same runs took 580 MiB (32 MiB of `data: 0`) to 1.7 GiB (an endless model list).
const PEAK_MIB: u64 = 100;

fn assert_bounded(m: &Measured, what: &str) {
    if cfg!(target_os = "linux") {
        let peak = m.peak_mib.expect("VmHWM was read");
        eprintln!("{what}: benchpass peaked at {peak} MiB in {:?}", m.elapsed);
        assert!(peak < PEAK_MIB, "{what}: benchpass peaked at {peak} MiB (bound {PEAK_MIB}): {}", m.stderr);
    }
}

fn runs_of(out: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(out.join("runs.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn chunk(content: &str) -> String {
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}}}}]}}\n\n", serde_json::to_string(content).unwrap())
}

#[test]
fn millions_of_events_that_carry_nothing_are_counted_not_kept() {
    // A token, 4,000,000 events of `data: 0` (32 MB on the wire), a finish and [DONE].
    const EMPTY: usize = 4_000_000;
    let server = Hostile::start(|req, stream| match req.path.as_str() {
        "/v1/models" => models(stream, "m"),
        "/v1/chat/completions" => {
            stream_head(stream);
            let _ = stream.write_all(chunk("a").as_bytes());
            let block = b"data:0\n\n".repeat(10_000);
            for _ in 0..EMPTY / 10_000 {
                if stream.write_all(&block).is_err() {
                    return;
                }
            }
            let _ = stream.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
        }
        _ => respond(stream, "404 Not Found", "text/plain", "no"),
    });
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let m = run_measured(&["run", "--url", &server.url, "--model", "m", "--runs", "1", "--max-tokens", "8", "--progress", "quiet", "--out", out.to_str().unwrap()], tmp.path());
    assert_eq!(m.code, Some(0), "{}", m.stderr);
    let runs = runs_of(&out);
    let run = &runs[0];
    assert_eq!(run["error"], serde_json::Value::Null, "{run}");
    // Kept: the token and the finish; counted: the 4,000,000 others.
    assert_eq!(run["events"].as_array().map(Vec::len), Some(2), "{run}");
    assert_eq!(run["empty_events"], EMPTY as u64);
    let line = std::fs::read(out.join("runs.jsonl")).unwrap().len();
    assert!(line < 2000, "the runs.jsonl line is {line} bytes (it was 118 MiB)");
    assert_bounded(&m, "4,000,000 empty events");
}

#[test]
fn events_that_carry_no_token_are_bounded_as_tokens_are() {
    // A token, then `usage` forever (each kept: a usage is a fact): past 4 × 8 + 64 = 96 of
    // them the run ends as a runaway, with the token and the 96 kept.
    let server = Hostile::start(|req, stream| match req.path.as_str() {
        "/v1/models" => models(stream, "m"),
        "/v1/chat/completions" => {
            stream_head(stream);
            let _ = stream.write_all(chunk("a").as_bytes());
            endless(stream, "", &b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":1}}\n\n".repeat(1000));
        }
        _ => respond(stream, "404 Not Found", "text/plain", "no"),
    });
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let m = run_measured(&["run", "--url", &server.url, "--model", "m", "--runs", "1", "--max-tokens", "8", "--progress", "quiet", "--out", out.to_str().unwrap()], tmp.path());
    assert_eq!(m.code, Some(3), "{}", m.stderr);
    let run = &runs_of(&out)[0];
    assert_eq!(run["error"]["class"], "runaway-stream", "{run}");
    let message = run["error"]["message"].as_str().unwrap();
    assert!(message.contains("past 96 events that carry no token text for a cap of 8 tokens"), "{message}");
    assert_eq!(run["events"].as_array().map(Vec::len), Some(1 + 96));
    assert_bounded(&m, "endless usage events");
}

#[test]
fn an_endless_error_body_is_read_to_64_kib_and_kept_to_2000_characters() {
    let server = Hostile::start(|req, stream| match req.path.as_str() {
        "/v1/models" => models(stream, "m"),
        "/v1/chat/completions" => endless_response(stream, "500 Internal Server Error", "text/plain", &[b'e'; 64 << 10]),
        _ => respond(stream, "404 Not Found", "text/plain", "no"),
    });
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let m = run_measured(&["run", "--url", &server.url, "--model", "m", "--runs", "1", "--max-tokens", "8", "--progress", "quiet", "--out", out.to_str().unwrap()], tmp.path());
    assert_eq!(m.code, Some(3), "{}", m.stderr);
    let run = &runs_of(&out)[0];
    assert_eq!(run["error"]["class"], "http-500");
    assert_eq!(run["error"]["message"].as_str().unwrap(), format!("{}…", "e".repeat(2000)));
    assert!(m.elapsed < Duration::from_secs(4), "took {:?} (the body was waited on for 5 s)", m.elapsed);
    assert_bounded(&m, "an endless 500 body");
}

#[test]
fn an_endless_model_list_fails_the_probe_naming_its_bound() {
    let server = Hostile::start(|req, stream| match req.path.as_str() {
        "/v1/models" => endless(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"object\":\"list\",\"data\":[",
            &b"{\"id\":\"m\",\"object\":\"model\"},".repeat(2000),
        ),
        _ => respond(stream, "404 Not Found", "text/plain", "no"),
    });
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let m = run_measured(&["run", "--url", &server.url, "--model", "m", "--runs", "1", "--progress", "quiet", "--out", out.to_str().unwrap()], tmp.path());
    assert_ne!(m.code, Some(0));
    let url = format!("{}/v1/models", server.url);
    assert!(m.stderr.contains(&format!("{url} answered more than 8 MiB, the most benchpass reads of a model list")), "{}", m.stderr);
    assert!(!out.exists(), "no pass folder is created");
    assert!(m.elapsed < Duration::from_secs(5), "took {:?} (the probe read for its 10 s timeout)", m.elapsed);
    assert_bounded(&m, "an endless /v1/models");
}

#[test]
fn endless_version_metrics_flush_and_tokenize_answers_are_cut_at_their_bounds() {
    // Under the vLLM preset benchpass reads /version, POSTs /reset_prefix_cache, scrapes
    // /metrics around each run, and (no usage sent) tries /tokenize: all four never end.
    let server = Hostile::start(|req, stream| match req.path.as_str() {
        "/v1/models" => models(stream, "m"),
        "/version" | "/api/version" | "/props" => endless_response(stream, "200 OK", "application/json", &b"{\"version\":\"".repeat(4096)),
        "/reset_prefix_cache" => endless_response(stream, "500 Internal Server Error", "text/plain", &[b'f'; 64 << 10]),
        "/metrics" => endless_response(stream, "200 OK", "text/plain", &b"x_total 1\n".repeat(4096)),
        "/tokenize" => endless_response(stream, "200 OK", "application/json", &b"{\"tokens\":[".repeat(4096)),
        "/v1/chat/completions" => {
            stream_head(stream);
            for word in ["a", "b", "c"] {
                let _ = stream.write_all(chunk(word).as_bytes());
            }
            let _ = stream.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
        }
        _ => respond(stream, "404 Not Found", "text/plain", "no"),
    });
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let args = ["run", "--url", &server.url, "--preset", "vllm", "--model", "m", "--runs", "1", "--max-tokens", "8", "--progress", "quiet", "--out", out.to_str().unwrap()];
    let m = run_measured(&args, tmp.path());
    assert_eq!(m.code, Some(0), "{}", m.stderr);
    let info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("pass.json")).unwrap()).unwrap();
    let cell = &info["cells"][0];
    // No version could be read within 1 MiB: none is recorded.
    assert_eq!(cell["engine"]["version_source"], "unknown", "{cell}");
    // The flush's first line, cut to 200 characters.
    assert_eq!(cell["cache_flush"]["detail"].as_str().unwrap(), format!("HTTP 500: {}…", "f".repeat(200)));
    let run = &runs_of(&out)[0];
    assert_eq!(run["server_counters"], serde_json::Value::Null, "a scrape past 8 MiB gives nothing: {run}");
    assert_eq!(run["token_count_source"], "estimate", "a /tokenize past its bound gives no count: {run}");
    assert!(m.elapsed < Duration::from_secs(8), "took {:?} (each body was read for its timeout)", m.elapsed);
    assert_bounded(&m, "endless version, flush, metrics and tokenize answers");
}
