//! `benchpass run PLAN.toml`: the plan cell by cell — stop, clear the KV cache, start fresh,
//! wait for health, capture version and hashes, run the workloads with their gaps, stop — into
//! one pass.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::Value;

use super::file::{expand_home, find_executable, resolve, EngineSpec, Plan};
use super::kv_cache;
use super::lifecycle::{self, Placeholders};
use super::presets::{self, IgnoreEos};
use crate::client::{Api, RequestConfig};
use crate::pass::*;
use crate::progress::{Progress, ProgressMode};
use crate::provenance;
use crate::runner::{self, all_slots, places_in_slot, Interrupt, Job, JobPlace, PassSummary, Slot, Target};

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

/// A slot of a cell: (cell, workload, target, repetition, warmup).
type SlotKey = (String, Workload, u64, u32, bool);

fn slot_key(cell: &str, slot: &Slot) -> SlotKey {
    (cell.to_owned(), slot.step.workload, slot.step.target_prompt_tokens, slot.rep, slot.warmup)
}

/// What a pass holds already: what a resumed pass does not make again, and what a finished
/// one is checked against.
#[derive(Default)]
struct Recorded {
    /// The places with a run that counts (one not superseded).
    done: HashSet<JobPlace>,
    /// The latest attempt of each slot that has a run.
    latest: HashMap<SlotKey, u32>,
}

impl Recorded {
    fn of(runs: &[RunRecord]) -> anyhow::Result<Recorded> {
        let mut recorded = Recorded::default();
        for (i, (run, superseded)) in runs.iter().zip(runner::superseded(runs)).enumerate() {
            anyhow::ensure!(
                run.attempt < u32::MAX,
                "run {} of runs.jsonl has attempt {}, which leaves no number for a next attempt: benchpass did not write it",
                i + 1,
                run.attempt
            );
            let latest = recorded.latest.entry((run.cell.clone(), run.workload, run.target_prompt_tokens, run.rep, run.warmup)).or_insert(0);
            *latest = (*latest).max(run.attempt);
            if !superseded {
                recorded.done.insert(JobPlace::of_run(run));
            }
        }
        Ok(recorded)
    }

    /// Whether `slot` of `cell` has a run on disk, superseded or not.
    fn has_any(&self, cell: &str, slot: &Slot) -> bool {
        self.latest.contains_key(&slot_key(cell, slot))
    }

    /// What `slot` of `cell` still owes. An agent session cut short is owed again whole, at
    /// the next attempt: its later turns are measured on the prefix cache its earlier turns
    /// filled, which the freshly started engine of a resumed cell does not hold, so its next
    /// turn would be timed cold. Any other slot owes the places it lacks: a quality round's
    /// prompts are requests independent of each other, and the other workloads' slots are one
    /// run each.
    fn owed(&self, cell: &str, slot: Slot) -> Owed {
        let places = places_in_slot(cell, &slot);
        let latest = self.latest.get(&slot_key(cell, &slot)).copied().unwrap_or(0);
        let n_done = places.iter().filter(|p| self.done.contains(*p)).count();
        if slot.step.workload == Workload::Agent && n_done > 0 && n_done < places.len() {
            return Owed { slot, places, attempt: latest + 1, cut_short_at: Some(n_done) };
        }
        let places = places.into_iter().filter(|p| !self.done.contains(p)).collect();
        Owed { slot, places, attempt: latest, cut_short_at: None }
    }

    /// The places of `planned` that no counted run fills, in plan order.
    fn missing<'a>(&self, planned: &'a [JobPlace]) -> Vec<&'a JobPlace> {
        planned.iter().filter(|p| !self.done.contains(*p)).collect()
    }
}

/// What a slot still owes a pass: the places to make (none when it is done) and the attempt
/// they are made at.
struct Owed {
    slot: Slot,
    places: Vec<JobPlace>,
    attempt: u32,
    /// A session cut short after this many turns, owed again whole.
    cut_short_at: Option<usize>,
}

/// The jobs of the places `owed`, each at its slot's attempt; the jobs of places recorded
/// already are left out.
fn owed_jobs(cell: &str, jobs: Vec<Job>, owed: &[&Owed]) -> Vec<Job> {
    let attempts: HashMap<&JobPlace, u32> = owed.iter().flat_map(|o| o.places.iter().map(|p| (p, o.attempt))).collect();
    jobs.into_iter()
        .filter_map(|job| attempts.get(&JobPlace::of_job(cell, &job)).map(|&attempt| Job { attempt, ..job }))
        .collect()
}

/// The refusal of `complete` for a pass whose plan has places without a run (of `planned`),
/// naming a few.
fn not_complete(missing: &[&JobPlace], planned: usize, dir: &std::path::Path) -> String {
    const SHOWN: usize = 5;
    let mut named: Vec<String> = missing.iter().take(SHOWN).map(|p| p.describe()).collect();
    if missing.len() > SHOWN {
        named.push(format!("and {} more", missing.len() - SHOWN));
    }
    format!(
        "error: the pass is not complete: {} of its {planned} planned runs are not in runs.jsonl ({}); pass.json says `interrupted`, and `benchpass run PLAN --resume {}` makes them",
        missing.len(),
        named.join(", "),
        dir.display()
    )
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

/// One turn of a cell: its engine started fresh, the slots run in order, stopped. A
/// sequential plan gives each cell one visit with every slot; an interleaved one gives each
/// cell one visit per round, round k holding repetition k of every step (and its warmups).
struct Visit {
    cell: usize,
    parts: Vec<Part>,
}

/// One step within a visit.
struct Part {
    workload_index: usize,
    step: Step,
    /// Warmups and measured repetitions; a soak step's measured runs are open-ended and not
    /// listed.
    slots: Vec<Slot>,
}

fn schedule(plan: &Plan, n_cells: usize) -> Vec<Visit> {
    match plan.order {
        Order::Sequential => (0..n_cells)
            .map(|cell| Visit {
                cell,
                parts: plan.steps.iter().map(|&(w, step)| Part { workload_index: w, step, slots: all_slots(&[step]) }).collect(),
            })
            .collect(),
        Order::Interleaved => {
            let rounds = plan.steps.iter().map(|(_, s)| s.runs).max().unwrap_or(0);
            let mut visits = Vec::new();
            for round in 0..rounds {
                for cell in 0..n_cells {
                    let parts = plan
                        .steps
                        .iter()
                        .filter(|(_, s)| s.runs > round)
                        .map(|&(w, step)| {
                            // Every turn starts a fresh engine, so every turn warms it up; the
                            // warmups are numbered on so that no two share a place.
                            let warmups = (0..step.warmup).map(|i| Slot { step, rep: round * step.warmup + i, warmup: true });
                            let slots = warmups.chain([Slot { step, rep: round, warmup: false }]).collect();
                            Part { workload_index: w, step, slots }
                        })
                        .collect();
                    visits.push(Visit { cell, parts });
                }
            }
            visits
        }
    }
}

fn is_soak(part: &Part) -> bool {
    part.step.workload == Workload::Soak
}

/// The schedule and what it costs in waiting, without running anything.
pub fn dry_run(plan: &Plan, gap_scale: f64) -> String {
    let mut out = String::new();
    let gaps = &plan.file.gaps;
    let mut waiting = 0.0;
    let mut soaking = 0.0;
    let mut runs = 0;
    let mut tokens = 0;
    let cells = cells(plan);
    if plan.order == Order::Interleaved {
        out.push_str("order: interleaved (round k runs repetition k of every cell, each engine started fresh and warmed up for its turn)\n");
    }
    for (n, visit) in schedule(plan, cells.len()).iter().enumerate() {
        let (id, engine, model) = &cells[visit.cell];
        if n > 0 {
            let gap = gaps.between_cells_s * gap_scale;
            waiting += gap;
            out.push_str(&format!("  wait {gap:.0} s between cells\n"));
        }
        let spec = plan.engine(engine);
        out.push_str(&format!("{id}: {engine} × {model}\n"));
        if spec.start.is_some() {
            let caches: Vec<String> = match &spec.kv_cache_dir {
                Some(dir) => vec![dir.get_ref().clone()],
                None => preset_of(spec).kv_cache_dirs.iter().map(|d| (*d).to_owned()).collect(),
            };
            for cache in caches {
                out.push_str(&format!("  clear KV cache {cache}\n"));
            }
            out.push_str(&format!("  start, wait for health (at most {:.0} s)\n", spec.health_timeout_s));
        } else if let Some(line) = preset_of(spec).dry_run_flush() {
            out.push_str(&line);
        }
        let mut last_workload = None;
        for part in &visit.parts {
            if last_workload.is_some_and(|l| l != part.workload_index) {
                let gap = gaps.between_workloads_s * gap_scale;
                waiting += gap;
                out.push_str(&format!("  wait {gap:.0} s between workloads\n"));
            }
            last_workload = Some(part.workload_index);
            let step = part.step;
            let what = match step.workload {
                w if w.has_prompt_targets() => format!("{} {}", w.as_str(), step.target_prompt_tokens),
                w => w.as_str().to_owned(),
            };
            let (warmups, measured) = (part.slots.iter().filter(|s| s.warmup).count(), part.slots.iter().filter(|s| !s.warmup).count());
            let reps = match (plan.order, is_soak(part)) {
                (_, true) => format!("runs back to back for {}", duration(step.duration_s.unwrap_or(0) as f64)),
                (Order::Interleaved, false) => format!("rep {}", part.slots.last().map_or(0, |s| s.rep)),
                (Order::Sequential, false) => format!("{measured} runs"),
            };
            // Planned as possibly short: the engine cannot be held to the cap.
            let may_stop_short = preset_of(spec).dry_run_stop_short(step.ignore_eos);
            out.push_str(&format!("  {what}: {warmups} warmup + {reps} × {} tokens{may_stop_short}\n", step.max_tokens));
            let part_runs: u64 = part.slots.iter().map(runner::runs_in_slot).sum();
            runs += part_runs;
            tokens += part_runs * step.max_tokens;
            soaking += step.duration_s.unwrap_or(0) as f64;
        }
        if spec.start.is_some() {
            out.push_str("  stop\n");
        }
    }
    // Decode time depends on the engine; 30 tok/s is a slow laptop's, so the estimate is high.
    let decode = tokens as f64 / 30.0;
    let soak = if soaking > 0.0 { format!(" + {soaking:.0} s of soak") } else { String::new() };
    out.push_str(&format!(
        "\n{} cells, {runs} runs, {tokens} tokens: {waiting:.0} s of gaps{soak} + about {decode:.0} s of decoding at 30 tok/s ≈ {}\n",
        cells.len(),
        duration(waiting + soaking + decode)
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

/// Where to read draft acceptance for an engine that only logs it (oMLX): the output benchpass
/// `captured` from the engine it started, or, for a server on this machine (`local`) that
/// benchpass did not start, the engine's own log file.
pub(crate) fn draft_log(preset: &presets::Preset, captured: Option<&std::path::Path>, local: bool) -> Option<crate::engine_log::LogWatch> {
    let presets::DraftCounters::LogOnly { file, marker } = preset.draft_counters else { return None };
    let path = match captured {
        Some(captured) => captured.to_path_buf(),
        None if local => expand_home(file),
        None => return None,
    };
    Some(crate::engine_log::LogWatch { path, marker })
}

fn to_json(table: &toml::Table) -> serde_json::Map<String, Value> {
    serde_json::to_value(table).ok().and_then(|v| v.as_object().cloned()).unwrap_or_default()
}

pub async fn run_plan(plan: &Plan, options: PlanRunOptions) -> anyhow::Result<PassSummary> {
    let started_at = provenance::utc_now_rfc3339();
    let request = &plan.file.request;
    let api_key = runner::api_key(options.api_key_env.as_deref())?;
    let most_streams = plan.steps.iter().filter_map(|(_, s)| s.concurrency).fold(request.concurrency, u32::max);
    let http = runner::http_client(most_streams)?;
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
    let (dir, mut info, mut writer, recorded, soaks) = match &options.resume {
        Some(dir) => {
            let pass = read_pass(dir)?;
            let planned: Vec<Step> = steps.clone();
            let recorded = pass.info.request.as_ref().map(|r| r.steps.clone()).unwrap_or_default();
            let recorded_order = pass.info.request.as_ref().map(|r| r.order).unwrap_or_default();
            let same_cells = pass.info.cells.len() == cell_list.len()
                && pass.info.cells.iter().zip(&cell_list).all(|(c, (id, engine, _))| c.id == *id && c.engine.name == *engine);
            anyhow::ensure!(
                recorded == planned && same_cells && recorded_order == plan.order,
                "{} was not made from this plan (its cells, steps or order differ); resume it with the plan that made it",
                dir.display()
            );
            if let Some(torn) = &pass.torn_tail {
                eprintln!("note: line {} of runs.jsonl was cut short by the interruption; that run is made again", torn.line);
            }
            let recorded = Recorded::of(&pass.runs).with_context(|| format!("resuming {}", dir.display()))?;
            let soaks = soaks_so_far(&pass.runs);
            let mut info = pass.info;
            info.status = PassStatus::Running;
            info.finished_at = None;
            let writer = PassWriter::reopen(dir)?;
            writer.update_info(&info)?;
            (dir.clone(), info, writer, recorded, soaks)
        }
        None => {
            let dir = options.out.clone().unwrap_or_else(|| PathBuf::from("data/passes").join(&pass_id));
            let cells = cell_list
                    .iter()
                    .map(|(id, engine, model)| {
                        let m = plan.model(model);
                        let model_id = m.id.clone().unwrap_or_else(|| m.name.get_ref().clone());
                        CellInfo { family: m.family.clone(), lane: m.lane.clone(), ..CellInfo::new(id.clone(), EngineInfo::named(*engine), model_id) }
                    })
                    .collect();
            let params = RequestParams { order: plan.order, ..runner::request_params(&base_request, request.concurrency, steps.clone()) };
            let info = runner::new_pass_info(pass_id, started_at, cells, params);
            let writer = PassWriter::create(&dir, &info)?;
            (dir, info, writer, Recorded::default(), HashMap::new())
        }
    };
    // What a KV-cache clear must never reach, besides the home and working folders ("whole":
    // the pass folder, everything above it, so the folder holding the passes, and inside it;
    // the plan's weights and engine executables).
    let protected =
        kv_cache::Protected::machine().with_above(&plan_dir, "the plan's folder").with_whole(&dir, "this pass's folder").with_plan(&plan.file, &plan_dir);
    let visits = schedule(plan, cell_list.len());
    // What each slot of each visit still owes, in the schedule's order.
    let owed: Vec<Vec<Vec<Owed>>> = visits
        .iter()
        .map(|v| v.parts.iter().map(|p| p.slots.iter().map(|&s| recorded.owed(&cell_list[v.cell].0, s)).collect()).collect())
        .collect();
    for o in owed.iter().flatten().flatten() {
        if let Some(n_done) = o.cut_short_at {
            let warmup = if o.slot.warmup { "warmup " } else { "" };
            eprintln!(
                "note: {} agent {warmup}session {} was cut short after {n_done} of its {} turns; it is run again whole, as attempt {} (a fresh engine lacks the prefix cache its earlier turns filled), and its earlier runs stay in runs.jsonl, superseded",
                o.places[0].cell,
                o.slot.rep,
                o.places.len(),
                o.attempt
            );
        }
    }
    let total_runs = owed.iter().flatten().flatten().map(|o| o.places.len() as u64).sum::<u64>();
    let progress = Progress::new(options.progress, total_runs);
    let mut summary = runner::new_summary(&dir);
    let mut interrupt = Interrupt::on_ctrl_c();
    let cpu_at_start = provenance::process_cpu_seconds();

    let mut n_started = 0;
    'visits: for (visit, visit_owed) in visits.iter().zip(&owed) {
        let (cell_id, engine_name, model_name) = &cell_list[visit.cell];
        let soak_left = |part: &Part| is_soak(part) && soaks.get(cell_id).is_none_or(|s| s.soaked_ms < part.step.duration_s.unwrap_or(0) * 1000);
        let todo = visit_owed.iter().flatten().any(|o| !o.places.is_empty()) || visit.parts.iter().any(soak_left);
        if !todo {
            continue;
        }
        if visit.parts.iter().any(|p| p.slots.iter().any(|s| recorded.has_any(cell_id, s)) || (is_soak(p) && soaks.contains_key(cell_id))) {
            // Resumed mid-turn: the rest of its runs come from a freshly started engine.
            info.cells.iter_mut().filter(|c| c.id == *cell_id).for_each(|c| c.restarted_on_resume = true);
        }
        n_started += 1;
        if n_started > 1 && !gap(plan.file.gaps.between_cells_s * options.gap_scale, &mut interrupt).await {
            summary.status = PassStatus::Interrupted;
            break;
        }
        let not_run = |writer: &mut PassWriter, summary: &mut PassSummary, class: &str, message: &str| -> anyhow::Result<()> {
            // A soak that could not start is one failed run, so that the report shows it.
            let soaks_left: Vec<Owed> = visit
                .parts
                .iter()
                .filter(|p| soak_left(p))
                .map(|p| Slot { step: p.step, rep: soaks.get(cell_id).map_or(0, |s| s.next_rep), warmup: false })
                .map(|slot| Owed { places: places_in_slot(cell_id, &slot), slot, attempt: 0, cut_short_at: None })
                .collect();
            let owed: Vec<&Owed> = visit_owed.iter().flatten().chain(&soaks_left).collect();
            record_not_run(writer, &progress, summary, &owed, class, message)
        };
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
            // The plan's folder, else every folder the preset knows (an engine that moved its
            // cache may still load the old one).
            let caches: Vec<PathBuf> = match &spec.kv_cache_dir {
                Some(dir) => vec![resolve(&plan_dir, dir.get_ref())],
                None => preset.kv_cache_dirs.iter().map(|d| expand_home(d)).collect(),
            };
            let started = async {
                lifecycle::make_way(&log, &health).await?;
                for cache in &caches {
                    let cleared = kv_cache::clear(cache, &protected)?;
                    let line = format!("cleared the KV cache {}: {cleared}", cache.display());
                    lifecycle::log_line(&log, &line)?;
                    progress.note(&format!("  {line}"));
                }
                let stop = spec.stop.as_ref().map(|argv| fill.fill_argv(argv));
                lifecycle::start(&argv, &spec.env, &log, &health, Duration::from_secs_f64(spec.health_timeout_s), stop).await
            }
            .await;
            match started {
                Ok(e) => engine = Some(e),
                Err(e) => {
                    // Nothing is dropped: every planned run of the turn is recorded as failed.
                    not_run(&mut writer, &mut summary, "engine-start", &format!("{e:#}"))?;
                    continue 'visits;
                }
            }
        }

        let facts = match runner::probe_server(&http, &base, api_key.as_deref(), &model_id, None).await {
            Ok(facts) => facts,
            Err(e) => {
                not_run(&mut writer, &mut summary, "connect", &format!("{e:#}"))?;
                if let Some(mut e) = engine {
                    e.stop().await;
                }
                continue 'visits;
            }
        };
        let executable = spec
            .executable
            .as_ref()
            .map(|e| e.get_ref().clone())
            .or_else(|| spec.start.as_ref().and_then(|s| s.get_ref().first().map(|p| fill.fill(p))))
            .and_then(|p| find_executable(&p));
        // The plan's command, else the preset's way, else what the generic probe found.
        let command = spec.version_command.as_ref().map(|argv| fill.fill_argv(argv));
        let (version, version_source) = match lifecycle::read_version(preset, command, executable.as_deref(), &http, &base).await {
            Some(read) => read,
            None => (facts.version.clone(), facts.version_source.clone()),
        };
        // A server benchpass did not start is sampled too, when it listens on this machine.
        let listener = if engine.is_none() { crate::memory::listener_of(&base) } else { None };
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
            memory_of: listener.as_ref().map(crate::memory::Listener::describe),
            memory_measure: (engine.is_some() || listener.is_some()).then_some(crate::platform::MEMORY_MEASURE).flatten(),
        };
        if let Some(weights) = &weights {
            cell.build = runner::hash_build(weights, options.hash_cache.as_deref(), options.progress)?;
        }
        writer.update_info(&info)?;

        let mut extra = base_request.extra.as_ref().and_then(Value::as_object).cloned().unwrap_or_default();
        extra.extend(preset.request_fields());
        extra.extend(to_json(&spec.extra));
        let sampled_pid = engine.as_ref().map(|e| e.pid()).or(listener.as_ref().map(|l| l.pid));
        let sampler = sampled_pid.map(crate::memory::MemorySampler::start);
        let ignore_eos_bias = super::eos::bias_for(engine_name, preset.ignore_eos, weights.as_deref(), steps.iter().any(|s| s.ignore_eos))
            .unwrap_or_else(|warning| {
                progress.note(&format!("  {warning}"));
                None
            });
        let cache_flush = match (preset.cache_flush, &engine) {
            (Some(flush), None) => {
                let record = lifecycle::flush_cache(&http, &base, api_key.as_deref(), flush).await;
                progress.note(&format!("  {}", lifecycle::flush_note(&record)));
                Some(record)
            }
            _ => None,
        };
        if let Some(c) = info.cells.iter_mut().find(|c| c.id == *cell_id) {
            c.cache_flush = cache_flush;
            c.request_extra = (!extra.is_empty()).then(|| Value::Object(extra.clone()));
            c.ignore_eos_logit_bias = ignore_eos_bias.clone();
            c.past_eos = Some(preset.ignore_eos);
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
            memory: sampler.as_deref(),
            metrics_url: preset.metrics_path.map(|path| format!("{base}{path}")),
            draft_log: draft_log(preset, engine.is_some().then_some(log.as_path()), listener.is_some()),
            live: Some(progress.live()),
            ignore_eos_logit_bias: ignore_eos_bias.as_ref(),
            // An engine with no way past EOS is sent nothing it would reject (or drop).
            send_ignore_eos: preset.ignore_eos != IgnoreEos::Unsupported,
            agent_cache_prompt: preset.request_extra.contains(&("cache_prompt", "false"))
                && !spec.extra.contains_key("cache_prompt")
                && base_request.extra.as_ref().is_none_or(|e| e.get("cache_prompt").is_none()),
            // Plans keep their streams busy; arrivals at a rate are for `--url` runs.
            arrivals: None,
        };
        let mut last_workload = None;
        for (part, part_owed) in visit.parts.iter().zip(visit_owed) {
            if last_workload.is_some_and(|l| l != part.workload_index) && !gap(plan.file.gaps.between_workloads_s * options.gap_scale, &mut interrupt).await {
                summary.status = PassStatus::Interrupted;
                if let Some(mut e) = engine.take() {
                    e.stop().await;
                }
                break 'visits;
            }
            last_workload = Some(part.workload_index);
            let owed_here: Vec<&Owed> = part_owed.iter().filter(|o| !o.places.is_empty()).collect();
            let finished = if owed_here.is_empty() {
                true
            } else {
                let slots: Vec<Slot> = owed_here.iter().map(|o| o.slot).collect();
                match runner::cut_slots(&slots, false, &http, &facts.counter).await {
                    Ok(jobs) => {
                        let jobs = owed_jobs(cell_id, jobs, &owed_here);
                        runner::run_jobs(&target, &jobs, &mut writer, &progress, &mut summary, &mut interrupt).await?
                    }
                    Err(e) => {
                        // The engine may have died mid-turn: the step's remaining runs are recorded as failed.
                        record_not_run(&mut writer, &progress, &mut summary, &owed_here, "prompt-cut", &format!("{e:#}"))?;
                        true
                    }
                }
            };
            let finished = finished && (!soak_left(part) || soak(&target, part.step, soaks.get(cell_id), &mut writer, &progress, &mut summary, &mut interrupt).await?);
            if !finished {
                summary.status = PassStatus::Interrupted;
                if let Some(mut e) = engine.take() {
                    e.stop().await;
                }
                break 'visits;
            }
        }
        drop(sampler);
        if let Some(mut e) = engine {
            e.stop().await;
        }
    }
    progress.finish();
    if summary.status == PassStatus::Complete {
        // Counted on disk, against every place of the plan: `complete` is a claim about the
        // whole pass, whatever this run and the ones before it did.
        writer.sync()?;
        let on_disk = Recorded::of(&crate::pass::store::read_pass_keeping(&dir, |_| |_| false)?.runs)?;
        let planned: Vec<JobPlace> = visits
            .iter()
            .flat_map(|v| v.parts.iter().flat_map(move |p| p.slots.iter().map(move |s| (v.cell, s))))
            .flat_map(|(cell, slot)| places_in_slot(&cell_list[cell].0, slot))
            .collect();
        let missing = on_disk.missing(&planned);
        if !missing.is_empty() {
            eprintln!("{}", crate::progress::printable(&not_complete(&missing, planned.len(), &dir)));
            summary.status = PassStatus::Interrupted;
        }
    }
    runner::finish(&mut info, &writer, &summary, cpu_at_start)?;
    Ok(summary)
}

/// How far a cell's soak got before an interruption.
struct SoakSoFar {
    /// Time covered by its runs, from the first's start to the last's start.
    soaked_ms: u64,
    next_rep: u32,
}

fn soaks_so_far(runs: &[RunRecord]) -> std::collections::HashMap<String, SoakSoFar> {
    let mut soaks = std::collections::HashMap::new();
    for run in runs.iter().filter(|r| r.workload == Workload::Soak && !r.warmup) {
        let entry = soaks.entry(run.cell.clone()).or_insert((u64::MAX, 0, 0));
        entry.0 = entry.0.min(run.started_unix_ms);
        entry.1 = entry.1.max(run.started_unix_ms);
        entry.2 = entry.2.max(run.rep + 1);
    }
    soaks.into_iter().map(|(cell, (first, last, next_rep))| (cell, SoakSoFar { soaked_ms: last - first, next_rep })).collect()
}

/// Failed soak runs in a row after which the soak ends before its time.
const SOAK_GIVES_UP_AFTER: u32 = 5;

/// Runs `step` back to back until its duration is covered (what an earlier, interrupted
/// attempt covered counts). False when Ctrl-C stopped it.
async fn soak(
    target: &Target<'_>,
    step: Step,
    so_far: Option<&SoakSoFar>,
    writer: &mut PassWriter,
    progress: &Progress,
    summary: &mut PassSummary,
    interrupt: &mut Interrupt,
) -> anyhow::Result<bool> {
    let duration_ms = step.duration_s.unwrap_or(0) * 1000;
    let left = Duration::from_millis(duration_ms.saturating_sub(so_far.map_or(0, |s| s.soaked_ms)));
    let deadline = tokio::time::Instant::now() + left;
    let mut rep = so_far.map_or(0, |s| s.next_rep);
    progress.note(&format!("  soak: runs back to back for {}", duration(left.as_secs_f64())));
    let mut failed_in_a_row = 0;
    while tokio::time::Instant::now() < deadline {
        progress.expect_more(1);
        let jobs = runner::cut_slots(&[Slot { step, rep, warmup: false }], false, target.http, target.counter).await?;
        let failed_before = summary.n_failed;
        if !runner::run_jobs(target, &jobs, writer, progress, summary, interrupt).await? {
            return Ok(false);
        }
        rep += 1;
        failed_in_a_row = if summary.n_failed > failed_before { failed_in_a_row + 1 } else { 0 };
        // A dead engine fails at once: without this, hours of failed runs would fill the disk.
        if failed_in_a_row == SOAK_GIVES_UP_AFTER {
            progress.note(&format!("  soak stopped early: {SOAK_GIVES_UP_AFTER} runs in a row failed (they are recorded)"));
            break;
        }
    }
    Ok(true)
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

/// Records every place `owed` that could not run (each turn of a session, each prompt of a
/// round), with the reason.
fn record_not_run(writer: &mut PassWriter, progress: &Progress, summary: &mut PassSummary, owed: &[&Owed], class: &str, message: &str) -> anyhow::Result<()> {
    for (o, place) in owed.iter().flat_map(|o| o.places.iter().map(move |p| (o, p))) {
        let run = place.not_run(o.slot.step.max_tokens, o.attempt, RunError { class: class.to_owned(), message: message.to_owned() });
        writer.append(&run)?;
        progress.on_run(&run);
        runner::tally(summary, &run);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(workload: Workload) -> Step {
        Step { workload, target_prompt_tokens: 0, max_tokens: 8, warmup: 0, runs: 1, ignore_eos: false, duration_s: None, top_logprobs: None, concurrency: None }
    }

    /// A record of each of `places` at `attempt` (failed ones: a failed run is a run).
    fn runs_of(places: &[JobPlace], attempt: u32) -> Vec<RunRecord> {
        places.iter().map(|p| p.not_run(8, attempt, RunError { class: "connect".to_owned(), message: String::new() })).collect()
    }

    #[test]
    fn a_pass_missing_a_planned_job_is_not_complete_and_says_which() {
        let slot = Slot { step: step(Workload::Agent), rep: 0, warmup: false };
        let planned = places_in_slot("c0", &slot);
        assert!(planned.len() >= 10, "a session's turns");
        let every = runs_of(&planned, 0);
        assert!(Recorded::of(&every).unwrap().missing(&planned).is_empty());

        let mut one_lost = every.clone();
        one_lost.remove(3);
        let recorded = Recorded::of(&one_lost).unwrap();
        let missing = recorded.missing(&planned);
        assert_eq!(missing, [&planned[3]]);
        let message = not_complete(&missing, planned.len(), std::path::Path::new("p"));
        assert!(message.contains(&format!("1 of its {} planned runs are not in runs.jsonl (c0 agent session 0 turn 3)", planned.len())), "{message}");

        // Runs of a superseded attempt fill no place: a second attempt that got 3 turns far
        // leaves the rest missing, however whole the first one was.
        let mut retried = every;
        retried.extend(runs_of(&planned[..3], 1));
        assert_eq!(Recorded::of(&retried).unwrap().missing(&planned), planned[3..].iter().collect::<Vec<_>>());
    }

    #[test]
    fn a_session_cut_short_is_owed_again_whole_and_a_round_only_its_missing_prompts() {
        let session = Slot { step: step(Workload::Agent), rep: 0, warmup: false };
        let turns = places_in_slot("c0", &session);
        let owed = Recorded::of(&runs_of(&turns[..4], 0)).unwrap().owed("c0", session);
        assert_eq!((owed.places.len(), owed.attempt, owed.cut_short_at), (turns.len(), 1, Some(4)));
        // Cut short again, at its second attempt: the third one runs it whole.
        let mut twice = runs_of(&turns[..4], 0);
        twice.extend(runs_of(&turns[..2], 1));
        let owed = Recorded::of(&twice).unwrap().owed("c0", session);
        assert_eq!((owed.places.len(), owed.attempt, owed.cut_short_at), (turns.len(), 2, Some(2)));
        // Whole, or not begun: nothing, or everything at the first attempt.
        assert!(Recorded::of(&runs_of(&turns, 0)).unwrap().owed("c0", session).places.is_empty());
        let fresh = Recorded::default().owed("c0", session);
        assert_eq!((fresh.places.len(), fresh.attempt, fresh.cut_short_at), (turns.len(), 0, None));

        let round = Slot { step: step(Workload::Quality), rep: 0, warmup: false };
        let prompts = places_in_slot("c0", &round);
        let owed = Recorded::of(&runs_of(&prompts[..5], 0)).unwrap().owed("c0", round);
        assert_eq!((owed.places, owed.attempt, owed.cut_short_at), (prompts[5..].to_vec(), 0, None));
    }

    #[test]
    fn an_attempt_that_leaves_no_number_for_the_next_is_refused() {
        let slot = Slot { step: step(Workload::Agent), rep: 0, warmup: false };
        let error = Recorded::of(&runs_of(&places_in_slot("c0", &slot)[..1], u32::MAX)).err().unwrap().to_string();
        assert!(error.contains("run 1 of runs.jsonl has attempt 4294967295"), "{error}");
    }
}
