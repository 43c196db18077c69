//! The runs of a pass: `benchpass run --url ...` as a plan of one cell ([`RunOptions`], handed
//! to the one executor, `plan::run::execute`), and what every cell's turn is made of there:
//! the server probed, the prompts cut, the jobs run (warmups then measured runs; a session's
//! turns one after another, sessions side by side) and each run appended as it finishes.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use futures_util::StreamExt as _;
use sha2::{Digest, Sha256};

use crate::client::{stream_request, Prompt, RequestConfig, StreamOutcome};
use crate::plan::run::{CellPlan, Form, PassPlan, PlanRunOptions};
use crate::corpus;
use crate::metrics;
use crate::pass::*;
use crate::probe::{self, TokenCounter};
use crate::progress::Progress;
use crate::provenance::{self, HashCache};

/// Everything `benchpass run` needs, already validated; the CLI builds it.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub url: String,
    pub engine: String,
    pub engine_version: Option<String>,
    pub engine_path: Option<PathBuf>,
    pub weights: Option<PathBuf>,
    pub hash_cache: Option<PathBuf>,
    pub lane: String,
    /// The model family, when it differs from the model id.
    pub family: Option<String>,
    /// In order; see [`steps_for`] for the command line's shape.
    pub steps: Vec<Step>,
    pub concurrency: u32,
    /// The name of the variable that holds the API key; the key itself is never stored.
    pub api_key_env: Option<String>,
    /// `request.model` is to be picked: the one model the server lists (recorded as picked).
    pub pick_model: bool,
    /// Requests at Poisson arrivals (`--request-rate`); `concurrency` then caps the streams.
    pub arrivals: Option<Arrivals>,
    /// The objectives goodput is counted against (`--slo`), recorded in the pass's request.
    pub slo: Option<benchpass_format::Slo>,
    pub request: RequestConfig,
    /// What benchpass knows of the engine (`--preset`): its version, metrics, draft counters,
    /// way past EOS, request fields and cache flush, as in a plan; `None` for a plain
    /// OpenAI-compatible server.
    pub preset: Option<&'static crate::plan::presets::Preset>,
    pub out: Option<PathBuf>,
    pub pass_id: Option<String>,
    pub progress: crate::progress::ProgressMode,
    /// The reference engine to check the client against before the first run (`None`:
    /// `--no-self-check`, or a caller that has none).
    pub self_check: Option<crate::self_check::SelfCheckServer>,    /// `--stop-at-saturation` (`crate::plan::run::Saturation`).
    pub saturation: Option<crate::plan::run::Saturation>,
}

impl RunOptions {
    /// A pass of `steps` against the server at `url`, asking for `model`, with the command
    /// line's defaults: engine `openai-compatible`, lane `text`, one stream, the chat API at
    /// temperature 0, a first-token timeout of 600 s and an idle timeout of 60 s, nothing hashed,
    /// no progress shown, the folder and pass id chosen by `run_pass`. Callers change what they
    /// need.
    pub fn new(url: &str, model: &str, steps: Vec<Step>) -> RunOptions {
        RunOptions {
            url: url.to_owned(),
            engine: "openai-compatible".to_owned(),
            engine_version: None,
            engine_path: None,
            weights: None,
            hash_cache: None,
            lane: "text".to_owned(),
            family: None,
            steps,
            concurrency: 1,
            api_key_env: None,
            pick_model: false,
            arrivals: None,
            slo: None,
            request: RequestConfig {
                api: crate::client::Api::Chat,
                model: model.to_owned(),
                temperature: 0.0,
                seed: None,
                ignore_eos: false,
                min_tokens: None,
                extra: None,
                headers: Vec::new(),
                first_token_timeout: std::time::Duration::from_secs(600),
                idle_timeout: std::time::Duration::from_secs(60),
            },
            preset: None,
            out: None,
            pass_id: None,
            progress: crate::progress::ProgressMode::Quiet,
            self_check: None,
            saturation: None,
        }
    }

    /// The pass a `--url` run is: a plan of one cell, `c0`, whose engine benchpass does not
    /// start, its steps all of one workload (no gaps), in order.
    fn as_plan(&self) -> PassPlan<'static> {
        let over = self.request.extra.as_ref().and_then(serde_json::Value::as_object).cloned().unwrap_or_default();
        let cell = CellPlan {
            id: "c0".to_owned(),
            engine: self.engine.clone(),
            model_named: if self.pick_model { "(the model the server lists)".to_owned() } else { self.request.model.clone() },
            model: (!self.pick_model).then(|| self.request.model.clone()),
            family: self.family.clone(),
            lane: self.lane.clone(),
            preset: self.preset,
            url: self.url.clone(),
            start: None,
            version: self.engine_version.clone(),
            version_command: None,
            executable: self.engine_path.clone(),
            executable_named: "--engine-path",
            weights: self.weights.clone(),
            extra: over.clone(),
        };
        PassPlan {
            name: self.engine.clone(),
            form: Form::Url,
            cells: vec![cell],
            steps: self.steps.iter().map(|&step| (0, step)).collect(),
            order: Order::Sequential,
            // `--extra` is the cell's, over the preset's fields.
            request: RequestConfig { model: String::new(), extra: None, ..self.request.clone() },
            // The request's record holds the fields as sent: the preset's under `--extra`.
            recorded_extra: match self.preset {
                Some(preset) => crate::plan::run::request_extra(None, Some(preset), &over),
                None => self.request.extra.clone(),
            },
            concurrency: self.concurrency,
            arrivals: self.arrivals,
            slo: self.slo.clone(),
            between_workloads_s: 0.0,
            between_cells_s: 0.0,
            source: None,
        }
    }
}

/// What a finished (or interrupted) pass amounted to.
#[derive(Debug, Clone)]
pub struct PassSummary {
    pub dir: PathBuf,
    pub status: PassStatus,
    pub n_runs: usize,
    pub n_failed: usize,
    pub n_short: usize,
    /// Every source the successful runs' token counts came from.
    pub token_count_sources: Vec<TokenCountSource>,
    /// Completion tokens and stream events of every run this session recorded (the
    /// measurer's cost is per token and per event of them).
    pub streamed_tokens: u64,
    pub stream_events: u64,
    /// Energy of the steps at N > 1 streams this session ran, by cell id, not yet in pass.json.
    pub step_energy: Vec<(String, benchpass_format::StepEnergy)>,
}

/// One request to make: a step's warmup or measured repetition with its prompt cut.
pub struct Job {
    pub workload: Workload,
    pub target: u64,
    pub max_tokens: u64,
    pub ignore_eos: bool,
    pub rep: u32,
    pub warmup: bool,
    pub prompt: Arc<Prompt>,
    /// Agent workload: jobs of one session run in order, one after another; sessions run
    /// side by side up to the concurrency.
    pub session: Option<u32>,
    pub turn: Option<u32>,
    /// The shipped trace or prompt the job came from.
    pub prompt_id: Option<String>,
    /// Quality workload: ask for the top-K logprobs of every token.
    pub top_logprobs: Option<u32>,
    /// The step's own concurrency, where it has one (else the target's).
    pub concurrency: Option<u32>,
    /// Recorded as the run's `attempt`: above 0 for a session `--resume` runs again whole.
    pub attempt: u32,
}

impl Job {
    /// A job of a workload whose prompt is one text, nothing else about it.
    pub fn text(workload: Workload, target: u64, max_tokens: u64, rep: u32, warmup: bool, prompt: String) -> Job {
        Job {
            workload,
            target,
            max_tokens,
            ignore_eos: false,
            rep,
            warmup,
            prompt: Arc::new(Prompt::Text(prompt)),
            session: None,
            turn: None,
            prompt_id: None,
            top_logprobs: None,
            concurrency: None,
            attempt: 0,
        }
    }
}

/// The steps of a command-line pass: one per prompt target (one target, 0, for sustained),
/// each with the same runs, warmups and cap.
pub fn steps_for(workload: Workload, targets: &[u64], runs: u32, warmup: u32, max_tokens: u64) -> Vec<Step> {
    let targets = if workload.has_prompt_targets() { targets } else { &[0][..] };
    targets
        .iter()
        .map(|&target_prompt_tokens| Step { workload, target_prompt_tokens, max_tokens, warmup, runs, ignore_eos: false, duration_s: None, top_logprobs: None, concurrency: None })
        .collect()
}

/// The levels of `--concurrency N[,N...]`: at least one, each once.
pub fn sweep_levels(levels: &[u32]) -> anyhow::Result<Vec<u32>> {
    anyhow::ensure!(!levels.is_empty() && !levels.contains(&0), "--concurrency takes streams of 1 or more, e.g. 4 or 1,2,4,8");
    let mut seen = Vec::new();
    for &level in levels {
        anyhow::ensure!(!seen.contains(&level), "--concurrency {level} appears twice in the sweep");
        seen.push(level);
    }
    Ok(seen)
}

/// `steps` at each concurrency level in turn; one level leaves them as they are (the pass's
/// concurrency applies), several give every step once per level with its own `concurrency`.
pub fn sweep(steps: &[Step], levels: &[u32]) -> Vec<Step> {
    if levels.len() < 2 {
        return steps.to_vec();
    }
    levels.iter().flat_map(|&level| steps.iter().map(move |s| Step { concurrency: Some(level), ..*s })).collect()
}

/// What benchpass learned from a server before its first run.
pub(crate) struct ServerFacts {
    pub version: String,
    pub version_source: String,
    pub counter: TokenCounter,
}

/// Probes a server: it answers `/v1/models` (else a one-line error naming the URL), its
/// version (unless the user gave one), and whether it has a tokenizer endpoint.
pub(crate) async fn probe_server(
    http: &reqwest::Client,
    base: &str,
    api_key: Option<&str>,
    model: &str,
    engine_version: Option<&str>,
) -> anyhow::Result<ServerFacts> {
    let models = probe::served_models(http, base, api_key).await?;
    if !models.is_empty() && !models.iter().any(|m| m == model) {
        // A server may list thousands of models: name a few.
        const SHOWN: usize = 8;
        let mut listed = models.iter().take(SHOWN).map(String::as_str).collect::<Vec<_>>().join(", ");
        if models.len() > SHOWN {
            listed.push_str(&format!(", and {} more", models.len() - SHOWN));
        }
        eprintln!("{}", crate::progress::printable(&format!("warning: {base} lists models [{listed}], not `{model}`; many servers accept any name, so going on")));
    }
    let (version, version_source) = match engine_version {
        Some(v) => (v.to_owned(), "user".to_owned()),
        None => probe::reported_version(http, base).await.unwrap_or_else(|| (String::new(), "unknown".to_owned())),
    };
    Ok(ServerFacts { version, version_source, counter: TokenCounter::detect(http, base).await })
}

/// Streams one request on a task of its own. Every stream of a concurrent step is polled by
/// the one task that runs the step, and that task also writes each finished run, counts its
/// tokens and scrapes metrics: a stream read there would have its events timestamped late by
/// whatever that task was busy with. A task of its own is polled by whichever worker is free.
async fn stream_on_a_task_of_its_own(target: &Target<'_>, body: serde_json::Value) -> StreamOutcome {
    /// Dropping the run (Ctrl-C, the end of a step) ends its stream too.
    struct AbortOnDrop(tokio::task::JoinHandle<StreamOutcome>);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let (http, url, request) = (target.http.clone(), target.url.clone(), target.request.clone());
    let api_key = target.api_key.map(str::to_owned);
    let live = target.live.cloned();
    let mut task = AbortOnDrop(tokio::spawn(async move {
        stream_request(&http, &url, api_key.as_deref(), &request, &body, live.as_deref()).await
    }));
    match (&mut task.0).await {
        Ok(outcome) => outcome,
        Err(e) => StreamOutcome {
            error: Some(RunError { class: "internal".to_owned(), message: format!("benchpass failed reading the stream: {e}") }),
            ..StreamOutcome::default()
        },
    }
}

/// The HTTP client every pass uses: no Nagle delay, a connection per stream kept alive; HTTPS
/// with the system's roots and any `--ca-cert`.
pub(crate) fn http_client(concurrency: u32) -> anyhow::Result<reqwest::Client> {
    Ok(crate::tls::with_extra_roots(reqwest::Client::builder())
        .connect_timeout(std::time::Duration::from_secs(10))
        .tcp_nodelay(true)
        // A redirect is not followed: the figures would be another server's. The 3xx is
        // recorded as `http-3xx` with its Location (client.rs).
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(concurrency as usize)
        .build()?)
}

/// Reads the API key from the variable the user named; the key itself is never stored.
pub(crate) fn api_key(var: Option<&str>) -> anyhow::Result<Option<String>> {
    match var {
        Some(var) => {
            let key = std::env::var(var).with_context(|| format!("--api-key-env {var}: the variable is not set"))?;
            if !crate::secrets::register(&key) {
                eprintln!(
                    "note: the key in {var} is shorter than {} characters, so it is taken for a placeholder and not redacted from what servers echo",
                    crate::secrets::MIN_SECRET_CHARS
                );
            }
            Ok(Some(key))
        }
        None => Ok(None),
    }
}

/// Hashes a weight file or folder through the on-disk cache.
pub(crate) fn hash_build(weights: &std::path::Path, hash_cache: Option<&std::path::Path>, progress: crate::progress::ProgressMode) -> anyhow::Result<BuildInfo> {
    let cache_path = hash_cache.map(std::path::Path::to_owned).or_else(HashCache::default_path);
    let mut cache = cache_path.as_deref().map(HashCache::load).unwrap_or_default();
    let build = provenance::hash_weights(weights, &mut cache, &crate::progress::HashBar::new(progress))?;
    if let Err(e) = cache.save() {
        eprintln!("warning: could not save the weight-hash cache: {e:#}");
    }
    Ok(build)
}

pub(crate) fn request_params(request: &RequestConfig, concurrency: u32, steps: Vec<Step>) -> RequestParams {
    RequestParams {
        api: request.api.as_str().to_owned(),
        temperature: request.temperature,
        seed: request.seed,
        ignore_eos: request.ignore_eos,
        min_tokens: request.min_tokens,
        extra: request.extra.clone(),
        concurrency,
        first_token_timeout_s: request.first_token_timeout.as_secs_f64(),
        idle_timeout_s: request.idle_timeout.as_secs_f64(),
        order: Order::Sequential,
        model_picked: false,
        request_rate: None,
        arrival_seed: None,
        slo: None,
        prompt_sets: steps_prompt_sets(&steps),
        steps,
    }
}

/// Each workload of `steps`, by name, with the hash of the shipped texts its prompts come from.
fn steps_prompt_sets(steps: &[Step]) -> std::collections::BTreeMap<String, String> {
    steps.iter().map(|s| (s.workload.as_str().to_owned(), crate::workloads::prompt_set(s.workload))).collect()
}

/// What a pass against a running server would do, without touching the server or the disk.
pub fn dry_run(options: &RunOptions) -> String {
    crate::plan::run::dry_run_of(&options.as_plan(), 1.0)
}

/// The model to ask for when the user named none: the one model the server lists, else an
/// error that lists what it does list.
pub(crate) async fn pick_model(http: &reqwest::Client, base: &str, api_key: Option<&str>) -> anyhow::Result<String> {
    let mut models = probe::served_models(http, base, api_key).await?;
    match models.len() {
        1 => Ok(models.remove(0)),
        0 => anyhow::bail!("{base}/v1/models lists no model: give --model"),
        n => {
            let listed: Vec<_> = models.iter().take(8).map(|m| crate::probe::server_string(m)).collect();
            let more = if n > 8 { format!(", and {} more", n - 8) } else { String::new() };
            anyhow::bail!("{base}/v1/models lists {n} models ({}{more}): give --model", listed.join(", "))
        }
    }
}

/// The `pass.json` of a pass about to be measured on this machine, by this benchpass.
pub(crate) fn new_pass_info(pass_id: String, started_at: String, cells: Vec<CellInfo>, request: RequestParams) -> PassInfo {
    PassInfo {
        schema_version: SCHEMA_VERSION,
        pass_id,
        status: PassStatus::Running,
        started_at,
        finished_at: None,
        benchpass: provenance::benchpass_info(),
        machine: provenance::machine_info(),
        cells,
        request: Some(request),
        harness_cpu_seconds: None,
        imported_from: None,
        keep_awake: None,
        measurer: None,
        stopped_sweeps: Vec::new(),
    }
}

pub(crate) fn new_summary(dir: &std::path::Path) -> PassSummary {
    PassSummary {
        dir: dir.to_owned(),
        status: PassStatus::Complete,
        n_runs: 0,
        n_failed: 0,
        n_short: 0,
        token_count_sources: Vec::new(),
        streamed_tokens: 0,
        stream_events: 0,
        step_energy: Vec::new(),
    }
}

/// Set once by Ctrl-C; every running loop watches it.
#[derive(Clone)]
pub(crate) struct Interrupt(tokio::sync::watch::Receiver<bool>);

impl Interrupt {
    /// Starts listening for Ctrl-C (SIGINT).
    pub fn on_ctrl_c() -> Interrupt {
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                let _ = tx.send(true);
            }
            // Keep the sender alive so that receivers never see the channel close.
            std::future::pending::<()>().await;
        });
        Interrupt(rx)
    }

    /// One that is never set, for a test.
    #[cfg(test)]
    pub(crate) fn never() -> Interrupt {
        let (tx, rx) = tokio::sync::watch::channel(false);
        // The sender kept alive for good: a closed channel would read as never set too, but
        // `wait` would return at once.
        std::mem::forget(tx);
        Interrupt(rx)
    }

    pub fn is_set(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once Ctrl-C has been pressed (at once if it already was).
    pub async fn wait(&mut self) {
        let _ = self.0.wait_for(|set| *set).await;
    }
}

/// A server being measured for one cell: everything a run needs.
pub(crate) struct Target<'a> {
    pub http: &'a reqwest::Client,
    /// The completions endpoint, e.g. `http://127.0.0.1:8080/v1/chat/completions`.
    pub url: String,
    pub api_key: Option<&'a str>,
    pub request: &'a RequestConfig,
    pub counter: &'a TokenCounter,
    pub cell_id: &'a str,
    pub concurrency: u32,
    /// The engine's memory, where benchpass started it.
    pub memory: Option<&'a crate::memory::MemorySampler>,
    /// The machine's state (thermal and memory pressure, swap), sampled for the whole pass.
    pub machine: Option<&'a crate::sampler::MachineSampler>,
    /// The engine's Prometheus endpoint, scraped around each run when streams run one at a time.
    pub metrics_url: Option<String>,
    /// The engine's log, where it writes draft acceptance and nowhere else (oMLX): read around
    /// each run when streams run one at a time.
    pub draft_log: Option<crate::engine_log::LogWatch>,
    /// Fed as tokens arrive, for the progress display's live rate.
    pub live: Option<&'a Arc<crate::progress::Live>>,
    /// Merged into `logit_bias` for jobs that ignore EOS, where the engine has no `ignore_eos`.
    pub ignore_eos_logit_bias: Option<&'a serde_json::Value>,
    /// Whether `ignore_eos: true` goes into the requests of jobs that ignore EOS: not for an
    /// engine whose preset has no way past EOS (`IgnoreEos::Unsupported`).
    pub send_ignore_eos: bool,
    /// Agent jobs send `cache_prompt: true`: the engine's preset turns llama.cpp's prompt cache
    /// off for cold prompts and the user did not set it, while an agent session is measured
    /// with the cache (docs/agent.md).
    pub agent_cache_prompt: bool,
    /// Send requests at Poisson arrivals instead of keeping `concurrency` streams busy (then
    /// `concurrency` caps the streams in flight).
    pub arrivals: Option<Arrivals>,
}

/// Requests sent at seeded Poisson arrivals, as serving benchmarks do (vLLM `bench serve
/// --request-rate`): the gaps between one request and the next are exponential with mean
/// 1 / `rate` seconds, the same for the same seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrivals {
    /// Requests per second.
    pub rate: f64,
    pub seed: u64,
}

impl Arrivals {
    /// When each of `n` requests is due, after the first at 0.
    pub fn offsets(&self, n: usize) -> Vec<std::time::Duration> {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
        let mut at = 0.0f64;
        (0..n)
            .map(|i| {
                if i > 0 {
                    // Inverse transform: U in (0, 1] so that ln U is finite.
                    let u: f64 = 1.0 - rng.random::<f64>();
                    at += -u.ln() / self.rate;
                }
                std::time::Duration::from_secs_f64(at)
            })
            .collect()
    }
}

/// Runs `jobs` against `target`, appending each run to the pass as it ends. Returns false when
/// Ctrl-C stopped it (runs in flight are abandoned, finished ones are on disk).
pub(crate) async fn run_jobs(
    target: &Target<'_>,
    jobs: &[Job],
    writer: &mut PassWriter,
    progress: &Progress,
    summary: &mut PassSummary,
    interrupt: &mut Interrupt,
) -> anyhow::Result<bool> {
    // Warmups finish before measured runs start, step by step.
    let phases = jobs.chunk_by(|a, b| (a.workload, a.target, a.warmup, a.concurrency) == (b.workload, b.target, b.warmup, b.concurrency));
    for phase in phases {
        // A chain runs its jobs one after another: a session's turns, or one job alone.
        let chains = phase.chunk_by(|a, b| a.session.is_some() && a.session == b.session);
        let streams = phase.first().and_then(|job| job.concurrency).unwrap_or(target.concurrency);
        // Each chain waits for its arrival, if requests arrive at a rate; else it starts as soon
        // as a stream is free.
        let due = match target.arrivals {
            Some(arrivals) => arrivals.offsets(phase.chunk_by(|a, b| a.session.is_some() && a.session == b.session).count()),
            None => Vec::new(),
        };
        let phase_start = tokio::time::Instant::now();
        let mut runs = futures_util::stream::iter(chains.zip(0..))
            .map(|(chain, i)| {
                let at = due.get(i).map(|offset| phase_start + *offset);
                Box::pin(
                    futures_util::stream::once(async move {
                        if let Some(at) = at {
                            tokio::time::sleep_until(at).await;
                        }
                    })
                    // The chain's first job was due at its arrival, even when every stream was
                    // busy then; a later turn is due when the one before it ends.
                    .flat_map(move |()| {
                        futures_util::stream::iter(chain.iter().zip(0..))
                            .then(move |(job, k)| run_one(target, job, Due { phase_start, at: at.filter(|_| k == 0) }))
                    }),
                )
            })
            .flatten_unordered(streams as usize);
        let mut span = StepSpan::default();
        loop {
            tokio::select! {
                biased;
                _ = interrupt.wait() => return Ok(false),
                next = runs.next() => {
                    let Some(run) = next else { break };
                    writer.append(&run)?;
                    progress.on_run(&run);
                    tally(summary, &run);
                    span.add(phase_start, &run);
                }
            }
        }
        // Streams side by side: the machine's energy is the step's, over its span, read once
        // its runs are all on disk.
        let first = &phase[0];
        let shared = streams > 1 && !first.warmup && !matches!(first.workload, Workload::Agent | Workload::Quality | Workload::Soak);
        if let (true, Some(energy)) = (shared, target.machine.and_then(|m| m.energy())) {
            if let Some((joules, seconds)) = span.energy(energy).await {
                let step = benchpass_format::StepEnergy {
                    workload: first.workload,
                    target_prompt_tokens: first.target,
                    max_tokens: first.max_tokens,
                    concurrency: streams,
                    runs: span.runs,
                    joules,
                    seconds,
                };
                summary.step_energy.push((target.cell_id.to_owned(), step));
            }
        }
    }
    Ok(true)
}

/// From the earliest start to the latest end of a step's successful measured runs, on the
/// monotonic clock: the span of its serving figures (`analysis::serving::span_ms`, there from
/// the runs' records), a run ending at its last event.
#[derive(Default)]
struct StepSpan {
    from: Option<tokio::time::Instant>,
    to: Option<tokio::time::Instant>,
    runs: usize,
}

impl StepSpan {
    fn add(&mut self, phase_start: tokio::time::Instant, run: &RunRecord) {
        let (Some(sent_ns), Some(last)) = (run.sent_ns, run.events.last()) else { return };
        if run.warmup || run.is_error() {
            return;
        }
        let start = phase_start + std::time::Duration::from_nanos(sent_ns);
        let end = start + std::time::Duration::from_nanos(last.t_ns);
        self.from = Some(self.from.map_or(start, |t| t.min(start)));
        self.to = Some(self.to.map_or(end, |t| t.max(end)));
        self.runs += 1;
    }

    /// Joules and seconds over the span, once a reading past its end is in.
    async fn energy(&self, energy: &crate::sampler::EnergySampling) -> Option<(f64, f64)> {
        let (from, to) = self.from.zip(self.to)?;
        if !energy.wait_past(to).await {
            return None;
        }
        let joules = energy.joules_between(from, to).filter(|j| j.is_finite())?;
        Some((joules, to.duration_since(from).as_secs_f64()))
    }
}

/// `benchpass run --url`: the one executor ([`crate::plan::run::execute`]) runs the pass as a
/// plan of one cell whose engine benchpass does not start.
pub async fn run_pass(options: RunOptions) -> anyhow::Result<PassSummary> {
    // The address is checked before anything else is read (the API key's variable).
    probe::base_url(&options.url)?;
    let run = PlanRunOptions {
        out: options.out.clone(),
        pass_id: options.pass_id.clone(),
        gap_scale: 1.0,
        progress: options.progress,
        hash_cache: options.hash_cache.clone(),
        api_key_env: options.api_key_env.clone(),
        resume: None,
        self_check: options.self_check.clone(),
        saturation: options.saturation.clone(),
    };
    crate::plan::run::execute(&options.as_plan(), run).await
}

/// At a cell's end, what its engine's memory says of the whole cell: the kernel's lifetime
/// peak and whether the engine maps its weights, from the latest sample. Whether anything was
/// recorded (so that `pass.json` is written again).
pub(crate) fn record_cell_memory(info: &mut PassInfo, cell_id: &str, sampler: Option<&crate::memory::MemorySampler>) -> bool {
    let Some(latest) = sampler.and_then(crate::memory::MemorySampler::latest) else { return false };
    let Some(cell) = info.cells.iter_mut().find(|c| c.id == cell_id) else { return false };
    let weight_bytes = (!cell.build.files.is_empty()).then(|| cell.build.files.iter().map(|f| f.bytes).sum::<u64>());
    let footprint = (latest.measure == crate::platform::MemoryMeasure::PhysFootprint).then_some(latest.bytes);
    cell.engine.memory_lifetime_peak_bytes = latest.lifetime_peak_bytes.filter(|&b| b > 0);
    cell.engine.weights_mapped =
        benchpass_format::machine::weights_mapped(weight_bytes, latest.file_backed_bytes, latest.resident_bytes, footprint);
    true
}

/// Moves the step energies `summary` holds into their cells in `info`; whether any was (so
/// that `pass.json` is written again).
pub(crate) fn record_step_energy(info: &mut PassInfo, summary: &mut PassSummary) -> bool {
    let mut recorded = false;
    for (cell_id, step) in summary.step_energy.drain(..) {
        if let Some(cell) = info.cells.iter_mut().find(|c| c.id == cell_id) {
            cell.step_energy.push(step);
            recorded = true;
        }
    }
    recorded
}

/// What a session of a pass measures of benchpass itself from its start: the CPU time and
/// monotonic clock then, the clock's tick and the self-check's result.
pub(crate) struct SessionStart {
    pub cpu_seconds: Option<f64>,
    pub at: std::time::Instant,
    pub clock_tick_ns: u64,
    pub self_check: Option<benchpass_format::format::SelfCheck>,
}

/// Final status, finish time, CPU used and the rest of the measurer's cost, written to
/// `pass.json`.
pub(crate) fn finish(info: &mut PassInfo, writer: &PassWriter, summary: &PassSummary, session: SessionStart) -> anyhow::Result<()> {
    info.status = summary.status;
    info.finished_at = Some(provenance::utc_now_rfc3339());
    info.harness_cpu_seconds = match (session.cpu_seconds, provenance::process_cpu_seconds()) {
        (Some(start), Some(end)) => Some(end - start),
        _ => None,
    };
    info.measurer = Some(benchpass_format::format::Measurer {
        wall_seconds: session.at.elapsed().as_secs_f64(),
        streamed_tokens: summary.streamed_tokens,
        stream_events: summary.stream_events,
        clock_tick_ns: session.clock_tick_ns,
        peak_rss_bytes: crate::platform::process_peak_rss_bytes(),
        self_check: session.self_check,
    });
    writer.update_info(info)?;
    Ok(())
}

pub(crate) fn tally(summary: &mut PassSummary, run: &RunRecord) {
    summary.n_runs += 1;
    summary.streamed_tokens += run.completion_tokens.unwrap_or(0);
    summary.stream_events += run.events.len() as u64 + run.empty_events;
    if run.is_error() {
        summary.n_failed += 1;
    } else if is_short_stop(run) {
        summary.n_short += 1;
    }
    // The sources the figures rest on: a run that failed (a server that died mid-pass) counts
    // what it kept however it can, and says nothing of how the others were counted.
    if let Some(source) = run.token_count_source.filter(|_| !run.is_error()) {
        if !summary.token_count_sources.contains(&source) {
            summary.token_count_sources.push(source);
        }
    }
}

// The rules every reader of runs shares, and what a pass id may be, are the pass format's.
pub use benchpass_format::pass_id::{check_pass_id, default_pass_id};
pub use benchpass_format::runs::{is_short_stop, superseded};

/// One planned request: a step's warmup or measured repetition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Slot {
    pub step: Step,
    pub rep: u32,
    pub warmup: bool,
}

/// Every slot of `steps`: per step, its warmups then its measured runs.
pub(crate) fn all_slots(steps: &[Step]) -> Vec<Slot> {
    let mut slots = Vec::new();
    for &step in steps {
        for warmup in [true, false] {
            let n = if warmup { step.warmup } else { step.runs };
            slots.extend((0..n).map(|rep| Slot { step, rep, warmup }));
        }
    }
    slots
}

/// How many runs a slot makes: one, or a session's turns, or a quality round's prompts.
pub(crate) fn runs_in_slot(slot: &Slot) -> u64 {
    places_in_slot("", slot).len() as u64
}

/// Where a run sits in a plan: its cell, its slot (workload, target, repetition, warmup) and,
/// within an agent session or a quality round, its turn or its prompt. One place is one
/// planned job: a resumed pass makes the places it lacks, and a plan's pass is complete when
/// every place has a run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct JobPlace {
    pub cell: String,
    pub workload: Workload,
    pub target: u64,
    pub rep: u32,
    pub warmup: bool,
    pub session: Option<u32>,
    pub turn: Option<u32>,
    pub prompt_id: Option<String>,
}

impl JobPlace {
    pub fn of_run(run: &RunRecord) -> JobPlace {
        JobPlace {
            cell: run.cell.clone(),
            workload: run.workload,
            target: run.target_prompt_tokens,
            rep: run.rep,
            warmup: run.warmup,
            session: run.session,
            turn: run.turn,
            prompt_id: run.prompt_id.clone(),
        }
    }

    pub fn of_job(cell: &str, job: &Job) -> JobPlace {
        JobPlace {
            cell: cell.to_owned(),
            workload: job.workload,
            target: job.target,
            rep: job.rep,
            warmup: job.warmup,
            session: job.session,
            turn: job.turn,
            prompt_id: job.prompt_id.clone(),
        }
    }

    /// A record of this place that never ran (its engine did not start, its prompt could not be
    /// cut), failed with `error`.
    pub fn not_run(&self, max_tokens: u64, attempt: u32, error: RunError) -> RunRecord {
        RunRecord {
            // No stream was ever in flight for it.
            concurrency: 0,
            error: Some(error),
            session: self.session,
            turn: self.turn,
            prompt_id: self.prompt_id.clone(),
            attempt,
            ..RunRecord::unmeasured(&self.cell, self.workload, self.target, self.rep, self.warmup, max_tokens)
        }
    }

    /// How a person names it: `c0 agent session 1 turn 4`, `c1 quality round 0 prompt code-03`.
    pub fn describe(&self) -> String {
        let mut out = format!("{} {}", self.cell, self.workload.as_str());
        if self.workload.has_prompt_targets() {
            out.push_str(&format!(" {}", self.target));
        }
        let kind = match self.workload {
            Workload::Agent => "session",
            Workload::Quality => "round",
            _ => "run",
        };
        out.push_str(&format!(" {}{kind} {}", if self.warmup { "warmup " } else { "" }, self.rep));
        if let Some(turn) = self.turn {
            out.push_str(&format!(" turn {turn}"));
        } else if let Some(prompt) = &self.prompt_id {
            out.push_str(&format!(" prompt {}", crate::progress::printable(prompt)));
        }
        out
    }
}

/// The places of `slot` in `cell`, without cutting a prompt: one, or a session's turns, or a
/// quality round's prompts.
pub(crate) fn places_in_slot(cell: &str, slot: &Slot) -> Vec<JobPlace> {
    let own = match slot.step.workload {
        Workload::Agent => crate::workloads::agent::jobs(&slot.step, slot.rep, slot.warmup),
        Workload::Quality => crate::workloads::quality::jobs(&slot.step, slot.rep, slot.warmup),
        _ => Ok(Vec::new()),
    };
    match own {
        Ok(jobs) if !jobs.is_empty() => jobs.iter().map(|job| JobPlace::of_job(cell, job)).collect(),
        // One run: a workload of its own prompts that do not load fails when its jobs are
        // made, as one run with the reason.
        _ => vec![JobPlace {
            cell: cell.to_owned(),
            workload: slot.step.workload,
            target: slot.step.target_prompt_tokens,
            rep: slot.rep,
            warmup: slot.warmup,
            session: None,
            turn: None,
            prompt_id: None,
        }],
    }
}

/// The jobs of `slots`, in order, with every prompt cut before the first request is sent.
pub(crate) async fn cut_slots(slots: &[Slot], ignore_eos: bool, http: &reqwest::Client, counter: &TokenCounter) -> anyhow::Result<Vec<Job>> {
    let mut jobs = Vec::new();
    for &Slot { step, rep, warmup } in slots {
        let prompt = match step.workload {
            Workload::Sustained | Workload::Soak => corpus::SUSTAINED_PROMPT.to_owned(),
            // A slot is a whole session, or a round of the quality prompts: several jobs.
            Workload::Agent | Workload::Quality => {
                let own = match step.workload {
                    Workload::Agent => crate::workloads::agent::jobs(&step, rep, warmup),
                    _ => crate::workloads::quality::jobs(&step, rep, warmup),
                };
                let own = own.with_context(|| format!("the {} workload", step.workload.as_str()))?;
                jobs.extend(own.into_iter().map(|job| Job { ignore_eos: ignore_eos || step.ignore_eos, concurrency: step.concurrency, ..job }));
                continue;
            }
            // Warmups take excerpts the measured runs do not, so they cannot warm a prompt cache for them.
            Workload::PromptMatrix | Workload::PpTg => {
                let excerpt_index = if warmup { step.runs.saturating_add(rep) } else { rep };
                let target = step.target_prompt_tokens;
                cut_prompt(target, excerpt_index, http, counter)
                    .await
                    .with_context(|| format!("cutting a {target}-token prompt"))?
            }
        };
        jobs.push(Job {
            ignore_eos: ignore_eos || step.ignore_eos,
            concurrency: step.concurrency,
            ..Job::text(step.workload, step.target_prompt_tokens, step.max_tokens, rep, warmup, prompt)
        });
    }
    Ok(jobs)
}

/// The longest prompt (instruction + excerpt) whose token count does not pass `target`, found
/// by bisection on its length in characters.
async fn cut_prompt(target: u64, excerpt_index: u32, http: &reqwest::Client, counter: &TokenCounter) -> anyhow::Result<String> {
    let instruction = counter.count(http, &corpus::prompt_of("", 0)).await?;
    anyhow::ensure!(
        instruction <= target,
        "a {target}-token prompt cannot hold the {instruction}-token instruction; ask for at least {instruction}"
    );
    // English prose runs 3–6 characters a token; 8 per token leaves room for any tokenizer.
    let excerpt = corpus::excerpt(target, excerpt_index, target as usize * 8 + 1000);
    let (mut fits, mut too_long) = (0usize, excerpt.chars().count() + 1);
    while too_long - fits > 1 {
        let mid = fits + (too_long - fits) / 2;
        if counter.count(http, &corpus::prompt_of(&excerpt, mid)).await? <= target {
            fits = mid;
        } else {
            too_long = mid;
        }
    }
    Ok(corpus::prompt_of(&excerpt, fits))
}

/// When a run was due: the start of its phase (the clock of `scheduled_ns` and `sent_ns`) and
/// its arrival, where it had one; without one it was due when it was sent.
#[derive(Debug, Clone, Copy)]
struct Due {
    phase_start: tokio::time::Instant,
    at: Option<tokio::time::Instant>,
}

async fn run_one(target: &Target<'_>, job: &Job, due: Due) -> RunRecord {
    let mut body = target.request.body(&job.prompt, job.max_tokens, job.top_logprobs);
    // An agent session is measured with the engine's prefix cache on: it is what the workload
    // is about. The other workloads keep the cell's setting (llama.cpp's preset turns it off
    // so that every prompt is cold), and so does a cell whose user set it; docs/agent.md.
    if job.workload == Workload::Agent && target.agent_cache_prompt {
        body["cache_prompt"] = serde_json::Value::Bool(true);
    }
    if !target.send_ignore_eos {
        // `--ignore-eos` put it in every body; an engine with no way past EOS is sent nothing
        // it would reject or drop.
        if let Some(fields) = body.as_object_mut() {
            fields.remove("ignore_eos");
        }
    }
    if job.ignore_eos {
        if target.send_ignore_eos {
            body["ignore_eos"] = serde_json::Value::Bool(true);
        }
        if let Some(serde_json::Value::Object(bias)) = target.ignore_eos_logit_bias {
            // On top of any logit_bias the plan sets.
            if !body.get("logit_bias").is_some_and(serde_json::Value::is_object) {
                body["logit_bias"] = serde_json::json!({});
            }
            if let Some(merged) = body["logit_bias"].as_object_mut() {
                merged.extend(bias.clone());
            }
        }
    }
    // From here to the record, the run is in flight: nothing may start a process
    // (docs/reliability.md); its readings of the machine come from the pass's samplers.
    let _in_flight = crate::platform::spawn::InFlight::begin();
    let started_unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    // Counters only mean this run's work when no other stream runs beside it.
    let concurrency = job.concurrency.unwrap_or(target.concurrency);
    let metrics_url = target.metrics_url.as_deref().filter(|_| concurrency == 1);
    let counters_before = match metrics_url {
        Some(url) => crate::prometheus::scrape(target.http, url).await,
        None => None,
    };
    let draft_log = target.draft_log.as_ref().filter(|_| concurrency == 1);
    let log_before = draft_log.and_then(crate::engine_log::LogWatch::offset);
    if let Some(live) = target.live {
        live.on_start(format!("{} {}", target.cell_id, crate::progress::job_name(job.workload, job.target, job.warmup, job.rep, job.turn)));
    }
    let clocks_at_start = crate::platform::awake::Clocks::now();
    let started = tokio::time::Instant::now();
    let since_phase = |at: tokio::time::Instant| at.saturating_duration_since(due.phase_start).as_nanos() as u64;
    let (scheduled_ns, sent_ns) = (since_phase(due.at.unwrap_or(started)), since_phase(started));
    let mut outcome = stream_on_a_task_of_its_own(target, body).await;
    let ended = tokio::time::Instant::now();
    // Two clock reads: whether the machine slept while the run was in flight (platform::awake).
    if let Some(sleep) = clocks_at_start.slept_until(&crate::platform::awake::Clocks::now()) {
        outcome.error = Some(system_sleep(sleep, outcome.error.take()));
    }
    let memory = target.memory.and_then(|m| m.over_run(started, ended));
    let machine = target.machine.map(|m| m.over_run(started, ended)).unwrap_or_default();
    let server_counters = match (metrics_url, &counters_before) {
        (Some(url), Some(before)) => crate::prometheus::scrape(target.http, url).await.map(|after| crate::prometheus::counter_deltas(before, &after)),
        _ => None,
    };
    let logged_draft_acceptance = match (draft_log, log_before) {
        (Some(log), Some(offset)) => log.acceptance_since(offset),
        _ => None,
    };
    if let Some(wait) = outcome.retry_after.filter(|_| matches!(outcome.http_status, Some(429 | 503))) {
        // The server asked for a pause: the next request from this stream honours it.
        tokio::time::sleep(wait).await;
    }
    let times = metrics::event_times(&outcome.events);
    // The machine's energy measures one run only where no other stream runs beside it.
    let energy = match target.machine.and_then(|m| m.energy()) {
        Some(e) if concurrency == 1 => e.over_run(started, times.ttft_ms, times.decode_ms, ended).await,
        _ => None,
    };
    // The GPU is the machine's, like the thermal level: read for every run, from the samples
    // in by now (at one stream, the energy's wait has let the last one in).
    let gpu = target.machine.and_then(|m| m.energy()).and_then(|e| e.gpu_over(started, ended));
    let (prompt_tokens, completion_tokens, source) = count_tokens(target, &job.prompt.text_for_counting(), job.max_tokens, &outcome).await;
    let cached_prompt_tokens = metrics::cached_prompt_tokens(outcome.usage.as_ref(), outcome.timings.as_ref());
    // Said only where it can be: a run that failed before any event says nothing either way.
    let tool_call = (job.workload == Workload::Agent && !outcome.events.is_empty()).then_some(outcome.tool_call);
    RunRecord {
        cell: target.cell_id.to_owned(),
        workload: job.workload,
        target_prompt_tokens: job.target,
        rep: job.rep,
        warmup: job.warmup,
        max_tokens: job.max_tokens,
        concurrency,
        started_unix_ms,
        scheduled_ns: Some(scheduled_ns),
        sent_ns: Some(sent_ns),
        prompt_sha256: Some(provenance::hex(&Sha256::digest(job.prompt.identity_bytes()))),
        prompt_tokens,
        completion_tokens,
        token_count_source: source,
        ttft_ms: times.ttft_ms,
        decode_ms: times.decode_ms,
        finish_reason: outcome.finish_reason,
        http_status: outcome.http_status,
        error: outcome.error,
        output_sha256: RunRecord::hash_output(&outcome.events),
        server_peak_rss_bytes: memory.map(|m| m.peak_bytes),
        server_peak_resident_bytes: memory.and_then(|m| m.resident_peak_bytes),
        server_peak_file_backed_bytes: memory.and_then(|m| m.file_backed_peak_bytes),
        swap_used_before_bytes: machine.swap_used_before,
        swap_used_after_bytes: machine.swap_used_after,
        memory_pressure: machine.memory_pressure,
        memory_psi_some_avg10: machine.psi_some_avg10,
        server_counters,
        thermal_pressure: machine.thermal,
        logged_draft_acceptance,
        energy,
        gpu,
        usage: outcome.usage,
        timings: outcome.timings,
        session: job.session,
        turn: job.turn,
        prompt_id: job.prompt_id.clone(),
        cached_prompt_tokens,
        tool_call,
        top_logprobs: job.top_logprobs,
        attempt: job.attempt,
        stream_conflicts: outcome.conflicts,
        empty_events: outcome.empty_events,
        events: outcome.events,
        dropped_events: None,
    }
}

/// The error of a run during which the machine slept for `sleep`: class `system-sleep`, which
/// replaces any class the run had (a stream cut by a sleep fails as whatever the sleep did to
/// it), that class kept in the message.
fn system_sleep(sleep: std::time::Duration, earlier: Option<RunError>) -> RunError {
    let mut message = format!(
        "the machine slept for about {:.1} s while the run was in flight (the clock that counts sleep ran that far ahead of the one that does not): its timings are not the engine's",
        sleep.as_secs_f64()
    );
    if let Some(earlier) = earlier {
        message.push_str(&format!("; it had failed as {}: {}", earlier.class, earlier.message));
    }
    RunError { class: "system-sleep".to_owned(), message }
}

/// Token counts in order of trust: the server's usage, its tokenizer, then the estimate.
async fn count_tokens(
    context: &Target<'_>,
    prompt: &str,
    max_tokens: u64,
    outcome: &StreamOutcome,
) -> (Option<u64>, Option<u64>, Option<TokenCountSource>) {
    // A usage count above 2^32, or far above what the run asked for, is not a count: it is kept
    // verbatim in the record's `usage` and the counts come from the next source. "Far above":
    // more than the stream could carry if the server ignored the cap up to the runaway bound
    // (4 × max_tokens + 64 token events) at `MAX_TOKENS_PER_EVENT` tokens each.
    let ceiling = metrics::MAX_COUNT.min(
        max_tokens.saturating_mul(4).saturating_add(64).saturating_mul(metrics::MAX_TOKENS_PER_EVENT),
    );
    let from_usage = |key: &str| {
        outcome.usage.as_ref().and_then(|u| u.get(key)).and_then(serde_json::Value::as_u64).filter(|&n| n <= metrics::MAX_COUNT)
    };
    if let Some(completion) = from_usage("completion_tokens").filter(|&n| n <= ceiling) {
        return (from_usage("prompt_tokens"), Some(completion), Some(TokenCountSource::Usage));
    }
    if outcome.events.is_empty() {
        return (None, None, None);
    }
    let output: String = outcome.events.iter().flat_map(|e| [e.reasoning.as_str(), e.text.as_str(), e.tool_args.as_str()]).collect();
    if !context.counter.is_estimate() {
        let prompt_count = context.counter.count(context.http, prompt).await;
        let output_count = context.counter.count(context.http, &output).await;
        if let (Ok(p), Ok(c)) = (prompt_count, output_count) {
            return (Some(p), Some(c), Some(TokenCountSource::Tokenizer));
        }
    }
    let estimate = &TokenCounter::Estimate;
    let p = estimate.count(context.http, prompt).await.ok();
    let c = estimate.count(context.http, &output).await.ok();
    (p, c, Some(TokenCountSource::Estimate))
}

#[cfg(test)]
mod tests {
    use crate::pass::{RunRecord, Workload};

    #[test]
    fn superseded_runs_are_those_whose_slot_has_runs_of_a_later_attempt() {
        let run = |cell: &str, rep: u32, turn: u32, attempt: u32| RunRecord {
            session: Some(rep),
            turn: Some(turn),
            attempt,
            ..RunRecord::unmeasured(cell, Workload::Agent, 0, rep, false, 8)
        };
        let runs = [
            run("c0", 0, 0, 0),
            run("c0", 0, 1, 0),
            // Session 0 again, whole: the two turns above are superseded.
            run("c0", 0, 0, 1),
            run("c0", 0, 1, 1),
            run("c0", 0, 2, 1),
            // Another session, and the same session of another cell, are other slots.
            run("c0", 1, 0, 0),
            run("c1", 0, 0, 0),
        ];
        assert_eq!(super::superseded(&runs), [true, true, false, false, false, false, false]);
        let warmup = RunRecord { warmup: true, ..runs[0].clone() };
        assert_eq!(super::superseded(&[runs[2].clone(), warmup]), [false, false], "a warmup session is a slot of its own");
        assert_eq!(super::superseded(&runs[..2]), [false, false]);
    }

    #[test]
    fn a_run_that_slept_fails_as_system_sleep_keeping_what_it_failed_as() {
        let sleep = std::time::Duration::from_secs(600);
        let plain = super::system_sleep(sleep, None);
        assert_eq!(plain.class, "system-sleep");
        assert!(plain.message.starts_with("the machine slept for about 600.0 s"), "{}", plain.message);
        let cut = super::system_sleep(sleep, Some(crate::pass::RunError { class: "idle-timeout".into(), message: "no event for 60 s".into() }));
        assert_eq!(cut.class, "system-sleep");
        assert!(cut.message.ends_with("; it had failed as idle-timeout: no event for 60 s"), "{}", cut.message);
    }

    #[test]
    fn poisson_arrivals_are_seeded_and_their_mean_gap_is_one_over_the_rate() {
        let arrivals = super::Arrivals { rate: 20.0, seed: 7 };
        let offsets = arrivals.offsets(10_000);
        assert_eq!(offsets, arrivals.offsets(10_000), "the same seed, the same gaps");
        assert_eq!(offsets[0], std::time::Duration::ZERO);
        assert!(offsets.windows(2).all(|w| w[0] <= w[1]));
        // 9,999 exponential gaps of mean 50 ms: their mean is within 3 % of it (σ/√n ≈ 0.5 ms).
        let mean = offsets[9_999].as_secs_f64() / 9_999.0;
        assert!((mean / 0.05 - 1.0).abs() < 0.03, "{mean}");
        assert_ne!(offsets, super::Arrivals { seed: 8, ..arrivals }.offsets(10_000));
    }
}
