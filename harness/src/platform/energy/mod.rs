//! Where the machine's energy is read, one small interface ([`Meter`]) with a source each:
//! Linux RAPL through powercap (`rapl.rs`, a counter), NVIDIA GPUs through NVML (`nvml.rs`, a
//! counter, Linux), Apple silicon's power through IOReport (`macos.rs`, sampled power). Windows
//! has no documented counter an unprivileged process can read: energy is unavailable there,
//! and said. Each meter is read only by the pass's sampler, on its own thread
//! ([`crate::sampler`]); a run reads the series it keeps (docs/metrics.md "Energy").

use std::time::Duration;

pub use benchpass_format::{EnergyReading, EnergySource};

pub mod rapl;
pub mod series;

#[cfg(target_os = "linux")]
mod nvml;

#[cfg(target_os = "macos")]
mod macos;

/// One source of energy readings.
pub trait Meter {
    fn source(&self) -> EnergySource;
    /// What the source covers (`package+dram`, `gpu×2`, `cpu+gpu+ane+dram`).
    fn domain(&self) -> String;
    fn reading(&self) -> EnergyReading;
    /// A counter: joules since the meter was opened (wraps stepped through). Sampled power:
    /// watts. `None` where this read failed.
    fn read(&mut self) -> Option<f64>;
    /// Whether [`Meter::read`] itself takes the sampling interval (a mean over it).
    fn blocks_for_its_interval(&self) -> bool {
        false
    }
    /// How long before the read's return the reading holds (half the interval of a mean).
    fn lag(&self) -> Duration {
        Duration::ZERO
    }
    /// Sum only what the engine leading process group `group` uses (NVML: its GPUs), or,
    /// `None`, everything the source covers; [`Meter::domain`] says the outcome. A source of
    /// one machine-wide domain ignores it.
    fn follow(&mut self, _group: Option<u32>) {}
    /// The GPU as the last [`Meter::read`] saw it, where the source samples it too.
    fn gpu(&self) -> Option<GpuSample> {
        None
    }
}

/// One sample of the GPU (Apple silicon: IOReport's GPU residency and the SMC's sensors).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuSample {
    /// The frequency over the interval's active residency, MHz; `None` for an interval it was
    /// idle throughout.
    pub freq_mhz: Option<f64>,
    /// The share of the interval the GPU was active, 0 to 1.
    pub active: f64,
    /// The hottest of the CPU and GPU temperature averages, °C, where a sensor read.
    pub temp_c: Option<f64>,
}

/// The figures of the GPU samples that fall in a run's interval ([`crate::sampler`] picks
/// them); `None` without one.
pub fn gpu_over(samples: &[GpuSample]) -> Option<benchpass_format::RunGpu> {
    let n = samples.len();
    if n == 0 {
        return None;
    }
    let freqs: Vec<f64> = samples.iter().filter_map(|s| s.freq_mhz).collect();
    Some(benchpass_format::RunGpu {
        samples: u32::try_from(n).unwrap_or(u32::MAX),
        freq_mhz_mean: (!freqs.is_empty()).then(|| freqs.iter().sum::<f64>() / freqs.len() as f64),
        freq_mhz_min: freqs.iter().copied().reduce(f64::min),
        active_mean: samples.iter().map(|s| s.active).sum::<f64>() / n as f64,
        temp_max_c: samples.iter().filter_map(|s| s.temp_c).reduce(f64::max),
    })
}

/// Which source a pass uses: `BENCHPASS_ENERGY` (`rapl`, `nvml`, `macmon` or `off`), else the
/// first this machine has of NVML (an engine on a GPU spends its energy there), RAPL, macmon.
/// `Err` says why none can be read, each source's reason joined.
pub fn open(interval: Duration) -> Result<Box<dyn Meter>, String> {
    if cfg!(windows) {
        return Err("Windows has no documented energy counter benchpass can read".to_owned());
    }
    let asked = std::env::var("BENCHPASS_ENERGY").unwrap_or_default();
    let order: &[&str] = match asked.as_str() {
        "off" => return Err("turned off (BENCHPASS_ENERGY=off)".to_owned()),
        "rapl" => &["rapl"],
        "nvml" => &["nvml"],
        "macmon" => &["macmon"],
        // A fake powercap tree is a test's: it is read first.
        _ if std::env::var_os("BENCHPASS_POWERCAP_ROOT").is_some() || std::env::var_os("BENCHPASS_HWMON_ROOT").is_some() => &["rapl"],
        _ => &["nvml", "rapl", "macmon"],
    };
    let mut why = Vec::new();
    for source in order {
        match open_one(source, interval) {
            Ok(Some(meter)) => return Ok(meter),
            Ok(None) => {}
            Err(e) => why.push(e),
        }
    }
    if why.is_empty() {
        why.push(format!("no energy source on {}", std::env::consts::OS));
    }
    Err(why.join("; "))
}

/// `Ok(None)` where the source does not exist on this OS.
#[allow(unused_variables)]
fn open_one(source: &str, interval: Duration) -> Result<Option<Box<dyn Meter>>, String> {
    match source {
        #[cfg(target_os = "linux")]
        "rapl" => rapl::open_either().map(|r| {
            for zone in &r.left_out {
                eprintln!("energy: a RAPL zone left out ({zone})");
            }
            Some(Box::new(r) as Box<dyn Meter>)
        }),
        #[cfg(target_os = "linux")]
        "nvml" => nvml::NvmlMeter::open().map(|m| Some(Box::new(m) as Box<dyn Meter>)),
        #[cfg(target_os = "macos")]
        "macmon" => macos::MacPower::open(interval).map(|m| Some(Box::new(m) as Box<dyn Meter>)),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::{gpu_over, GpuSample};

    /// Three samples worked by hand: frequency over the two active ones (1200 and 900 MHz:
    /// mean 1050, lowest 900), active (0.9 + 0.6 + 0) ÷ 3 = 0.5, hottest 71 °C.
    #[test]
    fn the_gpu_over_a_run_is_its_samples_mean_lowest_and_hottest() {
        let samples = [
            GpuSample { freq_mhz: Some(1200.0), active: 0.9, temp_c: Some(65.0) },
            GpuSample { freq_mhz: Some(900.0), active: 0.6, temp_c: Some(71.0) },
            GpuSample { freq_mhz: None, active: 0.0, temp_c: None },
        ];
        let gpu = gpu_over(&samples).unwrap();
        assert_eq!(gpu.samples, 3);
        assert_eq!((gpu.freq_mhz_mean, gpu.freq_mhz_min), (Some(1050.0), Some(900.0)));
        assert!((gpu.active_mean - 0.5).abs() < 1e-12);
        assert_eq!(gpu.temp_max_c, Some(71.0));
        // Idle throughout: no frequency; no sample: nothing.
        let idle = gpu_over(&samples[2..]).unwrap();
        assert_eq!((idle.freq_mhz_mean, idle.freq_mhz_min, idle.temp_max_c), (None, None, None));
        assert_eq!(gpu_over(&[]), None);
    }

    /// Whatever this machine has: a meter that reads twice, increasing (a counter) or a power,
    /// or, with none, the reasons, each source's. Never a silent pass: what ran is printed.
    #[test]
    fn this_machine_reads_energy_or_says_why_not() {
        if std::env::var_os("BENCHPASS_POWERCAP_ROOT").is_some() || std::env::var_os("BENCHPASS_HWMON_ROOT").is_some() {
            eprintln!("skipped: a fake powercap or hwmon tree is set, this test reads the machine's own sources");
            return;
        }
        match super::open(std::time::Duration::from_millis(100)) {
            Ok(mut meter) => {
                let (first, second) = (meter.read(), {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    meter.read()
                });
                eprintln!("ran: {}:{} read {first:?} then {second:?}", meter.source().as_str(), meter.domain());
                let (first, second) = (first.expect("a first read"), second.expect("a second read"));
                assert!(first.is_finite() && second.is_finite());
                if meter.reading() == super::EnergyReading::Counter {
                    assert!(second >= first, "a counter never goes back");
                }
            }
            Err(why) => {
                eprintln!("skipped: no energy source on this machine ({why})");
                #[cfg(target_os = "linux")]
                {
                    assert!(why.contains("NVML"), "{why}");
                    assert!(why.contains("powercap"), "{why}");
                    assert!(why.contains("amd_energy"), "{why}");
                }
            }
        }
    }
}
