//! Engine lifecycle: clear the persistent KV cache, start the server fresh with its output
//! captured, wait (bounded) until it answers, and stop it again.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context as _;

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

    pub fn fill(&self, word: &str) -> String {
        let benchpass = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "benchpass".to_owned());
        word.replace("{port}", &self.port.map(|p| p.to_string()).unwrap_or_default())
            .replace("{host}", "127.0.0.1")
            .replace("{model}", &self.model)
            .replace("{weights}", &self.weights.as_ref().map(|w| w.display().to_string()).unwrap_or_default())
            .replace("{benchpass}", &benchpass)
    }
}

/// Deletes what is inside `dir` (not `dir` itself); returns how many entries went. A missing
/// folder holds nothing to clear.
pub fn clear_cache(dir: &Path) -> anyhow::Result<usize> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("reading the KV-cache folder {}", dir.display())),
    };
    let mut removed = 0;
    for entry in entries {
        let path = entry?.path();
        let result = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        result.with_context(|| format!("clearing {}", path.display()))?;
        removed += 1;
    }
    Ok(removed)
}

/// Before clearing a cache and starting: an engine left running by a killed pass (its pid file
/// says so) is stopped; anything else that answers at `health_url` is refused, since a server
/// benchpass did not start fresh would mix its cache and state into the figures.
pub async fn make_way(program: &str, log: &Path, health_url: &str) -> anyhow::Result<()> {
    stop_orphan(&log.with_extension("pid"), program).await;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(2)).build()?;
    if http.get(health_url).send().await.is_ok() {
        anyhow::bail!("something already answers at {health_url}: stop it first");
    }
    Ok(())
}

/// A server benchpass started; stopped on [`Engine::stop`] or when dropped.
pub struct Engine {
    child: Child,
    stop_command: Option<Vec<String>>,
    pid_file: PathBuf,
}

/// An engine that an earlier benchpass started and could not stop (it was killed) still holds
/// its port. Its pid file says which process it is; it is stopped only if that process still
/// runs the same program.
async fn stop_orphan(pid_file: &Path, program: &str) {
    let Ok(text) = std::fs::read_to_string(pid_file) else { return };
    let Ok(pid) = text.trim().parse::<u32>() else { return };
    // Only the very process benchpass started: its command line starts with the same program.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let first = cmdline.split(|&b| b == 0).next().unwrap_or_default();
    if first != program.as_bytes() {
        let _ = std::fs::remove_file(pid_file);
        return;
    }
    eprintln!("stopping engine process {pid}, left running by an interrupted pass");
    let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
    let gone = || !Path::new(&format!("/proc/{pid}")).exists();
    for _ in 0..100 {
        if gone() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if !gone() {
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
    let _ = std::fs::remove_file(pid_file);
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
    let child = Command::new(program)
        .args(args)
        .envs(env)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("starting `{program}`"))?;
    let pid_file = log.with_extension("pid");
    std::fs::write(&pid_file, child.id().to_string()).with_context(|| format!("writing {}", pid_file.display()))?;
    let mut engine = Engine { child, stop_command, pid_file };
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

    /// The stop command if the plan gives one, else SIGTERM; SIGKILL after 15 s.
    pub async fn stop(&mut self) {
        match &self.stop_command {
            Some(argv) if !argv.is_empty() => {
                let _ = Command::new(&argv[0]).args(&argv[1..]).stdout(Stdio::null()).stderr(Stdio::null()).status();
            }
            _ => {
                let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
            }
        }
        for _ in 0..150 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                let _ = std::fs::remove_file(&self.pid_file);
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.pid_file);
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_file(&self.pid_file);
    }
}

/// The first non-empty line a command prints (on stdout or stderr), if it succeeds.
pub fn version_from_command(argv: &[String]) -> Option<String> {
    let (program, args) = argv.split_first()?;
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = [out.stdout, out.stderr].concat();
    String::from_utf8_lossy(&text).lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_owned)
}
