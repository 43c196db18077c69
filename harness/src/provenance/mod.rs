//! Where a pass came from: the machine, benchpass itself, the engine executable and the weights.

pub mod linux_power;
pub mod mac;
mod machine;
mod weights;

pub use machine::{machine_info, process_cpu_seconds};
pub use weights::{fold, hash_file, hash_weights, HashCache, HashProgress};

// This benchpass's version and commit, and the hex of a digest, as the pass format writes them.
pub use benchpass_format::{benchpass_info, hex};

/// Now, in UTC, as RFC 3339 with seconds (`2026-11-30T09:03:13Z`).
pub fn utc_now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

/// Formats seconds since the Unix epoch; the civil-from-days algorithm is Howard Hinnant's
/// (<https://howardhinnant.github.io/date_algorithms.html#civil_from_days>).
pub fn rfc3339(unix_seconds: u64) -> String {
    let days = (unix_seconds / 86_400) as i64;
    let rem = unix_seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        // `date -u -d @1709210096`: a leap day.
        assert_eq!(super::rfc3339(1_709_210_096), "2024-02-29T12:34:56Z");
        assert_eq!(super::rfc3339(1_796_000_000), "2026-11-30T00:53:20Z");
    }
}
