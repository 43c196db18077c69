//! Thermal pressure, as macOS reports it around each run: a cell whose runs saw heavy pressure or
//! worse is marked `thermal`, and a falling decode rate says whether throttling was seen.

use analysis::cells::summarize;
use analysis::reasons::ReasonCode;
use harness::pass::Workload;
use harness::provenance::mac::ThermalPressure;

use crate::fixture_pass;

#[test]
fn runs_under_thermal_pressure_mark_their_cell_and_the_report_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let mut pass = fixture_pass("a.csv", "fx-a", &tmp);
    // llama.cpp's three sustained runs (50, 51, 49 tok/s in the fixture): the second ran
    // under heavy pressure, the others at nominal; every other run has no reading (Linux).
    let mut sustained = pass.runs.iter_mut().filter(|r| r.workload == Workload::Sustained && !r.warmup && r.cell == "c0");
    for pressure in [ThermalPressure::Nominal, ThermalPressure::Heavy, ThermalPressure::Nominal] {
        sustained.next().expect("three sustained runs").thermal_pressure = Some(pressure);
    }
    assert_eq!(pass.info.cells[0].engine.name, "llama.cpp");
    let steps = summarize(&pass).unwrap();
    let cell = steps.iter().find(|s| s.cell == "c0" && s.workload == Workload::Sustained).unwrap();
    let thermal: Vec<_> = cell.reasons.iter().filter(|r| r.code == ReasonCode::Thermal).collect();
    assert_eq!(thermal.len(), 1, "{:?}", cell.reasons);
    assert_eq!(thermal[0].detail, "1 of 3 runs, at worst heavy");
    assert!(steps.iter().filter(|s| s.cell != "c0").all(|s| s.reasons.iter().all(|r| r.code != ReasonCode::Thermal)), "no reading, no mark");

    let rendered = report::render_pass(&pass, &steps).unwrap();
    assert!(rendered.markdown.contains("thermal pressure heavy or worse"), "the note's sentence");
    assert!(rendered.markdown.contains("1 of 3 runs, at worst heavy"), "and its particulars");
    assert!(rendered.leaderboard_csv.contains("thermal"), "the leaderboard carries the code");
}

#[test]
fn a_macs_facts_are_printed_with_the_machine() {
    use harness::provenance::mac::{MacFacts, PowerMode, PowerSource, SwVers};
    let tmp = tempfile::tempdir().unwrap();
    let mut pass = fixture_pass("a.csv", "fx-a", &tmp);
    // The seed comparison's machine: a 14" M3 Max, 10P+4E cores, 30-core GPU, AC, High Power.
    pass.info.machine.mac = Some(MacFacts {
        chip: Some("Apple M3 Max".to_owned()),
        model_identifier: Some("Mac15,9".to_owned()),
        performance_cores: Some(10),
        efficiency_cores: Some(4),
        gpu_cores: Some(30),
        os: Some(SwVers { product_name: "macOS".to_owned(), product_version: "15.1".to_owned(), build_version: "24B83".to_owned() }),
        power_source: Some(PowerSource::Ac),
        power_mode: Some(PowerMode::High),
        gpu_wired_limit_mb: Some(30720),
        // 40 GiB: 42,949,672,960 bytes.
        metal_recommended_working_set_bytes: Some(42_949_672_960),
        thermal_pressure: Some(ThermalPressure::Nominal),
        ..MacFacts::default()
    });
    let steps = summarize(&pass).unwrap();
    let rendered = report::render_pass(&pass, &steps).unwrap();
    let expected = "Mac15,9, 10P+4E cores, 30-core GPU, macOS 15.1 (24B83), AC power, High Power Mode, GPU wired limit 30720 MB, Metal working set 40.0 GiB, thermal pressure nominal at start";
    assert!(rendered.markdown.contains(expected), "{}", rendered.markdown.lines().find(|l| l.starts_with("| machine")).unwrap_or(""));
}
