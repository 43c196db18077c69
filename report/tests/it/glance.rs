//! The report at a glance: the best figure of each column marked (and only among figures that
//! can be compared), every note mark a link to a note that exists, marks in order, the diff's
//! one-line summary and its attribution said once per group, and on a phone the diff's Δ and
//! verdict first (headless Chromium).

use analysis::cells::CellStep;
use analysis::reasons::{Reason, ReasonCode};
use harness::pass::Workload;

use crate::browser::{chromium, headless};
use crate::fixture_pass;

fn sustained_section(markdown: &str) -> &str {
    markdown.split("## Sustained decode").nth(1).unwrap().split("## ").next().unwrap()
}

fn row<'a>(section: &'a str, label: &str) -> &'a str {
    section.lines().find(|l| l.starts_with(&format!("| {label} |"))).unwrap_or_else(|| panic!("no row {label} in {section}"))
}

fn step_of<'a>(steps: &'a mut [CellStep], engine: &str) -> &'a mut CellStep {
    steps.iter_mut().find(|s| s.engine == engine && s.workload == Workload::Sustained).unwrap()
}

#[test]
fn the_best_decode_and_the_best_ttft_are_marked_once_per_column_in_their_direction() {
    let tmp = tempfile::tempdir().unwrap();
    // fixtures/diff/b.csv: decode 95, 101, 66 and 45* tok/s; TTFT 60, 120, 120, 200 ms.
    let pass = fixture_pass("b.csv", "fx-b", &tmp);
    let steps = analysis::cells::summarize(&pass).unwrap();
    let r = report::render_pass(&pass, &steps).unwrap();
    let sustained = sustained_section(&r.markdown);
    assert_eq!(sustained.matches('◆').count(), 1, "{sustained}");
    assert!(row(sustained, "mlx-lm").contains("| **101.0 ±2.0%** ◆¹"), "{sustained}");
    // Lower is better for TTFT: llama.cpp's 60 ms, not the 200 ms.
    let ttft = r.markdown.split("## Time to first token").nth(1).unwrap().split("## ").next().unwrap();
    assert_eq!(ttft.matches('◆').count(), 1, "{ttft}");
    assert!(row(ttft, "llama.cpp · qwen").contains("**60.0 ±2.0%** ◆"), "{ttft}");
    // The HTML marks the same cell, as text that survives copy-paste, explained in the header.
    assert!(r.html.contains(r#"<td class="best"><strong>101.0 ±2.0%</strong> <span class="best-mark" title="best of its column">◆</span>"#), "{}", r.html);
    assert_eq!(r.html.matches(r#"<td class="best">"#).count(), 2);
    assert!(r.markdown.contains("◆ marks the best median of its column") && r.html.contains("marks the best median of its column"));
}

#[test]
fn a_burst_or_an_incomparable_figure_is_never_the_best() {
    let tmp = tempfile::tempdir().unwrap();
    let pass = fixture_pass("b.csv", "fx-b", &tmp);
    let mut steps = analysis::cells::summarize(&pass).unwrap();
    // ollama's burst (all its runs stopped at 180 of 256 tokens) made the fastest by far: a
    // burst is no sustained rate, so mlx-lm's 101 tok/s stays the best.
    let ollama = step_of(&mut steps, "ollama");
    assert!(ollama.decode_is_burst());
    ollama.decode.as_mut().unwrap().median = 500.0;
    let r = report::render_pass(&pass, &steps).unwrap();
    let sustained = sustained_section(&r.markdown);
    assert!(!row(sustained, "ollama").contains('◆'), "{sustained}");
    assert!(row(sustained, "mlx-lm").contains('◆'), "{sustained}");

    // mlx-lm's token counts were estimates: its rate is not measured like the others', and the
    // next best, llama.cpp's 95, is marked.
    step_of(&mut steps, "mlx-lm").reasons.push(Reason::new(ReasonCode::TokenEstimate, "4 characters a token"));
    let r = report::render_pass(&pass, &steps).unwrap();
    let sustained = sustained_section(&r.markdown);
    assert!(!row(sustained, "mlx-lm").contains('◆') && row(sustained, "llama.cpp").contains('◆'), "{sustained}");

    // Another token cap or another machine is another comparison: with mlx-lm at a cap of
    // 512 tokens (and ollama's burst out), the best of the 256-token cells is llama.cpp's 95.
    let mut steps = analysis::cells::summarize(&pass).unwrap();
    step_of(&mut steps, "mlx-lm").max_tokens = 512;
    let r = report::render_pass(&pass, &steps).unwrap();
    let sustained = sustained_section(&r.markdown);
    assert_eq!(sustained.matches('◆').count(), 1, "{sustained}");
    assert!(row(sustained, "llama.cpp").contains('◆'), "{sustained}");
    // vllm on another machine: llama.cpp is left with nothing to be compared with.
    step_of(&mut steps, "vllm").machine = "elsewhere".to_owned();
    let r = report::render_pass(&pass, &steps).unwrap();
    assert_eq!(sustained_section(&r.markdown).matches('◆').count(), 0, "one comparable cell has no best: {}", r.markdown);
}

/// Superscript digits back to a number: `¹²` → 12.
fn from_superscript(marks: &str) -> Option<u32> {
    marks.chars().map(|c| "⁰¹²³⁴⁵⁶⁷⁸⁹".chars().position(|d| d == c)).try_fold(0u32, |n, d| Some(n * 10 + d? as u32))
}

/// The marks of each figure in the Markdown's tables, as numbers: `448.8 ±2.0%³,⁵,⁶` → [3, 5, 6].
fn markdown_marks(markdown: &str) -> Vec<Vec<u32>> {
    let is_sup = |c: char| "⁰¹²³⁴⁵⁶⁷⁸⁹,".contains(c);
    let cells = markdown.lines().filter(|l| l.starts_with("| ")).flat_map(|l| l.split(" |"));
    cells
        .filter_map(|cell| {
            let cell = cell.trim_end();
            let tail = &cell[cell.trim_end_matches(is_sup).len()..];
            let numbers: Vec<u32> = tail.split(',').filter(|n| !n.is_empty()).map(|n| from_superscript(n).unwrap()).collect();
            (!numbers.is_empty()).then_some(numbers)
        })
        .collect()
}

/// Every `href="#x"` in `html` has its `id="x"`; every mark in the Markdown (`¹`, `\*`) a note
/// in the list under `## Notes` that starts with it.
fn assert_links_land(markdown: &str, html: &str) {
    let targets = |text: &str, open: &str, close: char| -> Vec<String> {
        text.split(open).skip(1).map(|rest| rest.split(close).next().unwrap().to_owned()).collect()
    };
    let html_links = targets(html, "href=\"#", '"');
    assert!(!html_links.is_empty());
    for id in html_links {
        assert!(html.contains(&format!(" id=\"{id}\"")), "#{id} has no target");
    }
    let marks = markdown_marks(markdown);
    assert!(!marks.is_empty());
    let notes = markdown.split("## Notes").nth(1).expect("a Notes section");
    for n in marks.into_iter().flatten() {
        let sup: String = n.to_string().chars().map(|d| "⁰¹²³⁴⁵⁶⁷⁸⁹".chars().nth(d.to_digit(10).unwrap() as usize).unwrap()).collect();
        assert!(notes.contains(&format!("\n- {sup} `")), "mark {n} has no note in the Markdown");
    }
    if markdown.lines().any(|l| l.starts_with("| ") && l.contains("\\*")) {
        assert!(notes.contains("\n- \\* `"), "a star without its note");
    }
}

#[test]
fn each_note_mark_links_to_its_note_and_marks_are_sorted_without_repeats() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pass = harness::pass::read_pass(&root.join("data/passes/llama-cpp-mlx-lm-20261130-103145")).unwrap();
    let r = report::render_pass(&pass, &analysis::cells::summarize(&pass).unwrap()).unwrap();
    assert_links_land(&r.markdown, &r.html);
    // The real pass's mlx-lm · benchpass-tiny cell has drift (5), cold-start (6) and the row's
    // engine+build (3): they read 3,5,6, not in the order they were raised.
    let all_marks = markdown_marks(&r.markdown);
    assert!(all_marks.len() > 10, "{all_marks:?}");
    for numbers in all_marks {
        let mut sorted = numbers.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(numbers, sorted, "marks out of order or repeated: {numbers:?}");
    }
    assert!(r.markdown.contains("448.8 +8.9%/−7.3%³,⁵,⁶ |"), "{}", r.markdown);
    // No note says the same thing twice.
    let notes: Vec<&str> = r.markdown.split("## Notes").nth(1).unwrap().split("## ").next().unwrap().lines().filter(|l| l.starts_with("- ")).collect();
    let texts: Vec<&str> = notes.iter().map(|l| l.split_once("` ").map_or(*l, |(_, t)| t)).collect();
    for (i, t) in texts.iter().enumerate() {
        assert!(!texts[..i].contains(t), "note {t} twice");
    }
}

fn fixture_diff(tmp: &tempfile::TempDir) -> (analysis::diff::Diff, report::diff::Sides) {
    let (a, b) = (fixture_pass("a.csv", "fx-a", tmp), fixture_pass("b.csv", "fx-b", tmp));
    let (sa, sb) = (analysis::cells::summarize(&a).unwrap(), analysis::cells::summarize(&b).unwrap());
    (analysis::diff::diff(&a, &sa, &b, &sb), report::diff::Sides::of(&a, &b))
}

#[test]
fn the_diff_opens_with_its_counts_and_says_each_attribution_once_with_the_engine_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let (d, sides) = fixture_diff(&tmp);
    let summary = report::diff::summary(&d);
    // The counts add up to the table's rows, and are those the CSV's verdicts give.
    let csv = report::diff::to_csv(&d);
    let verdicts: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').nth(9).unwrap()).collect();
    let mut total = 0;
    for part in summary.split(", ") {
        let (n, verdict) = part.split_once(' ').unwrap();
        let n: usize = n.parse().unwrap();
        assert_eq!(verdicts.iter().filter(|v| v.replace('-', " ") == verdict).count(), n, "{part} in {summary}");
        total += n;
    }
    assert_eq!(total, d.rows.len());
    // ollama's burst is the one incomparable row; A's prompt-matrix rows are gone in B.
    assert_eq!(summary, "4 faster, 7 within noise, 1 incomparable, 6 gone");

    let md = report::diff::to_markdown_with(&d, &sides).unwrap();
    let html = report::diff::to_html_with(&d, &sides).unwrap();
    assert!(md.starts_with(&format!("# What changed: fx-a → fx-b\n\n**{summary}.**\n")), "{md}");
    assert!(html.contains(&format!("<h1>What changed: fx-a → fx-b</h1>\n<p class=\"summary\">{summary}.</p>")), "{html}");
    // The engine versions beside the pass ids.
    assert!(md.contains("A: fx-a (llama.cpp b5000, mlx-lm 0.20, vllm 0.6, ollama 0.5) →\nB: fx-b (llama.cpp b5100, mlx-lm 0.20, vllm 0.7, ollama 0.5)"), "{md}");
    assert!(html.contains("A: fx-a (llama.cpp b5000, mlx-lm 0.20, vllm 0.6, ollama 0.5) → B: fx-b (llama.cpp b5100"), "{html}");
    // vllm changed engine and weights: said once for its rows in each format.
    let vllm_rows = d.rows.iter().filter(|r| r.engine == "vllm").count();
    assert!(vllm_rows >= 2, "{vllm_rows}");
    for text in [&md, &html] {
        assert_eq!(text.matches("engine and weights both changed").count(), 1, "{text}");
    }
    assert_links_land(&md, &html);
    // Without the passes, no versions line, the same table.
    assert!(!report::diff::to_markdown(&d).unwrap().contains("A: fx-a ("));
}

#[test]
#[ignore = "needs Chromium (apt-get install chromium); run with --include-ignored"]
fn on_a_phone_the_diff_shows_delta_and_verdict_first_and_provenance_wraps() {
    let Some(browser) = chromium() else { unreachable!("chromium() fails the test without one") };
    let tmp = tempfile::tempdir().unwrap();
    let (d, sides) = fixture_diff(&tmp);
    // A probe appended to the page measures the layout and writes it into the DOM, which
    // --dump-dom then prints.
    let probe = r#"<script>
window.addEventListener('load', () => {
  const out = [];
  const row = document.querySelector('tr.row');
  if (row) {
    const box = (sel) => row.querySelector(sel).getBoundingClientRect();
    const [verdict, delta, metric] = [box('td.verdict'), box('td.delta'), box('td[data-label=metric]')];
    out.push('verdict-visible=' + (verdict.width > 0 && verdict.right <= window.innerWidth));
    const before = (x) => x.top < metric.top || (x.top == metric.top && x.left < metric.left);
    out.push('first=' + (before(delta) && before(verdict)));
  }
  out.push('page-fits=' + (document.documentElement.scrollWidth <= window.innerWidth));
  for (const t of document.querySelectorAll('table.provenance')) out.push('provenance-fits=' + (t.scrollWidth <= t.parentElement.clientWidth));
  const p = document.createElement('pre'); p.id = 'probe'; p.textContent = out.join(' '); document.body.appendChild(p);
});
</script>"#;
    let page = |html: &str, name: &str| {
        let path = tmp.path().join(name);
        std::fs::write(&path, html.replace("</body>", &format!("{probe}</body>"))).unwrap();
        format!("file://{}", path.display())
    };
    let diff_url = page(&report::diff::to_html_with(&d, &sides).unwrap(), "diff.html");
    let dom = headless(browser, &["--window-size=412,2000", "--dump-dom", &diff_url]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    let probe_out = dom.split("<pre id=\"probe\">").nth(1).unwrap_or_else(|| panic!("no probe output: {dom}"));
    assert!(probe_out.starts_with("verdict-visible=true first=true page-fits=true"), "{probe_out}");

    // The report's provenance: 64-hex hashes and long versions wrap instead of widening it.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pass = harness::pass::read_pass(&root.join("data/passes/llama-cpp-mlx-lm-20261130-103145")).unwrap();
    let r = report::render_pass(&pass, &analysis::cells::summarize(&pass).unwrap()).unwrap();
    let dom = headless(browser, &["--window-size=412,2000", "--dump-dom", &page(&r.html, "report.html")]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    let probe_out = dom.split("<pre id=\"probe\">").nth(1).unwrap_or_default();
    assert!(probe_out.contains("provenance-fits=true provenance-fits=true"), "{probe_out}");
    assert!(!probe_out.contains("provenance-fits=false"), "{probe_out}");
}

#[test]
fn chart_whiskers_have_caps_and_every_slot_holds_a_cell() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pass = harness::pass::read_pass(&root.join("data/passes/llama-cpp-mlx-lm-20261130-103145")).unwrap();
    let r = report::render_pass(&pass, &analysis::cells::summarize(&pass).unwrap()).unwrap();
    let chart = r.charts.iter().find(|c| c.file == "decode-by-cell.svg").unwrap();
    // Four banded cells: a line and two caps each (a ±2 % band is an I, not a dot).
    assert_eq!(chart.svg.matches(r#"stroke-width="2" points="#).count(), 4 * 3, "{}", chart.svg);
    let cx: Vec<i32> = chart.svg.split("<circle cx=\"").skip(1).map(|s| s.split('"').next().unwrap().parse().unwrap()).collect();
    assert_eq!(cx.len(), 4);
    let slot = cx[1] - cx[0];
    assert!(cx.windows(2).all(|w| (w[1] - w[0] - slot).abs() <= 1), "{cx:?}");
    // No room for a fifth, empty slot to the right of the last cell (760 px wide, 12 px margin).
    assert!(cx[3] + slot / 2 <= 760 && cx[3] + slot > 760 - 12, "{cx:?}");
}

/// fixtures/diff/burst/ (README.md works it): a cell whose capped runs have no rate and whose
/// short runs ran at 900 tok/s is a burst, starred, never the best, never `faster`. (Before,
/// it was ranked ◆ over the sustained 120, called `faster`, and its note said "all 3".)
#[test]
fn a_burst_beside_rateless_full_runs_is_still_a_burst_and_never_the_best() {
    let tmp = tempfile::tempdir().unwrap();
    let pass = fixture_pass("burst/a.csv", "burst-a", &tmp);
    let steps = analysis::cells::summarize(&pass).unwrap();
    let bursty = steps.iter().find(|s| s.engine == "bursty").unwrap();
    assert!(bursty.decode_is_burst(), "{bursty:?}");
    assert!((bursty.decode.as_ref().unwrap().median - 900.0).abs() < 1e-6);
    let note = bursty.reasons.iter().find(|r| r.code == ReasonCode::ShortStop).unwrap();
    assert!(note.detail.starts_with("3 of 6 successful runs stopped before 256 tokens, and the 3 that reached it have no decode rate"), "{note:?}");
    let r = report::render_pass(&pass, &steps).unwrap();
    let sustained = sustained_section(&r.markdown);
    // Starred as a burst, and out of the ranking: steady's 120 is left with nothing it can be
    // ranked against, so no figure is marked best.
    assert!(row(sustained, "bursty").contains(r"900.0 ±2.0%\*¹"), "{sustained}");
    assert_eq!(sustained.matches('◆').count(), 0, "{sustained}");

    let other = fixture_pass("burst/b.csv", "burst-b", &tmp);
    let other_steps = analysis::cells::summarize(&other).unwrap();
    let d = analysis::diff::diff(&pass, &steps, &other, &other_steps);
    let decode = d.rows.iter().find(|r| r.engine == "bursty" && r.metric == analysis::cells::MetricKind::DecodeTps).unwrap();
    assert_eq!(decode.verdict, analysis::diff::Verdict::Incomparable, "{decode:?}");
}

#[test]
fn chart_ticks_have_no_needless_decimals_and_runs_count_from_one() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pass = harness::pass::read_pass(&root.join("data/passes/llama-cpp-mlx-lm-20261130-103145")).unwrap();
    let r = report::render_pass(&pass, &analysis::cells::summarize(&pass).unwrap()).unwrap();
    for chart in &r.charts {
        // A tick is a <text> holding a number alone: none may end in `.0`.
        for text in chart.svg.split("<text").skip(1) {
            let content = text.split('>').nth(1).unwrap_or("").split('<').next().unwrap_or("");
            let number = content.trim().parse::<f64>().is_ok();
            assert!(!(number && content.trim().ends_with(".0")), "{}: tick `{content}`", chart.file);
        }
    }
    let timeline = r.charts.iter().find(|c| c.file == "token-timeline.svg").expect("the committed pass has a timeline");
    assert!(timeline.svg.contains(" run 1") && !timeline.svg.contains(" rep 0"), "runs count from 1");
}
