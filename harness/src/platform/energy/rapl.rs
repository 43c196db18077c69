//! Linux RAPL through powercap: each zone `intel-rapl:*` of `/sys/class/powercap` (kernel
//! `Documentation/power/powercap/powercap.rst`) names its domain in `name` (`package-0`,
//! `dram`, `core`, `uncore`, `psys`) and counts microjoules in `energy_uj`, which wraps to 0
//! past `max_energy_range_uj`. The packages and DRAM are summed: `core` and `uncore` are parts
//! of a package, and `psys` (the platform) overlaps all of them. Since Linux 5.10 `energy_uj` is
//! readable by root only (CVE-2020-8694), so a pass run as a user says so and measures none.

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
                    zones.push(Zone { energy_uj, max_range_uj, last_uj });
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
        let steps: Vec<u64> = self.zones.iter().zip(&now).map(|(z, &n)| counter_step(z.last_uj, n, z.max_range_uj)).collect::<Option<_>>()?;
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
}
