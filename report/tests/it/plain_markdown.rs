//! Every Markdown the report crate renders is plain CommonMark/GFM: a Markdown parser finds no
//! raw HTML in it (no `<sup>`, no `<a id>`, no `<br>`), so a report, a diff or the run-end
//! table pastes into GitHub, Reddit, a forum or a terminal and reads the same. Each is parsed
//! with pulldown-cmark for every fixture pass, every pair of fixture passes of a folder, the
//! committed real pass, and hostile strings; and each of its `|---` lines opens a GFM table.

use std::path::{Path, PathBuf};

use harness::pass::{read_pass, Pass};
use pulldown_cmark::{Event, Options, Parser, Tag};

/// Panics, naming the node and where it is, if `markdown` holds raw HTML, or if a table it
/// writes is not read as a table.
pub fn assert_plain(what: &str, markdown: &str) {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut tables = 0;
    for (event, range) in Parser::new_ext(markdown, options).into_offset_iter() {
        match event {
            Event::Html(html) | Event::InlineHtml(html) => {
                panic!("{what}: raw HTML {html:?} at byte {}: {:?}", range.start, &markdown[range.clone()])
            }
            Event::Start(Tag::HtmlBlock) => panic!("{what}: an HTML block at byte {}: {:?}", range.start, &markdown[range.clone()]),
            Event::Start(Tag::Table(_)) => tables += 1,
            _ => {}
        }
    }
    let delimiter_rows = markdown.lines().filter(|l| l.starts_with("|---")).count();
    assert_eq!(tables, delimiter_rows, "{what}: each table's delimiter row opens a table\n{markdown}");
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn render_all(what: &str, pass: &Pass) {
    let steps = analysis::cells::summarize(pass).unwrap();
    let r = report::render_pass(pass, &steps).unwrap();
    assert_plain(&format!("{what}: report.md"), &r.markdown);
    assert_plain(&format!("{what}: the run-end table"), &report::summary::render_markdown(pass, &steps));
}

/// The passes each runs CSV of a fixtures folder imports to, by file name.
fn import_folder(folder: &Path, tmp: &tempfile::TempDir) -> Vec<(String, Pass)> {
    let mut csvs: Vec<PathBuf> = std::fs::read_dir(folder).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "csv")).collect();
    csvs.sort();
    let mut passes = Vec::new();
    for csv in csvs {
        let out = tmp.path().join(csv.strip_prefix(root()).unwrap());
        for dir in harness::pass::csv::import_runs(&csv, &out).unwrap() {
            passes.push((format!("{} ({})", csv.display(), dir.display()), read_pass(&dir).unwrap()));
        }
    }
    passes
}

#[test]
fn every_report_diff_and_run_end_table_of_the_fixtures_has_no_raw_html() {
    let tmp = tempfile::tempdir().unwrap();
    let diff_fixtures = root().join("fixtures/diff");
    let mut folders = vec![diff_fixtures.clone()];
    folders.extend(std::fs::read_dir(&diff_fixtures).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()));
    folders.sort();
    let mut n_diffs = 0;
    for folder in folders {
        let passes = import_folder(&folder, &tmp);
        for (what, pass) in &passes {
            render_all(what, pass);
        }
        for (i, (what_a, a)) in passes.iter().enumerate() {
            for (what_b, b) in &passes[i + 1..] {
                let (sa, sb) = (analysis::cells::summarize(a).unwrap(), analysis::cells::summarize(b).unwrap());
                let d = analysis::diff::diff(a, &sa, b, &sb);
                let what = format!("diff {what_a} → {what_b}");
                assert_plain(&what, &report::diff::to_markdown_with(&d, &report::diff::Sides::of(a, b)).unwrap());
                n_diffs += 1;
            }
        }
    }
    assert!(n_diffs >= 10, "{n_diffs} diffs");
    for folder in ["fixtures/diff/more/nondet", "fixtures/soak/leaky-sim", "data/passes/llama-cpp-mlx-lm-20261130-103145"] {
        render_all(folder, &read_pass(&root().join(folder)).unwrap());
    }
}

#[test]
fn the_committed_report_has_no_raw_html_and_its_marks_are_superscript_digits() {
    let committed = std::fs::read_to_string(root().join("reports/llama-cpp-mlx-lm-20261130-103145/report.md")).unwrap();
    assert_plain("the committed report.md", &committed);
    // The mlx-lm · benchpass-tiny sustained cell: engine+build (3), drift (5), cold-start (6).
    assert!(committed.contains("| 448.8 +8.9%/−7.3%³,⁵,⁶ |"), "{committed}");
    assert!(committed.contains("\n- ³ `engine+build`: the weights differ"), "{committed}");
}

#[test]
fn hostile_strings_stay_text_in_every_markdown() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("hostile.csv");
    std::fs::write(
        &csv,
        "pass_id,machine,engine,engine_version,engine_sha256,model,build_sha256,lane,workload,target_prompt_tokens,prompt_tokens,max_tokens,completion_tokens,ttft_ms,decode_ms,finish_reason,warmup,rep,error,token_count_source\n\
         evil,\"m<br><img src=x onerror=alert(1)>\",\"<script>alert(1)</script>\",\"<sup>1</sup>\",,\"<a id=x></a>|b\",,text,sustained,0,30,256,256,120,5100,length,false,0,,usage\n\
         evil,\"m<br><img src=x onerror=alert(1)>\",\"<script>alert(1)</script>\",\"<sup>1</sup>\",,\"<a id=x></a>|b\",,text,sustained,0,30,256,256,121,5000,length,false,1,,usage\n",
    )
    .unwrap();
    let dir = harness::pass::csv::import_runs(&csv, &tmp.path().join("passes")).unwrap().remove(0);
    let pass = read_pass(&dir).unwrap();
    render_all("hostile", &pass);
    let steps = analysis::cells::summarize(&pass).unwrap();
    let d = analysis::diff::diff(&pass, &steps, &pass, &steps);
    assert_plain("hostile diff", &report::diff::to_markdown_with(&d, &report::diff::Sides::of(&pass, &pass)).unwrap());
}
