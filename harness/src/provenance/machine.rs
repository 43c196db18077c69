//! What machine a pass ran on, read from the OS without extra dependencies.

use crate::pass::MachineInfo;

pub fn machine_info() -> MachineInfo {
    MachineInfo {
        name: hostname().unwrap_or_else(|| "unknown".to_owned()),
        os: os_name(),
        kernel: kernel(),
        cpu: cpu_model(),
        cores: std::thread::available_parallelism().ok().map(|n| n.get() as u32),
        memory_bytes: memory_bytes(),
        #[cfg(target_os = "macos")]
        mac: Some(super::mac::mac_facts()),
        #[cfg(not(target_os = "macos"))]
        mac: None,
        #[cfg(target_os = "linux")]
        power: Some(super::linux_power::linux_power_facts()).filter(|p| *p != Default::default()),
        #[cfg(not(target_os = "linux"))]
        power: None,
    }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

fn command(program: &str, args: &[&str]) -> Option<String> {
    let out = crate::platform::command(program).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()).filter(|s| !s.is_empty())
}

fn hostname() -> Option<String> {
    read("/proc/sys/kernel/hostname").or_else(|| command("hostname", &[]))
}

fn os_name() -> Option<String> {
    if let Some(release) = read("/etc/os-release") {
        let pretty = release.lines().find_map(|l| l.strip_prefix("PRETTY_NAME="));
        if let Some(name) = pretty {
            return Some(name.trim_matches('"').to_owned());
        }
    }
    match (command("sw_vers", &["-productName"]), command("sw_vers", &["-productVersion"])) {
        (Some(name), Some(version)) => Some(format!("{name} {version}")),
        _ => Some(std::env::consts::OS.to_owned()),
    }
}

fn kernel() -> Option<String> {
    read("/proc/sys/kernel/osrelease").or_else(|| command("uname", &["-r"]))
}

fn cpu_model() -> Option<String> {
    if let Some(info) = read("/proc/cpuinfo") {
        let model = info.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            matches!(key.trim(), "model name" | "Model" | "Hardware").then(|| value.trim().to_owned())
        });
        if model.is_some() {
            return model;
        }
    }
    command("sysctl", &["-n", "machdep.cpu.brand_string"])
}

fn memory_bytes() -> Option<u64> {
    if let Some(info) = read("/proc/meminfo") {
        let kib = info.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
        return kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok().map(|k| k * 1024);
    }
    command("sysctl", &["-n", "hw.memsize"])?.parse().ok()
}

/// User + system CPU time this process has used (getrusage on Linux and macOS).
pub fn process_cpu_seconds() -> Option<f64> {
    crate::platform::process_cpu_seconds()
}
