//! Apple silicon through IOReport, without sudo (the `macmon` crate, its library only):
//! `Sampler::get_metrics(ms)` blocks for `ms` and gives the mean power of the CPU, GPU, ANE
//! and DRAM over that interval, summed here. A reading is the mean over the interval that
//! ended when it returned, so the sampler places it at the interval's middle ([`Meter::lag`]).

use std::time::Duration;

use super::{EnergyReading, EnergySource, GpuSample, Meter};

pub struct MacPower {
    sampler: macmon::Sampler,
    interval: Duration,
    /// The GPU of the last interval read.
    gpu: Option<GpuSample>,
}

impl MacPower {
    pub fn open(interval: Duration) -> Result<MacPower, String> {
        let sampler = macmon::Sampler::new().map_err(|e| format!("IOReport unavailable ({e})"))?;
        Ok(MacPower { sampler, interval, gpu: None })
    }
}

impl Meter for MacPower {
    fn source(&self) -> EnergySource {
        EnergySource::Macmon
    }

    fn domain(&self) -> String {
        "cpu+gpu+ane+dram".to_owned()
    }

    fn reading(&self) -> EnergyReading {
        EnergyReading::SampledPower
    }

    /// Watts: the mean over the interval just ended (this call blocks for it).
    fn read(&mut self) -> Option<f64> {
        let ms = u32::try_from(self.interval.as_millis()).unwrap_or(u32::MAX);
        let m = self.sampler.get_metrics(ms).ok()?;
        // The same interval's GPU: frequency over its active residency, the share active, and
        // the hottest of the two temperature averages (macmon leaves out sensors out of range).
        let temp = [m.temp.cpu_temp_avg, m.temp.gpu_temp_avg].into_iter().flatten().map(f64::from).reduce(f64::max);
        // An interval the GPU spent idle has no frequency (macmon gives 0).
        let freq_mhz = (m.gpu_freq_mhz > 0).then(|| f64::from(m.gpu_freq_mhz));
        self.gpu = Some(GpuSample { freq_mhz, active: f64::from(m.gpu_active_ratio), temp_c: temp });
        let watts = f64::from(m.cpu_power) + f64::from(m.gpu_power) + f64::from(m.ane_power) + f64::from(m.ram_power);
        watts.is_finite().then_some(watts)
    }

    fn blocks_for_its_interval(&self) -> bool {
        true
    }

    fn lag(&self) -> Duration {
        self.interval / 2
    }

    fn gpu(&self) -> Option<GpuSample> {
        self.gpu
    }
}
