//! The quality column beside the speed tables (`cargo xtask report PASS --quality-reference`):
//! two passes of the reference engine, each with sustained runs and a round of the quality
//! prompts. The sim's language model is deterministic, so the truth is known: the second pass
//! agrees with the first on every prompt (exact match 100 %, KL 0), and a cell compared with
//! itself is the reference. Without a comparison the report has no such column.

use sim::SimProfile;

use crate::agent::{run_sim_pass, step};

#[test]
fn each_speed_table_gains_a_quality_column_from_the_comparison() {
    let tmp = tempfile::tempdir().unwrap();
    // Fast, so that 52 prompts take a moment; 8 tokens each are enough to compare.
    let profile = SimProfile { base_latency_ms: 2.0, prefill_tps: 50_000.0, decode_tps: 2000.0, ..SimProfile::default() };
    let steps = || {
        vec![
            step(serde_json::json!({ "workload": "sustained", "target_prompt_tokens": 0, "max_tokens": 16, "warmup": 0, "runs": 3 })),
            step(serde_json::json!({ "workload": "quality", "target_prompt_tokens": 0, "max_tokens": 8, "warmup": 0, "runs": 1, "top_logprobs": 5 })),
        ]
    };
    let reference = run_sim_pass(profile.clone(), steps(), &tmp.path().join("ref"), "quality-ref");
    let candidate = run_sim_pass(profile, steps(), &tmp.path().join("cand"), "quality-cand");
    let ref_cell = analysis::quality::reference_cell(&reference, None).unwrap();
    let rows = analysis::quality::compare(&reference, ref_cell, std::slice::from_ref(&candidate));
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].exact_match, rows[0].kl_mean), (Some(1.0), Some(0.0)), "the same deterministic model");

    let steps = analysis::cells::summarize(&candidate).unwrap();
    assert!(steps.iter().all(|s| s.workload != harness::pass::Workload::Quality), "quality runs are not speed steps");
    let options = report::ReportOptions { quality: Some(&rows) };
    let r = report::render_pass_with(&candidate, &steps, options).unwrap();
    crate::plain_markdown::assert_plain("report.md with a quality column", &r.markdown);
    crate::plain_markdown::assert_plain("quality.md", &report::quality::to_markdown(&rows).unwrap());
    let sustained = r.markdown.split("## Sustained decode (tok/s)").nth(1).unwrap().split("\n## ").next().unwrap();
    let lines: Vec<&str> = sustained.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(lines[0], "| engine | sim-model | quality |", "{sustained}");
    assert!(lines[2].starts_with("| benchpass-sim |") && lines[2].ends_with("| 100 % exact, KL 0 |"), "{}", lines[2]);
    assert!(r.markdown.contains("each cell against the reference quality-ref · benchpass-sim · sim-model"), "{}", r.markdown);
    assert!(r.html.contains("<th>quality</th>") && r.html.contains("<td>100 % exact, KL 0</td>"));
    // No quality runs in the speed figures, so none in the leaderboard either.
    assert!(!r.leaderboard_csv.contains(",quality,"));

    // The reference pass against itself: its cell is the reference.
    let ref_rows = analysis::quality::compare(&reference, ref_cell, std::slice::from_ref(&reference));
    let ref_steps = analysis::cells::summarize(&reference).unwrap();
    let r = report::render_pass_with(&reference, &ref_steps, report::ReportOptions { quality: Some(&ref_rows) }).unwrap();
    assert!(r.markdown.contains("| benchpass-sim |") && r.markdown.contains(" | reference |"), "{}", r.markdown);

    // Without a comparison, no column.
    let plain = report::render_pass(&candidate, &steps).unwrap();
    assert!(!plain.markdown.contains("| quality |") && !plain.markdown.contains("against the reference"), "{}", plain.markdown);
}
