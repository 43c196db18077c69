//! Reports rendered from the hand-worked fixtures: figures and marks where a reader looks for
//! them, exact CSV columns, escaping of hostile strings, the same bytes every time, and the
//! HTML opened in a real headless Chromium.

mod agent;
mod attribution;
mod bands;
mod browser;
mod glance;
mod headline;
mod hostile_csv;
mod hostile_numbers;
mod marks;
mod memory;
mod plain_markdown;
mod post;
mod quality_column;
mod serving;
mod thermal;

use std::path::{Path, PathBuf};

use harness::pass::{read_pass, Pass};

pub fn fixture_pass(name: &str, pass_id: &str, tmp: &tempfile::TempDir) -> Pass {
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff").join(name);
    harness::pass::csv::import_runs(&csv, tmp.path()).unwrap();
    read_pass(&tmp.path().join(pass_id)).unwrap()
}

fn render(pass: &Pass) -> report::Rendered {
    let steps = analysis::cells::summarize(pass).unwrap();
    report::render_pass(pass, &steps).unwrap()
}

#[test]
fn the_sustained_table_shows_each_engine_with_its_band_and_marks() {
    let tmp = tempfile::tempdir().unwrap();
    let r = render(&fixture_pass("a.csv", "fx-a", &tmp));
    // llama.cpp ran 50, 51, 49 tok/s: median 50.0, band ±2.0 %; the row compares four engines
    // on four builds, so every cell carries the engine+build note (number 1, the first raised).
    // mlx-lm's 100 tok/s is the best of the column: bold and ◆. Each mark is a superscript
    // number that its note in the list under the tables starts with.
    assert!(r.markdown.contains("| llama.cpp | 50.0 ±2.0%¹ |"), "{}", r.markdown);
    assert!(r.markdown.contains("| mlx-lm | **100.0 ±2.0%** ◆¹ |"));
    assert!(r.markdown.contains("\n- ¹ `engine+build`: the weights differ between the engines compared"));
    // The 8192 target: one run at 25 tok/s that read 5500 tokens — no band, prompt-size flagged.
    let matrix_row = r.markdown.lines().find(|l| l.starts_with("| llama.cpp · qwen |") && l.contains("tok")).unwrap();
    assert!(matrix_row.contains("| 25.0 · 5500 tok³,⁴ |"), "{matrix_row}");
    assert!(r.markdown.contains("`prompt-size`: the actual prompt size is off its target"));
    assert!(r.markdown.contains("(median 5500 actual tokens for a 8192 target)"));
}

#[test]
fn a_starred_cell_is_starred_and_explained() {
    let tmp = tempfile::tempdir().unwrap();
    let r = render(&fixture_pass("b.csv", "fx-b", &tmp));
    // ollama's B runs all stopped at 180 of 256 tokens: 45 tok/s is a burst.
    assert!(r.markdown.contains("| ollama | 45.0 ±2.2%\\*¹"), "{}", r.markdown);
    assert!(r.markdown.contains("\n- \\* `short-stop`: runs ended before their token cap"));
    assert!(r.html.contains("45.0 ±2.2%<sup class=\"marks\"><a href=\"#note-s1\">*</a>"), "{}", r.html);
}

#[test]
fn the_same_pass_renders_the_same_bytes_wherever_it_lies() {
    let (t1, t2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (render(&fixture_pass("a.csv", "fx-a", &t1)), render(&fixture_pass("a.csv", "fx-a", &t2)));
    assert_eq!(a.markdown, b.markdown);
    assert_eq!(a.html, b.html);
    assert_eq!(a.leaderboard_csv, b.leaderboard_csv);
    assert_eq!(a.charts.iter().map(|c| &c.svg).collect::<Vec<_>>(), b.charts.iter().map(|c| &c.svg).collect::<Vec<_>>());
}

#[test]
fn the_leaderboard_has_exactly_its_columns_and_one_row_per_figure() {
    let tmp = tempfile::tempdir().unwrap();
    let r = render(&fixture_pass("a.csv", "fx-a", &tmp));
    let mut lines = r.leaderboard_csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "pass_id,machine,engine,engine_version,engine_sha256,model,build_sha256,lane,workload,target_prompt_tokens,\
metric,unit,median,band_low,band_high,n,n_short,flags,token_count_source,max_tokens,concurrency,request_rate,api,temperature,past_eos,prompt_set,\
harness_us_per_token,self_check_ttft_error_ms"
    );
    let llama = format!("fx-a,m1,llama.cpp,b5000,{},qwen,{},text,sustained,0,", "a".repeat(64), "1".repeat(64));
    // 50 tok/s ± 2 %: 49.000 to 51.000 (the 49 run was written as 5204.082 ms: 48.99999 tok/s).
    assert!(r.leaderboard_csv.contains(&format!("{llama}decode_tps,tok/s,50.000,49.000,51.000,3,0,engine+build,usage")), "{}", r.leaderboard_csv);
    // TTFT 119, 120, 121 ms: each side inside the 2 % floor, which is ÷ 1.02 below and × 1.02
    // above: 120 / 1.02 = 117.647 to 120 × 1.02 = 122.400.
    assert!(r.leaderboard_csv.contains(&format!("{llama}ttft_ms,ms,120.000,117.647,122.400,3,0,engine+build,usage")));
    // One run: no band.
    assert!(r.leaderboard_csv.contains(",prompt-matrix,8192,decode_tps,tok/s,25.000,,,1,0,few-runs;prompt-size,usage"));
    // 4 sustained cells × 4 metrics + 2048 (4 metrics) + 8192 (4 metrics).
    assert_eq!(lines.count(), 24);
}

#[test]
fn the_diff_csv_has_exactly_its_columns_and_the_hand_worked_verdicts() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (fixture_pass("a.csv", "fx-a", &tmp), fixture_pass("b.csv", "fx-b", &tmp));
    let (sa, sb) = (analysis::cells::summarize(&a).unwrap(), analysis::cells::summarize(&b).unwrap());
    let d = analysis::diff::diff(&a, &sa, &b, &sb);
    let csv = report::diff::to_csv(&d);
    assert_eq!(
        csv.lines().next().unwrap(),
        "engine,model,lane,workload,target_prompt_tokens,metric,a_median,b_median,delta_pct,verdict,attribution,reasons,concurrency,a_engine_version,b_engine_version"
    );
    assert!(csv.contains("llama.cpp,qwen,text,sustained,0,decode_tps,50.000,95.000,90.000,faster,engine,low-n"), "{csv}");
    assert!(csv.contains("mlx-lm,qwen,text,sustained,0,decode_tps,100.000,101.000,1.000,within-noise,none,"));
    assert!(csv.contains("vllm,qwen,text,sustained,0,decode_tps,60.000,66.000,10.000,faster,engine+build,low-n"));
    assert!(csv.contains("ollama,qwen,text,sustained,0,decode_tps,40.000,45.000,12.500,incomparable,none,short-stop"));
    let md = report::diff::to_markdown(&d).unwrap();
    assert!(md.contains("engine and weights both changed: not an engine-only delta"));
    assert!(md.contains("decode tok/s up to 1.0% over 1 control cell(s)"));
}

#[test]
fn strings_from_engines_cannot_inject_markup_or_break_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("hostile.csv");
    std::fs::write(
        &csv,
        "pass_id,machine,engine,engine_version,engine_sha256,model,build_sha256,lane,workload,target_prompt_tokens,prompt_tokens,max_tokens,completion_tokens,ttft_ms,decode_ms,finish_reason,warmup,rep,error,token_count_source\n\
         evil,\"m<img src=x onerror=alert(1)>\",\"<script>alert(1)</script>\",\"1|2\",,\"a|b\",,text,sustained,0,30,256,256,120,5100,length,false,0,,usage\n\
         evil,\"m<img src=x onerror=alert(1)>\",\"<script>alert(1)</script>\",\"1|2\",,\"a|b\",,text,sustained,0,30,256,256,121,5000,length,false,1,,usage\n",
    )
    .unwrap();
    harness::pass::csv::import_runs(&csv, &tmp.path().join("passes")).unwrap();
    let r = render(&read_pass(&tmp.path().join("passes/evil")).unwrap());
    for text in [&r.html, &r.markdown] {
        assert!(!text.contains("<script>alert"), "raw script tag");
        assert!(!text.contains("<img src"), "raw img tag");
    }
    assert!(r.html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;") || r.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // In Markdown a `|` would split the cell: it is escaped.
    assert!(r.markdown.contains("a\\|b"));
    assert!(!r.markdown.contains("| a|b"));
    for chart in &r.charts {
        assert!(!chart.svg.contains("<script>"), "{}", chart.file);
    }
}

/// Where screenshots are kept for a person to look at.
/// Where the browser tests keep their screenshots: under the build's own target folder
/// (`CARGO_TARGET_TMPDIR`, which follows `CARGO_TARGET_DIR`), never in the clone.
pub fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The real pass committed with the project (llama.cpp and mlx-lm, README "A real pass").
const REAL_PASS: &str = "llama-cpp-mlx-lm-20261130-103145";

#[test]
fn the_committed_real_pass_renders_to_its_committed_report_with_engine_build_marks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pass = read_pass(&root.join("data/passes").join(REAL_PASS)).unwrap();
    let rendered = render(&pass);
    // Every sustained cell compares two engines on different weights.
    let sustained = rendered.markdown.split("## Sustained decode").nth(1).unwrap().split("## ").next().unwrap();
    let rows = sustained.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| engine |"));
    let marked = rows.flat_map(|l| l.split(" |").skip(1)).filter(|c| c.trim_end().ends_with(|m: char| "⁰¹²³⁴⁵⁶⁷⁸⁹".contains(m)));
    assert_eq!(marked.count(), 4, "{sustained}");
    assert!(rendered.markdown.contains("`engine+build`: the weights differ between the engines compared"));
    // llama.cpp's own timings agree with benchpass's clock; mlx-lm sends none.
    assert!(rendered.markdown.contains("## Reconciliation with the server's own timings"));
    // A report is a pure function of the pass and the templates: the committed one is current.
    let committed = std::fs::read_to_string(root.join("reports").join(REAL_PASS).join("report.md")).unwrap();
    assert!(
        committed == rendered.markdown,
        "reports/{REAL_PASS}/report.md is stale: run `cargo xtask report data/passes/{REAL_PASS}`"
    );
}

#[test]
fn a_soak_pass_has_a_soak_section_with_its_growth_per_hour() {
    // The figures are checked against the leak's truth in analysis's soak test; here, where they go.
    let pass = read_pass(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/soak/leaky-sim")).unwrap();
    let soak = &analysis::soak::soaks(&pass)[0];
    let g = soak.growth.unwrap();
    let r = render(&pass);
    assert!(r.markdown.contains("## Soak"), "{}", r.markdown);
    let row = r.markdown.lines().find(|l| l.starts_with("| leaky-sim · sim-model |") && l.contains("MiB/h")).unwrap();
    let mib = |b: Option<u64>| format!("{:.1} MiB", b.unwrap() as f64 / (1u64 << 20) as f64);
    let expected = format!(
        "| leaky-sim · sim-model | {} | 0h00m06s | {} → {} | {:+.1} ± {:.1} MiB/h |",
        soak.runs,
        mib(soak.first_rss_bytes),
        mib(soak.last_rss_bytes),
        g.mib_per_hour,
        g.ci95_mib_per_hour
    );
    assert!(row.starts_with(&expected), "{row}\n{expected}");
    assert!(r.markdown.contains("soak: 1 warmup + runs back to back for 6 s × 16 tokens"));
    assert!(r.html.contains("<h2>Soak</h2>") && r.html.contains("MiB&#x2f;h"), "{}", r.html);
}

#[test]
fn the_process_measured_for_a_server_benchpass_did_not_start_is_named_and_escaped() {
    let mut pass = read_pass(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/soak/leaky-sim")).unwrap();
    // A process's command name is whatever that process chose: treated as hostile.
    pass.info.cells[0].engine.memory_of = Some("srv<script>|x (pid 4242, listening on port 8080)".to_owned());
    let r = render(&pass);
    assert!(
        r.markdown.contains(
            " |\n\nServers benchpass did not start are measured by the process found listening on their URL:\n\
             - leaky-sim · sim-model: srv&lt;script&gt;\\|x (pid 4242, listening on port 8080)\n\n## Soak"
        ),
        "{}",
        r.markdown
    );
    assert!(!r.html.contains("srv<script>"), "raw tag in the HTML");
    assert!(r.html.contains("leaky-sim · sim-model: srv&lt;script&gt;|x (pid 4242, listening on port 8080)"), "{}", r.html);
}

