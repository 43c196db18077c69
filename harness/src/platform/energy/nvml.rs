//! NVIDIA GPUs through NVML (`nvml-wrapper`, which loads `libnvidia-ml.so.1` when the pass
//! starts, so a machine without the driver builds and runs and records energy unavailable):
//! `nvmlDeviceGetTotalEnergyConsumption`, millijoules since the driver was loaded (Volta and
//! later), summed over every GPU NVML lists.

use nvml_wrapper::Nvml;

use super::{EnergyReading, EnergySource, Meter};

pub struct NvmlMeter {
    nvml: Nvml,
    devices: u32,
    first_mj: u64,
}

impl NvmlMeter {
    /// Every GPU's counter, read once; `Err` with why where the library, a GPU or its counter
    /// is missing.
    pub fn open() -> Result<NvmlMeter, String> {
        let nvml = Nvml::init().map_err(|e| format!("NVML not loaded ({e})"))?;
        let devices = nvml.device_count().map_err(|e| format!("NVML: no device count ({e})"))?;
        if devices == 0 {
            return Err("NVML: no GPU".to_owned());
        }
        let mut meter = NvmlMeter { nvml, devices, first_mj: 0 };
        meter.first_mj = meter.total_mj().map_err(|e| format!("NVML: no total energy counter ({e})"))?;
        Ok(meter)
    }

    fn total_mj(&self) -> Result<u64, nvml_wrapper::error::NvmlError> {
        let mut sum = 0u64;
        for i in 0..self.devices {
            sum = sum.saturating_add(self.nvml.device_by_index(i)?.total_energy_consumption()?);
        }
        Ok(sum)
    }
}

impl Meter for NvmlMeter {
    fn source(&self) -> EnergySource {
        EnergySource::Nvml
    }

    fn domain(&self) -> String {
        if self.devices == 1 { "gpu".to_owned() } else { format!("gpu×{}", self.devices) }
    }

    fn reading(&self) -> EnergyReading {
        EnergyReading::Counter
    }

    /// Joules since the meter was opened (the counter is 64 bits of millijoules: it does not wrap).
    fn read(&mut self) -> Option<f64> {
        let now = self.total_mj().ok()?;
        Some(now.checked_sub(self.first_mj)? as f64 / 1e3)
    }
}
