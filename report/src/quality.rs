//! Rendering a quality comparison (`analysis::quality`): the table as Markdown and HTML through
//! the templates, the CSV with exactly the columns docs/quality.md lists, and the short text a
//! speed table's quality column shows.

use analysis::quality::{QualityFlag, QualityRow};
use benchpass_format::csv::spreadsheet_cell;
use minijinja::context;
use serde::Serialize;

/// The quality CSV's columns, in this order (docs/quality.md). Changing them breaks every
/// consumer: don't.
pub const CSV_COLUMNS: [&str; 20] = [
    "pass_id",
    "engine",
    "engine_version",
    "model",
    "build_sha256",
    "lane",
    "ref_pass_id",
    "ref_engine",
    "ref_model",
    "ref_build_sha256",
    "prompts",
    "exact_match",
    "common_prefix_median",
    "common_prefix_mean",
    "positions",
    "kl_mean",
    "kl_p90",
    "kl_max",
    "self_agreement",
    "flags",
];

/// `v` to `digits` significant digits, in plain decimal notation (no exponent, so that every
/// spreadsheet reads it as a number); the same bytes on every machine. 0 is `0`.
pub fn significant(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() { "0".to_owned() } else { String::new() };
    }
    let decimals = (digits - 1 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.decimals$}")
}

/// The CSV. Text from engines, users and files goes through `spreadsheet_cell`; numbers are
/// written as they are: fractions and prefixes to 4 decimals, KL to 6 significant digits (a
/// KL of 1e-7 must not print as 0); an empty field where there was nothing to compute from.
pub fn to_csv(rows: &[QualityRow]) -> String {
    let text = |s: &str| spreadsheet_cell(s).into_owned();
    let fixed = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
    let kl = |v: Option<f64>| v.map(|v| significant(v, 6)).unwrap_or_default();
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(CSV_COLUMNS).expect("writing to memory");
    for r in rows {
        writer
            .write_record([
                text(&r.pass_id),
                text(&r.engine),
                text(&r.engine_version),
                text(&r.model),
                text(r.build_sha256.as_deref().unwrap_or_default()),
                text(&r.lane),
                text(&r.ref_pass_id),
                text(&r.ref_engine),
                text(&r.ref_model),
                text(r.ref_build_sha256.as_deref().unwrap_or_default()),
                r.prompts.to_string(),
                fixed(r.exact_match),
                fixed(r.common_prefix_median),
                fixed(r.common_prefix_mean),
                r.positions.to_string(),
                kl(r.kl_mean),
                kl(r.kl_p90),
                kl(r.kl_max),
                fixed(r.self_agreement),
                r.flags_joined(),
            ])
            .expect("writing to memory");
    }
    String::from_utf8(writer.into_inner().expect("writing to memory")).expect("UTF-8 fields")
}

/// What a speed table's quality column shows for a cell: exact match and mean KL against the
/// reference, with the flags' codes; `reference` for the reference cell itself.
pub fn column_text(row: &QualityRow) -> String {
    if row.is_reference {
        return "reference".to_owned();
    }
    let mut parts = vec![percent(row.exact_match) + " exact"];
    if let Some(kl) = row.kl_mean {
        parts.push(format!("KL {}", significant(kl, 3)));
    }
    let mut text = parts.join(", ");
    if !row.flags.is_empty() {
        text.push_str(&format!(" ({})", row.flags_joined()));
    }
    text
}

fn percent(v: Option<f64>) -> String {
    v.map_or("–".to_owned(), |v| format!("{:.0} %", v * 100.0))
}

#[derive(Debug, Serialize)]
struct RowView {
    pass_id: String,
    cell: String,
    engine: String,
    engine_version: String,
    model: String,
    build: String,
    lane: String,
    is_reference: bool,
    prompts: String,
    exact_match: String,
    common_prefix: String,
    positions: usize,
    kl_mean: String,
    kl_p90: String,
    kl_max: String,
    self_agreement: String,
    flags: String,
}

#[derive(Debug, Serialize)]
struct FlagView {
    code: &'static str,
    text: &'static str,
}

fn context(rows: &[QualityRow]) -> minijinja::Value {
    let dash = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("–".to_owned(), f);
    let views: Vec<RowView> = rows
        .iter()
        .map(|r| RowView {
            pass_id: r.pass_id.clone(),
            cell: r.cell.clone(),
            engine: r.engine.clone(),
            engine_version: r.engine_version.clone(),
            model: r.model.clone(),
            build: r.build_sha256.as_deref().map_or("unhashed".to_owned(), |b| b.chars().take(12).collect()),
            lane: r.lane.clone(),
            is_reference: r.is_reference,
            prompts: if r.prompts_missing == 0 { r.prompts.to_string() } else { format!("{} of {}", r.prompts, r.prompts + r.prompts_missing) },
            exact_match: dash(r.exact_match, &|v| format!("{:.1} %", v * 100.0)),
            common_prefix: match (r.common_prefix_median, r.common_prefix_mean) {
                (Some(median), Some(mean)) => format!("{median:.1} / {mean:.1}"),
                _ => "–".to_owned(),
            },
            positions: r.positions,
            kl_mean: dash(r.kl_mean, &|v| significant(v, 3)),
            kl_p90: dash(r.kl_p90, &|v| significant(v, 3)),
            kl_max: dash(r.kl_max, &|v| significant(v, 3)),
            self_agreement: dash(r.self_agreement, &|v| format!("{:.0} % of {}", v * 100.0, r.repeated_prompts)),
            flags: r.flags_joined(),
        })
        .collect();
    let mut used: Vec<QualityFlag> = rows.iter().flat_map(|r| r.flags.iter().copied()).collect();
    used.sort();
    used.dedup();
    let flags: Vec<FlagView> = used.into_iter().map(|f| FlagView { code: f.as_str(), text: f.sentence() }).collect();
    let reference = rows.first().map(|r| format!("{} · {} · {}", r.ref_pass_id, r.ref_engine, r.ref_model)).unwrap_or_default();
    context! { reference => reference, rows => views, flags => flags }
}

pub fn to_markdown(rows: &[QualityRow]) -> Result<String, minijinja::Error> {
    environment()?.get_template("quality.md.j2")?.render(context(rows))
}

pub fn to_html(rows: &[QualityRow]) -> Result<String, minijinja::Error> {
    environment()?.get_template("quality.html.j2")?.render(context(rows))
}

/// The crate's environment (escaping, the `md` filter) with the quality templates added.
fn environment() -> Result<minijinja::Environment<'static>, minijinja::Error> {
    let mut env = crate::environment();
    env.add_template("quality.md.j2", include_str!("../../report-templates/quality.md.j2"))?;
    env.add_template("quality.html.j2", include_str!("../../report-templates/quality.html.j2"))?;
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> QualityRow {
        QualityRow {
            pass_id: "=cand".into(),
            cell: "c".into(),
            engine: "llama.cpp".into(),
            engine_version: "b1 <x>".into(),
            model: "tiny|q8".into(),
            build_sha256: Some("ab".repeat(32)),
            lane: "text".into(),
            ref_pass_id: "ref".into(),
            ref_cell: "r".into(),
            ref_engine: "llama.cpp".into(),
            ref_model: "tiny-f16".into(),
            ref_build_sha256: None,
            is_reference: false,
            prompts: 52,
            prompts_missing: 0,
            exact_match: Some(0.75),
            common_prefix_median: Some(12.5),
            common_prefix_mean: Some(20.0 / 3.0),
            positions: 700,
            kl_mean: Some(1.234_567_89e-7),
            kl_p90: Some(0.579_784_898),
            kl_max: Some(8.751_333_673),
            self_agreement: Some(1.0),
            repeated_prompts: 10,
            flags: vec![QualityFlag::Nondeterministic, QualityFlag::EngineBuild],
        }
    }

    #[test]
    fn the_csv_has_exactly_the_issues_columns_and_formats_worked_by_hand() {
        let csv = to_csv(&[row()]);
        let mut lines = csv.lines();
        assert_eq!(
            lines.next().unwrap(),
            "pass_id,engine,engine_version,model,build_sha256,lane,ref_pass_id,ref_engine,ref_model,ref_build_sha256,prompts,exact_match,common_prefix_median,common_prefix_mean,positions,kl_mean,kl_p90,kl_max,self_agreement,flags"
        );
        let hash = "ab".repeat(32);
        assert_eq!(
            lines.next().unwrap(),
            format!("'=cand,llama.cpp,b1 <x>,tiny|q8,{hash},text,ref,llama.cpp,tiny-f16,,52,0.7500,12.5000,6.6667,700,0.000000123457,0.579785,8.75133,1.0000,nondeterministic;engine+build")
        );
    }

    #[test]
    fn significant_digits_in_plain_decimals() {
        assert_eq!(significant(0.0, 6), "0");
        assert_eq!(significant(1.234_567_89e-7, 6), "0.000000123457");
        assert_eq!(significant(123.456, 3), "123");
        assert_eq!(significant(98_765.4, 3), "98765");
        assert_eq!(significant(0.5, 3), "0.500");
    }

    #[test]
    fn the_column_text_and_the_tables_escape_what_engines_send() {
        assert_eq!(column_text(&row()), "75 % exact, KL 0.000000123 (nondeterministic;engine+build)");
        assert_eq!(column_text(&QualityRow { is_reference: true, ..row() }), "reference");
        let md = to_markdown(&[row()]).unwrap();
        assert!(md.contains("tiny\\|q8"), "{md}");
        assert!(md.contains("| 75.0 % |"), "{md}");
        assert!(md.contains("`engine+build`"), "{md}");
        let html = to_html(&[row()]).unwrap();
        assert!(html.contains("b1 &lt;x&gt;") && !html.contains("b1 <x>"), "{html}");
        assert!(html.contains("<td class=\"num\">75.0 %</td>"), "{html}");
    }
}
