//! Resident memory of an engine's process tree, sampled in the background while it serves, so
//! that each run can record the peak it saw. Linux only (`/proc`); elsewhere nothing is sampled
//! and runs record no memory.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// How often the tree is measured.
pub const INTERVAL: Duration = Duration::from_millis(100);
/// Samples older than this are dropped (runs longer than this record the last ten minutes).
const KEEP: Duration = Duration::from_secs(600);

pub struct MemorySampler {
    samples: Mutex<VecDeque<(Instant, u64)>>,
}

impl MemorySampler {
    /// Samples the tree under `pid` every [`INTERVAL`] until the returned handle is dropped.
    pub fn start(pid: u32) -> (Arc<MemorySampler>, tokio::task::JoinHandle<()>) {
        let sampler = Arc::new(MemorySampler { samples: Mutex::new(VecDeque::new()) });
        let writer = Arc::clone(&sampler);
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(INTERVAL);
            loop {
                tick.tick().await;
                let Some(rss) = tree_rss(pid) else { continue };
                let now = Instant::now();
                let mut samples = writer.samples.lock().expect("no sampler panics holding the lock");
                samples.push_back((now, rss));
                while samples.front().is_some_and(|(t, _)| now.duration_since(*t) > KEEP) {
                    samples.pop_front();
                }
            }
        });
        (sampler, task)
    }

    /// The largest sample taken between `from` and `to`, counting the last one before `from`
    /// (a run shorter than the interval still gets the reading that covered it).
    pub fn peak_between(&self, from: Instant, to: Instant) -> Option<u64> {
        let samples = self.samples.lock().expect("no sampler panics holding the lock");
        let before = samples.iter().rev().find(|(t, _)| *t <= from).map(|(_, rss)| *rss);
        samples.iter().filter(|(t, _)| *t >= from && *t <= to).map(|(_, rss)| *rss).chain(before).max()
    }
}

/// Sum of VmRSS over `pid` and all its descendants, in bytes.
pub fn tree_rss(pid: u32) -> Option<u64> {
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
    let mut total = 0;
    let mut stack = vec![pid];
    let mut seen = 0;
    while let Some(p) = stack.pop() {
        seen += 1;
        total += rss(p).unwrap_or(0);
        stack.extend(children.get(&p).into_iter().flatten().copied());
        if seen > 10_000 {
            break;
        }
    }
    (total > 0).then_some(total)
}

fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_resident_memory() {
        let own = tree_rss(std::process::id()).expect("Linux /proc");
        assert!(own > 1 << 20, "{own} bytes");
    }
}
