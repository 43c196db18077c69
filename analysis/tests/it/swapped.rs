//! The `swapped` mark: a cell whose runs saw the machine's swap in use rise by more than 1 MiB
//! (`RunRecord::swapped`, the one rule) is marked, with how many of its runs did.

use std::path::Path;

use analysis::cells::summarize;
use analysis::reasons::ReasonCode;
use harness::pass::read_pass;

const MIB: u64 = 1 << 20;

/// The `swapped` detail of the "gentle" engine of trend.csv (three runs) with its runs' swap
/// in use (before, after) set by hand, in run order; `None` leaves a run unsampled.
fn swapped_detail(swap: [Option<(u64, u64)>; 3]) -> Option<String> {
    let tmp = tempfile::tempdir().unwrap();
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff/hand-worked/trend.csv");
    harness::pass::csv::import_runs(&csv, tmp.path()).unwrap();
    let mut pass = read_pass(&tmp.path().join("fx-trend")).unwrap();
    let cell = pass.info.cells.iter().find(|c| c.engine.name == "gentle").unwrap().id.clone();
    let mut runs: Vec<_> = pass.runs.iter_mut().filter(|r| r.cell == cell && !r.warmup).collect();
    runs.sort_by_key(|r| r.rep);
    assert_eq!(runs.len(), 3);
    for (run, swap) in runs.into_iter().zip(swap) {
        run.swap_used_before_bytes = swap.map(|s| s.0);
        run.swap_used_after_bytes = swap.map(|s| s.1);
    }
    let steps = summarize(&pass).unwrap();
    assert!(steps.iter().filter(|s| s.cell != cell).all(|s| s.reasons.iter().all(|r| r.code != ReasonCode::Swapped)), "no reading, no mark");
    let step = steps.iter().find(|s| s.cell == cell).unwrap();
    step.reasons.iter().find(|r| r.code == ReasonCode::Swapped).map(|r| r.detail.clone())
}

#[test]
fn a_rise_above_one_mib_marks_the_cell_with_its_count() {
    let calm = Some((100 * MIB, 100 * MIB));
    // A rise of exactly 1 MiB is the kernel's bookkeeping, not a swap; a fall is none either.
    let one_mib = Some((100 * MIB, 101 * MIB));
    let fell = Some((600 * MIB, 100 * MIB));
    // 100 MiB → 612 MiB: the model did not fit.
    let swapped = Some((100 * MIB, 612 * MIB));
    assert_eq!(swapped_detail([calm, one_mib, fell]), None);
    assert_eq!(swapped_detail([calm, swapped, one_mib]).as_deref(), Some("1 of 3 runs"));
    assert_eq!(swapped_detail([Some((100 * MIB, 101 * MIB + 1)), swapped, calm]).as_deref(), Some("2 of 3 runs"), "one byte over 1 MiB");
    // A run with no swap reading counts in neither figure.
    assert_eq!(swapped_detail([None, swapped, calm]).as_deref(), Some("1 of 2 runs"));
    assert_eq!(swapped_detail([None, None, None]), None);
}
