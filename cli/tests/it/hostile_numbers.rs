//! Values that pass a type check but break the pipeline: a decode span of 1e-320 ms, a usage
//! count of 10^18, timeouts and gaps beyond any wait, a run count that allocates 240 GB. Each
//! is refused where it enters (the command line, a plan, a runs CSV, runs.jsonl) or, from a
//! server, not trusted.

use std::io::Write as _;
use std::path::Path;

use harness::pass::read_pass;

use crate::hostile::{models, respond, stream_head, Hostile};
use crate::support::*;


#[test]
fn impossible_times_and_counts_in_a_runs_csv_are_refused_with_file_and_line() {
    let tmp = temp_dir();
    let times = "milliseconds as a number from 0 to 2592000000 (30 days), e.g. 123.456, or empty";
    let counts = "a whole number of tokens up to 4294967296, or empty";
    for (row, column, expected, found) in [
        // Finite and not negative, but (256 − 1) / 1e-323 s is an infinite rate.
        ("256,120.5,1e-320", "decode_ms", "0, or a decode span of at least 0.001 ms (1 µs)", "1e-320"),
        ("256,120.5,0.0005", "decode_ms", "0, or a decode span of at least 0.001 ms (1 µs)", "0.0005"),
        ("256,-50,4000", "ttft_ms", times, "-50"),
        ("256,120.5,1e20", "decode_ms", times, "1e20"),
        ("256,inf,4000", "ttft_ms", times, "inf"),
        ("1000000000000000000,120.5,4000", "completion_tokens", counts, "1000000000000000000"),
    ] {
        let csv = tmp.path().join("hostile.csv");
        std::fs::write(
            &csv,
            format!(
                "{RUNS_CSV_HEADER}\n\
                 a,mac,e,1,,m,,text,sustained,0,30,256,256,120.5,4000,length,false,0,,usage\n\
                 a,mac,e,1,,m,,text,sustained,0,30,256,{row},length,false,1,,usage\n"
            ),
        )
        .unwrap();
        let out = tmp.path().join("passes");
        assert_import_refused(&csv, &out, &format!("hostile.csv:3: column `{column}`: expected {expected}, found `{found}`"));
    }
    // 1 µs, 0 (every token in one event) and 30 days are what a measurement can hold.
    let csv = tmp.path().join("edge.csv");
    std::fs::write(
        &csv,
        format!(
            "{RUNS_CSV_HEADER}\n\
             a,mac,e,1,,m,,text,sustained,0,30,256,256,120.5,0.001,length,false,0,,usage\n\
             a,mac,e,1,,m,,text,sustained,0,30,256,256,0,0,length,false,1,,usage\n\
             a,mac,e,1,,m,,text,sustained,0,30,256,4294967296,2592000000,2592000000,length,false,2,,usage\n"
        ),
    )
    .unwrap();
    let output = import_csv(&csv, &tmp.path().join("passes"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn an_impossible_run_in_runs_jsonl_is_left_out_and_named_with_its_line() {
    let tmp = temp_dir();
    let csv = tmp.path().join("good.csv");
    std::fs::write(
        &csv,
        format!(
            "{RUNS_CSV_HEADER}\n\
             a,mac,e,1,,m,,text,sustained,0,30,256,256,120.5,4000,length,false,0,,usage\n\
             a,mac,e,1,,m,,text,sustained,0,30,256,256,121.5,4000,length,false,1,,usage\n"
        ),
    )
    .unwrap();
    let out = tmp.path().join("passes");
    assert!(import_csv(&csv, &out).status.success());
    let dir = out.join("a");
    let runs = dir.join("runs.jsonl");
    let good = std::fs::read_to_string(&runs).unwrap();
    for (from, to, message) in [
        ("\"ttft_ms\":121.5", "\"ttft_ms\":-50.0", "runs.jsonl:2 could not be read (`ttft_ms` is -50; expected milliseconds, 0 or more)"),
        ("\"ttft_ms\":121.5,\"decode_ms\":4000.0", "\"ttft_ms\":121.5,\"decode_ms\":-4000.0", "runs.jsonl:2 could not be read (`decode_ms` is -4000; expected milliseconds, 0 or more)"),
    ] {
        assert!(good.contains(from), "{good}");
        std::fs::write(&runs, good.replacen(from, to, 1)).unwrap();
        let text = std::fs::read_to_string(&runs).unwrap();
        assert_eq!(text.lines().position(|l| l.contains(to)), Some(1), "the second line holds it: {text}");
        // The run is left out, never read as a figure, and named.
        let pass = read_pass(&dir).unwrap();
        assert_eq!(pass.runs.len(), 1);
        assert!(pass.damage_notes()[0].starts_with(message), "{:?}", pass.damage_notes());
        // And the command line says so: the other run is exported, with the warning.
        let output = benchpass(&["export", dir.to_str().unwrap(), "--out", "-"]);
        assert!(output.status.success());
        assert!(String::from_utf8_lossy(&output.stderr).contains(message));
        assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 2, "the header and the other run");
    }
    // A time above 30 days or a count above 2^32 is read (another tool's importer may have
    // written it) and gives no rate: no figure is built on it.
    let from = "\"completion_tokens\":256,\"token_count_source\":\"usage\",\"ttft_ms\":121.5";
    let to = "\"completion_tokens\":1000000000000000000,\"token_count_source\":\"usage\",\"ttft_ms\":121.5";
    assert!(good.contains(from), "{good}");
    std::fs::write(&runs, good.replacen(from, to, 1)).unwrap();
    let pass = read_pass(&dir).unwrap();
    assert_eq!(pass.runs[1].completion_tokens, Some(1_000_000_000_000_000_000));
    assert_eq!(harness::metrics::decode_tps(pass.runs[1].completion_tokens, pass.runs[1].decode_ms), None, "not 2.5e17 tok/s");
    std::fs::write(&runs, &good).unwrap();
    assert_eq!(read_pass(&dir).unwrap().runs.len(), 2);
}

#[test]
fn flags_beyond_any_wait_or_allocation_are_refused_before_anything_starts() {
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    for (flag, value, says) in [
        ("--first-token-timeout", "1e20", "expected seconds above 0 and at most 86400 (a day), found `1e20`"),
        ("--idle-timeout", "inf", "expected seconds above 0 and at most 86400 (a day), found `inf`"),
        ("--idle-timeout", "0", "expected seconds above 0"),
        ("--runs", "4294967295", "4294967295 is not in 1..=10000"),
        ("--runs", "0", "0 is not in 1..=10000"),
        ("--warmup", "4294967295", "4294967295 is not in 0..=10000"),
        ("--max-tokens", "18446744073709551615", "is not in 1..=1048576"),
        ("--concurrency", "4294967295", "4294967295 is not in 1..=4096"),
        ("--temperature", "nan", "expected a temperature from 0 to 100, found `nan`"),
    ] {
        let output = benchpass(&["run", "--url", "http://127.0.0.1:9", "--model", "m", flag, value, "--out", out.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(flag) && stderr.contains(says), "{flag} {value}: {stderr}");
        assert!(!out.exists(), "{flag} {value}: nothing is written");
    }
    let plan = tmp.path().join("plan.toml");
    std::fs::write(&plan, "").unwrap();
    let output = benchpass(&["run", plan.to_str().unwrap(), "--gap-scale", "1e300"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("expected a factor from 0 to 100, found `1e300`"));
}

/// A plan with `engine` and `tail` (text after everything else) spliced in.
fn plan(dir: &Path, engine: &str, tail: &str) -> std::path::PathBuf {
    let text = format!(
        "[[workloads]]\nkind = \"sustained\"\nruns = 1\nmax_tokens = 8\n\n[[models]]\nname = \"m\"\n\n\
         [[engines]]\nname = \"e\"\nurl = \"http://127.0.0.1:9\"\n{engine}\n\n[[cells]]\nengine = \"e\"\nmodel = \"m\"\n{tail}"
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn timeouts_and_gaps_beyond_a_day_or_a_week_are_refused_by_plan_check() {
    let tmp = temp_dir();
    for (engine, tail, message) in [
        (
            "health_timeout_s = 1e300",
            "",
            "plan.toml:10: engine `e`: health_timeout_s must be above 0 and at most 86400 (a day), not 1e300",
        ),
        ("health_timeout_s = nan", "", "plan.toml:10: engine `e`: health_timeout_s must be above 0"),
        ("", "\n[request]\nfirst_token_timeout_s = 1e20\n", "[request]: concurrency must be 1 to 4096, timeouts above 0 and at most 86400 seconds (a day)"),
        ("", "\n[request]\nidle_timeout_s = inf\n", "timeouts above 0 and at most 86400 seconds"),
        ("", "\n[gaps]\nbetween_cells_s = inf\n", "[gaps]: gaps are 0 to 604800 seconds (a week)"),
        ("", "\n[gaps]\nbetween_workloads_s = 1e300\n", "[gaps]: gaps are 0 to 604800 seconds (a week)"),
    ] {
        let path = plan(tmp.path(), engine, tail);
        let output = benchpass(&["plan", "check", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{engine}{tail} was accepted");
        assert!(stderr.contains(message), "{engine}{tail}: {stderr}");
        assert!(stderr.contains("hint: "), "{stderr}");
        // `run` checks the plan first: it neither panics nor leaves a pass `running`.
        let out = tmp.path().join("pass");
        let run = benchpass(&["run", path.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "plain"]);
        assert_eq!(run.status.code(), Some(1), "{}", String::from_utf8_lossy(&run.stderr));
        assert!(!String::from_utf8_lossy(&run.stderr).contains("panicked"));
        assert!(!out.exists());
    }
    let path = plan(tmp.path(), "health_timeout_s = 86400", "\n[gaps]\nbetween_cells_s = 604800\n");
    let output = benchpass(&["plan", "check", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

fn chunk(content: &str) -> String {
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}}}}]}}\n\n", serde_json::to_string(content).unwrap())
}

#[test]
fn a_usage_count_of_a_billion_billion_tokens_is_kept_but_not_trusted() {
    // Three tokens, then usage that says 10^18 of them: at face value 1.9e18 tok/s.
    let server = Hostile::start(|req, stream| match req.path.as_str() {
        "/v1/models" => models(stream, "m"),
        "/v1/chat/completions" => {
            stream_head(stream);
            for word in ["a", "b", "c"] {
                let _ = stream.write_all(chunk(word).as_bytes());
                let _ = stream.flush();
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let usage = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":1000000000000000000}}\n\ndata: [DONE]\n\n";
            let _ = stream.write_all(usage.as_bytes());
        }
        _ => respond(stream, "404 Not Found", "text/plain", "no"),
    });
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let output = benchpass(&["run", "--url", &server.url, "--model", "m", "--runs", "1", "--max-tokens", "8", "--progress", "plain", "--out", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = read_pass(&out).unwrap();
    let run = &pass.runs[0];
    // Kept verbatim, counted from the next source (no tokenizer here: the estimate).
    assert_eq!(run.usage.as_ref().unwrap()["completion_tokens"].as_u64(), Some(1_000_000_000_000_000_000));
    assert_eq!(run.token_count_source, Some(harness::pass::TokenCountSource::Estimate));
    assert_eq!(run.completion_tokens, Some(1), "⌈3 characters / 4⌉");
    assert_eq!(harness::metrics::decode_tps(Some(1_000_000_000_000_000_000), run.decode_ms), None, "no 1.9e18 tok/s");
}
