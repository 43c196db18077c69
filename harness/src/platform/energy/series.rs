//! A run's energy from a source's series of readings, as arithmetic (docs/metrics.md
//! "Energy"): a counter's difference between the run's two ends, each end read off the line
//! between the readings either side of it; or sampled power integrated over the run's
//! interval by the trapezoid rule over the same lines. No clock here: times are seconds from
//! any origin, so a test works the figures out by hand.

use benchpass_format::EnergyReading;

/// The value at `t` on the line between the readings either side of it; `None` before the
/// first reading or after the last.
fn at(points: &[(f64, f64)], t: f64) -> Option<f64> {
    let after = points.iter().position(|&(pt, _)| pt >= t)?;
    let (t1, v1) = points[after];
    if t1 == t {
        return Some(v1);
    }
    let (t0, v0) = points[after.checked_sub(1)?];
    Some(v0 + (v1 - v0) * (t - t0) / (t1 - t0))
}

/// Joules between `from` and `to` (seconds, `from ≤ to`) from `points` (time, value) in time
/// order: counter values in joules, or power in watts. `None` where the readings do not
/// reach both ends.
pub fn joules_between(reading: EnergyReading, points: &[(f64, f64)], from: f64, to: f64) -> Option<f64> {
    // NaN ends are refused too.
    if from.partial_cmp(&to).is_none_or(|o| o == std::cmp::Ordering::Greater) {
        return None;
    }
    let (start, end) = (at(points, from)?, at(points, to)?);
    match reading {
        EnergyReading::Counter => Some(end - start),
        EnergyReading::SampledPower => {
            // The polyline from (from, start) through every reading inside to (to, end).
            let inside = points.iter().copied().filter(|&(t, _)| t > from && t < to);
            let line: Vec<(f64, f64)> = std::iter::once((from, start)).chain(inside).chain(std::iter::once((to, end))).collect();
            Some(line.windows(2).map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0).sum())
        }
    }
}

/// A counter's step from `last` to `now`, raw units, where it wraps to 0 past `max_range`
/// (RAPL's `max_energy_range_uj`): a smaller `now` has wrapped once. `None` when a value is
/// beyond the range (not a reading of this counter).
pub fn counter_step(last: u64, now: u64, max_range: u64) -> Option<u64> {
    if last > max_range || now > max_range {
        return None;
    }
    Some(if now >= last { now - last } else { max_range - last + now })
}

#[cfg(test)]
mod tests {
    use super::*;
    use EnergyReading::*;

    #[test]
    fn sampled_power_is_a_trapezoid_over_the_readings() {
        // 10 W at 0 s, 20 W at 1 s, 20 W at 2 s, 40 W at 3 s.
        let p = [(0.0, 10.0), (1.0, 20.0), (2.0, 20.0), (3.0, 40.0)];
        // 0–3 s: (10+20)/2 + (20+20)/2 + (20+40)/2 = 15 + 20 + 30 = 65 J.
        assert_eq!(joules_between(SampledPower, &p, 0.0, 3.0), Some(65.0));
        // 0.5–2.5 s: 15 W at 0.5 s, 30 W at 2.5 s:
        // (15+20)/2·0.5 + (20+20)/2·1 + (20+30)/2·0.5 = 8.75 + 20 + 12.5 = 41.25 J.
        assert_eq!(joules_between(SampledPower, &p, 0.5, 2.5), Some(41.25));
        // Inside one interval: 1.25–1.75 s at 20 W: 10 J.
        assert_eq!(joules_between(SampledPower, &p, 1.25, 1.75), Some(10.0));
        // Past the last reading, or before the first: not measured.
        assert_eq!(joules_between(SampledPower, &p, 2.5, 3.5), None);
        assert_eq!(joules_between(SampledPower, &p, -0.5, 1.0), None);
    }

    #[test]
    fn a_counter_is_its_difference_between_the_ends() {
        // Joules since the meter opened: 0, 30, 70, 70 at 0, 1, 2, 3 s.
        let c = [(0.0, 0.0), (1.0, 30.0), (2.0, 70.0), (3.0, 70.0)];
        assert_eq!(joules_between(Counter, &c, 0.0, 2.0), Some(70.0));
        // 0.5 s: 15 J; 1.5 s: 50 J.
        assert_eq!(joules_between(Counter, &c, 0.5, 1.5), Some(35.0));
        assert_eq!(joules_between(Counter, &c, 2.0, 3.0), Some(0.0));
        assert_eq!(joules_between(Counter, &c, 1.0, 0.5), None, "ends reversed");
    }

    #[test]
    fn a_counter_that_wraps_steps_through_its_range() {
        // RAPL's range 262143328850 µJ (a common max_energy_range_uj); read 262143000000, then 500000.
        assert_eq!(counter_step(262_143_000_000, 500_000, 262_143_328_850), Some(328_850 + 500_000));
        assert_eq!(counter_step(100, 250, 1000), Some(150));
        assert_eq!(counter_step(100, 100, 1000), Some(0));
        assert_eq!(counter_step(100, 2000, 1000), None);
    }
}
