//! Exact two-sided Wilcoxon–Mann–Whitney rank-sum test for small samples.
//!
//! Used to decide whether a benchmark cell got faster or slower between two
//! passes, where each side holds only a handful of repetitions (up to about
//! 12 per side).
//!
//! # The test
//!
//! Pool the two samples `a` (size `k`) and `b` (size `n - k`), rank the pooled
//! values `1..=n`, and take the observed rank sum `W_obs` of sample `a`. Under
//! the null hypothesis (both samples come from the same distribution) every
//! choice of which `k` of the `n` pooled positions belong to `a` is equally
//! likely, so the null distribution of `W` is obtained by taking the rank sum
//! of each of the `C(n, k)` subsets.
//!
//! # Two-sided p-value
//!
//! The null mean of `W` is `mu = k (n + 1) / 2`. The two-sided p-value is the
//! fraction of the `C(n, k)` subsets whose rank sum is at least as far from
//! `mu` as the observed one:
//!
//! ```text
//! p = #{ S : |W(S) - mu| >= |W_obs - mu| } / C(n, k)
//! ```
//!
//! Without ties the null distribution is symmetric about `mu`, so this equals
//! twice the smaller tail (capped at 1), which is what R's
//! `wilcox.test(a, b, exact = TRUE)` reports for untied data.
//!
//! # Ties
//!
//! Tied values get mid-ranks (the average of the ranks they span). The null
//! distribution is then the permutation distribution *conditional on the
//! observed tie pattern*: the same enumeration over all `C(n, k)` subsets, but
//! of the mid-ranks actually present. This is the standard exact treatment of
//! ties (Hollander & Wolfe, *Nonparametric Statistical Methods*, chapter 4,
//! the Wilcoxon rank sum test, with average ranks for ties and the
//! conditional null distribution; Lehmann, *Nonparametrics: Statistical
//! Methods Based on Ranks*, chapter 1, treatment of ties). With ties the
//! conditional distribution need not be symmetric, which is why the p-value is
//! defined by distance from `mu` rather than by doubling one tail. If every
//! value is tied, every subset has rank sum `mu` and `p = 1`.
//!
//! Mid-ranks are multiples of 1/2, so the computation works on *doubled*
//! ranks (`first + last` of the tied run), which are integers: the rank sums,
//! the doubled mean `k (n + 1)` and the distances are compared exactly in
//! integer arithmetic. This is equivalent to the float comparison
//! `|W - mu| >= |W_obs - mu| - eps` for any `0 < eps < 1/2` (distinct
//! distances differ by at least 1/2), with no rounding error to absorb.
//!
//! # Why exact, and why not statrs
//!
//! With 3–12 samples per side a normal approximation is poor in exactly the
//! tails we care about. `statrs` 0.19.1's `mannwhitneyu` cannot be used
//! instead: with `Exact` it returns `p = 1.0` whenever the first sample is not
//! longer than the second, and `Automatic` takes the same path, so it would
//! silently report "no change".
//!
//! # How it is computed
//!
//! The count of subsets at each rank sum is computed exactly, either by a
//! dynamic programme over doubled-rank sums (counts of `j`-subsets with each
//! sum; the usual choice, `O(n * k * range)` with `range` at most `2 k n`) or, when
//! that table would be larger than the enumeration itself (very unbalanced
//! sizes, e.g. one side of size 1), by walking every combination of indices.
//! Both give the same integer counts. Swapping `a` and `b` gives the same
//! p-value (the complement of a subset deviates from its mean by the same
//! amount in the opposite direction).
//!
//! # Limits
//!
//! If `C(n, k)` exceeds [`MAX_SUBSETS`] (5 000 000), [`exact_two_sided_p`]
//! returns `None` rather than an approximation; 12 v 12 (`C(24, 12) =
//! 2 704 156`) is within the cap, 13 v 13 (`C(26, 13) = 10 400 600`) is not.

/// Largest number of subsets `C(n, k)` the exact test will consider; beyond
/// it [`exact_two_sided_p`] returns `None`.
pub const MAX_SUBSETS: u64 = 5_000_000;

/// Exact two-sided Wilcoxon–Mann–Whitney rank-sum p-value for samples `a`
/// and `b` (see the module documentation for the definition and tie
/// handling).
///
/// Returns `None` if either sample is empty, if any value is not finite
/// (NaN or ±infinity), or if `C(|a| + |b|, |a|)` exceeds [`MAX_SUBSETS`].
/// Otherwise the result lies in `(0, 1]`.
pub fn exact_two_sided_p(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    if a.iter().chain(b).any(|v| !v.is_finite()) {
        return None;
    }
    let n = a.len() + b.len();
    let total = binomial_capped(n, a.len(), MAX_SUBSETS)?;

    // Work with the smaller side as "a": same p-value (see module docs), and
    // a smaller DP table.
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let doubled = doubled_mid_ranks(small, large);
    let k = small.len();

    let extreme = if dp_is_cheaper(&doubled, k, total) {
        count_extreme_by_dp(&doubled, k)
    } else {
        count_extreme_by_enumeration(&doubled, k)
    };
    debug_assert!(extreme >= 1 && extreme <= total);
    Some(extreme as f64 / total as f64)
}

/// Smallest two-sided p-value any untied data with these sample sizes could
/// give: `2 / C(n_a + n_b, n_a)`, capped at 1 (so 1 when either size is 0).
///
/// For example 3 v 3 gives 0.1 and 5 v 5 gives 2/252 ≈ 0.0079; a
/// significance level below this can never be reached without ties.
///
/// With ties the conditional null distribution can be asymmetric and a
/// smaller p is possible (e.g. `a = [0]`, `b = [1, 1]` gives 1/3 against a
/// bound of 2/3), so treat this as a property of the design, not a hard floor.
pub fn min_attainable_p(n_a: usize, n_b: usize) -> f64 {
    let n = n_a + n_b;
    let k = n_a.min(n_b);
    // C(n, k) built as C(n-k+i, i) for i = 1..=k: each intermediate is an
    // integer, so this is exact while it stays below 2^53.
    let mut c = 1.0_f64;
    for i in 1..=k {
        c = c * (n - k + i) as f64 / i as f64;
    }
    (2.0 / c).min(1.0)
}

/// `C(n, k)`, or `None` if it exceeds `cap`.
fn binomial_capped(n: usize, k: usize, cap: u64) -> Option<u64> {
    let k = k.min(n - k);
    let m = (n - k) as u128;
    // C(m + i, i) = C(m + i - 1, i - 1) * (m + i) / i, exact at every step and
    // non-decreasing in i, so once it passes the cap the result does too.
    let mut c: u128 = 1;
    for i in 1..=k as u128 {
        c = c * (m + i) / i;
        if c > u128::from(cap) {
            return None;
        }
    }
    u64::try_from(c).ok()
}

/// Doubled mid-ranks of the pooled sample `first ++ second`, in that order
/// (the first `first.len()` entries belong to `first`). A value whose tied
/// run spans ranks `lo..=hi` gets `lo + hi`. All values must be finite.
fn doubled_mid_ranks(first: &[f64], second: &[f64]) -> Vec<u64> {
    let pooled: Vec<f64> = first.iter().chain(second).copied().collect();
    let mut order: Vec<usize> = (0..pooled.len()).collect();
    order.sort_by(|&i, &j| {
        pooled[i]
            .partial_cmp(&pooled[j])
            .expect("values are finite")
    });
    let mut doubled = vec![0_u64; pooled.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && pooled[order[end]] == pooled[order[start]] {
            end += 1;
        }
        // Positions start..end (0-based) hold ranks start+1 ..= end.
        let d = (start + 1 + end) as u64;
        for &idx in &order[start..end] {
            doubled[idx] = d;
        }
        start = end;
    }
    doubled
}

/// Sum of the `k` largest entries: the largest possible subset sum.
fn max_subset_sum(doubled: &[u64], k: usize) -> u64 {
    let mut sorted = doubled.to_vec();
    sorted.sort_unstable();
    sorted.iter().rev().take(k).sum()
}

/// Whether the DP (about `n * k * (max_sum + 1)` steps) is no more work than
/// walking all `total` combinations (about `k` steps each).
fn dp_is_cheaper(doubled: &[u64], k: usize, total: u64) -> bool {
    let n = doubled.len() as u128;
    let width = u128::from(max_subset_sum(doubled, k)) + 1;
    n * k as u128 * width <= u128::from(total) * k.max(1) as u128
}

/// Observed doubled rank sum (first `k` entries), and the doubled null mean
/// `k (n + 1)`.
fn observed_and_mean(doubled: &[u64], k: usize) -> (u64, u64) {
    let observed: u64 = doubled[..k].iter().sum();
    let mean = (k * (doubled.len() + 1)) as u64;
    (observed, mean)
}

/// Number of `k`-subsets of `doubled` (by position) whose sum is at least as
/// far from the doubled mean as the first `k` entries' sum, by a 0/1-knapsack
/// count over sums.
fn count_extreme_by_dp(doubled: &[u64], k: usize) -> u64 {
    let (observed, mean) = observed_and_mean(doubled, k);
    let threshold = observed.abs_diff(mean);
    let width = max_subset_sum(doubled, k) as usize + 1;

    // counts[j * width + s]: number of j-subsets of the items seen so far
    // with doubled-rank sum s.
    let mut counts = vec![0_u64; (k + 1) * width];
    counts[0] = 1;
    for (seen, &r) in doubled.iter().enumerate() {
        let r = r as usize;
        // Descending j so row j-1 still holds the counts without this item.
        for j in (1..=k.min(seen + 1)).rev() {
            let (lower, upper) = counts.split_at_mut(j * width);
            let prev = &lower[(j - 1) * width..];
            let row = &mut upper[..width];
            for s in r..width {
                row[s] += prev[s - r];
            }
        }
    }
    counts[k * width..]
        .iter()
        .enumerate()
        .filter(|&(s, _)| (s as u64).abs_diff(mean) >= threshold)
        .map(|(_, &c)| c)
        .sum()
}

/// Same count as [`count_extreme_by_dp`], by walking every combination of
/// `k` indices out of `doubled.len()` in lexicographic order.
fn count_extreme_by_enumeration(doubled: &[u64], k: usize) -> u64 {
    let (observed, mean) = observed_and_mean(doubled, k);
    let threshold = observed.abs_diff(mean);
    let n = doubled.len();

    let mut idx: Vec<usize> = (0..k).collect();
    let mut extreme = 0_u64;
    loop {
        let sum: u64 = idx.iter().map(|&i| doubled[i]).sum();
        if sum.abs_diff(mean) >= threshold {
            extreme += 1;
        }
        // Rightmost index that can still move right.
        let Some(i) = (0..k).rev().find(|&i| idx[i] < n - k + i) else {
            break;
        };
        idx[i] += 1;
        for j in i + 1..k {
            idx[j] = idx[j - 1] + 1;
        }
    }
    extreme
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Literal reference: float mid-ranks, every subset, `|W - mu| >=
    /// |W_obs - mu| - 1e-9`. Slow; only for small n.
    fn brute_force_p(a: &[f64], b: &[f64]) -> f64 {
        let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
        let n = pooled.len();
        let k = a.len();
        let ranks: Vec<f64> = pooled
            .iter()
            .map(|&v| {
                let less = pooled.iter().filter(|&&w| w < v).count() as f64;
                let equal = pooled.iter().filter(|&&w| w == v).count() as f64;
                less + (equal + 1.0) / 2.0
            })
            .collect();
        let mu = k as f64 * (n as f64 + 1.0) / 2.0;
        let observed: f64 = ranks[..k].iter().sum();
        let threshold = (observed - mu).abs() - 1e-9;
        let (mut hits, mut total) = (0_u64, 0_u64);
        for mask in 0_u32..(1 << n) {
            if mask.count_ones() as usize != k {
                continue;
            }
            total += 1;
            let w: f64 = (0..n)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| ranks[i])
                .sum();
            if (w - mu).abs() >= threshold {
                hits += 1;
            }
        }
        hits as f64 / total as f64
    }

    fn p(a: &[f64], b: &[f64]) -> f64 {
        exact_two_sided_p(a, b).expect("p-value")
    }

    #[test]
    fn three_v_three_fully_separated_is_one_tenth() {
        // C(6,3) = 20; only {1,2,3} (W=6) and {4,5,6} (W=15) are as extreme.
        assert_eq!(p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 2.0 / 20.0);
        assert_eq!(p(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]), 0.1);
    }

    #[test]
    fn five_v_five_fully_separated_is_two_over_252() {
        let a = [10.0, 11.0, 12.0, 13.0, 14.0];
        let b = [20.0, 21.0, 22.0, 23.0, 24.0];
        assert_eq!(p(&a, &b), 2.0 / 252.0);
        assert_eq!(p(&b, &a), 2.0 / 252.0);
    }

    #[test]
    fn two_v_four_fully_separated_is_two_over_fifteen() {
        // C(6,2) = 15; only {1,2} and {5,6} are as extreme.
        assert_eq!(p(&[1.0, 2.0], &[3.0, 4.0, 5.0, 6.0]), 2.0 / 15.0);
    }

    #[test]
    fn three_v_three_one_overlap_is_one_fifth() {
        // a = [1,2,4], b = [3,5,6]: ranks are the values. W_a = 1+2+4 = 7,
        // mu = 3*7/2 = 10.5, |7 - 10.5| = 3.5, so count 3-subsets of {1..6}
        // with sum <= 7 or >= 14.
        //   sum <= 7:  {1,2,3}=6, {1,2,4}=7                        -> 2
        //   sum >= 14: {4,5,6}=15, {3,5,6}=14 (complements)        -> 2
        //   (next nearest: {1,2,5}=8 and {2,5,6}=13, |dev| = 2.5)
        // p = 4/20 = 0.2, which is also R's wilcox.test(c(1,2,4), c(3,5,6)).
        assert_eq!(p(&[1.0, 2.0, 4.0], &[3.0, 5.0, 6.0]), 4.0 / 20.0);
    }

    #[test]
    fn tied_case_matches_hand_enumeration() {
        // a = [1,2,2], b = [2,3,4]. Pooled sorted: 1,2,2,2,3,4; the three 2s
        // share ranks 2..4 -> mid-rank 3. Ranks: 1, 3,3,3, 5, 6 (positions
        // distinct, 20 subsets of size 3).
        // W_a = 1+3+3 = 7, mu = 10.5, |dev| = 3.5: count sums <= 7 or >= 14.
        //   Subsets with rank 1 (C(5,2) = 10): 1 + pair from {3,3,3,5,6}
        //     {3,3} x3 -> 7;  {3,5} x3 -> 9;  {3,6} x3 -> 10;  {5,6} -> 12
        //     => 3 subsets with sum 7 (<= 7), none >= 14.
        //   Subsets without rank 1 (C(5,3) = 10): triple from {3,3,3,5,6}
        //     {3,3,3} -> 9;  {3,3,5} x3 -> 11;  {3,3,6} x3 -> 12;  {3,5,6} x3 -> 14
        //     => 3 subsets with sum 14 (>= 14).
        // p = (3 + 3) / 20 = 0.3.
        assert_eq!(p(&[1.0, 2.0, 2.0], &[2.0, 3.0, 4.0]), 6.0 / 20.0);
        assert_eq!(p(&[2.0, 3.0, 4.0], &[1.0, 2.0, 2.0]), 0.3);
    }

    #[test]
    fn ties_can_make_the_distribution_asymmetric() {
        // a = [0], b = [1,1]: ranks 1, 2.5, 2.5; mu = 2, |1 - 2| = 1.
        // Only {rank 1} is that far ({2.5} is 0.5 away): p = 1/3, below the
        // untied bound 2/C(3,1) = 2/3.
        assert_eq!(p(&[0.0], &[1.0, 1.0]), 1.0 / 3.0);
        assert_eq!(min_attainable_p(1, 2), 2.0 / 3.0);
    }

    #[test]
    fn swapping_samples_gives_same_p() {
        let cases: [(&[f64], &[f64]); 5] = [
            (&[1.0, 2.0, 4.0], &[3.0, 5.0, 6.0]),
            (&[1.0, 2.0, 2.0], &[2.0, 3.0, 4.0]),
            (&[5.1, 4.9, 5.3, 5.0], &[5.2, 5.4, 5.6, 5.5, 5.0, 5.7]),
            (&[3.0], &[1.0, 2.0, 4.0, 5.0]),
            (&[1.0, 1.0, 2.0, 7.0, 7.0], &[1.0, 3.0, 7.0]),
        ];
        for (a, b) in cases {
            assert_eq!(p(a, b), p(b, a), "a={a:?} b={b:?}");
        }
    }

    #[test]
    fn identical_samples_give_one() {
        assert_eq!(p(&[2.5, 2.5, 2.5], &[2.5, 2.5, 2.5]), 1.0);
        assert_eq!(p(&[7.0; 5], &[7.0; 8]), 1.0);
        assert_eq!(p(&[7.0], &[7.0]), 1.0);
    }

    #[test]
    fn same_values_on_both_sides_give_one() {
        // Same multiset each side: W_a = mu exactly.
        assert_eq!(p(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), 1.0);
    }

    #[test]
    fn positive_scaling_leaves_p_unchanged() {
        let a = [1.25, 2.5, 2.5, 9.0];
        let b = [2.0, 2.5, 3.75, 10.0, 11.5];
        let base = p(&a, &b);
        for c in [0.001, 0.5, 3.0, 1000.0] {
            let sa: Vec<f64> = a.iter().map(|v| v * c).collect();
            let sb: Vec<f64> = b.iter().map(|v| v * c).collect();
            assert_eq!(p(&sa, &sb), base, "scale {c}");
        }
    }

    #[test]
    fn adding_a_constant_leaves_p_unchanged() {
        let a = [1.25, 2.5, 2.5, 9.0];
        let b = [2.0, 2.5, 3.75, 10.0, 11.5];
        let base = p(&a, &b);
        for c in [-100.0, -1.0, 0.5, 64.0] {
            let sa: Vec<f64> = a.iter().map(|v| v + c).collect();
            let sb: Vec<f64> = b.iter().map(|v| v + c).collect();
            assert_eq!(p(&sa, &sb), base, "shift {c}");
        }
    }

    #[test]
    fn matches_brute_force_reference() {
        let cases: [(&[f64], &[f64]); 8] = [
            (&[1.0, 2.0, 4.0], &[3.0, 5.0, 6.0]),
            (&[1.0, 2.0, 2.0], &[2.0, 3.0, 4.0]),
            (&[5.1, 4.9, 5.3, 5.0], &[5.2, 5.4, 5.6, 5.5, 5.0, 5.7]),
            (&[1.0, 1.0, 2.0, 7.0, 7.0], &[1.0, 3.0, 7.0]),
            (&[0.0], &[1.0, 1.0]),
            (&[3.0, 3.0, 3.0, 1.0], &[3.0, 4.0, 4.0, 0.0, 3.0, 9.0, 9.0]),
            (
                &[10.0, 12.0, 11.0, 15.0, 9.5, 13.0],
                &[8.0, 9.0, 9.5, 10.5, 7.0, 8.5, 11.0],
            ),
            (
                &[2.0, 2.0, 2.0, 2.0, 2.0, 3.0],
                &[1.0, 2.0, 2.0, 2.0, 2.0, 2.0],
            ),
        ];
        for (a, b) in cases {
            let got = p(a, b);
            let want = brute_force_p(a, b);
            assert!(
                (got - want).abs() < 1e-15,
                "a={a:?} b={b:?}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn dp_and_enumeration_agree() {
        let cases: [(&[f64], &[f64]); 4] = [
            (&[1.0, 2.0, 2.0], &[2.0, 3.0, 4.0]),
            (&[3.0, 3.0, 3.0, 1.0], &[3.0, 4.0, 4.0, 0.0, 3.0, 9.0, 9.0]),
            (
                &[0.3, 0.1, 0.7, 0.7, 0.2],
                &[0.5, 0.6, 0.7, 0.9, 0.1, 0.8, 0.4],
            ),
            (&[5.0], &[1.0, 5.0, 9.0, 9.0]),
        ];
        for (a, b) in cases {
            let d = doubled_mid_ranks(a, b);
            let k = a.len();
            assert_eq!(
                count_extreme_by_dp(&d, k),
                count_extreme_by_enumeration(&d, k),
                "a={a:?} b={b:?}"
            );
        }
    }

    #[test]
    fn doubled_mid_ranks_are_first_plus_last() {
        // Sorted: 1 (rank 1), 2,2,2 (ranks 2..4 -> 2+4 = 6), 3 (5), 4 (6).
        assert_eq!(
            doubled_mid_ranks(&[1.0, 2.0, 2.0], &[2.0, 3.0, 4.0]),
            vec![2, 6, 6, 6, 10, 12]
        );
        // -0.0 and 0.0 compare equal and tie.
        assert_eq!(doubled_mid_ranks(&[-0.0], &[0.0]), vec![3, 3]);
    }

    #[test]
    fn twelve_v_twelve_is_within_the_cap() {
        let a: Vec<f64> = (0..12).map(f64::from).collect();
        let b: Vec<f64> = (12..24).map(f64::from).collect();
        assert_eq!(p(&a, &b), 2.0 / 2_704_156.0);
        assert_eq!(p(&a, &b), min_attainable_p(12, 12));
    }

    #[test]
    fn over_the_cap_returns_none() {
        // C(26, 13) = 10_400_600 > 5_000_000.
        let a: Vec<f64> = (0..13).map(f64::from).collect();
        let b: Vec<f64> = (13..26).map(f64::from).collect();
        assert_eq!(exact_two_sided_p(&a, &b), None);
        assert_eq!(binomial_capped(26, 13, MAX_SUBSETS), None);
        assert_eq!(binomial_capped(24, 12, MAX_SUBSETS), Some(2_704_156));
    }

    #[test]
    fn very_unbalanced_sizes_use_enumeration_and_stay_exact() {
        // k = 1, n = 100_001: the DP table would be ~n^2, the walk is n steps.
        // a holds the minimum (rank 1); only ranks 1 and n are as extreme.
        let a = [-1.0];
        let b: Vec<f64> = (0..100_000).map(f64::from).collect();
        let d = doubled_mid_ranks(&a, &b);
        assert!(!dp_is_cheaper(&d, 1, 100_001));
        assert_eq!(p(&a, &b), 2.0 / 100_001.0);
        assert_eq!(p(&b, &a), 2.0 / 100_001.0);
    }

    #[test]
    fn min_attainable_p_known_values() {
        assert_eq!(min_attainable_p(3, 3), 0.1);
        assert_eq!(min_attainable_p(5, 5), 2.0 / 252.0);
        assert!((min_attainable_p(5, 5) - 0.0079).abs() < 1e-4);
        assert_eq!(min_attainable_p(2, 4), 2.0 / 15.0);
        assert_eq!(min_attainable_p(4, 2), 2.0 / 15.0);
        assert_eq!(min_attainable_p(12, 12), 2.0 / 2_704_156.0);
        // Capped at 1.
        assert_eq!(min_attainable_p(1, 1), 1.0);
        assert_eq!(min_attainable_p(0, 5), 1.0);
        assert_eq!(min_attainable_p(0, 0), 1.0);
    }

    #[test]
    fn empty_sample_is_none() {
        assert_eq!(exact_two_sided_p(&[], &[1.0, 2.0]), None);
        assert_eq!(exact_two_sided_p(&[1.0, 2.0], &[]), None);
        assert_eq!(exact_two_sided_p(&[], &[]), None);
    }

    #[test]
    fn non_finite_is_none() {
        assert_eq!(exact_two_sided_p(&[1.0, f64::NAN], &[2.0, 3.0]), None);
        assert_eq!(exact_two_sided_p(&[1.0, 2.0], &[f64::NAN]), None);
        assert_eq!(exact_two_sided_p(&[f64::INFINITY], &[2.0, 3.0]), None);
        assert_eq!(exact_two_sided_p(&[1.0], &[f64::NEG_INFINITY, 3.0]), None);
    }
}
