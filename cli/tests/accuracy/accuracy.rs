//! Measurement accuracy against the reference engine's known schedule (the issue's bar:
//! decode rate within 0.5 %, TTFT within 2 ms, token counts exact).
//!
//! Timing is held to what the sim actually did: with `--timings` it reports when its first
//! and last token events left. On a loaded machine its timer can wake a few milliseconds past
//! the schedule (seen: 3.1 ms), and that lateness is the engine's, not the client's. The
//! schedule, worked out by hand, is still checked: the sim must keep it within `SIM_SLACK_MS`.
//!
//! Each test judges the client by the median of its runs' errors, not by its worst run. The
//! machine makes the odd run late whatever the client does: on the 2-vCPU virtual machine
//! these tests run on, with the host taking 12 % of the CPU time (`steal` in `/proc/stat`), 15 %
//! of the runs read their first token 2–14 ms after the sim sent it, a hand-written Python
//! client on a raw socket 4 % of its requests, and once a run was 104 ms late. Holding the CPUs
//! out of idle states (`support::engine_lock`) brought benchpass down to 1.6 % of 250 runs.
//! A fault of the client's own (a clock read at the wrong event, a write in the timed path)
//! moves every run or most of them, and so the median; every run is held to what no machine
//! can excuse: its first token is not measured before the sim sent it.

use harness::corpus::SUSTAINED_PROMPT;
use harness::metrics::decode_tps;
use harness::pass::{RunRecord, TokenCountSource, Workload};
use harness::tokens::count_reference_tokens;

use crate::support::*;

const DECODE_TOLERANCE: f64 = 0.005;
const TTFT_TOLERANCE_MS: f64 = 2.0;
/// How far the sim's own events may stray from its schedule before they no longer stand for it.
const SIM_SLACK_MS: f64 = 20.0;

/// |measured − truth| / truth.
fn relative_error(measured: f64, truth: f64) -> f64 {
    (measured - truth).abs() / truth
}

/// When the sim sent the first and the last token events, in ms after the request arrived.
fn sent_ms(run: &RunRecord) -> (f64, f64) {
    let timings = run.timings.as_ref().expect("the sim runs with --timings");
    let at = |key: &str| timings[key].as_f64().unwrap_or_else(|| panic!("{key} in {timings}"));
    (at("sim_sent_first_token_ms"), at("sim_sent_last_token_ms"))
}

/// A test's runs, measured against what the sim did, judged together by [`Timing::judge`].
#[derive(Default)]
struct Timing {
    /// |client TTFT − when the sim sent the first token|, ms.
    ttft_errors_ms: Vec<f64>,
    /// |when the sim sent the first token − its schedule|, ms.
    sim_ttft_strays_ms: Vec<f64>,
    /// The client's decode rate's relative error against the rate the sim sent at.
    decode_errors: Vec<f64>,
    /// |the sim's first-to-last-token span − its schedule's|, ms.
    sim_decode_strays_ms: Vec<f64>,
    /// Each run's TTFT and decode figures, for the messages.
    ttft_said: Vec<String>,
    decode_said: Vec<String>,
}

impl Timing {
    /// TTFT within 2 ms of the instant the sim sent the first token, which is within
    /// `SIM_SLACK_MS` of its schedule.
    fn ttft(&mut self, run: &RunRecord, scheduled_ms: f64) {
        let (sent, _) = sent_ms(run);
        let ttft = run.ttft_ms.unwrap();
        // The client's clock starts before the request leaves and the sim's once it has arrived.
        assert!(ttft > sent, "ttft {ttft} ms, before the sim sent the first token at {sent} ms");
        self.ttft_errors_ms.push(ttft - sent);
        self.sim_ttft_strays_ms.push((sent - scheduled_ms).abs());
        self.ttft_said.push(format!("ttft {ttft:.3} ms; sent at {sent:.3} ms, scheduled {scheduled_ms:.3}"));
    }

    /// Decode rate within 0.5 % of the rate the sim's first and last token events were
    /// actually sent at, which is within `SIM_SLACK_MS` over the stream of the scheduled rate.
    fn decode(&mut self, run: &RunRecord, scheduled_tps: f64) {
        let (first, last) = sent_ms(run);
        let intervals = (run.completion_tokens.unwrap() - 1) as f64;
        let scheduled_ms = intervals / scheduled_tps * 1e3;
        let truth = intervals / ((last - first) / 1e3);
        let rate = decode_tps(run.completion_tokens, run.decode_ms).unwrap();
        self.decode_errors.push(relative_error(rate, truth));
        self.sim_decode_strays_ms.push((last - first - scheduled_ms).abs());
        self.decode_said.push(format!("decode {rate:.3} tok/s; sent at {truth:.3}, scheduled {scheduled_tps:.3}; the sim decoded in {:.3} ms, scheduled {scheduled_ms:.3}", last - first));
    }

    /// The runs whose decode rate is further than the bar from the rate the sim sent at.
    fn decode_runs_past_the_bar(&self) -> Vec<&str> {
        self.decode_errors.iter().zip(&self.decode_said).filter(|(e, _)| **e >= DECODE_TOLERANCE).map(|(_, run)| run.as_str()).collect()
    }

    /// Every median within its bar.
    fn judge(&self) {
        let bars = [
            ("client TTFT error (ms)", &self.ttft_errors_ms, TTFT_TOLERANCE_MS, &self.ttft_said),
            ("the sim's first token off its schedule (ms)", &self.sim_ttft_strays_ms, SIM_SLACK_MS, &self.ttft_said),
            ("client decode-rate error", &self.decode_errors, DECODE_TOLERANCE, &self.decode_said),
            ("the sim's decode span off its schedule (ms)", &self.sim_decode_strays_ms, SIM_SLACK_MS, &self.decode_said),
        ];
        assert!(!self.ttft_said.is_empty() || !self.decode_said.is_empty(), "no run was judged");
        for (what, values, bar, said) in bars {
            if !values.is_empty() {
                // The median as every figure takes it, which leaves out what is not finite: here
                // that would be a broken run, not one to leave out.
                assert!(values.iter().all(|v| v.is_finite()), "{what} not finite:\n{}", said.join("\n"));
                let median = analysis::summary::median(values).expect("finite values");
                assert!(median < bar, "median {what} {median} over {} runs, bar {bar}:\n{}", values.len(), said.join("\n"));
            }
        }
    }
}

#[test]
fn plain_decoding_matches_the_schedule() {
    // 101 tokens at 100 tok/s: the last arrives (101 − 1) / 100 = 1.000 s after the first.
    let sim = Sim::start(&["--decode-tps", "100", "--prefill-tps", "2000", "--base-latency-ms", "20", "--timings"]);
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "5", "--max-tokens", "101"]);

    assert_eq!(pass.runs.len(), 5);
    let prompt_tokens = count_reference_tokens(SUSTAINED_PROMPT);
    // TTFT = 20 ms + prompt tokens / 2000 tok/s.
    let ttft_truth = 20.0 + prompt_tokens as f64 / 2000.0 * 1e3;
    let mut timing = Timing::default();
    for run in &pass.runs {
        assert_eq!(run.workload, Workload::Sustained);
        assert_eq!(run.error, None);
        assert_eq!(run.token_count_source, Some(TokenCountSource::Usage));
        assert_eq!(run.prompt_tokens, Some(prompt_tokens));
        assert_eq!(run.completion_tokens, Some(101));
        assert_eq!(run.finish_reason.as_deref(), Some("length"));
        timing.decode(run, 100.0);
        timing.ttft(run, ttft_truth);
    }
    timing.judge();
}

#[test]
fn a_role_only_first_event_is_not_the_first_token() {
    // The role event leaves at once; the first token 20 + prefill ms later.
    let sim = Sim::start(&["--decode-tps", "200", "--base-latency-ms", "50", "--timings"]);
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "3", "--max-tokens", "20"]);
    assert_eq!(pass.runs.len(), 3);
    let ttft_truth = 50.0 + count_reference_tokens(SUSTAINED_PROMPT) as f64 / 2000.0 * 1e3;
    let mut timing = Timing::default();
    for run in &pass.runs {
        let role = &run.events[0];
        assert!(!role.carries_tokens(), "the first event is the role event");
        assert!(role.t_ns < 20_000_000, "the role event arrives before the base latency is over");
        timing.ttft(run, ttft_truth);
        // Events: role, 20 token events, finish, usage.
        assert_eq!(run.events.iter().filter(|e| e.carries_tokens()).count(), 20);
    }
    timing.judge();
}

#[test]
fn speculative_bursts_of_three_tokens_are_counted_exactly() {
    // 151 tokens at 150 tok/s in events of 1, 3, 3, …: 150 intervals span 1.000 s.
    let sim = Sim::start(&["--decode-tps", "150", "--tokens-per-event", "3", "--timings"]);
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "3", "--max-tokens", "151"]);
    assert_eq!(pass.runs.len(), 3);
    let mut timing = Timing::default();
    for run in &pass.runs {
        assert_eq!(run.completion_tokens, Some(151));
        // 1 lone first token, then 150 / 3 = 50 bursts.
        assert_eq!(run.events.iter().filter(|e| e.carries_tokens()).count(), 51);
        timing.decode(run, 150.0);
    }
    timing.judge();
}

#[test]
fn without_usage_the_tokenizer_endpoint_counts_bursts_exactly() {
    let sim = Sim::start(&["--decode-tps", "300", "--tokens-per-event", "3", "--no-usage"]);
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "1", "--max-tokens", "61"]);
    let run = &pass.runs[0];
    assert_eq!(run.usage, None);
    assert_eq!(run.token_count_source, Some(TokenCountSource::Tokenizer));
    assert_eq!(run.completion_tokens, Some(61), "not 21, the number of token events");
    assert_eq!(run.prompt_tokens, Some(count_reference_tokens(SUSTAINED_PROMPT)));
}

#[test]
fn without_usage_or_tokenizer_counts_are_marked_as_estimates() {
    let sim = Sim::start(&["--profile", "no-usage", "--decode-tps", "1000"]);
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "1", "--max-tokens", "10"]);
    let run = &pass.runs[0];
    assert_eq!(run.token_count_source, Some(TokenCountSource::Estimate));
    let text: String = run.events.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(run.completion_tokens, Some((text.chars().count() as u64).div_ceil(4)));
}

#[test]
fn a_short_stop_is_recorded_with_its_finish_reason() {
    let sim = Sim::start(&["--decode-tps", "1000", "--eos-after", "20"]);
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "1", "--max-tokens", "64"]);
    let run = &pass.runs[0];
    assert_eq!((run.completion_tokens, run.finish_reason.as_deref()), (Some(20), Some("stop")));
    assert!(harness::runner::is_short_stop(run));

    // Asked to ignore EOS, the same engine runs to the cap.
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "1", "--max-tokens", "64", "--ignore-eos"]);
    let run = &pass.runs[0];
    assert_eq!((run.completion_tokens, run.finish_reason.as_deref()), (Some(64), Some("length")));
    assert!(!harness::runner::is_short_stop(run));
}

#[test]
fn prompt_targets_are_met_exactly_with_a_tokenizer_and_ttft_follows_prefill() {
    let sim = Sim::start(&["--decode-tps", "500", "--prefill-tps", "4000", "--base-latency-ms", "10", "--timings"]);
    let tmp = temp_dir();
    let pass = run_pass(
        &sim,
        &pass_dir(&tmp),
        &["--runs", "3", "--warmup", "1", "--max-tokens", "16", "--prompt-tokens", "128", "--prompt-tokens", "2048"],
    );
    assert_eq!(pass.runs.len(), 8);
    let mut prompts = std::collections::HashSet::new();
    let mut timing = Timing::default();
    for run in &pass.runs {
        assert_eq!(run.workload, Workload::PromptMatrix);
        assert_eq!(run.prompt_tokens, Some(run.target_prompt_tokens), "the sim's template adds nothing");
        // 10 ms + 128 / 4000 s = 42 ms; 10 ms + 2048 / 4000 s = 522 ms.
        timing.ttft(run, 10.0 + run.target_prompt_tokens as f64 / 4.0);
        assert!(prompts.insert(run.prompt_sha256.clone()), "every run gets a prompt of its own");
    }
    timing.judge();
    let order: Vec<_> = pass.runs.iter().map(|r| (r.target_prompt_tokens, r.warmup, r.rep)).collect();
    assert_eq!(
        order,
        [(128, true, 0), (128, false, 0), (128, false, 1), (128, false, 2), (2048, true, 0), (2048, false, 0), (2048, false, 1), (2048, false, 2)]
    );
}

#[test]
fn jittered_rates_are_measured_per_run() {
    // ±10 % jitter, seeded; the sim's `timings` object carries each request's true rates.
    let sim = Sim::start(&["--decode-tps", "120", "--jitter", "0.1", "--seed", "7", "--timings"]);
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "5", "--max-tokens", "97"]);
    assert_eq!(pass.runs.len(), 5);
    let mut truths = Vec::new();
    let mut timing = Timing::default();
    for run in &pass.runs {
        let timings = run.timings.as_ref().expect("timings recorded verbatim");
        let truth = timings["predicted_per_second"].as_f64().unwrap();
        timing.decode(run, truth);
        timing.ttft(run, timings["prompt_ms"].as_f64().unwrap());
        assert!((108.0..=132.0).contains(&truth));
        truths.push(truth);
    }
    timing.judge();
    truths.dedup();
    assert_eq!(truths.len(), 5, "each request draws its own rate");
}

#[test]
fn concurrent_streams_are_all_recorded_and_measured() {
    let sim = Sim::start(&["--decode-tps", "100", "--timings"]);
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "8", "--concurrency", "4", "--max-tokens", "51"]);
    assert_eq!(pass.runs.len(), 8);
    let mut reps: Vec<_> = pass.runs.iter().map(|r| r.rep).collect();
    reps.sort();
    assert_eq!(reps, (0..8).collect::<Vec<_>>());
    let mut timing = Timing::default();
    for run in &pass.runs {
        assert_eq!(run.concurrency, 4);
        timing.decode(run, 100.0);
    }
    timing.judge();
}

#[test]
fn a_busy_disk_does_not_skew_the_timing_of_concurrent_streams() {
    // Another writer makes every fsync on the disk slow. Each run is written as it ends, while
    // the other streams of the step still arrive: their timestamps must not wait on the disk
    // (they did: decode rates 7-26 % low while another process wrote to the disk).
    use std::io::Write as _;
    use std::sync::atomic::{AtomicBool, Ordering};
    let sim = Sim::start(&["--decode-tps", "100", "--timings"]);
    let tmp = temp_dir();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let load = {
        let (stop, path) = (stop.clone(), tmp.path().join("load.bin"));
        std::thread::spawn(move || {
            let chunk = vec![0x5Au8; 4 << 20];
            while !stop.load(Ordering::Relaxed) {
                let mut file = std::fs::File::create(&path).unwrap();
                for _ in 0..4 {
                    file.write_all(&chunk).unwrap();
                }
                file.sync_all().unwrap();
            }
            let _ = std::fs::remove_file(&path);
        })
    };
    // 101 tokens: a 1 s decode span, so that one late wake-up of the client on two busy cores
    // (about 3.5 ms, seen 1 run in 4 here before and after the busy-disk fix) is 0.35 % of it,
    // inside the 0.5 % bar, while the disk-bound skew this test exists for (7-26 %) is not.
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "12", "--concurrency", "4", "--max-tokens", "101"]);
    stop.store(true, Ordering::Relaxed);
    load.join().unwrap();
    assert_eq!(pass.runs.len(), 12);
    let mut timing = Timing::default();
    for run in &pass.runs {
        timing.decode(run, 100.0);
    }
    timing.judge();
    // Beside the median, the runs one by one: the skew was in any run whose stream arrived
    // while another's record was written. A run past the bar is the odd late wake-up that the
    // machine makes (1.6 % of runs with the CPUs held awake); three of twelve are not.
    let past = timing.decode_runs_past_the_bar();
    assert!(past.len() <= 2, "{} of 12 runs' decode rates past the bar:\n{}", past.len(), past.join("\n"));
}

#[test]
fn the_completions_api_and_reasoning_text_are_measured_too() {
    let sim = Sim::start(&["--decode-tps", "1000", "--reasoning-tokens", "5"]);
    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "1", "--max-tokens", "12"]);
    let run = &pass.runs[0];
    let first_token = run.events.iter().find(|e| e.carries_tokens()).unwrap();
    assert!(first_token.text.is_empty() && !first_token.reasoning.is_empty(), "reasoning counts as the first token");
    assert_eq!(run.completion_tokens, Some(12));

    let tmp = temp_dir();
    let pass = run_pass(&sim, &pass_dir(&tmp), &["--runs", "1", "--max-tokens", "12", "--api", "completions"]);
    let run = &pass.runs[0];
    assert_eq!(run.completion_tokens, Some(12));
    assert_eq!(run.events.iter().filter(|e| e.carries_tokens()).count(), 12);
}

/// A plain HTTP/1.1 request, so that the sim's non-streaming answer is read by nothing of benchpass's.
fn post_json(url: &str, path: &str, body: &str) -> serde_json::Value {
    use std::io::{Read as _, Write as _};
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    serde_json::from_str(body).unwrap()
}

#[test]
fn non_streaming_answers_carry_the_whole_text_and_usage() {
    let sim = Sim::start(&["--decode-tps", "1000", "--timings"]);
    let chat = post_json(&sim.url, "/v1/chat/completions", r#"{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"Hello there"}]}"#);
    assert_eq!(chat["object"], "chat.completion");
    // "Hello there" is 2 reference tokens ("Hello", " there").
    assert_eq!(chat["usage"]["prompt_tokens"], 2);
    assert_eq!(chat["usage"]["completion_tokens"], 5);
    assert_eq!(chat["choices"][0]["finish_reason"], "length");
    let text = chat["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(count_reference_tokens(text), 5);
    assert_eq!(chat["timings"]["predicted_n"], 5);

    let completion = post_json(&sim.url, "/v1/completions", r#"{"model":"m","max_tokens":3,"prompt":"Once upon a time"}"#);
    assert_eq!(completion["object"], "text_completion");
    assert_eq!(count_reference_tokens(completion["choices"][0]["text"].as_str().unwrap()), 3);
    // Without include_usage a non-streaming answer still carries usage, as OpenAI's does.
    assert_eq!(completion["usage"]["prompt_tokens"], 4);
}
