//! The soak workload's figure: how fast the engine's resident memory grows while it serves
//! run after run for hours, as the least-squares slope of each run's peak RSS over the time
//! the run started, with a 95 % interval from Student's t.

use benchpass_format::{Pass, Workload};
use statrs::distribution::{ContinuousCDF as _, StudentsT};

use crate::summary::median;

/// One cell's soak.
#[derive(Debug, Clone, PartialEq)]
pub struct Soak {
    pub cell: String,
    pub engine: String,
    pub family: String,
    /// Measured soak runs, failed ones included.
    pub runs: usize,
    pub failed: usize,
    /// From the first run's start to the last's.
    pub hours: f64,
    /// Peak RSS of the first and last runs that have one.
    pub first_rss_bytes: Option<u64>,
    pub last_rss_bytes: Option<u64>,
    /// The engine was started again when the pass was resumed: its memory started over, so
    /// no growth is fitted across the two processes.
    pub restarted: bool,
    /// MiB per hour; absent with fewer than 3 runs with a memory reading, or after a restart.
    pub growth: Option<Growth>,
    /// Median decode rate of the first and the last tenth of the runs (at least one run each):
    /// a soak that slows down shows here.
    pub decode_first_tps: Option<f64>,
    pub decode_last_tps: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growth {
    pub mib_per_hour: f64,
    /// Half-width of the 95 % interval of the slope.
    pub ci95_mib_per_hour: f64,
    pub points: usize,
}

const MIB: f64 = (1u64 << 20) as f64;

/// The soak of every cell of `pass` that ran one.
pub fn soaks(pass: &Pass) -> Vec<Soak> {
    let mut out = Vec::new();
    for cell in &pass.info.cells {
        let mut runs: Vec<_> = crate::runs::counted(pass).filter(|r| r.cell == cell.id && r.workload == Workload::Soak && !r.warmup).collect();
        if runs.is_empty() {
            continue;
        }
        runs.sort_by_key(|r| (r.started_unix_ms, r.rep));
        let t0 = runs[0].started_unix_ms;
        let hours_of = |ms: u64| ms.saturating_sub(t0) as f64 / 3.6e6;
        let points: Vec<(f64, f64)> = runs
            .iter()
            .filter(|r| !r.is_error())
            .filter_map(|r| Some((hours_of(r.started_unix_ms), r.server_peak_rss_bytes? as f64 / MIB)))
            .collect();
        let with_rss: Vec<u64> = runs.iter().filter(|r| !r.is_error()).filter_map(|r| r.server_peak_rss_bytes).collect();
        let rates: Vec<f64> = runs
            .iter()
            .filter(|r| !r.is_error())
            .filter_map(|r| benchpass_format::metrics::decode_tps(r.completion_tokens, r.decode_ms))
            .collect();
        let tenth = rates.len().div_ceil(10);
        out.push(Soak {
            cell: cell.id.clone(),
            engine: cell.engine.name.clone(),
            family: cell.family().to_owned(),
            runs: runs.len(),
            failed: runs.iter().filter(|r| r.is_error()).count(),
            hours: hours_of(runs[runs.len() - 1].started_unix_ms),
            first_rss_bytes: with_rss.first().copied(),
            last_rss_bytes: with_rss.last().copied(),
            restarted: cell.restarted_on_resume,
            growth: if cell.restarted_on_resume { None } else { growth(&points) },
            decode_first_tps: median(&rates[..tenth]),
            decode_last_tps: median(&rates[rates.len() - tenth..]),
        });
    }
    out
}

/// Least-squares slope of `y` over `x` with its 95 % interval; needs 3 points at 2 times.
pub fn growth(points: &[(f64, f64)]) -> Option<Growth> {
    let n = points.len();
    if n < 3 {
        return None;
    }
    let nf = n as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / nf;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / nf;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let slope = sxy / sxx;
    let intercept = mean_y - slope * mean_x;
    let sse: f64 = points.iter().map(|p| (p.1 - intercept - slope * p.0).powi(2)).sum();
    let se = (sse / (nf - 2.0) / sxx).sqrt();
    let t = StudentsT::new(0.0, 1.0, nf - 2.0).ok()?.inverse_cdf(0.975);
    Some(Growth { mib_per_hour: slope, ci95_mib_per_hour: t * se, points: n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_straight_line_has_its_slope_and_no_spread() {
        // 100, 110, 120 MiB at 0, 1 and 2 h: 10 MiB/h exactly.
        let g = growth(&[(0.0, 100.0), (1.0, 110.0), (2.0, 120.0)]).unwrap();
        assert!((g.mib_per_hour - 10.0).abs() < 1e-12 && g.ci95_mib_per_hour.abs() < 1e-9, "{g:?}");
    }

    #[test]
    fn the_interval_is_student_t_times_the_standard_error() {
        // x = 0, 1, 2, 3; y = 0, 2, 1, 3: slope = Sxy / Sxx = 4 / 5 = 0.8, intercept 0.3,
        // residuals −0.3, 0.9, −0.9, 0.3: SSE = 1.8, se = √(1.8 / 2 / 5) = 0.424264;
        // t(0.975, 2 df) = 4.302653, so the half-width is 1.825461.
        let g = growth(&[(0.0, 0.0), (1.0, 2.0), (2.0, 1.0), (3.0, 3.0)]).unwrap();
        assert!((g.mib_per_hour - 0.8).abs() < 1e-12);
        assert!((g.ci95_mib_per_hour - 1.825461).abs() < 1e-5, "{g:?}");
    }

    #[test]
    fn too_few_points_give_no_slope() {
        assert_eq!(growth(&[(0.0, 1.0), (1.0, 2.0)]), None);
        assert_eq!(growth(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]), None);
    }
}
