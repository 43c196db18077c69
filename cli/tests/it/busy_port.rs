//! A port an engine of the plan needs, taken before the pass begins: refused before the first
//! cell, with no pass folder, naming the port and the process that holds it.

use crate::support::*;

/// Two reference engines benchpass starts, on `p1` and `p2`, one sustained run each.
fn two_engine_plan(dir: &std::path::Path, p1: u16, p2: u16) -> std::path::PathBuf {
    let plan = dir.join("two.toml");
    let engine = |name: &str, port: u16| {
        format!(
            "[[engines]]\nname = \"{name}\"\npreset = \"benchpass-sim\"\n\
             start = [\"{{benchpass}}\", \"sim\", \"--port\", \"{{port}}\", \"--decode-tps\", \"1000\"]\nport = {port}\n\n"
        )
    };
    std::fs::write(
        &plan,
        format!(
            "[gaps]\nbetween_cells_s = 300\n\n{}{}[[models]]\nname = \"m\"\n\n[[cells]]\nengine = \"a\"\nmodel = \"m\"\n\n\
             [[cells]]\nengine = \"b\"\nmodel = \"m\"\n\n[[workloads]]\nkind = \"sustained\"\nruns = 9\nmax_tokens = 8\n",
            engine("a", p1),
            engine("b", p2)
        ),
    )
    .unwrap();
    plan
}

#[test]
fn a_busy_port_of_the_second_engine_stops_the_plan_before_the_first_cell_naming_the_process() {
    // Something benchpass did not start listens on the second engine's port.
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let port: u16 = sim.url.rsplit(':').next().unwrap().parse().unwrap();
    let tmp = temp_dir();
    let plan = two_engine_plan(tmp.path(), free_port(), port);
    let out = tmp.path().join("pass");
    let started = std::time::Instant::now();
    // The gap of 300 s is not scaled: the refusal comes before any of it.
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "quiet"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(started.elapsed().as_secs() < 20, "refused at once, not after the first cell and a gap");
    assert!(stderr.contains("a port the plan's engines need is taken, so the plan is refused before its first cell (nothing was started or written)"), "{stderr}");
    let holder = format!("benchpass (pid {}, listening on port {port})", sim.pid());
    assert!(stderr.contains(&format!("engine `b` (http://127.0.0.1:{port}): port {port} is taken by {holder}")), "{stderr}");
    assert!(stderr.contains("stop what holds it, or give the engine another `port` in the plan"), "{stderr}");
    assert!(!out.exists(), "no pass folder");
}

/// The plan run with engine `a` on `port`, which is taken: refused with exit status 1 and no
/// pass folder; its stderr.
fn refused_with_first_port(port: u16) -> String {
    let tmp = temp_dir();
    let plan = two_engine_plan(tmp.path(), port, free_port());
    let out = tmp.path().join("pass");
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "quiet"]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!out.exists(), "no pass folder");
    stderr
}

#[test]
fn a_port_listened_on_at_every_address_is_taken_for_loopback_too() {
    let _one_at_a_time = engine_lock();
    // Listened on at 0.0.0.0, never accepted from: the engine on 127.0.0.1 could not bind it.
    let holder = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let stderr = refused_with_first_port(port);
    // The test binary holds it: named by its pid.
    assert!(stderr.contains(&format!("engine `a` (http://127.0.0.1:{port}): port {port} is taken by ")), "{stderr}");
    assert!(stderr.contains(&format!("(pid {}, listening on port {port})", std::process::id())), "{stderr}");
    drop(holder);
}

#[test]
fn a_dry_run_and_plan_check_do_not_look_at_ports() {
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let tmp = temp_dir();
    let plan = two_engine_plan(tmp.path(), port, port);
    assert!(benchpass(&["plan", "check", plan.to_str().unwrap()]).status.success());
    assert!(benchpass(&["run", plan.to_str().unwrap(), "--dry-run"]).status.success());
}

#[test]
fn a_port_an_outgoing_connection_holds_is_named_as_such_with_where_ports_are_safe() {
    let _one_at_a_time = engine_lock();
    // A connection's own end: bound by the kernel from its ephemeral range, listening on nothing.
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(server.local_addr().unwrap()).unwrap();
    let port = client.local_addr().unwrap().port();
    let stderr = refused_with_first_port(port);
    let first = harness::ports::first_ephemeral();
    assert!(
        stderr.contains(&format!(
            "engine `a` (http://127.0.0.1:{port}): port {port} is taken by a socket that does not listen, most likely an outgoing \
             connection's local end (the kernel hands those ports out; a port below {first} is never handed out that way)"
        )),
        "{stderr}"
    );
    drop(client);
}
