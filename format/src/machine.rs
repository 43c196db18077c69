//! The facts a pass records about the machine it ran on, beyond `MachineInfo`'s own fields: a
//! Mac's chip, cores, power and thermal pressure ([`MacFacts`], [`ThermalPressure`]), Linux's
//! governor, thermal zones and mains power ([`LinuxPowerFacts`]), and which memory figure a
//! run's peak is ([`MemoryMeasure`]).
//!
//! Only the types are here, as the files hold them. What produces them (the parsers of each
//! command's output, the sysfs and `/proc` readers) is the harness's: `provenance/mac.rs`,
//! `provenance/linux_power.rs` and `platform/`.

use serde::{Deserialize, Serialize};

/// What macOS says about the machine. Every field is absent when its command failed or printed
/// something the parser does not recognise.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MacFacts {
    /// `sysctl -n machdep.cpu.brand_string`, e.g. `Apple M1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chip: Option<String>,
    /// `sysctl -n hw.model`, e.g. `MacBookAir10,1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_identifier: Option<String>,
    /// Each CPU performance level macOS reports (`hw.nperflevels`; `hw.perflevelN.name` and
    /// `hw.perflevelN.physicalcpu`), level 0 first: the fastest cores first, as `sys/sysctl.h`
    /// defines perflevel 0. `Performance` + `Efficiency` on M1–M4; M5-generation chips name a
    /// `Super` level (M5: Super + Efficiency; M5 Pro/Max: Super + Performance). Empty when the
    /// names could not be read (an Intel Mac, a macOS without the names, a pass written before
    /// this field existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_levels: Vec<CpuLevel>,
    /// The cores of the level macOS names `Performance`, kept for readers of older passes and
    /// tools that know only two kinds of core. With `cpu_levels` recorded it is that level's
    /// count (absent when no level has that name, as on a base M5); without names it is
    /// `hw.perflevel0.physicalcpu`, as passes before `cpu_levels` recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance_cores: Option<u32>,
    /// The cores of the level macOS names `Efficiency` (absent on an M5 Pro/Max, which has
    /// none); without names, `hw.perflevel1.physicalcpu` as before. See `performance_cores`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency_cores: Option<u32>,
    /// `"gpu-core-count"` of the AGXAccelerator node in `ioreg -rc AGXAccelerator -d1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_cores: Option<u32>,
    /// `sysctl -n hw.memsize`: unified memory in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// `sw_vers`: ProductName, ProductVersion and BuildVersion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<SwVers>,
    /// `sysctl -n sysctl.proc_translated`: benchpass itself runs under Rosetta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rosetta: Option<bool>,
    /// First line of `pmset -g batt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_source: Option<PowerSource>,
    /// `powermode` or `lowpowermode` in `pmset -g`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_mode: Option<PowerMode>,
    /// `sysctl -n iogpu.wired_limit_mb`, in MiB; 0 means no override is set and macOS's own
    /// default limit applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_wired_limit_mb: Option<u64>,
    /// Metal's `recommendedMaxWorkingSetSize` of the GPU (the largest of several), in bytes: how much memory
    /// the GPU can use without hurting its performance, the limit in force whatever
    /// `gpu_wired_limit_mb` says (0 there names no number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metal_recommended_working_set_bytes: Option<u64>,
    /// `sysctl -n vm.swapusage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap: Option<SwapUsage>,
    /// `notifyutil -g com.apple.system.thermalpressurelevel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thermal_pressure: Option<ThermalPressure>,
}

/// One CPU performance level: its name as macOS prints it and its physical core count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuLevel {
    /// `sysctl -n hw.perflevelN.name`, e.g. `Super`, `Performance`, `Efficiency`.
    pub name: String,
    /// `sysctl -n hw.perflevelN.physicalcpu`.
    pub physical_cores: u32,
}

/// `sw_vers` output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwVers {
    /// `macOS` (11 and later) or `Mac OS X` (10.x).
    pub product_name: String,
    pub product_version: String,
    pub build_version: String,
}

/// Where the Mac draws its power from, as the first line of `pmset -g batt` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PowerSource {
    /// `Now drawing from 'AC Power'`.
    Ac,
    /// `Now drawing from 'Battery Power'`.
    Battery,
}

/// The energy mode in `pmset -g`: 0 Automatic, 1 Low Power, 2 High Power.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PowerMode {
    Automatic,
    Low,
    High,
}

impl PowerMode {
    pub fn from_value(value: u8) -> Option<Self> {
        match value {
            0 => Some(Self::Automatic),
            1 => Some(Self::Low),
            2 => Some(Self::High),
            _ => None,
        }
    }
}

/// `sysctl vm.swapusage`, in bytes (the OS prints MiB with two decimals; each figure here is
/// that printed value converted and rounded to the nearest byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapUsage {
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
    pub encrypted: bool,
}

/// macOS's thermal pressure level (`OSThermalPressureLevel` in `libkern/OSThermalNotification.h`,
/// macOS values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThermalPressure {
    Nominal,
    Moderate,
    Heavy,
    Trapping,
    Sleeping,
}

impl ThermalPressure {
    /// The macOS level number: 0 nominal … 4 sleeping. Other Apple platforms number their levels
    /// 0/10/20/30/40/50; those are not macOS values and give `None`.
    pub fn from_level(level: u64) -> Option<Self> {
        match level {
            0 => Some(Self::Nominal),
            1 => Some(Self::Moderate),
            2 => Some(Self::Heavy),
            3 => Some(Self::Trapping),
            4 => Some(Self::Sleeping),
            _ => None,
        }
    }

    /// How it is named in passes and reports: `nominal`, `moderate`, `heavy`, `trapping`, `sleeping`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Nominal => "nominal",
            Self::Moderate => "moderate",
            Self::Heavy => "heavy",
            Self::Trapping => "trapping",
            Self::Sleeping => "sleeping",
        }
    }

    /// Any pressure at all (moderate or worse). Moderate is "elevated thermal pressure", not yet
    /// throttling: see [`Self::is_throttling`] for the level a run is marked at.
    pub fn is_above_nominal(self) -> bool {
        self != Self::Nominal
    }

    /// Heavy or worse: the level at which macOS throttles, so a run measured then may have been
    /// slowed by it. MacThrottle's "Thermal States" table reads the same levels as Moderate
    /// "Elevated thermal pressure" and Heavy "Active throttling"
    /// (<https://github.com/angristan/MacThrottle>, README); docs/metrics.md cites it.
    pub fn is_throttling(self) -> bool {
        self >= Self::Heavy
    }
}

/// Power and thermal state on Linux. Fields are absent (or empty) when sysfs does not have them,
/// as in most containers and virtual machines.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinuxPowerFacts {
    /// `/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor`, e.g. `performance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_governor: Option<String>,
    /// Each readable `/sys/class/thermal/thermal_zone*`, in zone order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thermal_zones: Vec<ThermalZone>,
    /// Whether a power supply of type `Mains` is online; absent when there is none (a desktop
    /// or server usually lists no supply at all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_mains_power: Option<bool>,
}

/// One thermal zone: its `type` and its `temp` in millidegrees Celsius.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThermalZone {
    /// The directory name, e.g. `thermal_zone0`.
    pub zone: String,
    /// The zone's `type`, e.g. `x86_pkg_temp` or `acpitz`.
    pub kind: String,
    pub millicelsius: i64,
}

/// Which memory figure a sample is: what the OS's own tools show for a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryMeasure {
    /// Resident set size (Linux `VmRSS`): pages in RAM, shared ones included.
    Rss,
    /// macOS physical footprint (`ri_phys_footprint`), what Activity Monitor shows as Memory:
    /// it counts the GPU buffers MLX allocates in unified memory, which resident size misses.
    PhysFootprint,
    /// Windows working set (`WorkingSetSize`): pages in RAM, shared ones included, like RSS.
    WorkingSet,
}

impl MemoryMeasure {
    /// How reports name it.
    pub fn label(self) -> &'static str {
        match self {
            MemoryMeasure::Rss => "resident set size (RSS)",
            MemoryMeasure::PhysFootprint => "physical footprint",
            MemoryMeasure::WorkingSet => "working set",
        }
    }
}

/// How the machine was kept from idle sleep while the pass ran (`pass.json`'s `keep_awake`): a
/// laptop left alone through a plan's gaps would otherwise sleep, and a run spanning a sleep
/// is not a measurement of the engine (error class `system-sleep`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeepAwake {
    /// An idle-sleep assertion was held from the pass's start to its end.
    pub held: bool,
    pub how: KeepAwakeHow,
    /// Why it was not held, or why the first way failed when the fallback held it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The way [`KeepAwake`] was (or was not) held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeepAwakeHow {
    /// macOS: a `PreventUserIdleSystemSleep` power assertion (IOKit's
    /// `IOPMAssertionCreateWithName`, through the keepawake crate), released at the pass's end.
    IopmAssertion,
    /// macOS, when the assertion could not be made: `caffeinate -i -w PID`, started once before
    /// the first run, which holds the same assertion for as long as benchpass runs.
    Caffeinate,
    /// Nothing held: an OS where benchpass makes no assertion (Linux, Windows), or both ways
    /// failed (see `detail`).
    None,
}

/// macOS's memory pressure level, `sysctl kern.memorystatus_vm_pressure_level`: the kernel's
/// `vm_pressure_level_t` (`kVMPressureNormal` 0 … `kVMPressureCritical` 3), which the sysctl
/// reports as the dispatch memory-pressure value it sends: 1 normal, 2 warning, 4 critical.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryPressure {
    Normal,
    Warning,
    Critical,
}

impl MemoryPressure {
    /// The sysctl's value: 1 normal, 2 warning, 4 critical; anything else `None`.
    pub fn from_sysctl(value: i64) -> Option<Self> {
        match value {
            1 => Some(Self::Normal),
            2 => Some(Self::Warning),
            4 => Some(Self::Critical),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Warning => "warning",
            Self::Critical => "critical",
        }
    }
}

/// A rise in swap in use above this marks a run `swapped` ([`crate::format::RunRecord::swapped`]).
/// Not zero: Linux counts swap in kB and the kernel's own bookkeeping moves it by a few pages
/// on an idle machine; 1 MiB is 256 pages of 4 KiB (64 of Apple silicon's 16 KiB), far below
/// what a model that does not fit pushes out, which is hundreds of MiB and more.
pub const SWAPPED_BYTES: u64 = 1 << 20;

/// Whether an engine keeps its weights in memory-mapped files, told from one reading of its
/// tree's memory and the size of its weights (`weight_bytes`, the hashed files; `None` where
/// they were not hashed, and then it cannot be told):
///
/// - Linux: its file-backed resident memory (`RssFile`) holds at least half the weights' bytes;
/// - macOS: its resident size is above its physical footprint by at least half the weights'
///   bytes (clean mapped file pages count in resident size and not in the footprint, which is
///   why a 7 B GGUF under llama.cpp shows a few hundred MB of footprint: llama.cpp#1465).
///
/// Half, not all: a mapped model need not be wholly resident (pages never read stay on disk,
/// the OS may drop clean pages), while an engine that copies its weights holds none of them as
/// file pages, so its figure is near zero (code and libraries: tens to hundreds of MB, a small
/// part of any model's weights). `None` when neither figure is known.
pub fn weights_mapped(weight_bytes: Option<u64>, file_backed: Option<u64>, resident: Option<u64>, footprint: Option<u64>) -> Option<bool> {
    let weights = weight_bytes.filter(|&w| w > 0)?;
    let mapped = match (file_backed, resident, footprint) {
        (Some(file), _, _) => file,
        (None, Some(resident), Some(footprint)) => resident.saturating_sub(footprint),
        _ => return None,
    };
    Some(mapped >= weights / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn weights_are_mapped_when_half_of_them_are_file_pages() {
        // A 4 GiB GGUF under llama.cpp on Linux: 3.8 GiB of RssFile.
        assert_eq!(weights_mapped(Some(4 * GIB), Some(3 * GIB + GIB / 5 * 4), None, None), Some(true));
        // Exactly half: mapped; one byte under: not.
        assert_eq!(weights_mapped(Some(4 * GIB), Some(2 * GIB), None, None), Some(true));
        assert_eq!(weights_mapped(Some(4 * GIB), Some(2 * GIB - 1), None, None), Some(false));
        // An engine that copied them: 150 MiB of libraries.
        assert_eq!(weights_mapped(Some(4 * GIB), Some(150 << 20), None, None), Some(false));
        // macOS, llama.cpp: 4.3 GiB resident, 0.3 GiB footprint → 4 GiB not in the footprint.
        assert_eq!(weights_mapped(Some(4 * GIB), None, Some(4 * GIB + 3 * GIB / 10), Some(3 * GIB / 10)), Some(true));
        // macOS, MLX: the footprint (Metal buffers) is above resident size: nothing mapped.
        assert_eq!(weights_mapped(Some(4 * GIB), None, Some(GIB), Some(5 * GIB)), Some(false));
        // Weights not hashed, or no figure: cannot be told.
        assert_eq!(weights_mapped(None, Some(4 * GIB), None, None), None);
        assert_eq!(weights_mapped(Some(4 * GIB), None, Some(GIB), None), None);
    }

    #[test]
    fn memory_pressure_reads_the_dispatch_values() {
        assert_eq!(MemoryPressure::from_sysctl(1), Some(MemoryPressure::Normal));
        assert_eq!(MemoryPressure::from_sysctl(2), Some(MemoryPressure::Warning));
        assert_eq!(MemoryPressure::from_sysctl(4), Some(MemoryPressure::Critical));
        // The kernel's internal numbers (0 normal, 3 critical) are not what the sysctl gives.
        assert_eq!(MemoryPressure::from_sysctl(0), None);
        assert_eq!(MemoryPressure::from_sysctl(3), None);
    }
}
