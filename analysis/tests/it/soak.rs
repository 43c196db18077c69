//! fixtures/soak/leaky-sim: a real soak of the reference engine set to keep 1 MiB per request.
//! The truth is 1 MiB a run, so the growth per hour is 1 MiB × the runs made per hour, counted
//! from the pass's own timestamps.

use std::path::Path;

use harness::pass::{read_pass, Workload};

#[test]
fn a_leak_of_one_mib_a_request_is_found_as_its_growth_per_hour() {
    let pass = read_pass(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/soak/leaky-sim")).unwrap();
    let soaks = analysis::soak::soaks(&pass);
    assert_eq!(soaks.len(), 1);
    let soak = &soaks[0];
    let runs: Vec<_> = pass.runs.iter().filter(|r| r.workload == Workload::Soak && !r.warmup).collect();
    assert_eq!((soak.runs, soak.failed), (runs.len(), 0));
    let hours = (runs.last().unwrap().started_unix_ms - runs[0].started_unix_ms) as f64 / 3.6e6;
    assert!((soak.hours - hours).abs() < 1e-12);
    let truth = (runs.len() - 1) as f64 / hours;
    let growth = soak.growth.unwrap();
    assert!((growth.mib_per_hour / truth - 1.0).abs() < 0.05, "{growth:?} against {truth:.0} MiB/h");
    // The interval holds the truth, and is narrow: one memory reading per 100 ms is the noise.
    assert!((growth.mib_per_hour - truth).abs() <= growth.ci95_mib_per_hour, "{growth:?} against {truth:.0} MiB/h");
    assert!(growth.ci95_mib_per_hour < 0.05 * truth, "{growth:?}");
    // The engine's decode rate does not change over the soak (500 tok/s, 16 tokens a run).
    let (first, last) = (soak.decode_first_tps.unwrap(), soak.decode_last_tps.unwrap());
    assert!((first / 500.0 - 1.0).abs() < 0.05 && (last / 500.0 - 1.0).abs() < 0.05, "{first} → {last}");
}
