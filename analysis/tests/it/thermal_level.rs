//! The `thermal` mark fires at the level where macOS throttles (heavy), not at moderate
//! ("elevated thermal pressure"): docs/metrics.md gives the source.

use std::path::Path;

use analysis::cells::summarize;
use analysis::reasons::ReasonCode;
use harness::pass::read_pass;
use harness::provenance::mac::ThermalPressure::{self, Heavy, Moderate, Nominal, Trapping};

/// The thermal mark's detail for the "gentle" engine of trend.csv (three runs, no drift) with
/// its runs' readings set by hand, in run order.
fn thermal_detail(readings: [ThermalPressure; 3]) -> Option<String> {
    let tmp = tempfile::tempdir().unwrap();
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff/hand-worked/trend.csv");
    harness::pass::csv::import_runs(&csv, tmp.path()).unwrap();
    let mut pass = read_pass(&tmp.path().join("fx-trend")).unwrap();
    let cell = pass.info.cells.iter().find(|c| c.engine.name == "gentle").unwrap().id.clone();
    let mut runs: Vec<_> = pass.runs.iter_mut().filter(|r| r.cell == cell && !r.warmup).collect();
    runs.sort_by_key(|r| r.rep);
    assert_eq!(runs.len(), 3);
    for (run, reading) in runs.into_iter().zip(readings) {
        run.thermal_pressure = Some(reading);
    }
    let steps = summarize(&pass).unwrap();
    let step = steps.iter().find(|s| s.cell == cell).unwrap();
    step.reasons.iter().find(|r| r.code == ReasonCode::Thermal).map(|r| r.detail.clone())
}

#[test]
fn the_thermal_mark_fires_at_heavy_and_not_at_moderate() {
    assert_eq!(thermal_detail([Nominal, Moderate, Moderate]), None, "moderate is not throttling");
    assert_eq!(thermal_detail([Nominal, Heavy, Moderate]).as_deref(), Some("1 of 3 runs, at worst heavy"));
    assert_eq!(thermal_detail([Heavy, Trapping, Nominal]).as_deref(), Some("2 of 3 runs, at worst trapping"));
    assert_eq!(thermal_detail([Nominal, Nominal, Nominal]), None);
}
