//! macOS through libproc: the kernel's `proc_pid_rusage` for memory (physical footprint,
//! resident size, lifetime peak), `proc_listpids` by parent for the tree, `proc_pidinfo` for a
//! process's start time, and `lsof` for the process on a port. Type-checked on Linux CI
//! (`cargo xtask check-targets`), not run there.

use libproc::libproc::bsd_info::BSDInfo;
use libproc::libproc::pid_rusage::{pidrusage, RUsageInfoV4};
use libproc::libproc::proc_pid::pidinfo;
use libproc::processes::{pids_by_type, ProcFilter};

use super::{MemoryMeasure, TreeMemory};

pub const MEMORY_MEASURE: Option<MemoryMeasure> = Some(MemoryMeasure::PhysFootprint);

pub fn tree_memory(pid: u32) -> Option<TreeMemory> {
    let mut total = TreeMemory { bytes: 0, measure: MemoryMeasure::PhysFootprint, resident_bytes: Some(0), lifetime_peak_bytes: Some(0), file_backed_bytes: None };
    let mut stack = vec![pid];
    let mut seen = 0;
    let mut any = false;
    while let Some(p) = stack.pop() {
        seen += 1;
        if let Ok(usage) = pidrusage::<RUsageInfoV4>(p as i32) {
            any = true;
            total.bytes += usage.ri_phys_footprint;
            total.resident_bytes = total.resident_bytes.map(|b| b + usage.ri_resident_size);
            total.lifetime_peak_bytes = total.lifetime_peak_bytes.map(|b| b + usage.ri_lifetime_max_phys_footprint);
        }
        stack.extend(pids_by_type(ProcFilter::ByParentProcess { ppid: p }).unwrap_or_default());
        if seen > 10_000 {
            break;
        }
    }
    any.then_some(total)
}

/// The machine's swap in use: `vm.swapusage`'s `xsu_used`, read with `sysctlbyname` (no
/// process started).
pub fn swap_used_bytes() -> Option<u64> {
    use sysctl::Sysctl as _;
    match sysctl::Ctl::new("vm.swapusage").ok()?.value().ok()? {
        sysctl::CtlValue::Struct(bytes) => super::readings::parse_xsw_usage_used(&bytes),
        _ => None,
    }
}

/// `kern.memorystatus_vm_pressure_level`, read with `sysctlbyname` (no process started;
/// readable without privileges on macOS).
pub fn memory_pressure() -> Option<super::MemoryPressure> {
    use sysctl::Sysctl as _;
    let level = match sysctl::Ctl::new("kern.memorystatus_vm_pressure_level").ok()?.value().ok()? {
        sysctl::CtlValue::Int(n) => i64::from(n),
        sysctl::CtlValue::Uint(n) => i64::from(n),
        sysctl::CtlValue::S32(n) => i64::from(n),
        sysctl::CtlValue::U32(n) => i64::from(n),
        _ => return None,
    };
    super::MemoryPressure::from_sysctl(level)
}

pub fn start_time(pid: u32) -> Option<u64> {
    let info = pidinfo::<BSDInfo>(pid as i32, 0).ok()?;
    Some(info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec)
}

pub fn listeners_of_port(port: u16) -> Vec<(u32, String)> {
    let port_arg = format!("-iTCP:{port}");
    let Ok(out) = super::command("lsof").args(["-nP", &port_arg, "-sTCP:LISTEN", "-Fpc"]).output() else {
        return Vec::new();
    };
    super::lsof::listeners(&String::from_utf8_lossy(&out.stdout))
}

pub fn process_cpu_seconds() -> Option<f64> {
    super::unix::process_cpu_seconds()
}
