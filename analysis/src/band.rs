//! Noise bands for a cell's median at the small n a benchmark protocol affords (3 sustained
//! runs, 3/2/1 in the prompt matrix, 5 in ppN-tgM). docs/statistics.md gives the reasoning.
//!
//! Timings and rates are positive and skewed (one slow TTFT among fast ones), so a band is
//! worked out on the log scale, each side on its own: the band runs from `median ÷ (1 + below)`
//! to `median × (1 + above)`, and it can never cross zero. Each side is the largest of:
//! - the cell's own runs on that side: `median / min − 1` below, `max / median − 1` above, so
//!   the band holds every measured run (runs 20, 21 and 60 ms give 20 to 60 ms, not a
//!   symmetric ±185.7 % that reaches −18 ms);
//! - the drift measured on control cells when two passes are compared (see `diff`);
//! - a floor of [`FLOOR`]: below it, background load and thermal state move local engines
//!   from one run to the next more than any protocol can control.
//!
//! Its level is stated honestly. [min, max] of n independent runs covers the population median
//! with probability 1 − 2·0.5ⁿ (the chance that not all n runs fall on one side of it;
//! David & Nagaraja, *Order Statistics*, §7.1): 75 % at n = 3, 93.75 % at n = 5. The band holds
//! [min, max], so that is a lower bound on its coverage. It is an interval for the engine's
//! true median, not a prediction of the next pass: a re-run's median of 3 falls inside a 3-run
//! [min, max] only 3 times in 5 (docs/statistics.md). One run has no band.

/// The smallest relative width a band has on each side: 2 % (÷ 1.02 below, × 1.02 above).
pub const FLOOR: f64 = 0.02;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    pub low: f64,
    pub high: f64,
    /// The wider side as a relative factor: the band lies within `median ÷ (1 + half_width)`
    /// and `median × (1 + half_width)`. A diff's change must clear it (on the log scale).
    pub half_width: f64,
    /// Lower bound on the probability that the band covers the population median; `None`
    /// with fewer than 2 runs.
    pub level: Option<f64>,
    /// Which term set the wider side.
    pub basis: BandBasis,
}

impl Band {
    /// How far the band reaches above the median, as a fraction of it: `high / median − 1`.
    pub fn above(&self, median: f64) -> f64 {
        self.high / median - 1.0
    }

    /// How far the band reaches below the median, as a fraction of it: `1 − low / median`
    /// (at most 1: the band never crosses zero).
    pub fn below(&self, median: f64) -> f64 {
        1.0 - self.low / median
    }
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

/// The band around `median` of `values` (the runs the median came from), each side widened to
/// at least `drift` (0 outside a diff) and the floor.
pub fn band(values: &[f64], median: f64, drift: f64) -> Band {
    let (min, max) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let spread = values.len() >= 2 && median > 0.0;
    // A run at 0 (or below, which no reader lets through) puts the low side at 0, never below.
    let (range_below, range_above) = if spread {
        (if min > 0.0 { median / min - 1.0 } else { f64::INFINITY }, max / median - 1.0)
    } else {
        (0.0, 0.0)
    };
    let widest = |range: f64| {
        [(range, BandBasis::Range), (drift, BandBasis::Drift), (FLOOR, BandBasis::Floor)]
            .into_iter()
            .fold((0.0, BandBasis::Floor), |best, (h, basis)| if h > best.0 { (h, basis) } else { best })
    };
    let (below, below_basis) = widest(range_below);
    let (above, above_basis) = widest(range_above);
    let (half_width, basis) = if above >= below { (above, above_basis) } else { (below, below_basis) };
    Band { low: median / (1.0 + below), high: median * (1.0 + above), half_width, level: range_coverage(values.len()), basis }
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
        // median 100, runs 95..103: 100/95 − 1 = 5.263 % below, 3 % above.
        let b = band(&[95.0, 100.0, 103.0], 100.0, 0.0);
        assert_eq!(b.basis, BandBasis::Range);
        assert!((b.half_width - 5.0 / 95.0).abs() < 1e-12);
        assert!((b.low - 95.0).abs() < 1e-9 && (b.high - 103.0).abs() < 1e-9, "{b:?}");
        // Runs within 0.5 %: the 2 % floor sets both sides, 100 ÷ 1.02 to 100 × 1.02.
        let b = band(&[99.5, 100.0, 100.5], 100.0, 0.0);
        assert_eq!((b.half_width, b.basis), (FLOOR, BandBasis::Floor));
        assert!((b.low - 100.0 / 1.02).abs() < 1e-9 && (b.high - 102.0).abs() < 1e-9, "{b:?}");
        // Drift measured on control cells wins when it is the widest.
        let b = band(&[99.0, 100.0, 101.0], 100.0, 0.04);
        assert_eq!((b.half_width, b.basis), (0.04, BandBasis::Drift));
    }

    #[test]
    fn a_skewed_cell_gets_a_band_that_does_not_cross_zero() {
        // TTFT 20, 21, 60 ms: median 21. Above: 60/21 − 1 = 185.714 %; below: 21/20 − 1 = 5 %,
        // so the band is 20 to 60 ms (−4.762 % / +185.714 %), where a symmetric ±185.7 % ran
        // down to 21 − 39 = −18 ms.
        let b = band(&[20.0, 21.0, 60.0], 21.0, 0.0);
        assert!((b.low - 20.0).abs() < 1e-9 && (b.high - 60.0).abs() < 1e-9, "{b:?}");
        assert!((b.above(21.0) - 39.0 / 21.0).abs() < 1e-12);
        assert!((b.below(21.0) - 1.0 / 21.0).abs() < 1e-12);
        // A run at 0 ms reaches the low side down to 0, not below.
        let b = band(&[0.0, 21.0, 22.0], 21.0, 0.0);
        assert_eq!(b.low, 0.0);
    }

    #[test]
    fn over_many_random_samples_the_median_lies_in_the_range_and_the_band_holds_every_run_above_zero() {
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
                assert!(b.low > 0.0, "positive runs give a band above zero: {values:?} {b:?}");
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
