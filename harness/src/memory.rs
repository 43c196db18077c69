//! Resident memory of an engine's process tree, sampled in the background while it serves, so
//! that each run can record the peak it saw. Linux only (`/proc`); elsewhere nothing is sampled
//! and runs record no memory.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// How often the tree is measured.
pub const INTERVAL: Duration = Duration::from_millis(100);
/// Samples older than this are dropped (runs longer than this record the last ten minutes).
const KEEP: Duration = Duration::from_secs(600);

pub struct MemorySampler {
    samples: Mutex<VecDeque<(Instant, u64)>>,
    stop: AtomicBool,
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
                if let Some(rss) = tree_rss(pid) {
                    let now = Instant::now();
                    let mut samples = writer.samples.lock().unwrap_or_else(|e| e.into_inner());
                    samples.push_back((now, rss));
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
        let samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        let before = samples.iter().rev().find(|(t, _)| *t <= from).map(|(_, rss)| *rss);
        samples.iter().filter(|(t, _)| *t >= from && *t <= to).map(|(_, rss)| *rss).chain(before).max()
    }
}

/// Sum of VmRSS over `pid` and all its descendants, in bytes.
pub fn tree_rss(pid: u32) -> Option<u64> {
    if std::path::Path::new(&format!("/proc/{pid}/task/{pid}/children")).exists() {
        sum_over_tree(pid, |p| children_of(p).unwrap_or_default())
    } else {
        // A kernel without `/proc/PID/task/TID/children`: the slow way, every process.
        tree_rss_by_scanning(pid)
    }
}

/// VmRSS summed over `pid` and every descendant that `children` reaches (at most 10,000).
fn sum_over_tree(pid: u32, mut children: impl FnMut(u32) -> Vec<u32>) -> Option<u64> {
    let mut total = 0;
    let mut stack = vec![pid];
    let mut seen = 0;
    while let Some(p) = stack.pop() {
        seen += 1;
        total += rss(p).unwrap_or(0);
        stack.extend(children(p));
        if seen > 10_000 {
            break;
        }
    }
    (total > 0).then_some(total)
}

/// The children of `pid`, from each of its threads' `children` file: a few small reads, where
/// scanning every process's `stat` cost ~1 % of a core at 10 samples a second.
fn children_of(pid: u32) -> Option<Vec<u32>> {
    let mut children = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let text = std::fs::read_to_string(task.path().join("children")).ok()?;
        children.extend(text.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
    }
    Some(children)
}

/// [`tree_rss`] by reading the parent of every process in `/proc`.
fn tree_rss_by_scanning(pid: u32) -> Option<u64> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        // Field 4 (ppid) comes after the command name, which may hold spaces: read past ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else { continue };
        if let Some(parent) = rest.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok()) {
            children.entry(parent).or_default().push(child);
        }
    }
    sum_over_tree(pid, |p| children.remove(&p).unwrap_or_default())
}

fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// The process serving a URL that benchpass did not start, so that its memory can be sampled
/// all the same.
#[derive(Debug, Clone, PartialEq)]
pub struct Listener {
    pub pid: u32,
    /// The process's command name (`/proc/PID/comm`), recorded with the pass so that a reader
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
    let inodes: Vec<u64> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|table| listening_inodes(&table, port))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let mut owners = owners_of(&inodes);
    owners.sort_unstable();
    owners.dedup();
    let [pid] = owners[..] else { return None };
    if pid == std::process::id() {
        return None;
    }
    let command = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?.trim().to_owned();
    Some(Listener { pid, command, port })
}

/// Socket inodes in LISTEN state (`0A`) on `port`, from a `/proc/net/tcp` or `tcp6` table.
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields.get(1)?.rsplit(':').next()?;
            let listening = *fields.get(3)? == "0A";
            (listening && u16::from_str_radix(local_port, 16).ok()? == port).then(|| fields.get(9)?.parse().ok()).flatten()
        })
        .filter(|inode| *inode != 0)
        .collect()
}

/// The processes holding any of these sockets open.
fn owners_of(inodes: &[u64]) -> Vec<u32> {
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let mut owners = Vec::new();
    let Ok(proc) = std::fs::read_dir("/proc") else { return owners };
    for entry in proc.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else { continue };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|target| wanted.iter().any(|w| target.as_os_str() == w.as_str()))
        });
        if holds {
            owners.push(pid);
        }
    }
    owners
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child running `script`, once it has printed its first line (returned).
    fn python(script: &str) -> (std::process::Child, String) {
        let mut child =
            std::process::Command::new("python3").args(["-c", script]).stdout(std::process::Stdio::piped()).spawn().expect("python3 runs");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        (child, line)
    }

    #[test]
    fn a_child_process_is_counted_in_the_tree_both_ways() {
        // A child holding 64 MiB resident: the tree under this process grows by about that much.
        let (mut child, _) = python("import time; b = bytearray(64 << 20); print('ready', flush=True); time.sleep(30)");
        let own = rss(std::process::id()).unwrap();
        let by_children = tree_rss(std::process::id()).unwrap();
        let by_scanning = tree_rss_by_scanning(std::process::id()).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        for tree in [by_children, by_scanning] {
            assert!(tree >= own + (64 << 20), "{tree} bytes in the tree, {own} of them this process's");
        }
    }

    #[test]
    fn this_process_has_resident_memory() {
        let own = tree_rss(std::process::id()).expect("Linux /proc");
        assert!(own > 1 << 20, "{own} bytes");
    }

    #[test]
    fn listening_sockets_are_read_from_the_proc_table() {
        // Two rows of a real /proc/net/tcp: 127.0.0.1:8080 listening (inode 31337), and an
        // established connection from port 8080 (state 01), which is not the listener.
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 31337 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 31338 1 0000000000000000 20 4 30 10 -1
";
        assert_eq!(listening_inodes(table, 8080), [31337]);
        assert!(listening_inodes(table, 8081).is_empty());
    }

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
    fn a_server_inside_this_process_is_not_sampled() {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        assert_eq!(listener_of(&format!("http://127.0.0.1:{port}")), None, "its memory would be the client's too");
    }
}
