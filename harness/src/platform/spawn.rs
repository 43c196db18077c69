//! Every process benchpass starts is started through [`command`], so that one place can tell
//! whether it happened while a run was in flight: a process launched between a run's start and
//! its end staggers the other streams' request starts, pushes arrival schedules off and loads
//! the machine being measured (docs/reliability.md). Runs mark themselves with [`InFlight`];
//! a sampler's own thread, which reads the OS beside the runs and never inside one, marks
//! itself with [`outside_the_timed_path`].

use std::cell::Cell;
use std::ffi::OsStr;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

static RUNS_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static STARTED_DURING_RUNS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SAMPLER_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Held by a run from its start to its end: while any is held, starting a process (off a
/// sampler's thread) is counted as a fault.
pub struct InFlight(());

impl InFlight {
    pub fn begin() -> InFlight {
        RUNS_IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight(())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        RUNS_IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Marks the calling thread as a sampler's: what it starts runs beside the runs, on a thread
/// no stream is timed on, at the sampler's own pace.
pub fn outside_the_timed_path() {
    SAMPLER_THREAD.with(|s| s.set(true));
}

/// Notes that `what` is about to start a process, or to read something that starts one on
/// some OS (macOS's thermal pressure): counted when a run is in flight and this is not a
/// sampler's thread, and said on stderr in debug builds, where the tests run.
pub fn note_start(what: &str) {
    if !is_a_fault(SAMPLER_THREAD.with(Cell::get), RUNS_IN_FLIGHT.load(Ordering::SeqCst)) {
        return;
    }
    STARTED_DURING_RUNS.fetch_add(1, Ordering::SeqCst);
    #[cfg(debug_assertions)]
    eprintln!("benchpass: internal fault: `{what}` was started while a run was in flight");
    #[cfg(not(debug_assertions))]
    let _ = what;
}

/// Whether starting a process now is a fault: when some run is in flight and the starter is
/// not a sampler's thread.
fn is_a_fault(on_a_sampler_thread: bool, runs_in_flight: usize) -> bool {
    runs_in_flight > 0 && !on_a_sampler_thread
}

/// How many processes were started (or spawning reads made) while a run was in flight, in
/// this process so far: 0 unless benchpass has a fault.
pub fn started_during_runs() -> usize {
    STARTED_DURING_RUNS.load(Ordering::SeqCst)
}

/// `Command::new(program)`, noted first ([`note_start`]). The one way harness starts a process.
pub fn command(program: impl AsRef<OsStr>) -> Command {
    note_start(&program.as_ref().to_string_lossy());
    Command::new(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_is_a_fault_only_while_a_run_is_in_flight_and_off_a_sampler_thread() {
        assert!(!is_a_fault(false, 0), "between runs");
        assert!(is_a_fault(false, 1), "inside a run");
        assert!(is_a_fault(false, 256), "inside any of many");
        assert!(!is_a_fault(true, 256), "a sampler's thread is outside the timed path");
    }

    // The lib's tests start no runs: the count of runs in flight is this test's alone. (Starts
    // are counted in the integration test, where only the pass runs.)
    #[test]
    fn runs_in_flight_are_counted_until_each_ends_and_the_sampler_mark_is_its_threads() {
        let run = InFlight::begin();
        let nested = InFlight::begin();
        assert_eq!(RUNS_IN_FLIGHT.load(Ordering::SeqCst), 2);
        drop(run);
        assert_eq!(RUNS_IN_FLIGHT.load(Ordering::SeqCst), 1, "the other is still in flight");
        drop(nested);
        assert_eq!(RUNS_IN_FLIGHT.load(Ordering::SeqCst), 0);
        let marked = std::thread::spawn(|| {
            outside_the_timed_path();
            SAMPLER_THREAD.with(Cell::get)
        });
        assert!(marked.join().unwrap());
        assert!(!SAMPLER_THREAD.with(Cell::get), "only the thread that marked itself");
    }
}
