//! NVIDIA GPUs through NVML (`nvml-wrapper`, which loads `libnvidia-ml.so.1` when the pass
//! starts, so a machine without the driver builds and runs and records energy unavailable):
//! `nvmlDeviceGetTotalEnergyConsumption`, millijoules since the driver was loaded (Volta and
//! later). Summed over the GPUs the engine's processes use, where the pass started the engine
//! and NVML lists one of its processes on a GPU; over every GPU NVML lists otherwise.

use nvml_wrapper::Nvml;

use super::{EnergyReading, EnergySource, Meter};

pub struct NvmlMeter {
    nvml: Nvml,
    devices: u32,
    /// Each GPU's counter at the last read, mJ.
    last_mj: Vec<u64>,
    /// The GPUs summed: the engine's, or `None` for every one.
    used: Option<Vec<usize>>,
    joules: f64,
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
        let mut meter = NvmlMeter { nvml, devices, last_mj: Vec::new(), used: None, joules: 0.0 };
        meter.last_mj = meter.counters_mj().map_err(|e| format!("NVML: no total energy counter ({e})"))?;
        Ok(meter)
    }

    fn counters_mj(&self) -> Result<Vec<u64>, nvml_wrapper::error::NvmlError> {
        (0..self.devices).map(|i| self.nvml.device_by_index(i)?.total_energy_consumption()).collect()
    }

    /// The pids NVML lists on each GPU (compute and graphics); a GPU it cannot ask lists none.
    fn pids_per_gpu(&self) -> Vec<Vec<u32>> {
        (0..self.devices)
            .map(|i| {
                let Ok(device) = self.nvml.device_by_index(i) else { return Vec::new() };
                let compute = device.running_compute_processes().unwrap_or_default();
                let graphics = device.running_graphics_processes().unwrap_or_default();
                compute.iter().chain(&graphics).map(|p| p.pid).collect()
            })
            .collect()
    }
}

/// The GPUs with a process of the engine's group on them, in index order; `in_group` says of a
/// pid whether it is the engine's (its process group is the one the engine leads).
pub fn engine_gpus(pids_per_gpu: &[Vec<u32>], in_group: impl Fn(u32) -> bool) -> Vec<usize> {
    pids_per_gpu.iter().enumerate().filter(|(_, pids)| pids.iter().any(|&p| in_group(p))).map(|(i, _)| i).collect()
}

/// A domain as a key names it: `gpu`, `gpu×2`.
fn gpu_domain(n: usize) -> String {
    if n == 1 { "gpu".to_owned() } else { format!("gpu×{n}") }
}

impl Meter for NvmlMeter {
    fn source(&self) -> EnergySource {
        EnergySource::Nvml
    }

    fn domain(&self) -> String {
        gpu_domain(self.used.as_ref().map_or(self.devices as usize, Vec::len))
    }

    fn reading(&self) -> EnergyReading {
        EnergyReading::Counter
    }

    /// Joules since the meter was opened: each read's step summed over the GPUs used then
    /// (the counters are 64 bits of millijoules: they do not wrap; one that goes back gives no
    /// reading).
    fn read(&mut self) -> Option<f64> {
        let now = self.counters_mj().ok()?;
        let steps: Vec<u64> = now.iter().zip(&self.last_mj).map(|(n, l)| n.checked_sub(*l)).collect::<Option<_>>()?;
        self.last_mj = now;
        let summed: u64 = match &self.used {
            Some(used) => used.iter().map(|&i| steps[i]).sum(),
            None => steps.iter().sum(),
        };
        self.joules += summed as f64 / 1e3;
        Some(self.joules)
    }

    /// The engine's GPUs: those NVML lists a process of its group on (vLLM's workers, a
    /// llama.cpp server). None listed (a container sees other pids than the driver's, or the
    /// engine runs on the CPU): every GPU, said once.
    fn follow(&mut self, group: Option<u32>) {
        let Some(group) = group else {
            self.used = None;
            return;
        };
        let leader = nix::unistd::Pid::from_raw(group as i32);
        let in_group = |pid: u32| nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(pid as i32))).is_ok_and(|g| g == leader);
        let gpus = engine_gpus(&self.pids_per_gpu(), in_group);
        if gpus.is_empty() {
            eprintln!("energy: NVML lists no process of the engine (pid {group}) on a GPU: summing every GPU ({})", gpu_domain(self.devices as usize));
            self.used = None;
        } else {
            self.used = Some(gpus);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::engine_gpus;

    /// Four GPUs: the engine's group holds pids 100 and 101 (a server and its worker), on GPUs
    /// 1 and 3; another user's job is on 0; GPU 2 is idle.
    #[test]
    fn the_engines_gpus_are_those_its_group_runs_on() {
        let pids = [vec![7], vec![100], vec![], vec![55, 101]];
        let ours = |p: u32| p == 100 || p == 101;
        assert_eq!(engine_gpus(&pids, ours), vec![1, 3]);
        assert_eq!(engine_gpus(&pids, |_| false), Vec::<usize>::new());
    }
}
