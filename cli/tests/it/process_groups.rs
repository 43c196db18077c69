//! Engines are started in a process group of their own and stopped as a group: a wrapper
//! shell's children (as `uv run`, vLLM's workers or Ollama's runners are) go with it, and an
//! engine left behind by a killed pass is recognised by its pid and start time, whatever its
//! command line looks like.

#![cfg(unix)]

use std::path::{Path, PathBuf};

use harness::pass::{read_pass, PassStatus};

use crate::support::*;

/// A plan with one engine started by `start` (a TOML array's inner text) on `port`, one cell,
/// `runs` sustained runs of 64 tokens.
fn plan(dir: &Path, start: &str, port: u16, runs: u32) -> PathBuf {
    let path = dir.join("plan.toml");
    let text = format!(
        "[[workloads]]\nkind = \"sustained\"\nruns = {runs}\nmax_tokens = 64\n\n[[models]]\nname = \"m\"\n\n\
         [[engines]]\nname = \"wrapped\"\npreset = \"benchpass-sim\"\nstart = [{start}]\nport = {port}\n\n[[cells]]\nengine = \"wrapped\"\nmodel = \"m\"\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn port_is_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// A `#!` script that runs the reference engine as its child (no `exec`): the process
/// benchpass starts is `/bin/sh`, the server its child.
fn wrapper_script(dir: &Path) -> PathBuf {
    let script = dir.join("engine.sh");
    std::fs::write(&script, format!("#!/bin/sh\n'{BENCHPASS}' sim --port \"$1\" --model m --decode-tps \"$2\"\n")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn an_engine_behind_a_wrapper_shell_is_stopped_with_the_shell() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let port = free_port();
    let script = wrapper_script(tmp.path());
    let plan = plan(tmp.path(), &format!(r#""{}", "{{port}}", "2000""#, script.display()), port, 2);
    let out = tmp.path().join("pass");
    let pass = run_plan(&plan, &out);
    assert!(pass.runs.iter().all(|r| r.error.is_none()));
    // The shell got SIGTERM as part of the group, and so did the server it ran: the port is
    // free. Before process groups, the server outlived the shell and held the port.
    assert!(port_is_free(port), "the wrapped server outlived its shell");
    // Its memory is the tree's: the shell and the server under it.
    assert!(pass.runs.iter().all(|r| r.server_peak_rss_bytes.is_some_and(|b| b > 1 << 20)));
    assert_eq!(pass.info.cells[0].engine.memory_measure, Some(harness::platform::MemoryMeasure::Rss));
}

#[test]
fn an_orphan_started_through_a_script_is_recognised_and_stopped_on_resume() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let port = free_port();
    let script = wrapper_script(tmp.path());
    // 64 tokens at 100 tok/s: 0.64 s a run, 6 runs; the kill lands after the first.
    let plan = plan(tmp.path(), &format!(r#""{}", "{{port}}", "100""#, script.display()), port, 6);
    let out = tmp.path().join("pass");
    let mut child = start_plan_until_runs(&plan, &out, 1);
    // kill -9: the shell and the server under it are left running, holding the port.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!port_is_free(port), "the orphan holds its port");
    let pid_file = std::fs::read_to_string(out.join("logs/c0-wrapped.pid")).unwrap();
    let mut fields = pid_file.split_whitespace();
    let (pid, started) = (fields.next().unwrap().parse::<u32>().unwrap(), fields.next().unwrap().parse::<u64>().unwrap());
    assert_eq!(harness::platform::start_time(pid), Some(started), "the pid file names the running shell");
    // The shell's command line starts with /bin/sh, not with the script: argv[0] would not
    // have recognised it.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(!cmdline.starts_with(script.to_str().unwrap().as_bytes()), "{}", String::from_utf8_lossy(&cmdline));

    let output = benchpass(&["run", plan.to_str().unwrap(), "--gap-scale", "0", "--progress", "plain", "--resume", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("stopping engine process {pid} and its process group")), "{stderr}");
    let pass = read_pass(&out).unwrap();
    assert_eq!(pass.info.status, PassStatus::Complete);
    assert_eq!(pass.runs.len(), 6);
    assert!(pass.runs.iter().all(|r| r.error.is_none()), "the orphan was stopped and a fresh engine answered");
    assert_eq!(harness::platform::start_time(pid), None, "the orphaned shell is gone");
    assert!(port_is_free(port), "and so is the server it ran");
    let log = std::fs::read_to_string(out.join("logs/c0-wrapped.log")).unwrap();
    assert!(log.contains("benchpass: stopping engine process"), "the cell's log says so too");
}
