//! `prefix-cached`: a cell whose runs the server said it served in good part from its prefix
//! cache is marked, so that a warm TTFT is never read as a cold one. Only the server's own
//! count decides; a share under a tenth of the prompt (a chat template's shared opening) does not.

use std::path::Path;

use analysis::cells::summarize;
use analysis::reasons::ReasonCode;
use harness::pass::read_pass;

/// The mark's detail for the "gentle" engine of trend.csv (three runs) with its runs' prompt
/// and cached token counts set by hand, in run order.
fn prefix_cached_detail(runs_said: [(u64, Option<u64>); 3]) -> Option<String> {
    let tmp = tempfile::tempdir().unwrap();
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff/hand-worked/trend.csv");
    harness::pass::csv::import_runs(&csv, tmp.path()).unwrap();
    let mut pass = read_pass(&tmp.path().join("fx-trend")).unwrap();
    let cell = pass.info.cells.iter().find(|c| c.engine.name == "gentle").unwrap().id.clone();
    let mut runs: Vec<_> = pass.runs.iter_mut().filter(|r| r.cell == cell && !r.warmup).collect();
    runs.sort_by_key(|r| r.rep);
    assert_eq!(runs.len(), 3);
    for (run, (prompt, cached)) in runs.into_iter().zip(runs_said) {
        run.prompt_tokens = Some(prompt);
        run.cached_prompt_tokens = cached;
    }
    let steps = summarize(&pass).unwrap();
    let step = steps.iter().find(|s| s.cell == cell).unwrap();
    step.reasons.iter().find(|r| r.code == ReasonCode::PrefixCached).map(|r| r.detail.clone())
}

#[test]
fn runs_served_from_the_prefix_cache_mark_their_cell() {
    // 990 of 1000 is 99 %; 50 of 1000 (5 %) is under the tenth and not counted.
    assert_eq!(
        prefix_cached_detail([(1000, Some(0)), (1000, Some(990)), (1000, Some(50))]).as_deref(),
        Some("1 of 3 runs, median 99 % of the prompt cached")
    );
    // 80 % and 100 %: the median of the two is 90 %.
    assert_eq!(
        prefix_cached_detail([(1000, Some(0)), (1000, Some(800)), (1000, Some(1000))]).as_deref(),
        Some("2 of 3 runs, median 90 % of the prompt cached")
    );
    // Exactly a tenth counts.
    assert_eq!(prefix_cached_detail([(1000, Some(100)), (1000, None), (1000, None)]).as_deref(), Some("1 of 3 runs, median 10 % of the prompt cached"));
}

#[test]
fn nothing_said_or_little_cached_is_no_mark() {
    assert_eq!(prefix_cached_detail([(1000, Some(0)), (1000, Some(0)), (1000, Some(0))]), None);
    assert_eq!(prefix_cached_detail([(1000, None), (1000, None), (1000, None)]), None, "no count is not a warm run");
    assert_eq!(prefix_cached_detail([(128, Some(12)), (128, Some(12)), (128, Some(12))]), None, "a template's 9 % opening");
    assert_eq!(prefix_cached_detail([(0, Some(5)), (0, Some(5)), (0, Some(5))]), None, "no prompt tokens, no share");
}
