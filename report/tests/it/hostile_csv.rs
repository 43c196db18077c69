//! Hostile strings on their way into the CSV files benchpass writes and into the engines
//! table of a report: a spreadsheet must not run an engine's version as a formula, and a hash
//! field that is not a hash must not carry markup into Markdown or HTML.

use harness::pass::read_pass;

const HEADER: &str = "pass_id,machine,engine,engine_version,engine_sha256,model,build_sha256,lane,workload,\
target_prompt_tokens,prompt_tokens,max_tokens,completion_tokens,ttft_ms,decode_ms,finish_reason,warmup,rep,error,token_count_source";

/// Pass `id` with three sustained runs of 256 tokens, each taking `decode_ms`, from an engine
/// whose name, version, model and lane are the strings given (already CSV-quoted).
fn pass_csv(id: &str, machine: &str, engine: &str, version: &str, model: &str, lane: &str, decode_ms: f64) -> String {
    let mut text = format!("{HEADER}\n");
    for rep in 0..3 {
        let ms = decode_ms + rep as f64;
        text.push_str(&format!("{id},{machine},{engine},{version},,{model},,{lane},sustained,0,30,256,256,120,{ms},length,false,{rep},,usage\n"));
    }
    text
}

fn import(tmp: &tempfile::TempDir, id: &str, csv: &str) -> harness::pass::Pass {
    let file = tmp.path().join(format!("{id}.csv"));
    std::fs::write(&file, csv).unwrap();
    harness::pass::csv::import_runs(&file, &tmp.path().join("passes")).unwrap();
    read_pass(&tmp.path().join("passes").join(id)).unwrap()
}

#[test]
fn formulas_in_engine_strings_are_neutralised_in_the_leaderboard_csv_and_numbers_are_not() {
    let tmp = tempfile::tempdir().unwrap();
    let pass = import(
        &tmp,
        "evil",
        &pass_csv("evil", "\"+mac\"", "\"=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"", "-beta", "@SUM(A1)", "-lane", 5000.0),
    );
    let steps = analysis::cells::summarize(&pass).unwrap();
    let csv = analysis::leaderboard::to_csv([steps.as_slice()]);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_owned).collect();
    assert_eq!(header, analysis::leaderboard::COLUMNS, "the columns stay as they are");
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert!(!rows.is_empty());
    for row in &rows {
        assert_eq!(&row[1], "'+mac");
        assert_eq!(&row[2], "'=HYPERLINK(\"http://x\",\"y\")");
        assert_eq!(&row[3], "'-beta", "a version that looks like a negative number is still text");
        assert_eq!(&row[5], "'@SUM(A1)");
        assert_eq!(&row[7], "'-lane");
        assert_eq!(&row[0], "evil", "a harmless value is left as it is");
        // No text cell of the file starts a formula.
        for (column, cell) in header.iter().zip(row.iter()) {
            let formula = cell.starts_with(harness::pass::csv::FORMULA_STARTS);
            assert!(!formula || cell.parse::<f64>().is_ok(), "{column} = {cell}");
        }
    }
    let decode = rows.iter().find(|r| &r[10] == "decode_tps").unwrap();
    assert!(decode[12].parse::<f64>().is_ok(), "the median is a number: {}", &decode[12]);
}

#[test]
fn the_diff_csv_neutralises_engine_strings_and_keeps_a_negative_delta_a_number() {
    let tmp = tempfile::tempdir().unwrap();
    // The same hostile engine, model and lane in both passes, B slower: a negative delta.
    let a = import(&tmp, "a", &pass_csv("a", "m1", "=cmd", "1", "-model", "@lane", 5000.0));
    let b = import(&tmp, "b", &pass_csv("b", "m1", "=cmd", "1", "-model", "@lane", 5500.0));
    let (sa, sb) = (analysis::cells::summarize(&a).unwrap(), analysis::cells::summarize(&b).unwrap());
    let csv = report::diff::to_csv(&analysis::diff::diff(&a, &sa, &b, &sb));
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    assert_eq!(reader.headers().unwrap().iter().collect::<Vec<_>>(), report::diff::CSV_COLUMNS);
    let decode = reader.records().map(Result::unwrap).find(|r| &r[5] == "decode_tps").expect("a decode row");
    assert_eq!((&decode[0], &decode[1], &decode[2]), ("'=cmd", "'-model", "'@lane"));
    // 50.990 tok/s against 46.355 tok/s: −9.089 %, written as a number.
    assert_eq!(&decode[8], "-9.089", "{csv}");
    assert_eq!(decode[8].parse::<f64>().unwrap(), -9.089);
}

#[test]
fn a_hash_field_holding_markup_is_escaped_in_markdown_and_html() {
    let tmp = tempfile::tempdir().unwrap();
    let mut pass = import(&tmp, "p", &pass_csv("p", "m1", "e", "1", "m", "text", 5000.0));
    // The import refuses such a hash; a pass.json written by hand (or by another tool) is not
    // checked, so the report must escape it whatever it holds.
    pass.info.cells[0].engine.sha256 = Some("<img src=x onerror=alert(1)>|".to_owned());
    pass.info.cells[0].build.sha256 = Some("[x](javascript:alert(1))|`<b>`".to_owned());
    let steps = analysis::cells::summarize(&pass).unwrap();
    let r = report::render_pass(&pass, &steps).unwrap();
    for text in [&r.markdown, &r.html] {
        assert!(!text.contains("<img src"), "raw img tag");
        assert!(!text.contains("<b>"), "raw b tag");
    }
    assert!(!r.markdown.contains("[x](javascript"), "a Markdown link");
    let row = r.markdown.lines().find(|l| l.starts_with("| c0 |")).expect("the engines table names the cell");
    assert!(row.contains("`&lt;img src=x onerror=alert(1)&gt;\\|`"), "{row}");
    assert!(row.contains("`\\[x\\](javascript:alert(1))\\|\\`&lt;b&gt;\\``"), "{row}");
    // The escaped bars do not split the row: it has as many cells as the header.
    let header = r.markdown.lines().find(|l| l.starts_with("| cell | engine |")).unwrap();
    let cells = |l: &str| l.replace("\\|", "").matches('|').count();
    assert_eq!(cells(row), cells(header), "{row}");
    assert!(r.html.contains("&lt;img src=x onerror=alert(1)&gt;|"), "the HTML is auto-escaped");
}
