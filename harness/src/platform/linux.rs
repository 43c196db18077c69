//! Linux through `/proc`: memory of a process tree (VmRSS, children from each thread's
//! `children` file), start times, the owners of listening sockets, and CPU time.

use std::collections::HashMap;

use super::{MemoryMeasure, TreeMemory};

pub const MEMORY_MEASURE: Option<MemoryMeasure> = Some(MemoryMeasure::Rss);

pub fn tree_memory(pid: u32) -> Option<TreeMemory> {
    let sum = tree_status(pid)?;
    Some(TreeMemory {
        bytes: sum.rss,
        measure: MemoryMeasure::Rss,
        resident_bytes: None,
        // Each live process's own peak, summed: at least the peak of those processes together
        // (they need not have peaked at once), exact for a tree of one process; a child that
        // has exited is not in it.
        lifetime_peak_bytes: sum.hwm,
        file_backed_bytes: sum.rss_file,
    })
}

/// The machine's swap in use (`/proc/meminfo`: SwapTotal − SwapFree).
pub fn swap_used_bytes() -> Option<u64> {
    super::readings::parse_meminfo_swap_used(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// `some avg10` of `/proc/pressure/memory`; `None` where the kernel has no PSI (before 4.20,
/// or booted with `psi=0`).
pub fn memory_psi_some_avg10() -> Option<f64> {
    super::readings::parse_psi_some_avg10(&std::fs::read_to_string("/proc/pressure/memory").ok()?)
}

/// Field 22 of `/proc/PID/stat`: clock ticks from boot to the process's start.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    start_time_from_stat(&stat)
}

fn start_time_from_stat(stat: &str) -> Option<u64> {
    // The command name (field 2) may hold spaces and parentheses: fields after it start past
    // the last ')', with field 3 (state) first, so field 22 is the 20th.
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(19)?.parse().ok()
}

pub fn listeners_of_port(port: u16) -> Vec<(u32, String)> {
    let inodes: Vec<u64> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|table| listening_inodes(&table, port))
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    let mut owners = owners_of(&inodes);
    owners.sort_unstable();
    owners.dedup();
    owners
        .into_iter()
        .filter_map(|pid| Some((pid, std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?.trim().to_owned())))
        .collect()
}

pub fn process_cpu_seconds() -> Option<f64> {
    super::unix::process_cpu_seconds()
}

/// Sum of VmRSS over `pid` and all its descendants, in bytes.
#[cfg(test)]
fn tree_rss(pid: u32) -> Option<u64> {
    tree_status(pid).map(|s| s.rss)
}

/// VmRSS, VmHWM and RssFile summed over `pid` and all its descendants.
fn tree_status(pid: u32) -> Option<TreeStatus> {
    if std::path::Path::new(&format!("/proc/{pid}/task/{pid}/children")).exists() {
        sum_over_tree(pid, |p| children_of(p).unwrap_or_default())
    } else {
        // A kernel without `/proc/PID/task/TID/children`: the slow way, every process.
        tree_status_by_scanning(pid)
    }
}

/// The tree's sums; a figure some process of it lacks is `None` for the whole tree.
#[derive(Debug, Clone, Copy)]
struct TreeStatus {
    rss: u64,
    hwm: Option<u64>,
    rss_file: Option<u64>,
}

/// [`TreeStatus`] summed over `pid` and every descendant that `children` reaches (at most 10,000).
fn sum_over_tree(pid: u32, mut children: impl FnMut(u32) -> Vec<u32>) -> Option<TreeStatus> {
    let mut total = TreeStatus { rss: 0, hwm: Some(0), rss_file: Some(0) };
    let mut stack = vec![pid];
    let mut seen = 0;
    while let Some(p) = stack.pop() {
        seen += 1;
        if let Some(m) = status_memory(p) {
            total.rss += m.rss;
            total.hwm = total.hwm.zip(m.hwm).map(|(a, b)| a + b);
            total.rss_file = total.rss_file.zip(m.rss_file).map(|(a, b)| a + b);
        }
        stack.extend(children(p));
        if seen > 10_000 {
            break;
        }
    }
    (total.rss > 0).then_some(total)
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

/// [`tree_status`] by reading the parent of every process in `/proc`.
fn tree_status_by_scanning(pid: u32) -> Option<TreeStatus> {
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

fn status_memory(pid: u32) -> Option<super::readings::StatusMemory> {
    super::readings::parse_status_memory(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

#[cfg(test)]
fn rss(pid: u32) -> Option<u64> {
    status_memory(pid).map(|m| m.rss)
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

    use crate::platform::test_child::python;

    #[test]
    fn a_child_process_is_counted_in_the_tree_both_ways() {
        // A child holding 64 MiB resident: the tree under this process grows by about that much.
        let (mut child, _) = python("import time; b = bytearray(64 << 20); print('ready', flush=True); time.sleep(30)");
        let own = rss(std::process::id()).unwrap();
        let by_children = tree_rss(std::process::id()).unwrap();
        let by_scanning = tree_status_by_scanning(std::process::id()).unwrap().rss;
        child.kill().unwrap();
        child.wait().unwrap();
        for tree in [by_children, by_scanning] {
            assert!(tree >= own + (64 << 20), "{tree} bytes in the tree, {own} of them this process's");
        }
    }

    #[test]
    fn a_child_that_maps_a_file_and_reads_it_shows_it_as_file_backed_resident_memory() {
        // A 64 MiB file, mapped read-only by a child that touches every 4 KiB page of it (as
        // llama.cpp maps its GGUF): its pages are resident and file-backed (`RssFile`), while
        // a child holding 64 MiB of its own memory (`bytearray`) adds none of them.
        const SIZE: u64 = 64 << 20;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("weights.bin");
        std::fs::write(&path, vec![7u8; SIZE as usize]).unwrap();
        let script = format!(
            "import mmap, time\nf = open({path:?}, 'rb')\nm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)\ns = sum(m[i] for i in range(0, len(m), 4096))\nprint('ready', s, flush=True)\ntime.sleep(30)",
            path = path.to_str().unwrap()
        );
        let (mut mapper, line) = python(&script);
        let mapped = tree_memory(mapper.id());
        mapper.kill().unwrap();
        mapper.wait().unwrap();
        // Every page read gave 7: 16,384 pages.
        assert_eq!(line.trim(), format!("ready {}", 7 * SIZE / 4096));
        let mapped = mapped.expect("the child's memory");
        let file_backed = mapped.file_backed_bytes.expect("RssFile is there since Linux 4.5");
        assert!(file_backed >= SIZE, "{file_backed} bytes file-backed, {SIZE} of them the mapped file");
        assert!(mapped.bytes >= file_backed, "RssFile is part of VmRSS");

        let (mut holder, _) = python("import time; b = bytearray(64 << 20); print('ready', flush=True); time.sleep(30)");
        let held = tree_memory(holder.id());
        holder.kill().unwrap();
        holder.wait().unwrap();
        let held = held.expect("the child's memory");
        assert!(held.bytes >= SIZE, "{} bytes resident", held.bytes);
        assert!(held.file_backed_bytes.unwrap() < SIZE / 2, "{:?} bytes file-backed: the interpreter's own files, not the 64 MiB", held.file_backed_bytes);
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
    fn the_start_time_is_read_past_a_command_name_with_spaces_and_parentheses() {
        // A real /proc/PID/stat line (a process named `a) b`), start time 4242 ticks.
        let stat = "12345 (a) b) S 1 12345 12345 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 4242 1000000 100 18446744073709551615";
        assert_eq!(start_time_from_stat(stat), Some(4242));
        let own = start_time(std::process::id()).expect("this process has a start time");
        assert_eq!(start_time(std::process::id()), Some(own), "the same process, the same start");
    }
}
