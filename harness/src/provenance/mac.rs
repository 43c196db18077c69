//! The machine facts a Mac benchmarker expects: chip, model, core counts, GPU cores, memory,
//! macOS version, Rosetta, power source and mode, the GPU wired-memory limit, swap and thermal
//! pressure.
//!
//! Each parser is a pure function of one command's output and returns `None` on anything it does
//! not recognise: a fact is reported as the OS printed it or not at all, never guessed. The tests
//! run them on real captured outputs in `fixtures/macos/` (its README says where each came from).
//! [`mac_facts`] runs the commands, on macOS only.

// The facts themselves are the pass format's; this module produces them.
pub use benchpass_format::machine::{CpuLevel, MacFacts, PowerMode, PowerSource, SwVers, SwapUsage, ThermalPressure};

/// The value of one sysctl, from `sysctl -n NAME` (the bare value) or `sysctl NAME` (`NAME:
/// value`). `None` for empty output, more than one line, another name, or an error such as
/// `sysctl: unknown oid '…'`.
pub fn parse_sysctl_value<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let text = text.trim();
    if text.is_empty() || text.contains('\n') || text.starts_with("sysctl:") {
        return None;
    }
    let value = match text.strip_prefix(name).and_then(|rest| rest.strip_prefix(':')) {
        Some(value) => value.trim(),
        None => {
            // A `name: value` line for some other name is not this value.
            if let Some((head, _)) = text.split_once(": ") {
                if !head.contains(char::is_whitespace) && head.contains('.') {
                    return None;
                }
            }
            text
        }
    };
    (!value.is_empty()).then_some(value)
}

fn sysctl_number<T: std::str::FromStr>(text: &str, name: &str) -> Option<T> {
    let value = parse_sysctl_value(text, name)?;
    if !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// `sysctl -n machdep.cpu.brand_string`: the chip, e.g. `Apple M1`.
pub fn parse_chip(text: &str) -> Option<String> {
    parse_sysctl_value(text, "machdep.cpu.brand_string").map(str::to_owned)
}

/// `sysctl -n hw.model`: the model identifier, e.g. `MacBookAir10,1`. A single token.
pub fn parse_model_identifier(text: &str) -> Option<String> {
    let value = parse_sysctl_value(text, "hw.model")?;
    (!value.contains(char::is_whitespace)).then(|| value.to_owned())
}

/// `sysctl -n hw.perflevelN.physicalcpu` for level `level` (0: performance cores, 1: efficiency
/// cores on Apple Silicon). A count of 0 gives `None`.
pub fn parse_perflevel_cores(text: &str, level: u8) -> Option<u32> {
    let name = format!("hw.perflevel{level}.physicalcpu");
    sysctl_number::<u32>(text, &name).filter(|&n| n > 0)
}

/// The most CPU performance levels taken as real: Apple Silicon has had two so far, and a count
/// past this is output that is not a level count.
pub const MAX_PERF_LEVELS: u32 = 8;

/// `sysctl -n hw.nperflevels`: how many CPU performance levels there are, 1 to
/// [`MAX_PERF_LEVELS`]; 0, more, or an error give `None`.
pub fn parse_nperflevels(text: &str) -> Option<u32> {
    sysctl_number::<u32>(text, "hw.nperflevels").filter(|n| (1..=MAX_PERF_LEVELS).contains(n))
}

/// The output of `sysctl hw.perflevel0.name hw.perflevel0.physicalcpu … hw.perflevel{N-1}.…`
/// (one `name: value` line each, in any order, as `sysctl -a` also prints them): each level's
/// name and core count, level 0 first. Every level below `levels` needs both, once; a level at
/// or past `levels`, a count of 0, or a name that is not one word of ASCII letters (at most 32)
/// gives `None`, as does a `hw.nperflevels` line that disagrees. Other `hw.perflevelN.*` lines
/// (cache sizes, logical counts) and other names are ignored.
pub fn parse_cpu_levels(text: &str, levels: u32) -> Option<Vec<CpuLevel>> {
    if !(1..=MAX_PERF_LEVELS).contains(&levels) {
        return None;
    }
    let mut names: Vec<Option<String>> = vec![None; levels as usize];
    let mut cores: Vec<Option<u32>> = vec![None; levels as usize];
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (key, value) = line.split_once(':')?;
        let (key, value) = (key.trim(), value.trim());
        if key == "hw.nperflevels" {
            if value.parse::<u32>().ok()? != levels {
                return None;
            }
            continue;
        }
        let Some(rest) = key.strip_prefix("hw.perflevel") else { continue };
        let Some((index, field)) = rest.split_once('.') else { continue };
        if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let index: usize = index.parse().ok()?;
        if index >= levels as usize {
            return None;
        }
        match field {
            "name" => {
                let ok = !value.is_empty() && value.len() <= 32 && value.bytes().all(|b| b.is_ascii_alphabetic());
                if !ok || names[index].is_some() {
                    return None;
                }
                names[index] = Some(value.to_owned());
            }
            "physicalcpu" => {
                if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let n: u32 = value.parse().ok().filter(|&n| n > 0)?;
                if cores[index].is_some() {
                    return None;
                }
                cores[index] = Some(n);
            }
            _ => {}
        }
    }
    names.into_iter().zip(cores).map(|(name, cores)| Some(CpuLevel { name: name?, physical_cores: cores? })).collect()
}

/// The two-kind counts passes kept before `cpu_levels` (see `MacFacts::performance_cores`): the
/// levels named `Performance` and `Efficiency`, each absent when no level (or more than one)
/// has that name. An M5 Max's `Super` level is in neither, rather than counted as performance.
pub fn legacy_core_counts(levels: &[CpuLevel]) -> (Option<u32>, Option<u32>) {
    let named = |name: &str| {
        let mut found = levels.iter().filter(|l| l.name == name);
        match (found.next(), found.next()) {
            (Some(level), None) => Some(level.physical_cores),
            _ => None,
        }
    };
    (named("Performance"), named("Efficiency"))
}

/// `sysctl -n hw.memsize`: physical memory in bytes. 0 gives `None`.
pub fn parse_memsize(text: &str) -> Option<u64> {
    sysctl_number::<u64>(text, "hw.memsize").filter(|&n| n > 0)
}

/// `sysctl -n sysctl.proc_translated`: `1` under Rosetta, `0` native. On an Intel Mac the name
/// does not exist (an error), which gives `None`, as does anything but 0 or 1.
pub fn parse_rosetta(text: &str) -> Option<bool> {
    match parse_sysctl_value(text, "sysctl.proc_translated")? {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// What a pass does about Rosetta, decided from `sysctl.proc_translated` ([`parse_rosetta`]) and
/// whether the pass starts engines itself (a plan with `start` cells) or only measures servers
/// already running (`--url`). A translated benchpass starts a universal engine binary translated
/// too (a child process keeps its parent's architecture), so a plan is refused before any
/// engine starts: `Err` with the reason and the fix. A `--url` server runs as it was started,
/// so that pass goes ahead with a note (`Ok(Some)`): only benchpass's own timing is translated.
/// Native, Intel (`None`) and other systems: `Ok(None)`.
pub fn rosetta_decision(translated: Option<bool>, starts_engines: bool) -> Result<Option<String>, String> {
    if translated != Some(true) {
        return Ok(None);
    }
    if starts_engines {
        return Err("benchpass is running under Rosetta (sysctl.proc_translated = 1), so the engines this plan starts \
would run translated too (a universal binary starts as x86_64 from an x86_64 parent) and their figures would not be this \
Mac's. Run a native arm64 benchpass: build or install it from an arm64 shell (`arch -arm64 zsh`, then `cargo install`), or \
start it with `arch -arm64 benchpass …`; `file $(which benchpass)` should say arm64."
            .to_owned());
    }
    Ok(Some(
        "note: benchpass is running under Rosetta (sysctl.proc_translated = 1): the servers at --url run as they were started, \
but benchpass's own timing runs translated; a native arm64 benchpass (`arch -arm64 benchpass …`) measures without it."
            .to_owned(),
    ))
}

/// `sysctl -n sysctl.proc_translated` now: whether this process runs under Rosetta (`None` on
/// Intel Macs and other systems).
pub fn rosetta_now() -> Option<bool> {
    #[cfg(target_os = "macos")]
    {
        let out = crate::platform::command("/usr/sbin/sysctl").args(["-n", "sysctl.proc_translated"]).output().ok()?;
        out.status.success().then(|| parse_rosetta(&String::from_utf8_lossy(&out.stdout))).flatten()
    }
    #[cfg(not(target_os = "macos"))]
    None
}

/// `sysctl -n iogpu.wired_limit_mb`: the GPU wired-memory limit in MiB (0: no override).
pub fn parse_wired_limit_mb(text: &str) -> Option<u64> {
    sysctl_number(text, "iogpu.wired_limit_mb")
}

/// `sw_vers`: all three of ProductName, ProductVersion and BuildVersion, each once; other keys
/// (such as `ProductVersionExtra`) are allowed and ignored.
pub fn parse_sw_vers(text: &str) -> Option<SwVers> {
    let (mut name, mut version, mut build) = (None, None, None);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (key, value) = line.split_once(':')?;
        let value = value.trim();
        let slot = match key.trim() {
            "ProductName" => &mut name,
            "ProductVersion" => &mut version,
            "BuildVersion" => &mut build,
            _ => continue,
        };
        if value.is_empty() || slot.is_some() {
            return None;
        }
        *slot = Some(value.to_owned());
    }
    let version = version?;
    let version_ok = version.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
    if !version_ok {
        return None;
    }
    Some(SwVers { product_name: name?, product_version: version, build_version: build? })
}

/// The first line of `pmset -g batt`: `Now drawing from 'AC Power'` or `'Battery Power'`.
pub fn parse_pmset_batt(text: &str) -> Option<PowerSource> {
    let first = text.lines().next()?.trim();
    match first.strip_prefix("Now drawing from ")? {
        "'AC Power'" => Some(PowerSource::Ac),
        "'Battery Power'" => Some(PowerSource::Battery),
        _ => None,
    }
}

/// The energy mode in `pmset -g`: the `powermode` line (recent macOS) or the `lowpowermode` line
/// (macOS 12), read from the "Currently in use" section when there is one. `None` when neither
/// line is there (a Mac without energy modes), when a value is not 0, 1 or 2, or when the lines
/// disagree.
pub fn parse_pmset_power_mode(text: &str) -> Option<PowerMode> {
    let in_use = match text.split_once("Currently in use:") {
        Some((_, rest)) => rest,
        None => text,
    };
    let mut found: Option<PowerMode> = None;
    for line in in_use.lines() {
        let mut words = line.split_whitespace();
        let key = words.next();
        if !matches!(key, Some("powermode" | "lowpowermode")) {
            continue;
        }
        let value: u8 = words.next()?.parse().ok()?;
        if words.next().is_some() {
            return None;
        }
        let mode = PowerMode::from_value(value)?;
        if found.is_some_and(|m| m != mode) {
            return None;
        }
        found = Some(mode);
    }
    found
}

/// `"gpu-core-count" = N` in `ioreg -rc AGXAccelerator -d1` (or in `ioreg -l`, whose lines carry
/// the tree's `|` prefix). Only a property line counts, not the same words inside a dictionary;
/// two different counts, or 0, give `None`.
pub fn parse_ioreg_gpu_cores(text: &str) -> Option<u32> {
    let mut found: Option<u32> = None;
    for line in text.lines() {
        let line = line.trim_start_matches(|c: char| c == '|' || c.is_whitespace());
        let Some(rest) = line.strip_prefix("\"gpu-core-count\"") else { continue };
        let value = rest.trim_start().strip_prefix('=')?.trim();
        if !value.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let cores: u32 = value.parse().ok().filter(|&n| n > 0)?;
        if found.is_some_and(|n| n != cores) {
            return None;
        }
        found = Some(cores);
    }
    found
}

/// `sysctl -n vm.swapusage`: `total = 2048.00M  used = 1034.75M  free = 1013.25M  (encrypted)`,
/// optionally after `vm.swapusage:`. The decimal separator may be a comma (the OS follows the
/// locale). All three figures must be there.
pub fn parse_swap_usage(text: &str) -> Option<SwapUsage> {
    let body = parse_sysctl_value(text, "vm.swapusage")?;
    let (mut total, mut used, mut free) = (None, None, None);
    let mut encrypted = false;
    let mut words = body.split_whitespace();
    while let Some(word) = words.next() {
        let slot = match word {
            "total" => &mut total,
            "used" => &mut used,
            "free" => &mut free,
            "(encrypted)" => {
                encrypted = true;
                continue;
            }
            _ => return None,
        };
        if words.next()? != "=" || slot.is_some() {
            return None;
        }
        *slot = Some(size_bytes(words.next()?)?);
    }
    Some(SwapUsage { total_bytes: total?, used_bytes: used?, free_bytes: free?, encrypted })
}

/// `1034.75M` → bytes: digits, an optional `.`/`,` with up to two decimals, a K/M/G/T unit
/// (powers of 1024). Rounded to the nearest byte.
fn size_bytes(word: &str) -> Option<u64> {
    let (number, unit) = word.split_at(word.len().checked_sub(1)?);
    let unit: u128 = match unit {
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return None,
    };
    let (whole, frac) = match number.split_once(['.', ',']) {
        Some((w, f)) => (w, f),
        None => (number, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 2 {
        return None;
    }
    let hundredths: u128 = whole.parse::<u128>().ok()? * 100 + format!("{frac:0<2}").parse::<u128>().ok()?;
    u64::try_from((hundredths * unit + 50) / 100).ok()
}

/// `notifyutil -g com.apple.system.thermalpressurelevel`: the key, a space, the level. Note that
/// `notifyutil -g` prints 0 for a key nothing ever posted, so nominal can also mean "never set".
pub fn parse_thermal_pressure(text: &str) -> Option<ThermalPressure> {
    let text = text.trim();
    let level = text.strip_prefix("com.apple.system.thermalpressurelevel")?;
    let level = level.strip_prefix(' ')?.trim();
    if level.is_empty() || !level.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    ThermalPressure::from_level(level.parse().ok()?)
}

/// The thermal pressure level now (one `notifyutil` call, a few milliseconds). It starts a
/// process: it is called by the pass's thermal sampler on its own thread, never from a run
/// (`crate::sampler`).
#[cfg(target_os = "macos")]
pub fn thermal_pressure_now() -> Option<ThermalPressure> {
    let out = crate::platform::command("/usr/bin/notifyutil").args(["-g", "com.apple.system.thermalpressurelevel"]).output().ok()?;
    out.status.success().then(|| parse_thermal_pressure(&String::from_utf8_lossy(&out.stdout))).flatten()
}

/// Metal's `recommendedMaxWorkingSetSize` of the GPU: the GPU memory limit in force,
/// which no sysctl names (`iogpu.wired_limit_mb` is 0 unless someone set it). Read once, when
/// the machine is recorded, never in a run.
#[cfg(target_os = "macos")]
fn metal_recommended_working_set_bytes() -> Option<u64> {
    use objc2_metal::MTLDevice as _;
    // Every device, not the default one: a command-line tool gets no default device unless it
    // links CoreGraphics (Apple's documentation of MTLCreateSystemDefaultDevice), which takes
    // an unsafe block. An Apple-silicon Mac has one GPU; of several, the largest limit is kept.
    objc2_metal::MTLCopyAllDevices().to_vec().iter().map(|device| device.recommendedMaxWorkingSetSize()).max().filter(|&bytes| bytes > 0)
}

/// Runs the commands and parses what they print; a command that fails leaves its fact absent.
#[cfg(target_os = "macos")]
pub fn mac_facts() -> MacFacts {
    fn run(program: &str, args: &[&str]) -> Option<String> {
        let out = crate::platform::command(program).args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
    let sysctl = |name: &str| run("/usr/sbin/sysctl", &["-n", name]);

    // Each level by its name (M5 chips have a `Super` level); without names (older macOS, Intel)
    // the two counts are read by number, as before.
    let cpu_levels = sysctl("hw.nperflevels")
        .as_deref()
        .and_then(parse_nperflevels)
        .and_then(|n| {
            let keys: Vec<String> =
                (0..n).flat_map(|i| [format!("hw.perflevel{i}.name"), format!("hw.perflevel{i}.physicalcpu")]).collect();
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            parse_cpu_levels(&run("/usr/sbin/sysctl", &keys)?, n)
        })
        .unwrap_or_default();
    let (performance_cores, efficiency_cores) = if cpu_levels.is_empty() {
        (
            sysctl("hw.perflevel0.physicalcpu").and_then(|t| parse_perflevel_cores(&t, 0)),
            sysctl("hw.perflevel1.physicalcpu").and_then(|t| parse_perflevel_cores(&t, 1)),
        )
    } else {
        legacy_core_counts(&cpu_levels)
    };

    MacFacts {
        chip: sysctl("machdep.cpu.brand_string").as_deref().and_then(parse_chip),
        model_identifier: sysctl("hw.model").as_deref().and_then(parse_model_identifier),
        cpu_levels,
        performance_cores,
        efficiency_cores,
        gpu_cores: run("/usr/sbin/ioreg", &["-rc", "AGXAccelerator", "-d1"]).as_deref().and_then(parse_ioreg_gpu_cores),
        memory_bytes: sysctl("hw.memsize").as_deref().and_then(parse_memsize),
        os: run("/usr/bin/sw_vers", &[]).as_deref().and_then(parse_sw_vers),
        rosetta: sysctl("sysctl.proc_translated").as_deref().and_then(parse_rosetta),
        power_source: run("/usr/bin/pmset", &["-g", "batt"]).as_deref().and_then(parse_pmset_batt),
        power_mode: run("/usr/bin/pmset", &["-g"]).as_deref().and_then(parse_pmset_power_mode),
        gpu_wired_limit_mb: sysctl("iogpu.wired_limit_mb").as_deref().and_then(parse_wired_limit_mb),
        metal_recommended_working_set_bytes: metal_recommended_working_set_bytes(),
        swap: sysctl("vm.swapusage").as_deref().and_then(parse_swap_usage),
        thermal_pressure: run("/usr/bin/notifyutil", &["-g", "com.apple.system.thermalpressurelevel"])
            .as_deref()
            .and_then(parse_thermal_pressure),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! fixture {
        ($name:literal) => {
            include_str!(concat!("../../../fixtures/macos/", $name))
        };
    }

    #[test]
    fn sw_vers_real() {
        let v = parse_sw_vers(fixture!("sw_vers-1.txt")).unwrap();
        assert_eq!((v.product_name.as_str(), v.product_version.as_str(), v.build_version.as_str()), ("Mac OS X", "10.13", "17A405"));
        let v = parse_sw_vers(fixture!("sw_vers-2.txt")).unwrap();
        assert_eq!((v.product_name.as_str(), v.product_version.as_str(), v.build_version.as_str()), ("Mac OS X", "10.15.5", "19F101"));
        // The macOS 11+ layout: `macOS`, two tabs after the colon.
        let v = parse_sw_vers(fixture!("sw_vers-3.txt")).unwrap();
        assert_eq!((v.product_name.as_str(), v.product_version.as_str(), v.build_version.as_str()), ("macOS", "14.4", "23E214"));

        assert_eq!(parse_sw_vers(""), None);
        assert_eq!(parse_sw_vers("ProductName:\tmacOS\nProductVersion:\t14.5\n"), None, "no build");
        assert_eq!(parse_sw_vers("ProductName:\tmacOS\nProductVersion:\t14.x\nBuildVersion:\t23F79\n"), None);
        assert_eq!(parse_sw_vers("zsh: command not found: sw_vers\n"), None);
    }

    #[test]
    fn sysctl_values_real() {
        assert_eq!(parse_chip(fixture!("sysctl-brand_string-1.txt")).as_deref(), Some("Apple M1"));
        assert_eq!(parse_chip(fixture!("sysctl-brand_string-2.txt")).as_deref(), Some("Apple processor"));
        assert_eq!(parse_chip("Apple M1\n").as_deref(), Some("Apple M1"), "the -n form");
        assert_eq!(parse_chip("hw.model: MacBookAir10,1\n"), None, "another name");

        assert_eq!(parse_perflevel_cores(fixture!("sysctl-perflevel0-1.txt"), 0), Some(8));
        assert_eq!(parse_perflevel_cores(fixture!("sysctl-perflevel1-1.txt"), 1), Some(2));
        assert_eq!(parse_perflevel_cores(fixture!("sysctl-perflevel1-1.txt"), 0), None, "level 1's line is not level 0");
        assert_eq!(parse_perflevel_cores("sysctl: unknown oid 'hw.perflevel1.physicalcpu'\n", 1), None);
        assert_eq!(parse_perflevel_cores("8 \n4\n", 0), None);

        assert_eq!(parse_rosetta(fixture!("sysctl-proc_translated-1.txt")), Some(false));
        assert_eq!(parse_rosetta(fixture!("sysctl-proc_translated-2.txt")), Some(true));
        assert_eq!(parse_rosetta(fixture!("sysctl-proc_translated-3.txt")), None, "Intel: unknown oid");
        assert_eq!(parse_rosetta("2\n"), None);
    }

    #[test]
    fn cpu_levels_by_name() {
        let level = |name: &str, physical_cores: u32| CpuLevel { name: name.to_owned(), physical_cores };
        assert_eq!(parse_nperflevels("2\n"), Some(2));
        assert_eq!(parse_nperflevels("hw.nperflevels: 3\n"), Some(3));
        assert_eq!(parse_nperflevels("0\n"), None);
        assert_eq!(parse_nperflevels("9\n"), None, "past MAX_PERF_LEVELS");
        assert_eq!(parse_nperflevels("sysctl: unknown oid 'hw.nperflevels'\n"), None);

        // Whole `sysctl hw` dumps of an M3 Max (which prints level 1 before level 0) and an M4
        // Pro: every other line is skipped, cache sizes and logical counts included, levels come
        // out level 0 first, nperflevels agrees, and the old fields read the same counts.
        let m3max = parse_cpu_levels(fixture!("sysctl-hw-m3max-1.txt"), 2).unwrap();
        assert_eq!(m3max, [level("Performance", 12), level("Efficiency", 4)]);
        assert_eq!(legacy_core_counts(&m3max), (Some(12), Some(4)));
        let m4pro = parse_cpu_levels(fixture!("sysctl-hw-m4pro-1.txt"), 2).unwrap();
        assert_eq!(m4pro, [level("Performance", 10), level("Efficiency", 4)]);
        assert_eq!(parse_cpu_levels(fixture!("sysctl-hw-m4pro-1.txt"), 3), None, "nperflevels says 2");

        // M5 Max: 6 Super + 12 Performance, not "6 performance + 12 efficiency".
        let m5max = parse_cpu_levels(fixture!("sysctl-perflevels-m5max-1.txt"), 2).unwrap();
        assert_eq!(m5max, [level("Super", 6), level("Performance", 12)]);
        assert_eq!(legacy_core_counts(&m5max), (Some(12), None));
        // A virtual Mac (a hosted CI runner): one level, `Standard`, in neither old field.
        let virtual_mac = parse_cpu_levels(fixture!("sysctl-virtualmac-1.txt"), 1).unwrap();
        assert_eq!(virtual_mac, [level("Standard", 3)]);
        assert_eq!(legacy_core_counts(&virtual_mac), (None, None));
        // M5: 4 Super + 6 Efficiency.
        let m5 = parse_cpu_levels(fixture!("sysctl-perflevels-m5-constructed.txt"), 2).unwrap();
        assert_eq!(m5, [level("Super", 4), level("Efficiency", 6)]);
        assert_eq!(legacy_core_counts(&m5), (None, Some(6)));
        // Three levels, each kept in order.
        let three = parse_cpu_levels(fixture!("sysctl-perflevels-three-constructed.txt"), 3).unwrap();
        assert_eq!(three, [level("Super", 4), level("Performance", 6), level("Efficiency", 4)]);
        assert_eq!(legacy_core_counts(&three), (Some(6), Some(4)));
        assert_eq!(parse_cpu_levels(fixture!("sysctl-perflevels-three-constructed.txt"), 2), None, "a level past the count");

        // The lines of the real M1 Pro capture hold counts and no names: no levels, so the
        // collector falls back to perflevel0/1 by number.
        let unnamed = format!("{}{}", fixture!("sysctl-perflevel0-1.txt"), fixture!("sysctl-perflevel1-1.txt"));
        assert_eq!(parse_cpu_levels(&unnamed, 2), None);
        assert_eq!(parse_cpu_levels("hw.perflevel0.name: Performance\nhw.perflevel0.physicalcpu: 0\n", 1), None, "0 cores");
        assert_eq!(parse_cpu_levels("hw.perflevel0.name: Perf ormance\nhw.perflevel0.physicalcpu: 8\n", 1), None);
        assert_eq!(parse_cpu_levels("hw.perflevel0.name: A\nhw.perflevel0.name: B\nhw.perflevel0.physicalcpu: 8\n", 1), None);
        assert_eq!(parse_cpu_levels("sysctl: unknown oid 'hw.perflevel0.name'\n", 1), None);
        assert_eq!(legacy_core_counts(&[level("Performance", 4), level("Performance", 4)]), (None, None), "two of a name");
    }

    #[test]
    fn rosetta_refuses_a_plan_and_notes_a_url_pass() {
        let translated = parse_rosetta(fixture!("sysctl-proc_translated-2.txt"));
        let refusal = rosetta_decision(translated, true).unwrap_err();
        assert!(refusal.contains("under Rosetta") && refusal.contains("arch -arm64"), "{refusal}");
        let note = rosetta_decision(translated, false).unwrap().unwrap();
        assert!(note.starts_with("note:") && note.contains("--url"), "{note}");
        let native = parse_rosetta(fixture!("sysctl-proc_translated-1.txt"));
        assert_eq!(rosetta_decision(native, true), Ok(None));
        let intel = parse_rosetta(fixture!("sysctl-proc_translated-3.txt"));
        assert_eq!(rosetta_decision(intel, true), Ok(None));
        if !cfg!(target_os = "macos") {
            assert_eq!(rosetta_now(), None, "no Rosetta off a Mac: a plan runs");
        }
    }

    #[test]
    fn sysctl_values() {
        // Real `sysctl NAME` lines (an M1 Pro's model, an M3 Max's 128 GiB), then the bare
        // values `sysctl -n` prints.
        assert_eq!(parse_model_identifier(fixture!("sysctl-hw.model-1.txt")).as_deref(), Some("MacBookPro18,3"));
        assert_eq!(parse_memsize(fixture!("sysctl-hw.memsize-1.txt")), Some(128 * 1024 * 1024 * 1024));
        assert_eq!(parse_model_identifier("Mac14,2\n").as_deref(), Some("Mac14,2"));
        assert_eq!(parse_memsize("17179869184\n"), Some(16 * 1024 * 1024 * 1024));
        // Constructed: no citable capture of the limit read at its default.
        assert_eq!(parse_wired_limit_mb(fixture!("sysctl-iogpu.wired_limit_mb-1-constructed.txt")), Some(0));
        assert_eq!(parse_wired_limit_mb("iogpu.wired_limit_mb: 57344\n"), Some(57344));
        assert_eq!(parse_memsize("-1\n"), None);
        assert_eq!(parse_memsize("0\n"), None);
        assert_eq!(parse_model_identifier("Mac Book\n"), None);
    }

    #[test]
    fn ioreg_gpu_cores_real() {
        // The AGXAcceleratorG13G_B0 node of an M1 MacBook Air (`ioreg -l`, tree prefixes kept):
        // `"gpu-core-count" = 8`; `"num_cores"=8` inside GPUConfigurationVariable is not read.
        assert_eq!(parse_ioreg_gpu_cores(fixture!("ioreg-agxaccelerator-1.txt")), Some(8));
        // The same property as `ioreg -rc AGXAccelerator -d1` prints it, without the tree.
        assert_eq!(parse_ioreg_gpu_cores("    {\n      \"gpu-core-count\" = 10\n    }\n"), Some(10));
        assert_eq!(parse_ioreg_gpu_cores("\"GPUConfigurationVariable\" = {\"num_cores\"=8}\n"), None);
        assert_eq!(parse_ioreg_gpu_cores("  \"gpu-core-count\" = 8\n  \"gpu-core-count\" = 10\n"), None);
        assert_eq!(parse_ioreg_gpu_cores("  \"gpu-core-count\" = 0\n"), None);
        assert_eq!(parse_ioreg_gpu_cores(""), None);
    }

    #[test]
    fn pmset_batt_real() {
        assert_eq!(parse_pmset_batt(fixture!("pmset-batt-1.txt")), Some(PowerSource::Ac));
        assert_eq!(parse_pmset_batt(fixture!("pmset-batt-2.txt")), Some(PowerSource::Battery));
        assert_eq!(parse_pmset_batt(fixture!("pmset-batt-3.txt")), Some(PowerSource::Ac), "a Mac without battery");
        assert_eq!(parse_pmset_batt("Now drawing from 'UPS Power'\n"), None);
        assert_eq!(parse_pmset_batt(""), None);
    }

    #[test]
    fn pmset_power_mode_real_and_constructed() {
        assert_eq!(parse_pmset_power_mode(fixture!("pmset-g-1.txt")), Some(PowerMode::Automatic), "lowpowermode 0");
        assert_eq!(parse_pmset_power_mode(fixture!("pmset-g-2.txt")), None, "no power-mode line");
        // A real `powermode` line (Automatic), then a constructed one for High Power.
        assert_eq!(parse_pmset_power_mode(fixture!("pmset-g-4.txt")), Some(PowerMode::Automatic), "powermode 0");
        assert_eq!(parse_pmset_power_mode(fixture!("pmset-g-3-constructed.txt")), Some(PowerMode::High));
        assert_eq!(parse_pmset_power_mode(" lowpowermode         1\n powermode            1\n"), Some(PowerMode::Low));
        assert_eq!(parse_pmset_power_mode(" lowpowermode         1\n powermode            0\n"), None, "disagree");
        assert_eq!(parse_pmset_power_mode(" powermode            3\n"), None);
        assert_eq!(parse_pmset_power_mode(" powermode\n"), None);
    }

    #[test]
    fn swap_usage_real() {
        let s = parse_swap_usage(fixture!("sysctl-vm.swapusage-1.txt")).unwrap();
        // 4096.00M = 4096 MiB; 2743.50M = 2743.5 × 1048576; 1352.50M likewise.
        assert_eq!(s, SwapUsage { total_bytes: 4_294_967_296, used_bytes: 2_876_768_256, free_bytes: 1_418_199_040, encrypted: true });
        // Decimal comma: 1024,00M, 379,25M = 379.25 × 1048576, 644,75M.
        let s = parse_swap_usage(fixture!("sysctl-vm.swapusage-2.txt")).unwrap();
        assert_eq!(s, SwapUsage { total_bytes: 1_073_741_824, used_bytes: 397_672_448, free_bytes: 676_069_376, encrypted: true });
        // The brief's example, -n form: 1034.75M = 1_085_014_016 bytes.
        let s = parse_swap_usage("total = 2048.00M  used = 1034.75M  free = 1013.25M  (encrypted)\n").unwrap();
        assert_eq!(s.used_bytes, 1_085_014_016);
        // 0.01 MiB is 10485.76 bytes: rounded to the nearest byte.
        assert_eq!(parse_swap_usage("total = 0.01M  used = 0.00M  free = 0.01M\n").unwrap().total_bytes, 10_486);
        assert_eq!(parse_swap_usage("total = 0.00M  used = 0.00M  free = 0.00M  \n").map(|s| s.encrypted), Some(false));
        assert_eq!(parse_swap_usage("total = 2048.00M  used = 1034.75M\n"), None, "free missing");
        assert_eq!(parse_swap_usage("total = 2048.00X  used = 1M  free = 1M\n"), None);
        assert_eq!(parse_swap_usage("total = 1.2.3M  used = 1M  free = 1M\n"), None);
    }

    #[test]
    fn thermal_pressure_real_and_levels() {
        let t = parse_thermal_pressure(fixture!("notifyutil-thermalpressurelevel-1.txt")).unwrap();
        assert_eq!(t, ThermalPressure::Nominal);
        assert!(!t.is_above_nominal());
        // The other levels, in the documented format (no real capture of them was found).
        for (level, want) in [(1, ThermalPressure::Moderate), (2, ThermalPressure::Heavy), (3, ThermalPressure::Trapping), (4, ThermalPressure::Sleeping)] {
            let got = parse_thermal_pressure(&format!("com.apple.system.thermalpressurelevel {level}\n"));
            assert_eq!(got, Some(want));
            assert!(want.is_above_nominal());
        }
        assert_eq!(parse_thermal_pressure("com.apple.system.thermalpressurelevel 10\n"), None, "not a macOS level");
        assert_eq!(parse_thermal_pressure("com.apple.system.other 0\n"), None);
        assert_eq!(parse_thermal_pressure("com.apple.system.thermalpressurelevel\n"), None);
    }

    #[test]
    fn facts_serialize_without_absent_fields() {
        let facts = MacFacts {
            chip: Some("Apple M1".to_owned()),
            power_mode: Some(PowerMode::High),
            thermal_pressure: Some(ThermalPressure::Heavy),
            ..MacFacts::default()
        };
        let json = serde_json::to_string(&facts).unwrap();
        assert_eq!(json, r#"{"chip":"Apple M1","power_mode":"high","thermal_pressure":"heavy"}"#);
        assert_eq!(serde_json::from_str::<MacFacts>(&json).unwrap(), facts);
        assert_eq!(serde_json::to_string(&MacFacts::default()).unwrap(), "{}");
        // Levels are written in order; a pass written before them still reads, with none.
        let facts = MacFacts { cpu_levels: vec![CpuLevel { name: "Super".to_owned(), physical_cores: 6 }], ..MacFacts::default() };
        assert_eq!(serde_json::to_string(&facts).unwrap(), r#"{"cpu_levels":[{"name":"Super","physical_cores":6}]}"#);
        let old: MacFacts = serde_json::from_str(r#"{"performance_cores":8,"efficiency_cores":2}"#).unwrap();
        assert_eq!((old.cpu_levels.len(), old.performance_cores, old.efficiency_cores), (0, Some(8), Some(2)));
    }
}
