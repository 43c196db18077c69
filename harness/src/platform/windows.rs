//! Windows: the process table from sysinfo (Toolhelp and the process's own counters), the
//! process on a port from the TCP table (listeners). Type-checked for x86_64-pc-windows-msvc
//! (`cargo xtask check-targets`), not tested: no machine here runs Windows.
//!
//! Memory is the working set (what Task Manager's "Working set" column shows; its default
//! "Memory" column is the private part of it). A sample walks the whole process table to find
//! the tree, which costs milliseconds, not the microseconds of Linux's /proc.

use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

use super::{MemoryMeasure, TreeMemory};

pub const MEMORY_MEASURE: Option<MemoryMeasure> = Some(MemoryMeasure::WorkingSet);

/// At most this many processes are summed, as on the other OSes.
const MAX_TREE: usize = 10_000;

fn table(which: ProcessesToUpdate<'_>, kind: ProcessRefreshKind) -> Option<System> {
    let mut system = System::new().ok()?;
    system.refresh_processes_specifics(which, true, kind);
    Some(system)
}

pub fn tree_memory(pid: u32) -> Option<TreeMemory> {
    let system = table(ProcessesToUpdate::All, ProcessRefreshKind::nothing().with_memory())?;
    let root = Pid::from_u32(pid);
    system.process(root)?;
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() && tree.len() < MAX_TREE {
        let parent = tree[i];
        tree.extend(system.processes().iter().filter(|(_, p)| p.parent() == Some(parent)).map(|(child, _)| *child));
        i += 1;
    }
    let bytes = tree.iter().filter_map(|p| system.process(*p)).map(sysinfo::Process::memory).sum();
    Some(TreeMemory { bytes, measure: MemoryMeasure::WorkingSet, resident_bytes: None, lifetime_peak_bytes: None, file_backed_bytes: None })
}

/// Seconds since the Unix epoch at which the process started: two processes that held one pid
/// within the same second would look the same (Windows hands out pids far more sparsely).
pub fn start_time(pid: u32) -> Option<u64> {
    let pid = Pid::from_u32(pid);
    let system = table(ProcessesToUpdate::Some(&[pid]), ProcessRefreshKind::nothing())?;
    system.process(pid).map(sysinfo::Process::start_time)
}

pub fn listeners_of_port(port: u16) -> Vec<(u32, String)> {
    match listeners::get_process_by_port(port, listeners::Protocol::TCP) {
        Ok(process) => vec![(process.pid, process.name)],
        Err(_) => Vec::new(),
    }
}

pub fn process_cpu_seconds() -> Option<f64> {
    let pid = sysinfo::get_current_pid().ok()?;
    let system = table(ProcessesToUpdate::Some(&[pid]), ProcessRefreshKind::nothing().with_cpu())?;
    system.process(pid).map(|p| p.accumulated_cpu_time() as f64 / 1e3)
}
