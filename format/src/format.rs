//! The raw pass format: `pass.json` (provenance, written once and finalised at the end) and
//! `runs.jsonl` (one [`RunRecord`] per line, appended as runs finish). docs/raw-format.md is
//! the user-facing description; change both together and bump [`SCHEMA_VERSION`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::bounded::float;

/// Bumped on any change a reader of older passes would misread. (Floats JSON cannot hold,
/// written as text by [`float`], and server JSON cut at [`super::bounded`]'s bounds were no
/// bump: every pass written before reads as it did, and an older reader refuses such a line,
/// as it refused the `null` written there before, rather than misreading it.)
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassInfo {
    pub schema_version: u32,
    pub pass_id: String,
    pub status: PassStatus,
    /// UTC, RFC 3339; empty for imported passes that did not carry it.
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    pub benchpass: BenchpassInfo,
    pub machine: MachineInfo,
    pub cells: Vec<CellInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<RequestParams>,
    /// CPU time benchpass itself used during the pass (user + system), where the OS tells it.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub harness_cpu_seconds: Option<f64>,
    /// The CSV file a pass came from when it was imported rather than measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<String>,
    /// Whether an idle-sleep assertion was held for the pass, and how; absent in passes from
    /// before it was recorded and in imported ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_awake: Option<crate::machine::KeepAwake>,
    /// What measuring cost benchpass in this session of the pass and how far its clock can be
    /// trusted on this machine (docs/metrics.md, "What measuring costs"); absent in passes from
    /// before it was recorded and in imported ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurer: Option<Measurer>,
    /// Sweeps `--stop-at-saturation` stopped: their levels above `after_concurrency` were not
    /// run, on purpose (docs/metrics.md, "The knee").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped_sweeps: Vec<StoppedSweep>,
}

impl SelfCheck {
    /// "TTFT within 0.42 ms (median 0.21 ms), decode rate within 0.31 % (median 0.12 %): 16
    /// requests at 8 streams against the reference engine on loopback": what the run prints and
    /// the report says.
    pub fn describe(&self) -> String {
        format!(
            "TTFT within {:.2} ms (median {:.2} ms), decode rate within {:.2} % (median {:.2} %): {} requests at {} stream{} against the reference engine on loopback",
            self.ttft_error_max_ms,
            self.ttft_error_median_ms,
            self.decode_error_max * 100.0,
            self.decode_error_median * 100.0,
            self.requests,
            self.streams,
            if self.streams == 1 { "" } else { "s" }
        )
    }
}

/// A thermal gate before a cell (docs/plans.md, `[gaps] cooldown`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CooldownRecord {
    /// The level waited for: the cell starts once the pressure is at or below it.
    pub until: crate::machine::ThermalPressure,
    #[serde(with = "float")]
    pub waited_s: f64,
    /// The pressure when the cell began; absent where this OS tells none (then nothing was
    /// waited for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<crate::machine::ThermalPressure>,
}

impl CooldownRecord {
    /// The cell began above the level waited for: the gate gave up at its `max_s`.
    pub fn started_hot(&self) -> bool {
        self.level.is_some_and(|l| l > self.until)
    }
}

/// A sweep stopped once two levels in a row were past its knee.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppedSweep {
    pub cell: String,
    pub workload: Workload,
    pub target_prompt_tokens: u64,
    /// The last level run; the sweep's levels above it were left out.
    pub after_concurrency: u32,
}

impl StoppedSweep {
    /// Whether a step at `concurrency` of `cell`'s `workload` and `target` is one of the levels
    /// this stop left out.
    pub fn leaves_out(&self, cell: &str, workload: Workload, target: u64, concurrency: u32) -> bool {
        self.cell == cell && self.workload == workload && self.target_prompt_tokens == target && concurrency > self.after_concurrency
    }
}

/// The measurer's own cost and accuracy over one session of a pass (a resumed pass: its last
/// session, the one [`PassInfo::harness_cpu_seconds`] covers too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurer {
    /// Monotonic seconds from the session's start to its end: the span the CPU time is over.
    #[serde(with = "float")]
    pub wall_seconds: f64,
    /// Completion tokens benchpass streamed in the session (warmups and failed runs included:
    /// the CPU time covers them too).
    pub streamed_tokens: u64,
    /// Stream events benchpass read in the session (those it kept and the empty ones).
    pub stream_events: u64,
    /// The smallest step the monotonic clock was seen to take between two reads in a row, in
    /// nanoseconds: its resolution as benchpass sees it, the cost of a read included.
    pub clock_tick_ns: u64,
    /// benchpass's own peak resident memory, in bytes, from its start to the session's last
    /// run (getrusage's `ru_maxrss`, where the OS keeps it): the measuring's, since the
    /// figures and the leaderboard cache are worked out after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
    /// The client against the reference engine on loopback, just before the first cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check: Option<SelfCheck>,
}

/// What the self-check measured: benchpass's TTFT and decode rate against when the reference
/// engine says it actually sent the first and last tokens (its `timings`), on this machine,
/// at this pass's concurrency (capped), minutes before the pass's own runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelfCheck {
    pub streams: u32,
    pub requests: u32,
    pub max_tokens: u64,
    /// |client TTFT − the engine's first-token send time|, median and largest, in ms.
    #[serde(with = "float")]
    pub ttft_error_median_ms: f64,
    #[serde(with = "float")]
    pub ttft_error_max_ms: f64,
    /// |client decode rate ÷ the engine's send rate − 1|, median and largest.
    #[serde(with = "float")]
    pub decode_error_median: f64,
    #[serde(with = "float")]
    pub decode_error_max: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PassStatus {
    /// Being written, or the writer died (a crash leaves this).
    Running,
    Complete,
    /// Stopped by the user (Ctrl-C) before every run was done.
    Interrupted,
    Imported,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchpassInfo {
    pub version: String,
    /// The commit benchpass was built from, when it was built from a git checkout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
}

/// This benchpass: the workspace's version (every crate shares it) and the commit build.rs
/// found.
pub fn benchpass_info() -> BenchpassInfo {
    let commit = env!("BENCHPASS_GIT_COMMIT");
    BenchpassInfo {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        git_commit: (!commit.is_empty()).then(|| commit.to_owned()),
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    /// Host name, or the `machine` column of an imported CSV.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// What a Mac benchmarker checks before trusting a figure: chip, GPU cores, power source
    /// and mode, wired limit, swap, thermal pressure at the pass's start (macOS only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<crate::machine::MacFacts>,
    /// The Linux equivalents where they exist: CPU governor, thermal zones, mains power.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<crate::machine::LinuxPowerFacts>,
}

/// One engine + build + model + lane: the unit a table shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellInfo {
    pub id: String,
    pub engine: EngineInfo,
    pub model: String,
    /// The model family that rows compare engines on (e.g. `qwen3-8b` for a GGUF and an MLX
    /// build of it); absent means the model id is the family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    pub lane: String,
    pub build: BuildInfo,
    /// The engine was started again when an interrupted pass was resumed in the middle of this
    /// cell: its runs come from two server processes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restarted_on_resume: bool,
    /// Fields merged into every request of this cell (the plan's, the preset's, the engine's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_extra: Option<Value>,
    /// Sent as `logit_bias` in the requests of steps that ignore EOS, for an engine that does
    /// not honour `ignore_eos` (mlx-lm): the model's EOS ids, each pushed out of reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_eos_logit_bias: Option<Value>,
    /// How the engine's preset asks it to run past EOS (plan runs): `field`, `logit_bias`, or
    /// `unsupported`, for an engine that cannot be held to its token cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub past_eos: Option<engines::presets::IgnoreEos>,
    /// The engine's prefix cache emptied through its endpoint before the cell's runs, on a
    /// server benchpass did not start (SGLang `/flush_cache`, vLLM `/reset_prefix_cache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_flush: Option<CacheFlushRecord>,
    /// The plan's thermal gate before this cell (`[gaps] cooldown`): how long it waited for the
    /// machine's thermal pressure to come down, and where it stood when the cell began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<CooldownRecord>,
    /// What the server was seen to do before the cell's runs, where its preset assumes a value
    /// instead of citing the engine's source (stream usage, cached tokens, the way past EOS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probed: Option<ProbedBehaviour>,
    /// An imported cell: how each of its steps was requested, as the runs CSV said (its `api`,
    /// `temperature`, `request_rate` and `past_eos` columns). A measured pass keeps these facts
    /// in `request` and this cell's `past_eos`; [`PassInfo::step_request`] reads either.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imported_steps: Vec<ImportedStep>,
    /// Where the cell's energy was read, and its idle baseline; or why it could not be
    /// (docs/metrics.md "Energy"). Absent in a pass from before energy was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<CellEnergy>,
    /// The energy of each step whose streams ran side by side, over the step's span (a run's
    /// own interval holds the others' work there, so its runs record none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_energy: Vec<StepEnergy>,
}

/// A step at N > 1 streams: the machine's joules from the earliest start to the latest end of
/// its successful measured runs (docs/metrics.md "Energy under concurrency").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepEnergy {
    pub workload: Workload,
    pub target_prompt_tokens: u64,
    pub max_tokens: u64,
    pub concurrency: u32,
    /// The successful runs the span is over: all of them from one session of the pass. A step
    /// resumed in a second session is recorded twice, each over part of its runs, and its
    /// figures are worked out from neither.
    pub runs: usize,
    #[serde(with = "float")]
    pub joules: f64,
    /// The span, in seconds.
    #[serde(with = "float")]
    pub seconds: f64,
}

/// Where a run's energy is read (docs/metrics.md "Energy").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnergySource {
    /// Linux RAPL through powercap (`energy_uj`): a counter.
    Rapl,
    /// NVIDIA's NVML total energy counter (`nvmlDeviceGetTotalEnergyConsumption`), summed over GPUs.
    Nvml,
    /// Apple silicon's power through IOReport (the `macmon` crate): sampled power.
    Macmon,
}

impl EnergySource {
    pub fn as_str(self) -> &'static str {
        match self {
            EnergySource::Rapl => "rapl",
            EnergySource::Nvml => "nvml",
            EnergySource::Macmon => "macmon",
        }
    }
}

/// How a source gives energy: a counter read at both ends, or power sampled and integrated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnergyReading {
    Counter,
    SampledPower,
}

/// A cell's energy provenance in `pass.json`: the source and domain its runs' energy comes
/// from, how often it was read, and the idle baseline measured before the cell; or, with no
/// source, why energy is unavailable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellEnergy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<EnergySource>,
    /// What the source covers, e.g. `package+dram` (RAPL), `gpu×2` (NVML), `cpu+gpu+ane+dram`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reading: Option<EnergyReading>,
    /// The sampling interval of the source's series, in milliseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub interval_ms: u64,
    /// Why there is no source (e.g. `powercap unreadable without root`); absent with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// Milliseconds sampled with the engine loaded and idle before the cell's runs (0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idle_ms: u64,
    /// Mean power over that idle interval, in watts.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub idle_watts: Option<f64>,
}

impl CellEnergy {
    /// `source:domain`, the energy part of the comparison key; empty without a source.
    pub fn key(&self) -> String {
        self.source.map(|s| format!("{}:{}", s.as_str(), self.domain)).unwrap_or_default()
    }
}

/// The GPU over a run's interval, from the samples of the pass's energy source that fall in
/// it (macOS: IOReport through macmon, every 100 ms; docs/metrics.md "The GPU over a run"):
/// throttling shows in the frequency before the thermal pressure level moves.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunGpu {
    /// Samples the figures are over.
    pub samples: u32,
    /// Mean and lowest GPU frequency, MHz, over the samples in which the GPU was active (each
    /// sample's own is over its active residency); absent where it was idle throughout.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub freq_mhz_mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub freq_mhz_min: Option<f64>,
    /// Mean share of the time the GPU was active, 0 to 1.
    #[serde(with = "float")]
    pub active_mean: f64,
    /// The hottest of the CPU and GPU temperatures sampled, °C; absent where none was read.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub temp_max_c: Option<f64>,
}

/// A run's energy over its interval, from the cell's source (docs/metrics.md "Energy"):
/// recorded only where one stream ran at a time, since the source measures the machine (or
/// its GPUs), not one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RunEnergy {
    /// Joules from the request's start to its last event.
    #[serde(with = "float")]
    pub joules: f64,
    /// The interval those joules were taken over, in seconds.
    #[serde(with = "float")]
    pub seconds: f64,
    /// Joules from the request's start to the first token (prefill).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub prefill_joules: Option<f64>,
    /// Joules from the first token to the last token event (the decode span).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub decode_joules: Option<f64>,
}

/// How one step's requests were made, in the fields of the comparison key that the pass
/// records rather than its runs. Empty text and `None` where it is not known (a file from
/// before these columns).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepRequest {
    /// `chat` or `completions`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub temperature: Option<f64>,
    /// How the engine was asked to run past EOS: empty when it was not asked (`ignore_eos`
    /// off), else `field`, `logit-bias` or `unsupported`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub past_eos: String,
    /// Seeded arrivals of this many requests a second (`--request-rate`), the step's streams
    /// capping the requests in flight; `None` for streams kept busy (closed loop).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub request_rate: Option<f64>,
    /// The SHA-256 of the shipped texts the step's prompts were drawn from
    /// ([`RequestParams::prompt_sets`]); empty where not known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prompt_set: String,
    /// The objectives its goodput was counted against ([`Slo::key`]); empty where none was
    /// set. Part of the comparison key of goodput figures only: the other figures do not
    /// depend on it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub slo: String,
}

/// Service-level objectives: the most each figure of a run may be for the run to count toward
/// goodput, each in milliseconds; `None` where it is not an objective. `--slo
/// ttft=2000ms,tpot=100ms` (MLPerf Inference's llama3.1-8b server limits) sets two.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub tpot_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub itl_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub e2e_ms: Option<f64>,
}

impl Slo {
    /// The objectives' names, in the order [`Slo::key`] writes them.
    pub const NAMES: [&'static str; 4] = ["ttft", "tpot", "itl", "e2e"];

    /// `ttft=2000ms,tpot=100ms`: names from [`Slo::NAMES`], each with a limit above 0 in `ms`
    /// or `s`, at most once each, at least one.
    pub fn parse(text: &str) -> Result<Slo, String> {
        let mut slo = Slo::default();
        for part in text.split(',').map(str::trim) {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}`: an objective is NAME=LIMIT, e.g. ttft=2000ms (names: {})", Slo::NAMES.join(", ")))?;
            let value = value.trim();
            let (number, scale) = if let Some(ms) = value.strip_suffix("ms") {
                (ms, 1.0)
            } else if let Some(s) = value.strip_suffix('s') {
                (s, 1e3)
            } else {
                return Err(format!("`{part}`: the limit needs a unit, ms or s (e.g. {name}=100ms)"));
            };
            let ms = number.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0).map(|v| v * scale);
            let ms = ms.ok_or_else(|| format!("`{part}`: the limit is a number above 0"))?;
            let slot = match name.trim() {
                "ttft" => &mut slo.ttft_ms,
                "tpot" => &mut slo.tpot_ms,
                "itl" => &mut slo.itl_ms,
                "e2e" => &mut slo.e2e_ms,
                other => return Err(format!("`{other}` is not an objective: the names are {}", Slo::NAMES.join(", "))),
            };
            if slot.replace(ms).is_some() {
                return Err(format!("`{}` is named twice", name.trim()));
            }
        }
        Ok(slo)
    }

    /// Each objective set, as (name, limit in ms), in the order of [`Slo::NAMES`].
    pub fn limits(&self) -> Vec<(&'static str, f64)> {
        let all = [self.ttft_ms, self.tpot_ms, self.itl_ms, self.e2e_ms];
        Slo::NAMES.into_iter().zip(all).filter_map(|(name, v)| Some((name, v?))).collect()
    }

    /// The objectives as one text, the same for the same objectives however they were
    /// written (`tpot=0.1s, ttft=2000ms` → `ttft=2000ms,tpot=100ms`): the comparison key's.
    pub fn key(&self) -> String {
        self.limits().iter().map(|(name, ms)| format!("{name}={ms}ms")).collect::<Vec<_>>().join(",")
    }
}

impl RequestParams {
    /// The planned step of `workload` at `target` run at `concurrency` streams (a sweep plans
    /// one per level); where no step names that level (runs and plan disagree), the first of
    /// that workload and target.
    pub fn step_at(&self, workload: Workload, target: u64, concurrency: u32) -> Option<&Step> {
        let at = |s: &&Step| s.workload == workload && s.target_prompt_tokens == target;
        self.steps.iter().filter(at).find(|s| s.concurrency.unwrap_or(self.concurrency) == concurrency).or_else(|| self.steps.iter().find(at))
    }
}

/// A number of the comparison key as it is written (runs CSV, leaderboard, diff reasons):
/// its shortest exact form, which reads back to the same number; empty when absent.
pub fn key_number(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

impl StepRequest {
    /// Whether anything is known of how the step was requested: every measured pass and every
    /// runs CSV since the columns came names its API.
    pub fn is_known(&self) -> bool {
        !self.api.is_empty()
    }
}

/// One step of an imported cell and how its requests were made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedStep {
    pub workload: Workload,
    pub target_prompt_tokens: u64,
    pub concurrency: u32,
    pub request: StepRequest,
}

/// What a cell's server did when probed before its runs, for the preset values that are
/// assumed (docs/plans.md, "Assumed values, probed"). `None`: not probed, or the probe could
/// not tell (its notes say why).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProbedBehaviour {
    /// A final `usage` in the stream when `stream_options.include_usage` asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_usage: Option<bool>,
    /// Cached prompt tokens reported (`usage.prompt_tokens_details.cached_tokens` or
    /// `timings.cache_n`), zero included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<bool>,
    /// `ignore_eos: true` held a reply that stops early without it to its token cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_eos: Option<bool>,
    /// Where the server contradicts its preset, each with its fix; and why a finding is unknown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// What a cache flush request got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheFlushRecord {
    /// `POST /flush_cache?timeout=30`, for example.
    pub request: String,
    /// The answer's status; absent when none came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The engine said the cache was emptied (a 2xx status).
    pub flushed: bool,
    /// Why not, when it was not: the answer's first line, or the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineInfo {
    pub name: String,
    /// As the server reported it, or as the user gave it; empty when neither.
    pub version: String,
    /// Where `version` came from: `user`, an endpoint such as `GET /version`, `imported`, or `unknown`.
    pub version_source: String,
    /// SHA-256 of the engine executable, when benchpass was told where it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// For an engine benchpass did not start: the process found listening on the URL's port,
    /// whose resident memory the runs record, e.g. `llama-server (pid 4242, listening on port
    /// 8080)`. Absent when benchpass started the engine (its process tree is sampled) or when
    /// no such process could be found (the runs record no memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_of: Option<String>,
    /// Which memory the runs' `server_peak_rss_bytes` hold: `rss` (resident set size, Linux)
    /// or `phys_footprint` (physical footprint, macOS, which counts MLX's GPU buffers).
    /// Absent where no memory was sampled, and in passes from before it was recorded (Linux
    /// resident size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_measure: Option<crate::machine::MemoryMeasure>,
    /// The kernel's lifetime peak of `memory_measure` for the engine's process tree, summed
    /// over its processes, read at the cell's end (macOS `ri_lifetime_max_phys_footprint`;
    /// Linux `VmHWM`, the peak resident size): exact for an engine benchpass started fresh,
    /// and since its own start for a server it did not. Absent where none was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_lifetime_peak_bytes: Option<u64>,
    /// Whether the engine keeps its weights in memory-mapped files, told from its memory at
    /// the cell's end ([`crate::machine::weights_mapped`]): then the physical footprint
    /// (macOS) leaves the weights out, and its memory does not compare with an engine that
    /// copies them (MLX). Absent where it could not be told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights_mapped: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// The folded build hash (see docs/raw-format.md); absent when no weights were hashed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<WeightFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightFile {
    /// Relative to the hashed folder, or the file name when a single file was hashed.
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// The request parameters of a pass driven from the command line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestParams {
    pub api: String,
    #[serde(with = "float")]
    pub temperature: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    pub ignore_eos: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_tokens: Option<u64>,
    /// Extra JSON merged into every request body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
    pub concurrency: u32,
    #[serde(with = "float")]
    pub first_token_timeout_s: f64,
    #[serde(with = "float")]
    pub idle_timeout_s: f64,
    /// What the pass runs, in order.
    pub steps: Vec<Step>,
    /// How a plan's cells took turns (docs/plans.md).
    #[serde(default, skip_serializing_if = "Order::is_sequential")]
    pub order: Order,
    /// The model was not named by the user: it is the only one the server's `/v1/models`
    /// listed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model_picked: bool,
    /// Requests were sent at seeded Poisson arrivals of this many a second (`--request-rate`),
    /// `concurrency` capping the streams in flight, rather than keeping `concurrency` busy.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub request_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_seed: Option<u64>,
    /// The service-level objectives a run must meet to count toward goodput (`--slo`);
    /// absent where none was set (docs/metrics.md, "Goodput").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<Slo>,
    /// For each workload the pass runs (by name), the SHA-256 of the shipped texts its prompts
    /// are drawn from (the corpus, the sustained prompt, the agent traces, the quality prompts):
    /// two benchpass versions that ship other texts send other prompts. Absent in passes from
    /// before it (then not known).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub prompt_sets: std::collections::BTreeMap<String, String>,
}

/// How a plan's cells take turns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// Each cell runs all its repetitions, then the next cell starts.
    #[default]
    Sequential,
    /// Round k runs repetition k of every cell in turn, each cell's engine started fresh (and
    /// warmed up) for its turn, so that slow drift in the machine (heat, background load)
    /// falls on every engine alike instead of on whichever ran last.
    Interleaved,
}

impl Order {
    pub fn is_sequential(&self) -> bool {
        *self == Order::Sequential
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Order::Sequential => "sequential",
            Order::Interleaved => "interleaved",
        }
    }
}

/// One workload at one prompt target: its warmups, then its measured runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub workload: Workload,
    /// 0 for the sustained workload.
    pub target_prompt_tokens: u64,
    pub max_tokens: u64,
    pub warmup: u32,
    pub runs: u32,
    /// Ask the engine to ignore EOS for this step (ppN-tgM runs must reach their cap).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_eos: bool,
    /// A soak step runs for this many seconds (its `runs` is then how many it made room for
    /// in the schedule, not a count to reach).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<u64>,
    /// A quality step asks for this many alternatives per token (`top_logprobs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u32>,
    /// Streams in flight at once for this step, where the plan's workload sets its own (agent
    /// sessions side by side); else the pass's `concurrency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    Sustained,
    PromptMatrix,
    PpTg,
    /// Continuous sustained runs for hours, the engine's memory sampled throughout.
    Soak,
    /// Multi-turn coding-agent sessions replayed from shipped traces (docs/agent.md): each
    /// turn is a run, every request resends the conversation so far.
    Agent,
    /// Greedy runs over shipped prompts with the top-K logprobs of every token, compared
    /// with a reference cell's (docs/quality.md).
    Quality,
}

impl Workload {
    pub const ALL: [Workload; 6] =
        [Workload::Sustained, Workload::PromptMatrix, Workload::PpTg, Workload::Soak, Workload::Agent, Workload::Quality];

    pub fn as_str(self) -> &'static str {
        match self {
            Workload::Sustained => "sustained",
            Workload::PromptMatrix => "prompt-matrix",
            Workload::PpTg => "pp-tg",
            Workload::Soak => "soak",
            Workload::Agent => "agent",
            Workload::Quality => "quality",
        }
    }

    pub fn parse(s: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.as_str() == s)
    }

    /// Whether its steps are prompt-size targets (else its prompts are its own: the sustained
    /// prompt, shipped traces or shipped prompts, and its target is 0).
    pub fn has_prompt_targets(self) -> bool {
        matches!(self, Workload::PromptMatrix | Workload::PpTg)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenCountSource {
    /// The server's `usage` object.
    Usage,
    /// The server's tokenizer endpoint (llama.cpp `POST /tokenize`) applied to the text.
    Tokenizer,
    /// Four characters per token: a guess, and marked as one.
    Estimate,
    /// As another tool's result file gives them, which does not say how it counted (vLLM's
    /// benchmark client takes `usage` where it finds it, else counts the text with its own
    /// tokenizer).
    Tool,
}

impl TokenCountSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenCountSource::Usage => "usage",
            TokenCountSource::Tokenizer => "tokenizer",
            TokenCountSource::Estimate => "estimate",
            TokenCountSource::Tool => "tool",
        }
    }

    pub fn parse(s: &str) -> Option<TokenCountSource> {
        [TokenCountSource::Usage, TokenCountSource::Tokenizer, TokenCountSource::Estimate, TokenCountSource::Tool]
            .into_iter()
            .find(|t| t.as_str() == s)
    }
}

/// One request: what was asked, every stream event with its arrival time, and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The [`CellInfo::id`] this run belongs to.
    pub cell: String,
    pub workload: Workload,
    /// The prompt size asked for; 0 for the sustained workload.
    pub target_prompt_tokens: u64,
    /// Repetition index within (cell, workload, target), counted separately for warmups.
    pub rep: u32,
    pub warmup: bool,
    pub max_tokens: u64,
    /// Streams in flight at once while this run ran.
    #[serde(default = "one")]
    pub concurrency: u32,
    /// Wall-clock start, milliseconds since the Unix epoch (for ordering and drift, not timing).
    #[serde(default)]
    pub started_unix_ms: u64,
    /// When the request was due, in nanoseconds on the monotonic clock after its phase (its
    /// step's warmups, or its measured runs) began: its arrival under `--request-rate`; where
    /// streams are kept busy, or for a session's later turn, the instant it was sent (it was
    /// due when a stream or its previous turn freed). Absent in imported runs and passes from
    /// before it (docs/metrics.md, "Latency from the schedule").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_ns: Option<u64>,
    /// When the request was sent, on the same clock as `scheduled_ns`: the origin of its
    /// events' `t_ns`. `sent_ns − scheduled_ns` is the time it waited in benchpass for a free
    /// stream (its scheduling delay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_count_source: Option<TokenCountSource>,
    /// First token − request start (docs/metrics.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// Last token event − first token event (docs/metrics.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    /// SHA-256 of the text and reasoning text the run produced, in order: equal outputs at
    /// temperature 0 have equal hashes (determinism).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_sha256: Option<String>,
    /// Peak memory of the engine's process tree while the run ran, in bytes, in the cell's
    /// `memory_measure` (resident size on Linux, physical footprint on macOS), where the
    /// engine could be sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_peak_rss_bytes: Option<u64>,
    /// The engine tree's peak resident size over the run, where `memory_measure` is another
    /// figure (macOS: `ri_resident_size`, which counts mapped weight pages the footprint
    /// leaves out and misses the GPU buffers it counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_peak_resident_bytes: Option<u64>,
    /// The file-backed part of the engine tree's resident memory at its highest over the run
    /// (Linux `RssFile`: mapped weights among it), where the OS tells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_peak_file_backed_bytes: Option<u64>,
    /// The machine's swap in use when the run began and when it ended, from the pass's
    /// sampler (about 1 Hz: the readings in force at those instants); macOS `vm.swapusage`
    /// used, Linux `SwapTotal − SwapFree` of `/proc/meminfo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_used_before_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_used_after_bytes: Option<u64>,
    /// macOS's memory pressure level, the highest in force over the run
    /// (`kern.memorystatus_vm_pressure_level`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_pressure: Option<crate::machine::MemoryPressure>,
    /// Linux's memory pressure, the highest `some avg10` of `/proc/pressure/memory` in force
    /// over the run: the percentage of the last 10 s in which some task waited for memory.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub memory_psi_some_avg10: Option<f64>,
    /// Engine counters (Prometheus `…_total`) that moved during the run, where the engine has
    /// a metrics endpoint and one stream ran at a time. A Prometheus value may be `NaN` or
    /// `+Inf`: such a count is written as text ([`float`]).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option_map")]
    pub server_counters: Option<std::collections::BTreeMap<String, f64>>,
    /// The machine's thermal pressure, the higher of the readings just before and just after
    /// the run (macOS: `notifyutil -g com.apple.system.thermalpressurelevel`); absent where
    /// the OS does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thermal_pressure: Option<crate::machine::ThermalPressure>,
    /// Speculative decoding's draft acceptance for this run (0 to 1) as the engine's own log
    /// gave it, where the engine gives a ratio and no counts (oMLX's DFlash `acceptance=`),
    /// and one stream ran at a time.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float::option")]
    pub logged_draft_acceptance: Option<f64>,
    /// The run's energy from the cell's energy source (`CellInfo::energy`), where it has one
    /// and one stream ran at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<RunEnergy>,
    /// The GPU over the run's interval, where the energy source samples it (Apple silicon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<RunGpu>,
    /// The server's `usage` object, verbatim within [`super::bounded`]'s bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// The server's `timings` object (llama.cpp), verbatim within [`super::bounded`]'s bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<Value>,
    /// Agent workload: which session of the step (0-based) and which turn of it (0-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Agent and quality workloads: the shipped trace or prompt the request came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// Prompt tokens the engine says it served from its prefix cache (usage
    /// `prompt_tokens_details.cached_tokens`, else llama.cpp's `timings.cache_n`); absent where
    /// the engine says nothing, never guessed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_tokens: Option<u64>,
    /// Agent workload: whether the reply was a tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<bool>,
    /// Quality workload: the number of alternatives asked for per token (`top_logprobs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u32>,
    /// Which try at its slot this run belongs to: 0, unless `--resume` ran again whole an agent
    /// session that an interruption had cut short. A run whose slot has runs of a later attempt
    /// is superseded: it stays on disk and out of every figure (`runner::superseded`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: u32,
    /// Where the server's stream contradicted itself (two different finish reasons, a usage
    /// that changed its prompt count or lost tokens); the run keeps the last value of each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stream_conflicts: Vec<String>,
    /// SSE events whose JSON carried nothing (no token, logprobs, role, finish reason, usage,
    /// timings, error or tool call): counted, not kept in `events`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub empty_events: u64,
    /// Every SSE event that carried a JSON payload with something in it, in arrival order;
    /// empty for imported runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EventRecord>,
    /// What the serving figures read of `events`, where a reader dropped them to save memory
    /// (`store::read_pass_keeping` with [`crate::store::Keep::Times`]); never written. Read it through
    /// [`RunRecord::token_times`], which works it out from `events` wherever they are held.
    #[serde(skip)]
    pub dropped_events: Option<crate::metrics::TokenTimes>,
}

/// Whether a count is zero: such a field is left out of the file, so a record without it
/// reads and writes the same bytes as before the field existed.
fn is_zero<N: Default + PartialEq>(n: &N) -> bool {
    *n == N::default()
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    /// A stable code (docs/raw-format.md lists them), e.g. `connect`, `http-500`, `idle-timeout`.
    pub class: String,
    #[serde(default)]
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Arrival on the monotonic clock, nanoseconds after the request was sent.
    pub t_ns: u64,
    /// Bytes the event took on the wire.
    pub bytes: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    /// A streamed tool call's argument text (`delta.tool_calls[].function.arguments`); a
    /// name-only delta carries none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_args: String,
    /// The logprobs of the tokens this event carried, where they were asked for and given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logprobs: Vec<TokenLogprob>,
}

/// One generated token with its logprob and the top alternatives the server gave for its
/// position (the chosen token among them when the server includes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Vec<u8>>,
    /// `-inf` (a token the model gave no chance) is written as text ([`float`]).
    #[serde(with = "float")]
    pub logprob: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<TopLogprob>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopLogprob {
    pub token: String,
    #[serde(with = "float")]
    pub logprob: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Vec<u8>>,
}

impl EventRecord {
    /// A token event carries text, reasoning text or tool-call arguments; a role-only, name-only
    /// or finish event does not.
    pub fn carries_tokens(&self) -> bool {
        !self.text.is_empty() || !self.reasoning.is_empty() || !self.tool_args.is_empty()
    }
}

impl CellInfo {
    /// A cell with its engine and model and nothing else recorded (lane `text`, no build hash):
    /// what a pass writer, an importer or a test fills in from there, so that a field added to
    /// cells is written in one place.
    pub fn new(id: impl Into<String>, engine: EngineInfo, model: impl Into<String>) -> CellInfo {
        CellInfo {
            id: id.into(),
            engine,
            model: model.into(),
            family: None,
            lane: "text".to_owned(),
            build: BuildInfo::default(),
            restarted_on_resume: false,
            request_extra: None,
            ignore_eos_logit_bias: None,
            past_eos: None,
            cache_flush: None,
            cooldown: None,
            probed: None,
            imported_steps: Vec::new(),
            energy: None,
            step_energy: Vec::new(),
        }
    }

    pub fn family(&self) -> &str {
        self.family.as_deref().unwrap_or(&self.model)
    }
}

impl EngineInfo {
    /// An engine known by its name only: no version yet (its source `unknown`), nothing hashed.
    pub fn named(name: impl Into<String>) -> EngineInfo {
        EngineInfo { name: name.into(), version_source: "unknown".to_owned(), ..EngineInfo::default() }
    }
}

impl PassInfo {
    /// How the step of `workload` at `target` and `concurrency` of cell `cell` was requested:
    /// from the pass's request parameters and the cell's way past EOS for a measured pass,
    /// from what the CSV said for an imported one. The one rule the comparison key, the
    /// runs CSV's columns and the diff read.
    pub fn step_request(&self, cell: &str, workload: Workload, target: u64, concurrency: u32) -> StepRequest {
        let cell = self.cells.iter().find(|c| c.id == cell);
        let Some(request) = self.request.as_ref() else {
            let imported = cell.and_then(|c| {
                c.imported_steps.iter().find(|s| (s.workload, s.target_prompt_tokens, s.concurrency) == (workload, target, concurrency))
            });
            return imported.map(|s| s.request.clone()).unwrap_or_default();
        };
        let step = request.step_at(workload, target, concurrency);
        let ignore_eos = request.ignore_eos || step.is_some_and(|s| s.ignore_eos);
        use engines::presets::IgnoreEos;
        let past_eos = match cell {
            _ if !ignore_eos => "",
            Some(c) => match c.past_eos {
                Some(way) => way.as_str(),
                None if c.ignore_eos_logit_bias.is_some() => IgnoreEos::LogitBias.as_str(),
                None => IgnoreEos::Field.as_str(),
            },
            None => IgnoreEos::Field.as_str(),
        };
        StepRequest {
            api: request.api.clone(),
            temperature: Some(request.temperature),
            past_eos: past_eos.to_owned(),
            request_rate: request.request_rate,
            prompt_set: request.prompt_sets.get(workload.as_str()).cloned().unwrap_or_default(),
            slo: request.slo.as_ref().map(Slo::key).unwrap_or_default(),
        }
    }

    /// The provenance of a complete pass made by a program rather than measured (tests and
    /// benchmarks): this benchpass, no times, no request parameters.
    pub fn synthetic(pass_id: impl Into<String>, machine: impl Into<String>, cells: Vec<CellInfo>) -> PassInfo {
        PassInfo {
            schema_version: SCHEMA_VERSION,
            pass_id: pass_id.into(),
            status: PassStatus::Complete,
            started_at: String::new(),
            finished_at: None,
            benchpass: benchpass_info(),
            machine: MachineInfo { name: machine.into(), ..MachineInfo::default() },
            cells,
            request: None,
            harness_cpu_seconds: None,
            imported_from: None,
            keep_awake: None,
            measurer: None,
            stopped_sweeps: Vec::new(),
        }
    }
}

impl RunRecord {
    /// A run at its place in the pass with nothing measured yet: every figure, counter and
    /// event absent. Importers and records of runs that never ran fill in what they know.
    pub fn unmeasured(cell: &str, workload: Workload, target_prompt_tokens: u64, rep: u32, warmup: bool, max_tokens: u64) -> RunRecord {
        RunRecord {
            cell: cell.to_owned(),
            workload,
            target_prompt_tokens,
            rep,
            warmup,
            max_tokens,
            concurrency: 1,
            started_unix_ms: 0,
            scheduled_ns: None,
            sent_ns: None,
            prompt_sha256: None,
            prompt_tokens: None,
            completion_tokens: None,
            token_count_source: None,
            ttft_ms: None,
            decode_ms: None,
            finish_reason: None,
            http_status: None,
            error: None,
            output_sha256: None,
            server_peak_rss_bytes: None,
            server_peak_resident_bytes: None,
            server_peak_file_backed_bytes: None,
            swap_used_before_bytes: None,
            swap_used_after_bytes: None,
            memory_pressure: None,
            memory_psi_some_avg10: None,
            server_counters: None,
            thermal_pressure: None,
            logged_draft_acceptance: None,
            energy: None,
            gpu: None,
            usage: None,
            timings: None,
            session: None,
            turn: None,
            prompt_id: None,
            cached_prompt_tokens: None,
            tool_call: None,
            top_logprobs: None,
            attempt: 0,
            stream_conflicts: vec![],
            empty_events: 0,
            events: vec![],
            dropped_events: None,
        }
    }

    /// The times of the run's token events and its last event: from its events where it holds
    /// them, else what a reader kept of them when it dropped them; `None` for a run that had
    /// none (an imported run, or one that failed before its first event).
    pub fn token_times(&self) -> Option<std::borrow::Cow<'_, crate::metrics::TokenTimes>> {
        if !self.events.is_empty() {
            return Some(std::borrow::Cow::Owned(crate::metrics::TokenTimes::of(&self.events)));
        }
        self.dropped_events.as_ref().map(std::borrow::Cow::Borrowed)
    }

    /// How many of [`RunRecord::token_times`]' events carry tokens, without making them.
    pub fn n_token_events(&self) -> Option<u64> {
        if !self.events.is_empty() {
            return Some(self.events.iter().filter(|e| e.carries_tokens()).count() as u64);
        }
        self.dropped_events.as_ref().map(|t| t.arrivals_ns.len() as u64)
    }

    /// How long the run waited in benchpass between when it was due and when it was sent, in
    /// milliseconds: 0 where streams were kept busy; `None` where either instant is not
    /// recorded. The one rule that the figures from the schedule add to the figures from the
    /// send.
    pub fn schedule_delay_ms(&self) -> Option<f64> {
        Some(self.sent_ns?.saturating_sub(self.scheduled_ns?) as f64 / 1e6)
    }

    /// Whether the machine swapped during the run: its swap in use rose by more than
    /// [`crate::machine::SWAPPED_BYTES`] between the run's start and end. `None` where swap
    /// was not sampled. The one rule the `swapped` mark reads.
    pub fn swapped(&self) -> Option<bool> {
        let (before, after) = (self.swap_used_before_bytes?, self.swap_used_after_bytes?);
        Some(after.saturating_sub(before) > crate::machine::SWAPPED_BYTES)
    }

    pub fn is_error(&self) -> bool {
        self.error.is_some()
    }

    /// SHA-256 of everything the events carried (reasoning then text, event by event).
    pub fn hash_output(events: &[EventRecord]) -> Option<String> {
        use sha2::Digest as _;
        if events.is_empty() {
            return None;
        }
        let mut hasher = sha2::Sha256::new();
        for event in events {
            hasher.update(event.reasoning.as_bytes());
            hasher.update(event.text.as_bytes());
            hasher.update(event.tool_args.as_bytes());
        }
        Some(hex(&hasher.finalize()))
    }
}

/// `bytes` as lowercase hex, how the files write every digest.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
