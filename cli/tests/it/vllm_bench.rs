//! `benchpass import --format vllm-bench`: a `vllm bench serve --save-result --save-detailed`
//! result as a pass, one run per request, with figures worked out by hand from the fixture.

use std::path::{Path, PathBuf};

use harness::metrics::{decode_tps, prefill_tps};
use harness::pass::read_pass;

use crate::support::*;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/vllm-bench/small-c2.json")
}

fn import(file: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["import", "--format", "vllm-bench", file.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    benchpass(&args)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

#[test]
fn each_request_is_a_run_with_vllms_timings_in_benchpass_definitions() {
    // fixtures/vllm-bench/small-c2.json: six requests at --max-concurrency 2, request rate inf,
    // backend openai; requests 2 (HTTP 503) and 4 (connection cut after three chunks) failed.
    let tmp = temp_dir();
    let output = import(&fixture(), tmp.path(), &["--machine", "vm", "--engine", "vllm"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let dir = tmp.path().join("vllm-bench-small-c2");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), dir.display().to_string());
    let pass = read_pass(&dir).unwrap();

    assert_eq!(pass.info.imported_from.as_deref(), Some("vllm-bench small-c2.json"));
    assert_eq!(pass.info.machine.name, "vm");
    assert_eq!(pass.info.cells.len(), 1);
    let cell = &pass.info.cells[0];
    assert_eq!((cell.engine.name.as_str(), cell.model.as_str()), ("vllm", "Qwen/Qwen3-0.6B"));
    assert_eq!(cell.lane, "vllm-bench openai concurrency 2 rate inf");

    // Nothing dropped: six requests, six runs, in request order, failures included.
    assert_eq!(pass.runs.len(), 6);
    assert_eq!(pass.runs.iter().map(|r| r.rep).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
    assert!(pass.runs.iter().all(|r| r.concurrency == 2 && !r.warmup && r.finish_reason.is_none()));
    assert_eq!(pass.runs.iter().filter(|r| r.is_error()).count(), 2, "vLLM's `failed`: 2");

    // Request 0: ttft 0.05 s, itls 7 × 0.02 s, 8 output tokens of 128 prompt tokens.
    // TTFT 50 ms; decode 140 ms; (8 − 1) / 0.140 = 50 tok/s; prefill 128 / 0.050 = 2560 tok/s.
    let r = &pass.runs[0];
    assert_eq!((r.prompt_tokens, r.completion_tokens), (Some(128), Some(8)));
    assert_eq!(r.token_count_source, Some(harness::pass::TokenCountSource::Tool));
    assert!(close(r.ttft_ms.unwrap(), 50.0) && close(r.decode_ms.unwrap(), 140.0), "{r:?}");
    assert!(close(decode_tps(r.completion_tokens, r.decode_ms).unwrap(), 50.0));
    assert!(close(prefill_tps(r.prompt_tokens, r.ttft_ms).unwrap(), 2560.0));
    // vLLM's TPOT for it is (latency − ttft) / (8 − 1) = 20 ms: benchpass's rate is 1 / TPOT.

    // Request 1: 80 ms; 7 × 25 ms = 175 ms; 7 / 0.175 = 40 tok/s; 128 / 0.08 = 1600 tok/s.
    let r = &pass.runs[1];
    assert!(close(r.ttft_ms.unwrap(), 80.0) && close(r.decode_ms.unwrap(), 175.0), "{r:?}");
    assert!(close(decode_tps(r.completion_tokens, r.decode_ms).unwrap(), 40.0));
    assert!(close(prefill_tps(r.prompt_tokens, r.ttft_ms).unwrap(), 1600.0));

    // Request 2 failed before any chunk: the error with vLLM's text, no figure, no count.
    let r = &pass.runs[2];
    let e = r.error.as_ref().unwrap();
    assert_eq!((e.class.as_str(), e.message.as_str()), ("imported-error", "Service Unavailable"));
    assert_eq!((r.ttft_ms, r.decode_ms, r.prompt_tokens, r.completion_tokens), (None, None, None, None));

    // Request 3: eight tokens in four chunks (itls 0.03 + 0.03 + 0.04 = 0.1 s): the rate counts
    // tokens, not chunks: (8 − 1) / 0.1 = 70 tok/s; prefill 130 / 0.1 = 1300 tok/s.
    let r = &pass.runs[3];
    assert!(close(r.ttft_ms.unwrap(), 100.0) && close(r.decode_ms.unwrap(), 100.0), "{r:?}");
    assert!(close(decode_tps(r.completion_tokens, r.decode_ms).unwrap(), 70.0));
    assert!(close(prefill_tps(r.prompt_tokens, r.ttft_ms).unwrap(), 1300.0));

    // Request 4 broke mid-stream: what arrived (60 ms; 20 + 20 ms) is kept with the traceback;
    // vLLM wrote 0 output tokens for it, which is not a count: none is recorded.
    let r = &pass.runs[4];
    let e = r.error.as_ref().unwrap();
    assert_eq!(e.class, "imported-error");
    assert!(e.message.contains("ClientPayloadError: Response payload is not completed"), "{}", e.message);
    assert!(close(r.ttft_ms.unwrap(), 60.0) && close(r.decode_ms.unwrap(), 40.0), "{r:?}");
    assert_eq!((r.prompt_tokens, r.completion_tokens, r.token_count_source), (None, None, None));

    // Request 5: one token in one chunk: decode span 0, so no decode rate; prefill 128 / 0.04.
    let r = &pass.runs[5];
    assert_eq!((r.completion_tokens, r.decode_ms), (Some(1), Some(0.0)));
    assert_eq!(decode_tps(r.completion_tokens, r.decode_ms), None);
    assert!(close(prefill_tps(r.prompt_tokens, r.ttft_ms).unwrap(), 3200.0));

    // The successes' counts add up to vLLM's own totals: 514 input and 25 output tokens.
    let ok = pass.runs.iter().filter(|r| !r.is_error());
    assert_eq!(ok.clone().map(|r| r.prompt_tokens.unwrap()).sum::<u64>(), 514);
    assert_eq!(ok.map(|r| r.completion_tokens.unwrap()).sum::<u64>(), 25);

    // The pass exports like any other: one CSV row per request.
    let csv = tmp.path().join("runs.csv");
    assert!(benchpass(&["export", dir.to_str().unwrap(), "--out", csv.to_str().unwrap()]).status.success());
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 7);
}

#[test]
fn appended_results_continue_the_cells_repetitions() {
    // `--append-result` writes each result as one more JSON object on its own line.
    let tmp = temp_dir();
    let one = std::fs::read_to_string(fixture()).unwrap();
    let file = tmp.path().join("appended.json");
    std::fs::write(&file, format!("{one}\n{one}")).unwrap();
    let out = tmp.path().join("out");
    let output = import(&file, &out, &["--pass-id", "twice"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = read_pass(&out.join("twice")).unwrap();
    assert_eq!(pass.info.cells.len(), 1, "same model and lane: one cell");
    assert_eq!(pass.info.cells[0].engine.name, "openai-compatible", "the default engine name");
    assert_eq!(pass.runs.len(), 12);
    assert_eq!(pass.runs.iter().map(|r| r.rep).collect::<Vec<_>>(), (0..12).collect::<Vec<_>>());
}

#[test]
fn a_result_saved_without_save_detailed_is_refused_with_what_to_do() {
    // What `vllm bench serve --save-result` alone writes: the aggregates, no per-request arrays.
    let tmp = temp_dir();
    let mut value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap();
    for key in ["input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors"] {
        value.as_object_mut().unwrap().remove(key);
    }
    let file = tmp.path().join("summary-only.json");
    std::fs::write(&file, value.to_string()).unwrap();
    let out = tmp.path().join("out");
    let output = import(&file, &out, &[]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("summary-only.json: no per-request arrays"), "{stderr}");
    assert!(stderr.contains("re-run vllm bench serve with --save-detailed"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!out.join("vllm-bench-summary-only").exists(), "nothing is written");
}

#[test]
fn a_file_that_is_not_json_is_named() {
    let tmp = temp_dir();
    let file = tmp.path().join("not-a-result.json");
    std::fs::write(&file, "Serving Benchmark Result\nSuccessful requests: 4\n").unwrap();
    let out = tmp.path().join("out");
    let output = import(&file, &out, &[]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not-a-result.json: not JSON"), "{stderr}");
    assert!(stderr.contains("vllm bench serve --save-result --save-detailed"), "{stderr}");
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(), "nothing is written");

    // llama-bench's array is JSON, but not a vllm bench result.
    let llama = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/llama-bench/tiny-p128-n32.json");
    let output = import(&llama, &out, &[]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("tiny-p128-n32.json: a JSON array, not a `vllm bench serve` result"), "{stderr}");
}

/// A result written by vLLM's own `vllm bench serve` code (vLLM 0.33.0) against a real
/// llama.cpp server: fixtures/vllm-bench/capture.md says how it was made.
fn captured() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/vllm-bench/llama-server-c2.json")
}

#[test]
fn a_result_captured_from_vllm_against_llama_server_imports_request_by_request() {
    // Eight requests at --max-concurrency 2 against llama-server (-c 256): requests 3 and 7 were
    // longer than the context and got HTTP 400 ("Bad Request"), request 5 failed with aiohttp's
    // ServerDisconnectedError; the other five streamed. Every expected figure below is worked
    // out from the file itself, by a route that does not go through the import.
    let text = std::fs::read_to_string(captured()).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    let f64s = |key: &str| -> Vec<f64> { file[key].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect() };
    let u64s = |key: &str| -> Vec<u64> { file[key].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect() };
    let (input_lens, output_lens, ttfts) = (u64s("input_lens"), u64s("output_lens"), f64s("ttfts"));
    let itls: Vec<Vec<f64>> = file["itls"].as_array().unwrap().iter().map(|a| a.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()).collect();
    let errors: Vec<&str> = file["errors"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let n = file["num_prompts"].as_u64().unwrap() as usize;
    assert_eq!(n, 8);

    let tmp = temp_dir();
    let output = import(&captured(), tmp.path(), &["--engine", "llama-cpp"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = read_pass(&tmp.path().join("vllm-bench-llama-server-c2")).unwrap();
    assert_eq!(pass.info.imported_from.as_deref(), Some("vllm-bench llama-server-c2.json"));
    assert_eq!(pass.info.cells.len(), 1);
    let cell = &pass.info.cells[0];
    assert_eq!((cell.engine.name.as_str(), cell.model.as_str()), ("llama-cpp", file["model_id"].as_str().unwrap()));
    assert_eq!(cell.lane, "vllm-bench openai concurrency 2 rate inf");

    // Nothing dropped: one run per request sent, in order, the failures among them, and the
    // failures are exactly vLLM's own count.
    assert_eq!(pass.runs.len(), n);
    assert_eq!(pass.runs.iter().map(|r| r.rep as usize).collect::<Vec<_>>(), (0..n).collect::<Vec<_>>());
    assert!(pass.runs.iter().all(|r| r.concurrency == 2 && !r.warmup && r.finish_reason.is_none()));
    let failed = errors.iter().filter(|e| !e.is_empty()).count();
    assert_eq!(failed, 3);
    assert_eq!(pass.runs.iter().filter(|r| r.is_error()).count() as u64, file["failed"].as_u64().unwrap());
    assert_eq!(pass.runs.iter().filter(|r| !r.is_error()).count() as u64, file["completed"].as_u64().unwrap());

    for (i, r) in pass.runs.iter().enumerate() {
        if errors[i].is_empty() {
            // TTFT = ttfts[i] × 1000; decode span = sum(itls[i]) × 1000 (vLLM's latency is
            // ttft + sum(itl) to the last bit here); decode tok/s = (output_lens[i] − 1) / sum(itls[i]);
            // prefill tok/s = input_lens[i] / ttfts[i].
            let span: f64 = itls[i].iter().sum();
            assert!(close(f64s("latencies")[i], ttfts[i] + span), "request {i}");
            assert_eq!((r.prompt_tokens, r.completion_tokens), (Some(input_lens[i]), Some(output_lens[i])), "request {i}");
            assert!(close(r.ttft_ms.unwrap(), ttfts[i] * 1000.0) && close(r.decode_ms.unwrap(), span * 1000.0), "request {i}: {r:?}");
            assert!(close(decode_tps(r.completion_tokens, r.decode_ms).unwrap(), (output_lens[i] - 1) as f64 / span), "request {i}");
            assert!(close(prefill_tps(r.prompt_tokens, r.ttft_ms).unwrap(), input_lens[i] as f64 / ttfts[i]), "request {i}");
        } else {
            // vLLM's text verbatim; no chunk arrived before these failures, so no figure, no count.
            let e = r.error.as_ref().unwrap();
            assert_eq!((e.class.as_str(), e.message.as_str()), ("imported-error", errors[i]), "request {i}");
            assert_eq!((ttfts[i], itls[i].len(), output_lens[i]), (0.0, 0, 0), "request {i}");
            assert_eq!((r.ttft_ms, r.decode_ms, r.prompt_tokens, r.completion_tokens), (None, None, None, None), "request {i}");
        }
    }
    assert_eq!(pass.runs.iter().filter_map(|r| r.error.as_ref()).filter(|e| e.message == "Bad Request").count(), 2);
    assert!(pass.runs[5].error.as_ref().unwrap().message.ends_with("aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected\n"));

    // The successes add up to vLLM's own totals and aggregates: its mean TTFT, and its mean
    // TPOT, (latency − ttft) / (output_len − 1) per request, which is 1 / benchpass's decode rate.
    let ok: Vec<_> = pass.runs.iter().filter(|r| !r.is_error()).collect();
    assert_eq!(ok.iter().map(|r| r.prompt_tokens.unwrap()).sum::<u64>(), file["total_input_tokens"].as_u64().unwrap());
    assert_eq!(ok.iter().map(|r| r.completion_tokens.unwrap()).sum::<u64>(), file["total_output_tokens"].as_u64().unwrap());
    let mean = |xs: Vec<f64>| xs.iter().sum::<f64>() / xs.len() as f64;
    assert!(close(mean(ok.iter().map(|r| r.ttft_ms.unwrap()).collect()), file["mean_ttft_ms"].as_f64().unwrap()));
    let tpot_ms = ok.iter().map(|r| 1000.0 / decode_tps(r.completion_tokens, r.decode_ms).unwrap()).collect();
    assert!(close(mean(tpot_ms), file["mean_tpot_ms"].as_f64().unwrap()));
}
