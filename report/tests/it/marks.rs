//! The star means "this decode rate is a short-sample burst": only where runs that stopped
//! early entered the median. Runs that stopped early but were left out get a numbered note.

use harness::pass::Workload;

use crate::fixture_pass;

#[test]
fn a_decode_median_from_full_runs_gets_a_numbered_note_not_a_star() {
    let tmp = tempfile::tempdir().unwrap();
    let mut pass = fixture_pass("a.csv", "fx-a", &tmp);
    // llama.cpp's sustained runs: the first stops at 100 of 256 tokens; two full runs remain.
    let run = pass.runs.iter_mut().find(|r| r.cell == "c0" && r.workload == Workload::Sustained && !r.warmup).unwrap();
    run.completion_tokens = Some(100);
    run.finish_reason = Some("stop".to_owned());
    let steps = analysis::cells::summarize(&pass).unwrap();
    let step = steps.iter().find(|s| s.cell == "c0" && s.workload == Workload::Sustained).unwrap();
    assert!(!step.decode_is_burst() && step.n_short == 1);
    let rendered = report::render_pass(&pass, &steps).unwrap();
    let notes: Vec<&str> = rendered.markdown.lines().filter(|l| l.contains("`short-stop`")).collect();
    assert!(notes.iter().any(|l| l.contains("1 of 3 runs stopped early") && !l.starts_with("\\*")), "{notes:?}");
    // Only where short runs entered a median is there a star (the fixture's Ollama 8192 cell);
    // its note says something else, so it is a note of its own.
    let starred: Vec<&&str> = notes.iter().filter(|l| l.starts_with("\\*")).collect();
    assert!(starred.iter().all(|l| !l.contains("left out of the decode median")), "{starred:?}");
}
