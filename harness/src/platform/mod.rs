//! What benchpass asks of the operating system about processes, behind one small interface
//! with an implementation per OS: the memory of a process tree, a process's identity (pid and
//! start time, so that a recycled pid is never taken for an engine), the process listening on
//! a port, stopping a process group, and this process's CPU time and open-file limit.
//!
//! Linux reads `/proc` and is tested here; macOS uses libproc (the kernel's `proc_pid_rusage`
//! and `proc_listpids`) and `lsof`, Windows sysinfo, listeners and `taskkill`: both are
//! type-checked for their targets (`cargo xtask check-targets`), and macOS's parsers are
//! tested on captured outputs.
//! Safe APIs only: the workspace forbids unsafe code.

use std::process::Command;

pub mod spawn;
pub use spawn::command;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as os;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as os;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
mod other;
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
use other as os;

#[cfg(unix)]
mod unix;

pub mod lsof;
pub mod readings;
pub mod awake;
pub mod energy;

/// The user's home folder: `HOME`, else (Windows, where HOME is usually unset) `USERPROFILE`.
pub fn home_dir() -> Option<std::path::PathBuf> {
    ["HOME", "USERPROFILE"].iter().filter_map(std::env::var_os).find(|h| !h.is_empty()).map(std::path::PathBuf::from)
}

/// Which memory figure a sample is: recorded in passes, so the pass format's type.
pub use benchpass_format::machine::{MemoryMeasure, MemoryPressure};

/// The memory of a process and its descendants at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeMemory {
    /// Summed over the tree, in the measure below.
    pub bytes: u64,
    pub measure: MemoryMeasure,
    /// Resident size summed over the tree, where the measure is another one (macOS).
    pub resident_bytes: Option<u64>,
    /// The kernel's lifetime peak of the measure, summed over the tree (macOS:
    /// `ri_lifetime_max_phys_footprint`; Linux: `VmHWM`, each process's peak resident size).
    pub lifetime_peak_bytes: Option<u64>,
    /// The file-backed part of the resident size, summed over the tree (Linux `RssFile`):
    /// mapped files, weights mapped with mmap among them.
    pub file_backed_bytes: Option<u64>,
}

/// The machine's memory state at one instant, as the pass's sampler reads it about once a
/// second: nothing here starts a process (sysctls on macOS, `/proc` on Linux).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MemoryState {
    /// Swap in use, in bytes.
    pub swap_used_bytes: Option<u64>,
    /// macOS's memory pressure level.
    pub pressure: Option<MemoryPressure>,
    /// Linux PSI `some avg10` of memory, in percent.
    pub psi_some_avg10: Option<f64>,
}

/// [`MemoryState`] now; every field `None` where the OS does not tell it.
pub fn memory_state() -> MemoryState {
    #[cfg(target_os = "linux")]
    return MemoryState { swap_used_bytes: linux::swap_used_bytes(), pressure: None, psi_some_avg10: linux::memory_psi_some_avg10() };
    #[cfg(target_os = "macos")]
    return MemoryState { swap_used_bytes: macos::swap_used_bytes(), pressure: macos::memory_pressure(), psi_some_avg10: None };
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    return MemoryState::default();
}

/// The measure [`tree_memory`] gives on this OS.
pub const MEMORY_MEASURE: Option<MemoryMeasure> = os::MEMORY_MEASURE;

/// Memory of `pid` and every descendant (at most 10,000 processes); `None` where the OS does
/// not tell or the process is gone.
pub fn tree_memory(pid: u32) -> Option<TreeMemory> {
    os::tree_memory(pid)
}

/// When `pid` started, as an opaque number that differs between two processes that held the
/// same pid; `None` when no such process runs.
pub fn start_time(pid: u32) -> Option<u64> {
    os::start_time(pid)
}

/// The processes listening on TCP `port` on this machine, each with its command name.
pub fn listeners_of_port(port: u16) -> Vec<(u32, String)> {
    os::listeners_of_port(port)
}

/// User + system CPU time this process has used, in seconds.
pub fn process_cpu_seconds() -> Option<f64> {
    os::process_cpu_seconds()
}

/// This process's peak resident memory so far, in bytes, where the OS keeps it (Unix).
pub fn process_peak_rss_bytes() -> Option<u64> {
    #[cfg(unix)]
    return unix::process_peak_rss_bytes();
    #[cfg(not(unix))]
    return None;
}

/// Raises this process's soft limit on open files to its hard limit (macOS starts at 256,
/// fewer than 256 concurrent streams need); returns the limit now in force.
pub fn raise_open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    return unix::raise_open_file_limit();
    #[cfg(not(unix))]
    return None;
}

/// Makes the command start in a process group of its own, so that the engine and everything it
/// spawns (a wrapper shell, `uv run`, vLLM's workers, Ollama's runners) can be stopped together.
pub fn own_process_group(command: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        command.process_group(0);
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt as _;
        // CREATE_NEW_PROCESS_GROUP: Ctrl-C in benchpass's console does not reach the engine.
        command.creation_flags(0x0000_0200);
    }
}

/// How hard to ask a process group to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM (Unix); `taskkill /T` (Windows): the engine may save state and exit.
    Graceful,
    /// SIGKILL (Unix); `taskkill /T /F` (Windows).
    Force,
}

/// Signals the process group led by `leader` (started with [`own_process_group`]).
pub fn stop_group(leader: u32, how: Stop) {
    #[cfg(unix)]
    unix::signal_group(leader, how);
    #[cfg(windows)]
    {
        let pid = leader.to_string();
        let mut args = vec!["/PID", pid.as_str(), "/T"];
        if how == Stop::Force {
            args.push("/F");
        }
        let _ = command("taskkill").args(&args).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).status();
    }
}

/// Whether any process of the group led by `leader` is still there.
pub fn group_alive(leader: u32) -> bool {
    #[cfg(unix)]
    return unix::group_alive(leader);
    #[cfg(not(unix))]
    return start_time(leader).is_some();
}

/// For tests that need a real child process to measure.
#[cfg(test)]
pub(crate) mod test_child {
    /// A child running `script`, once it has printed its first line (returned).
    pub fn python(script: &str) -> (std::process::Child, String) {
        let mut child =
            std::process::Command::new("python3").args(["-c", script]).stdout(std::process::Stdio::piped()).spawn().expect("python3 runs");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        (child, line)
    }
}
