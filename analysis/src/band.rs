//! Noise bands for a cell's median at the small n a benchmark protocol affords (3 sustained
//! runs, 3/2/1 in the prompt matrix, 5 in ppN-tgM). docs/statistics.md gives the reasoning.
//!
//! The band is a relative half-width `h` around the median, the largest of:
//! - the cell's own range: max(median − min, max − median) / median, so the band holds every
//!   measured run;
//! - the drift measured on control cells when two passes are compared (see `diff`);
//! - a floor of [`FLOOR`]: below it, background load and thermal state move local engines
//!   from one run to the next more than any protocol can control.
//!
//! Its level is stated honestly. [min, max] of n independent runs covers the population median
//! with probability 1 − 2·0.5ⁿ (the chance that not all n runs fall on one side of it;
//! David & Nagaraja, *Order Statistics*, §7.1): 75 % at n = 3, 93.75 % at n = 5. The band holds
//! [min, max], so that is a lower bound on its coverage. One run has no band.

/// The smallest relative half-width a band has: 2 %.
pub const FLOOR: f64 = 0.02;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    pub low: f64,
    pub high: f64,
    /// Relative half-width: `high = median × (1 + half_width)`.
    pub half_width: f64,
    /// Lower bound on the probability that the band covers the population median; `None`
    /// with fewer than 2 runs.
    pub level: Option<f64>,
    pub basis: BandBasis,
}

/// Which term set the band's width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BandBasis {
    Range,
    Floor,
    Drift,
}

/// P(min ≤ median ≤ max) for n runs: 1 − 2·P(Binomial(n, ½) = 0) = 1 − 2·0.5ⁿ, exactly
/// (a power of two is exact in floating point, so 3 runs give 0.75, not 0.7500000000000012
/// as a CDF through the incomplete beta function would).
pub fn range_coverage(n: usize) -> Option<f64> {
    (n >= 2).then(|| 1.0 - 2.0 * 0.5f64.powi(n as i32))
}

/// The band around `median` of `values` (the runs the median came from), widened to at least
/// `drift` (0 outside a diff).
pub fn band(values: &[f64], median: f64, drift: f64) -> Band {
    let (min, max) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let range = if values.len() >= 2 && median > 0.0 { (median - min).max(max - median) / median } else { 0.0 };
    let (half_width, basis) = [(range, BandBasis::Range), (drift, BandBasis::Drift), (FLOOR, BandBasis::Floor)]
        .into_iter()
        .fold((0.0, BandBasis::Floor), |best, (h, basis)| if h > best.0 { (h, basis) } else { best });
    Band {
        low: median * (1.0 - half_width),
        high: median * (1.0 + half_width),
        half_width,
        level: range_coverage(values.len()),
        basis,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_of_the_range_is_one_minus_two_halves_to_the_n() {
        assert_eq!(range_coverage(1), None);
        assert_eq!(range_coverage(3), Some(0.75));
        assert_eq!(range_coverage(5), Some(0.9375));
    }

    #[test]
    fn the_band_holds_every_run_and_never_narrows_below_the_floor() {
        // median 100, runs 95..103: range half-width max(5, 3)/100 = 5 %.
        let b = band(&[95.0, 100.0, 103.0], 100.0, 0.0);
        assert_eq!((b.half_width, b.basis), (0.05, BandBasis::Range));
        assert_eq!((b.low, b.high), (95.0, 105.0));
        // Runs within 0.5 %: the 2 % floor sets the width.
        let b = band(&[99.5, 100.0, 100.5], 100.0, 0.0);
        assert_eq!((b.half_width, b.basis), (FLOOR, BandBasis::Floor));
        // Drift measured on control cells wins when it is the widest.
        let b = band(&[99.0, 100.0, 101.0], 100.0, 0.04);
        assert_eq!((b.half_width, b.basis), (0.04, BandBasis::Drift));
    }

    #[test]
    fn over_many_random_samples_the_median_lies_in_the_range_and_the_band_holds_every_run() {
        let mut state = 0x9E3779B97F4A7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            1.0 + (state % 10_000) as f64
        };
        for n in 1..=9 {
            for _ in 0..200 {
                let values: Vec<f64> = (0..n).map(|_| next()).collect();
                let median = crate::summary::median(&values).unwrap();
                let (min, max) = values.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
                assert!(min <= median && median <= max);
                let b = band(&values, median, 0.0);
                assert!(b.low <= min + 1e-9 && max <= b.high + 1e-9, "{values:?} {b:?}");
            }
        }
    }

    #[test]
    fn scaling_every_run_scales_the_band_and_keeps_its_width() {
        let a = band(&[48.0, 50.0, 51.0], 50.0, 0.0);
        let b = band(&[96.0, 100.0, 102.0], 100.0, 0.0);
        assert!((a.half_width - b.half_width).abs() < 1e-12);
        assert!((b.low - 2.0 * a.low).abs() < 1e-9);
    }
}
