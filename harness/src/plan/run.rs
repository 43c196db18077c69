//! The one executor: a pass of cells, each its engine started fresh (or, for a server benchpass
//! did not start, probed and flushed), its version and hashes captured, its workloads run with
//! their gaps, stopped — into one pass. A plan file (`benchpass run PLAN.toml`) is such a pass
//! of many cells; `benchpass run --url` is one of one cell whose engine benchpass does not start
//! ([`crate::runner::run_pass`] builds it). Resuming an interrupted pass is here too.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::Value;

use super::file::{expand_home, find_executable, resolve, EngineSpec, Plan, PlanFile};
use super::kv_cache;
use super::lifecycle::{self, Placeholders};
use super::presets::{self, IgnoreEos, Preset};
use crate::client::{Api, RequestConfig};
use crate::pass::*;
use crate::progress::{Progress, ProgressMode};
use crate::provenance;
use crate::runner::{self, all_slots, places_in_slot, Arrivals, Interrupt, Job, JobPlace, PassSummary, Slot, Target};

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
    /// The reference engine the client is checked against before the first cell
    /// (`crate::self_check`); `None` skips the check.
    pub self_check: Option<crate::self_check::SelfCheckServer>,
    /// `--stop-at-saturation`: after each level of a sweep, what the pass on disk says of its
    /// sweeps (`None`: every level runs).
    pub saturation: Option<Saturation>,
}

/// Given the pass folder, the sweeps whose last two levels were both past their knee, as (cell,
/// workload, target). The caller decides it (the rule is the analysis's, which the harness
/// does not link); the executor stops those sweeps and records it.
#[derive(Clone)]
pub struct Saturation(pub std::sync::Arc<SaturationCheck>);

/// A sweep as (cell, workload, target).
pub type SweepId = (String, Workload, u64);
pub type SaturationCheck = dyn Fn(&std::path::Path) -> anyhow::Result<Vec<SweepId>> + Send + Sync;

impl std::fmt::Debug for Saturation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Saturation(..)")
    }
}

/// What one pass is to run, whether a plan file or `benchpass run --url` described it: its
/// cells, the steps each runs and in what order, and the request every cell's is made from.
pub struct PassPlan<'a> {
    /// Names the pass in its default id: the plan's name, or a `--url` run's engine.
    pub name: String,
    pub form: Form,
    pub cells: Vec<CellPlan>,
    /// In order, each with the index of the workload it comes from: a gap separates workloads.
    pub steps: Vec<(usize, Step)>,
    pub order: Order,
    /// The request every cell's is made from: the cell gives the model, and its `extra` lies
    /// under each cell's preset and the cell's own fields.
    pub request: RequestConfig,
    /// What `pass.json` records as the request's `extra`: a plan's `[request] extra`, or the
    /// fields a `--url` run's one cell sends.
    pub recorded_extra: Option<Value>,
    /// Streams in flight, unless a step has its own.
    pub concurrency: u32,
    /// Requests at Poisson arrivals (`--request-rate`) instead of busy streams.
    pub arrivals: Option<Arrivals>,
    /// The objectives goodput is counted against (`--slo`).
    pub slo: Option<benchpass_format::Slo>,
    /// Seconds between one workload and the next within a cell, and between cells (before the
    /// gap scale).
    pub between_workloads_s: f64,
    pub between_cells_s: f64,
    /// The plan file and its folder: what a KV-cache clear must never reach besides the
    /// machine's own folders and the pass's (the plan's folder and above it, its weights and
    /// executables). `None` for a `--url` run, which starts no engine.
    pub source: Option<(&'a PlanFile, PathBuf)>,
}

/// Where a pass came from, for what the tests and the user know it by: the command line's
/// `--url` or a plan file. Each difference it makes is decided in one place: [`Form::ready_before_the_pass`],
/// [`Form::announces_cells`], and the dry run's wording ([`dry_run_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `benchpass run --url`: one cell whose engine benchpass does not start.
    Url,
    /// A plan file.
    Plan,
}

impl Form {
    /// A `--url` run's one cell is made ready (probed, read, hashed, its prompts cut) before
    /// anything is written, so that a server that cannot be measured leaves no pass and its
    /// reason is the command's error. A plan's cells are made ready in their turn, and one that
    /// cannot be has its runs recorded as failed, with the reason, while the plan goes on.
    fn ready_before_the_pass(self) -> bool {
        self == Form::Url
    }

    /// A plan's progress says which cell's turn begins; a `--url` run has one cell, named on
    /// the command line.
    fn announces_cells(self) -> bool {
        self == Form::Plan
    }
}

/// One cell of a pass: an engine and a model, and how benchpass meets the engine.
pub struct CellPlan {
    pub id: String,
    pub engine: String,
    /// How the dry run and the progress name the model: the plan's name for it, or a `--url`
    /// run's model.
    pub model_named: String,
    /// The id requests ask for; `None`: the one model the server lists, picked when the cell
    /// runs (and recorded as picked).
    pub model: Option<String>,
    pub family: Option<String>,
    pub lane: String,
    /// What benchpass knows of the engine (version, metrics, way past EOS, request fields,
    /// cache flush); `None` for a plain OpenAI-compatible server (`--url` without `--preset`).
    pub preset: Option<&'static Preset>,
    /// The server's address as given (its placeholders filled).
    pub url: String,
    /// The lifecycle step: how benchpass starts the engine fresh. `None` for a server benchpass
    /// did not start, which it never clears or stops (its prefix cache is flushed, where the
    /// preset says how).
    pub start: Option<Start>,
    /// The version the user gave (`--engine-version`): recorded as said, nothing read.
    pub version: Option<String>,
    /// The plan's command for the version (over the preset's way).
    pub version_command: Option<Vec<String>>,
    /// The engine's executable, hashed and handed to the preset's version command.
    pub executable: Option<PathBuf>,
    /// How a failure to hash the executable names it: `--engine-path`, or `hashing`.
    pub executable_named: &'static str,
    pub weights: Option<PathBuf>,
    /// Request fields over the preset's: the plan's engine `extra`, or `--extra`.
    pub extra: serde_json::Map<String, Value>,
}

/// How benchpass starts an engine.
pub struct Start {
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub stop: Option<Vec<String>>,
    pub health_path: String,
    pub health_timeout_s: f64,
    /// KV-cache folders emptied before it starts, as the dry run names them and as cleared.
    pub kv_caches_named: Vec<String>,
    pub kv_caches: Vec<PathBuf>,
    /// The preset's rule for its cache folder, followed again right before each clear (in
    /// place of `kv_caches`) where the plan names no `kv_cache_dir`: oMLX's.
    pub kv_cache_lookup: Option<presets::CacheFolderLookup>,
}

impl Start {
    /// The folder the preset's rule gives now, for this command and environment.
    fn found_cache_folder(&self) -> Option<super::engine_files::FoundCacheFolder> {
        let lookup = self.kv_cache_lookup.as_ref()?;
        let env = |name: &str| self.env.get(name).cloned().or_else(|| std::env::var(name).ok());
        Some(super::engine_files::cache_folder(lookup, &self.argv, &env, crate::platform::home_dir().as_deref()))
    }
}

impl<'a> PassPlan<'a> {
    /// The pass a plan file describes.
    pub fn of_plan(plan: &'a Plan) -> PassPlan<'a> {
        let request = &plan.file.request;
        let plan_dir = plan.path.parent().map(PathBuf::from).unwrap_or_default();
        let base_request = RequestConfig {
            api: if request.api.get_ref() == "completions" { Api::Completions } else { Api::Chat },
            model: String::new(),
            temperature: request.temperature,
            seed: None,
            ignore_eos: false,
            min_tokens: None,
            extra: (!request.extra.is_empty()).then(|| Value::Object(to_json(&request.extra))),
            headers: Vec::new(),
            first_token_timeout: Duration::from_secs_f64(request.first_token_timeout_s),
            idle_timeout: Duration::from_secs_f64(request.idle_timeout_s),
        };
        let cells = plan.file.cells.iter().enumerate().map(|(i, c)| cell_of_plan(plan, &plan_dir, i, c.engine.get_ref(), c.model.get_ref())).collect();
        PassPlan {
            name: plan.file.name.clone().unwrap_or_else(|| {
                plan.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "plan".to_owned())
            }),
            form: Form::Plan,
            cells,
            steps: plan.steps.clone(),
            order: plan.order,
            recorded_extra: base_request.extra.clone(),
            request: base_request,
            concurrency: request.concurrency,
            arrivals: None,
            slo: request.objectives(),
            between_workloads_s: plan.file.gaps.between_workloads_s,
            between_cells_s: plan.file.gaps.between_cells_s,
            source: Some((&plan.file, plan_dir)),
        }
    }
}

/// Cell `i` of a plan: its engine `engine_name` with its model `model_name`.
fn cell_of_plan(plan: &Plan, plan_dir: &std::path::Path, i: usize, engine_name: &str, model_name: &str) -> CellPlan {
    let spec = plan.engine(engine_name);
    let preset = preset_of(spec);
    let model = plan.model(model_name);
    let model_id = model.id.clone().unwrap_or_else(|| model.name.get_ref().clone());
    let weights = model.weights.as_ref().map(|w| resolve(plan_dir, w.get_ref()));
    let fill = Placeholders { port: spec.port, model: model_id.clone(), weights: weights.clone() };
    let url = match (&spec.url, spec.port) {
        (Some(url), _) => fill.fill(url),
        (None, Some(port)) => format!("http://127.0.0.1:{port}"),
        (None, None) => unreachable!("checked: an engine has a url or a port"),
    };
    let start = spec.start.as_ref().map(|start| Start {
        argv: fill.fill_argv(start.get_ref()),
        env: spec.env.clone(),
        stop: spec.stop.as_ref().map(|argv| fill.fill_argv(argv)),
        health_path: spec.health_path.clone().unwrap_or_else(|| preset.health_path.to_owned()),
        health_timeout_s: spec.health_timeout_s,
        // The plan's folder, else every folder the preset knows (an engine that moved its
        // cache may still load the old one).
        kv_caches_named: match &spec.kv_cache_dir {
            Some(dir) => vec![dir.get_ref().clone()],
            None => preset.kv_cache_dirs.iter().map(|d| (*d).to_owned()).collect(),
        },
        kv_caches: match &spec.kv_cache_dir {
            Some(dir) => vec![resolve(plan_dir, dir.get_ref())],
            None => preset.kv_cache_dirs.iter().map(|d| expand_home(d)).collect(),
        },
        kv_cache_lookup: preset.kv_cache_lookup.filter(|_| spec.kv_cache_dir.is_none()),
    })
    .map(|mut start| {
        if let Some(found) = start.found_cache_folder() {
            let named = found.dir.as_ref().map_or_else(|| "none".to_owned(), |d| d.display().to_string());
            start.kv_caches_named = vec![format!("{named} ({}; found again right before the clear)", found.rule)];
        }
        start
    });
    CellPlan {
        id: format!("c{i}"),
        engine: engine_name.to_owned(),
        model_named: model_name.to_owned(),
        family: model.family.clone(),
        lane: model.lane.clone(),
        preset: Some(preset),
        url,
        version: None,
        // The plan's command, else the preset's way, else what the generic probe finds.
        version_command: spec.version_command.as_ref().map(|argv| fill.fill_argv(argv)),
        executable: spec
            .executable
            .as_ref()
            .map(|e| e.get_ref().clone())
            .or_else(|| spec.start.as_ref().and_then(|s| s.get_ref().first().map(|p| fill.fill(p))))
            .and_then(|p| find_executable(&p)),
        executable_named: "hashing",
        weights,
        extra: to_json(&spec.extra),
        model: Some(model_id),
        start,
    }
}

/// The fields a cell's requests carry beyond benchpass's own: `under` (a plan's `[request]
/// extra`), then the preset's, then `over` (the engine's `extra`, or `--extra`), each over the
/// ones before; `None` when there are none.
pub(crate) fn request_extra(under: Option<&Value>, preset: Option<&Preset>, over: &serde_json::Map<String, Value>) -> Option<Value> {
    let mut extra = under.and_then(Value::as_object).cloned().unwrap_or_default();
    extra.extend(preset.map(Preset::request_fields).unwrap_or_default());
    extra.extend(over.clone());
    (!extra.is_empty()).then_some(Value::Object(extra))
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

fn schedule(pass: &PassPlan<'_>) -> Vec<Visit> {
    let n_cells = pass.cells.len();
    match pass.order {
        Order::Sequential => (0..n_cells)
            .map(|cell| Visit {
                cell,
                parts: pass.steps.iter().map(|&(w, step)| Part { workload_index: w, step, slots: all_slots(&[step]) }).collect(),
            })
            .collect(),
        Order::Interleaved => {
            let rounds = pass.steps.iter().map(|(_, s)| s.runs).max().unwrap_or(0);
            let mut visits = Vec::new();
            for round in 0..rounds {
                for cell in 0..n_cells {
                    let parts = pass
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

/// A plan's schedule and what it costs in waiting, without running anything.
pub fn dry_run(plan: &Plan, gap_scale: f64) -> String {
    dry_run_of(&PassPlan::of_plan(plan), gap_scale)
}

/// What `pass` would do, without touching a server or the disk: each cell's turn (its engine
/// started, or its server's cache flushed), each step's runs, and what it all costs. A
/// `--url` run's wording is its own (the URL, the streams and sessions of each step, the
/// decode time at its concurrency); a plan's names its gaps, soaks and whole duration.
pub fn dry_run_of(pass: &PassPlan<'_>, gap_scale: f64) -> String {
    let mut out = String::new();
    let mut waiting = 0.0;
    let mut soaking = 0.0;
    let mut runs = 0;
    let mut tokens = 0;
    if pass.order == Order::Interleaved {
        out.push_str("order: interleaved (round k runs repetition k of every cell, each engine started fresh and warmed up for its turn)\n");
    }
    for (n, visit) in schedule(pass).iter().enumerate() {
        let cell = &pass.cells[visit.cell];
        if n > 0 {
            let gap = pass.between_cells_s * gap_scale;
            waiting += gap;
            out.push_str(&format!("  wait {gap:.0} s between cells\n"));
        }
        let at = match pass.form {
            Form::Url => format!(" at {}", cell.url),
            Form::Plan => String::new(),
        };
        out.push_str(&format!("{}: {} × {}{at}\n", cell.id, cell.engine, cell.model_named));
        if let Some(start) = &cell.start {
            for cache in &start.kv_caches_named {
                out.push_str(&format!("  clear KV cache {cache}\n"));
            }
            out.push_str(&format!("  start, wait for health (at most {:.0} s)\n", start.health_timeout_s));
        }
        if let Some(line) = cell.preset.and_then(|p| p.dry_run_flush(cell.start.is_some())) {
            out.push_str(&line);
        }
        let mut last_workload = None;
        for part in &visit.parts {
            if last_workload.is_some_and(|l| l != part.workload_index) {
                let gap = pass.between_workloads_s * gap_scale;
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
            // Agent runs are sessions of many turns and quality runs rounds of many prompts: a
            // `--url` run counts them so (their requests are known once their prompts are read).
            let unit = match step.workload {
                Workload::Agent => "sessions",
                Workload::Quality => "rounds",
                _ => "runs",
            };
            let (streams, reps) = match (pass.form, pass.order, is_soak(part)) {
                (Form::Url, _, _) => (step.concurrency.map_or(String::new(), |n| format!(" at {n} streams")), format!("{measured} {unit}")),
                (Form::Plan, _, true) => (String::new(), format!("runs back to back for {}", duration(step.duration_s.unwrap_or(0) as f64))),
                (Form::Plan, Order::Interleaved, false) => (String::new(), format!("rep {}", part.slots.last().map_or(0, |s| s.rep))),
                (Form::Plan, Order::Sequential, false) => (String::new(), format!("{measured} runs")),
            };
            // Planned as possibly short: the engine cannot be held to the cap.
            let may_stop_short = cell.preset.map(|p| p.dry_run_stop_short(step.ignore_eos || pass.request.ignore_eos)).unwrap_or_default();
            out.push_str(&format!("  {what}{streams}: {warmups} warmup + {reps} × {} tokens{may_stop_short}\n", step.max_tokens));
            let part_runs: u64 = part.slots.iter().map(runner::runs_in_slot).sum();
            runs += part_runs;
            tokens += part_runs * step.max_tokens;
            soaking += step.duration_s.unwrap_or(0) as f64;
        }
        if cell.start.is_some() {
            out.push_str("  stop\n");
        }
    }
    // Decode time depends on the engine; 30 tok/s is a slow laptop's, so the estimate is high.
    let decode = tokens as f64 / 30.0;
    match pass.form {
        Form::Url => out.push_str(&format!(
            "\n{runs} runs, {tokens} tokens at concurrency {}: about {:.0} s of decoding at 30 tok/s a stream\n",
            pass.concurrency,
            decode / f64::from(pass.concurrency.max(1))
        )),
        Form::Plan => {
            let soak = if soaking > 0.0 { format!(" + {soaking:.0} s of soak") } else { String::new() };
            out.push_str(&format!(
                "\n{} cells, {runs} runs, {tokens} tokens: {waiting:.0} s of gaps{soak} + about {decode:.0} s of decoding at 30 tok/s ≈ {}\n",
                pass.cells.len(),
                duration(waiting + soaking + decode)
            ));
        }
    }
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
    plan.ready_to_run()?;
    execute(&PassPlan::of_plan(plan), options).await
}

/// A cell whose server answers, and what was learned and recorded of it before its runs.
struct Ready {
    base: String,
    model: String,
    facts: runner::ServerFacts,
    engine: EngineInfo,
    build: Option<BuildInfo>,
    /// The process listening at the cell's URL, for a server benchpass did not start on this machine.
    listener: Option<crate::memory::Listener>,
    /// The cell's request fields (under, preset, over), as its requests carry them.
    extra: Option<Value>,
    ignore_eos_bias: Option<Value>,
    cache_flush: Option<CacheFlushRecord>,
    probed: Option<ProbedBehaviour>,
}

/// Why a cell could not be made ready: its planned runs are recorded as failed with `class`
/// (or, for a pass made ready before it begins, the pass is not made).
struct NotReady {
    class: &'static str,
    error: anyhow::Error,
}

/// What every cell's turn shares.
struct Shared<'a> {
    pass: &'a PassPlan<'a>,
    http: reqwest::Client,
    api_key: Option<String>,
    options: &'a PlanRunOptions,
}

impl Shared<'_> {
    /// Probes the cell's server, reads its version, hashes its executable and weights, and
    /// works out its request fields and EOS bias: what the cell's record holds before its
    /// first run, but for the cache flush ([`Shared::flush`]). `started`: benchpass started the engine. Lines about
    /// what it did go to `say`. An error out of it is one the pass cannot go on from (a file
    /// that cannot be hashed); a server that does not answer is `NotReady`.
    async fn make_ready(&self, cell: &CellPlan, base: String, started: bool, say: &dyn Fn(&str)) -> anyhow::Result<Result<Ready, NotReady>> {
        let (http, api_key) = (&self.http, self.api_key.as_deref());
        let model = match &cell.model {
            Some(model) => model.clone(),
            None => match runner::pick_model(http, &base, api_key).await {
                Ok(model) => {
                    say(&format!("model: {model} (the only model {base}/v1/models lists)"));
                    model
                }
                Err(error) => return Ok(Err(NotReady { class: "connect", error })),
            },
        };
        let facts = match runner::probe_server(http, &base, api_key, &model, cell.version.as_deref()).await {
            Ok(facts) => facts,
            Err(error) => return Ok(Err(NotReady { class: "connect", error })),
        };
        let read = match (cell.preset, &cell.version) {
            (Some(preset), None) => lifecycle::read_version(preset, cell.version_command.clone(), cell.executable.as_deref(), http, &base).await,
            _ => None,
        };
        let (version, version_source) = read.unwrap_or_else(|| (facts.version.clone(), facts.version_source.clone()));
        // A server benchpass did not start is sampled too, when it listens on this machine.
        let listener = if started { None } else { crate::memory::listener_of(&base) };
        let engine = EngineInfo {
            name: cell.engine.clone(),
            version,
            version_source,
            sha256: match &cell.executable {
                Some(exe) => Some(provenance::hash_file(exe, &|_| {}).with_context(|| format!("{} {}", cell.executable_named, exe.display()))?),
                None => None,
            },
            url: Some(base.clone()),
            memory_of: listener.as_ref().map(crate::memory::Listener::describe),
            memory_measure: (started || listener.is_some()).then_some(crate::platform::MEMORY_MEASURE).flatten(),
            // Read at the cell's end (runner::record_cell_memory).
            memory_lifetime_peak_bytes: None,
            weights_mapped: None,
        };
        let build = match &cell.weights {
            Some(weights) => Some(runner::hash_build(weights, self.options.hash_cache.as_deref(), self.options.progress)?),
            None => None,
        };
        let extra = request_extra(self.pass.request.extra.as_ref(), cell.preset, &cell.extra);
        let asked_past_eos = self.pass.request.ignore_eos || self.pass.steps.iter().any(|(_, s)| s.ignore_eos);
        let ignore_eos_bias = match cell.preset {
            Some(preset) => super::eos::bias_for(&cell.engine, preset.ignore_eos, cell.weights.as_deref(), asked_past_eos).unwrap_or_else(|warning| {
                say(&warning);
                None
            }),
            None => None,
        };
        Ok(Ok(Ready { base, model, facts, engine, build, listener, extra, ignore_eos_bias, cache_flush: None, probed: None }))
    }

    /// What comes last before a cell's runs: its preset's assumed values checked against the
    /// server ([`Shared::probe_assumed`]), then its prefix cache emptied ([`Shared::flush`]),
    /// so that the probe's requests are not left in the cache the runs meet.
    async fn before_runs(&self, cell: &CellPlan, ready: &mut Ready, started: bool, say: &dyn Fn(&str)) {
        self.probe_assumed(cell, ready, started, say).await;
        self.flush(cell, ready, started, say).await;
    }

    /// Where `cell`'s preset assumes what the stream carries or how to run past EOS, asks the
    /// server (`probe::assumed_behaviour`), keeps the findings for the cell's record and says
    /// each contradiction of the preset as a warning.
    /// Not where the probe's prompt would stay in a cache the runs measure from cold: agent
    /// sessions on an engine whose prefix cache benchpass cannot empty after it (its chat
    /// template's opening would be cached before the first turn); the cell says so instead.
    async fn probe_assumed(&self, cell: &CellPlan, ready: &mut Ready, started: bool, say: &dyn Fn(&str)) {
        let Some(preset) = cell.preset else { return };
        let assumes = crate::probe::PROBED_KEYS.iter().any(|k| preset.is_assumed(k));
        let agent = self.pass.steps.iter().any(|(_, s)| s.workload == Workload::Agent);
        if assumes && agent && preset.cache_flush_for(started).is_none() {
            let note = format!(
                "the {} preset's assumed values were not checked: the probe's prompt would stay in the engine's prefix cache, \
                 which benchpass cannot empty before the agent sessions that measure it from cold",
                preset.name
            );
            say(&format!("note: {note}"));
            ready.probed = Some(ProbedBehaviour { notes: vec![note], ..ProbedBehaviour::default() });
            return;
        }
        let headers = preset.headers_for(false).into_iter().map(|(n, v)| (n.to_owned(), v.to_owned())).collect();
        let request = RequestConfig { model: ready.model.clone(), extra: ready.extra.clone(), headers, ..self.pass.request.clone() };
        let url = format!("{}{}", ready.base, Api::Chat.path());
        let probed = crate::probe::assumed_behaviour(&self.http, &url, self.api_key.as_deref(), &request, preset).await;
        for note in probed.iter().flat_map(|p| &p.notes) {
            say(&format!("warning: {note}"));
        }
        ready.probed = probed;
    }

    /// Empties the engine's prefix cache where its preset says how: a server benchpass did not
    /// start, or every cell's where the cache is one a fresh engine fills too (MTPLX's, keyed on
    /// the prompt, holds the probe's requests): the last thing before the cell's runs, so that nothing the pass sends fills it again
    /// before they start.
    async fn flush(&self, cell: &CellPlan, ready: &mut Ready, started: bool, say: &dyn Fn(&str)) {
        if let Some(flush) = cell.preset.and_then(|p| p.cache_flush_for(started)) {
            let record = lifecycle::flush_cache(&self.http, &ready.base, self.api_key.as_deref(), flush).await;
            say(&lifecycle::flush_note(&record));
            ready.cache_flush = Some(record);
        }
    }

    /// Writes what `ready` learned of `cell` into its record.
    fn record(&self, info: &mut PassInfo, cell: &CellPlan, ready: &Ready) {
        let record = info.cells.iter_mut().find(|c| c.id == cell.id).expect("every cell is recorded");
        if cell.model.is_none() {
            record.model = ready.model.clone();
        }
        record.engine = ready.engine.clone();
        if let Some(build) = &ready.build {
            record.build = build.clone();
        }
        record.cache_flush = ready.cache_flush.clone();
        record.probed = ready.probed.clone();
        // A plain server's fields are the request's, recorded there.
        record.request_extra = cell.preset.and(ready.extra.clone());
        record.ignore_eos_logit_bias = ready.ignore_eos_bias.clone();
        record.past_eos = cell.preset.map(|p| p.ignore_eos);
    }

    /// Starts `cell`'s engine fresh: an orphan of a killed pass stopped, anything else on its
    /// port refused, its KV caches cleared, then started and waited on until healthy.
    async fn start_engine(base: &str, start: &Start, log: &std::path::Path, protected: &kv_cache::Protected, progress: &Progress) -> anyhow::Result<lifecycle::Engine> {
        let health = format!("{base}{}", start.health_path);
        lifecycle::make_way(log, &health).await?;
        // The preset's rule followed now (a settings file may have changed since the last
        // cell), and which part of it gave the folder said where the clear is recorded.
        let found = start.found_cache_folder();
        let caches: Vec<PathBuf> = match &found {
            Some(found) => found.dir.iter().cloned().collect(),
            None => start.kv_caches.clone(),
        };
        if let Some(found) = found.as_ref().filter(|f| !f.enabled()) {
            let line = format!("no KV-cache folder to clear: {}", found.rule);
            lifecycle::log_line(log, &line)?;
            progress.note(&format!("  {line}"));
        }
        for cache in &caches {
            let cleared = kv_cache::clear(cache, protected)?;
            let from = found.as_ref().map(|f| format!(" (from {})", f.rule)).unwrap_or_default();
            let line = format!("cleared the KV cache {}{from}: {cleared}", cache.display());
            lifecycle::log_line(log, &line)?;
            progress.note(&format!("  {line}"));
            if found.is_some() && cleared.entries() == 0 {
                let line = format!(
                    "warning: the KV-cache folder {} was empty while the engine's cache is on: if the engine keeps its cache elsewhere, set `kv_cache_dir` on the engine in the plan",
                    cache.display()
                );
                lifecycle::log_line(log, &line)?;
                progress.note(&format!("  {line}"));
            }
        }
        lifecycle::start(&start.argv, &start.env, log, &health, Duration::from_secs_f64(start.health_timeout_s), start.stop.clone()).await
    }

    /// The jobs of the places `owed` in `cell`, their prompts cut.
    async fn cut(&self, cell: &str, owed: &[&Owed], counter: &crate::probe::TokenCounter) -> anyhow::Result<Vec<Job>> {
        let slots: Vec<Slot> = owed.iter().map(|o| o.slot).collect();
        let jobs = runner::cut_slots(&slots, self.pass.request.ignore_eos, &self.http, counter).await?;
        Ok(owed_jobs(cell, jobs, owed))
    }
}

/// How long the idle baseline before each cell samples energy: `BENCHPASS_ENERGY_IDLE_S`
/// seconds (whole seconds, at most 600), else 3 (docs/metrics.md "Energy").
fn idle_baseline() -> std::time::Duration {
    let secs = std::env::var("BENCHPASS_ENERGY_IDLE_S").ok().and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(3).min(600);
    std::time::Duration::from_secs(secs)
}

/// Runs `pass`: each cell in its turns (its engine started fresh, or its server probed and
/// flushed), its steps with their gaps, every run appended as it ends; the pass of
/// `options.resume` finished instead of a new one, where given.
pub async fn execute(pass: &PassPlan<'_>, options: PlanRunOptions) -> anyhow::Result<PassSummary> {
    // Before any engine starts: a translated benchpass would start them translated too.
    let starts_engines = pass.cells.iter().any(|c| c.start.is_some());
    if let Some(note) = provenance::mac::rosetta_decision(provenance::mac::rosetta_now(), starts_engines).map_err(anyhow::Error::msg)? {
        eprintln!("{note}");
    }
    let started_at = provenance::utc_now_rfc3339();
    let api_key = runner::api_key(options.api_key_env.as_deref())?;
    let most_streams = pass.steps.iter().filter_map(|(_, s)| s.concurrency).fold(pass.concurrency, u32::max);
    let shared = Shared { pass, http: runner::http_client(most_streams)?, api_key, options: &options };
    let steps: Vec<Step> = pass.steps.iter().map(|(_, s)| *s).collect();
    let visits = schedule(pass);
    // One sampler of the machine's state for the whole pass, beside the runs: no run reads the
    // OS itself. And the machine kept awake until the pass ends (platform::awake).
    let machine = crate::sampler::MachineSampler::start();
    // Said once, when the first cell is ready (a pass that reaches no server says only that).
    let mut energy_said = false;
    let awake = crate::platform::awake::keep_awake();
    anyhow::ensure!(
        !pass.form.ready_before_the_pass() || (visits.len() == 1 && pass.cells.iter().all(|c| c.start.is_none()) && options.resume.is_none()),
        "a pass made ready before it begins has one cell, started by no one, and is not resumed"
    );

    // What each slot of each visit still owes, in the schedule's order: everything, or what a
    // resumed pass lacks.
    let (resumed, recorded, soaks) = match &options.resume {
        Some(dir) => {
            let (info, recorded, soaks) = read_resumed(pass, dir)?;
            (Some(info), recorded, soaks)
        }
        None => (None, Recorded::default(), HashMap::new()),
    };
    let owed: Vec<Vec<Vec<Owed>>> = visits
        .iter()
        .map(|v| v.parts.iter().map(|p| p.slots.iter().map(|&s| recorded.owed(&pass.cells[v.cell].id, s)).collect()).collect())
        .collect();

    // Before anything is written: every port an engine benchpass starts is free (an engine a
    // killed pass left running stopped first), or the pass is not made.
    if let Some(dir) = &options.resume {
        lifecycle::stop_orphans(dir).await;
    }
    lifecycle::check_ports(pass.cells.iter().filter(|c| c.start.is_some()).map(|c| (c.engine.as_str(), c.url.as_str())))?;

    // Before anything is written: the first cell, its prompts cut, where the pass is made so.
    let mut ready_first = None;
    if pass.form.ready_before_the_pass() {
        let cell = &pass.cells[visits[0].cell];
        let say = |line: &str| eprintln!("{}", crate::progress::printable(line));
        let base = crate::probe::base_url(&cell.url)?;
        let mut ready = shared.make_ready(cell, base, false, &say).await?.map_err(|not| not.error)?;
        let mut cut = Vec::new();
        for part_owed in &owed[0] {
            let owed_here: Vec<&Owed> = part_owed.iter().filter(|o| !o.places.is_empty()).collect();
            cut.push(shared.cut(&cell.id, &owed_here, &ready.facts.counter).await?);
        }
        shared.before_runs(cell, &mut ready, false, &say).await;
        ready_first = Some((ready, cut));
    }

    let pass_id = options.pass_id.clone().unwrap_or_else(|| runner::default_pass_id(&started_at, &pass.name));
    runner::check_pass_id(&pass_id)?;
    let (dir, mut info, mut writer) = match (&options.resume, resumed) {
        (Some(dir), Some(mut info)) => {
            info.status = PassStatus::Running;
            info.finished_at = None;
            let writer = PassWriter::reopen(dir)?;
            writer.update_info(&info)?;
            (dir.clone(), info, writer)
        }
        _ => {
            let dir = options.out.clone().unwrap_or_else(|| PathBuf::from("data/passes").join(&pass_id));
            let cells = pass
                .cells
                .iter()
                .map(|c| CellInfo {
                    family: c.family.clone(),
                    lane: c.lane.clone(),
                    ..CellInfo::new(c.id.clone(), EngineInfo::named(c.engine.clone()), c.model.clone().unwrap_or_default())
                })
                .collect();
            let params = RequestParams {
                order: pass.order,
                extra: pass.recorded_extra.clone(),
                model_picked: pass.cells.iter().any(|c| c.model.is_none()),
                request_rate: pass.arrivals.map(|a| a.rate),
                arrival_seed: pass.arrivals.map(|a| a.seed),
                slo: pass.slo.clone(),
                ..runner::request_params(&pass.request, pass.concurrency, steps.clone())
            };
            let mut info = runner::new_pass_info(pass_id, started_at, cells, params);
            if let Some((ready, _)) = &ready_first {
                shared.record(&mut info, &pass.cells[visits[0].cell], ready);
            }
            let writer = PassWriter::create(&dir, &info)?;
            (dir, info, writer)
        }
    };
    info.keep_awake = Some(awake.record.clone());
    writer.update_info(&info)?;
    // What a KV-cache clear must never reach, besides the home and working folders ("whole":
    // the pass folder, everything above it, so the folder holding the passes, and inside it;
    // the plan's weights and engine executables).
    let protected = pass.source.as_ref().map(|(file, plan_dir)| {
        kv_cache::Protected::machine().with_above(plan_dir, "the plan's folder").with_whole(&dir, "this pass's folder").with_plan(file, plan_dir)
    });
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
    // Before the first cell, and before the cost is counted from (its tokens are none of the
    // pass's): how far this client's clock is from the reference engine's, here and now.
    let self_check = match &options.self_check {
        Some(server) => self_check(&shared.http, server, most_streams).await,
        None => None,
    };
    let total_runs = owed.iter().flatten().flatten().map(|o| o.places.len() as u64).sum::<u64>();
    let progress = Progress::new(options.progress, total_runs);
    let mut summary = runner::new_summary(&dir);
    let mut interrupt = Interrupt::on_ctrl_c();
    // CPU from here on is the measuring itself (and, for a plan, each cell's start, hashing and
    // prompt cutting in its turn).
    let session = runner::SessionStart {
        cpu_seconds: provenance::process_cpu_seconds(),
        at: std::time::Instant::now(),
        clock_tick_ns: crate::self_check::clock_tick_ns(),
        self_check,
    };

    let mut n_started = 0;
    'visits: for (visit, visit_owed) in visits.iter().zip(&owed) {
        let cell = &pass.cells[visit.cell];
        let cell_id = &cell.id;
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
        if n_started > 1 && !gap(pass.between_cells_s * options.gap_scale, &mut interrupt).await {
            summary.status = PassStatus::Interrupted;
            break;
        }
        // The plan's thermal gate, after the fixed gap: scaled as the gaps are.
        let gate = pass.source.as_ref().and_then(|(file, _)| file.gaps.cooldown.as_ref()).map(|c| c.get_ref());
        if let (true, Some((until, max_s))) = (n_started > 1, gate.and_then(|g| Some((g.level()?, g.max_s)))) {
            let max = Duration::from_secs_f64((max_s * options.gap_scale).max(0.0));
            let Some(record) = super::cooldown::cool_down(until, max, &machine, &mut interrupt).await else {
                summary.status = PassStatus::Interrupted;
                break;
            };
            if record.started_hot() {
                eprintln!(
                    "{cell_id}: still {} after the {:.0} s cool-down; the cell starts hot",
                    record.level.map_or("unknown", |l| l.as_str()),
                    record.waited_s
                );
            }
            info.cells.iter_mut().filter(|c| c.id == *cell_id).for_each(|c| c.cooldown = Some(record.clone()));
            writer.update_info(&info)?;
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
        let base = crate::probe::base_url(&cell.url)?;
        let log = dir.join("logs").join(format!("{cell_id}-{}.log", cell.engine));
        if pass.form.announces_cells() {
            progress.note(&format!("{cell_id}: {} × {}", cell.engine, cell.model_named));
        }

        // The lifecycle step: a cell whose engine benchpass starts has it started fresh.
        let mut engine = None;
        if let Some(start) = &cell.start {
            let protected = protected.as_ref().expect("an engine benchpass starts comes from a plan");
            match Shared::start_engine(&base, start, &log, protected, &progress).await {
                Ok(e) => engine = Some(e),
                Err(e) => {
                    // Nothing is dropped: every planned run of the turn is recorded as failed.
                    not_run(&mut writer, &mut summary, "engine-start", &format!("{e:#}"))?;
                    continue 'visits;
                }
            }
        }

        // The energy of what this cell's engine uses (NVML: its GPUs), where benchpass started it.
        if let Some(energy) = machine.energy() {
            energy.follow_engine(engine.as_ref().map(lifecycle::Engine::pid)).await;
        }

        let (ready, mut cut) = match ready_first.take() {
            Some((ready, cut)) => (ready, Some(cut.into_iter())),
            None => {
                let say = |line: &str| progress.note(&format!("  {line}"));
                match shared.make_ready(cell, base, engine.is_some(), &say).await? {
                    Ok(mut ready) => {
                        shared.before_runs(cell, &mut ready, engine.is_some(), &say).await;
                        (ready, None)
                    }
                    Err(not) => {
                        not_run(&mut writer, &mut summary, not.class, &format!("{:#}", not.error))?;
                        if let Some(mut e) = engine {
                            e.stop().await;
                        }
                        continue 'visits;
                    }
                }
            }
        };
        shared.record(&mut info, cell, &ready);
        // The cell's energy source, and its idle baseline: the engine loaded, no request sent.
        // Once per cell: a cell of an interleaved schedule keeps its first visit's baseline.
        let has_energy = info.cells.iter().any(|c| c.id == cell.id && c.energy.is_some());
        if let Some(energy) = machine.energy().filter(|_| !has_energy) {
            let idle = if energy.found.is_ok() { idle_baseline() } else { std::time::Duration::ZERO };
            if !idle.is_zero() {
                progress.note(&format!("  energy: idle baseline, {} s", idle.as_secs()));
            }
            if let (Err(why), false) = (&energy.found, energy_said) {
                eprintln!("energy: unavailable ({})", crate::progress::printable(why));
                energy_said = true;
            }
            let measured = energy.cell_energy(idle).await;
            if let Some(c) = info.cells.iter_mut().find(|c| c.id == cell.id) {
                c.energy = Some(measured);
            }
        }
        writer.update_info(&info)?;

        let base = &ready.base;
        let preset = cell.preset;
        let sampled_pid = engine.as_ref().map(|e| e.pid()).or(ready.listener.as_ref().map(|l| l.pid));
        let sampler = sampled_pid.map(crate::memory::MemorySampler::start);
        let cell_request = RequestConfig { model: ready.model.clone(), extra: ready.extra.clone(), ..pass.request.clone() };
        // The preset's headers: an agent session's turns carry those for every workload, the
        // rest those for theirs too (MTPLX's cache bypass).
        let headers = |agent: bool| -> Vec<(String, String)> {
            preset.map(|p| p.headers_for(agent)).unwrap_or_default().into_iter().map(|(n, v)| (n.to_owned(), v.to_owned())).collect()
        };
        let agent_request = RequestConfig { headers: headers(true), ..cell_request.clone() };
        let cell_request = RequestConfig { headers: headers(false), ..cell_request };
        let sets_cache_prompt = |extra: Option<&Value>| extra.is_some_and(|e| e.get("cache_prompt").is_some());
        let mut target = Target {
            http: &shared.http,
            url: format!("{base}{}", cell_request.api.path()),
            api_key: shared.api_key.as_deref(),
            request: &cell_request,
            counter: &ready.facts.counter,
            cell_id,
            concurrency: pass.concurrency,
            memory: sampler.as_deref(),
            machine: Some(&*machine),
            metrics_url: preset.and_then(|p| p.metrics_path).map(|path| format!("{base}{path}")),
            draft_log: preset.and_then(|p| draft_log(p, engine.is_some().then_some(log.as_path()), ready.listener.is_some())),
            live: Some(progress.live()),
            ignore_eos_logit_bias: ready.ignore_eos_bias.as_ref(),
            // An engine with no way past EOS is sent nothing it would reject (or drop).
            send_ignore_eos: preset.is_none_or(|p| p.ignore_eos != IgnoreEos::Unsupported),
            // A preset that turns the prompt cache off (llama.cpp) has it on for agent
            // sessions, unless the plan, the engine or `--extra` sets it.
            agent_cache_prompt: preset.is_some_and(|p| p.request_extra.contains(&("cache_prompt", "false")))
                && !cell.extra.contains_key("cache_prompt")
                && !sets_cache_prompt(pass.request.extra.as_ref()),
            arrivals: pass.arrivals,
        };
        let mut last_workload = None;
        for (i, (part, part_owed)) in visit.parts.iter().zip(visit_owed).enumerate() {
            let level = part.step.concurrency.unwrap_or(pass.concurrency);
            if stopped(&info, cell_id, &part.step, pass.concurrency) {
                continue;
            }
            if last_workload.is_some_and(|l| l != part.workload_index) && !gap(pass.between_workloads_s * options.gap_scale, &mut interrupt).await {
                summary.status = PassStatus::Interrupted;
                if let Some(mut e) = engine.take() {
                    e.stop().await;
                }
                break 'visits;
            }
            last_workload = Some(part.workload_index);
            target.request = if part.step.workload == Workload::Agent { &agent_request } else { &cell_request };
            let owed_here: Vec<&Owed> = part_owed.iter().filter(|o| !o.places.is_empty()).collect();
            let pre_cut = cut.as_mut().and_then(Iterator::next);
            let finished = if owed_here.is_empty() {
                true
            } else {
                let jobs = match pre_cut {
                    Some(jobs) => Ok(jobs),
                    None => shared.cut(cell_id, &owed_here, &ready.facts.counter).await,
                };
                match jobs {
                    Ok(jobs) => runner::run_jobs(&target, &jobs, &mut writer, &progress, &mut summary, &mut interrupt).await?,
                    Err(e) => {
                        // The engine may have died mid-turn: the step's remaining runs are recorded as failed.
                        record_not_run(&mut writer, &progress, &mut summary, &owed_here, "prompt-cut", &format!("{e:#}"))?;
                        true
                    }
                }
            };
            let finished = finished && (!soak_left(part) || soak(&target, part.step, soaks.get(cell_id), &mut writer, &progress, &mut summary, &mut interrupt).await?);
            if runner::record_step_energy(&mut info, &mut summary) {
                writer.update_info(&info)?;
            }
            if !finished {
                summary.status = PassStatus::Interrupted;
                if let Some(mut e) = engine.take() {
                    e.stop().await;
                }
                break 'visits;
            }
            let next_level = visit.parts.get(i + 1).filter(|next| next.step.workload == part.step.workload && next.step.target_prompt_tokens == part.step.target_prompt_tokens);
            if let (Some(saturation), Some(_)) = (&options.saturation, next_level) {
                stop_if_saturated(saturation, &dir, &mut info, &writer, cell_id, part.step, level)?;
            }
        }
        if runner::record_cell_memory(&mut info, cell_id, sampler.as_deref()) {
            writer.update_info(&info)?;
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
        let on_disk = Recorded::of(&places_on_disk(&dir)?)?;
        let planned: Vec<JobPlace> = visits
            .iter()
            .flat_map(|v| v.parts.iter().flat_map(move |p| p.slots.iter().map(move |s| (v.cell, s))))
            // The levels a stopped sweep left out were not owed.
            .filter(|(cell, slot)| !stopped(&info, &pass.cells[*cell].id, &slot.step, pass.concurrency))
            .flat_map(|(cell, slot)| places_in_slot(&pass.cells[cell].id, slot))
            .collect();
        let missing = on_disk.missing(&planned);
        if !missing.is_empty() {
            eprintln!("{}", crate::progress::printable(&not_complete(&missing, planned.len(), &dir)));
            summary.status = PassStatus::Interrupted;
        }
    }
    runner::finish(&mut info, &writer, &summary, session)?;
    Ok(summary)
}

/// The pass of `dir` that `pass` is to finish: its record, what it holds, and how far its
/// soaks got. Refused when another plan made it.
fn read_resumed(pass: &PassPlan<'_>, dir: &std::path::Path) -> anyhow::Result<(PassInfo, Recorded, HashMap<String, SoakSoFar>)> {
    let read = read_pass(dir)?;
    let planned: Vec<Step> = pass.steps.iter().map(|(_, s)| *s).collect();
    let recorded = read.info.request.as_ref().map(|r| r.steps.clone()).unwrap_or_default();
    let recorded_order = read.info.request.as_ref().map(|r| r.order).unwrap_or_default();
    let same_cells = read.info.cells.len() == pass.cells.len() && read.info.cells.iter().zip(&pass.cells).all(|(c, cell)| c.id == cell.id && c.engine.name == cell.engine);
    anyhow::ensure!(
        recorded == planned && same_cells && recorded_order == pass.order,
        "{} was not made from this plan (its cells, steps or order differ); resume it with the plan that made it",
        dir.display()
    );
    if let Some(torn) = &read.torn_tail {
        eprintln!("note: line {} of runs.jsonl was cut short by the interruption; that run is made again", torn.line);
    }
    let recorded = Recorded::of(&read.runs).with_context(|| format!("resuming {}", dir.display()))?;
    let soaks = soaks_so_far(&read.runs);
    Ok((read.info, recorded, soaks))
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
/// Every run of the pass on disk, read line by line as every reader reads it, kept as its place
/// alone (cell, workload, target, repetition, warmup, session, turn, prompt, attempt): the
/// completeness check needs no more, and a long pass's events, usage and timings held at once
/// were the largest part of benchpass's peak memory.
fn places_on_disk(dir: &std::path::Path) -> anyhow::Result<Vec<RunRecord>> {
    let mut places = Vec::new();
    for run in crate::pass::store::RunReader::open(dir)? {
        let run = run?;
        places.push(RunRecord {
            session: run.session,
            turn: run.turn,
            prompt_id: run.prompt_id.clone(),
            attempt: run.attempt,
            ..RunRecord::unmeasured(run.cell.as_str(), run.workload, run.target_prompt_tokens, run.rep, run.warmup, run.max_tokens)
        });
    }
    Ok(places)
}

/// Whether `step` of `cell` is a level a stopped sweep left out (`--stop-at-saturation`): not
/// run, and not owed. `concurrency` is the pass's, for a step without its own.
fn stopped(info: &PassInfo, cell: &str, step: &Step, concurrency: u32) -> bool {
    let level = step.concurrency.unwrap_or(concurrency);
    info.stopped_sweeps.iter().any(|stop| stop.leaves_out(cell, step.workload, step.target_prompt_tokens, level))
}

/// After a level of a sweep: where the check says this sweep's last two levels were past its
/// knee, the sweep is stopped here, recorded in `pass.json` and said.
fn stop_if_saturated(saturation: &Saturation, dir: &std::path::Path, info: &mut PassInfo, writer: &PassWriter, cell: &str, step: Step, level: u32) -> anyhow::Result<()> {
    writer.sync()?;
    let saturated = match (saturation.0)(dir) {
        Ok(saturated) => saturated,
        Err(e) => {
            eprintln!("warning: --stop-at-saturation could not read the pass so far, and the sweep goes on: {e:#}");
            return Ok(());
        }
    };
    if saturated.iter().any(|(c, w, t)| c == cell && *w == step.workload && *t == step.target_prompt_tokens) {
        eprintln!(
            "{}",
            crate::progress::printable(&format!(
                "sweep stopped: {cell} {} past its knee two levels in a row; the levels above {level} streams are left out (--stop-at-saturation)",
                step.workload.as_str()
            ))
        );
        info.stopped_sweeps.push(benchpass_format::format::StoppedSweep { cell: cell.to_owned(), workload: step.workload, target_prompt_tokens: step.target_prompt_tokens, after_concurrency: level });
        writer.update_info(info)?;
    }
    Ok(())
}

/// The self-check, said on stderr; a check that fails is said and left out (the pass is not
/// lost over it, and its report says no check was made).
async fn self_check(http: &reqwest::Client, server: &crate::self_check::SelfCheckServer, streams: u32) -> Option<benchpass_format::format::SelfCheck> {
    match crate::self_check::run(http, server, streams).await {
        Ok(check) => {
            eprintln!("self-check: {}", check.describe());
            Some(check)
        }
        Err(e) => {
            eprintln!("warning: the self-check failed, and the pass goes on without it: {e:#}");
            None
        }
    }
}

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
    fn a_cells_request_fields_are_the_plans_then_the_presets_then_its_own() {
        let llama = presets::preset("llama-cpp").unwrap();
        let map = |v: Value| v.as_object().unwrap().clone();
        let under = serde_json::json!({"cache_prompt": "plan", "top_k": 1});
        // The preset's `cache_prompt: false` over the plan's; the engine's (or `--extra`) over both.
        let merged = request_extra(Some(&under), Some(llama), &map(serde_json::json!({"top_k": 2}))).unwrap();
        assert_eq!(merged, serde_json::json!({"cache_prompt": false, "top_k": 2}));
        let over = request_extra(None, Some(llama), &map(serde_json::json!({"cache_prompt": true}))).unwrap();
        assert_eq!(over, serde_json::json!({"cache_prompt": true}));
        // A plain server with nothing asked: no fields at all.
        assert_eq!(request_extra(None, None, &serde_json::Map::new()), None);
    }

    #[test]
    fn an_attempt_that_leaves_no_number_for_the_next_is_refused() {
        let slot = Slot { step: step(Workload::Agent), rep: 0, warmup: false };
        let error = Recorded::of(&runs_of(&places_in_slot("c0", &slot)[..1], u32::MAX)).err().unwrap().to_string();
        assert!(error.contains("run 1 of runs.jsonl has attempt 4294967295"), "{error}");
    }
}
