//! `https://` servers: rustls with the system's roots, and `--ca-cert` for a server whose
//! certificate no public root signed. The server is Python's HTTPS server on loopback with a
//! certificate made here.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use crate::support::*;

/// An HTTPS server that lists one model and streams three tokens; killed when dropped.
struct HttpsServer {
    child: Child,
    url: String,
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const SERVER: &str = r#"
import http.server, json, ssl, sys
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def reply(self, status, body, kind):
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path == "/v1/models":
            self.reply(200, json.dumps({"data": [{"id": "tls-model"}]}).encode(), "application/json")
        else:
            self.reply(404, b"no", "text/plain")
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path != "/v1/chat/completions":
            return self.reply(404, b"no", "text/plain")
        events = [{"choices": [{"index": 0, "delta": {"content": w}}]} for w in ["a", " b", " c"]]
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
        events.append({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}})
        body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
        self.reply(200, body, "text/event-stream")
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

fn start(dir: &std::path::Path) -> (HttpsServer, std::path::PathBuf) {
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let mut child = Command::new("python3")
        .args(["-c", SERVER, cert.to_str().unwrap(), key.to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut port = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut port).unwrap();
    let url = format!("https://127.0.0.1:{}", port.trim());
    (HttpsServer { child, url }, cert)
}

#[test]
fn an_https_server_is_measured_with_its_certificate_trusted_and_refused_without() {
    let tmp = temp_dir();
    let (server, cert) = start(tmp.path());
    let out = tmp.path().join("pass");
    let args = ["run", "--url", &server.url, "--runs", "1", "--max-tokens", "3", "--progress", "quiet", "--out", out.to_str().unwrap()];

    // No public root signed it: refused before anything is written, and the message says why.
    let refused = benchpass(&args);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.to_lowercase().contains("certificate"), "{stderr}");
    assert!(!out.exists());

    let trusted = benchpass(&[&args[..], &["--ca-cert", cert.to_str().unwrap()]].concat());
    assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));
    let pass = harness::pass::read_pass(&out).unwrap();
    let run = &pass.runs[0];
    assert_eq!((run.error.as_ref(), run.completion_tokens, pass.info.cells[0].model.as_str()), (None, Some(3), "tls-model"));
    assert_eq!(pass.info.cells[0].engine.url.as_deref(), Some(server.url.as_str()));
}
