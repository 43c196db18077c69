//! `benchpass run PLAN.toml`: the plan cell by cell — stop, clear the KV cache, start fresh,
//! wait for health, capture version and hashes, run the workloads with their gaps, stop — into
//! one pass.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::Value;

use super::file::{expand_home, find_executable, resolve, EngineSpec, Plan};
use super::lifecycle::{self, Placeholders};
use super::presets::{self, VersionFrom};
use crate::client::{Api, RequestConfig};
use crate::pass::*;
use crate::progress::{Progress, ProgressMode};
use crate::provenance;
use crate::runner::{self, Interrupt, PassSummary, Target};

#[derive(Debug, Clone)]
pub struct PlanRunOptions {
    pub out: Option<PathBuf>,
    pub pass_id: Option<String>,
    /// Multiplies every gap (0 in tests and the demo).
    pub gap_scale: f64,
    pub progress: ProgressMode,
    pub hash_cache: Option<PathBuf>,
    pub api_key_env: Option<String>,
    /// An interrupted pass of this plan to finish: recorded runs are not repeated.
    pub resume: Option<PathBuf>,
}

/// A run's place in the plan; a resumed pass skips the places already recorded.
type Place = (String, Workload, u64, u32, bool);

fn place(run: &RunRecord) -> Place {
    (run.cell.clone(), run.workload, run.target_prompt_tokens, run.rep, run.warmup)
}

/// Each cell of the plan, in order: (cell id, engine, model).
fn cells(plan: &Plan) -> Vec<(String, &str, &str)> {
    plan.file
        .cells
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("c{i}"), c.engine.get_ref().as_str(), c.model.get_ref().as_str()))
        .collect()
}

/// The schedule and what it costs in waiting, without running anything.
pub fn dry_run(plan: &Plan, gap_scale: f64) -> String {
    let mut out = String::new();
    let gaps = &plan.file.gaps;
    let mut waiting = 0.0;
    let mut runs = 0;
    let mut tokens = 0;
    let cells = cells(plan);
    for (n, (id, engine, model)) in cells.iter().enumerate() {
        if n > 0 {
            let gap = gaps.between_cells_s * gap_scale;
            waiting += gap;
            out.push_str(&format!("  wait {gap:.0} s between cells\n"));
        }
        let spec = plan.engine(engine);
        out.push_str(&format!("{id}: {engine} × {model}\n"));
        if spec.start.is_some() {
            let cache = spec.kv_cache_dir.as_ref().map(|d| d.get_ref().clone()).or_else(|| preset_of(spec).kv_cache_dir.map(str::to_owned));
            if let Some(cache) = cache {
                out.push_str(&format!("  clear KV cache {cache}\n"));
            }
            out.push_str(&format!("  start, wait for health (at most {:.0} s)\n", spec.health_timeout_s));
        }
        let mut last_workload = None;
        for (w, step) in &plan.steps {
            if last_workload.is_some_and(|l| l != *w) {
                let gap = gaps.between_workloads_s * gap_scale;
                waiting += gap;
                out.push_str(&format!("  wait {gap:.0} s between workloads\n"));
            }
            last_workload = Some(*w);
            let what = match step.workload {
                Workload::Sustained => "sustained".to_owned(),
                other => format!("{} {}", other.as_str(), step.target_prompt_tokens),
            };
            out.push_str(&format!("  {what}: {} warmup + {} runs × {} tokens\n", step.warmup, step.runs, step.max_tokens));
            runs += step.warmup + step.runs;
            tokens += u64::from(step.warmup + step.runs) * step.max_tokens;
        }
        if spec.start.is_some() {
            out.push_str("  stop\n");
        }
    }
    // Decode time depends on the engine; 30 tok/s is a slow laptop's, so the estimate is high.
    let decode = tokens as f64 / 30.0;
    out.push_str(&format!(
        "\n{} cells, {runs} runs, {tokens} tokens: {waiting:.0} s of gaps + about {decode:.0} s of decoding at 30 tok/s ≈ {}\n",
        cells.len(),
        duration(waiting + decode)
    ));
    out
}

fn duration(seconds: f64) -> String {
    let s = seconds.round() as u64;
    format!("{}h{:02}m{:02}s", s / 3600, s % 3600 / 60, s % 60)
}

fn preset_of(spec: &EngineSpec) -> &'static presets::Preset {
    let name = spec.preset.as_ref().map_or("openai-compatible", |p| p.get_ref().as_str());
    presets::preset(name).expect("checked: presets exist")
}

fn to_json(table: &toml::Table) -> serde_json::Map<String, Value> {
    serde_json::to_value(table).ok().and_then(|v| v.as_object().cloned()).unwrap_or_default()
}

pub async fn run_plan(plan: &Plan, options: PlanRunOptions) -> anyhow::Result<PassSummary> {
    let started_at = provenance::utc_now_rfc3339();
    let request = &plan.file.request;
    let api_key = runner::api_key(options.api_key_env.as_deref())?;
    let http = runner::http_client(request.concurrency)?;
    let plan_dir = plan.path.parent().map(PathBuf::from).unwrap_or_default();
    let steps: Vec<Step> = plan.steps.iter().map(|(_, s)| *s).collect();
    let base_request = RequestConfig {
        api: if request.api.get_ref() == "completions" { Api::Completions } else { Api::Chat },
        model: String::new(),
        temperature: request.temperature,
        seed: None,
        ignore_eos: false,
        min_tokens: None,
        extra: (!request.extra.is_empty()).then(|| Value::Object(to_json(&request.extra))),
        first_token_timeout: Duration::from_secs_f64(request.first_token_timeout_s),
        idle_timeout: Duration::from_secs_f64(request.idle_timeout_s),
    };

    let name = plan.file.name.clone().unwrap_or_else(|| {
        plan.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "plan".to_owned())
    });
    let pass_id = options.pass_id.clone().unwrap_or_else(|| runner::default_pass_id(&started_at, &name));
    runner::check_pass_id(&pass_id)?;
    let cell_list = cells(plan);
    let (dir, mut info, mut writer, done) = match &options.resume {
        Some(dir) => {
            let pass = read_pass(dir)?;
            let planned: Vec<Step> = steps.clone();
            let recorded = pass.info.request.as_ref().map(|r| r.steps.clone()).unwrap_or_default();
            let same_cells = pass.info.cells.len() == cell_list.len()
                && pass.info.cells.iter().zip(&cell_list).all(|(c, (id, engine, _))| c.id == *id && c.engine.name == *engine);
            anyhow::ensure!(
                recorded == planned && same_cells,
                "{} was not made from this plan (its cells or steps differ); resume it with the plan that made it",
                dir.display()
            );
            if let Some(torn) = &pass.torn_tail {
                eprintln!("note: line {} of runs.jsonl was cut short by the interruption; that run is made again", torn.line);
            }
            let done: std::collections::HashSet<Place> = pass.runs.iter().map(place).collect();
            let mut info = pass.info;
            info.status = PassStatus::Running;
            info.finished_at = None;
            let writer = PassWriter::reopen(dir)?;
            writer.update_info(&info)?;
            (dir.clone(), info, writer, done)
        }
        None => {
            let dir = options.out.clone().unwrap_or_else(|| PathBuf::from("data/passes").join(&pass_id));
            let cells = cell_list
                    .iter()
                    .map(|(id, engine, model)| {
                        let m = plan.model(model);
                        CellInfo {
                            id: id.clone(),
                            engine: EngineInfo { name: (*engine).to_owned(), version: String::new(), version_source: "unknown".to_owned(), sha256: None, url: None },
                            model: m.id.clone().unwrap_or_else(|| m.name.get_ref().clone()),
                            family: m.family.clone(),
                            lane: m.lane.clone(),
                            build: BuildInfo::default(),
                            restarted_on_resume: false,
                            request_extra: None,
                        }
                    })
                    .collect();
            let info = runner::new_pass_info(pass_id, started_at, cells, runner::request_params(&base_request, request.concurrency, steps.clone()));
            let writer = PassWriter::create(&dir, &info)?;
            (dir, info, writer, std::collections::HashSet::new())
        }
    };
    let total_runs: u64 = (cell_list.len() as u64 * steps.iter().map(|s| u64::from(s.warmup + s.runs)).sum::<u64>()).saturating_sub(done.len() as u64);
    let progress = Progress::new(options.progress, total_runs);
    let mut summary = runner::new_summary(&dir);
    let mut interrupt = Interrupt::on_ctrl_c();
    let cpu_at_start = provenance::process_cpu_seconds();

    let mut n_started = 0;
    'cells: for (cell_id, engine_name, model_name) in cell_list.iter() {
        let planned = steps.iter().map(|s| (s.warmup + s.runs) as usize).sum::<usize>();
        let already = done.iter().filter(|p| p.0 == *cell_id).count();
        if already >= planned {
            continue;
        }
        if already > 0 {
            // Resumed mid-cell: the rest of its runs come from a freshly started engine.
            info.cells.iter_mut().filter(|c| c.id == *cell_id).for_each(|c| c.restarted_on_resume = true);
        }
        n_started += 1;
        if n_started > 1 && !gap(plan.file.gaps.between_cells_s * options.gap_scale, &mut interrupt).await {
            summary.status = PassStatus::Interrupted;
            break;
        }
        let spec = plan.engine(engine_name);
        let preset = preset_of(spec);
        let model = plan.model(model_name);
        let model_id = model.id.clone().unwrap_or_else(|| model.name.get_ref().clone());
        let weights = model.weights.as_ref().map(|w| resolve(&plan_dir, w.get_ref()));
        let fill = Placeholders { port: spec.port, model: model_id.clone(), weights: weights.clone() };
        let base = match (&spec.url, spec.port) {
            (Some(url), _) => crate::probe::base_url(&fill.fill(url))?,
            (None, Some(port)) => format!("http://127.0.0.1:{port}"),
            (None, None) => unreachable!("checked: an engine has a url or a port"),
        };
        let log = dir.join("logs").join(format!("{cell_id}-{engine_name}.log"));
        progress.note(&format!("{cell_id}: {engine_name} × {model_name}"));

        let mut engine = None;
        if let Some(start) = &spec.start {
            let argv = fill.fill_argv(start.get_ref());
            let health = format!("{base}{}", spec.health_path.as_deref().unwrap_or(preset.health_path));
            let cache = spec.kv_cache_dir.as_ref().map(|d| resolve(&plan_dir, d.get_ref())).or(preset.kv_cache_dir.map(expand_home));
            let started = async {
                lifecycle::make_way(&argv[0], &log, &health).await?;
                if let Some(cache) = &cache {
                    let removed = lifecycle::clear_cache(cache)?;
                    progress.note(&format!("  cleared {removed} entries from {}", cache.display()));
                }
                let stop = spec.stop.as_ref().map(|argv| fill.fill_argv(argv));
                lifecycle::start(&argv, &spec.env, &log, &health, Duration::from_secs_f64(spec.health_timeout_s), stop).await
            }
            .await;
            match started {
                Ok(e) => engine = Some(e),
                Err(e) => {
                    // Nothing is dropped: every planned run of the cell is recorded as failed.
                    record_not_run(&mut writer, &progress, &mut summary, cell_id, &steps, &done, "engine-start", &format!("{e:#}"))?;
                    continue 'cells;
                }
            }
        }

        let facts = match runner::probe_server(&http, &base, api_key.as_deref(), &model_id, None).await {
            Ok(facts) => facts,
            Err(e) => {
                record_not_run(&mut writer, &progress, &mut summary, cell_id, &steps, &done, "connect", &format!("{e:#}"))?;
                if let Some(mut e) = engine {
                    e.stop().await;
                }
                continue 'cells;
            }
        };
        let executable = spec
            .executable
            .as_ref()
            .map(|e| e.get_ref().clone())
            .or_else(|| spec.start.as_ref().and_then(|s| s.get_ref().first().map(|p| fill.fill(p))))
            .and_then(|p| find_executable(&p));
        let (mut version, mut version_source) = (facts.version.clone(), facts.version_source.clone());
        // The plan's command, else the preset's way, else what the generic probe found.
        let command = spec.version_command.as_ref().map(|argv| fill.fill_argv(argv)).or_else(|| match (preset.version, &executable) {
            (VersionFrom::Command { arg }, Some(exe)) => Some(vec![exe.display().to_string(), arg.to_owned()]),
            _ => None,
        });
        if let Some(argv) = command {
            if let Some(v) = lifecycle::version_from_command(&argv) {
                version = v;
                // The program by name: its hash identifies it; a local path would only leak.
                let program = std::path::Path::new(&argv[0]).file_name().map_or_else(|| argv[0].clone(), |n| n.to_string_lossy().into_owned());
                version_source = std::iter::once(program).chain(argv[1..].iter().cloned()).collect::<Vec<_>>().join(" ");
            }
        } else if let VersionFrom::Endpoint { path, pointer } = preset.version {
            let url = format!("{base}{path}");
            if let Ok(response) = http.get(&url).timeout(Duration::from_secs(10)).send().await {
                if let Ok(body) = response.json::<Value>().await {
                    if let Some(v) = body.pointer(pointer).and_then(Value::as_str).filter(|v| !v.is_empty()) {
                        version = v.to_owned();
                        version_source = format!("GET {path}");
                    }
                }
            }
        }
        let cell = info.cells.iter_mut().find(|c| c.id == *cell_id).expect("listed above");
        cell.engine = EngineInfo {
            name: (*engine_name).to_owned(),
            version,
            version_source,
            sha256: match &executable {
                Some(exe) => Some(provenance::hash_file(exe, &|_| {}).with_context(|| format!("hashing {}", exe.display()))?),
                None => None,
            },
            url: Some(base.clone()),
        };
        if let Some(weights) = &weights {
            cell.build = runner::hash_build(weights, options.hash_cache.as_deref(), options.progress)?;
        }
        writer.update_info(&info)?;

        let mut extra = base_request.extra.as_ref().and_then(Value::as_object).cloned().unwrap_or_default();
        for (key, value) in preset.request_extra {
            extra.insert((*key).to_owned(), serde_json::from_str(value).unwrap_or(Value::String((*value).to_owned())));
        }
        extra.extend(to_json(&spec.extra));
        let sampler = engine.as_ref().map(|e| crate::memory::MemorySampler::start(e.pid()));
        if let Some(c) = info.cells.iter_mut().find(|c| c.id == *cell_id) {
            c.request_extra = (!extra.is_empty()).then(|| Value::Object(extra.clone()));
        }
        writer.update_info(&info)?;
        let cell_request = RequestConfig { model: model_id.clone(), extra: (!extra.is_empty()).then_some(Value::Object(extra)), ..base_request.clone() };
        let target = Target {
            http: &http,
            url: format!("{base}{}", cell_request.api.path()),
            api_key: api_key.as_deref(),
            request: &cell_request,
            counter: &facts.counter,
            cell_id,
            concurrency: request.concurrency,
            memory: sampler.as_ref().map(|(s, _)| s.as_ref()),
            metrics_url: preset.metrics_path.map(|path| format!("{base}{path}")),
            live: Some(progress.live()),
        };
        let mut last_workload = None;
        for (w, step) in &plan.steps {
            if last_workload.is_some_and(|l| l != *w) && !gap(plan.file.gaps.between_workloads_s * options.gap_scale, &mut interrupt).await {
                summary.status = PassStatus::Interrupted;
                if let Some(mut e) = engine.take() {
                    e.stop().await;
                }
                break 'cells;
            }
            last_workload = Some(*w);
            let mut jobs = match runner::cut_jobs(std::slice::from_ref(step), false, &http, &facts.counter).await {
                Ok(jobs) => jobs,
                Err(e) => {
                    // The engine may have died mid-cell: its remaining runs are recorded as failed.
                    record_not_run(&mut writer, &progress, &mut summary, cell_id, std::slice::from_ref(step), &done, "prompt-cut", &format!("{e:#}"))?;
                    continue;
                }
            };
            jobs.retain(|j| !done.contains(&(cell_id.clone(), j.workload, j.target, j.rep, j.warmup)));
            if jobs.is_empty() {
                continue;
            }
            if !runner::run_jobs(&target, &jobs, &mut writer, &progress, &mut summary, &mut interrupt).await? {
                summary.status = PassStatus::Interrupted;
                if let Some(mut e) = engine.take() {
                    e.stop().await;
                }
                break 'cells;
            }
        }
        if let Some((_, task)) = sampler {
            task.abort();
        }
        if let Some(mut e) = engine {
            e.stop().await;
        }
    }
    progress.finish();
    runner::finish(&mut info, &writer, &summary, cpu_at_start)?;
    Ok(summary)
}

/// Waits `seconds` (a cool-down); false when Ctrl-C cut it short.
async fn gap(seconds: f64, interrupt: &mut Interrupt) -> bool {
    if seconds <= 0.0 {
        return !interrupt.is_set();
    }
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_secs_f64(seconds)) => true,
        _ = interrupt.wait() => false,
    }
}

/// Records every planned run of a cell that could not run, with the reason.
fn record_not_run(
    writer: &mut PassWriter,
    progress: &Progress,
    summary: &mut PassSummary,
    cell_id: &str,
    steps: &[Step],
    done: &std::collections::HashSet<Place>,
    class: &str,
    message: &str,
) -> anyhow::Result<()> {
    for step in steps {
        for (warmup, n) in [(true, step.warmup), (false, step.runs)] {
            for rep in 0..n {
                if done.contains(&(cell_id.to_owned(), step.workload, step.target_prompt_tokens, rep, warmup)) {
                    continue;
                }
                let run = RunRecord {
                    // No stream was ever in flight for it.
                    concurrency: 0,
                    error: Some(RunError { class: class.to_owned(), message: message.to_owned() }),
                    ..RunRecord::unmeasured(cell_id, step.workload, step.target_prompt_tokens, rep, warmup, step.max_tokens)
                };
                writer.append(&run)?;
                progress.on_run(&run);
                runner::tally(summary, &run);
            }
        }
    }
    Ok(())
}
