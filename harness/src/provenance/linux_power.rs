//! Linux's equivalents of the Mac's power and thermal facts, read from sysfs: the CPU frequency
//! governor, the thermal zones and whether mains power is online.
//!
//! The parsers are pure functions of one file's contents and return `None` on anything
//! unexpected; [`linux_power_facts`] reads the files, on Linux only.

// The facts themselves are the pass format's; this module produces them.
pub use benchpass_format::machine::{LinuxPowerFacts, ThermalZone};

fn single_token(text: &str) -> Option<&str> {
    let text = text.trim();
    let ok = !text.is_empty() && !text.contains(char::is_whitespace);
    ok.then_some(text)
}

/// `scaling_governor`: one word of lowercase letters, digits, `_` or `-`, e.g. `powersave`.
pub fn parse_governor(text: &str) -> Option<String> {
    let word = single_token(text)?;
    let ok = word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    ok.then(|| word.to_owned())
}

/// A thermal zone's `type` and `temp` files: the type is one token, the temperature an integer
/// in millidegrees Celsius (it may be negative).
pub fn parse_thermal_zone(zone: &str, type_text: &str, temp_text: &str) -> Option<ThermalZone> {
    let kind = single_token(type_text)?;
    let temp = single_token(temp_text)?;
    let digits = temp.strip_prefix('-').unwrap_or(temp);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(ThermalZone { zone: zone.to_owned(), kind: kind.to_owned(), millicelsius: temp.parse().ok()? })
}

/// A power supply's `type` and `online` files: `Some(online)` for a `Mains` supply whose
/// `online` is 0 or 1, `None` for any other type (batteries, USB) or value.
pub fn parse_mains_online(type_text: &str, online_text: &str) -> Option<bool> {
    if single_token(type_text)? != "Mains" {
        return None;
    }
    match single_token(online_text)? {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// Whether any of the mains supplies found is online; `None` when none was found.
pub fn any_mains_online(supplies: impl IntoIterator<Item = bool>) -> Option<bool> {
    supplies.into_iter().fold(None, |acc, online| Some(acc.unwrap_or(false) || online))
}

/// Reads the governor, the thermal zones and the mains supplies from sysfs.
#[cfg(target_os = "linux")]
pub fn linux_power_facts() -> LinuxPowerFacts {
    use std::fs;
    use std::path::Path;

    fn read(path: &Path) -> Option<String> {
        fs::read_to_string(path).ok()
    }
    /// Entries of `dir` whose names start with `prefix`, sorted by name (thermal_zone2 before
    /// thermal_zone10).
    fn entries(dir: &str, prefix: &str) -> Vec<(String, std::path::PathBuf)> {
        let mut found: Vec<(String, std::path::PathBuf)> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.starts_with(prefix).then(|| (name, e.path()))
            })
            .collect();
        found.sort_by_key(|(name, _)| {
            let n: Option<u64> = name[prefix.len()..].parse().ok();
            (n.is_none(), n, name.clone())
        });
        found
    }

    let cpu_governor = read(Path::new("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"))
        .as_deref()
        .and_then(parse_governor);
    let thermal_zones = entries("/sys/class/thermal", "thermal_zone")
        .into_iter()
        .filter_map(|(name, path)| {
            parse_thermal_zone(&name, &read(&path.join("type"))?, &read(&path.join("temp"))?)
        })
        .collect();
    let on_mains_power = any_mains_online(entries("/sys/class/power_supply", "").into_iter().filter_map(|(_, path)| {
        parse_mains_online(&read(&path.join("type"))?, &read(&path.join("online"))?)
    }));
    LinuxPowerFacts { cpu_governor, thermal_zones, on_mains_power }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn governor() {
        assert_eq!(parse_governor("performance\n").as_deref(), Some("performance"));
        assert_eq!(parse_governor("schedutil\n").as_deref(), Some("schedutil"));
        assert_eq!(parse_governor(""), None);
        assert_eq!(parse_governor("performance powersave\n"), None);
        assert_eq!(parse_governor("<unsupported>\n"), None);
    }

    #[test]
    fn thermal_zone() {
        let z = parse_thermal_zone("thermal_zone1", "x86_pkg_temp\n", "47000\n").unwrap();
        assert_eq!(z, ThermalZone { zone: "thermal_zone1".to_owned(), kind: "x86_pkg_temp".to_owned(), millicelsius: 47_000 });
        assert_eq!(parse_thermal_zone("thermal_zone0", "acpitz\n", "-273200\n").unwrap().millicelsius, -273_200);
        assert_eq!(parse_thermal_zone("thermal_zone0", "acpitz\n", "47.5\n"), None);
        assert_eq!(parse_thermal_zone("thermal_zone0", "acpitz\n", "-\n"), None);
        assert_eq!(parse_thermal_zone("thermal_zone0", "\n", "47000\n"), None);
    }

    #[test]
    fn mains() {
        assert_eq!(parse_mains_online("Mains\n", "1\n"), Some(true));
        assert_eq!(parse_mains_online("Mains\n", "0\n"), Some(false));
        assert_eq!(parse_mains_online("Battery\n", "1\n"), None);
        assert_eq!(parse_mains_online("USB\n", "1\n"), None);
        assert_eq!(parse_mains_online("Mains\n", "2\n"), None);
        assert_eq!(any_mains_online([]), None);
        assert_eq!(any_mains_online([false]), Some(false));
        assert_eq!(any_mains_online([false, true]), Some(true));
    }

    #[test]
    fn facts_serialize_without_absent_fields() {
        assert_eq!(serde_json::to_string(&LinuxPowerFacts::default()).unwrap(), "{}");
        let facts = LinuxPowerFacts {
            cpu_governor: Some("performance".to_owned()),
            thermal_zones: vec![ThermalZone { zone: "thermal_zone0".to_owned(), kind: "acpitz".to_owned(), millicelsius: 40_000 }],
            on_mains_power: Some(true),
        };
        let json = serde_json::to_string(&facts).unwrap();
        assert_eq!(serde_json::from_str::<LinuxPowerFacts>(&json).unwrap(), facts);
    }

    /// Whatever this machine's sysfs holds (often nothing in a container), reading it must not
    /// fail, and what it reports must be what the parsers accept.
    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_machine() {
        let facts = linux_power_facts();
        for zone in &facts.thermal_zones {
            assert!(zone.zone.starts_with("thermal_zone"));
        }
    }
}
