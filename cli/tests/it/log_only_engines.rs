//! An engine under the `omlx` preset, played by the reference engine writing oMLX's own log
//! line (`--log-draft-acceptance`): draft acceptance read from the output benchpass captured,
//! one run at a time, and an engine that has no way past EOS planned, recorded and reported as
//! one that cannot be held to its token cap.

use crate::support::*;

#[test]
fn omlx_draft_acceptance_comes_from_its_log_and_its_short_stops_are_explained() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let port = free_port();
    // The preset's own cache folder is in the real home; the test clears one of its own.
    let cache = tmp.path().join("omlx-cache");
    let plan = tmp.path().join("omlx.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
[[engines]]
name = "omlx"
preset = "omlx"
start = ["{BENCHPASS}", "sim", "--port", "{{port}}", "--model", "m", "--decode-tps", "2000", "--prefill-tps", "100000", "--eos-after", "20", "--log-draft-acceptance", "0.732"]
port = {port}
kv_cache_dir = "{cache}"

[[models]]
name = "m"

[[cells]]
engine = "omlx"
model = "m"

[[workloads]]
kind = "pp-tg"
runs = 3
ignore_eos = true
targets = [{{ tokens = 128, max_tokens = 48 }}]
"#,
            cache = cache.display(),
        ),
    )
    .unwrap();

    let dry = benchpass(&["run", plan.to_str().unwrap(), "--dry-run"]);
    let notes = String::from_utf8_lossy(&dry.stderr);
    assert!(notes.contains("note: engine `omlx` (preset `omlx`) has no way past EOS"), "{notes}");
    // oMLX loads a model on its first request, and the plan has no warmup.
    assert!(notes.contains("note: engine `omlx` (preset `omlx`) answers its health check before its model is loaded"), "{notes}");
    let dry = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.contains("pp-tg 128: 0 warmup + 3 runs × 48 tokens (may stop short: the omlx preset has no way past EOS)"), "{dry}");

    let out = tmp.path().join("pass");
    let pass = run_plan(&plan, &out);
    assert_eq!(pass.info.cells[0].past_eos, Some(harness::plan::presets::IgnoreEos::Unsupported));
    assert_eq!(pass.runs.len(), 3);
    for run in &pass.runs {
        assert_eq!(run.error, None);
        // Nothing it would drop was sent, so the sim's EOS after 20 tokens held.
        assert_eq!((run.completion_tokens, run.finish_reason.as_deref()), (Some(20), Some("stop")));
        // The sim logged 73.2%, as oMLX's `{:.1%}` writes it.
        let logged = run.logged_draft_acceptance.expect("read from the captured log");
        assert!((logged - 0.732).abs() < 1e-12, "{logged}");
    }
    let log = std::fs::read_to_string(out.join("logs/c0-omlx.log")).unwrap();
    // The three runs' lines, and the line of the probe of the preset's assumed values before
    // them (docs/plans.md, Assumed values, probed): each run reads only the bytes the log grew
    // by during it, so the probe's line is no run's.
    assert_eq!(log.matches("DFlash generation complete: 20 tokens").count(), 4, "{log}");

    let report = tmp.path().join("report");
    assert!(benchpass(&["report", out.to_str().unwrap(), "--out", report.to_str().unwrap()]).status.success());
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("all 3 successful runs stopped before 48 tokens: omlx has no way past EOS, so it cannot be held to its token cap"), "{md}");
    assert!(md.contains("73.2%"), "the acceptance column: {md}");
}
