//! The "Serving under concurrency" section (`analysis::serving`): for each step whose streams
//! ran side by side, its aggregate throughput, then p50/p90/p99 of TTFT, inter-token latency,
//! time per output token and end-to-end latency. Rendered on its own, as Markdown and as an HTML
//! fragment for the pass report to place; a pass without such steps has no section and renders
//! the same bytes as before (docs/metrics.md, "Serving under concurrency").

use analysis::cells::CellStep;
use analysis::serving::{Latency, Percentiles, Serving, PERCENTILES};
use minijinja::context;
use serde::Serialize;

/// The section, ready to be placed in a report.
#[derive(Debug, Clone)]
pub struct ServingSection {
    pub markdown: String,
    pub html: String,
}

#[derive(Debug, Serialize)]
struct StepView {
    engine: String,
    model: String,
    lane: String,
    workload: String,
    streams: u32,
    /// The arrival rate, shown only where the steps have more than one (`crate::view::Levels`).
    rate: String,
    runs: String,
    output_tps: String,
    requests_per_s: String,
    span: String,
    /// Tokens per event after a run's first: `median / max`.
    per_event: String,
    latencies: Vec<LatencyView>,
    /// Under `--request-rate`: requested, offered and achieved req/s, and whether it held.
    rate_held: Option<RateView>,
    /// Under `--slo`: the objectives, the share that met them, goodput in req/s and tok/s.
    goodput: Option<GoodputView>,
    /// The machine's energy over the step's span, where the cell had a source.
    energy: Option<EnergyView>,
}

#[derive(Debug, Serialize)]
struct EnergyView {
    /// `source:domain`.
    source: String,
    per_token: String,
    above_idle: String,
    watts: String,
    joules: String,
}

#[derive(Debug, Serialize)]
struct RateView {
    requested: String,
    offered: String,
    achieved: String,
    held: &'static str,
}

#[derive(Debug, Serialize)]
struct GoodputView {
    slo: String,
    met: String,
    requests_per_s: String,
    output_tps: String,
}

#[derive(Debug, Serialize)]
struct LatencyView {
    name: &'static str,
    values: Vec<String>,
    n: String,
}

/// The section of the steps that have serving figures; `None` when none has.
pub fn render(steps: &[CellStep]) -> Result<Option<ServingSection>, minijinja::Error> {
    let views: Vec<StepView> = steps.iter().filter_map(|s| Some(view(s, s.serving.as_ref()?))).collect();
    if views.is_empty() {
        return Ok(None);
    }
    let any_max = steps
        .iter()
        .filter_map(|s| s.serving.as_ref())
        .any(|s| Latency::ALL.iter().filter_map(|&l| s.latency(l)).any(|p| PERCENTILES.iter().any(|&q| q > 50 && p.tail_is_max(q))));
    let show_rate = crate::view::Levels::of(steps).rate;
    let any_rate = views.iter().any(|v| v.rate_held.is_some());
    let any_goodput = views.iter().any(|v| v.goodput.is_some());
    let any_energy = views.iter().any(|v| v.energy.is_some());
    let knees: Vec<KneeView> = analysis::knee::sweeps(steps).iter().map(knee_view).collect();
    let ctx = context! { steps => views, any_max => any_max, show_rate => show_rate, any_rate => any_rate, any_goodput => any_goodput, any_energy => any_energy, knees => knees };
    let mut env = crate::environment();
    env.add_template("serving.md.j2", include_str!("../../report-templates/serving.md.j2"))?;
    env.add_template("serving.html.j2", include_str!("../../report-templates/serving.html.j2"))?;
    Ok(Some(ServingSection {
        markdown: env.get_template("serving.md.j2")?.render(&ctx)?,
        html: env.get_template("serving.html.j2")?.render(&ctx)?,
    }))
}

#[derive(Debug, Serialize)]
struct KneeView {
    engine: String,
    workload: String,
    text: String,
}

/// "knee at 2 streams: to 4 streams output tok/s +0.4 % (noise ±2.0 %) while median TTFT
/// +98.1 %; the largest level meeting the objectives: 2 streams".
fn knee_view(sweep: &analysis::knee::Sweep) -> KneeView {
    let workload = if sweep.target_prompt_tokens > 0 {
        format!("{} {}", sweep.workload.as_str(), sweep.target_prompt_tokens)
    } else {
        sweep.workload.as_str().to_owned()
    };
    let pct = |x: f64| format!("{:+.1} %", x * 100.0);
    let mut text = match sweep.knee {
        Some(i) => {
            let step = sweep.levels[i].to_next.expect("a knee has a next level");
            format!(
                "knee at {}: to {} output tok/s {} (noise ±{:.1} %) while median TTFT {}",
                sweep.level_name(i),
                sweep.level_name(i + 1),
                pct(step.tps_gain),
                step.tps_noise * 100.0,
                pct(step.ttft_rise)
            )
        }
        None => format!("no knee from {} to {}: throughput rose at every level, or latency did not", sweep.level_name(0), sweep.level_name(sweep.levels.len() - 1)),
    };
    if sweep.levels.iter().any(|l| l.met_slo.is_some()) {
        match sweep.largest_meeting_slo {
            Some(i) => text.push_str(&format!("; the largest level meeting the objectives: {}", sweep.level_name(i))),
            None => text.push_str("; no level met the objectives"),
        }
    }
    KneeView { engine: sweep.engine.clone(), workload, text }
}

fn view(step: &CellStep, s: &Serving) -> StepView {
    let workload = if step.target_prompt_tokens > 0 {
        format!("{} {}", step.workload.as_str(), step.target_prompt_tokens)
    } else {
        step.workload.as_str().to_owned()
    };
    StepView {
        engine: step.engine.clone(),
        model: step.model.clone(),
        lane: step.lane.clone(),
        workload,
        streams: s.concurrency,
        rate: crate::view::Levels { streams: false, rate: true }.values(step).concat(),
        runs: if s.n_failed == 0 { s.n_ok.to_string() } else { format!("{} ({} failed)", s.n_ok, s.n_failed) },
        output_tps: s.output_tps.map_or("–".to_owned(), |v| format!("{v:.1}")),
        requests_per_s: s.requests_per_s.map_or("–".to_owned(), |v| format!("{v:.2}")),
        span: s.span_ms.map_or("–".to_owned(), |ms| format!("{:.2} s", ms / 1e3)),
        per_event: s.tokens_per_event.map_or("–".to_owned(), |(median, max)| format!("{median:.2} / {max:.2}")),
        latencies: {
            let mut rows: Vec<LatencyView> = Latency::ALL.iter().map(|&l| latency(l.label(), l.counts(), s.latency(l))).collect();
            // Under arrivals at a rate, the figures a user of the server waits, beside the send's.
            if s.rate.is_some() {
                rows.push(latency("TTFT from the schedule", "runs", s.ttft_scheduled_ms.as_ref()));
                rows.push(latency("E2E from the schedule", "runs", s.e2e_scheduled_ms.as_ref()));
                rows.push(latency("scheduling delay", "runs", s.schedule_delay_ms.as_ref()));
            }
            rows
        },
        rate_held: s.rate.as_ref().map(|r| {
            let show = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.2}"));
            RateView {
                requested: format!("{:.2}", r.requested),
                offered: show(r.offered),
                achieved: show(r.achieved),
                held: if r.short() { "no: rate-not-held" } else if r.achieved.is_some() { "yes" } else { "unknown" },
            }
        }),
        goodput: s.goodput.as_ref().map(|g| GoodputView {
            slo: g.slo.clone(),
            met: format!("{} of {} ({:.0} %)", g.n_met, g.n, g.attainment * 100.0),
            requests_per_s: g.requests_per_s.map_or("–".to_owned(), |v| format!("{v:.2}")),
            output_tps: g.output_tps.map_or("–".to_owned(), |v| format!("{v:.1}")),
        }),
        energy: s.energy.as_ref().map(|e| {
            let per_token = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.4}"));
            EnergyView {
                source: e.key.clone(),
                per_token: per_token(e.joules_per_output_token),
                above_idle: per_token(e.joules_per_output_token_above_idle),
                watts: format!("{:.1}", e.mean_watts),
                joules: format!("{:.1} J over {:.2} s", e.joules, e.seconds),
            }
        }),
    }
}

/// p50, p90, p99 in ms; a tail that is only the largest value reads `(max)` after it.
fn latency(name: &'static str, counts: &str, p: Option<&Percentiles>) -> LatencyView {
    let Some(p) = p else {
        return LatencyView { name, values: vec!["–".to_owned(); PERCENTILES.len()], n: "0".to_owned() };
    };
    let values = PERCENTILES
        .iter()
        .map(|&q| {
            let v = format!("{:.1}", p.get(q));
            if q > 50 && p.tail_is_max(q) { format!("{v} (max)") } else { v }
        })
        .collect();
    LatencyView { name, values, n: format!("{} {counts}", p.n) }
}
