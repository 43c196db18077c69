//! `benchpass export` and `benchpass import`: the exact columns, the round trip, and errors
//! that say where the bad value is.

use crate::support::*;

const HEADER: &str = "pass_id,machine,engine,engine_version,engine_sha256,model,build_sha256,lane,workload,\
target_prompt_tokens,prompt_tokens,max_tokens,completion_tokens,ttft_ms,decode_ms,finish_reason,warmup,rep,\
error,token_count_source";

#[test]
fn export_import_export_gives_the_same_bytes() {
    let sim = Sim::start(&["--decode-tps", "1000", "--fail-every", "3"]);
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    run_pass(&sim, &out, &["--runs", "3", "--warmup", "1", "--max-tokens", "8", "--prompt-tokens", "64", "--pass-id", "p1"]);

    let first = tmp.path().join("first.csv");
    assert!(benchpass(&["export", out.to_str().unwrap(), "--out", first.to_str().unwrap()]).status.success());
    let text = std::fs::read_to_string(&first).unwrap();
    // The twenty columns, then `concurrency`, `attempt` and how the step was requested
    // (`api`, `temperature`, `request_rate`, `past_eos`) and agent sessions' columns, which
    // came later (at the end).
    assert_eq!(text.lines().next().unwrap(), format!("{HEADER},concurrency,attempt,api,temperature,request_rate,past_eos,session,turn,prompt_id,cached_prompt_tokens,prompt_set"));
    assert_eq!(text.lines().count(), 5, "header, one warmup, three runs");
    assert!(text.contains(",http-500,"), "failed runs are exported, not dropped: {text}");

    let imported = tmp.path().join("imported");
    let output = benchpass(&["import", first.to_str().unwrap(), "--out", imported.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let second = tmp.path().join("second.csv");
    let pass_dir = imported.join("p1");
    assert!(benchpass(&["export", pass_dir.to_str().unwrap(), "--out", second.to_str().unwrap()]).status.success());
    assert_eq!(std::fs::read(&first).unwrap(), std::fs::read(&second).unwrap());
}

#[test]
fn import_splits_passes_and_cells_and_defaults_the_count_source_to_usage() {
    let tmp = temp_dir();
    let csv = tmp.path().join("older.csv");
    // An older file without the token_count_source column, two passes, two engines in one.
    let header = HEADER.trim_end_matches(",token_count_source");
    // Build hashes are 64 hex characters (import refuses anything else).
    let (b1, b2) = ("1".repeat(64), "2".repeat(64));
    std::fs::write(
        &csv,
        format!(
            "{header}\n\
             a,mac,mlx-lm,0.20,,qwen,{b1},text,sustained,0,30,256,256,120.5,4000.25,length,false,0,\n\
             a,mac,llama.cpp,b4000,,qwen,{b2},text,sustained,0,31,256,200,130,3000,stop,false,0,\n\
             b,mac,mlx-lm,0.21,,qwen,{b1},text,sustained,0,30,256,256,118,3900,length,false,0,\n"
        ),
    )
    .unwrap();
    let out = tmp.path().join("passes");
    let output = benchpass(&["import", csv.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let a = harness::pass::read_pass(&out.join("a")).unwrap();
    assert_eq!(a.info.cells.len(), 2);
    assert_eq!(a.info.machine.name, "mac");
    assert_eq!(a.runs[1].completion_tokens, Some(200));
    assert_eq!(a.runs[1].ttft_ms, Some(130.0));
    assert!(a.runs.iter().all(|r| r.token_count_source == Some(harness::pass::TokenCountSource::Usage)));
    assert_eq!(harness::pass::read_pass(&out.join("b")).unwrap().runs.len(), 1);
}

#[test]
fn a_bad_value_names_the_file_line_column_and_what_was_expected() {
    let tmp = temp_dir();
    let csv = tmp.path().join("bad.csv");
    std::fs::write(
        &csv,
        format!(
            "{HEADER}\n\
             a,mac,e,1,,m,,text,sustained,0,30,256,256,120.5,4000,length,false,0,,usage\n\
             a,mac,e,1,,m,,text,sustained,0,30,256,256,fast,4000,length,false,1,,usage\n"
        ),
    )
    .unwrap();
    let out = tmp.path().join("passes");
    let output = benchpass(&["import", csv.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.csv:3: column `ttft_ms`: expected milliseconds"), "{stderr}");
    assert!(stderr.contains("found `fast`"), "{stderr}");
    assert!(!out.join("a").exists(), "nothing is written from a file with errors");
}

#[test]
fn a_missing_column_is_named() {
    let tmp = temp_dir();
    let csv = tmp.path().join("short.csv");
    std::fs::write(&csv, "pass_id,machine\na,mac\n").unwrap();
    let output = benchpass(&["import", csv.to_str().unwrap(), "--out", tmp.path().to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("short.csv:1: missing column `engine`"));
}

#[test]
fn a_pass_id_that_would_escape_the_folder_is_refused_and_nothing_is_written() {
    let tmp = temp_dir();
    let csv = tmp.path().join("evil.csv");
    std::fs::write(
        &csv,
        format!(
            "{HEADER}\n\
             good,mac,e,1,,m,,text,sustained,0,30,256,256,120.5,4000,length,false,0,,usage\n\
             ../escape,mac,e,1,,m,,text,sustained,0,30,256,256,120.5,4000,length,false,0,,usage\n"
        ),
    )
    .unwrap();
    let out = tmp.path().join("passes");
    let output = benchpass(&["import", csv.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("pass id `../escape`"));
    assert!(!out.join("good").exists(), "no partial import");
    assert!(!tmp.path().join("escape").exists());
}

#[test]
fn llama_bench_json_imports_each_repetition_as_a_run_with_llama_benchs_own_rates() {
    // fixtures/llama-bench/tiny-p128-n32.json: real `llama-bench -p 128 -n 32 -r 3 -o json`
    // output on the tiny model. Its samples_ts are n / sample: the imported runs must give the
    // same rates through benchpass's own definitions.
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/llama-bench/tiny-p128-n32.json");
    let tmp = temp_dir();
    let output = benchpass(&["import", "--format", "llama-bench", fixture.to_str().unwrap(), "--out", tmp.path().to_str().unwrap(), "--machine", "vm"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = harness::pass::read_pass(&tmp.path().join("llama-bench-tiny-p128-n32")).unwrap();
    assert_eq!(pass.runs.len(), 6);
    let cell = &pass.info.cells[0];
    assert_eq!((cell.engine.version.as_str(), cell.lane.as_str()), ("b1 (0c1e570)", "llama-bench t1"));
    assert_eq!(pass.info.imported_from.as_deref(), Some("llama-bench tiny-p128-n32.json"));

    // pp128: 128 tokens / 3,284,819 ns = 38,967.1 tok/s (llama-bench's first samples_ts).
    let pp = &pass.runs[0];
    let prefill = harness::metrics::prefill_tps(pp.prompt_tokens, pp.ttft_ms).unwrap();
    assert!((prefill - 38967.1).abs() < 0.1, "{prefill}");
    assert_eq!(pp.decode_ms, None);
    // tg32: 32 tokens / 16,025,302 ns = 1,996.84 tok/s.
    let tg = &pass.runs[3];
    let decode = harness::metrics::decode_tps(tg.completion_tokens, tg.decode_ms).unwrap();
    assert!((decode - 1996.84).abs() < 0.01, "{decode}");
    assert!(!harness::runner::is_short_stop(tg));
}
