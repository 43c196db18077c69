//! A diff's attribution says what the provenance shows: engine versions that differ say the
//! engine changed even where its executable was not hashed (a `--url` pass), and where the
//! weights could not be compared the sentence says what is known instead of "unknown" alone.
//! Metrics are named with their units.

use analysis::diff::{diff, Attribution};

/// A pass of one llama.cpp cell, 3 sustained runs of 256 tokens decoding at `rate`.
fn pass(tmp: &tempfile::TempDir, id: &str, version: &str, build: &str, rate: f64) -> (harness::pass::Pass, Vec<analysis::cells::CellStep>) {
    let mut csv = String::from("pass_id,machine,engine,engine_version,engine_sha256,model,build_sha256,lane,workload,target_prompt_tokens,prompt_tokens,max_tokens,completion_tokens,ttft_ms,decode_ms,finish_reason,warmup,rep,error,token_count_source\n");
    for rep in 0..3 {
        // 255 tokens after the first: 255 / rate seconds.
        csv.push_str(&format!("{id},m1,llama.cpp,{version},,qwen,{build},text,sustained,0,30,256,256,60.000,{:.3},length,false,{rep},,usage\n", 255_000.0 / rate));
    }
    let file = tmp.path().join(format!("{id}.csv"));
    std::fs::write(&file, csv).unwrap();
    harness::pass::csv::import_runs(&file, tmp.path()).unwrap();
    let pass = harness::pass::read_pass(&tmp.path().join(id)).unwrap();
    let steps = analysis::cells::summarize(&pass).unwrap();
    (pass, steps)
}

#[test]
fn versions_that_differ_say_the_engine_changed_even_unhashed() {
    let tmp = tempfile::tempdir().unwrap();
    let build = "1".repeat(64);
    let (a, a_steps) = pass(&tmp, "a", "b5000", &build, 50.0);
    let (b, b_steps) = pass(&tmp, "b", "b5100", &build, 95.0);
    let d = diff(&a, &a_steps, &b, &b_steps);
    let decode = d.rows.iter().find(|r| r.metric == analysis::cells::MetricKind::DecodeTps).unwrap();
    assert_eq!(decode.attribution, Some(Attribution::Engine), "the versions differ and the weights are the same");
    let md = report::diff::to_markdown(&d).unwrap();
    assert!(md.contains("| decode tok/s | 50.0 | 95.0 |"), "{md}");
    assert!(md.contains("the engine changed and the weights did not: an engine-only delta"), "{md}");

    // The weights unhashed on one side: the engine still changed, and the sentence says so.
    let (c, c_steps) = pass(&tmp, "c", "b5100", "", 95.0);
    let d = diff(&a, &a_steps, &c, &c_steps);
    let decode = d.rows.iter().find(|r| r.metric == analysis::cells::MetricKind::DecodeTps).unwrap();
    assert_eq!(decode.attribution, Some(Attribution::Unknown));
    let md = report::diff::to_markdown(&d).unwrap();
    assert!(md.contains("the engine changed (its version), and the weights were not hashed on a side"), "{md}");

    // The same version, the engine unhashed: a rebuild keeps its version, so nothing is known.
    let (e, e_steps) = pass(&tmp, "e", "b5000", &build, 51.0);
    let d = diff(&a, &a_steps, &e, &e_steps);
    let decode = d.rows.iter().find(|r| r.metric == analysis::cells::MetricKind::DecodeTps).unwrap();
    assert_eq!(decode.attribution, Some(Attribution::Unknown), "not a control cell on a guess");
    let md = report::diff::to_markdown(&d).unwrap();
    assert!(md.contains("the engine or the weights were not hashed on a side, so what changed is unknown"), "{md}");
}
