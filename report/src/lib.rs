//! Reports: turns a pass's figures (from `analysis`) into Markdown, HTML, SVG charts and the
//! leaderboard CSV, through the minijinja templates in `report-templates/`.
//!
//! A report is a pure function of the pass and the templates: no clock, no environment, no
//! randomness, so the same pass renders the same bytes. This crate does no I/O; `xtask` writes
//! what it returns.

pub mod agent;
pub mod charts;
pub mod diff;
pub mod headline;
pub mod post;
pub mod quality;
pub mod serving;
pub mod summary;
pub mod view;

use analysis::cells::CellStep;
use analysis::quality::QualityRow;
use benchpass_format::Pass;
use minijinja::{context, AutoEscape, Environment};

pub use charts::Chart;

/// Everything a pass report consists of, ready to be written.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub markdown: String,
    pub html: String,
    pub charts: Vec<Chart>,
    pub leaderboard_csv: String,
}

pub(crate) fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|name| if name.contains(".html") { AutoEscape::Html } else { AutoEscape::None });
    env.add_filter("md", md_escape);
    env.add_filter("marks", md_marks);
    env.add_filter("html_note_links", html_note_links);
    for (name, source) in [
        ("report.md.j2", include_str!("../../report-templates/report.md.j2")),
        ("report.html.j2", include_str!("../../report-templates/report.html.j2")),
        ("diff.md.j2", include_str!("../../report-templates/diff.md.j2")),
        ("diff.html.j2", include_str!("../../report-templates/diff.html.j2")),
    ] {
        env.add_template(name, source).expect("the shipped templates parse");
    }
    env
}

/// Makes a string safe inside a Markdown table: no cell breaks, no markup, no HTML.
pub fn md_escape(value: String) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '|' | '\\' | '*' | '_' | '`' | '[' | ']' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// Footnote marks in Markdown, as plain text that renders alike on GitHub, Reddit, forums and
/// a terminal (no HTML: no `<sup>`, no anchors): `*` escaped (it would italicise), numbers as
/// superscript digits, `**2,3` → `\*\*²,³`.
pub fn md_marks(marks: String) -> String {
    let (stars, numbers) = split_marks(&marks);
    let numbers: Vec<String> = numbers.iter().map(|n| superscript(n)).collect();
    format!("{}{}", "\\*".repeat(stars.len()), numbers.join(","))
}

/// A note number in superscript digits (`12` → `¹²`). The marks are made by `view::Notes`
/// (digits only); anything else is escaped as Markdown all the same.
fn superscript(number: &str) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    number.chars().map(|c| c.to_digit(10).map_or_else(|| md_escape(c.to_string()), |d| DIGITS[d as usize].to_string())).collect()
}

/// The marks of a figure, each one split out: `**2,3` → `**`, `2`, `3`.
fn split_marks(marks: &str) -> (&str, Vec<&str>) {
    let n_stars = marks.chars().take_while(|&c| c == '*').count();
    let numbers = marks[n_stars..].split(',').filter(|n| !n.is_empty()).collect();
    (&marks[..n_stars], numbers)
}

/// The marks of a figure as HTML: `<sup>` with a link to each note's anchor. The marks are
/// made by `view::Notes` (stars, digits, commas); anything else is escaped all the same.
pub fn html_note_links(marks: String) -> minijinja::Value {
    let escape = |s: &str| minijinja::HtmlEscape(s).to_string();
    let (stars, numbers) = split_marks(&marks);
    if stars.is_empty() && numbers.is_empty() {
        return minijinja::Value::from_safe_string(String::new());
    }
    let mut links: Vec<String> = Vec::new();
    if !stars.is_empty() {
        links.push(format!("<a href=\"#{}\">{}</a>", escape(&view::note_id(stars)), escape(stars)));
    }
    let numbered: Vec<String> = numbers.iter().map(|n| format!("<a href=\"#{}\">{}</a>", escape(&view::note_id(n)), escape(n))).collect();
    let numbered = numbered.join(",");
    links.push(numbered);
    minijinja::Value::from_safe_string(format!("<sup class=\"marks\">{}</sup>", links.concat()))
}

/// What a pass report shows beyond the pass's own figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReportOptions<'a> {
    /// The pass's cells against a reference cell (`analysis::quality::compare`): a quality
    /// column beside the speed tables (docs/quality.md).
    pub quality: Option<&'a [QualityRow]>,
}

/// Renders the report of one pass from its figures (`analysis::cells::summarize`).
pub fn render_pass(pass: &Pass, steps: &[CellStep]) -> Result<Rendered, minijinja::Error> {
    render_pass_with(pass, steps, ReportOptions::default())
}

/// [`render_pass`] with what `options` adds: a pass without agent runs and without a quality
/// comparison renders the same bytes either way.
pub fn render_pass_with(pass: &Pass, steps: &[CellStep], options: ReportOptions<'_>) -> Result<Rendered, minijinja::Error> {
    let (tables, notes) = view::tables_with_quality(steps, options.quality);
    let mut charts: Vec<Chart> =
        [charts::decode_by_cell(steps), charts::decode_vs_prompt(steps), charts::token_timeline(pass), charts::throughput_latency(steps), charts::energy_vs_decode(steps)]
            .into_iter()
            .flatten()
            .collect();
    // The agent cells as the steps carry them, in pass order (one step per agent cell).
    let agent_cells: Vec<analysis::agent::AgentCell> = steps.iter().filter_map(|s| s.agent.clone()).collect();
    let agent = agent::render(&agent_cells)?;
    let serving = serving::render(steps)?;
    let ctx = context! {
        pass => view::header(pass),
        headlines => headline::headlines(steps),
        tables => tables,
        notes => notes,
        level_columns => view::Levels::of(steps).columns(),
        spec => view::spec(steps),
        memory => view::memory(steps, pass),
        memory_cells => view::memory_cells(pass),
        memory_lifetime_measure => view::memory_lifetime_measure(pass),
        weights_mapped_note => view::weights_mapped_note(pass),
        memory_sources => view::memory_sources(pass),
        cache_flushes => view::cache_flushes(pass),
        cooldowns => view::cooldowns(pass),
        energy_sources => view::energy_sources(pass),
        memory_measure => view::memory_measure(pass),
        soak => view::soak(pass),
        reconciliation => view::reconciliation(steps),
        engines => view::engines(pass),
        charts => charts,
        agent_markdown => agent.as_ref().map(|a| a.markdown.clone()),
        agent_html => agent.as_ref().map(|a| a.html.clone()),
        serving_markdown => serving.as_ref().map(|s| s.markdown.clone()),
        serving_html => serving.as_ref().map(|s| s.html.clone()),
        quality => options.quality.map(view::quality_note),
        floor_pct => (analysis::band::FLOOR * 100.0).round() as u32,
    };
    let env = environment();
    // The agent chart sits in its own section, not among the charts listed at the end; it is
    // written beside them, where the section's Markdown points.
    charts.extend(agent.and_then(|a| a.chart));
    Ok(Rendered {
        markdown: env.get_template("report.md.j2")?.render(&ctx)?,
        html: env.get_template("report.html.j2")?.render(&ctx)?,
        charts,
        leaderboard_csv: analysis::leaderboard::to_csv([steps]),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn table_breakers_are_escaped() {
        assert_eq!(super::md_escape("a|b<script>".to_owned()), "a\\|b&lt;script&gt;");
    }

    #[test]
    fn marks_are_plain_text() {
        assert_eq!(super::md_marks("**2,3".to_owned()), "\\*\\*²,³");
        assert_eq!(super::md_marks("10,12".to_owned()), "¹⁰,¹²");
        assert_eq!(super::md_marks(String::new()), "");
    }
}
