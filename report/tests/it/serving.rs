//! The "Serving under concurrency" section: where a step at 2 streams puts its figures (worked
//! out by hand in analysis's serving test, the same four runs), that a tail of few values reads
//! as the maximum it is, hostile names escaped, and no section for a pass at one stream.

use harness::pass::*;

/// 2026-12-01 00:00:00 UTC.
const S: u64 = 1_796_083_200_000;

fn event(t_ms: f64, text: &str, n_logprobs: usize) -> EventRecord {
    let lp = TokenLogprob { token: "x".to_owned(), bytes: None, logprob: -0.1, top: vec![] };
    EventRecord { t_ns: (t_ms * 1e6) as u64, text: text.to_owned(), logprobs: vec![lp; n_logprobs], ..EventRecord::default() }
}

fn run(rep: u32, concurrency: u32, start_ms: u64, tokens: u64, events: Vec<EventRecord>) -> RunRecord {
    let times = harness::metrics::event_times(&events);
    RunRecord {
        concurrency,
        started_unix_ms: S + start_ms,
        prompt_tokens: Some(100),
        completion_tokens: Some(tokens),
        token_count_source: Some(TokenCountSource::Usage),
        ttft_ms: times.ttft_ms,
        decode_ms: times.decode_ms,
        finish_reason: Some("length".to_owned()),
        events,
        ..RunRecord::unmeasured("c", Workload::Sustained, 0, rep, false, tokens)
    }
}

fn pass(engine: &str, concurrency: u32) -> Pass {
    let runs = vec![
        run(0, concurrency, 0, 7, vec![event(100.0, "a", 0), event(130.0, "bc", 0), event(160.0, "de", 0), event(190.0, "fg", 0), event(195.0, "", 0)]),
        run(1, concurrency, 0, 5, vec![event(200.0, "a", 0), event(260.0, "bc", 0), event(320.0, "d", 0), event(330.0, "", 0)]),
        run(2, concurrency, 200, 5, vec![event(50.0, "a", 1), event(110.0, "bcd", 3), event(120.0, "e", 1), event(125.0, "", 0)]),
        run(3, concurrency, 331, 2, vec![event(80.0, "a", 0), event(100.0, "b", 0)]),
    ];
    let engine = EngineInfo { name: engine.to_owned(), version: "1".to_owned(), version_source: "user".to_owned(), ..EngineInfo::default() };
    let info = PassInfo::synthetic("hand", "m1", vec![CellInfo::new("c", engine, "m")]);
    Pass::in_memory(info, runs)
}

#[test]
fn two_streams_get_a_serving_section_with_the_hand_worked_figures() {
    let r = super::render(&pass("sim", 2));
    crate::plain_markdown::assert_plain("a serving section", &r.markdown);
    let md = r.markdown.split("## Serving under concurrency").nth(1).expect("a serving section");
    // 19 tokens and 4 runs over 431 ms: 44.08 tok/s, 9.281 req/s.
    assert!(md.contains("| sim | m | text | sustained | 2 | 4 | 44.1 | 9.28 | 0.43 s |"), "{md}");
    // 4 runs: p90 and p99 are the slowest run, and say so.
    assert!(md.contains("| sim | sustained | 2 | TTFT | 80.0 | 200.0 (max) | 200.0 (max) | 4 runs |"), "{md}");
    assert!(md.contains("| sim | sustained | 2 | ITL | 15.0 | 30.0 (max) | 30.0 (max) | 8 events |"), "{md}");
    assert!(md.contains("| sim | sustained | 2 | TPOT | 17.5 | 30.0 (max) | 30.0 (max) | 4 runs |"), "{md}");
    assert!(md.contains("| sim | sustained | 2 | E2E | 125.0 | 330.0 (max) | 330.0 (max) | 4 runs |"), "{md}");
    assert!(md.contains("A tail marked (max) is only the slowest value"));
    assert!(r.html.contains("<h2>Serving under concurrency</h2>"));
    assert!(r.html.contains("<td>ITL</td><td>15.0</td><td>30.0 (max)</td><td>30.0 (max)</td><td>8 events</td>"), "{}", r.html);
    assert!(r.leaderboard_csv.contains(",sustained,0,output_tps@c2,tok/s,44.084,,,4,"), "{}", r.leaderboard_csv);
}

#[test]
fn one_stream_has_no_serving_section() {
    let r = super::render(&pass("sim", 1));
    assert!(!r.markdown.contains("Serving under concurrency"));
    assert!(!r.html.contains("Serving under concurrency"));
    assert!(!r.leaderboard_csv.contains("@c"));
}

#[test]
fn hostile_engine_names_are_escaped_in_the_serving_section() {
    let r = super::render(&pass("<b>x|y", 2));
    crate::plain_markdown::assert_plain("a serving section of a hostile engine", &r.markdown);
    let md = r.markdown.split("## Serving under concurrency").nth(1).unwrap();
    assert!(md.contains("| &lt;b&gt;x\\|y | m |"), "{md}");
    let html = r.html.split("<h2>Serving under concurrency</h2>").nth(1).unwrap();
    assert!(!html.contains("<b>x"), "raw tag in the HTML");
}
