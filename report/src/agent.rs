//! The "Agent sessions" section (`analysis::agent`): a table per pass of each cell's cold and
//! cached TTFT, cache hit ratio, effective prefill rate and decode, its flags, and a chart of
//! TTFT by turn (one line per cell, prompt tokens on the right axis). Rendered on its own, as
//! Markdown and as an HTML fragment for the pass report to place (docs/agent.md).

use analysis::agent::{AgentCell, Figure};
use minijinja::context;
use plotters::prelude::*;
use serde::Serialize;

use crate::charts::Chart;

/// The section, ready to be placed in a report: Markdown (the chart referenced as
/// `charts/<file>`), an HTML fragment (the chart inline), and the chart to write.
#[derive(Debug, Clone)]
pub struct AgentSection {
    pub markdown: String,
    pub html: String,
    pub chart: Option<Chart>,
}

/// The section of `cells` (`analysis::agent::summarize(pass)`); `None` when there are none.
pub fn render(cells: &[AgentCell]) -> Result<Option<AgentSection>, minijinja::Error> {
    if cells.is_empty() {
        return Ok(None);
    }
    let chart = ttft_by_turn(cells);
    let ctx = context(cells, chart.as_ref());
    let env = environment()?;
    Ok(Some(AgentSection {
        markdown: env.get_template("agent.md.j2")?.render(&ctx)?,
        html: env.get_template("agent.html.j2")?.render(&ctx)?,
        chart,
    }))
}

#[derive(Debug, Serialize)]
struct CellView {
    engine: String,
    engine_version: String,
    model: String,
    build: String,
    lane: String,
    sessions: usize,
    turns: String,
    ttft_cold: String,
    ttft_cached: String,
    cache_hit: String,
    prefill: String,
    decode: String,
    flags: String,
}

#[derive(Debug, Serialize)]
struct FlagView {
    code: &'static str,
    text: String,
}

/// A median and its band as the main tables print them: `±x%` where the band reaches as far
/// each way, `+x%/−y%` where it does not, nothing below the runs a band needs.
fn figure(f: Option<&Figure>, unit: &str, decimals: usize) -> String {
    let Some(f) = f else { return "–".to_owned() };
    let value = format!("{:.decimals$} {unit}", f.median);
    let Some(band) = f.band.filter(|_| f.median > 0.0) else { return value };
    let (above, below) = (band.above(f.median) * 100.0, band.below(f.median) * 100.0);
    if format!("{above:.0}") == format!("{below:.0}") {
        format!("{value} ±{above:.0}%")
    } else {
        format!("{value} +{above:.0}%/−{below:.0}%")
    }
}

fn context(cells: &[AgentCell], chart: Option<&Chart>) -> minijinja::Value {
    let views: Vec<CellView> = cells
        .iter()
        .map(|c| CellView {
            engine: c.engine.clone(),
            engine_version: c.engine_version.clone(),
            model: c.model.clone(),
            build: c.build_sha256.as_deref().map_or("unhashed".to_owned(), |b| b.chars().take(12).collect()),
            lane: c.lane.clone(),
            sessions: c.n_sessions,
            turns: if c.n_failed == 0 { c.n_turns.to_string() } else { format!("{} ({} failed)", c.n_turns, c.n_failed) },
            ttft_cold: figure(c.ttft_cold_ms.as_ref(), "ms", 1),
            // The later turns' TTFT, said not to be cached where no turn reported a cached count.
            ttft_cached: match c.n_cache_turns {
                0 => format!("{} (no cache info)", figure(c.ttft_cached_ms.as_ref(), "ms", 1)),
                _ => figure(c.ttft_cached_ms.as_ref(), "ms", 1),
            },
            cache_hit: c.cache_hit_ratio.map_or("–".to_owned(), |r| format!("{:.1} %", r * 100.0)),
            prefill: figure(c.effective_prefill_tps.as_ref(), "tok/s", 0),
            decode: figure(c.decode_tps.as_ref(), "tok/s", 1),
            flags: c.flags(),
        })
        .collect();
    let mut flags: Vec<FlagView> = Vec::new();
    for reason in cells.iter().flat_map(|c| &c.reasons) {
        if !flags.iter().any(|f| f.code == reason.code) {
            flags.push(FlagView { code: reason.code, text: reason.sentence().to_owned() });
        }
    }
    flags.sort_by_key(|f| f.code);
    context! { cells => views, flags => flags, chart => chart }
}

fn environment() -> Result<minijinja::Environment<'static>, minijinja::Error> {
    let mut env = crate::environment();
    env.add_template("agent.md.j2", include_str!("../../report-templates/agent.md.j2"))?;
    env.add_template("agent.html.j2", include_str!("../../report-templates/agent.html.j2"))?;
    Ok(env)
}

const SIZE: (u32, u32) = (760, 380);
/// As `charts.rs`: nothing past this is drawn (plotters would step through a vast axis forever).
const MAX_DRAWN: f64 = 1e12;

fn drawable(v: f64) -> bool {
    v.is_finite() && (0.0..=MAX_DRAWN).contains(&v)
}

fn axis_top(top: f64) -> f64 {
    if top.is_finite() { top.clamp(1.0, MAX_DRAWN) } else { 1.0 }
}

/// TTFT by turn: the median TTFT at each turn index, one line per cell (solid, left axis), and
/// the median prompt tokens at each turn (dashed, same colour, right axis), so that a turn that
/// is slow because it is long reads apart from one that is slow because it missed the cache.
pub fn ttft_by_turn(cells: &[AgentCell]) -> Option<Chart> {
    // (cell name, (turn, TTFT ms), (turn, prompt tokens)).
    type Series = (String, Vec<(f64, f64)>, Vec<(f64, f64)>);
    let series: Vec<Series> = cells
        .iter()
        .map(|c| {
            let name = if c.model.is_empty() { c.engine.clone() } else { format!("{} · {}", c.engine, c.model) };
            let ttft = c.by_turn.iter().filter_map(|t| Some((t.turn as f64, t.ttft_ms.filter(|v| drawable(*v))?))).collect();
            let prompt = c.by_turn.iter().filter_map(|t| Some((t.turn as f64, t.prompt_tokens.filter(|v| drawable(*v))?))).collect();
            (name, ttft, prompt)
        })
        .filter(|(_, ttft, _): &Series| !ttft.is_empty())
        .collect();
    if series.is_empty() {
        return None;
    }
    let last_turn = series.iter().flat_map(|(_, t, _)| t.iter().map(|p| p.0)).fold(0.0, f64::max).max(1.0);
    let top = axis_top(series.iter().flat_map(|(_, t, _)| t.iter().map(|p| p.1)).fold(0.0, f64::max) * 1.15);
    let prompt_top = axis_top(series.iter().flat_map(|(_, _, p)| p.iter().map(|q| q.1)).fold(0.0, f64::max) * 1.15);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let drawn = (|| -> Result<(), Box<dyn std::error::Error + '_>> {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption("Time to first token by turn (median over sessions)", ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(56)
                .right_y_label_area_size(64)
                .build_cartesian_2d(-0.3f64..last_turn + 0.3, 0f64..top)?
                .set_secondary_coord(-0.3f64..last_turn + 0.3, 0f64..prompt_top);
            chart
                .configure_mesh()
                .x_desc("turn")
                .y_desc("TTFT (ms), solid")
                .x_labels((last_turn as usize + 1).min(21))
                // Turns count from 1 where a reader sees them (runs.jsonl's `turn` from 0).
                .x_label_formatter(&|v| format!("{:.0}", v + 1.0))
                .y_label_formatter(&crate::charts::tick)
                .draw()?;
            chart.configure_secondary_axes().y_desc("prompt tokens, dashed").y_label_formatter(&crate::charts::tick).draw()?;
            for (i, (name, ttft, prompt)) in series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(ttft.clone(), color.stroke_width(2)).point_size(3))?
                    .label(name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
                chart.draw_secondary_series(DashedLineSeries::new(prompt.clone(), 6, 4, color.mix(0.6).stroke_width(1)))?;
            }
            chart.configure_series_labels().position(SeriesLabelPosition::UpperLeft).background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
            root.present()?;
            Ok(())
        })();
        // A drawing error leaves the chart out rather than the section.
        drawn.ok()?;
    }
    Some(Chart { file: "agent-ttft-by-turn.svg".to_owned(), title: "Agent sessions: time to first token by turn, per cell (prompt tokens dashed)".to_owned(), svg })
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::agent::{AgentReason, TurnPoint};

    fn cell(engine: &str) -> AgentCell {
        let figure = |v: &[f64]| Some(Figure { median: v[v.len() / 2], values: v.to_vec(), band: None });
        AgentCell {
            pass_id: "p".into(),
            machine: "m".into(),
            cell: "c0".into(),
            engine: engine.into(),
            engine_version: "1 <b>".into(),
            engine_sha256: None,
            model: "tiny|q8".into(),
            build_sha256: Some("ab".repeat(32)),
            lane: "text".into(),
            n_sessions: 2,
            n_turns: 6,
            n_failed: 0,
            n_short: 0,
            ttft_cold_ms: figure(&[100.0, 110.0]),
            ttft_cached_ms: figure(&[30.0, 40.0, 50.0]),
            cache_hit_ratio: Some(0.5946),
            n_cache_turns: 6,
            effective_prefill_tps: figure(&[6000.0]),
            decode_tps: figure(&[100.0]),
            decode_is_burst: false,
            session_set: vec!["t1".into(), "t2".into()],
            by_turn: (0..3)
                .map(|t| TurnPoint { turn: t, n: 2, ttft_ms: Some(100.0 - 30.0 * t as f64), prompt_tokens: Some(1000.0 + 250.0 * t as f64), cached_prompt_tokens: None })
                .collect(),
            token_count_source: "usage".into(),
            reasons: vec![AgentReason { code: "few-runs", detail: "2 sessions".into() }],
        }
    }

    #[test]
    fn the_section_escapes_engine_strings_and_draws_one_line_per_cell() {
        let section = render(&[cell("llama.cpp"), cell("<script>x</script>")]).unwrap().unwrap();
        assert!(section.markdown.contains("## Agent sessions"));
        assert!(section.markdown.contains("tiny\\|q8"), "{}", section.markdown);
        assert!(section.markdown.contains("59.5 %"));
        assert!(section.markdown.contains("![Agent sessions: time to first token by turn"));
        assert!(!section.html.contains("<script>x"), "engine strings are escaped in HTML");
        assert!(section.html.contains("&lt;script&gt;x"));
        assert!(section.html.contains("<svg"), "the chart is inline");
        let chart = section.chart.unwrap();
        assert_eq!(chart.file, "agent-ttft-by-turn.svg");
        assert!(chart.svg.contains("prompt tokens, dashed"));
        assert_eq!(render(&[]).unwrap().map(|s| s.markdown), None, "no agent cells, no section");
        // A pure function: the same cells render the same bytes.
        assert_eq!(render(&[cell("a")]).unwrap().unwrap().html, render(&[cell("a")]).unwrap().unwrap().html);
    }
}
