//! What Linux and macOS share: signals to a process group, its liveness, CPU time, and the
//! open-file limit (POSIX calls through nix).

use nix::errno::Errno;
use nix::sys::resource::{getrlimit, getrusage, setrlimit, Resource, UsageWho};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::Stop;

pub fn signal_group(leader: u32, how: Stop) {
    let Ok(pgid) = i32::try_from(leader) else { return };
    // A pid of 0 or 1 would signal benchpass's own group or everything: never.
    if pgid <= 1 {
        return;
    }
    let signal = match how {
        Stop::Graceful => Signal::SIGTERM,
        Stop::Force => Signal::SIGKILL,
    };
    let _ = killpg(Pid::from_raw(pgid), signal);
}

pub fn group_alive(leader: u32) -> bool {
    let Ok(pgid) = i32::try_from(leader) else { return false };
    if pgid <= 1 {
        return false;
    }
    // Signal 0 checks without sending; EPERM means a process is there, owned by someone else.
    match killpg(Pid::from_raw(pgid), None) {
        Ok(()) => true,
        Err(e) => e == Errno::EPERM,
    }
}

pub fn raise_open_file_limit() -> Option<u64> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    // Enough for thousands of streams; engines started later inherit it, so not a million.
    // macOS refuses a soft limit above OPEN_MAX (10240) even when the hard limit is unlimited.
    let wanted = hard.min(if cfg!(target_os = "macos") { 10_240 } else { 65_536 });
    if wanted > soft && setrlimit(Resource::RLIMIT_NOFILE, wanted, hard).is_ok() {
        return Some(wanted);
    }
    Some(soft)
}

/// This process's peak resident memory so far, in bytes: `ru_maxrss`, which Linux counts in
/// KiB and macOS in bytes (getrusage(2) on each).
pub fn process_peak_rss_bytes() -> Option<u64> {
    let usage = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    let max_rss = u64::try_from(usage.max_rss()).ok().filter(|&r| r > 0)?;
    Some(if cfg!(target_os = "macos") { max_rss } else { max_rss * 1024 })
}

pub fn process_cpu_seconds() -> Option<f64> {
    let usage = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Some(seconds(usage.user_time()) + seconds(usage.system_time()))
}
