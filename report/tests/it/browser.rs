//! The HTML report in a real headless Chromium: it parses, its tables and charts are there,
//! it fits a phone's width, and a screenshot is kept (`report-screenshots/` in the build's target tmp folder).

use std::process::Command;

use crate::{artifacts, fixture_pass};

pub fn chromium() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser"].into_iter().find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()));
    // The tests that open a browser are `#[ignore]`d, run only when asked for: asked for, a
    // missing browser fails them rather than letting them pass having opened nothing.
    assert!(found.is_some(), "no chromium on PATH: apt-get install chromium");
    found
}

pub fn headless(browser: &str, args: &[&str]) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .output()
        .unwrap()
}

#[test]
#[ignore = "needs Chromium (apt-get install chromium); run with --include-ignored"]
fn the_html_report_opens_in_headless_chromium_with_its_tables_and_charts() {
    let Some(browser) = chromium() else { unreachable!("chromium() fails the test without one") };
    let tmp = tempfile::tempdir().unwrap();
    let pass = fixture_pass("a.csv", "fx-a", &tmp);
    let steps = analysis::cells::summarize(&pass).unwrap();
    let rendered = report::render_pass(&pass, &steps).unwrap();
    let html = tmp.path().join("report.html");
    std::fs::write(&html, &rendered.html).unwrap();
    let url = format!("file://{}", html.display());

    let dom = headless(browser, &["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("<h2>Sustained decode (tok/s)</h2>"), "{dom}");
    // Sustained, prompt matrix, TTFT and prefill (the fixture has no ppN-tgM), and 2 of provenance.
    assert_eq!(dom.matches("<table").count(), 6);
    assert_eq!(dom.matches("<table class=\"provenance\">").count(), 2);
    assert_eq!(dom.matches("<svg").count(), 2, "decode per cell and decode against prompt size");

    let shot = artifacts().join("fixture-a-phone.png");
    let _ = std::fs::remove_file(&shot);
    headless(browser, &["--window-size=412,2000", &format!("--screenshot={}", shot.display()), &url]);
    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}
