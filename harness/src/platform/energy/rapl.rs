//! Linux RAPL, read through powercap or, where powercap has no zone, AMD's `amd_energy`
//! hwmon driver.
//!
//! Powercap: each zone `intel-rapl:*` of `/sys/class/powercap` (kernel
//! `Documentation/power/powercap/powercap.rst`) names its domain in `name` (`package-0`,
//! `dram`, `core`, `uncore`, `psys`) and counts microjoules in `energy_uj`, which wraps to 0
//! past `max_energy_range_uj`. The packages and DRAM are summed: `core` and `uncore` are parts
//! of a package, and `psys` (the platform) overlaps all of them. Since Linux 5.10 `energy_uj` is
//! readable by root only (CVE-2020-8694), so a pass run as a user says so and measures none.
//!
//! `amd_energy` (in Linux 5.8 to 5.12, out of tree since: amd/amd_energy): a hwmon device named
//! `amd_energy` whose `energyN_input` counts microjoules of the RAPL register its
//! `energyN_label` names, `Esocket<i>` (the package register, the one powercap reads as an AMD
//! package, so the domain is `package` and comparable with it) or `Ecore<iii>` (a core, inside
//! its socket: not summed). The attributes are mode 0440 (CVE-2020-12912). The driver either
//! accumulates the 32-bit register into 64 bits (no wrap) or reports the register itself, which
//! wraps past 2³² units: 65,536 J at the energy unit AMD documents (2⁻¹⁶ J).

use std::path::{Path, PathBuf};

use super::series::counter_step;
use super::{EnergyReading, EnergySource, Meter};

/// The folder the zones are read from: `BENCHPASS_POWERCAP_ROOT` (a test's fake tree), else
/// the kernel's.
pub fn root() -> PathBuf {
    std::env::var_os("BENCHPASS_POWERCAP_ROOT").map_or_else(|| PathBuf::from("/sys/class/powercap"), PathBuf::from)
}

struct Zone {
    energy_uj: PathBuf,
    max_range_uj: u64,
    last_uj: u64,
    /// An `amd_energy` counter: its range is the 32-bit register's until a reading passes it
    /// (then it is the driver's 64-bit accumulator, which never wraps).
    amd: bool,
}

/// The `amd_energy` register's range: 2³² units of 2⁻¹⁶ J, in µJ as the driver scales them
/// (`raw × 10⁶ ÷ 2¹⁶`).
const AMD_RANGE_UJ: u64 = ((1u64 << 32) * 1_000_000) >> 16;

impl Zone {
    /// The step to `now`, µJ; `None` where it is not a reading of this counter, or a wrap is not
    /// believed.
    fn step(&mut self, now: u64) -> Option<u64> {
        if !self.amd {
            return counter_step(self.last_uj, now, self.max_range_uj);
        }
        if now > self.max_range_uj || self.last_uj > self.max_range_uj {
            // Past the register's range: the 64-bit accumulator, where going back is a reset
            // (the driver reloaded), not a wrap.
            self.max_range_uj = u64::MAX;
            return now.checked_sub(self.last_uj);
        }
        let step = counter_step(self.last_uj, now, self.max_range_uj)?;
        // A wrap stepping more than a quarter of the range between two reads (16 kJ: 1 kW for
        // 16 s, where reads are 100 ms apart) says the range is not the documented unit's.
        (now >= self.last_uj || step <= self.max_range_uj / 4).then_some(step)
    }
}

/// The package and DRAM zones of one powercap tree, read as one counter.
pub struct Rapl {
    zones: Vec<Zone>,
    domain: String,
    joules: f64,
    /// Zones left out because their counter could not be read, each with why.
    pub left_out: Vec<String>,
}

fn read_u64(path: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.trim().parse().map_err(|_| format!("{}: not a count", path.display()))
}

/// `package` or `dram` for a zone's `name`; `None` for the domains not summed.
fn kind(name: &str) -> Option<&'static str> {
    if name.starts_with("package") {
        Some("package")
    } else if name == "dram" {
        Some("dram")
    } else {
        None
    }
}

/// The zones' domains as a key names them: `package+dram`, `package×2+dram×2`.
fn domain(kinds: &[&str]) -> String {
    ["package", "dram"]
        .iter()
        .filter_map(|k| match kinds.iter().filter(|x| *x == k).count() {
            0 => None,
            1 => Some((*k).to_owned()),
            n => Some(format!("{k}×{n}")),
        })
        .collect::<Vec<_>>()
        .join("+")
}

impl Rapl {
    /// The package and DRAM zones under `root`, each read once; `Err` with why where none can
    /// be read.
    pub fn open(root: &Path) -> Result<Rapl, String> {
        let entries = std::fs::read_dir(root).map_err(|e| format!("powercap: {}: {e}", root.display()))?;
        let mut names: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
            .filter(|(n, _)| n.starts_with("intel-rapl:"))
            .collect();
        names.sort();
        let (mut zones, mut kinds, mut left_out) = (Vec::new(), Vec::new(), Vec::new());
        for (_, dir) in names {
            let Ok(name) = std::fs::read_to_string(dir.join("name")) else { continue };
            let Some(kind) = kind(name.trim()) else { continue };
            let energy_uj = dir.join("energy_uj");
            match (read_u64(&energy_uj), read_u64(&dir.join("max_energy_range_uj"))) {
                (Ok(last_uj), Ok(max_range_uj)) if last_uj <= max_range_uj => {
                    zones.push(Zone { energy_uj, max_range_uj, last_uj, amd: false });
                    kinds.push(kind);
                }
                (Err(e), _) | (_, Err(e)) => left_out.push(e),
                _ => left_out.push(format!("{}: beyond max_energy_range_uj", energy_uj.display())),
            }
        }
        if zones.is_empty() {
            return Err(match left_out.first() {
                Some(e) => format!("powercap unreadable ({e}; energy_uj is readable by root only since Linux 5.10)"),
                None => format!("powercap: no package or DRAM zone under {}", root.display()),
            });
        }
        Ok(Rapl { zones, domain: domain(&kinds), joules: 0.0, left_out })
    }

    /// The socket counters of the `amd_energy` hwmon device under `root`
    /// (`/sys/class/hwmon`), each read once; `Err` with why where there is none or none can
    /// be read.
    pub fn open_amd_energy(root: &Path) -> Result<Rapl, String> {
        let entries = std::fs::read_dir(root).map_err(|e| format!("amd_energy: {}: {e}", root.display()))?;
        let mut devices: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|dir| std::fs::read_to_string(dir.join("name")).is_ok_and(|n| n.trim() == "amd_energy"))
            .collect();
        devices.sort();
        let (mut zones, mut left_out) = (Vec::new(), Vec::new());
        for dir in &devices {
            let Ok(files) = std::fs::read_dir(dir) else { continue };
            let mut labels: Vec<(String, PathBuf)> = files
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    let n = name.strip_prefix("energy")?.strip_suffix("_label")?;
                    n.parse::<u32>().ok()?;
                    Some((std::fs::read_to_string(e.path()).ok()?.trim().to_owned(), dir.join(format!("energy{n}_input"))))
                })
                .filter(|(label, _)| label.starts_with("Esocket"))
                .collect();
            labels.sort();
            for (_, energy_uj) in labels {
                match read_u64(&energy_uj) {
                    Ok(last_uj) => zones.push(Zone { energy_uj, max_range_uj: AMD_RANGE_UJ, last_uj, amd: true }),
                    Err(e) => left_out.push(e),
                }
            }
        }
        if zones.is_empty() {
            return Err(match (devices.is_empty(), left_out.first()) {
                (true, _) => format!("hwmon: no amd_energy device under {}", root.display()),
                (false, Some(e)) => format!("amd_energy unreadable ({e}; its counters are readable by root and its group only)"),
                (false, None) => "amd_energy: no socket counter (Esocket*)".to_owned(),
            });
        }
        let kinds = vec!["package"; zones.len()];
        Ok(Rapl { zones, domain: domain(&kinds), joules: 0.0, left_out })
    }
}

/// The folder hwmon devices are read from: `BENCHPASS_HWMON_ROOT` (a test's fake tree), else
/// the kernel's; `None` while a test's fake powercap tree is the only source.
pub fn hwmon_root() -> Option<PathBuf> {
    match std::env::var_os("BENCHPASS_HWMON_ROOT") {
        Some(root) => Some(PathBuf::from(root)),
        None if std::env::var_os("BENCHPASS_POWERCAP_ROOT").is_some() => None,
        None => Some(PathBuf::from("/sys/class/hwmon")),
    }
}

/// Powercap's zones, else `amd_energy`'s sockets; `Err` with both reasons.
pub fn open_either() -> Result<Rapl, String> {
    let powercap = match Rapl::open(&root()) {
        Ok(rapl) => return Ok(rapl),
        Err(why) => why,
    };
    match hwmon_root().map(|root| Rapl::open_amd_energy(&root)) {
        Some(Ok(rapl)) => Ok(rapl),
        Some(Err(why)) => Err(format!("{powercap}; {why}")),
        None => Err(powercap),
    }
}

impl Meter for Rapl {
    fn source(&self) -> EnergySource {
        EnergySource::Rapl
    }

    fn domain(&self) -> String {
        self.domain.clone()
    }

    fn reading(&self) -> EnergyReading {
        EnergyReading::Counter
    }

    /// Joules since the zones were opened, every wrap stepped through; `None` where a zone's
    /// counter could not be read this time (the next read steps over the gap, wrapping at most
    /// once: at 1 kW a 2^38 µJ range lasts over 4 minutes).
    fn read(&mut self) -> Option<f64> {
        let now: Vec<u64> = self.zones.iter().map(|z| read_u64(&z.energy_uj).ok()).collect::<Option<_>>()?;
        let steps: Vec<u64> = self.zones.iter_mut().zip(&now).map(|(z, &n)| z.step(n)).collect::<Option<_>>()?;
        for (zone, n) in self.zones.iter_mut().zip(now) {
            zone.last_uj = n;
        }
        self.joules += steps.iter().sum::<u64>() as f64 / 1e6;
        Some(self.joules)
    }
}

// The fake trees use Unix links for an unreadable counter.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn zone(root: &Path, id: &str, name: &str, energy_uj: u64, max: u64) {
        let dir = root.join(format!("intel-rapl:{id}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("name"), format!("{name}\n")).unwrap();
        std::fs::write(dir.join("energy_uj"), format!("{energy_uj}\n")).unwrap();
        std::fs::write(dir.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
    }

    fn set(root: &Path, id: &str, energy_uj: u64) {
        std::fs::write(root.join(format!("intel-rapl:{id}/energy_uj")), format!("{energy_uj}\n")).unwrap();
    }

    #[test]
    fn two_packages_and_their_dram_summed_through_a_wrap() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        const MAX: u64 = 262_143_328_850;
        zone(root, "0", "package-0", MAX - 1_000_000, MAX);
        zone(root, "0:0", "dram", 5_000_000, 65_712_999_613);
        zone(root, "0:1", "core", 7, MAX);
        zone(root, "1", "package-1", 10_000_000, MAX);
        zone(root, "1:0", "dram", 0, 65_712_999_613);
        zone(root, "2", "psys", 0, MAX);
        // The control type's own folder has no counter.
        std::fs::create_dir_all(root.join("intel-rapl")).unwrap();
        let mut rapl = Rapl::open(root).unwrap();
        assert_eq!(rapl.domain(), "package×2+dram×2");
        assert!(rapl.left_out.is_empty());
        assert_eq!(rapl.read(), Some(0.0), "nothing moved");
        // Package 0 wraps: 1 J to the top of its range, then 2.5 J; DRAM 0 +0.5 J; package 1
        // +4 J; DRAM 1 +0.25 J; core and psys (not summed) +100 J.
        set(root, "0", 2_500_000);
        set(root, "0:0", 5_500_000);
        set(root, "1", 14_000_000);
        set(root, "1:0", 250_000);
        set(root, "0:1", 100_000_007);
        set(root, "2", 100_000_000);
        assert_eq!(rapl.read(), Some(1.0 + 2.5 + 0.5 + 4.0 + 0.25));
        // Next: package 0 +1 J. Joules since opening keep adding up.
        set(root, "0", 3_500_000);
        assert_eq!(rapl.read(), Some(9.25));
    }

    #[test]
    fn an_unreadable_counter_is_left_out_and_named_and_none_readable_is_unavailable() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        zone(root, "0", "package-0", 1_000, 1 << 38);
        zone(root, "0:0", "dram", 1_000, 1 << 36);
        // An unreadable counter: a link to nowhere (root reads a mode-000 file, and tests may
        // run as root); a user's EACCES takes the same path.
        let dram = root.join("intel-rapl:0:0/energy_uj");
        std::fs::remove_file(&dram).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), &dram).unwrap();
        let rapl = Rapl::open(root).unwrap();
        assert_eq!(rapl.domain(), "package");
        assert_eq!(rapl.left_out.len(), 1);
        assert!(rapl.left_out[0].contains("intel-rapl:0:0/energy_uj"), "{:?}", rapl.left_out);
        let package = root.join("intel-rapl:0/energy_uj");
        std::fs::remove_file(&package).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), &package).unwrap();
        let why = Rapl::open(root).err().unwrap();
        assert!(why.starts_with("powercap unreadable (") && why.contains("root only"), "{why}");
        // No tree at all.
        let why = Rapl::open(&root.join("absent")).err().unwrap();
        assert!(why.starts_with("powercap: "), "{why}");
    }

    fn amd_device(root: &Path, hwmon: &str, name: &str, counters: &[(&str, u64)]) -> PathBuf {
        let dir = root.join(hwmon);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("name"), format!("{name}\n")).unwrap();
        for (i, (label, uj)) in counters.iter().enumerate() {
            std::fs::write(dir.join(format!("energy{}_label", i + 1)), format!("{label}\n")).unwrap();
            std::fs::write(dir.join(format!("energy{}_input", i + 1)), format!("{uj}\n")).unwrap();
        }
        dir
    }

    fn set_amd(dir: &Path, n: u32, uj: u64) {
        std::fs::write(dir.join(format!("energy{n}_input")), format!("{uj}\n")).unwrap();
    }

    /// Two sockets of `amd_energy` beside another hwmon device: the sockets are summed, the
    /// cores (inside them) are not; a socket register wraps at 2³² × 2⁻¹⁶ J = 65,536 J.
    #[test]
    fn amd_energy_sums_its_sockets_through_the_registers_wrap() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        amd_device(root, "hwmon0", "k10temp", &[("Esocket0", 1)]);
        let amd = amd_device(root, "hwmon1", "amd_energy", &[("Ecore000", 10), ("Ecore001", 10), ("Esocket0", 65_535_000_000), ("Esocket1", 2_000_000)]);
        assert_eq!(AMD_RANGE_UJ, 65_536_000_000);
        let mut rapl = Rapl::open_amd_energy(root).unwrap();
        assert_eq!(rapl.domain(), "package×2");
        assert_eq!(rapl.read(), Some(0.0));
        // Socket 0: 1 J to the top of the register, then 0.5 J; socket 1: +3 J; cores +100 J.
        set_amd(&amd, 3, 500_000);
        set_amd(&amd, 4, 5_000_000);
        set_amd(&amd, 1, 100_000_010);
        assert_eq!(rapl.read(), Some(1.0 + 0.5 + 3.0));
        // A decrease that would step more than a quarter of the range is not a wrap of this
        // register: no reading (never a wrong one).
        set_amd(&amd, 4, 1_000_000);
        set_amd(&amd, 4, 1_000);
        assert_eq!(rapl.read(), None);
    }

    /// The driver's 64-bit accumulator passes the register's range and never wraps: a reading
    /// past 65,536 J makes it one, and going back there is a reset, read as none.
    #[test]
    fn an_accumulated_amd_counter_past_the_registers_range_never_wraps() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let amd = amd_device(root, "hwmon3", "amd_energy", &[("Esocket0", 65_535_500_000)]);
        let mut rapl = Rapl::open_amd_energy(root).unwrap();
        set_amd(&amd, 1, 65_537_000_000);
        assert_eq!(rapl.read(), Some(1.5));
        set_amd(&amd, 1, 65_538_000_000);
        assert_eq!(rapl.read(), Some(2.5));
        set_amd(&amd, 1, 7);
        assert_eq!(rapl.read(), None);
    }

    #[test]
    fn without_amd_energy_or_its_sockets_the_reason_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        amd_device(root, "hwmon0", "coretemp", &[]);
        let why = Rapl::open_amd_energy(root).err().unwrap();
        assert!(why.starts_with("hwmon: no amd_energy device under "), "{why}");
        let amd = amd_device(root, "hwmon1", "amd_energy", &[("Ecore000", 1), ("Esocket0", 1)]);
        let input = amd.join("energy2_input");
        std::fs::remove_file(&input).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), &input).unwrap();
        let why = Rapl::open_amd_energy(root).err().unwrap();
        assert!(why.starts_with("amd_energy unreadable (") && why.contains("energy2_input"), "{why}");
    }
}
