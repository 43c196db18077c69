//! Keeping the machine awake for a pass, and telling afterwards whether it slept during a run.
//!
//! A laptop left alone through a plan's gaps idles to sleep, and a run that spans a sleep
//! measures the lid, not the engine. On macOS the pass holds a `PreventUserIdleSystemSleep`
//! assertion (IOKit, through the keepawake crate) from its start to its end, or, when that
//! fails, starts `caffeinate -i -w PID` once, before the first run. Linux and Windows make no
//! assertion (servers seldom idle-sleep; on Linux it would take logind over D-Bus).
//!
//! Whether a run slept is read from two clocks and nothing else, so it costs the timed path two
//! clock reads: one that stops while the machine sleeps and one that does not.
//!
//! - Rust's `Instant` stops: Linux `CLOCK_MONOTONIC`, macOS `CLOCK_UPTIME_RAW` (what std reads
//!   there) leave suspended time out.
//! - The clock that runs on: Linux `CLOCK_BOOTTIME`, macOS `CLOCK_MONOTONIC` (which on macOS,
//!   unlike Linux, counts sleep). Both are monotonic: the wall clock would say the same, but it
//!   is stepped by NTP and by people, and slewed by up to 500 ppm (1.8 s over an hour-long run),
//!   which a threshold of seconds would have to absorb. Elsewhere (Windows) there is no such
//!   clock here and nothing is told.

use std::time::Duration;

use benchpass_format::machine::{KeepAwake, KeepAwakeHow};

/// The run slept when the clock that runs through sleep got ahead of the one that stops by more
/// than this. Both clocks are read back to back at each end, so on an awake machine they agree
/// to microseconds; 2 s is far above that, and far below any sleep (macOS's shortest
/// idle-sleep setting is a minute, a lid closed and opened takes seconds).
pub const SLEEP_THRESHOLD: Duration = Duration::from_secs(2);

/// How long the machine slept during an interval, from the two clocks' elapsed times over it:
/// `Some` when `with_sleep` is ahead of `awake` by more than [`SLEEP_THRESHOLD`].
pub fn slept(awake: Duration, with_sleep: Duration) -> Option<Duration> {
    with_sleep.checked_sub(awake).filter(|gap| *gap > SLEEP_THRESHOLD)
}

/// Both clocks at one instant.
#[derive(Debug, Clone, Copy)]
pub struct Clocks {
    awake: std::time::Instant,
    with_sleep: Option<Duration>,
}

impl Clocks {
    pub fn now() -> Clocks {
        Clocks { awake: std::time::Instant::now(), with_sleep: clock_with_sleep() }
    }

    /// How long the machine slept between `self` and `later` ([`slept`]); `None` when it did
    /// not, or where the clock that runs through sleep cannot be read.
    pub fn slept_until(&self, later: &Clocks) -> Option<Duration> {
        let with_sleep = later.with_sleep?.checked_sub(self.with_sleep?)?;
        slept(later.awake.saturating_duration_since(self.awake), with_sleep)
    }
}

/// The clock that runs on while the machine sleeps, as time since some fixed start.
fn clock_with_sleep() -> Option<Duration> {
    #[cfg(target_os = "linux")]
    let id = nix::time::ClockId::CLOCK_BOOTTIME;
    #[cfg(target_os = "macos")]
    let id = nix::time::ClockId::CLOCK_MONOTONIC;
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    return nix::time::clock_gettime(id).ok().map(Duration::from);
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    return None;
}

/// The machine kept awake; dropping it lets the machine sleep again.
pub struct Awake {
    pub record: KeepAwake,
    _guard: Guard,
}

enum Guard {
    None,
    #[cfg(target_os = "macos")]
    Assertion(#[allow(dead_code)] keepawake::KeepAwake),
    #[cfg(target_os = "macos")]
    Caffeinate(std::process::Child),
}

impl Drop for Guard {
    fn drop(&mut self) {
        #[cfg(target_os = "macos")]
        if let Guard::Caffeinate(child) = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Holds an idle-sleep assertion until the result is dropped, where the OS has one: call it
/// before the first run (on macOS it may start `caffeinate`).
pub fn keep_awake() -> Awake {
    #[cfg(target_os = "macos")]
    {
        let assertion = keepawake::Builder::default()
            .idle(true)
            .reason("benchpass is measuring a pass")
            .app_name("benchpass")
            .app_reverse_domain("io.github.benchpass")
            .create();
        let failed = match assertion {
            Ok(held) => return Awake { record: KeepAwake { held: true, how: KeepAwakeHow::IopmAssertion, detail: None }, _guard: Guard::Assertion(held) },
            Err(e) => format!("the power assertion failed ({e})"),
        };
        // `-i`: prevent idle sleep; `-w PID`: until benchpass exits, so that a killed pass
        // does not leave the Mac awake for ever.
        let pid = std::process::id().to_string();
        let started = super::command("/usr/bin/caffeinate")
            .args(["-i", "-w", &pid])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        return match started {
            Ok(child) => Awake { record: KeepAwake { held: true, how: KeepAwakeHow::Caffeinate, detail: Some(failed) }, _guard: Guard::Caffeinate(child) },
            Err(e) => Awake {
                record: KeepAwake { held: false, how: KeepAwakeHow::None, detail: Some(format!("{failed}, and caffeinate could not be started ({e})")) },
                _guard: Guard::None,
            },
        };
    }
    #[cfg(not(target_os = "macos"))]
    Awake {
        record: KeepAwake { held: false, how: KeepAwakeHow::None, detail: Some("benchpass holds no idle-sleep assertion on this OS".to_owned()) },
        _guard: Guard::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    #[test]
    fn a_run_slept_when_the_clock_through_sleep_got_ahead_by_more_than_the_threshold() {
        // Worked by hand: awake elapsed, elapsed with sleep → slept.
        // A 30 s run on an awake machine: the clocks agree to microseconds.
        assert_eq!(slept(s(30.0), s(30.000_004)), None);
        // 2 s exactly is not more than the threshold; 2.001 s is.
        assert_eq!(slept(s(30.0), s(32.0)), None);
        assert_eq!(slept(s(30.0), s(32.001)), Some(s(2.001)));
        // A 12 s run across a 10-minute sleep: the awake clock saw 12 s, the other 612 s.
        assert_eq!(slept(s(12.0), s(612.0)), Some(s(600.0)));
        // The other clock behind (it cannot be, but a reading may be off): not a sleep.
        assert_eq!(slept(s(30.0), s(29.0)), None);
    }

    #[test]
    fn an_awake_machine_did_not_sleep_between_two_readings() {
        let before = Clocks::now();
        std::thread::sleep(Duration::from_millis(20));
        let after = Clocks::now();
        #[cfg(target_os = "linux")]
        assert!(before.with_sleep.is_some() && after.with_sleep.is_some(), "CLOCK_BOOTTIME reads on Linux");
        assert_eq!(before.slept_until(&after), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn linux_records_that_it_holds_no_assertion() {
        let awake = keep_awake();
        assert!(!awake.record.held);
        assert_eq!(awake.record.how, KeepAwakeHow::None);
    }
}
