//! The machine's state, sampled about once a second on a thread of its own for the whole
//! pass, so that each run can record what was in force over its interval, as it records its
//! memory peak ([`crate::memory`]), and no run reads the OS itself: thermal pressure (the
//! highest level), memory pressure (the highest) and swap in use (when the run began and when
//! it ended, so that a run that swapped is marked).
//!
//! macOS tells the thermal level (`notifyutil`, which starts a process: on the sampler's thread
//! that is outside every run's timed path, see [`crate::platform::spawn`]), swap and memory
//! pressure through sysctls (no process). Linux has no thermal pressure level (its thermal
//! zones are temperatures, recorded once per pass in the machine facts); it tells swap in
//! `/proc/meminfo` and memory pressure as PSI (`/proc/pressure/memory`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::platform::{MemoryPressure, MemoryState};
use crate::provenance::mac::ThermalPressure;

/// How often the machine is read: its state changes over seconds, and each thermal read on
/// macOS is a process.
pub const INTERVAL: Duration = Duration::from_secs(1);
/// Changes kept: state that changes every second still keeps the last 2¾ hours.
const KEEP: usize = 10_000;

/// What one read gives; each field `None` where its read failed or the OS does not tell it
/// (it is then unknown from that moment until a read gives it).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reading {
    pub thermal: Option<ThermalPressure>,
    pub memory: MemoryState,
}

impl Reading {
    pub fn thermal(level: Option<ThermalPressure>) -> Reading {
        Reading { thermal: level, ..Reading::default() }
    }
}

/// What a run records of the machine's state over its interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OverRun {
    /// The highest thermal pressure in force.
    pub thermal: Option<ThermalPressure>,
    /// The highest memory pressure in force (macOS).
    pub memory_pressure: Option<MemoryPressure>,
    /// The highest PSI `some avg10` in force (Linux).
    pub psi_some_avg10: Option<f64>,
    /// Swap in use as read last before the run began, and last before it ended.
    pub swap_used_before: Option<u64>,
    pub swap_used_after: Option<u64>,
}

/// The readings where they changed, oldest first, each with when it was taken: the state in
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

    /// The reading in force at `at`: the last one taken at or before it.
    fn in_force(&self, at: Instant) -> Option<&Reading> {
        self.0.iter().rev().find(|(t, _)| *t <= at).map(|(_, r)| r)
    }

    /// The readings in force at some moment between `from` and `to`: the one in force at
    /// `from` and every one taken after it up to `to`.
    fn over(&self, from: Instant, to: Instant) -> impl Iterator<Item = &Reading> {
        self.in_force(from).into_iter().chain(self.0.iter().filter(move |(t, _)| *t > from && *t <= to).map(|(_, r)| r))
    }

    /// The highest thermal level in force between `from` and `to`. `None` when no level was
    /// known over the interval.
    fn max_over(&self, from: Instant, to: Instant) -> Option<ThermalPressure> {
        self.over(from, to).filter_map(|r| r.thermal).max()
    }

    /// What a run between `from` and `to` records ([`OverRun`]).
    fn over_run(&self, from: Instant, to: Instant) -> OverRun {
        OverRun {
            thermal: self.max_over(from, to),
            memory_pressure: self.over(from, to).filter_map(|r| r.memory.pressure).max(),
            psi_some_avg10: self.over(from, to).filter_map(|r| r.memory.psi_some_avg10).reduce(f64::max),
            swap_used_before: self.in_force(from).and_then(|r| r.memory.swap_used_bytes),
            swap_used_after: self.in_force(to).and_then(|r| r.memory.swap_used_bytes),
        }
    }
}

pub struct MachineSampler {
    changes: Mutex<Changes>,
    stop: AtomicBool,
    /// The energy source's series, on a thread of its own; `None` where the sampler was
    /// started without one (a test's).
    energy: Option<Arc<EnergySampling>>,
}

/// How often an energy source is read: a counter read is one file or one driver call per
/// domain, so a run's two ends are read off readings at most this far from them
/// (docs/metrics.md "Energy").
pub const ENERGY_INTERVAL: Duration = Duration::from_millis(100);
/// Readings kept: 20 minutes at [`ENERGY_INTERVAL`], longer than any run's wait for its record.
const ENERGY_KEEP: usize = 12_000;

/// A read whose instant is known within this much either side is kept at once; a slower one
/// (the thread was preempted mid-read, or the source is slow) is read again.
const READ_SPREAD: Duration = Duration::from_micros(250);
/// Reads tried for one reading before the tightest is kept.
const READ_TRIES: usize = 3;

/// One reading and the instant it holds for. A counter's value was read at some instant
/// between the read's start and its return: it is placed at the middle, and where that window
/// was wider than [`READ_SPREAD`] either side, it is read again and the tightest of
/// [`READ_TRIES`] kept, so a preemption mid-read moves no reading by more than the spread
/// (every read of a counter is a valid reading: reading twice loses nothing). A meter that
/// blocks for its interval (a mean over it) holds at its return less its lag.
fn timed_read(meter: &mut dyn crate::platform::energy::Meter) -> (Instant, Option<f64>) {
    if meter.blocks_for_its_interval() {
        let value = meter.read();
        return (Instant::now() - meter.lag(), value);
    }
    let mut best: Option<(Duration, Instant, Option<f64>)> = None;
    for _ in 0..READ_TRIES {
        let t0 = Instant::now();
        let value = meter.read();
        let window = t0.elapsed();
        let at = t0 + window / 2;
        // A value before none, then the tighter window.
        let rank = |window: Duration, value: &Option<f64>| (value.is_some(), std::cmp::Reverse(window));
        if best.as_ref().is_none_or(|(w, _, v)| rank(window, &value) > rank(*w, v)) {
            best = Some((window, at, value));
        }
        if window / 2 <= READ_SPREAD && value.is_some() {
            break;
        }
    }
    let (_, at, value) = best.expect("READ_TRIES is at least 1");
    (at, value)
}

/// What the energy thread found and read.
pub struct EnergySampling {
    /// The source, domain and reading, or why there is none.
    pub found: Result<(benchpass_format::EnergySource, String, benchpass_format::EnergyReading), String>,
    pub interval: Duration,
    readings: Mutex<VecDeque<(Instant, f64)>>,
    /// What the source covers now: [`EnergySampling::follow_engine`] may narrow it (NVML: the
    /// engine's GPUs).
    domain: Mutex<String>,
    /// A follow asked for and not yet taken by the thread, and how many it has taken.
    follow: Mutex<Option<Option<u32>>>,
    followed: std::sync::atomic::AtomicU64,
    /// The GPU as the source sampled it with each reading, where it does (Apple silicon).
    gpu: Mutex<VecDeque<(Instant, crate::platform::energy::GpuSample)>>,
    stop: AtomicBool,
}

impl EnergySampling {
    /// Starts `open` on a thread of its own (a meter need not be `Send`: macOS's holds
    /// CoreFoundation handles) and reads it every `every` until dropped; returns once the meter
    /// is open or has said why not.
    pub fn start(open: impl FnOnce() -> Result<Box<dyn crate::platform::energy::Meter>, String> + Send + 'static, every: Duration) -> Arc<EnergySampling> {
        let (tell, told) = std::sync::mpsc::channel();
        let (give, given) = std::sync::mpsc::channel::<Arc<EnergySampling>>();
        let spawned = std::thread::Builder::new().name("energy-sampler".into()).spawn(move || {
            crate::platform::spawn::outside_the_timed_path();
            let mut meter = match open() {
                Ok(meter) => meter,
                Err(why) => {
                    let _ = tell.send(Err(why));
                    return;
                }
            };
            let first = timed_read(meter.as_mut());
            let _ = tell.send(Ok((meter.source(), meter.domain(), meter.reading())));
            let Ok(shared) = given.recv() else { return };
            let record = |(at, value): (Instant, Option<f64>), meter: &dyn crate::platform::energy::Meter| {
                if let Some(v) = value.filter(|v| v.is_finite()) {
                    let mut readings = shared.readings.lock().unwrap_or_else(|e| e.into_inner());
                    readings.push_back((at, v));
                    while readings.len() > ENERGY_KEEP {
                        readings.pop_front();
                    }
                }
                if let Some(sample) = meter.gpu() {
                    let mut gpu = shared.gpu.lock().unwrap_or_else(|e| e.into_inner());
                    gpu.push_back((at, sample));
                    while gpu.len() > ENERGY_KEEP {
                        gpu.pop_front();
                    }
                }
            };
            record(first, meter.as_ref());
            while !shared.stop.load(Ordering::Relaxed) {
                if !meter.blocks_for_its_interval() {
                    std::thread::sleep(every);
                }
                let asked = shared.follow.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let Some(group) = asked {
                    meter.follow(group);
                    *shared.domain.lock().unwrap_or_else(|e| e.into_inner()) = meter.domain();
                    shared.followed.fetch_add(1, Ordering::SeqCst);
                }
                let read = timed_read(meter.as_mut());
                record(read, meter.as_ref());
            }
        });
        let found = match spawned {
            Ok(_) => told.recv().unwrap_or_else(|_| Err("the energy sampler stopped".to_owned())),
            Err(e) => Err(format!("cannot start the energy sampler ({e})")),
        };
        let domain = Mutex::new(found.as_ref().map(|(_, d, _)| d.clone()).unwrap_or_default());
        let sampling = Arc::new(EnergySampling {
            found,
            interval: every,
            readings: Mutex::new(VecDeque::new()),
            domain,
            follow: Mutex::new(None),
            followed: std::sync::atomic::AtomicU64::new(0),
            gpu: Mutex::new(VecDeque::new()),
            stop: AtomicBool::new(false),
        });
        let _ = give.send(Arc::clone(&sampling));
        sampling
    }

    /// Has the meter sum what the engine leading process group `group` uses from its next
    /// read on (`None`: an engine benchpass did not start, everything the source covers), and
    /// waits (between cells, outside any run) until the thread has taken it, at most a second
    /// past an interval. Each reading's step is summed over what was followed when it was read,
    /// so the series stays one line across a change.
    pub async fn follow_engine(&self, group: Option<u32>) {
        if self.found.is_err() {
            return;
        }
        let before = self.followed.load(Ordering::SeqCst);
        *self.follow.lock().unwrap_or_else(|e| e.into_inner()) = Some(group);
        let give_up = Instant::now() + self.interval + Duration::from_secs(1);
        while self.followed.load(Ordering::SeqCst) == before && Instant::now() < give_up {
            tokio::time::sleep(self.interval / 4).await;
        }
    }

    /// What the source covers now (the domain a cell records).
    pub fn domain(&self) -> String {
        self.domain.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Joules between `from` and `to` from the readings ([`crate::platform::energy::series`]);
    /// `None` without a source or readings that reach both ends.
    pub fn joules_between(&self, from: Instant, to: Instant) -> Option<f64> {
        let (_, _, reading) = self.found.as_ref().ok()?;
        let readings = self.readings.lock().unwrap_or_else(|e| e.into_inner());
        let origin = readings.front()?.0.min(from);
        let secs = |t: Instant| t.duration_since(origin).as_secs_f64();
        let points: Vec<(f64, f64)> = readings.iter().map(|&(t, v)| (secs(t), v)).collect();
        crate::platform::energy::series::joules_between(*reading, &points, secs(from), secs(to))
    }

    /// The GPU over a run from `from` to `to`: the samples placed inside it, or where none is
    /// (a run shorter than the interval), the one nearest its middle if within an interval.
    pub fn gpu_over(&self, from: Instant, to: Instant) -> Option<benchpass_format::RunGpu> {
        let gpu = self.gpu.lock().unwrap_or_else(|e| e.into_inner());
        let inside: Vec<_> = gpu.iter().filter(|(t, _)| *t >= from && *t <= to).map(|(_, s)| *s).collect();
        if !inside.is_empty() {
            return crate::platform::energy::gpu_over(&inside);
        }
        let middle = from + to.saturating_duration_since(from) / 2;
        let distance = |t: Instant| if t > middle { t - middle } else { middle - t };
        let nearest = gpu.iter().min_by_key(|(t, _)| distance(*t)).filter(|(t, _)| distance(*t) <= self.interval)?;
        crate::platform::energy::gpu_over(&[nearest.1])
    }

    /// Whether a reading was taken at or after `t`.
    fn reaches(&self, t: Instant) -> bool {
        self.readings.lock().unwrap_or_else(|e| e.into_inner()).back().is_some_and(|(at, _)| *at >= t)
    }

    /// Waits (outside any run's timed path) until a reading at or after `t` is in, at most
    /// three intervals and a lag; `false` where none came.
    pub async fn wait_past(&self, t: Instant) -> bool {
        let give_up = t + self.interval * 3 + self.interval / 2 + Duration::from_millis(50);
        while !self.reaches(t) {
            if self.found.is_err() || Instant::now() > give_up {
                return false;
            }
            tokio::time::sleep(self.interval / 4).await;
        }
        true
    }

    /// A run's energy: from `started` to `ended`, split at the first token (`ttft_ms` after
    /// `started`) and at the last token event (`decode_ms` after it).
    pub async fn over_run(&self, started: Instant, ttft_ms: Option<f64>, decode_ms: Option<f64>, ended: Instant) -> Option<benchpass_format::RunEnergy> {
        self.found.as_ref().ok()?;
        if !self.wait_past(ended).await {
            return None;
        }
        let after = |ms: f64| (ms.is_finite() && ms >= 0.0).then(|| started + Duration::from_secs_f64(ms / 1e3)).filter(|t| *t <= ended);
        let first_token = ttft_ms.and_then(after);
        let last_token = ttft_ms.zip(decode_ms).and_then(|(t, d)| after(t + d));
        Some(benchpass_format::RunEnergy {
            joules: self.joules_between(started, ended)?,
            seconds: ended.duration_since(started).as_secs_f64(),
            prefill_joules: first_token.and_then(|f| self.joules_between(started, f)),
            decode_joules: first_token.zip(last_token).and_then(|(f, l)| self.joules_between(f, l)),
        })
    }

    /// The cell's energy provenance, with the idle baseline: `idle` of sampling from now,
    /// waited here (the engine loaded, no request in flight); mean watts over it.
    pub async fn cell_energy(&self, idle: Duration) -> benchpass_format::CellEnergy {
        let (source, reading) = match &self.found {
            Ok((source, _, reading)) => (*source, *reading),
            Err(why) => return benchpass_format::CellEnergy { unavailable: Some(why.clone()), ..Default::default() },
        };
        let mut energy = benchpass_format::CellEnergy {
            source: Some(source),
            domain: self.domain(),
            reading: Some(reading),
            interval_ms: self.interval.as_millis() as u64,
            ..Default::default()
        };
        // From the first reading taken from now on, so that a reading holds each end.
        let now = Instant::now();
        let first = if self.wait_past(now).await { self.readings.lock().unwrap_or_else(|e| e.into_inner()).back().map(|(t, _)| *t) } else { None };
        if let (false, Some(from)) = (idle.is_zero(), first) {
            let to = from + idle;
            tokio::time::sleep_until(to).await;
            if self.wait_past(to).await {
                energy.idle_ms = idle.as_millis() as u64;
                energy.idle_watts = self.joules_between(from, to).map(|j| j / to.duration_since(from).as_secs_f64()).filter(|w| w.is_finite());
            }
        }
        energy
    }
}


/// The running sampler; dropping it stops the sampling.
pub struct Sampling(Arc<MachineSampler>);

impl std::ops::Deref for Sampling {
    type Target = MachineSampler;
    fn deref(&self) -> &MachineSampler {
        &self.0
    }
}

impl Drop for Sampling {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Relaxed);
        if let Some(energy) = &self.0.energy {
            energy.stop.store(true, Ordering::Relaxed);
        }
    }
}

impl MachineSampler {
    /// Samples this machine's state every [`INTERVAL`] until the handle is dropped: thermal
    /// pressure where the OS has a level (macOS), memory state on every OS that tells it.
    pub fn start() -> Sampling {
        #[cfg(target_os = "macos")]
        let thermal = crate::provenance::mac::thermal_pressure_now;
        #[cfg(not(target_os = "macos"))]
        let thermal = || None;
        let energy = EnergySampling::start(|| crate::platform::energy::open(ENERGY_INTERVAL), ENERGY_INTERVAL);
        Self::start_with_energy(move || Reading { thermal: thermal(), memory: crate::platform::memory_state() }, INTERVAL, Some(energy))
    }

    /// [`MachineSampler::start_with`] with an energy series beside it.
    pub fn start_with_energy(mut read: impl FnMut() -> Reading + Send + 'static, every: Duration, energy: Option<Arc<EnergySampling>>) -> Sampling {
        let mut changes = Changes::default();
        changes.record(Instant::now(), read());
        let sampler = Arc::new(MachineSampler { changes: Mutex::new(changes), stop: AtomicBool::new(false), energy });
        let writer = Arc::clone(&sampler);
        let spawned = std::thread::Builder::new().name("machine-sampler".into()).spawn(move || {
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
            eprintln!("warning: cannot start the machine sampler ({e}): runs record the state read when the pass began");
        }
        Sampling(sampler)
    }

    /// The energy series, where the sampler has one.
    pub fn energy(&self) -> Option<&EnergySampling> {
        self.energy.as_deref()
    }

    /// Samples `read` every `every`, on a thread of its own (a read may block, or start a
    /// process, and the runtime's threads carry the streams being timed). The first reading is
    /// taken before this returns, so that a run that begins at once has the level then in force.
    pub fn start_with(read: impl FnMut() -> Reading + Send + 'static, every: Duration) -> Sampling {
        Self::start_with_energy(read, every, None)
    }

    /// The thermal level in force now; `None` where this OS tells none.
    pub fn thermal_now(&self) -> Option<ThermalPressure> {
        self.changes.lock().unwrap_or_else(|e| e.into_inner()).in_force(Instant::now()).and_then(|r| r.thermal)
    }

    /// The highest thermal level in force between `from` and `to` (see [`Changes::max_over`]).
    pub fn max_over(&self, from: Instant, to: Instant) -> Option<ThermalPressure> {
        self.changes.lock().unwrap_or_else(|e| e.into_inner()).max_over(from, to)
    }

    /// What a run between `from` and `to` records of the machine ([`OverRun`]).
    pub fn over_run(&self, from: Instant, to: Instant) -> OverRun {
        self.changes.lock().unwrap_or_else(|e| e.into_inner()).over_run(from, to)
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
            c.record(secs(t0, i as f64), Reading::thermal(r));
        }
        c
    }

    #[test]
    fn only_changes_are_kept() {
        let t0 = Instant::now();
        let kept: Vec<(f64, Option<ThermalPressure>)> = changes(t0).0.iter().map(|(t, r)| (t.duration_since(t0).as_secs_f64(), r.thermal)).collect();
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

    /// A source that samples the GPU too: a counter of 1 J a read, the GPU at 1000 MHz, half
    /// active, 60 °C, then from the sixth read 700 MHz at 80 °C.
    struct FakeMeter(u32);

    impl crate::platform::energy::Meter for FakeMeter {
        fn source(&self) -> crate::platform::energy::EnergySource {
            crate::platform::energy::EnergySource::Rapl
        }
        fn domain(&self) -> String {
            "package".to_owned()
        }
        fn reading(&self) -> crate::platform::energy::EnergyReading {
            crate::platform::energy::EnergyReading::Counter
        }
        fn read(&mut self) -> Option<f64> {
            self.0 += 1;
            Some(f64::from(self.0))
        }
        fn gpu(&self) -> Option<crate::platform::energy::GpuSample> {
            let hot = self.0 > 5;
            Some(crate::platform::energy::GpuSample { freq_mhz: Some(if hot { 700.0 } else { 1000.0 }), active: 0.5, temp_c: Some(if hot { 80.0 } else { 60.0 }) })
        }
    }

    #[test]
    fn a_run_gets_the_gpu_samples_of_its_interval() {
        let sampling = EnergySampling::start(|| Ok(Box::new(FakeMeter(0)) as Box<dyn crate::platform::energy::Meter>), Duration::from_millis(20));
        let started = Instant::now();
        std::thread::sleep(Duration::from_millis(60));
        let early = sampling.gpu_over(started, Instant::now()).expect("samples in 60 ms at one per 20 ms");
        assert!(early.samples >= 1);
        assert_eq!((early.freq_mhz_mean, early.freq_mhz_min, early.temp_max_c), (Some(1000.0), Some(1000.0), Some(60.0)), "{early:?}");
        assert!((early.active_mean - 0.5).abs() < 1e-12);
        // Past the sixth read: the hotter, slower samples are the run's lowest and hottest.
        std::thread::sleep(Duration::from_millis(200));
        let whole = sampling.gpu_over(started, Instant::now()).unwrap();
        assert_eq!((whole.freq_mhz_min, whole.temp_max_c), (Some(700.0), Some(80.0)), "{whole:?}");
        let mean = whole.freq_mhz_mean.unwrap();
        assert!(mean > 700.0 && mean < 1000.0, "{whole:?}");
        // A run long before any sample has none.
        let before = started - Duration::from_secs(10);
        assert_eq!(sampling.gpu_over(before, before + Duration::from_millis(5)), None);
        sampling.stop.store(true, Ordering::Relaxed);
    }

    #[test]
    fn a_flapping_level_keeps_the_last_changes() {
        let t0 = Instant::now();
        let mut c = Changes::default();
        for i in 0..KEEP + 3 {
            c.record(secs(t0, i as f64), Reading::thermal(Some(if i % 2 == 0 { Nominal } else { Heavy })));
        }
        assert_eq!(c.0.len(), KEEP);
        assert_eq!(c.0.front().unwrap().0, secs(t0, 3.0), "the three oldest went");
    }

    #[test]
    fn the_sampler_reads_first_at_start_then_on_its_schedule_until_dropped() {
        let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&reads);
        // The level rises with each read: nominal at start, moderate, heavy, … sleeping.
        let source = move || Reading::thermal(ThermalPressure::from_level(counted.fetch_add(1, Ordering::SeqCst).min(4) as u64));
        let started = Instant::now();
        let sampling = MachineSampler::start_with(source, Duration::from_millis(50));
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

    /// Swap in use and memory pressure read at 0, 1, 2, … s, worked by hand below.
    fn memory_changes(t0: Instant) -> Changes {
        let mib = |n: u64| n << 20;
        let state = |swap: u64, pressure: MemoryPressure, psi: f64| Reading {
            thermal: None,
            memory: MemoryState { swap_used_bytes: Some(mib(swap)), pressure: Some(pressure), psi_some_avg10: Some(psi) },
        };
        let mut c = Changes::default();
        let series = [
            state(100, MemoryPressure::Normal, 0.0),
            state(100, MemoryPressure::Normal, 0.0),
            state(100, MemoryPressure::Warning, 2.5),
            state(900, MemoryPressure::Critical, 31.0),
            state(1400, MemoryPressure::Warning, 12.0),
            state(1400, MemoryPressure::Normal, 4.0),
        ];
        for (i, r) in series.into_iter().enumerate() {
            c.record(secs(t0, i as f64), r);
        }
        c
    }

    #[test]
    fn a_run_gets_swap_before_and_after_and_the_highest_memory_pressure() {
        let t0 = Instant::now();
        let c = memory_changes(t0);
        let mib = |n: u64| Some(n << 20);
        // 0.5–1.5 s: nothing rose; normal throughout.
        let calm = c.over_run(secs(t0, 0.5), secs(t0, 1.5));
        assert_eq!((calm.swap_used_before, calm.swap_used_after), (mib(100), mib(100)));
        assert_eq!((calm.memory_pressure, calm.psi_some_avg10), (Some(MemoryPressure::Normal), Some(0.0)));
        // 1.5–4.5 s: swap 100 MiB when it began (read at 1), 1400 MiB when it ended (read at 4);
        // critical at 3 and gone by the end is kept, as is PSI's 31.0.
        let swapping = c.over_run(secs(t0, 1.5), secs(t0, 4.5));
        assert_eq!((swapping.swap_used_before, swapping.swap_used_after), (mib(100), mib(1400)));
        assert_eq!((swapping.memory_pressure, swapping.psi_some_avg10), (Some(MemoryPressure::Critical), Some(31.0)));
        assert_eq!(swapping.thermal, None, "no thermal level in this series");
        // 4.2–5.5 s: warning in force at its start, normal read at 5.
        let after = c.over_run(secs(t0, 4.2), secs(t0, 5.5));
        assert_eq!((after.swap_used_before, after.swap_used_after), (mib(1400), mib(1400)));
        assert_eq!(after.memory_pressure, Some(MemoryPressure::Warning));
        // Before the first reading nothing was known.
        assert_eq!(Changes::default().over_run(t0, secs(t0, 1.0)), OverRun::default());
    }

    #[test]
    fn the_swapped_mark_follows_the_recorded_swap() {
        let t0 = Instant::now();
        let c = memory_changes(t0);
        let record = |from: f64, to: f64| {
            let over = c.over_run(secs(t0, from), secs(t0, to));
            crate::pass::RunRecord {
                swap_used_before_bytes: over.swap_used_before,
                swap_used_after_bytes: over.swap_used_after,
                ..crate::pass::RunRecord::unmeasured("c0", crate::pass::Workload::Sustained, 0, 0, false, 8)
            }
        };
        assert_eq!(record(0.5, 1.5).swapped(), Some(false));
        assert_eq!(record(1.5, 4.5).swapped(), Some(true), "100 → 1400 MiB");
        assert_eq!(record(4.2, 5.5).swapped(), Some(false));
        assert_eq!(crate::pass::RunRecord::unmeasured("c0", crate::pass::Workload::Sustained, 0, 0, false, 8).swapped(), None);
    }

    /// A counter that rises at 10 W on the real clock: the readings are on one line, so every
    /// interval's energy is 10 J a second, whatever the instants the sampler read it at.
    struct TenWatts(std::time::Instant);

    impl crate::platform::energy::Meter for TenWatts {
        fn source(&self) -> benchpass_format::EnergySource {
            benchpass_format::EnergySource::Rapl
        }
        fn domain(&self) -> String {
            "package".to_owned()
        }
        fn reading(&self) -> benchpass_format::EnergyReading {
            benchpass_format::EnergyReading::Counter
        }
        fn read(&mut self) -> Option<f64> {
            Some(10.0 * self.0.elapsed().as_secs_f64())
        }
    }

    #[tokio::test]
    async fn a_run_gets_its_energy_split_at_the_first_token_and_the_cell_its_idle_watts() {
        let every = Duration::from_millis(20);
        let energy = EnergySampling::start(|| Ok(Box::new(TenWatts(std::time::Instant::now())) as Box<dyn crate::platform::energy::Meter>), every);
        let sampling = MachineSampler::start_with_energy(Reading::default, every, Some(energy));
        let e = sampling.energy().unwrap();
        // Idle baseline: 300 ms at 10 W.
        let cell = e.cell_energy(Duration::from_millis(300)).await;
        assert_eq!((cell.source, cell.domain.as_str(), cell.interval_ms, cell.idle_ms), (Some(benchpass_format::EnergySource::Rapl), "package", 20, 300));
        let idle = cell.idle_watts.unwrap();
        assert!((idle - 10.0).abs() < 0.05, "{idle} W");
        // A run of 400 ms: first token at 100 ms, last at 350 ms: 4 J, 1 J of prefill, 2.5 J of decode.
        let started = Instant::now();
        tokio::time::sleep(Duration::from_millis(400)).await;
        let ended = started + Duration::from_millis(400);
        let run = e.over_run(started, Some(100.0), Some(250.0), ended).await.unwrap();
        assert!((run.joules - 4.0).abs() < 0.02 && (run.seconds - 0.4).abs() < 1e-9, "{run:?}");
        assert!((run.prefill_joules.unwrap() - 1.0).abs() < 0.02, "{run:?}");
        assert!((run.decode_joules.unwrap() - 2.5).abs() < 0.02, "{run:?}");
        // No first token: the total only.
        let failed = e.over_run(started, None, None, ended).await.unwrap();
        assert_eq!((failed.prefill_joules, failed.decode_joules), (None, None));
        // Before the first reading: not measured.
        assert_eq!(e.joules_between(started - Duration::from_secs(60), started), None);
    }

    /// Four GPUs at 10 W each: following an engine narrows the sum to its one GPU, and the
    /// series stays one line through the change (no step is lost or counted twice).
    struct FourGpus {
        opened: std::time::Instant,
        joules: f64,
        last_s: f64,
        gpus: usize,
    }

    impl crate::platform::energy::Meter for FourGpus {
        fn source(&self) -> benchpass_format::EnergySource {
            benchpass_format::EnergySource::Nvml
        }
        fn domain(&self) -> String {
            if self.gpus == 1 { "gpu".to_owned() } else { format!("gpu×{}", self.gpus) }
        }
        fn reading(&self) -> benchpass_format::EnergyReading {
            benchpass_format::EnergyReading::Counter
        }
        fn read(&mut self) -> Option<f64> {
            let now = self.opened.elapsed().as_secs_f64();
            self.joules += 10.0 * self.gpus as f64 * (now - self.last_s);
            self.last_s = now;
            Some(self.joules)
        }
        fn follow(&mut self, group: Option<u32>) {
            self.gpus = if group == Some(4242) { 1 } else { 4 };
        }
    }

    #[tokio::test]
    async fn following_the_engine_narrows_the_domain_and_its_watts() {
        let every = Duration::from_millis(20);
        let meter = || Ok(Box::new(FourGpus { opened: std::time::Instant::now(), joules: 0.0, last_s: 0.0, gpus: 4 }) as Box<dyn crate::platform::energy::Meter>);
        let energy = EnergySampling::start(meter, every);
        assert_eq!(energy.domain(), "gpu×4");
        let all = energy.cell_energy(Duration::from_millis(200)).await;
        assert_eq!(all.domain, "gpu×4");
        assert!((all.idle_watts.unwrap() - 40.0).abs() < 0.5, "{all:?}");
        energy.follow_engine(Some(4242)).await;
        assert_eq!(energy.domain(), "gpu");
        let one = energy.cell_energy(Duration::from_millis(200)).await;
        assert_eq!(one.domain, "gpu");
        assert!((one.idle_watts.unwrap() - 10.0).abs() < 0.5, "{one:?}");
        energy.follow_engine(None).await;
        assert_eq!(energy.domain(), "gpu×4");
    }

    #[tokio::test]
    async fn without_a_source_the_cell_says_why_and_runs_record_none() {
        let energy = EnergySampling::start(|| Err("powercap: none here".to_owned()), Duration::from_millis(20));
        let cell = energy.cell_energy(Duration::from_millis(50)).await;
        assert_eq!(cell, benchpass_format::CellEnergy { unavailable: Some("powercap: none here".to_owned()), ..Default::default() });
        let now = Instant::now();
        assert_eq!(energy.over_run(now, Some(1.0), Some(1.0), now).await, None);
    }
}
