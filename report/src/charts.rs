//! SVG charts drawn with plotters (SVG backend, no font files): the same figures give the same
//! bytes. Each function returns the SVG text, or `None` when the pass has nothing to draw.

use analysis::cells::CellStep;
use benchpass_format::{Pass, Workload};
use plotters::prelude::*;

/// One chart: a file name under `charts/`, a title, and the SVG.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Chart {
    pub file: String,
    pub title: String,
    pub svg: String,
}

const SIZE: (u32, u32) = (760, 380);

/// A median's dot, and the half-width of a whisker's caps (pixels): the caps reach past the
/// dot, so a band shorter than the dot still shows.
const DOT_RADIUS: i32 = 4;
const WHISKER_CAP: i32 = 9;

fn label(step: &CellStep) -> String {
    if step.family == step.engine {
        step.engine.clone()
    } else {
        format!("{} · {}", step.engine, step.family)
    }
}

/// Sustained decode rate per cell: the median as a dot, the noise band as a whisker.
pub fn decode_by_cell(steps: &[CellStep]) -> Option<Chart> {
    let cells: Vec<&CellStep> = steps
        .iter()
        .filter(|s| s.workload == Workload::Sustained && s.decode.as_ref().is_some_and(|m| drawable(&[m.median, m.band.low, m.band.high])))
        .collect();
    if cells.is_empty() {
        return None;
    }
    let names: Vec<String> = cells.iter().map(|s| label(s)).collect();
    let top = cells.iter().filter_map(|s| s.decode.as_ref()).map(|m| m.band.high.max(m.median)).fold(0.0, f64::max) * 1.15;
    let mut svg = String::new();
    draw(&mut svg, |root| {
        let mut chart = categorical(&root, "Sustained decode rate (median and noise band)", &names, top, "")?;
        for (i, step) in cells.iter().enumerate() {
            let m = step.decode.as_ref().expect("filtered on decode");
            let x = i as f64;
            let color = Palette99::pick(i).to_rgba();
            // The same rule as the tables: no band below the runs a band needs.
            if crate::view::has_band(m) {
                chart.draw_series(std::iter::once(PathElement::new(vec![(x, m.band.low), (x, m.band.high)], color.stroke_width(2))))?;
                // A cap at each end, wider than the dot: a ±2 % band a few pixels long still
                // shows as a whisker (an I), not as a dot alone.
                for end in [m.band.low, m.band.high] {
                    chart.draw_series(std::iter::once(
                        EmptyElement::at((x, end)) + PathElement::new(vec![(-WHISKER_CAP, 0), (WHISKER_CAP, 0)], color.stroke_width(2)),
                    ))?;
                }
            }
            chart.draw_series(std::iter::once(Circle::new((x, m.median), DOT_RADIUS, color.filled())))?;
        }
        Ok(())
    })?;
    Some(Chart { file: "decode-by-cell.svg".to_owned(), title: "Sustained decode rate per cell, with noise-band whiskers".to_owned(), svg })
}

/// Energy against speed: one point per sustained step with energy, at its median decode tok/s
/// and median J/token, named by its cell: the trade-off at a glance (docs/metrics.md "Energy").
/// Steps of different energy sources or domains are never drawn together (their joules are
/// not comparable): the chart takes the source and domain of the first step with energy, and a
/// step measured otherwise is left out and said in the title.
pub fn energy_vs_decode(steps: &[CellStep]) -> Option<Chart> {
    let measured: Vec<(&CellStep, f64, f64, &str)> = steps
        .iter()
        .filter(|s| s.workload == Workload::Sustained)
        .filter_map(|s| {
            let energy = s.energy.as_ref()?;
            let (tps, jpt) = (s.decode.as_ref()?.median, energy.joules_per_token.as_ref()?.median);
            drawable(&[tps, jpt]).then_some((s, tps, jpt, energy.key.as_str()))
        })
        .collect();
    let key = measured.first()?.3;
    type Point<'a> = (&'a CellStep, f64, f64, &'a str);
    let (drawn, left_out): (Vec<&Point<'_>>, Vec<&Point<'_>>) = measured.iter().partition(|(_, _, _, k)| *k == key);
    let right = axis_top(drawn.iter().map(|p| p.1).fold(0.0, f64::max) * 1.2);
    let top = axis_top(drawn.iter().map(|p| p.2).fold(0.0, f64::max) * 1.25);
    let mut svg = String::new();
    draw(&mut svg, |root| {
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("Energy against speed ({key}), one point per cell"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..right, 0f64..top)?;
        chart.configure_mesh().x_desc("sustained decode tok/s").y_desc("J per output token").x_label_formatter(&tick).y_label_formatter(&tick).draw()?;
        for (i, (step, tps, jpt, _)) in drawn.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart.draw_series(std::iter::once(
                EmptyElement::at((*tps, *jpt)) + Circle::new((0, 0), DOT_RADIUS, color.filled()) + Text::new(label(step), (8, -14), ("sans-serif", 12).into_font().color(&BLACK)),
            ))?;
        }
        Ok(())
    })?;
    let title = if left_out.is_empty() {
        format!("Energy per output token against sustained decode rate, per cell ({key}): lower and further right is better")
    } else {
        format!(
            "Energy per output token against sustained decode rate, per cell ({key}): lower and further right is better; {} cell(s) measured with another source left out",
            left_out.len()
        )
    };
    Some(Chart { file: "energy-vs-decode.svg".to_owned(), title, svg })
}

/// Decode rate against prompt size: one line per cell over the prompt-matrix targets.
pub fn decode_vs_prompt(steps: &[CellStep]) -> Option<Chart> {
    let matrix: Vec<&CellStep> = steps
        .iter()
        .filter(|s| s.workload == Workload::PromptMatrix && s.decode.as_ref().is_some_and(|m| drawable(&[m.median])))
        .collect();
    let mut targets: Vec<u64> = matrix.iter().map(|s| s.target_prompt_tokens).collect();
    targets.sort();
    targets.dedup();
    if targets.is_empty() {
        return None;
    }
    let mut series: Vec<(String, Vec<(usize, f64)>)> = Vec::new();
    for s in &matrix {
        let name = label(s);
        let x = targets.iter().position(|&t| t == s.target_prompt_tokens).expect("target listed");
        let y = s.decode.as_ref().expect("filtered on decode").median;
        match series.iter_mut().find(|(n, _)| *n == name) {
            Some((_, points)) => points.push((x, y)),
            None => series.push((name, vec![(x, y)])),
        }
    }
    let top = matrix.iter().filter_map(|s| s.decode.as_ref()).map(|m| m.median).fold(0.0, f64::max) * 1.2;
    let mut svg = String::new();
    let target_names: Vec<String> = targets.iter().map(u64::to_string).collect();
    draw(&mut svg, |root| {
        let mut chart = categorical(&root, "Decode rate against prompt size", &target_names, top, "prompt-size target (tokens)")?;
        for (i, (name, points)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let line: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x as f64, y)).collect();
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)).point_size(4))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        Ok(())
    })?;
    Some(Chart { file: "decode-vs-prompt.svg".to_owned(), title: "Decode rate against prompt size, per cell".to_owned(), svg })
}

/// When each stream event arrived in one run per cell (the first measured run that kept its
/// events): steps are bursts (several tokens in one event), flat stretches are stalls.
pub fn token_timeline(pass: &Pass) -> Option<Chart> {
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for cell in &pass.info.cells {
        let Some(run) = analysis::runs::counted(pass).find(|r| r.cell == cell.id && !r.warmup && r.events.iter().any(|e| e.carries_tokens())) else {
            continue;
        };
        let mut chars = 0.0;
        let mut points = vec![(0.0, 0.0)];
        for event in run.events.iter().filter(|e| e.carries_tokens()) {
            let t = event.t_ns as f64 / 1e6;
            points.push((t, chars));
            chars += (event.text.chars().count() + event.reasoning.chars().count()) as f64;
            points.push((t, chars));
        }
        // Runs count from 1 where a reader sees them (the pass's `rep` counts from 0).
        let name = format!("{} · {} {} run {}", cell.engine.name, run.workload.as_str(), run.target_prompt_tokens, run.rep + 1);
        lines.push((name, points));
    }
    if lines.is_empty() {
        return None;
    }
    let right = axis_top(lines.iter().flat_map(|(_, p)| p.iter().map(|&(t, _)| t)).fold(0.0, f64::max) * 1.05);
    let top = axis_top(lines.iter().flat_map(|(_, p)| p.iter().map(|&(_, c)| c)).fold(0.0, f64::max) * 1.1);
    let mut svg = String::new();
    draw(&mut svg, |root| {
        let mut chart = ChartBuilder::on(&root)
            .caption("Stream timeline: characters received over time", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..right, 0f64..top)?;
        chart.configure_mesh().x_desc("ms since the request was sent").y_desc("characters").x_label_formatter(&tick).y_label_formatter(&tick).draw()?;
        for (i, (name, points)) in lines.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        }
        chart.configure_series_labels().position(SeriesLabelPosition::UpperLeft).background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        Ok(())
    })?;
    Some(Chart { file: "token-timeline.svg".to_owned(), title: "Per-run stream timeline: the characters received by the arrival time of each event (events carry text, not token counts)".to_owned(), svg })
}

/// Aggregate output tok/s against median TTFT, one point per concurrency level and one line
/// per cell and step: how many streams an engine serves before its first tokens come late.
/// Drawn when some step was measured at two levels or more (a sweep).
pub fn throughput_latency(steps: &[CellStep]) -> Option<Chart> {
    // Per line: its name, and (streams, output tok/s, median TTFT) per level.
    type Curve = (String, Vec<(u32, f64, f64)>);
    let mut series: Vec<Curve> = Vec::new();
    for step in steps {
        let Some(serving) = &step.serving else { continue };
        let (Some(tps), Some(ttft)) = (serving.output_tps, serving.ttft_ms.as_ref().map(|p| p.p50)) else { continue };
        if !drawable(&[tps, ttft]) {
            continue;
        }
        let target = if step.target_prompt_tokens > 0 { format!(" {}", step.target_prompt_tokens) } else { String::new() };
        let name = format!("{} · {}{target}", label(step), step.workload.as_str());
        match series.iter_mut().find(|(n, _)| *n == name) {
            Some((_, points)) => points.push((serving.concurrency, tps, ttft)),
            None => series.push((name, vec![(serving.concurrency, tps, ttft)])),
        }
    }
    series.retain(|(_, points)| points.len() >= 2);
    if series.is_empty() {
        return None;
    }
    for (_, points) in &mut series {
        points.sort_by_key(|&(c, _, _)| c);
    }
    // Each sweep's knee (analysis::knee), and the TTFT objective where the steps had one.
    let knees: Vec<(f64, f64)> = analysis::knee::sweeps(steps)
        .iter()
        .filter_map(|k| k.knee.map(|i| (k.levels[i].output_tps, k.levels[i].ttft_p50_ms)))
        .filter(|&(x, y)| drawable(&[x, y]))
        .collect();
    let ttft_objective = steps
        .iter()
        .filter_map(|s| benchpass_format::Slo::parse(&s.serving.as_ref()?.goodput.as_ref()?.slo).ok()?.ttft_ms)
        .find(|&ms| drawable(&[ms]));
    let right = axis_top(series.iter().flat_map(|(_, p)| p.iter().map(|&(_, x, _)| x)).fold(0.0, f64::max) * 1.15);
    let top = axis_top(series.iter().flat_map(|(_, p)| p.iter().map(|&(_, _, y)| y)).chain(ttft_objective).fold(0.0, f64::max) * 1.2);
    let mut svg = String::new();
    draw(&mut svg, |root| {
        let mut chart = ChartBuilder::on(&root)
            .caption("Throughput against latency, one point per number of streams", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..right, 0f64..top)?;
        chart.configure_mesh().x_desc("aggregate output tok/s").y_desc("median TTFT (ms)").x_label_formatter(&tick).y_label_formatter(&tick).draw()?;
        for (i, (name, points)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let line: Vec<(f64, f64)> = points.iter().map(|&(_, x, y)| (x, y)).collect();
            chart
                .draw_series(LineSeries::new(line, color.stroke_width(2)).point_size(4))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            // Each point says its number of streams, above and to the right of its marker.
            chart.draw_series(points.iter().map(|&(c, x, y)| {
                EmptyElement::at((x, y)) + Text::new(format!("{c}"), (6, -16), ("sans-serif", 12).into_font().color(&BLACK))
            }))?;
        }
        // The knee: a ring around its point, named below it.
        chart.draw_series(knees.iter().map(|&(x, y)| {
            EmptyElement::at((x, y)) + Circle::new((0, 0), 9, BLACK.stroke_width(2)) + Text::new("knee", (-12, 12), ("sans-serif", 12).into_font().color(&BLACK))
        }))?;
        if let Some(ms) = ttft_objective {
            let dashed = DashedLineSeries::new([(0.0, ms), (right, ms)], 6, 4, RED.stroke_width(1));
            chart.draw_series(dashed)?.label(format!("TTFT objective {} ms", tick(&ms))).legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RED.stroke_width(1)));
        }
        chart.configure_series_labels().position(SeriesLabelPosition::UpperLeft).background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        Ok(())
    })?;
    Some(Chart {
        file: "throughput-latency.svg".to_owned(),
        title: "Aggregate output tok/s against median TTFT at each number of streams (the label at each point; a ring marks a sweep's knee, a dashed line the TTFT objective, where there are)".to_owned(),
        svg,
    })
}

/// The largest value a chart draws. plotters lays out ticks by stepping through the axis
/// range; an infinite or vast range (a rate from a span of 1e-320 ms) makes it step forever.
/// `benchpass_format::metrics` reports no rate above 10^9, so nothing real is left out.
const MAX_DRAWN: f64 = 1e12;

/// Values a chart can draw: finite, 0 or more, and at most [`MAX_DRAWN`].
fn drawable(values: &[f64]) -> bool {
    values.iter().all(|v| v.is_finite() && (0.0..=MAX_DRAWN).contains(v))
}

/// The top of an axis that starts at 0: at least 1 (never a zero-width range) and finite.
fn axis_top(top: f64) -> f64 {
    if top.is_finite() { top.clamp(1.0, MAX_DRAWN) } else { 1.0 }
}

type Root<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

type CategoryChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A chart with one named category per x position (cells, or prompt targets) and a rate on y.
/// Category `i` is drawn at x = `i`, on an axis from −0.5 to n − 0.5: n slots, each used (a
/// segmented axis over `0..n` has n + 1 slots, the last one empty). Asked for at most n
/// labels, plotters steps the axis by 1 (its next step, 0.5, would give 2n): one label per
/// category, and only whole numbers are named.
fn categorical<'a, 'b>(
    root: &'a Root<'b>,
    caption: &str,
    categories: &[String],
    top: f64,
    x_desc: &str,
) -> Result<CategoryChart<'a, 'b>, Box<dyn std::error::Error + 'b>> {
    let n = categories.len() as i32;
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(-0.5..f64::from(n) - 0.5, 0f64..axis_top(top))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc("decode tok/s")
        .y_label_formatter(&tick)
        .x_desc(x_desc)
        .x_labels(categories.len())
        .x_label_formatter(&|v| {
            let i = v.round();
            if (v - i).abs() < 1e-9 && i >= 0.0 { categories.get(i as usize).cloned().unwrap_or_default() } else { String::new() }
        })
        .draw()?;
    Ok(chart)
}

/// An axis tick as a reader writes it: `600`, not `600.0`; `0.5` where the step is finer.
pub(crate) fn tick(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{:.0}", v.round())
    } else {
        let text = format!("{v:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// Runs `body` on an SVG canvas; a drawing error leaves the chart out rather than the report.
fn draw(svg: &mut String, body: impl FnOnce(Root<'_>) -> Result<(), Box<dyn std::error::Error + '_>>) -> Option<()> {
    {
        let root = SVGBackend::with_string(svg, SIZE).into_drawing_area();
        root.fill(&WHITE).ok()?;
        body(root.clone()).ok()?;
        root.present().ok()?;
    }
    Some(())
}
