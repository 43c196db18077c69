//! Starting the reference engine and running benchpass, as a user would.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

use harness::pass::{read_pass, Pass};

pub const BENCHPASS: &str = env!("CARGO_BIN_EXE_benchpass");

/// A loopback port for an engine a plan starts: one that outgoing connections cannot take
/// meanwhile (see [`harness::ports`]).
pub fn free_port() -> u16 {
    harness::ports::unclaimed_port()
}

/// One reference engine at a time: tests that assert timings must not share two cores with
/// another test's engine and client. Taking it also keeps the CPUs awake ([`hold_cpus_awake`]).
pub fn engine_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    hold_cpus_awake();
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Asks the kernel to keep every CPU out of idle states that take time to leave, for the rest
/// of the test process: a PM QoS request of 0 µs on `/dev/cpu_dma_latency`, in force while the
/// file stays open (as rt-tests' cyclictest does for its latency figures). A virtual CPU that
/// halts when idle waits for its host to run it again: on a 2-vCPU VM that made 10–18 % of the
/// runs read their first token 2–14 ms after the sim sent it, and 0–2 % with the request held.
/// It costs power, not time, and a test is not an engine's benchmark. Where the file cannot
/// be written (not root, not Linux) it says so once, and timings are taken as they come.
fn hold_cpus_awake() {
    static HELD: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    HELD.get_or_init(|| {
        use std::io::Write as _;
        let path = "/dev/cpu_dma_latency";
        let held = std::fs::OpenOptions::new().write(true).open(path).and_then(|mut file| {
            file.write_all(&0i32.to_ne_bytes())?;
            Ok(file)
        });
        held.map_err(|e| eprintln!("note: cannot hold {path} at 0 ({e}): idle CPUs may wake late, and timings with them")).ok()
    });
}

/// A `benchpass sim` process on a free loopback port, killed when dropped. Holds the engine
/// lock while it lives.
pub struct Sim {
    child: Child,
    pub url: String,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl Sim {
    pub fn start(args: &[&str]) -> Sim {
        let lock = engine_lock();
        let mut child = Command::new(BENCHPASS)
            .args(["sim", "--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("benchpass sim starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line
            .trim()
            .strip_prefix("benchpass sim listening on ")
            .unwrap_or_else(|| panic!("unexpected first line from sim: {line:?}"))
            .to_owned();
        Sim { child, url, _one_at_a_time: lock }
    }
}

impl Sim {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the engine now (a crash, as far as the client can tell).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn benchpass(args: &[&str]) -> Output {
    Command::new(BENCHPASS).args(args).output().expect("benchpass runs")
}

/// Runs `benchpass run PLAN --out DIR --progress plain`, checks it recorded the pass, and reads it.
pub fn run_plan(plan: &Path, out: &Path) -> Pass {
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "plain"]);
    let pass = read_pass(out).unwrap_or_else(|e| panic!("{e:#}: {}", String::from_utf8_lossy(&output.stderr)));
    assert_exit_status(&output, &pass);
    pass
}

/// A recorded pass exits 0, or 3 when some of its runs failed (`benchpass run --help`).
pub fn assert_exit_status(output: &Output, pass: &Pass) {
    let failed = pass.runs.iter().filter(|r| r.error.is_some()).count();
    let expected = if failed > 0 { 3 } else { 0 };
    assert_eq!(output.status.code(), Some(expected), "{failed} failed runs; {}", String::from_utf8_lossy(&output.stderr));
}

/// Runs `benchpass run --url URL --model sim-model --out DIR --progress quiet ARGS` and reads the pass.
pub fn run_pass(sim: &Sim, dir: &Path, args: &[&str]) -> Pass {
    let out = dir.to_str().unwrap();
    let mut all = vec!["run", "--url", &sim.url, "--model", "sim-model", "--engine", "sim", "--out", out, "--progress", "quiet"];
    all.extend_from_slice(args);
    let output = benchpass(&all);
    let pass = read_pass(dir).unwrap_or_else(|e| panic!("{e:#}: benchpass run failed: {}", String::from_utf8_lossy(&output.stderr)));
    assert_exit_status(&output, &pass);
    pass
}

/// Starts `benchpass run PLAN --gap-scale 0 --out OUT` quietly and returns it once `n_runs`
/// runs are on disk (at most 60 s), for a test to kill it there.
pub fn start_plan_until_runs(plan: &Path, out: &Path, n_runs: usize) -> Child {
    let child = Command::new(BENCHPASS)
        .args(["run", plan.to_str().unwrap(), "--gap-scale", "0", "--progress", "quiet", "--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let runs = out.join(harness::pass::RUNS_FILE);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_to_string(&runs).map_or(true, |t| t.lines().count() < n_runs) {
        assert!(std::time::Instant::now() < deadline, "no {n_runs} runs in 60 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

/// The runs CSV's columns, in their order (docs/raw-format.md).
pub const RUNS_CSV_HEADER: &str = "pass_id,machine,engine,engine_version,engine_sha256,model,build_sha256,lane,workload,\
target_prompt_tokens,prompt_tokens,max_tokens,completion_tokens,ttft_ms,decode_ms,finish_reason,warmup,rep,\
error,token_count_source";

/// `benchpass import CSV --out OUT`.
pub fn import_csv(csv: &Path, out: &Path) -> Output {
    benchpass(&["import", csv.to_str().unwrap(), "--out", out.to_str().unwrap()])
}

/// Imports `csv` and checks it was refused with `message` (file:line, column, what was
/// expected and found) and that nothing was written (its pass `a` does not exist).
pub fn assert_import_refused(csv: &Path, out: &Path, message: &str) {
    let output = import_csv(csv, out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "imported: {message}");
    assert!(stderr.contains(message), "{stderr}");
    assert!(!out.join("a").exists(), "nothing is written from a file with errors");
}

pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

pub fn pass_dir(tmp: &tempfile::TempDir) -> PathBuf {
    tmp.path().join("pass")
}

/// The install of a real engine, for the tests that need one. They are `#[ignore]`d, so they
/// run only when asked for (`cargo test -- --include-ignored`, as CI does once it has installed
/// them): asked for, a missing install is a failure that says how to install it, never a test
/// that passes having measured nothing.
pub fn real_engine(name: &str, dir: Option<PathBuf>, markers: &[&str]) -> Option<PathBuf> {
    let found = dir.filter(|dir| markers.iter().all(|m| dir.join(m).exists()));
    assert!(found.is_some(), "{name} is not installed: run `cargo xtask engine install {name}`");
    found
}
