//! The short summary the demo prints on the terminal: one Markdown row per cell step, with the
//! same figures, bands, marks and footnotes as the full report (it shares their code).

use std::fmt::Write as _;

use analysis::cells::{CellStep, Metric};
use benchpass_format::Pass;

use crate::md_escape;
use crate::view::{with_band, Notes};

fn figure(metric: Option<&Metric>, digits: usize) -> String {
    metric.map_or("–".to_owned(), |m| with_band(m, digits))
}

pub fn render_markdown(pass: &Pass, steps: &[CellStep]) -> String {
    let md = |s: &str| md_escape(s.to_owned());
    let mut out = String::new();
    let _ = writeln!(out, "# Pass {}\n", md(&pass.info.pass_id));
    let _ = writeln!(out, "Machine: {} · benchpass {}\n", md(&pass.info.machine.name), pass.info.benchpass.version);
    // A sweep's steps of one cell and workload differ only in their load: it gets columns
    // (streams, rate) where the pass has more than one level, and none where it has one.
    let levels = crate::view::Levels::of(steps);
    let level_cells = |step: &CellStep| levels.values(step).iter().map(|v| format!(" {v} |")).collect::<String>();
    let level_head: String = levels.columns().iter().map(|c| format!(" {c} |")).collect();
    let level_rule = "---:|".repeat(levels.columns().len());
    let _ = writeln!(out, "| engine | model | workload | target |{level_head} prompt tokens | TTFT ms | decode tok/s | prefill tok/s | runs | notes |");
    let _ = writeln!(out, "|---|---|---|---:|{level_rule}---:|---:|---:|---:|---:|---|");
    let mut notes = Notes::default();
    for step in steps {
        let marks = notes.marks(&step.reasons, crate::view::ShortStopMark::for_decode(step));
        // An agent step's turns differ in size by design: its TTFT is the cold and the cached
        // one, its runs are turns of sessions, and it has no one prompt size or prefill rate.
        if let Some(agent) = &step.agent {
            let ttft = |f: Option<&analysis::agent::Figure>| f.map_or("–".to_owned(), |f| format!("{:.1}", f.median));
            let cache = agent.cache_hit_ratio.map_or(String::new(), |r| format!(", {:.1} % cached", r * 100.0));
            // Where no turn said what it had cached, the later turns are not called cached: a
            // server without a prefix cache makes them slower, not faster.
            let later = if agent.n_cache_turns == 0 { "later turns (no cache info)" } else { "cached" };
            let _ = writeln!(
                out,
                "| {} | {} | agent | – |{} – | cold {} · {later} {}{} | {} | – | {} turns, {} session{} | {} |",
                md(&step.engine),
                md(&step.model),
                level_cells(step),
                ttft(agent.ttft_cold_ms.as_ref()),
                ttft(agent.ttft_cached_ms.as_ref()),
                cache,
                figure(step.decode.as_ref(), 1),
                agent.n_turns,
                agent.n_sessions,
                if agent.n_sessions == 1 { "" } else { "s" },
                crate::md_marks(marks),
            );
            continue;
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |{} {} | {} | {} | {} | {} | {} |",
            md(&step.engine),
            md(&step.model),
            step.workload.as_str(),
            step.target_prompt_tokens,
            level_cells(step),
            step.prompt_tokens.as_ref().map_or("–".to_owned(), |m| format!("{:.0}", m.median)),
            figure(step.ttft.as_ref(), 1),
            figure(step.decode.as_ref(), 1),
            figure(step.prefill.as_ref(), 0),
            step.n_runs,
            crate::md_marks(marks),
        );
    }
    // Steps whose streams ran side by side: what a serving benchmark reports, one line each.
    let serving: Vec<String> = steps
        .iter()
        .filter_map(|step| {
            let s = step.serving.as_ref()?;
            let p = |l: Option<&analysis::serving::Percentiles>| l.map_or("–".to_owned(), |p| format!("{:.1}/{:.1}/{:.1}", p.p50, p.p90, p.p99));
            let rate = |v: Option<f64>, digits: usize| v.map_or("–".to_owned(), |v| format!("{v:.digits$}"));
            Some(format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                md(&step.engine),
                md(&step.model),
                step.workload.as_str(),
                s.concurrency,
                rate(s.output_tps, 1),
                rate(s.requests_per_s, 2),
                p(s.ttft_ms.as_ref()),
                p(s.itl_ms.as_ref()),
                p(s.e2e_ms.as_ref()),
            ))
        })
        .collect();
    if !serving.is_empty() {
        out.push_str("\n| engine | model | workload | streams | output tok/s | req/s | TTFT p50/p90/p99 ms | ITL p50/p90/p99 ms | E2E p50/p90/p99 ms |\n");
        out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|\n");
        for line in serving {
            out.push_str(&line);
            out.push('\n');
        }
    }
    let _ = writeln!(
        out,
        "\nEach band runs from the slowest to the fastest run, at least a 2 % floor each side (`±x%`, or \
         `+x%/−y%` where the sides differ); with 3 runs it covers the true median at least 75 % of the \
         time, a figure from fewer runs has none (docs/statistics.md)."
    );
    let notes = notes.into_vec();
    if !notes.is_empty() {
        out.push('\n');
        for note in notes {
            let _ = writeln!(out, "{} `{}`: {}  ", crate::md_marks(note.mark), note.code, md(&note.text));
        }
    }
    // What benchpass itself cost, where the pass recorded it (docs/metrics.md, "What measuring
    // costs").
    if pass.info.measurer.is_some() {
        let _ = writeln!(out, "\nMeasuring cost: {}. Self-check: {}.", md(&crate::view::measuring_cost(pass)), md(&crate::view::self_check_text(pass)));
    }
    out
}
