//! Parsers of what the OS gives about memory and swap, as pure functions, on every OS: the
//! Linux readers (`/proc/PID/status`, `/proc/meminfo`, `/proc/pressure/memory`) and macOS's
//! `vm.swapusage` struct, tested on Linux on the samples in `fixtures/macos/` and
//! `fixtures/linux/` (their READMEs say where each came from).

/// The memory lines of one `/proc/PID/status`, in bytes (the file says kB, which is KiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusMemory {
    /// `VmRSS`: resident now.
    pub rss: u64,
    /// `VmHWM`: the peak resident size over the process's life.
    pub hwm: Option<u64>,
    /// `RssFile`: the file-backed part of `VmRSS` (mapped files: libraries, mmapped weights).
    pub rss_file: Option<u64>,
}

/// `VmRSS`, `VmHWM` and `RssFile` of a `/proc/PID/status`; `None` without `VmRSS` (a kernel
/// thread, a zombie). `RssFile` is there since Linux 4.5.
pub fn parse_status_memory(status: &str) -> Option<StatusMemory> {
    let kib = |key: &str| -> Option<u64> {
        let value = status.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?;
        let number = value.trim().strip_suffix("kB")?.trim();
        number.parse::<u64>().ok()?.checked_mul(1024)
    };
    Some(StatusMemory { rss: kib("VmRSS")?, hwm: kib("VmHWM"), rss_file: kib("RssFile") })
}

/// Swap in use from `/proc/meminfo`: `SwapTotal − SwapFree`, in bytes. `None` when either line
/// is missing; 0 on a machine without swap.
pub fn parse_meminfo_swap_used(meminfo: &str) -> Option<u64> {
    let kib = |key: &str| -> Option<u64> {
        let value = meminfo.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?;
        value.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()
    };
    Some(kib("SwapTotal")?.checked_sub(kib("SwapFree")?)? * 1024)
}

/// `some avg10` of `/proc/pressure/memory` (PSI, Linux 4.20+): the share of the last 10 s, in
/// percent, in which at least one task stalled waiting for memory. The file's first line is
/// `some avg10=0.00 avg60=0.00 avg300=0.00 total=0` (kernel `Documentation/accounting/psi.rst`).
pub fn parse_psi_some_avg10(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    let value = line.split_whitespace().find_map(|w| w.strip_prefix("avg10="))?;
    let avg: f64 = value.parse().ok()?;
    (avg.is_finite() && (0.0..=100.0).contains(&avg)).then_some(avg)
}

/// Swap in use from the bytes of `sysctlbyname("vm.swapusage")`: macOS's `struct xsw_usage`
/// (`sys/sysctl.h`: `u_int64_t xsu_total, xsu_avail, xsu_used; u_int32_t xsu_pagesize;
/// boolean_t xsu_encrypted;`, 32 bytes, little-endian on Apple silicon and Intel). `None` for
/// any other length, or used above total.
pub fn parse_xsw_usage_used(bytes: &[u8]) -> Option<u64> {
    if bytes.len() != 32 {
        return None;
    }
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let (total, used) = (u64_at(0), u64_at(16));
    (used <= total).then_some(used)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(path: &str) -> String {
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(path)).unwrap()
    }

    #[test]
    fn status_memory_of_a_process_that_maps_its_weights() {
        // fixtures/linux/proc-status-mmap.txt: VmHWM 308604 kB, VmRSS 308604 kB, RssAnon
        // 39664 kB, RssFile 268940 kB (a 256 MiB file mapped and read: 262144 kB of it).
        let m = parse_status_memory(&fixture("linux/proc-status-mmap.txt")).unwrap();
        assert_eq!(m, StatusMemory { rss: 308_604 * 1024, hwm: Some(308_604 * 1024), rss_file: Some(268_940 * 1024) });
        // A kernel thread has no VmRSS line.
        assert_eq!(parse_status_memory("Name:\tkworker/0:1\nState:\tI (idle)\n"), None);
    }

    #[test]
    fn swap_in_use_from_meminfo() {
        // fixtures/linux/proc-meminfo-1-constructed.txt: SwapTotal 8388604 kB, SwapFree 6291452 kB.
        assert_eq!(parse_meminfo_swap_used(&fixture("linux/proc-meminfo-1-constructed.txt")), Some((8_388_604 - 6_291_452) * 1024));
        assert_eq!(parse_meminfo_swap_used("SwapTotal:       0 kB\nSwapFree:        0 kB\n"), Some(0));
        assert_eq!(parse_meminfo_swap_used("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn psi_some_avg10() {
        // fixtures/linux/proc-pressure-memory-1-constructed.txt: some avg10=3.42 (full 1.05).
        assert_eq!(parse_psi_some_avg10(&fixture("linux/proc-pressure-memory-1-constructed.txt")), Some(3.42));
        assert_eq!(parse_psi_some_avg10(&fixture("linux/proc-pressure-memory-idle.txt")), Some(0.0));
        assert_eq!(parse_psi_some_avg10("full avg10=1.00 avg60=0.00 avg300=0.00 total=0\n"), None, "only the some line");
        assert_eq!(parse_psi_some_avg10("some avg10=nan avg60=0.00\n"), None);
    }

    #[test]
    fn xsw_usage_bytes() {
        // fixtures/macos/xsw_usage-constructed.hex: total 4096 MiB, avail 1352.5 MiB, used
        // 2743.5 MiB, page size 16384, encrypted: the figures of sysctl-vm.swapusage-1.txt.
        let hex = fixture("macos/xsw_usage-constructed.hex");
        let bytes: Vec<u8> = hex.split_whitespace().map(|b| u8::from_str_radix(b, 16).unwrap()).collect();
        assert_eq!(parse_xsw_usage_used(&bytes), Some(2_876_768_256));
        assert_eq!(2_876_768_256u64, 27_435 * (1 << 20) / 10, "2743.5 MiB");
        assert_eq!(parse_xsw_usage_used(&bytes[..24]), None);
        let mut more_used_than_total = bytes.clone();
        more_used_than_total[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(parse_xsw_usage_used(&more_used_than_total), None);
    }
}
