//! A server that makes the pass it was just measured in unreadable, and a runs.jsonl damaged
//! in the middle. Before, a `/metrics` counter of `NaN` was written as `null` and a final
//! chunk nested 126 deep was kept one level deeper than serde reads: `run` exited 0 and every
//! later command refused the whole pass. Now the writer writes only what the readers take
//! back (docs/raw-format.md, "Bounds"), and a reader that meets a bad line names it, reads the
//! other runs and says the pass is damaged in every output.

use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use harness::pass::{read_pass, RUNS_FILE};

use crate::hostile::{models, respond, stream_head, Hostile};
use crate::support::*;

fn chunk(content: &str) -> String {
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}}}}]}}\n\n", serde_json::to_string(content).unwrap())
}

/// `mtplx_stats` with its draft counts and an object chain under it: 126 levels in all, the
/// most a final chunk (one level above it) can hold and still be read by serde.
fn mtplx_stats_126_deep() -> String {
    let mut chain = "{\"end\":true}".to_owned();
    for _ in 2..126 {
        chain = format!("{{\"x\":{chain}}}");
    }
    format!("{{\"drafted_tokens\":40,\"accepted_drafts\":31,\"x\":{chain}}}")
}

#[test]
fn a_server_sending_nan_counters_and_json_126_deep_leaves_a_pass_every_command_reads() {
    let scrapes = Arc::new(AtomicUsize::new(0));
    let server = Hostile::start(move |req, stream| match req.path.as_str() {
        "/v1/models" => models(stream, "m"),
        // Prometheus text allows NaN and ±Inf; a counter that grows by 1 each scrape is honest.
        "/metrics" => {
            let n = scrapes.fetch_add(1, Ordering::SeqCst);
            respond(stream, "200 OK", "text/plain; version=0.0.4", &format!("# TYPE foo_total counter\nfoo_total NaN\nbar_total +Inf\nbaz_total {n}\n"));
        }
        "/v1/chat/completions" => {
            stream_head(stream);
            let _ = stream.write_all(chunk("hello").as_bytes());
            let _ = stream.write_all(chunk(" world").as_bytes());
            let _ = write!(
                stream,
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"length\"}}],\
                 \"usage\":{{\"prompt_tokens\":10,\"completion_tokens\":2,\"total_tokens\":12}},\"mtplx_stats\":{}}}\n\n",
                mtplx_stats_126_deep()
            );
            let _ = stream.write_all(b"data: [DONE]\n\n");
        }
        _ => respond(stream, "404 Not Found", "text/plain", "no"),
    });
    let tmp = temp_dir();
    let out = pass_dir(&tmp);
    let dir = out.to_str().unwrap();
    // The llama-cpp preset scrapes /metrics around each run.
    let output = benchpass(&["run", "--url", &server.url, "--model", "m", "--preset", "llama-cpp", "--runs", "3", "--max-tokens", "2", "--progress", "plain", "--out", dir]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("warning: no summary"), "the run-end summary read the pass: {stderr}");

    let text = std::fs::read_to_string(out.join(RUNS_FILE)).unwrap();
    assert!(text.contains(r#""server_counters":{"bar_total":"NaN","baz_total":1.0,"foo_total":"NaN"}"#), "{text:.2000}");
    assert!(text.contains("\"<cut: nested deeper than 32>\""), "{text:.2000}");
    let pass = read_pass(&out).unwrap_or_else(|e| panic!("{e}"));
    assert!(!pass.is_damaged());
    assert_eq!(pass.runs.iter().filter(|r| !r.warmup).count(), 3);
    for run in &pass.runs {
        assert!(run.error.is_none(), "{:?}", run.error);
        let counters = run.server_counters.as_ref().unwrap();
        // NaN − NaN and +Inf − +Inf are NaN: kept, as NaN.
        assert!(counters["foo_total"].is_nan() && counters["bar_total"].is_nan(), "{counters:?}");
        assert_eq!(counters["baz_total"], 1.0);
        let timings = run.timings.as_ref().unwrap();
        assert_eq!((timings["draft_n"].as_u64(), timings["draft_n_accepted"].as_u64()), (Some(40), Some(31)));
        assert_eq!(timings["mtplx_stats"]["drafted_tokens"], 40, "the top of the object is kept");
        assert_eq!(run.usage.as_ref().unwrap()["completion_tokens"], 2);
    }

    // Every command reads every run, and none calls the pass damaged.
    let report = tmp.path().join("report");
    let output = benchpass(&["report", dir, "--out", report.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("status complete · 3 runs recorded") && !md.contains("Damaged"), "{md}");
    let output = benchpass(&["export", dir]);
    assert!(output.status.success() && output.stderr.is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 4, "the header and 3 runs");
    let output = benchpass(&["leaderboard", dir]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!String::from_utf8_lossy(&output.stdout).contains("damaged"));
}

#[test]
fn a_bad_middle_line_is_named_by_every_command_and_the_other_runs_are_read() {
    let sim = Sim::start(&["--decode-tps", "1000"]);
    let tmp = temp_dir();
    let whole = tmp.path().join("whole");
    run_pass(&sim, &whole, &["--runs", "3", "--max-tokens", "4"]);
    drop(sim);
    // The same pass with a line of garbage between its first and second runs: line 2.
    let damaged = tmp.path().join("damaged");
    std::fs::create_dir_all(&damaged).unwrap();
    std::fs::copy(whole.join("pass.json"), damaged.join("pass.json")).unwrap();
    let lines: Vec<String> = std::fs::read_to_string(whole.join(RUNS_FILE)).unwrap().lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 3);
    std::fs::write(damaged.join(RUNS_FILE), format!("{}\n{{\"cell\": 7, \"oops\n{}\n{}\n", lines[0], lines[1], lines[2])).unwrap();
    let dir = damaged.to_str().unwrap();
    let warning = format!("warning: {dir}: runs.jsonl:2 could not be read (not a run record: ");

    // export: every other run, and the warning (the CSV's columns are fixed).
    let output = benchpass(&["export", dir]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains(&warning) && stderr.contains("): the run it held is left out"), "{stderr}");
    let exported = benchpass(&["export", whole.to_str().unwrap()]);
    assert_eq!(output.stdout, exported.stdout, "the three runs, as from the whole pass");

    // report: read, warned about, and said at the top of report.md and report.html.
    let report = tmp.path().join("report");
    let output = benchpass(&["report", dir, "--out", report.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains(&warning), "{stderr}");
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    let top = md.split("## ").next().unwrap();
    assert!(top.contains("**Damaged pass: this report is missing runs.** 3 runs were read; these lines of\n`runs.jsonl` could not be"), "{top}");
    // (Markdown-escaped: "\`" shows as "`".)
    assert!(top.contains(r"- runs.jsonl:2 could not be read (not a run record: invalid type: integer \`7\`, expected a string (column 10)): the run it held is left out"), "{top}");
    // Each figure carries the reason, with the line.
    assert!(md.contains("`damaged`: the pass's runs.jsonl holds lines that could not be read"), "{md}");
    assert!(md.contains("1 line of runs.jsonl could not be read (2); 3 runs read"), "{md}");
    let html = std::fs::read_to_string(report.join("report.html")).unwrap();
    assert!(html.contains("<strong>Damaged pass: this report is missing runs.</strong> 3 runs were read"), "{html:.3000}");
    let csv = std::fs::read_to_string(report.join("leaderboard.csv")).unwrap();
    assert!(csv.lines().skip(1).all(|row| row.contains("damaged")), "{csv}");

    // leaderboard: the same columns, every row of the damaged pass flagged, and the warning.
    let output = benchpass(&["leaderboard", dir]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && stderr.contains(&warning), "{stderr}");
    let board = String::from_utf8_lossy(&output.stdout);
    assert_eq!(board.lines().next().unwrap(), std::fs::read_to_string(report.join("leaderboard.csv")).unwrap().lines().next().unwrap());
    assert!(board.lines().count() > 1 && board.lines().skip(1).all(|row| row.contains("damaged")), "{board}");
    let whole_board = String::from_utf8_lossy(&benchpass(&["leaderboard", whole.to_str().unwrap()]).stdout).into_owned();
    assert!(!whole_board.contains("damaged"), "{whole_board}");

    // diff: the damaged side named at the top, its rows flagged.
    let output = benchpass(&["diff", whole.to_str().unwrap(), dir, "--format", "md"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && stderr.contains(&warning), "{stderr}");
    let diff = String::from_utf8_lossy(&output.stdout);
    assert!(diff.contains("**Damaged pass "), "{diff}");
    assert!(diff.contains("- runs.jsonl:2 could not be read"), "{diff}");
    let output = benchpass(&["diff", whole.to_str().unwrap(), dir, "--format", "csv"]);
    let csv = String::from_utf8_lossy(&output.stdout);
    assert!(csv.lines().skip(1).all(|row| row.contains("damaged")), "{csv}");
}
