//! A server benchpass did not start is not fresh: its prefix cache holds what it served before.
//! For an engine whose preset names a flush endpoint (SGLang's `/flush_cache`, vLLM's
//! `/reset_prefix_cache`), the cache is emptied before the cell's runs. The reference engine's
//! prefix cache (`--prefix-cache`) serves both endpoints and reports cached tokens, so the
//! effect is measured, not assumed: a primed prompt comes back cold after the flush.

use harness::pass::Pass;

use crate::support::*;

/// One cell against `url` under `preset`: two sustained runs of 8 tokens (the same prompt),
/// its pass in `dir/<label>`.
fn run_against(url: &str, preset: &str, dir: &std::path::Path, label: &str) -> Pass {
    let plan = dir.join(format!("{preset}.toml"));
    std::fs::write(
        &plan,
        format!(
            "[[workloads]]\nkind = \"sustained\"\nruns = 2\nmax_tokens = 8\n\n[[models]]\nname = \"m\"\nid = \"sim-model\"\n\n\
             [[engines]]\nname = \"served\"\npreset = \"{preset}\"\nurl = \"{url}\"\n\n[[cells]]\nengine = \"served\"\nmodel = \"m\"\n"
        ),
    )
    .unwrap();
    run_plan(&plan, &dir.join(label))
}

fn cached(pass: &Pass) -> Vec<u64> {
    pass.runs.iter().map(|r| r.cached_prompt_tokens.expect("the sim reports cached tokens")).collect()
}

#[test]
fn a_server_benchpass_did_not_start_has_its_prefix_cache_emptied_first() {
    let sim = Sim::start(&["--prefix-cache", "--decode-tps", "2000"]);
    let tmp = temp_dir();

    // No flush endpoint in the preset: the prompt primed by the first pass is served from cache.
    let primed = run_against(&sim.url, "openai-compatible", tmp.path(), "primed");
    assert_eq!(primed.runs.len(), 2);
    assert_eq!(primed.info.cells[0].cache_flush, None);
    let again = run_against(&sim.url, "openai-compatible", tmp.path(), "again");
    let prompt = again.runs[0].prompt_tokens.unwrap();
    assert!(cached(&again).iter().all(|&c| c > 0 && c <= prompt), "{:?}", cached(&again));

    for (preset, request) in [("sglang", "POST /flush_cache?timeout=30"), ("vllm", "POST /reset_prefix_cache")] {
        let dry = benchpass(&["run", tmp.path().join("openai-compatible.toml").to_str().unwrap(), "--dry-run"]);
        assert!(!String::from_utf8_lossy(&dry.stdout).contains("prefix cache"), "no flush without a preset that has one");
        let pass = run_against(&sim.url, preset, tmp.path(), preset);
        let dry = benchpass(&["run", tmp.path().join(format!("{preset}.toml")).to_str().unwrap(), "--dry-run"]);
        let dry = String::from_utf8_lossy(&dry.stdout);
        assert!(dry.contains(&format!("c0: served × m\n  empty the server's prefix cache: {request}\n")), "{dry}");
        let flush = pass.info.cells[0].cache_flush.as_ref().expect("recorded on the cell");
        assert_eq!((flush.request.as_str(), flush.status, flush.flushed, flush.detail.as_deref()), (request, Some(200), true, None));
        // The first run is cold again; the second is served from what the first left.
        let cached = cached(&pass);
        assert_eq!(cached[0], 0, "{preset}: {cached:?}");
        assert!(cached[1] > 0, "{preset}: {cached:?}");
    }
    let report = tmp.path().join("report");
    assert!(benchpass(&["report", tmp.path().join("sglang").to_str().unwrap(), "--out", report.to_str().unwrap()]).status.success());
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    // (Markdown-escaped: `\_` shows as `_`.)
    assert!(md.contains(r"- served · sim-model: POST /flush\_cache?timeout=30, emptied (HTTP 200)"), "{md}");
}

#[test]
fn a_flush_the_server_refuses_is_recorded_and_the_runs_go_on() {
    // Without a prefix cache the sim has no flush endpoint: vLLM without VLLM_SERVER_DEV_MODE.
    let sim = Sim::start(&["--decode-tps", "2000"]);
    let tmp = temp_dir();
    let pass = run_against(&sim.url, "vllm", tmp.path(), "refused");
    let flush = pass.info.cells[0].cache_flush.as_ref().unwrap();
    assert_eq!((flush.status, flush.flushed), (Some(404), false));
    assert!(flush.detail.as_deref().unwrap().contains("VLLM_SERVER_DEV_MODE=1"), "{flush:?}");
    assert!(pass.runs.iter().all(|r| r.error.is_none()));
    // The report says so where the provenance is.
    let report = tmp.path().join("report");
    let out = tmp.path().join("refused");
    assert!(benchpass(&["report", out.to_str().unwrap(), "--out", report.to_str().unwrap()]).status.success());
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(
        md.contains(r"- served · sim-model: POST /reset\_prefix\_cache, not emptied (HTTP 404: vLLM serves /reset\_prefix\_cache only when started with VLLM\_SERVER\_DEV\_MODE=1): its runs may have been served from an earlier request's cache"),
        "{md}"
    );
}

#[test]
fn a_url_run_under_a_preset_flushes_reads_and_sends_as_a_plan_would() {
    let sim = Sim::start(&["--prefix-cache", "--decode-tps", "2000", "--eos-after", "5"]);
    let tmp = temp_dir();
    let url = ["run", "--url", &sim.url, "--model", "sim-model", "--runs", "2", "--max-tokens", "12", "--ignore-eos", "--progress", "quiet"];

    // Plain: ignore_eos is sent and the sim honours it; nothing is flushed.
    let plain = run_pass(&sim, &tmp.path().join("plain"), &["--runs", "2", "--max-tokens", "12", "--ignore-eos"]);
    assert!(plain.runs.iter().all(|r| r.completion_tokens == Some(12)));
    assert_eq!((plain.info.cells[0].past_eos, plain.info.cells[0].cache_flush.as_ref()), (None, None));

    // SGLang: the prefix cache the plain pass filled is emptied first, and the engine is named so.
    let dry = benchpass(&[&url[..], &["--preset", "sglang", "--dry-run"]].concat());
    let dry = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.starts_with(&format!("c0: sglang × sim-model at {}\n  empty the server's prefix cache: POST /flush_cache?timeout=30\n", sim.url)), "{dry}");
    let out = tmp.path().join("sglang");
    let output = benchpass(&[&url[..], &["--preset", "sglang", "--out", out.to_str().unwrap()]].concat());
    let pass = harness::pass::read_pass(&out).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stderr)));
    let cell = &pass.info.cells[0];
    assert_eq!(cell.engine.name, "sglang");
    assert!(cell.cache_flush.as_ref().is_some_and(|f| f.flushed), "{:?}", cell.cache_flush);
    assert_eq!(pass.runs[0].cached_prompt_tokens, Some(0), "cold after the flush");
    assert_eq!(cell.past_eos, Some(harness::plan::presets::IgnoreEos::Field));
    assert!(pass.runs.iter().all(|r| r.completion_tokens == Some(12)), "ignore_eos sent");
    assert!(pass.info.request.as_ref().unwrap().ignore_eos, "recorded as asked, as without a preset");

    // Rapid-MLX has no way past EOS: nothing is sent for it, the sim's EOS holds, and the
    // dry run and the report say why the runs stop short.
    let dry = benchpass(&[&url[..], &["--preset", "rapid-mlx", "--dry-run"]].concat());
    assert!(String::from_utf8_lossy(&dry.stdout).contains("× 12 tokens (may stop short: the rapid-mlx preset has no way past EOS)"));
    let out = tmp.path().join("rapid");
    benchpass(&[&url[..], &["--preset", "rapid-mlx", "--out", out.to_str().unwrap()]].concat());
    let pass = harness::pass::read_pass(&out).unwrap();
    assert_eq!(pass.info.cells[0].past_eos, Some(harness::plan::presets::IgnoreEos::Unsupported));
    assert!(pass.runs.iter().all(|r| r.completion_tokens == Some(5) && r.error.is_none()), "stopped at the sim's EOS");
    let report = tmp.path().join("report");
    assert!(benchpass(&["report", out.to_str().unwrap(), "--out", report.to_str().unwrap()]).status.success());
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("stopped before 12 tokens: rapid-mlx has no way past EOS, so it cannot be held to its token cap"), "{md}");
}
