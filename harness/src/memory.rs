//! Memory of an engine's process tree, sampled in the background while it serves, so that each
//! run can record the peak it saw: resident size on Linux, physical footprint on macOS
//! ([`crate::platform::MemoryMeasure`]), with the resident size beside a footprint and the
//! file-backed part of resident memory where the OS tells it; and, at the cell's end, the
//! kernel's lifetime peak. Elsewhere nothing is sampled and runs record no memory.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::platform::TreeMemory;

/// How often the tree is measured.
pub const INTERVAL: Duration = Duration::from_millis(100);
/// Samples older than this are dropped (runs longer than this record the last ten minutes).
const KEEP: Duration = Duration::from_secs(600);

pub struct MemorySampler {
    samples: Mutex<VecDeque<(Instant, TreeMemory)>>,
    stop: AtomicBool,
}

/// What a run records of the engine's memory: the highest of each figure over its interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunMemory {
    /// In the OS's measure ([`crate::platform::MEMORY_MEASURE`]).
    pub peak_bytes: u64,
    pub resident_peak_bytes: Option<u64>,
    pub file_backed_peak_bytes: Option<u64>,
}

/// The running sampler; dropping it stops the sampling.
pub struct Sampling(Arc<MemorySampler>);

impl std::ops::Deref for Sampling {
    type Target = MemorySampler;
    fn deref(&self) -> &MemorySampler {
        &self.0
    }
}

impl Drop for Sampling {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Relaxed);
    }
}

impl MemorySampler {
    /// Samples the tree under `pid` every [`INTERVAL`] until the returned handle is dropped.
    /// On a thread of its own: reading `/proc` blocks, and the runtime's worker threads carry
    /// the streams being timed.
    pub fn start(pid: u32) -> Sampling {
        let sampler = Arc::new(MemorySampler { samples: Mutex::new(VecDeque::new()), stop: AtomicBool::new(false) });
        let writer = Arc::clone(&sampler);
        let spawned = std::thread::Builder::new().name("memory-sampler".into()).spawn(move || {
            while !writer.stop.load(Ordering::Relaxed) {
                if let Some(memory) = crate::platform::tree_memory(pid) {
                    let now = Instant::now();
                    let mut samples = writer.samples.lock().unwrap_or_else(|e| e.into_inner());
                    samples.push_back((now, memory));
                    while samples.front().is_some_and(|(t, _)| now.duration_since(*t) > KEEP) {
                        samples.pop_front();
                    }
                }
                std::thread::sleep(INTERVAL);
            }
        });
        if let Err(e) = spawned {
            eprintln!("warning: cannot start the memory sampler ({e}): runs record no memory");
        }
        Sampling(sampler)
    }

    /// The largest sample taken between `from` and `to`, counting the last one before `from`
    /// (a run shorter than the interval still gets the reading that covered it).
    pub fn peak_between(&self, from: Instant, to: Instant) -> Option<u64> {
        self.over_run(from, to).map(|m| m.peak_bytes)
    }

    /// The highest of each figure over the samples between `from` and `to`, counting the last
    /// one before `from`, as [`Self::peak_between`] does.
    pub fn over_run(&self, from: Instant, to: Instant) -> Option<RunMemory> {
        let samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        over_run(samples.iter().map(|(t, m)| (*t, m)), from, to)
    }

    /// The latest sample: at a cell's end, its lifetime peak and what tells whether the engine
    /// maps its weights.
    pub fn latest(&self) -> Option<TreeMemory> {
        self.samples.lock().unwrap_or_else(|e| e.into_inner()).back().map(|(_, m)| *m)
    }
}

/// [`MemorySampler::over_run`] over `samples`, oldest first.
fn over_run<'a>(samples: impl DoubleEndedIterator<Item = (Instant, &'a TreeMemory)> + Clone, from: Instant, to: Instant) -> Option<RunMemory> {
    let before = samples.clone().rev().find(|(t, _)| *t <= from).map(|(_, m)| m);
    let inside: Vec<&TreeMemory> = samples.filter(|(t, _)| *t >= from && *t <= to).map(|(_, m)| m).chain(before).collect();
    Some(RunMemory {
        peak_bytes: inside.iter().map(|m| m.bytes).max()?,
        resident_peak_bytes: inside.iter().filter_map(|m| m.resident_bytes).max(),
        file_backed_peak_bytes: inside.iter().filter_map(|m| m.file_backed_bytes).max(),
    })
}

/// The process serving a URL that benchpass did not start, so that its memory can be sampled
/// all the same.
#[derive(Debug, Clone, PartialEq)]
pub struct Listener {
    pub pid: u32,
    /// The process's command name (`/proc/PID/comm`, lsof's on macOS), recorded with the pass so that a reader
    /// sees whose memory the runs carry (a container's port proxy is not the engine).
    pub command: String,
    pub port: u16,
}

impl Listener {
    /// How the pass records it: `llama-server (pid 4242, listening on port 8080)`.
    pub fn describe(&self) -> String {
        format!("{} (pid {}, listening on port {})", self.command, self.pid, self.port)
    }
}

/// The one process on this machine listening on the port of `url`, when `url` names a loopback
/// host. `None` for a remote host (a local process on the same port number would be the wrong
/// one), when nothing or more than one process listens there, when `/proc` does not show
/// whose socket it is (another user's process, read without privileges), and when it is this
/// process (a reference engine run in-process, as the demo does: its memory would be the
/// client's too).
pub fn listener_of(url: &str) -> Option<Listener> {
    let url = reqwest::Url::parse(url).ok()?;
    let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if !loopback {
        return None;
    }
    let port = url.port_or_known_default()?;
    let owners = crate::platform::listeners_of_port(port);
    let [(pid, command)] = &owners[..] else { return None };
    if *pid == std::process::id() {
        return None;
    }
    let (pid, command) = (*pid, command.clone());
    Some(Listener { pid, command, port })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::platform::test_child::python;

    #[test]
    fn a_listener_on_loopback_is_found_and_a_remote_host_is_not() {
        let (mut server, line) =
            python("import socket, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)");
        let port: u16 = line.trim().parse().unwrap();
        let found = listener_of(&format!("http://127.0.0.1:{port}"));
        let by_name = listener_of(&format!("http://localhost:{port}/v1"));
        let remote = listener_of(&format!("http://192.0.2.1:{port}"));
        server.kill().unwrap();
        server.wait().unwrap();
        let found = found.expect("the server listens there");
        assert_eq!((found.pid, found.port), (server.id(), port));
        assert!(found.command.starts_with("python3"), "{found:?}");
        assert_eq!(found.describe(), format!("{} (pid {}, listening on port {port})", found.command, server.id()));
        assert_eq!(by_name, Some(found));
        assert_eq!(remote, None, "not on this machine");
        assert_eq!(listener_of(&format!("http://127.0.0.1:{port}")), None, "nothing listens any more");
    }

    #[test]
    fn a_run_gets_the_highest_of_each_figure_over_its_interval() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_millis(s * 100);
        let m = |bytes: u64, resident: Option<u64>, file: Option<u64>| TreeMemory {
            bytes,
            measure: crate::platform::MemoryMeasure::PhysFootprint,
            resident_bytes: resident,
            lifetime_peak_bytes: None,
            file_backed_bytes: file,
        };
        let series = [m(10, Some(50), None), m(30, Some(40), None), m(20, Some(70), None), m(5, Some(5), None)];
        let samples: Vec<(Instant, TreeMemory)> = series.iter().enumerate().map(|(i, s)| (at(i as u64), *s)).collect();
        let over = |from: Instant, to: Instant| over_run(samples.iter().map(|(t, m)| (*t, m)), from, to);
        // 50–250 ms: the sample at 0 (in force at the start) and those at 100 and 200.
        assert_eq!(over(t0 + Duration::from_millis(50), t0 + Duration::from_millis(250)), Some(RunMemory { peak_bytes: 30, resident_peak_bytes: Some(70), file_backed_peak_bytes: None }));
        // 310–390 ms: shorter than the interval: the sample at 300.
        assert_eq!(over(t0 + Duration::from_millis(310), t0 + Duration::from_millis(390)).map(|r| r.peak_bytes), Some(5));
        assert_eq!(over(t0 - Duration::from_millis(50), t0 - Duration::from_millis(10)), None, "before the first sample");
    }

    #[test]
    fn a_server_inside_this_process_is_not_sampled() {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        assert_eq!(listener_of(&format!("http://127.0.0.1:{port}")), None, "its memory would be the client's too");
    }
}
