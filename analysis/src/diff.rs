//! A → B: what changed between two passes, whether it is more than noise, and what it can be
//! blamed on.
//!
//! Cells are matched on engine, model family (the model id where the family is ambiguous), lane,
//! workload and prompt target; every step of A and of B appears once. Each metric
//! gets a verdict and an attribution:
//!
//! - `faster` / `slower` only when the exact rank-sum test rejects "no change" (α = 0.05, or
//!   0.10 where 0.05 is out of reach — 3 vs 3, 3 vs 4, 2 vs 5 — with a `low-n` note naming the
//!   smallest p the sizes allow) **and** the change exceeds the noise band: the wider side of
//!   either cell's band and the drift measured on the control cells. The change is measured as |ln(B/A)| against ln(1 + band), a symmetric
//!   measure, so swapping A and B mirrors every verdict; the delta % is printed as before;
//! - with many rows tested at once, the diff counts them and the false calls chance alone would
//!   make among them (the sum of their α); [`Correction::Holm`] bounds the chance of any;
//! - `within-noise` otherwise; `incomparable` when the two figures must not be compared
//!   (different machine or request parameters, each named with both values, prompts of different size, a decode rate from
//!   short-stopped runs, no successful run); `new` / `gone` for unmatched cells.
//!
//! Agent steps are compared on their session figures (docs/agent.md), never on medians over
//! turns of different sizes: `ttft_cold_ms` (one value per session) and `decode_tps` as above;
//! `ttft_cached_ms` and `cache_hit_ratio`, whose turns differ in size by design, turn by turn —
//! both passes replay the same sessions, so turn `t` of A and turn `t` of B had the same
//! prompt — with the exact sign test over the turns ([`paired_call`]). Quality runs are not
//! compared here (`cells` leaves them out; `quality` compares them).
//!
//! Attribution comes from provenance: `engine` (engine version or executable hash changed,
//! weights not), `build` (weights changed, engine not), `engine+build` (both), `none`
//! (neither: a re-run) and `unknown` (a hash is missing on a side). `none` cells are the **control cells**: their deltas measure the drift
//! between the passes (thermal state, background load, the protocol itself), and the largest of
//! them widens every other cell's band for that metric.

use std::collections::BTreeMap;

use benchpass_format::{Pass, Workload};

use crate::agent::AgentCell;
use crate::band::FLOOR;
use crate::cells::{CellStep, Metric, MetricKind, PROMPT_SPREAD_MARGIN};
use crate::ranksum::{exact_two_sided_p, min_attainable_p};
use crate::reasons::{Reason, ReasonCode};

/// The metrics a diff compares (prompt tokens are checked, not judged).
pub const DIFF_METRICS: [MetricKind; 3] = [MetricKind::DecodeTps, MetricKind::TtftMs, MetricKind::PrefillTps];

/// [`DIFF_METRICS`] and the energy metrics, for a step whose runs carry energy.
const DIFF_METRICS_WITH_ENERGY: [MetricKind; 6] = [
    MetricKind::DecodeTps,
    MetricKind::TtftMs,
    MetricKind::PrefillTps,
    MetricKind::JoulesPerToken,
    MetricKind::JoulesPerPromptToken,
    MetricKind::MeanWatts,
];

/// Every metric a diff row can carry: the speed metrics, an agent step's own, then energy.
const ALL_METRICS: [MetricKind; 9] = [
    MetricKind::DecodeTps,
    MetricKind::TtftMs,
    MetricKind::PrefillTps,
    MetricKind::TtftColdMs,
    MetricKind::TtftCachedMs,
    MetricKind::CacheHitRatio,
    MetricKind::JoulesPerToken,
    MetricKind::JoulesPerPromptToken,
    MetricKind::MeanWatts,
];

/// The metrics a step's rows compare: an agent step's session figures, or [`DIFF_METRICS`]
/// (with the energy metrics where the step has energy).
pub fn diff_metrics(step: &CellStep) -> &'static [MetricKind] {
    if step.agent.is_some() {
        &MetricKind::AGENT
    } else if step.energy.is_some() {
        &DIFF_METRICS_WITH_ENERGY
    } else {
        &DIFF_METRICS
    }
}

/// The metrics a matched pair's rows compare: those of the side with more (a step that gained
/// or lost its energy source still shows its energy rows, incomparable).
fn pair_metrics(a: &CellStep, b: &CellStep) -> &'static [MetricKind] {
    let (ma, mb) = (diff_metrics(a), diff_metrics(b));
    if mb.len() > ma.len() { mb } else { ma }
}

/// Compared turn by turn rather than as two samples: their turns differ in size by design.
fn paired(metric: MetricKind) -> bool {
    matches!(metric, MetricKind::TtftCachedMs | MetricKind::CacheHitRatio)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Faster,
    Slower,
    WithinNoise,
    Incomparable,
    New,
    Gone,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within-noise",
            Verdict::Incomparable => "incomparable",
            Verdict::New => "new",
            Verdict::Gone => "gone",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribution {
    Engine,
    Build,
    EngineBuild,
    None,
    /// A hash is missing on a side (engine or weights): a change cannot be ruled out, so the
    /// cell is neither blamed nor used as a control.
    Unknown,
}

impl Attribution {
    pub fn as_str(self) -> &'static str {
        match self {
            Attribution::Engine => "engine",
            Attribution::Build => "build",
            Attribution::EngineBuild => "engine+build",
            Attribution::None => "none",
            Attribution::Unknown => "unknown",
        }
    }

    /// The attribution in words, for reports.
    pub fn sentence(self) -> &'static str {
        match self {
            Attribution::Engine => "the engine changed and the weights did not: an engine-only delta",
            Attribution::Build => "the weights changed and the engine did not: a build-only delta",
            Attribution::EngineBuild => "engine and weights both changed: not an engine-only delta",
            Attribution::None => "neither engine nor weights changed: a control cell, whose delta is drift",
            Attribution::Unknown => "the engine or the weights were not hashed on a side, so what changed is unknown: not a control cell",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DiffRow {
    pub engine: String,
    pub model: String,
    pub lane: String,
    pub workload: Workload,
    pub target_prompt_tokens: u64,
    /// The step's streams in flight at once (part of the match key: both sides ran at it).
    pub concurrency: u32,
    /// Each side's engine version (`None` for the side that lacks the row).
    pub a_engine_version: Option<String>,
    pub b_engine_version: Option<String>,
    pub metric: MetricKind,
    pub a_median: Option<f64>,
    pub b_median: Option<f64>,
    /// (B − A) / A × 100.
    pub delta_pct: Option<f64>,
    pub verdict: Verdict,
    pub attribution: Option<Attribution>,
    pub p_value: Option<f64>,
    /// The relative half-width the delta had to exceed.
    pub threshold: Option<f64>,
    /// The level the exact test was held to (0.05, 0.10 at `low-n`, or Holm's share of it);
    /// `None` where no test ran.
    pub alpha: Option<f64>,
    /// A call the rows' own test made and a correction for many rows withdrew.
    pub withdrawn: bool,
    pub reasons: Vec<Reason>,
}

/// Drift measured on control cells, per metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    pub metric: MetricKind,
    pub n_controls: usize,
    /// The largest |delta| among them, as a fraction.
    pub max_abs_delta: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    pub a_pass: String,
    pub b_pass: String,
    pub rows: Vec<DiffRow>,
    pub drift: Vec<Drift>,
    /// Rows on which the exact test ran.
    pub n_tested: usize,
    /// The sum of the tested rows' own α (0.05, or 0.10 at `low-n`): how many `faster` or
    /// `slower` calls chance alone would make among them, on average, if nothing had changed
    /// (an upper bound: a call must clear the band as well).
    pub expected_false_calls: f64,
    pub correction: Correction,
    /// Under Holm: the chance of any false call among the tested rows is at most this (the
    /// largest α a row was tested at before the correction).
    pub family_alpha: Option<f64>,
    /// Calls the correction withdrew (the test alone would have made them).
    pub withdrawn: usize,
    /// The goodput of each matched pair of steps where either side has one: compared only
    /// under the same objectives ([`crate::key::goodput_comparable`]).
    pub goodput: Vec<GoodputDiff>,
    /// The energy of each matched pair of steps at N > 1 streams where either side has one
    /// (docs/metrics.md "Energy under concurrency"): compared only within one source and domain.
    pub step_energy: Vec<StepEnergyDiff>,
}

/// One matched pair's energy at N > 1 streams, A → B: the step's span, one figure a side.
#[derive(Debug, Clone, PartialEq)]
pub struct StepEnergyDiff {
    pub cell: String,
    pub workload: benchpass_format::Workload,
    pub concurrency: u32,
    pub a: Option<crate::serving::ServingEnergy>,
    pub b: Option<crate::serving::ServingEnergy>,
    /// B's joules per output token ÷ A's − 1 where both have one; `Err` with the reason where
    /// the pair is not compared (one side without, or another source or domain). One figure a
    /// side has no noise band: the change is stated, never called faster or slower.
    pub change: Result<f64, String>,
}

/// The change from `a` to `b` in joules per output token, or why none is stated.
fn step_energy_change(a: Option<&crate::serving::ServingEnergy>, b: Option<&crate::serving::ServingEnergy>) -> Result<f64, String> {
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        (None, _) => return Err("A has no step energy".to_owned()),
        (_, None) => return Err("B has no step energy".to_owned()),
    };
    if !crate::key::energy_keys_comparable(&a.key, &b.key) {
        return Err(format!("energy {} → {}", a.key, b.key));
    }
    match (a.joules_per_output_token, b.joules_per_output_token) {
        (Some(x), Some(y)) if x > 0.0 && x.is_finite() && y.is_finite() => Ok(y / x - 1.0),
        _ => Err("no joules per output token on a side".to_owned()),
    }
}

/// One matched pair's goodput, A → B.
#[derive(Debug, Clone, PartialEq)]
pub struct GoodputDiff {
    pub cell: String,
    pub workload: benchpass_format::Workload,
    pub concurrency: u32,
    /// Each side's share of runs that met its objectives and goodput in req/s.
    pub a: Option<(f64, Option<f64>)>,
    pub b: Option<(f64, Option<f64>)>,
    /// `Err` with the reason where the objectives differ: the pair is incomparable for goodput
    /// (its other rows still pair).
    pub comparable: Result<(), String>,
}

/// A correction for testing many rows at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Correction {
    /// Each row at its own α: a 60-row diff of unchanged engines expects about 3–6 false calls.
    #[default]
    None,
    /// Holm's step-down procedure (Holm 1979, *Scand. J. Statist.* 6:65–70): the rows' p-values
    /// in ascending order, the k-th (from 0) called only if it and every smaller one are at most
    /// its α ÷ (m − k). The chance of any false call among the m rows is then at most the
    /// largest α, whatever the rows' dependence.
    Holm,
}

impl Correction {
    pub fn as_str(self) -> &'static str {
        match self {
            Correction::None => "none",
            Correction::Holm => "holm",
        }
    }

    pub fn parse(s: &str) -> Option<Correction> {
        match s {
            "none" => Some(Correction::None),
            "holm" => Some(Correction::Holm),
            _ => None,
        }
    }
}

/// engine, model, lane, workload, target, streams, the engine's version where it tells two
/// cells apart, and the cap and hashes where even that does not ([`Twins`]).
type Key = (String, String, String, Workload, u64, u32, Option<String>, Option<Twins>);

/// What tells apart two steps of one pass that agree on everything else the diff pairs on:
/// the token cap, then the weights' hash, then the engine's hash, as few of them as it takes.
/// Only steps that would otherwise share a key carry them, so that an upgrade or new weights
/// still pair across passes wherever the cap alone tells a pass's steps apart.
type Twins = Vec<String>;

fn twin_fields(s: &CellStep) -> [String; 3] {
    [s.max_tokens.to_string(), s.build_sha256.clone().unwrap_or_default(), s.engine_sha256.clone().unwrap_or_default()]
}

/// The match key: engine, model, lane, workload, target and the step's streams (a sweep's
/// levels pair level with level, never in order). The model is named by its family, so that
/// one model's two builds (a GGUF and an MLX folder) match, except where the family is
/// ambiguous: where either pass holds one engine with two models of the family (two
/// quantizations), the model id tells them apart. The engine's version is left out, so that
/// an upgrade pairs its two cells (and is attributed to the engine), except where either pass
/// holds one engine at two versions for one model and lane: then the version tells them
/// apart, and v1 is paired with v1, never with the v2 listed in its place. Where a pass still
/// holds two steps with one key (two caps of one step, two builds under one model id), the
/// cap and hashes join it; steps alike even then are never paired ([`alike_steps`]): which of
/// them is which would be a guess, and a guess that follows the order of the pass's cells.
fn keys(a: &[CellStep], b: &[CellStep]) -> impl Fn(&CellStep) -> Key {
    type Group = (String, String, String);
    let mut models: BTreeMap<Group, std::collections::BTreeSet<String>> = BTreeMap::new();
    let mut versions: BTreeMap<Group, std::collections::BTreeSet<String>> = BTreeMap::new();
    let mut ambiguous = std::collections::BTreeSet::new();
    let mut versioned = std::collections::BTreeSet::new();
    for side in [a, b] {
        models.clear();
        for s in side {
            models.entry((s.engine.clone(), s.family.clone(), s.lane.clone())).or_default().insert(s.model.clone());
        }
        ambiguous.extend(models.iter().filter(|(_, m)| m.len() > 1).map(|(group, _)| group.clone()));
    }
    let model_of = move |s: &CellStep| {
        let group = (s.engine.clone(), s.family.clone(), s.lane.clone());
        if ambiguous.contains(&group) { s.model.clone() } else { s.family.clone() }
    };
    for side in [a, b] {
        versions.clear();
        for s in side {
            versions.entry((s.engine.clone(), model_of(s), s.lane.clone())).or_default().insert(s.engine_version.clone());
        }
        versioned.extend(versions.iter().filter(|(_, v)| v.len() > 1).map(|(group, _)| group.clone()));
    }
    let base = move |s: &CellStep| {
        let model = model_of(s);
        let version = versioned.contains(&(s.engine.clone(), model.clone(), s.lane.clone())).then(|| s.engine_version.clone());
        (s.engine.clone(), model, s.lane.clone(), s.workload, s.target_prompt_tokens, s.concurrency, version, None)
    };
    // For each key a side holds more than once, how many of the twin fields it takes to tell
    // that side's steps apart (all three where nothing does).
    let mut twinned = BTreeMap::<Key, usize>::new();
    for side in [a, b] {
        let mut held = BTreeMap::<Key, Vec<[String; 3]>>::new();
        for s in side {
            held.entry(base(s)).or_default().push(twin_fields(s));
        }
        for (k, fields) in held.into_iter().filter(|(_, f)| f.len() > 1) {
            let distinct = |n: usize| {
                let mut prefixes: Vec<&[String]> = fields.iter().map(|f| &f[..n]).collect();
                prefixes.sort_unstable();
                prefixes.windows(2).all(|w| w[0] != w[1])
            };
            let needed = (1..=3).find(|&n| distinct(n)).unwrap_or(3);
            let level = twinned.entry(k).or_insert(0);
            *level = (*level).max(needed);
        }
    }
    move |s: &CellStep| {
        let mut key = base(s);
        if let Some(&n) = twinned.get(&key) {
            key.7 = Some(twin_fields(s)[..n].to_vec());
        }
        key
    }
}

/// For each step of `side`, whether another step of it has the same key: such steps are left
/// unpaired (`gone` or `new`, with [`alike_reason`]), whatever the order of the cells.
fn alike_steps(side: &[CellStep], key: &impl Fn(&CellStep) -> Key) -> Vec<bool> {
    let keys: Vec<Key> = side.iter().map(key).collect();
    keys.iter().map(|k| keys.iter().filter(|o| *o == k).count() > 1).collect()
}

fn alike_reason(side: &[CellStep], step: &CellStep, key: &impl Fn(&CellStep) -> Key, name: &str) -> Reason {
    let k = key(step);
    let mut cells: Vec<&str> = side.iter().filter(|o| key(o) == k).map(|o| o.cell.as_str()).collect();
    cells.sort_unstable();
    Reason::new(
        ReasonCode::Params,
        format!(
            "pass {name} holds {} steps alike in engine, model, version, build, cap and streams (cells {}): which is which is not known, so none is paired",
            cells.len(),
            cells.join(", ")
        ),
    )
}

/// Compares the figures of pass A (`a`, from [`crate::cells::summarize`]) with those of B.
/// Every step of A and of B appears exactly once: matched, `gone` or `new`. Each row is
/// tested at its own α; [`diff_with`] applies a correction for testing many rows.
pub fn diff(a_pass: &Pass, a: &[CellStep], b_pass: &Pass, b: &[CellStep]) -> Diff {
    diff_with(a_pass, a, b_pass, b, Correction::None)
}

/// [`diff`] with a correction for the many rows tested at once.
pub fn diff_with(a_pass: &Pass, a: &[CellStep], b_pass: &Pass, b: &[CellStep], correction: Correction) -> Diff {
    let pass_reasons = pass_reasons(a_pass, b_pass);
    let key = keys(a, b);
    let (a_alike, b_alike) = (alike_steps(a, &key), alike_steps(b, &key));
    // A key is held at most once on each side once alike steps are set aside, so each B
    // step is taken by at most one A step, whatever the order of either pass's cells.
    let mut b_taken = vec![false; b.len()];
    let matches: Vec<Option<usize>> = a
        .iter()
        .zip(&a_alike)
        .map(|(step_a, &alike)| {
            let k = key(step_a);
            let found = (0..b.len()).find(|&j| !alike && !b_alike[j] && !b_taken[j] && key(&b[j]) == k);
            if let Some(j) = found {
                b_taken[j] = true;
            }
            found
        })
        .collect();

    // First every matched pair without drift, to find the control cells and their drift.
    let pairs: Vec<(&CellStep, &CellStep)> = a.iter().zip(&matches).filter_map(|(x, m)| Some((x, &b[(*m)?]))).collect();
    let mut drift = Vec::new();
    for metric in ALL_METRICS {
        let deltas: Vec<f64> = pairs
            .iter()
            .filter(|(x, y)| attribution(x, y).0 == Attribution::None && pair_metrics(x, y).contains(&metric))
            .filter_map(|(x, y)| {
                let row = judge(x, y, metric, 0.0, &cell_reasons(&pass_reasons, a_pass, x, b_pass, y), checks(a_pass, b_pass));
                (row.verdict != Verdict::Incomparable).then_some(log_change(row.a_median?, row.b_median?)?.abs())
            })
            .collect();
        if !deltas.is_empty() {
            // Kept as a relative half-width, the symmetric one: e^|ln(B/A)| − 1.
            let widest = deltas.iter().copied().fold(0.0, f64::max);
            drift.push(Drift { metric, n_controls: deltas.len(), max_abs_delta: widest.exp_m1() });
        }
    }

    let mut rows = Vec::new();
    for ((step_a, matched), &alike) in a.iter().zip(&matches).zip(&a_alike) {
        match matched.map(|j| &b[j]) {
            Some(step_b) => {
                let control = attribution(step_a, step_b).0 == Attribution::None;
                let reasons = cell_reasons(&pass_reasons, a_pass, step_a, b_pass, step_b);
                for &metric in pair_metrics(step_a, step_b) {
                    // Control cells define the drift; everything else must clear it.
                    let widen = if control { 0.0 } else { drift.iter().find(|d| d.metric == metric).map_or(0.0, |d| d.max_abs_delta) };
                    rows.push(DiffRow { model: key(step_a).1, ..judge(step_a, step_b, metric, widen, &reasons, checks(a_pass, b_pass)) });
                }
            }
            None => {
                let alike = alike.then(|| alike_reason(a, step_a, &key, "A"));
                let why = alike.or_else(|| unpaired_levels(step_a, b.iter(), &key, Verdict::Gone));
                rows.extend(diff_metrics(step_a).iter().map(|&m| {
                    let mut row = DiffRow { model: key(step_a).1, ..unmatched(step_a, m, Verdict::Gone) };
                    row.reasons.extend(why.clone());
                    row
                }));
            }
        }
    }
    for ((step_b, _), &alike) in b.iter().zip(&b_taken).zip(&b_alike).filter(|((_, taken), _)| !**taken) {
        let alike = alike.then(|| alike_reason(b, step_b, &key, "B"));
        let why = alike.or_else(|| unpaired_levels(step_b, a.iter(), &key, Verdict::New));
        rows.extend(diff_metrics(step_b).iter().map(|&m| {
            let mut row = DiffRow { model: key(step_b).1, ..unmatched(step_b, m, Verdict::New) };
            row.reasons.extend(why.clone());
            row
        }));
    }
    let tested: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].alpha.is_some()).collect();
    let expected_false_calls = tested.iter().filter_map(|&i| rows[i].alpha).sum();
    let family_alpha = (correction == Correction::Holm).then(|| tested.iter().filter_map(|&i| rows[i].alpha).fold(0.0, f64::max));
    let withdrawn = match correction {
        Correction::None => 0,
        Correction::Holm => holm(&mut rows, &tested),
    };
    let goodput = pairs
        .iter()
        .filter_map(|(x, y)| {
            let of = |s: &CellStep| s.serving.as_ref()?.goodput.as_ref().map(|g| (g.attainment, g.requests_per_s));
            let (ga, gb) = (of(x), of(y));
            (ga.is_some() || gb.is_some()).then(|| GoodputDiff {
                cell: x.cell.clone(),
                workload: x.workload,
                concurrency: x.concurrency,
                a: ga,
                b: gb,
                comparable: crate::key::goodput_comparable(x, y),
            })
        })
        .collect();
    let step_energy = pairs
        .iter()
        .filter_map(|(x, y)| {
            let of = |s: &CellStep| s.serving.as_ref()?.energy.clone();
            let (ea, eb) = (of(x), of(y));
            (ea.is_some() || eb.is_some()).then(|| StepEnergyDiff {
                cell: x.cell.clone(),
                workload: x.workload,
                concurrency: x.concurrency,
                change: step_energy_change(ea.as_ref(), eb.as_ref()),
                a: ea,
                b: eb,
            })
        })
        .collect();
    Diff {
        goodput,
        step_energy,
        a_pass: a_pass.info.pass_id.clone(),
        b_pass: b_pass.info.pass_id.clone(),
        rows,
        drift,
        n_tested: tested.len(),
        expected_false_calls,
        correction,
        family_alpha: family_alpha.filter(|_| !tested.is_empty()),
        withdrawn,
    }
}

/// Why a step found no partner when the other side has the same engine, model, lane, workload
/// and target at other numbers of streams: `concurrency 1 → 2, 4` (for a step of A that is
/// `gone`; the other way round for one of B that is `new`). Each level is compared only
/// with the same level, so a reader is told that these rows were left apart on purpose.
fn unpaired_levels<'s>(step: &CellStep, others: impl Iterator<Item = &'s CellStep>, key: &impl Fn(&CellStep) -> Key, verdict: Verdict) -> Option<Reason> {
    let k = key(step);
    let same_but_streams = |o: &CellStep| {
        let ko = key(o);
        (&ko.0, &ko.1, &ko.2, ko.3, ko.4) == (&k.0, &k.1, &k.2, k.3, k.4) && ko.5 != k.5
    };
    let mut levels: Vec<u32> = others.filter(|o| same_but_streams(o)).map(|o| o.concurrency).collect();
    levels.sort_unstable();
    levels.dedup();
    if levels.is_empty() {
        return None;
    }
    let theirs = levels.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    let detail = match verdict {
        Verdict::New => format!("concurrency {theirs} → {}: each level is compared only with the same level", step.concurrency),
        _ => format!("concurrency {} → {theirs}: each level is compared only with the same level", step.concurrency),
    };
    Some(Reason::new(ReasonCode::Params, detail))
}

/// Holm's step-down over the `tested` rows: each row's α becomes its share, α ÷ (m − k) for
/// the k-th smallest p, up to the first p that misses its share; every row from there on keeps
/// no call. Returns how many calls were withdrawn. A correction can only withdraw calls: every
/// share is at most the row's own α.
fn holm(rows: &mut [DiffRow], tested: &[usize]) -> usize {
    let mut order = tested.to_vec();
    // Ties in p: the row with the larger α first, so that no row waits behind a stricter one;
    // then by what the row compares, so that each row's share does not follow the order of
    // the passes' cells.
    let place = |r: &DiffRow| {
        (r.engine.clone(), r.model.clone(), r.lane.clone(), r.workload, r.target_prompt_tokens, r.concurrency, r.metric.as_str(), r.a_engine_version.clone(), r.b_engine_version.clone())
    };
    order.sort_by(|&i, &j| {
        let (pi, pj) = (rows[i].p_value.unwrap_or(1.0), rows[j].p_value.unwrap_or(1.0));
        pi.total_cmp(&pj).then(rows[j].alpha.unwrap_or(0.0).total_cmp(&rows[i].alpha.unwrap_or(0.0))).then_with(|| place(&rows[i]).cmp(&place(&rows[j])))
    });
    let m = order.len();
    let mut still_rejecting = true;
    let mut withdrawn = 0;
    for (k, &i) in order.iter().enumerate() {
        let share = rows[i].alpha.unwrap_or(0.0) / (m - k) as f64;
        rows[i].alpha = Some(share);
        still_rejecting = still_rejecting && rows[i].p_value.is_some_and(|p| p <= share + 1e-12);
        if !still_rejecting && matches!(rows[i].verdict, Verdict::Faster | Verdict::Slower) {
            rows[i].verdict = Verdict::WithinNoise;
            rows[i].withdrawn = true;
            rows[i].reasons.retain(|r| r.code != ReasonCode::LowN);
            withdrawn += 1;
        }
    }
    withdrawn
}

/// Differences between the passes themselves that make every figure incomparable: the
/// machine, and every request parameter that can change a figure, each named with both values.
fn pass_reasons(a: &Pass, b: &Pass) -> Vec<Reason> {
    let mut reasons = Vec::new();
    if a.info.machine.name != b.info.machine.name {
        reasons.push(Reason::new(ReasonCode::Machine, format!("{} → {}", a.info.machine.name, b.info.machine.name)));
    }
    if let (Some(ra), Some(rb)) = (&a.info.request, &b.info.request) {
        let show = |v: &dyn std::fmt::Debug| format!("{v:?}");
        let json = |v: &Option<serde_json::Value>| v.as_ref().map_or_else(|| "none".to_owned(), |v| v.to_string());
        // As `request_reasons` writes it, so that a pass and its CSV import say the same.
        let rate = |v: Option<f64>| shown(&benchpass_format::key_number(v));
        let params: [(&str, String, String); 9] = [
            ("api", ra.api.clone(), rb.api.clone()),
            ("temperature", ra.temperature.to_string(), rb.temperature.to_string()),
            ("seed", show(&ra.seed), show(&rb.seed)),
            ("ignore_eos", ra.ignore_eos.to_string(), rb.ignore_eos.to_string()),
            ("min_tokens", show(&ra.min_tokens), show(&rb.min_tokens)),
            ("extra", json(&ra.extra), json(&rb.extra)),
            // The streams of each step are in the match key (`keys`): a sweep's levels pair
            // level with level, and the pass's highest level says nothing more.
            ("order", ra.order.as_str().to_owned(), rb.order.as_str().to_owned()),
            // Arrivals at a rate load an engine otherwise than busy streams do.
            ("request_rate", rate(ra.request_rate), rate(rb.request_rate)),
            ("arrival_seed", show(&ra.arrival_seed), show(&rb.arrival_seed)),
        ];
        for (name, va, vb) in params {
            if va != vb {
                reasons.push(Reason::new(ReasonCode::Params, format!("{name} {va} → {vb}")));
            }
        }
    }
    reasons
}

/// [`pass_reasons`] and what differs between the two cells' own requests: the fields merged into
/// each of their requests (`cache_prompt`, `reasoning_effort`, …) and the EOS bias.
fn cell_reasons(pass_reasons: &[Reason], a_pass: &Pass, a: &CellStep, b_pass: &Pass, b: &CellStep) -> Vec<Reason> {
    let mut reasons = pass_reasons.to_vec();
    let (ca, cb) = (a_pass.cell(&a.cell), b_pass.cell(&b.cell));
    let json = |v: Option<&serde_json::Value>| v.map_or_else(|| "none".to_owned(), |v| v.to_string());
    let extra = |c: Option<&benchpass_format::CellInfo>| json(c.and_then(|c| c.request_extra.as_ref()));
    if extra(ca) != extra(cb) {
        reasons.push(Reason::new(ReasonCode::Params, format!("request extras {} → {}", extra(ca), extra(cb))));
    }
    let bias = |c: Option<&benchpass_format::CellInfo>| json(c.and_then(|c| c.ignore_eos_logit_bias.as_ref()));
    if bias(ca) != bias(cb) {
        reasons.push(Reason::new(ReasonCode::Params, format!("EOS logit_bias {} → {}", bias(ca), bias(cb))));
    }
    reasons.extend(request_reasons(&a.request, &b.request, &reasons));
    reasons
}

/// A key field in a reason: `none` where it is empty.
fn shown(v: &str) -> String {
    if v.is_empty() { "none".to_owned() } else { v.to_owned() }
}

/// The fields of the comparison key that say how the steps were requested (API, temperature,
/// arrivals, way past EOS), each that differs named with both values, unless the passes'
/// own parameters already named it. Where a side knows nothing of them (a runs CSV from
/// before the columns), nothing is named: unknown is not called a difference.
fn request_reasons(a: &crate::key::RequestFacts, b: &crate::key::RequestFacts, named: &[Reason]) -> Vec<Reason> {
    if !(a.is_known() && b.is_known()) {
        return Vec::new();
    }
    let number = |v: Option<f64>| shown(&benchpass_format::key_number(v));
    let text = shown;
    let known = !a.prompt_set.is_empty() && !b.prompt_set.is_empty();
    let short = |v: &str| if known { v.chars().take(12).collect() } else { String::new() };
    let fields = [
        ("api", text(&a.api), text(&b.api)),
        ("temperature", number(a.temperature), number(b.temperature)),
        ("request_rate", number(a.request_rate), number(b.request_rate)),
        ("past_eos", text(&a.past_eos), text(&b.past_eos)),
        // A prompt set not known on one side (a pass from before it) is not called a change.
        ("prompt set", short(&a.prompt_set), short(&b.prompt_set)),
    ];
    fields
        .into_iter()
        .filter(|(name, va, vb)| va != vb && !named.iter().any(|r| r.code == ReasonCode::Params && r.detail.starts_with(&format!("{name} "))))
        .map(|(name, va, vb)| Reason::new(ReasonCode::Params, format!("{name} {va} → {vb}")))
        .collect()
}

/// What changed between the two cells, from their provenance. A missing hash on either side,
/// engine or weights, makes it `unknown`: "not changed" would be a guess, and a guessed control
/// would feed its delta into the drift that widens every other band.
fn attribution(a: &CellStep, b: &CellStep) -> (Attribution, Option<Reason>) {
    let engine_hashes = match (&a.engine_sha256, &b.engine_sha256) {
        (Some(x), Some(y)) => Some(x != y),
        _ => None,
    };
    let build_hashes = match (&a.build_sha256, &b.build_sha256) {
        (Some(x), Some(y)) => Some(x != y),
        _ => None,
    };
    let missing: Vec<&str> = [("engine", engine_hashes), ("weights", build_hashes)].iter().filter(|(_, h)| h.is_none()).map(|(what, _)| *what).collect();
    let unhashed = (!missing.is_empty()).then(|| Reason::new(ReasonCode::Unhashed, format!("no {} hash on a side", missing.join(" or "))));
    // Versions that differ say the engine changed, hashed or not; equal versions with a hash
    // missing say nothing (a rebuild keeps its version).
    let versions_differ = !a.engine_version.is_empty() && !b.engine_version.is_empty() && a.engine_version != b.engine_version;
    let engine_changed = match engine_hashes {
        Some(changed) => Some(changed || versions_differ),
        None => versions_differ.then_some(true),
    };
    let attribution = match (engine_changed, build_hashes) {
        (Some(true), Some(true)) => Attribution::EngineBuild,
        (Some(true), Some(false)) => Attribution::Engine,
        (Some(false), Some(true)) => Attribution::Build,
        (Some(false), Some(false)) => Attribution::None,
        _ => Attribution::Unknown,
    };
    (attribution, unhashed)
}

/// The symmetric measure of change, ln(B / A): swapping A and B negates it exactly, so the
/// verdicts of A → B and B → A are always mirrored (a relative delta is not: +2.02 % one way
/// is −1.98 % the other). `None` unless both medians are positive.
pub fn log_change(a: f64, b: f64) -> Option<f64> {
    (a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite()).then(|| (b / a).ln())
}

/// Whether two sides' median actual prompt tokens differ by more than
/// [`PROMPT_SPREAD_MARGIN`] of the smaller: `max / min − 1`, the same whichever side is A.
/// Prompts of 0 tokens on one side and some on the other are apart; 0 on both are not.
fn prompts_apart(a: f64, b: f64) -> bool {
    let (lo, hi) = (a.min(b), a.max(b));
    if lo > 0.0 {
        (hi - lo) / lo > PROMPT_SPREAD_MARGIN
    } else {
        hi > 0.0
    }
}

fn unmatched(step: &CellStep, metric: MetricKind, verdict: Verdict) -> DiffRow {
    let median = step.median(metric);
    DiffRow {
        engine: step.engine.clone(),
        model: step.family.clone(),
        lane: step.lane.clone(),
        workload: step.workload,
        target_prompt_tokens: step.target_prompt_tokens,
        concurrency: step.concurrency,
        a_engine_version: (verdict == Verdict::Gone).then(|| step.engine_version.clone()),
        b_engine_version: (verdict == Verdict::New).then(|| step.engine_version.clone()),
        metric,
        a_median: if verdict == Verdict::Gone { median } else { None },
        b_median: if verdict == Verdict::New { median } else { None },
        delta_pct: None,
        verdict,
        attribution: None,
        p_value: None,
        threshold: None,
        alpha: None,
        withdrawn: false,
        reasons: Vec::new(),
    }
}

/// Each pass's self-check (`crate::floor`), A's then B's.
type Checks<'a> = [Option<&'a benchpass_format::format::SelfCheck>; 2];

fn checks<'a>(a_pass: &'a Pass, b_pass: &'a Pass) -> Checks<'a> {
    [a_pass, b_pass].map(|p| p.info.measurer.as_ref().and_then(|m| m.self_check.as_ref()))
}

fn judge(a: &CellStep, b: &CellStep, metric: MetricKind, drift: f64, pass_reasons: &[Reason], checks: Checks<'_>) -> DiffRow {
    let (attribution, unhashed) = attribution(a, b);
    let mut reasons: Vec<Reason> = pass_reasons.to_vec();
    reasons.extend(unhashed);
    let mut row = DiffRow {
        engine: a.engine.clone(),
        model: a.family.clone(),
        lane: a.lane.clone(),
        workload: a.workload,
        target_prompt_tokens: a.target_prompt_tokens,
        concurrency: a.concurrency,
        a_engine_version: Some(a.engine_version.clone()),
        b_engine_version: Some(b.engine_version.clone()),
        metric,
        a_median: a.median(metric),
        b_median: b.median(metric),
        delta_pct: None,
        verdict: Verdict::Incomparable,
        attribution: Some(attribution),
        p_value: None,
        threshold: None,
        alpha: None,
        withdrawn: false,
        reasons: Vec::new(),
    };
    // Energy of two sources or domains is never compared (`key::energy_comparable`).
    if metric.is_energy() && !crate::key::energy_comparable(a, b) {
        let shown = |s: &CellStep| match crate::key::energy_key(s) {
            "" => "none".to_owned(),
            key => key.to_owned(),
        };
        reasons.push(Reason::new(
            ReasonCode::Params,
            format!("energy {} → {}: energy of different sources or domains is not compared", shown(a), shown(b)),
        ));
        row.reasons = reasons;
        return row;
    }
    let (Some(median_a), Some(median_b)) = (row.a_median, row.b_median) else {
        let no_cache_info = [a, b].iter().find_map(|side| side.reasons.iter().find(|r| r.code == ReasonCode::NoCacheInfo));
        match no_cache_info {
            Some(reason) if metric == MetricKind::CacheHitRatio => reasons.push(reason.clone()),
            _ => reasons.push(Reason::new(ReasonCode::Errors, "no successful run on one side")),
        }
        row.reasons = reasons;
        return row;
    };
    row.delta_pct = (median_a > 0.0).then(|| (median_b - median_a) / median_a * 100.0);

    let mut incomparable = !pass_reasons.is_empty();
    if let (Some(pa), Some(pb)) = (&a.prompt_tokens, &b.prompt_tokens) {
        // Apart by more than the margin of the smaller, as a row of engines measures it
        // (cells.rs): symmetric, so swapping A and B cannot make a row comparable one way only
        // (1950 → 2050 is 5.1 % of A, but 4.9 % of B).
        if prompts_apart(pa.median, pb.median) {
            reasons.push(Reason::new(ReasonCode::PromptSize, format!("{:.0} → {:.0} actual prompt tokens", pa.median, pb.median)));
            incomparable = true;
        }
    }
    // Agent figures are over the sessions replayed: turn t of one set of traces is another
    // prompt than turn t of another, so no figure of two sets is compared.
    if let (Some(sa), Some(sb)) = (&a.agent, &b.agent) {
        if sa.session_set != sb.session_set {
            let show = |set: &[String]| format!("{} ({})", set.len(), set.join(", "));
            reasons.push(Reason::new(ReasonCode::Params, format!("session set {} → {}", show(&sa.session_set), show(&sb.session_set))));
            incomparable = true;
        }
    }
    if metric == MetricKind::DecodeTps && (a.decode_is_burst() || b.decode_is_burst()) {
        reasons.push(Reason::new(ReasonCode::ShortStop, "a side's decode rate comes from runs that stopped early"));
        incomparable = true;
    }
    if a.max_tokens != b.max_tokens && metric == MetricKind::DecodeTps {
        reasons.push(Reason::new(ReasonCode::Params, format!("max_tokens {} → {}", a.max_tokens, b.max_tokens)));
        incomparable = true;
    }
    for side in [a, b] {
        for code in [ReasonCode::TokenEstimate, ReasonCode::Nondeterministic, ReasonCode::Errors, ReasonCode::Damaged] {
            if let Some(reason) = side.reasons.iter().find(|r| r.code == code) {
                if !reasons.iter().any(|r| r.code == code) {
                    reasons.push(reason.clone());
                }
            }
        }
    }
    if incomparable {
        row.reasons = reasons;
        return row;
    }

    let call = match (a.metric(metric), b.metric(metric), &a.agent, &b.agent) {
        (Some(ma), Some(mb), _, _) => call(ma, mb, metric, drift),
        (_, _, Some(ca), Some(cb)) if paired(metric) => paired_call(ca, cb, metric, drift),
        // Both medians exist, so both sides have the figure; a step that lost its sessions
        // would be left incomparable rather than guessed at.
        _ => {
            row.reasons = reasons;
            return row;
        }
    };
    row.verdict = call.verdict;
    row.p_value = call.p;
    row.threshold = Some(call.threshold);
    row.alpha = call.alpha;
    reasons.extend(call.reason);
    // A change the client itself could have made up is no change of the engines, however
    // clearly the runs tell it apart.
    if let Some(floor) = crate::floor::relative_floor(metric, checks[0], checks[1], a, b) {
        row.threshold = Some(call.threshold.max(floor));
        let change = log_change(median_a, median_b).unwrap_or(0.0);
        if change.abs() <= floor.ln_1p() {
            if matches!(row.verdict, Verdict::Faster | Verdict::Slower) {
                row.verdict = Verdict::WithinNoise;
            }
            reasons.push(Reason::new(
                ReasonCode::BelowFloor,
                format!("{:+.2} % against ±{:.2} %", (change.exp() - 1.0) * 100.0, floor * 100.0),
            ));
        }
    }
    row.reasons = reasons;
    row
}

/// The verdict of one metric and what it rests on.
struct Call {
    verdict: Verdict,
    p: Option<f64>,
    threshold: f64,
    /// The level the test was held to; `None` where no test could run.
    alpha: Option<f64>,
    /// `low-n` (a call made at α = 0.10) or `few-runs` (no test could run).
    reason: Option<Reason>,
}

/// The smallest p-value the exact test can give at `na` vs `nb` runs, as the fraction it is:
/// 2 / C(na + nb, na) (both samples apart, either way round), e.g. `2/35 ≈ 0.057`.
fn smallest_p_text(na: usize, nb: usize) -> String {
    let p = min_attainable_p(na, nb);
    let splits = (2.0 / p).round();
    let sign = if (p * 1000.0 - (p * 1000.0).round()).abs() < 1e-9 { "=" } else { "≈" };
    format!("{na} vs {nb} runs: the smallest p any outcome can give is 2/{splits:.0} {sign} {p:.3}")
}

fn call(a: &Metric, b: &Metric, metric: MetricKind, drift: f64) -> Call {
    let threshold = a.band.half_width.max(b.band.half_width).max(drift);
    let (na, nb) = (a.values.len(), b.values.len());
    let best_p = min_attainable_p(na, nb);
    if best_p > 0.10 {
        let detail = format!("{na} vs {nb} runs: no exact test can reach p ≤ 0.10; the delta is shown, not judged");
        return Call { verdict: Verdict::WithinNoise, p: None, threshold, alpha: None, reason: Some(Reason::new(ReasonCode::FewRuns, detail)) };
    }
    // α = 0.05 where it is attainable; where it is not (3 vs 3, 3 vs 4, 2 vs 5, …), 0.10.
    let (alpha, low_n) = if best_p <= 0.05 { (0.05, false) } else { (0.10, true) };
    let p = exact_two_sided_p(&a.values, &b.values);
    // The threshold is a relative half-width; compared on the log scale, where ln(1 + t) is the
    // same distance up and down, so the call does not depend on which pass is A.
    let change = log_change(a.median, b.median).unwrap_or(0.0);
    let significant = p.is_some_and(|p| p <= alpha + 1e-12) && change.abs() > threshold.ln_1p();
    let verdict = match (significant, (change > 0.0) == metric.higher_is_faster()) {
        (false, _) => Verdict::WithinNoise,
        (true, true) => Verdict::Faster,
        (true, false) => Verdict::Slower,
    };
    let reason = (low_n && significant).then(|| Reason::new(ReasonCode::LowN, smallest_p_text(na, nb)));
    Call { verdict, p, threshold, alpha: Some(alpha), reason }
}

/// An agent step's cached TTFT or cache hit ratio, A against B turn by turn. Both passes
/// replay the same sessions, so turn `t` (its median over the sessions that reached it) had
/// the same prompt on both sides; what changes between the sides is the engine, and each
/// turn's change is one observation:
/// - cached TTFT: ln(B/A) of each later turn (turn ≥ 1);
/// - cache hit ratio: B's cached ÷ prompt tokens minus A's, at every turn that says both.
///
/// The exact two-sided sign test (ties left out; Dixon & Mood 1946, *JASA* 41:557–566) asks
/// whether B sits above A at more turns than chance would put it; a call also needs the
/// median change to clear the floor and the control cells' drift (for the ratio, in points:
/// 0.02 is two percentage points). α is 0.05 from 6 turns on, 0.10 at 5 (`low-n`); fewer
/// turns are shown, not judged.
fn paired_call(a: &AgentCell, b: &AgentCell, metric: MetricKind, drift: f64) -> Call {
    let changes: Vec<f64> = a
        .by_turn
        .iter()
        .filter_map(|ta| {
            let tb = b.by_turn.iter().find(|tb| tb.turn == ta.turn)?;
            match metric {
                MetricKind::TtftCachedMs if ta.turn >= 1 => log_change(ta.ttft_ms?, tb.ttft_ms?),
                MetricKind::CacheHitRatio => {
                    let hit = |t: &crate::agent::TurnPoint| Some(t.cached_prompt_tokens? / t.prompt_tokens.filter(|p| *p > 0.0)?);
                    Some(hit(tb)? - hit(ta)?)
                }
                _ => None,
            }
        })
        .collect();
    let threshold = FLOOR.max(drift);
    // The cutoff the median change must clear: on the log scale for TTFT, in points for the ratio.
    let cutoff = if metric == MetricKind::CacheHitRatio { threshold } else { threshold.ln_1p() };
    let m = changes.len();
    let best_p = 2.0 * 0.5f64.powi(m as i32);
    if best_p > 0.10 {
        let detail = format!("{m} turns on both sides: no sign test can reach p ≤ 0.10; the delta is shown, not judged");
        return Call { verdict: Verdict::WithinNoise, p: None, threshold, alpha: None, reason: Some(Reason::new(ReasonCode::FewRuns, detail)) };
    }
    let (alpha, low_n) = if best_p <= 0.05 { (0.05, false) } else { (0.10, true) };
    let p = sign_test_p(&changes);
    let median_change = crate::summary::median(&changes).unwrap_or(0.0);
    let significant = p <= alpha + 1e-12 && median_change.abs() > cutoff;
    let verdict = match (significant, (median_change > 0.0) == metric.higher_is_faster()) {
        (false, _) => Verdict::WithinNoise,
        (true, true) => Verdict::Faster,
        (true, false) => Verdict::Slower,
    };
    let reason = (low_n && significant).then(|| Reason::new(ReasonCode::LowN, format!("{m} turns: the smallest p a sign test can give is 2/{:.0} = {best_p:.4}", 2.0 / best_p)));
    Call { verdict, p: Some(p), threshold, alpha: Some(alpha), reason }
}

/// The exact two-sided sign test of "each change is as likely up as down": zeros are left
/// out, and p = 2 · P(Binomial(n, ½) ≤ min(ups, downs)), at most 1 (1 when nothing changed).
pub fn sign_test_p(changes: &[f64]) -> f64 {
    let ups = changes.iter().filter(|c| **c > 0.0).count();
    let downs = changes.iter().filter(|c| **c < 0.0).count();
    let n = ups + downs;
    let fewer = ups.min(downs);
    // C(n, i) / 2ⁿ built term by term, which stays exact enough for the few dozen turns a
    // session has.
    let (mut term, mut tail) = (0.5f64.powi(n as i32), 0.0);
    for i in 0..=fewer {
        tail += term;
        term *= (n - i) as f64 / (i + 1) as f64;
    }
    (2.0 * tail).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::band::band;

    fn metric(values: &[f64]) -> Metric {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        Metric { kind: MetricKind::DecodeTps, median, values: values.to_vec(), band: band(values, median, 0.0) }
    }

    #[test]
    fn swapping_a_and_b_mirrors_the_verdict_within_a_hair_of_the_threshold() {
        // Medians 100 and 102.02: +2.02 % one way, −1.98 % the other, around the 2 % floor.
        // |ln(102.02/100)| = 0.019998 > ln(1.02) = 0.019803 both ways; the samples do not
        // overlap, so p = 0.10 at 3 vs 3 (called at α = 0.10).
        let (a, b) = (metric(&[99.0, 100.0, 100.5]), metric(&[101.9, 102.02, 102.1]));
        let forward = call(&a, &b, MetricKind::DecodeTps, 0.0).verdict;
        let backward = call(&b, &a, MetricKind::DecodeTps, 0.0).verdict;
        assert_eq!((forward, backward), (Verdict::Faster, Verdict::Slower));
        // Just inside the threshold, both ways within noise: 100 → 101.98 is ln 0.019606.
        let c = metric(&[101.9, 101.98, 102.05]);
        assert_eq!(call(&a, &c, MetricKind::DecodeTps, 0.0).verdict, Verdict::WithinNoise);
        assert_eq!(call(&c, &a, MetricKind::DecodeTps, 0.0).verdict, Verdict::WithinNoise);
    }

    #[test]
    fn prompt_sizes_are_apart_by_the_same_measure_whichever_side_is_a() {
        // 1950 and 2050: 2050/1950 − 1 = 5.128 % > 5 % both ways (against A alone, 4.878 % one way).
        assert!(prompts_apart(1950.0, 2050.0) && prompts_apart(2050.0, 1950.0));
        // 2000 and 2090: 90 / 2000 = 4.5 % of the smaller, inside the margin both ways.
        assert!(!prompts_apart(2000.0, 2090.0) && !prompts_apart(2090.0, 2000.0));
        assert!(prompts_apart(0.0, 30.0) && prompts_apart(30.0, 0.0));
        assert!(!prompts_apart(0.0, 0.0));
    }

    #[test]
    fn the_sign_test_matches_the_binomial_tail() {
        // 6 of 6 up: 2 · (1/64) = 0.03125; 5 of 6: 2 · 7/64 = 0.21875; ties are left out.
        assert_eq!(sign_test_p(&[1.0; 6]), 0.03125);
        assert_eq!(sign_test_p(&[1.0, 1.0, 1.0, 1.0, 1.0, -1.0, 0.0]), 0.21875);
        assert_eq!(sign_test_p(&[0.0, 0.0]), 1.0, "nothing changed");
        assert_eq!(sign_test_p(&[-2.0; 10]), sign_test_p(&[2.0; 10]), "either way");
    }

    #[test]
    fn log_change_is_antisymmetric_and_refuses_non_positive_medians() {
        let (x, y) = (log_change(37.0, 91.5).unwrap(), log_change(91.5, 37.0).unwrap());
        assert_eq!(x, -y);
        assert_eq!(log_change(0.0, 1.0), None);
        assert_eq!(log_change(1.0, f64::INFINITY), None);
    }
}
