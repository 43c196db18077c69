//! The report opens with its result: per model family, the engines ranked by sustained decode,
//! the lead, and engine or engine+build — before any table and before the method, which folds
//! away. Checked in the rendered Markdown and HTML, and on a laptop's and a phone's first
//! screen in headless Chromium.

use analysis::cells::CellStep;
use harness::pass::Workload;
use report::headline::headlines;

use crate::browser::{chromium, headless};
use crate::{artifacts, fixture_pass};

fn steps_of(name: &str, pass_id: &str) -> (harness::pass::Pass, Vec<CellStep>, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let pass = fixture_pass(name, pass_id, &tmp);
    let steps = analysis::cells::summarize(&pass).unwrap();
    (pass, steps, tmp)
}

#[test]
fn engines_are_ranked_by_sustained_decode_with_the_lead_and_the_attribution() {
    // fixtures/diff/b.csv, sustained, each on its own build: mlx-lm 100/101/102 → 101.0,
    // llama.cpp 94/95/96 → 95.0, vllm 65/66/67 → 66.0, ollama 44/45/46 from runs that stopped
    // at 180 of 256 tokens (a burst: never ranked). 101/95 = 1.063 → 6 %; 101/66 = 1.530 →
    // 53 %. Bands at the 2 % floor: mlx-lm 99.0–103.0 and llama.cpp 93.1–96.9 do not overlap.
    let (_, steps, _tmp) = steps_of("b.csv", "fx-b");
    let lines = headlines(&steps);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0].family, "qwen");
    assert_eq!(
        lines[0].text,
        "mlx-lm 101.0 tok/s, 6 % ahead of llama.cpp (95.0 tok/s), 53 % ahead of vllm (66.0 tok/s) — engine and weights differ"
    );
}

#[test]
fn the_same_weights_say_the_engine_alone_and_overlapping_bands_say_within_noise() {
    let tmp = tempfile::tempdir().unwrap();
    let mut pass = fixture_pass("b.csv", "fx-b", &tmp);
    for cell in &mut pass.info.cells {
        cell.build.sha256 = Some("1".repeat(64));
    }
    let mut steps = analysis::cells::summarize(&pass).unwrap();
    let lines = headlines(&steps);
    assert!(lines[0].text.ends_with("(66.0 tok/s) — the same weights: the engine alone"), "{lines:?}");
    // llama.cpp's band stretched up to 101.5 reaches mlx-lm's, from 99.0.
    let llama = steps.iter_mut().find(|s| s.engine == "llama.cpp" && s.workload == Workload::Sustained).unwrap();
    llama.decode.as_mut().unwrap().band.high = 101.5;
    let lines = headlines(&steps);
    assert!(lines[0].text.contains("(66.0 tok/s); within noise of llama.cpp (the bands overlap) — "), "{lines:?}");
}

#[test]
fn an_engine_without_a_rival_still_opens_the_report_with_its_figure() {
    let (_, steps, _tmp) = steps_of("b.csv", "fx-b");
    let alone: Vec<CellStep> = steps.into_iter().filter(|s| s.engine == "llama.cpp").collect();
    let lines = headlines(&alone);
    assert_eq!(lines.len(), 1);
    assert_eq!((lines[0].family.as_str(), lines[0].text.as_str()), ("qwen", "llama.cpp 95.0 tok/s ±2.0%"));
    // A burst alone has no headline: its figure is not sustained decode.
    let (_, steps, _tmp) = steps_of("b.csv", "fx-b");
    let burst: Vec<CellStep> = steps.into_iter().filter(|s| s.engine == "ollama").collect();
    assert_eq!(headlines(&burst), vec![]);
}

#[test]
fn the_headline_comes_before_every_table_and_the_method_folds_away() {
    let (pass, steps, _tmp) = steps_of("b.csv", "fx-b");
    let r = report::render_pass(&pass, &steps).unwrap();
    let md_head = r.markdown.find("- **qwen**: mlx-lm 101.0 tok/s").expect("the headline is in report.md");
    assert!(md_head < r.markdown.find("\n| ").unwrap(), "the headline before the first table");
    assert!(r.markdown.find("## How to read these tables").unwrap() > r.markdown.find("## Sustained decode").unwrap());
    let html_head = r.html.find("<section class=\"headline\"").unwrap();
    assert!(html_head < r.html.find("<table").unwrap());
    let method = r.html.find("<details class=\"method\"><summary>How to read these figures</summary>").unwrap();
    assert!(method > html_head && method < r.html.find("<table").unwrap());
}

/// Where the headline and the first table sit on a `width`×`height` screen, read off the laid
/// out page: (headline bottom, first table top, viewport height, page width, viewport width).
fn first_screen(browser: &str, html: &str, width: u32, height: u32, shot: &str) -> [f64; 5] {
    let probe = "<script>const r = s => document.querySelector(s).getBoundingClientRect();\
        document.body.dataset.screen = [r('.headline').bottom, r('table').top, innerHeight, document.documentElement.scrollWidth, innerWidth].join(' ');</script>";
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("report.html");
    std::fs::write(&file, html.replace("</body>", &format!("{probe}</body>"))).unwrap();
    let url = format!("file://{}", file.display());
    let size = format!("--window-size={width},{height}");
    let dom = headless(browser, &[&size, "--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    let at = dom.find("data-screen=\"").unwrap_or_else(|| panic!("the probe ran: {dom}")) + "data-screen=\"".len();
    let numbers: Vec<f64> = dom[at..].split('"').next().unwrap().split(' ').map(|n| n.parse().unwrap()).collect();
    let path = artifacts().join(shot);
    let _ = std::fs::remove_file(&path);
    headless(browser, &[&size, &format!("--screenshot={}", path.display()), &url]);
    assert!(std::fs::read(&path).is_ok_and(|png| png.starts_with(b"\x89PNG")), "screenshot {}", path.display());
    eprintln!("screenshot: {}", path.display());
    numbers.try_into().unwrap()
}

#[test]
#[ignore = "needs Chromium (apt-get install chromium); run with --include-ignored"]
fn the_first_screen_shows_the_headline_and_a_table_on_a_laptop_and_a_phone() {
    let Some(browser) = chromium() else { unreachable!("chromium() fails the test without one") };
    let (pass, steps, _tmp) = steps_of("b.csv", "fx-b");
    let html = report::render_pass(&pass, &steps).unwrap().html;
    for (width, height, shot) in [(1280, 800, "first-screen-1280.png"), (390, 844, "first-screen-390.png")] {
        let [headline_bottom, table_top, view_height, page_width, view_width] = first_screen(browser, &html, width, height, shot);
        assert!(headline_bottom <= view_height, "{width} px: the headline ends at {headline_bottom} of {view_height}");
        assert!(table_top < view_height - 60.0, "{width} px: the first table starts at {table_top} of {view_height}");
        assert!(page_width <= view_width, "{width} px: the page is {page_width} px wide; wide tables scroll in their own box");
    }
}
