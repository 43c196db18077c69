//! The machine's thermal pressure, sampled about once a second on a thread of its own for the
//! whole pass, so that each run can record the highest level in force over its interval, as
//! it records its memory peak ([`crate::memory`]), and no run reads the OS itself.
//!
//! macOS tells the level (`notifyutil`, which starts a process: on the sampler's thread that
//! is outside every run's timed path, see [`crate::platform::spawn`]). Linux and Windows have
//! no thermal pressure level (Linux's thermal zones are temperatures, recorded once per pass
//! in the machine facts): there nothing is sampled and runs record none.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::provenance::mac::ThermalPressure;

/// How often the level is read: it changes over seconds, and each read on macOS is a process.
pub const INTERVAL: Duration = Duration::from_secs(1);
/// Level changes kept: a level that flaps every second still keeps the last 2¾ hours.
const KEEP: usize = 10_000;

/// What one read gives: the level, or `None` where the read failed (the level is then unknown
/// from that moment until a read succeeds).
type Reading = Option<ThermalPressure>;

/// The readings where they changed, oldest first, each with when it was taken: the level in
/// force at any moment is the last change at or before it.
#[derive(Default)]
struct Changes(VecDeque<(Instant, Reading)>);

impl Changes {
    fn record(&mut self, at: Instant, reading: Reading) {
        if self.0.back().is_some_and(|(_, last)| *last == reading) {
            return;
        }
        self.0.push_back((at, reading));
        while self.0.len() > KEEP {
            self.0.pop_front();
        }
    }

    /// The highest level in force between `from` and `to`: the one read last before `from`
    /// (in force when the run began) and every one read up to `to`. `None` when no level was
    /// known over the interval.
    fn max_over(&self, from: Instant, to: Instant) -> Reading {
        let in_force = self.0.iter().rev().find(|(t, _)| *t <= from).and_then(|(_, r)| *r);
        self.0.iter().filter(|(t, _)| *t > from && *t <= to).filter_map(|(_, r)| *r).chain(in_force).max()
    }
}

pub struct ThermalSampler {
    changes: Mutex<Changes>,
    stop: AtomicBool,
}

/// The running sampler; dropping it stops the sampling.
pub struct Sampling(Arc<ThermalSampler>);

impl std::ops::Deref for Sampling {
    type Target = ThermalSampler;
    fn deref(&self) -> &ThermalSampler {
        &self.0
    }
}

impl Drop for Sampling {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Relaxed);
    }
}

impl ThermalSampler {
    /// Samples this machine's level every [`INTERVAL`] until the handle is dropped; `None`
    /// where the OS has no level to read.
    pub fn start() -> Option<Sampling> {
        #[cfg(target_os = "macos")]
        return Some(Self::start_with(crate::provenance::mac::thermal_pressure_now, INTERVAL));
        #[cfg(not(target_os = "macos"))]
        return None;
    }

    /// Samples `read` every `every`, on a thread of its own (a read may block, or start a
    /// process, and the runtime's threads carry the streams being timed). The first reading is
    /// taken before this returns, so that a run that begins at once has the level then in force.
    pub fn start_with(mut read: impl FnMut() -> Reading + Send + 'static, every: Duration) -> Sampling {
        let mut changes = Changes::default();
        changes.record(Instant::now(), read());
        let sampler = Arc::new(ThermalSampler { changes: Mutex::new(changes), stop: AtomicBool::new(false) });
        let writer = Arc::clone(&sampler);
        let spawned = std::thread::Builder::new().name("thermal-sampler".into()).spawn(move || {
            crate::platform::spawn::outside_the_timed_path();
            loop {
                std::thread::sleep(every);
                if writer.stop.load(Ordering::Relaxed) {
                    break;
                }
                let reading = read();
                writer.changes.lock().unwrap_or_else(|e| e.into_inner()).record(Instant::now(), reading);
            }
        });
        if let Err(e) = spawned {
            eprintln!("warning: cannot start the thermal sampler ({e}): runs record the level read when the pass began");
        }
        Sampling(sampler)
    }

    /// The highest level in force between `from` and `to` (see [`Changes::max_over`]).
    pub fn max_over(&self, from: Instant, to: Instant) -> Option<ThermalPressure> {
        self.changes.lock().unwrap_or_else(|e| e.into_inner()).max_over(from, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ThermalPressure::*;

    fn secs(t0: Instant, s: f64) -> Instant {
        t0 + Duration::from_secs_f64(s)
    }

    /// Readings at 0, 1, 2, … s: nominal, nominal, heavy, moderate, (failed), nominal.
    fn changes(t0: Instant) -> Changes {
        let mut c = Changes::default();
        for (i, r) in [Some(Nominal), Some(Nominal), Some(Heavy), Some(Moderate), None, Some(Nominal)].into_iter().enumerate() {
            c.record(secs(t0, i as f64), r);
        }
        c
    }

    #[test]
    fn only_changes_are_kept() {
        let t0 = Instant::now();
        let kept: Vec<(f64, Reading)> = changes(t0).0.iter().map(|(t, r)| (t.duration_since(t0).as_secs_f64(), *r)).collect();
        assert_eq!(kept, [(0.0, Some(Nominal)), (2.0, Some(Heavy)), (3.0, Some(Moderate)), (4.0, None), (5.0, Some(Nominal))]);
    }

    #[test]
    fn a_run_gets_the_highest_level_in_force_over_its_interval() {
        let t0 = Instant::now();
        let c = changes(t0);
        // Worked by hand from the readings above.
        // 0.2–0.8 s: no reading inside; nominal (read at 0) was in force.
        assert_eq!(c.max_over(secs(t0, 0.2), secs(t0, 0.8)), Some(Nominal));
        // 1.5–3.5 s: heavy read at 2 and gone by the end (moderate at 3): the peak is kept,
        // where the level before and after the run (nominal, moderate) would miss it.
        assert_eq!(c.max_over(secs(t0, 1.5), secs(t0, 3.5)), Some(Heavy));
        // 2.5–2.6 s: shorter than the interval: heavy, read at 2, was in force.
        assert_eq!(c.max_over(secs(t0, 2.5), secs(t0, 2.6)), Some(Heavy));
        // 3.0–4.5 s: moderate read exactly at the start, then the reads failed.
        assert_eq!(c.max_over(secs(t0, 3.0), secs(t0, 4.5)), Some(Moderate));
        // 4.2–4.9 s: the last read before failed and none came after: unknown.
        assert_eq!(c.max_over(secs(t0, 4.2), secs(t0, 4.9)), None);
        // 4.2–5.0 s: the read at 5 is the run's end, inside.
        assert_eq!(c.max_over(secs(t0, 4.2), secs(t0, 5.0)), Some(Nominal));
        // Before the first reading: nothing was known.
        assert_eq!(Changes::default().max_over(t0, secs(t0, 1.0)), None);
    }

    #[test]
    fn a_flapping_level_keeps_the_last_changes() {
        let t0 = Instant::now();
        let mut c = Changes::default();
        for i in 0..KEEP + 3 {
            c.record(secs(t0, i as f64), Some(if i % 2 == 0 { Nominal } else { Heavy }));
        }
        assert_eq!(c.0.len(), KEEP);
        assert_eq!(c.0.front().unwrap().0, secs(t0, 3.0), "the three oldest went");
    }

    #[test]
    fn the_sampler_reads_first_at_start_then_on_its_schedule_until_dropped() {
        let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&reads);
        // The level rises with each read: nominal at start, moderate, heavy, … sleeping.
        let source = move || ThermalPressure::from_level(counted.fetch_add(1, Ordering::SeqCst).min(4) as u64);
        let started = Instant::now();
        let sampling = ThermalSampler::start_with(source, Duration::from_millis(50));
        assert_eq!(reads.load(Ordering::SeqCst), 1, "one read before start returns");
        assert_eq!(sampling.max_over(started, Instant::now()), Some(Nominal), "in force at once");
        std::thread::sleep(Duration::from_millis(130));
        // Reads at 0, ~50 and ~100 ms (scheduling may delay the later ones, never add reads).
        let seen = sampling.max_over(started, Instant::now());
        assert!(matches!(seen, Some(Moderate | Heavy)), "{seen:?}");
        let n = reads.load(Ordering::SeqCst);
        assert!((2..=3).contains(&n), "{n} reads in 130 ms at one per 50 ms");
        drop(sampling);
        std::thread::sleep(Duration::from_millis(150));
        let after = reads.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(reads.load(Ordering::SeqCst), after, "no reads once dropped");
    }
}
