//! Engine facts read from the engines' sources, acted on as preset data: MTPLX's session cache
//! flushed before each cell and bypassed by a header (a recording server shaped as MTPLX
//! says what arrived), a quality workload refused at `plan check` on an engine that refuses
//! its logprobs, oMLX's cache folder found by oMLX's own rule before the clear, and what
//! `plan presets` lists of each engine.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harness::pass::read_pass;

use crate::support::*;

/// One request as the recording server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A loopback server shaped as MTPLX (health, models, `POST /admin/cache/clear`, a streamed
/// chat completion with usage) that records every request; it serves a bounded number of
/// connections and stops with the test.
struct Recording {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recording {
    fn start() -> Recording {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(200).flatten() {
                let log = log.clone();
                std::thread::spawn(move || answer(stream, &log));
            }
        });
        Recording { url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn answer(stream: TcpStream, log: &Mutex<Vec<Seen>>) {
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut words = line.split_whitespace();
    let (method, path) = (words.next().unwrap_or_default().to_owned(), words.next().unwrap_or("/").to_owned());
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
    let seen = Seen { method: method.clone(), path: path.clone(), headers, body: String::from_utf8_lossy(&body).into_owned() };
    log.lock().unwrap().push(seen);
    let mut stream = stream;
    let respond = |stream: &mut TcpStream, status: &str, body: &str| {
        let _ = write!(stream, "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
    };
    match (method.as_str(), path.as_str()) {
        ("GET", "/health") => respond(&mut stream, "200 OK", r#"{"status":"ok"}"#),
        ("GET", "/v1/models") => respond(&mut stream, "200 OK", r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#),
        ("POST", "/admin/cache/clear") => respond(&mut stream, "200 OK", r#"{"cleared":1}"#),
        ("POST", "/v1/chat/completions") => {
            let _ = write!(stream, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
            for event in [
                r#"{"choices":[{"index":0,"delta":{"content":"one"}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":" two"},"finish_reason":"length"}]}"#,
                r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}"#,
                "[DONE]",
            ] {
                let _ = write!(stream, "data: {event}\n\n");
                let _ = stream.flush();
            }
        }
        _ => respond(&mut stream, "404 Not Found", r#"{"error":"no such route"}"#),
    }
    let _ = stream.flush();
}

fn write_plan(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn mtplx_has_its_session_cache_flushed_first_and_bypassed_on_every_request() {
    let server = Recording::start();
    let tmp = temp_dir();
    let plan = write_plan(
        tmp.path(),
        "mtplx.toml",
        &format!(
            "[request]\nextra = {{ reasoning_effort = \"none\" }}\n\n[[workloads]]\nkind = \"sustained\"\nruns = 2\nmax_tokens = 2\n\n\
             [[models]]\nname = \"m\"\n\n[[engines]]\nname = \"mtplx\"\npreset = \"mtplx\"\nurl = \"{}\"\n\n[[cells]]\nengine = \"mtplx\"\nmodel = \"m\"\n",
            server.url
        ),
    );
    let dry = benchpass(&["run", plan.to_str().unwrap(), "--dry-run"]);
    let dry = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.contains("c0: mtplx × m\n  empty the server's prefix cache: POST /admin/cache/clear\n"), "{dry}");

    let out = tmp.path().join("pass");
    let run = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--gap-scale", "0", "--progress", "plain"]);
    let pass = read_pass(&out).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&run.stderr)));
    assert_eq!(pass.runs.len(), 2);
    assert!(pass.runs.iter().all(|r| r.error.is_none()), "{:?}", pass.runs.iter().map(|r| &r.error).collect::<Vec<_>>());

    let seen = server.seen();
    let flush = seen.iter().position(|s| s.method == "POST" && s.path == "/admin/cache/clear").expect("the flush was posted");
    let chats: Vec<(usize, &Seen)> = seen.iter().enumerate().filter(|(_, s)| s.path == "/v1/chat/completions").collect();
    // The probe of the preset's assumed values first (docs/plans.md, Assumed values, probed),
    // then the flush, so that the probe's prompt is not in the cache the runs meet; then the
    // two runs.
    assert_eq!(chats.len(), 3, "{seen:?}");
    let (probe_at, probe) = chats[0];
    assert!(probe.body.contains("Reply with the single word OK.") && probe_at < flush, "{seen:?}");
    for (at, chat) in &chats {
        assert!(*at > flush || *at == probe_at, "the flush comes before the cell's runs");
        assert_eq!(chat.header("x-mtplx-cache-mode"), Some("bypass"), "{chat:?}");
        let body: serde_json::Value = serde_json::from_str(&chat.body).unwrap();
        // The preset's own field, beside the plan's.
        assert_eq!((body["enable_thinking"].clone(), body["reasoning_effort"].clone()), (false.into(), "none".into()), "{body}");
    }
    // No other request carries the header: it is the preset's for its workloads' requests.
    assert!(seen.iter().filter(|s| s.path != "/v1/chat/completions").all(|s| s.header("x-mtplx-cache-mode").is_none()));
    let record = pass.info.cells[0].cache_flush.as_ref().expect("recorded on the cell");
    assert_eq!((record.request.as_str(), record.status, record.flushed), ("POST /admin/cache/clear", Some(200), true));
}

#[test]
fn a_quality_workload_on_an_engine_that_refuses_its_logprobs_is_refused_at_plan_check() {
    let tmp = temp_dir();
    let plan = |preset: &str, top: &str| {
        write_plan(
            tmp.path(),
            &format!("{preset}{top}.toml"),
            &format!(
                "[[models]]\nname = \"m\"\n\n[[engines]]\nname = \"e\"\npreset = \"{preset}\"\nurl = \"http://127.0.0.1:9\"\n\n[[cells]]\nengine = \"e\"\nmodel = \"m\"\n\n\
                 [[workloads]]\nkind = \"quality\"\nruns = 1\n{top}\n"
            ),
        )
    };
    // mlx-lm raises above 11 alternatives; the default asks for 20. Line 14 is the kind.
    let check = benchpass(&["plan", "check", plan("mlx-lm", "").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success());
    assert!(
        stderr.contains("mlx-lm.toml:14: engine `e` (preset `mlx-lm`) cannot run this quality workload: it refuses `top_logprobs` above 11, and this workload asks for 20"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: set `top_logprobs = 11` on this workload") && stderr.contains("mlx_lm/server.py#L1138-L1139"), "{stderr}");
    let capped = benchpass(&["plan", "check", plan("mlx-lm", "top_logprobs = 11").to_str().unwrap()]);
    assert!(capped.status.success(), "{}", String::from_utf8_lossy(&capped.stderr));

    // Splash answers any request for logprobs with 400: no cap makes it work.
    let check = benchpass(&["plan", "check", plan("splash", "top_logprobs = 1").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success());
    assert!(stderr.contains(":14: engine `e` (preset `splash`) cannot run this quality workload: it answers every request for logprobs with an error"), "{stderr}");
    assert!(stderr.contains("hint: run the quality workload in a plan without engine `e`"), "{stderr}");
    // MTPLX answers them for one unstreamed token only (mtplx 2.12.2, docs/plans.md).
    let check = benchpass(&["plan", "check", plan("mtplx", "top_logprobs = 1").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success());
    assert!(stderr.contains(":14: engine `e` (preset `mtplx`) cannot run this quality workload: it answers logprobs only unstreamed and for one token"), "{stderr}");
    // The reference engine answers them.
    assert!(benchpass(&["plan", "check", plan("benchpass-sim", "").to_str().unwrap()]).status.success());
}

#[cfg(unix)]
#[test]
fn omlx_has_the_cache_folder_its_settings_name_cleared_and_nothing_else() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let home = tmp.path().join("home");
    // The default folder, which the settings below move away from: never touched.
    let default = home.join(".omlx/cache");
    std::fs::create_dir_all(&default).unwrap();
    std::fs::write(default.join("keep.safetensors"), "old").unwrap();
    // OMLX_BASE_PATH names the base; its settings.json names the cache folder.
    let base = tmp.path().join("omlx-base");
    let ssd = tmp.path().join("ssd/omlx-cache");
    std::fs::create_dir_all(ssd.join("a")).unwrap();
    std::fs::write(ssd.join("a/block.safetensors"), [0u8; 10]).unwrap();
    std::fs::write(ssd.join("b.safetensors"), [0u8; 5]).unwrap();
    std::fs::create_dir_all(&base).unwrap();
    std::fs::write(base.join("settings.json"), serde_json::json!({"cache": {"enabled": true, "ssd_cache_dir": ssd}}).to_string()).unwrap();
    let port = free_port();
    let plan = write_plan(
        tmp.path(),
        "omlx.toml",
        &format!(
            "[[workloads]]\nkind = \"sustained\"\nruns = 1\nwarmup = 1\nmax_tokens = 8\n\n[[models]]\nname = \"m\"\n\n\
             [[engines]]\nname = \"omlx\"\npreset = \"omlx\"\nport = {port}\n\
             start = [\"{{benchpass}}\", \"sim\", \"--port\", \"{{port}}\", \"--model\", \"{{model}}\", \"--decode-tps\", \"2000\"]\n\
             env = {{ OMLX_BASE_PATH = {:?} }}\n\n[[cells]]\nengine = \"omlx\"\nmodel = \"m\"\n",
            base.display().to_string()
        ),
    );
    let with_home = |args: &[&str]| std::process::Command::new(BENCHPASS).args(args).env("HOME", &home).env_remove("OMLX_BASE_PATH").output().unwrap();

    // plan check says that oMLX keeps the arguments it is started with.
    let check = with_home(&["plan", "check", plan.to_str().unwrap()]);
    let said = format!("{}{}", String::from_utf8_lossy(&check.stdout), String::from_utf8_lossy(&check.stderr));
    assert!(check.status.success(), "{said}");
    assert!(said.contains("saves the arguments it is started with into settings.json in its base folder") && said.contains("--port, --model, --decode-tps"), "{said}");
    // The dry run names the folder the rule gives, and the rule.
    let dry = with_home(&["run", plan.to_str().unwrap(), "--dry-run"]);
    let dry = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.contains(&format!("  clear KV cache {} (`cache.ssd_cache_dir` in <base>/settings.json (base: $OMLX_BASE_PATH", ssd.display())), "{dry}");

    let out = tmp.path().join("pass");
    let run = with_home(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--gap-scale", "0", "--progress", "plain"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let pass = read_pass(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(pass.runs.iter().all(|r| r.error.is_none()), "{stderr}");
    assert_eq!(std::fs::read_dir(&ssd).unwrap().count(), 0, "the folder the settings name was emptied");
    assert!(default.join("keep.safetensors").exists(), "the default folder is not oMLX's here");
    // Where the cell records its clear (its engine log): the folder, which rule gave it, and
    // what went: a/, a/block.safetensors, b.safetensors; 15 bytes.
    let log = std::fs::read_to_string(out.join("logs/c0-omlx.log")).unwrap();
    let line = format!(
        "cleared the KV cache {} (from `cache.ssd_cache_dir` in <base>/settings.json (base: $OMLX_BASE_PATH, {})): 3 entries, 15 bytes (2 files, 0 links, 1 folders)",
        ssd.display(),
        base.display()
    );
    assert!(log.contains(&line), "{log}");
    assert!(!log.contains("warning: the KV-cache folder"), "{log}");

    // Again, the folder now empty while the cache is on: a warning that names the fix.
    let again = tmp.path().join("again");
    let run = with_home(&["run", plan.to_str().unwrap(), "--out", again.to_str().unwrap(), "--gap-scale", "0", "--progress", "plain"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains(&format!("warning: the KV-cache folder {} was empty while the engine's cache is on", ssd.display())), "{stderr}");
    assert!(stderr.contains("set `kv_cache_dir` on the engine in the plan"), "{stderr}");

    // The cache turned off in the settings: nothing is cleared, and the log says why.
    std::fs::write(base.join("settings.json"), r#"{"cache": {"enabled": false}}"#).unwrap();
    std::fs::write(base.join("cache-file-of-another-tool"), "x").unwrap();
    let off = tmp.path().join("off");
    with_home(&["run", plan.to_str().unwrap(), "--out", off.to_str().unwrap(), "--gap-scale", "0", "--progress", "plain"]);
    let log = std::fs::read_to_string(off.join("logs/c0-omlx.log")).unwrap();
    assert!(log.contains("no KV-cache folder to clear: the cache is off: `cache.enabled` is false in <base>/settings.json"), "{log}");
    assert!(base.join("cache-file-of-another-tool").exists() && default.join("keep.safetensors").exists());
}

#[test]
fn plan_presets_lists_what_each_engine_serves_and_marks_what_is_assumed() {
    let out = benchpass(&["plan", "presets", "mlx-lm"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  logprobs: yes, top_logprobs at most 11\n      source: ml-explore/mlx-lm@d78bf58e217c mlx_lm/server.py#L1138-L1139"), "{text}");
    for line in ["  stream_usage: true\n", "  cached_tokens: true\n", "  tool_calls: true\n", "  ignore_eos: logit-bias\n"] {
        assert!(text.contains(line), "{line}: {text}");
    }
    let text = String::from_utf8_lossy(&benchpass(&["plan", "presets", "kapitsa"]).stdout).into_owned();
    for key in ["logprobs", "stream_usage", "cached_tokens", "tool_calls", "ignore_eos", "health_path"] {
        assert!(text.lines().any(|l| l.starts_with(&format!("  {key}: ")) && l.ends_with("(assumed: not verified in the engine's source)")), "{key}: {text}");
    }
    let text = String::from_utf8_lossy(&benchpass(&["plan", "presets", "splash"]).stdout).into_owned();
    assert!(text.contains("  logprobs: no (a request for them is refused)\n      source: incoai/splash@036ff131d007"), "{text}");
    let text = String::from_utf8_lossy(&benchpass(&["plan", "presets", "mtplx"]).stdout).into_owned();
    assert!(text.contains("  request_headers: [{\"name\":\"x-mtplx-cache-mode\""), "{text}");
    let text = String::from_utf8_lossy(&benchpass(&["plan", "presets", "omlx"]).stdout).into_owned();
    assert!(text.contains("  kv_cache_lookup: {") && text.contains("$OMLX_BASE_PATH") && text.contains("  saves_arguments: settings.json in its base folder"), "{text}");
}
