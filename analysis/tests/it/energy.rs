//! Energy figures of a step (docs/metrics.md, Energy), worked out by hand on the "gentle"
//! engine of trend.csv with energy set on its runs; its leaderboard rows; and a diff that
//! compares energy of one source and domain and never of two.

use std::path::Path;

use analysis::cells::{summarize, MetricKind};
use analysis::diff::{diff, Verdict};
use harness::pass::{read_pass, CellEnergy, EnergyReading, EnergySource, Pass, RunEnergy};

/// trend.csv's pass with its "gentle" cell given a `source:domain` and 5 W idle, and each of
/// its three measured runs 20 W over 2 s, 1 J of prefill and a decode span of
/// (0.100 + 0.001 · rep) J per output token.
fn pass_with_energy(source: EnergySource, domain: &str) -> (Pass, String) {
    let tmp = tempfile::tempdir().unwrap();
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff/hand-worked/trend.csv");
    harness::pass::csv::import_runs(&csv, tmp.path()).unwrap();
    let mut pass = read_pass(&tmp.path().join("fx-trend")).unwrap();
    let cell = pass.info.cells.iter_mut().find(|c| c.engine.name == "gentle").unwrap();
    cell.energy = Some(CellEnergy {
        source: Some(source),
        domain: domain.to_owned(),
        reading: Some(EnergyReading::Counter),
        interval_ms: 100,
        idle_ms: 3000,
        idle_watts: Some(5.0),
        unavailable: None,
    });
    let id = cell.id.clone();
    for run in pass.runs.iter_mut().filter(|r| r.cell == id && !r.warmup) {
        let n = run.completion_tokens.unwrap() as f64;
        run.energy = Some(RunEnergy {
            joules: 40.0,
            seconds: 2.0,
            prefill_joules: Some(1.0),
            decode_joules: Some((0.100 + 0.001 * f64::from(run.rep)) * (n - 1.0)),
        });
    }
    (pass, id)
}

#[test]
fn a_steps_energy_figures_by_hand() {
    let (pass, cell) = pass_with_energy(EnergySource::Rapl, "package+dram");
    let steps = summarize(&pass).unwrap();
    let step = steps.iter().find(|s| s.cell == cell).unwrap();
    let energy = step.energy.as_ref().expect("energy figures");
    assert_eq!(energy.key, "rapl:package+dram");
    let jpt = energy.joules_per_token.as_ref().unwrap();
    // Reps 0, 1, 2: 0.100, 0.101, 0.102 J/token; median 0.101.
    assert!((jpt.median - 0.101).abs() < 1e-12, "{jpt:?}");
    assert_eq!(step.metric(MetricKind::MeanWatts).unwrap().median, 20.0, "40 J over 2 s");
    let prompt = step.prompt_tokens.as_ref().unwrap().median;
    assert!((step.metric(MetricKind::JoulesPerPromptToken).unwrap().median - 1.0 / prompt).abs() < 1e-9);
    // Above idle: (decode J − 5 W × decode s) ÷ (n − 1), the median of the three runs'.
    let above: Vec<f64> = pass
        .runs
        .iter()
        .filter(|r| r.cell == cell && !r.warmup)
        .map(|r| {
            let n = r.completion_tokens.unwrap() as f64;
            ((0.100 + 0.001 * f64::from(r.rep)) * (n - 1.0) - 5.0 * r.decode_ms.unwrap() / 1e3) / (n - 1.0)
        })
        .collect();
    let mut sorted = above.clone();
    sorted.sort_by(f64::total_cmp);
    assert!((energy.joules_per_token_above_idle.unwrap() - sorted[1]).abs() < 1e-12);
    // The cells without energy have none.
    assert!(steps.iter().filter(|s| s.cell != cell).all(|s| s.energy.is_none()));

    // Leaderboard: three rows named with the source and domain, no new column.
    let csv = analysis::leaderboard::to_csv([steps.as_slice()]);
    let rows: Vec<&str> = csv.lines().filter(|l| l.contains(":rapl:package+dram,")).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(rows[0].contains(",joules_per_token:rapl:package+dram,J/token,0.101000,"), "{}", rows[0]);
    assert!(rows[2].contains(",mean_watts:rapl:package+dram,W,20.000000,"), "{}", rows[2]);
    assert!(csv.lines().all(|l| l.split(',').count() == analysis::leaderboard::N_COLUMNS || l.contains('"')));
}

#[test]
fn a_diff_compares_energy_of_one_source_and_domain_only() {
    let (a, cell) = pass_with_energy(EnergySource::Rapl, "package+dram");
    let energy_rows = |b: &Pass| {
        let (sa, sb) = (summarize(&a).unwrap(), summarize(b).unwrap());
        let d = diff(&a, &sa, b, &sb);
        let engine = sa.iter().find(|s| s.cell == cell).unwrap().engine.clone();
        d.rows.into_iter().filter(|r| r.engine == engine && r.metric.is_energy()).collect::<Vec<_>>()
    };
    // The same source and domain: compared like any figure (the same runs: within noise).
    let (same, _) = pass_with_energy(EnergySource::Rapl, "package+dram");
    let rows = energy_rows(&same);
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r.verdict == Verdict::WithinNoise), "{rows:?}");
    // Another domain, another source: never compared, and the reason names both.
    for (source, domain, named) in [(EnergySource::Rapl, "package", "rapl:package+dram → rapl:package"), (EnergySource::Nvml, "gpu", "rapl:package+dram → nvml:gpu")] {
        let (other, _) = pass_with_energy(source, domain);
        let rows = energy_rows(&other);
        assert_eq!(rows.len(), 3);
        for row in &rows {
            assert_eq!(row.verdict, Verdict::Incomparable, "{row:?}");
            assert!(row.reasons.iter().any(|r| r.detail.contains(named)), "{:?}", row.reasons);
        }
    }
}
