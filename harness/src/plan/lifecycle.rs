//! Engine lifecycle: clear the persistent KV cache, start the server fresh with its output
//! captured, wait (bounded) until it answers, and stop it again.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use anyhow::Context as _;

use super::engine_files::VersionArgv as _;

/// Values for the placeholders of `start`: `{port}`, `{host}`, `{model}`, `{weights}`, `{benchpass}`.
pub struct Placeholders {
    pub port: Option<u16>,
    pub model: String,
    pub weights: Option<PathBuf>,
}

impl Placeholders {
    /// The command line with placeholders filled and a leading `~/` expanded in the program.
    pub fn fill_argv(&self, argv: &[String]) -> Vec<String> {
        argv.iter()
            .enumerate()
            .map(|(i, w)| {
                let filled = self.fill(w);
                if i == 0 { super::file::expand_home(&filled).display().to_string() } else { filled }
            })
            .collect()
    }

    /// Each placeholder replaced once, in one pass over `word`: a value that itself holds a
    /// placeholder (a model id with `{benchpass}` in it) is inserted as it is, never expanded.
    pub fn fill(&self, word: &str) -> String {
        let benchpass = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "benchpass".to_owned());
        let port = self.port.map(|p| p.to_string()).unwrap_or_default();
        let weights = self.weights.as_ref().map(|w| w.display().to_string()).unwrap_or_default();
        let values: [(&str, &str); 5] =
            [("{port}", &port), ("{host}", "127.0.0.1"), ("{model}", &self.model), ("{weights}", &weights), ("{benchpass}", &benchpass)];
        let mut out = String::with_capacity(word.len());
        let mut rest = word;
        while let Some(at) = rest.find('{') {
            out.push_str(&rest[..at]);
            let tail = &rest[at..];
            match values.iter().find(|(name, _)| tail.starts_with(name)) {
                Some((name, value)) => {
                    out.push_str(value);
                    rest = &tail[name.len()..];
                }
                None => {
                    out.push('{');
                    rest = &tail[1..];
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// Appends one line of benchpass's own to an engine's log (what it cleared, when it stopped
/// an orphan), so that the log tells the whole story of the engine's turn.
pub fn log_line(log: &Path, line: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log).with_context(|| format!("opening {}", log.display()))?;
    writeln!(file, "benchpass: {line}").with_context(|| format!("writing {}", log.display()))
}

/// Before clearing a cache and starting: an engine left running by a killed pass (its pid file
/// says so) is stopped; anything else that answers at `health_url` is refused, since a server
/// benchpass did not start fresh would mix its cache and state into the figures.
pub async fn make_way(log: &Path, health_url: &str) -> anyhow::Result<()> {
    stop_orphan(&log.with_extension("pid"), log).await;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(2)).build()?;
    if http.get(health_url).send().await.is_ok() {
        anyhow::bail!("something already answers at {health_url}: stop it first");
    }
    Ok(())
}

/// Before a pass's first cell: every port an engine benchpass starts is to listen on is free
/// (`engines`: each engine's name and its URL). A port taken would fail that engine's cells one
/// run at a time, each after the gap before it, so the pass is refused before anything is
/// written, naming each port taken and the process that holds it where this machine says.
pub fn check_ports<'a>(engines: impl IntoIterator<Item = (&'a str, &'a str)>) -> anyhow::Result<()> {
    let mut seen = std::collections::HashSet::new();
    let mut taken = Vec::new();
    for (engine, url) in engines {
        if !seen.insert(url) {
            continue;
        }
        if let Some(why) = port_taken(url) {
            taken.push(format!("engine `{engine}` ({url}): {why}"));
        }
    }
    if taken.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "{} taken, so the plan is refused before its first cell (nothing was started or written):\n{}\nstop what holds it, or give the engine another `port` in the plan",
        if taken.len() == 1 { "a port the plan's engines need is".to_owned() } else { format!("{} ports the plan's engines need are", taken.len()) },
        taken.join("\n")
    )
}

/// Why the port of `url` cannot be an engine's: something accepts connections there, or (on a
/// loopback host) it is bound, say on every address; `None` when it is free, or when the URL
/// names no host and port this check can try.
fn port_taken(url: &str) -> Option<String> {
    use std::net::{TcpListener, TcpStream, ToSocketAddrs as _};
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?.trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = parsed.port_or_known_default()?;
    let addrs: Vec<std::net::SocketAddr> = (host.as_str(), port).to_socket_addrs().ok()?.collect();
    let answers = addrs.iter().any(|a| TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok());
    let bound = || {
        addrs.iter().filter(|a| a.ip().is_loopback()).any(|a| matches!(TcpListener::bind(a), Err(e) if e.kind() == std::io::ErrorKind::AddrInUse))
    };
    if !answers && !bound() {
        return None;
    }
    let who = match crate::memory::listener_of(url) {
        Some(listener) => listener.describe(),
        // Bound, yet nothing accepts: most often an outgoing connection's own end, which the
        // kernel takes from its ephemeral range (and keeps a minute in TIME_WAIT).
        None if !answers => format!(
            "a socket that does not listen, most likely an outgoing connection's local end (the kernel hands those ports out; \
             a port below {} is never handed out that way)",
            crate::ports::first_ephemeral()
        ),
        None => format!("a process this machine does not name (another user's, or one in a container: `lsof -i :{port}` may say)"),
    };
    Some(format!("port {port} is taken by {who}"))
}

/// Stops every engine an interrupted pass in `dir` left running (its pid files under `logs/`
/// say which), before a resume checks the ports: the port an orphan holds is the resumed
/// pass's own.
pub async fn stop_orphans(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir.join("logs")) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "pid") {
            stop_orphan(&path, &path.with_extension("log")).await;
        }
    }
}

/// A server benchpass started, in a process group of its own; stopped with everything it
/// spawned on [`Engine::stop`] or when dropped.
pub struct Engine {
    child: Child,
    stop_command: Option<Vec<String>>,
    pid_file: PathBuf,
    /// Stopped and reaped: its pid (and group id) may belong to another process now.
    stopped: bool,
}

/// What the pid file holds: the engine's pid and its start time, so that a pid the OS has
/// since given to another process is never taken for the engine.
fn pid_file_text(pid: u32) -> String {
    match crate::platform::start_time(pid) {
        Some(started) => format!("{pid} {started}\n"),
        None => format!("{pid}\n"),
    }
}

/// An engine that an earlier benchpass started and could not stop (it was killed) still holds
/// its port. Its pid file says which process it is; it is stopped, with its whole process
/// group, only if a process with that pid and that start time still runs.
async fn stop_orphan(pid_file: &Path, log: &Path) {
    let Ok(text) = std::fs::read_to_string(pid_file) else { return };
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    let (Some(Ok(pid)), Some(Ok(started))) = (fields.next(), fields.next()) else {
        // No start time recorded (the OS gives none): the pid alone may be anyone's now.
        let _ = std::fs::remove_file(pid_file);
        return;
    };
    let Ok(pid) = u32::try_from(pid) else { return };
    if crate::platform::start_time(pid) != Some(started) {
        let _ = std::fs::remove_file(pid_file);
        return;
    }
    let note = format!("stopping engine process {pid} and its process group, left running by an interrupted pass");
    eprintln!("{note}");
    let _ = log_line(log, &note);
    stop_group_and_wait(pid, || !crate::platform::group_alive(pid), Duration::from_secs(10)).await;
    let _ = std::fs::remove_file(pid_file);
}

/// Asks the group led by `leader` to stop, waits up to `grace` for `gone`, then kills the group.
async fn stop_group_and_wait(leader: u32, mut gone: impl FnMut() -> bool, grace: Duration) {
    use crate::platform::{stop_group, Stop};
    stop_group(leader, Stop::Graceful);
    let deadline = tokio::time::Instant::now() + grace;
    while !gone() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Whatever is left of the group goes now: the leader, or workers it left behind.
    stop_group(leader, Stop::Force);
}

/// Starts `argv` with its stdout and stderr appended to `log`, then waits until `health_url`
/// answers 200, the process exits (an error naming the log) or `timeout` passes.
pub async fn start(
    argv: &[String],
    env: &std::collections::BTreeMap<String, String>,
    log: &Path,
    health_url: &str,
    timeout: Duration,
    stop_command: Option<Vec<String>>,
) -> anyhow::Result<Engine> {
    let (program, args) = argv.split_first().context("`start` is empty")?;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(2)).build()?;
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let out = std::fs::OpenOptions::new().create(true).append(true).open(log).with_context(|| format!("opening {}", log.display()))?;
    let mut command = crate::platform::command(program);
    command.args(args).envs(env).stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out);
    crate::platform::own_process_group(&mut command);
    let child = command.spawn().with_context(|| format!("starting `{program}`"))?;
    let pid_file = log.with_extension("pid");
    std::fs::write(&pid_file, pid_file_text(child.id())).with_context(|| format!("writing {}", pid_file.display()))?;
    let mut engine = Engine { child, stop_command, pid_file, stopped: false };
    let deadline = tokio::time::Instant::now() + timeout;
    // Engines answer 503 while they load the model (llama.cpp does): that is waited out too.
    loop {
        if let Some(status) = engine.child.try_wait()? {
            anyhow::bail!("the engine exited while starting ({status}); its output is in {}", log.display());
        }
        let last_answer = match http.get(health_url).send().await {
            Ok(response) if response.status().is_success() => return Ok(engine),
            Ok(response) => format!("HTTP {}", response.status()),
            Err(e) if e.is_connect() => "connection refused".to_owned(),
            Err(_) => "no answer".to_owned(),
        };
        if tokio::time::Instant::now() >= deadline {
            engine.stop().await;
            anyhow::bail!(
                "{health_url} did not answer 200 within {:.0} s (last: {last_answer}); the engine's output is in {}",
                timeout.as_secs_f64(),
                log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

impl Engine {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The stop command if the plan gives one, else SIGTERM to the engine's process group;
    /// SIGKILL to the group after 15 s, and to whatever of the group outlived the engine.
    pub async fn stop(&mut self) {
        let pid = self.child.id();
        if let Some(argv) = self.stop_command.as_ref().filter(|argv| !argv.is_empty()) {
            let _ = crate::platform::command(&argv[0]).args(&argv[1..]).stdout(Stdio::null()).stderr(Stdio::null()).status();
            for _ in 0..150 {
                if matches!(self.child.try_wait(), Ok(Some(_))) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        let child = &mut self.child;
        stop_group_and_wait(pid, || matches!(child.try_wait(), Ok(Some(_))), Duration::from_secs(15)).await;
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stopped = true;
        let _ = std::fs::remove_file(&self.pid_file);
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if self.stopped {
            return;
        }
        // Dropped without a stop (an error, a panic): no time for grace, the group goes now.
        crate::platform::stop_group(self.child.id(), crate::platform::Stop::Force);
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.pid_file);
    }
}

/// Empties the prefix cache of a server benchpass did not start, through the engine's endpoint
/// (SGLang `/flush_cache`, vLLM `/reset_prefix_cache`): such a server is not fresh, and its
/// cache would serve the pass's prompts from earlier requests. What the engine answered is
/// recorded; a refusal is not an error (the runs go ahead, the record says so).
pub async fn flush_cache(http: &reqwest::Client, base: &str, api_key: Option<&str>, flush: super::presets::CacheFlush) -> crate::pass::CacheFlushRecord {
    let request = format!("POST {}", flush.path);
    let mut post = http.post(format!("{base}{}", flush.path)).timeout(Duration::from_secs(60));
    if let Some(key) = api_key {
        post = post.bearer_auth(key);
    }
    let (status, detail) = match post.send().await {
        Ok(response) => {
            let status = response.status();
            let body = crate::http_body::read_limited(response, crate::http_body::FLUSH_BYTES).await;
            let body = body.map(|b| b.text().into_owned()).unwrap_or_default();
            let first_line = body.lines().map(str::trim).find(|l| !l.is_empty()).map(crate::probe::server_string);
            let detail = match status.as_u16() {
                s if (200..300).contains(&s) => None,
                404 => Some(format!("HTTP 404: {}", flush.when_missing)),
                s => Some(format!("HTTP {s}{}", first_line.map(|l| format!(": {l}")).unwrap_or_default())),
            };
            (Some(status.as_u16()), detail)
        }
        Err(e) => (None, Some(format!("no answer: {e}"))),
    };
    crate::pass::CacheFlushRecord { request, status, flushed: detail.is_none(), detail }
}

/// The line the terminal gets about a flush: done, or a warning that says why not.
pub fn flush_note(record: &crate::pass::CacheFlushRecord) -> String {
    match &record.detail {
        None => format!("emptied the server's prefix cache: {}", record.request),
        Some(why) => format!("warning: {} did not empty the prefix cache ({why}): the runs may be served from it", record.request),
    }
}

/// The engine's version the way its preset (or the plan's `command`) reads it: the command's
/// first line, or the preset's endpoint field; `None` when that gives nothing, and the generic
/// probe's answer stands. The source names the program (not its local path) and its arguments,
/// or `GET <path>`.
pub async fn read_version(
    preset: &super::presets::Preset,
    command: Option<Vec<String>>,
    executable: Option<&Path>,
    http: &reqwest::Client,
    base: &str,
) -> Option<(String, String)> {
    use serde_json::Value;
    if let Some(argv) = command.or_else(|| preset.version.argv(executable)) {
        let version = version_from_command(&argv)?;
        // The program by name: its hash identifies it; a local path would only leak.
        let program = Path::new(&argv[0]).file_name().map_or_else(|| argv[0].clone(), |n| n.to_string_lossy().into_owned());
        let source = std::iter::once(program).chain(argv[1..].iter().cloned()).collect::<Vec<_>>().join(" ");
        return Some((crate::probe::server_string(&version), source));
    }
    let super::presets::VersionFrom::Endpoint { path, pointer } = preset.version else { return None };
    let body = crate::probe::version_json(http.get(format!("{base}{path}"))).await?;
    let version = body.pointer(pointer).and_then(Value::as_str).filter(|v| !v.is_empty())?;
    Some((crate::probe::server_string(version), format!("GET {path}")))
}

/// The first non-empty line a command prints (on stdout or stderr), if it succeeds.
pub fn version_from_command(argv: &[String]) -> Option<String> {
    let (program, args) = argv.split_first()?;
    let out = crate::platform::command(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = [out.stdout, out.stderr].concat();
    let line = String::from_utf8_lossy(&text).lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_owned)?;
    Some(version_of_line(line))
}

/// A JSON object's `version` string (`lms version --json` prints `{"version": "…"}`), else the
/// line as printed.
fn version_of_line(line: String) -> String {
    let json = serde_json::from_str::<serde_json::Value>(&line).ok();
    match json.as_ref().and_then(|v| v.get("version")).and_then(serde_json::Value::as_str) {
        Some(version) if !version.trim().is_empty() => version.trim().to_owned(),
        _ => line,
    }
}

#[cfg(test)]
mod fill_tests {
    use super::*;

    #[test]
    fn a_version_printed_as_json_is_its_version_field() {
        assert_eq!(version_of_line(r#"{"version": "07b7252"}"#.to_owned()), "07b7252");
        assert_eq!(version_of_line("rapid-mlx 0.16.8".to_owned()), "rapid-mlx 0.16.8");
        assert_eq!(version_of_line(r#"{"version": ""}"#.to_owned()), r#"{"version": ""}"#);
        assert_eq!(version_of_line("{not json".to_owned()), "{not json");
    }

    #[test]
    fn placeholders_are_filled_once_and_a_value_holding_one_is_not_expanded() {
        let fill = Placeholders { port: Some(8080), model: "evil-{benchpass}-{port}".to_owned(), weights: None };
        assert_eq!(fill.fill("--model={model} --port {port} {unknown} {"), "--model=evil-{benchpass}-{port} --port 8080 {unknown} {");
        assert_eq!(fill.fill("{host}:{port}"), "127.0.0.1:8080");
        assert_eq!(fill.fill("{weights}"), "");
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_pid_file_naming_a_process_that_started_at_another_time_is_left_alone() {
        // A process that merely has the pid a stale pid file names (the pid was recycled).
        let mut bystander = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let (pid_file, log) = (tmp.path().join("e.pid"), tmp.path().join("e.log"));
        let real_start = crate::platform::start_time(bystander.id()).unwrap();
        std::fs::write(&pid_file, format!("{} {}\n", bystander.id(), real_start + 1)).unwrap();
        stop_orphan(&pid_file, &log).await;
        assert!(bystander.try_wait().unwrap().is_none(), "not stopped");
        assert!(!pid_file.exists(), "the stale pid file is gone");
        // A pid file without a start time says too little to stop anything.
        std::fs::write(&pid_file, format!("{}\n", bystander.id())).unwrap();
        stop_orphan(&pid_file, &log).await;
        assert!(bystander.try_wait().unwrap().is_none(), "not stopped");
        // The right start time: stopped, with its group (its own: `sleep` was started in it).
        bystander.kill().unwrap();
        bystander.wait().unwrap();
    }
}
