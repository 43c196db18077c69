//! Hostile servers: a loopback HTTP server whose every answer a test writes byte for byte, to
//! reproduce what a broken or malicious engine sends. Each serves a bounded number of
//! connections and stops when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use harness::pass::read_pass;

use crate::support::*;

/// One request as the hostile server saw it.
pub struct Request {
    pub path: String,
    pub headers: Vec<(String, String)>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

pub struct Hostile {
    pub url: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

const MAX_CONNECTIONS: usize = 200;

impl Hostile {
    /// Serves each connection on a thread of its own with `answer`, which writes the whole
    /// response (status line included) to the stream.
    pub fn start(answer: impl Fn(&Request, &mut TcpStream) + Send + Sync + 'static) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let answer = Arc::new(answer);
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut served = 0;
                while !stop.load(Ordering::Relaxed) && served < MAX_CONNECTIONS {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            served += 1;
                            let answer = answer.clone();
                            std::thread::spawn(move || serve(stream, &*answer));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        Hostile { url, stop, thread: Some(thread) }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(stream: TcpStream, answer: &(impl Fn(&Request, &mut TcpStream) + ?Sized)) {
    stream.set_nonblocking(false).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut headers = Vec::new();
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.trim_end().split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
            headers.push((name.to_owned(), value.trim().to_owned()));
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let mut stream = stream;
    answer(&Request { path, headers }, &mut stream);
    let _ = stream.flush();
}

/// A complete response with a body; the connection closes after it.
pub fn respond(stream: &mut TcpStream, status: &str, content_type: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// The head of a streamed response; the caller writes the SSE body and closes.
pub fn stream_head(stream: &mut TcpStream) {
    let _ = write!(stream, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
}

pub fn models(stream: &mut TcpStream, id: &str) {
    respond(stream, "200 OK", "application/json", &format!(r#"{{"object":"list","data":[{{"id":"{id}","object":"model"}}]}}"#));
}

fn chunk(content: &str) -> String {
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}}}}]}}\n\n", serde_json::to_string(content).unwrap())
}

const KEY: &str = "sk-hostile-echo-93f0c1d2a7b4";

/// Runs benchpass against `url` with the planted key, returning (runs.jsonl, pass.json, stderr).
fn run_with_key(url: &str, runs: &str) -> (String, String, String) {
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let output = std::process::Command::new(BENCHPASS)
        .args(["run", "--url", url, "--model", "m", "--runs", runs, "--max-tokens", "8", "--idle-timeout", "2"])
        .args(["--api-key-env", "BENCHPASS_HOSTILE_KEY", "--progress", "plain", "--out", out.to_str().unwrap()])
        .env("BENCHPASS_HOSTILE_KEY", KEY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(3), "recorded, with failed runs: {stderr}");
    let runs = std::fs::read_to_string(out.join("runs.jsonl")).unwrap();
    let info = std::fs::read_to_string(out.join("pass.json")).unwrap();
    assert_eq!(read_pass(&out).unwrap().runs.len(), 2);
    (runs, info, stderr)
}

#[test]
fn a_server_that_echoes_the_api_key_does_not_get_it_written() {
    // Run 0: a 401 whose body quotes the Authorization header. Run 1: a stream whose error
    // event quotes it, after one token. /v1/models and /version echo it too.
    let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = Hostile::start(move |req, stream| {
        let auth = req.header("authorization").unwrap_or("").to_owned();
        match req.path.as_str() {
            "/v1/models" => models(stream, &format!("m-{auth}")),
            "/version" => respond(stream, "200 OK", "application/json", &format!(r#"{{"version":"1.0 {auth}"}}"#)),
            "/v1/chat/completions" if n.fetch_add(1, Ordering::SeqCst) % 2 == 0 => {
                respond(stream, "401 Unauthorized", "application/json", &format!(r#"{{"error":{{"message":"invalid header Authorization: {auth}"}}}}"#))
            }
            "/v1/chat/completions" => {
                stream_head(stream);
                let _ = stream.write_all(chunk("hello").as_bytes());
                let _ = write!(stream, "data: {{\"error\":{{\"message\":\"upstream rejected {auth} (key {KEY})\"}}}}\n\n");
                let _ = stream.write_all(b"data: [DONE]\n\n");
            }
            _ => respond(stream, "404 Not Found", "text/plain", "no"),
        }
    });
    let (runs, info, stderr) = run_with_key(&server.url, "2");
    for (what, text) in [("runs.jsonl", &runs), ("pass.json", &info), ("stderr", &stderr)] {
        assert!(!text.contains(KEY), "the key reached {what}: {text}");
        assert!(!text.contains("sk-hostile"), "part of the key reached {what}: {text}");
    }
    // What the server said is kept, with the key cut out.
    assert!(runs.contains("invalid header Authorization: Bearer [redacted]"), "{runs}");
    assert!(runs.contains("upstream rejected Bearer [redacted] (key [redacted])"), "{runs}");
    assert!(stderr.contains("failed (http-401)"), "{stderr}");
}

/// Runs benchpass against `url` (`--runs 1 --max-tokens 8` unless `args` say otherwise) and
/// reads its one run back.
fn one_run(url: &str, args: &[&str]) -> (harness::pass::RunRecord, String) {
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let output = std::process::Command::new(BENCHPASS)
        .args(["run", "--url", url, "--model", "m", "--runs", "1", "--max-tokens", "8", "--progress", "plain", "--out", out.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(3), "recorded, with failed runs: {stderr}");
    let pass = read_pass(&out).unwrap();
    assert_eq!(pass.info.status, harness::pass::PassStatus::Complete);
    (pass.runs.into_iter().next().unwrap(), stderr)
}

/// A server that answers the probes, and streams completions with `body`.
fn streaming(body: impl Fn(&mut TcpStream) + Send + Sync + 'static) -> Hostile {
    Hostile::start(move |req, stream| match req.path.as_str() {
        "/v1/models" => models(stream, "m"),
        "/v1/chat/completions" => {
            stream_head(stream);
            body(stream);
        }
        _ => respond(stream, "404 Not Found", "text/plain", "no"),
    })
}

#[test]
fn a_stream_that_never_ends_is_cut_past_its_cap_and_kept() {
    // Tokens as fast as the socket takes them, forever (bounded here by the test: 100,000).
    let server = streaming(|stream| {
        for _ in 0..100_000 {
            if stream.write_all(chunk("tok ").as_bytes()).is_err() {
                return;
            }
        }
    });
    let (run, _) = one_run(&server.url, &[]);
    let error = run.error.as_ref().unwrap();
    assert_eq!(error.class, "runaway-stream", "{}", error.message);
    // A cap of 8 tokens allows 4 × 8 + 64 = 96 token events; the 97th ends the run.
    assert_eq!(run.events.iter().filter(|e| e.carries_tokens()).count(), 97);
    assert!(error.message.contains("cap of 8 tokens"), "{}", error.message);
}

#[test]
fn a_line_that_never_ends_is_cut_at_its_bound() {
    // One token, then a data line that grows without a newline: 4 MiB, past the 1 MiB bound.
    let server = streaming(|stream| {
        let _ = stream.write_all(chunk("a").as_bytes());
        let _ = stream.write_all(b"data: {\"choices\":[{\"delta\":{\"content\":\"");
        let block = vec![b'x'; 64 << 10];
        for _ in 0..64 {
            if stream.write_all(&block).is_err() {
                return;
            }
        }
    });
    let (run, _) = one_run(&server.url, &[]);
    assert_eq!(run.error.as_ref().unwrap().class, "oversized-event");
    assert_eq!(run.events.iter().filter(|e| e.carries_tokens()).count(), 1, "the token before it is kept");
}

#[test]
fn keep_alive_comments_do_not_hold_off_the_idle_timeout() {
    // Two tokens, then `: ping` every 0.5 s for 10 s: idle since the second token.
    let server = streaming(|stream| {
        let _ = stream.write_all(chunk("a").as_bytes());
        let _ = stream.write_all(chunk("b").as_bytes());
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(500));
            if stream.write_all(b": ping\n\n").is_err() {
                return;
            }
        }
    });
    let started = std::time::Instant::now();
    let (run, _) = one_run(&server.url, &["--idle-timeout", "1.5"]);
    assert_eq!(run.error.as_ref().unwrap().class, "idle-timeout");
    assert_eq!(run.events.iter().filter(|e| e.carries_tokens()).count(), 2);
    assert!(started.elapsed() < Duration::from_secs(8), "the pings held the timeout off: {:?}", started.elapsed());
}

#[test]
fn a_compressed_stream_and_a_redirect_are_named_and_a_huge_version_is_cut() {
    let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = Hostile::start(move |req, stream| match req.path.as_str() {
        "/v1/models" => models(stream, "m"),
        "/version" => respond(stream, "200 OK", "application/json", &format!(r#"{{"version":"{}"}}"#, "v".repeat(10_000))),
        "/v1/chat/completions" if n.fetch_add(1, Ordering::SeqCst) == 0 => {
            // A gzip stream (its bytes are not events), whatever Accept-Encoding said.
            assert_eq!(req.header("accept-encoding"), Some("identity"));
            let _ = write!(stream, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\nconnection: close\r\n\r\n");
            let _ = stream.write_all(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0]);
        }
        "/v1/chat/completions" => {
            let _ = write!(stream, "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://127.0.0.2:9/elsewhere\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
        _ => respond(stream, "404 Not Found", "text/plain", "no"),
    });
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let output = std::process::Command::new(BENCHPASS)
        .args(["run", "--url", &server.url, "--model", "m", "--runs", "2", "--max-tokens", "8", "--progress", "quiet", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = read_pass(&out).unwrap();
    let errors: Vec<_> = pass.runs.iter().map(|r| r.error.as_ref().unwrap()).collect();
    assert_eq!(errors[0].class, "not-a-stream");
    assert!(errors[0].message.contains("Content-Encoding: gzip"), "{}", errors[0].message);
    assert_eq!(errors[1].class, "http-307");
    assert!(errors[1].message.contains("redirected to http://127.0.0.2:9/elsewhere (not followed"), "{}", errors[1].message);
    // 10,000 characters of version: 200 kept, and the cut marked.
    let version = &pass.info.cells[0].engine.version;
    assert_eq!(version.chars().count(), 201);
    assert!(version.ends_with('…'));
}

#[test]
fn a_stream_that_contradicts_itself_is_recorded_with_its_contradictions() {
    let server = streaming(|stream| {
        for word in ["a", "b", "c"] {
            let _ = stream.write_all(chunk(word).as_bytes());
        }
        let _ = stream.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n");
        let _ = stream.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
        let _ = stream.write_all(b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\n");
        let _ = stream.write_all(b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":3}}\n\n");
        let _ = stream.write_all(b"data: [DONE]\n\n");
    });
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let output = benchpass(&["run", "--url", &server.url, "--model", "m", "--runs", "1", "--max-tokens", "3", "--progress", "quiet", "--out", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let run = read_pass(&out).unwrap().runs.remove(0);
    // The last of each is kept, as before; what it contradicted is on record beside it.
    assert_eq!((run.finish_reason.as_deref(), run.prompt_tokens), (Some("stop"), Some(50)));
    assert_eq!(run.stream_conflicts.len(), 2, "{:?}", run.stream_conflicts);
    assert_eq!(run.stream_conflicts[0], "finish_reason `length`, then `stop`");
    assert!(run.stream_conflicts[1].contains("\"prompt_tokens\":5") && run.stream_conflicts[1].contains("\"prompt_tokens\":50"));
}
