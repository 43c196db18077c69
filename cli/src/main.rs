//! `benchpass`: the command line. Arguments become typed options here; the library never sees clap.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};
use harness::client::{Api, RequestConfig};
use harness::pass::{PassStatus, Workload};
use harness::progress::ProgressMode;
use harness::runner::{run_pass, RunOptions};
use sim::SimProfile;

/// Reproducible benchmarks of local LLM inference servers (any OpenAI-compatible server).
///
/// Point `benchpass run` at a running server (or a plan of engines) to record a raw pass
/// (every stream event, with its arrival time) on disk; `report`, `diff`, `leaderboard` and
/// `quality` turn passes into tables; `list` finds them; `benchpass sim` is a reference server
/// with a known token schedule; `export` and `import` move runs in and out as CSV.
#[derive(Parser)]
#[command(name = "benchpass", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Run(Box<RunArgs>),
    Demo(DemoArgs),
    #[command(subcommand)]
    Plan(PlanCommand),
    Sim(SimArgs),
    Report(ReportArgs),
    Diff(DiffArgs),
    Leaderboard(LeaderboardArgs),
    Quality(QualityArgs),
    List(ListArgs),
    Export(ExportArgs),
    Import(ImportArgs),
    Completions(CompletionsArgs),
    /// Print the man page (roff) on stdout: `benchpass man > ~/.local/share/man/man1/benchpass.1`.
    Man,
}

/// Benchmark the built-in reference engine end to end and render its report: about half a
/// minute, nothing to install. The reference engine (`benchpass sim`, served in process on
/// loopback) stands in for a real one; the pass is the seed protocol in short: sustained runs,
/// a 128/2048/8192-token prompt matrix, one replayed agent session.
///   benchpass demo              pass in ./data/passes/<pass id>/, report in ./reports/<pass id>/
///   benchpass demo --out DIR    pass in DIR/pass/, report in DIR/report/
/// Then: `benchpass run --url URL --model ID` against a real server.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
struct DemoArgs {
    /// Where to write the pass (DIR/pass) and the report (DIR/report).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// auto: a progress bar on a terminal, lines otherwise; plain: lines; quiet: nothing.
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    progress: ProgressArg,
}

/// Render a pass's report: report.md, report.html, charts/*.svg and leaderboard.csv.
///   benchpass report data/passes/<pass id>                 into ./reports/<pass id>/
///   benchpass report PASS --quality-reference REF[:CELL]   with a quality column
///   benchpass report PASS --format post                    one table to paste into a post, to stdout
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
struct ReportArgs {
    /// The pass folder (holding pass.json and runs.jsonl).
    pass: PathBuf,
    /// Where to write [default: reports/<pass id>/ under the current folder].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// A pass with quality runs (and, where it has several such cells, `:CELL`): each cell's
    /// exact match and top-K KL against it beside the speed tables (docs/quality.md).
    #[arg(long, value_name = "PASS[:CELL]")]
    quality_reference: Option<String>,
    /// `files` (the default): the report's folder. `post`: the headline, one compact table
    /// (engine, version, model, test, decode tok/s, TTFT, prompt tokens; like `llama-bench -o
    /// md`) and its footnotes, in plain Markdown that GitHub, Reddit and forums render alike,
    /// printed to stdout; nothing is written.
    #[arg(long, value_enum, default_value_t = ReportFormat::Files)]
    format: ReportFormat,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum ReportFormat {
    Files,
    Post,
}

/// What changed from pass A to pass B, row by row: a verdict (faster, slower, within noise,
/// incomparable and why) and who to blame (engine, build, both, neither, unknown).
///   benchpass diff A B                   Markdown on a terminal, CSV into a pipe
///   benchpass diff A B --out diff.html   the format follows the extension (.md, .html, .csv)
///   benchpass diff A B --fail-on slower  exit status 4 when any row is slower (for CI)
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
struct DiffArgs {
    a: PathBuf,
    b: PathBuf,
    /// The file to write; without it the diff goes to stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// md, html or csv [default: the --out extension; without --out, md on a terminal, csv otherwise].
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// `holm`: Holm's family-wise correction over the rows tested (docs/statistics.md).
    #[arg(long, value_enum, default_value_t = CorrectionArg::None)]
    correction: CorrectionArg,
    /// Exit with status 4 when any row has one of these verdicts (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "VERDICT,...")]
    fail_on: Vec<FailOn>,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum CorrectionArg {
    None,
    Holm,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum FailOn {
    Slower,
    Faster,
    Incomparable,
}

/// One leaderboard over several passes (columns in docs/leaderboard.md).
///   benchpass leaderboard data/passes/* --out leaderboard.csv   (or .md, .json)
///   benchpass leaderboard data/passes/* --parquet fleet/        Parquet by machine and engine
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
struct LeaderboardArgs {
    #[arg(required = true)]
    passes: Vec<PathBuf>,
    /// The file to write; the format follows its extension (.csv, .md or .json). Without it,
    /// CSV goes to stdout.
    #[arg(long, value_name = "FILE", conflicts_with = "parquet")]
    out: Option<PathBuf>,
    /// Write the rows as Parquet instead, into this new folder, partitioned by machine and
    /// engine (DIR/machine=M/engine=E/part-N.parquet, Hive's layout, values percent-encoded):
    /// DuckDB, polars or Spark read a fleet's passes from it (docs/leaderboard.md shows how).
    #[arg(long, value_name = "DIR")]
    parquet: Option<PathBuf>,
    /// Work every pass's rows out from its raw runs, ignoring its leaderboard.cache, and say
    /// which caches disagreed with them (they are rewritten).
    #[arg(long)]
    verify: bool,
}

/// Every cell with quality runs against a reference cell: exact match, common prefix, top-K
/// KL, self-agreement (docs/quality.md).
///   benchpass quality --reference data/passes/<f16>[:CELL] data/passes/<q8_0> --out q.md
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
struct QualityArgs {
    /// The reference pass, and `:CELL` where it has several cells with quality runs.
    #[arg(long, value_name = "PASS[:CELL]")]
    reference: String,
    #[arg(required = true)]
    passes: Vec<PathBuf>,
    /// The file to write (.md, .html or .csv); without it, Markdown goes to stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Print a shell completion script, e.g. `benchpass completions bash > ~/.local/share/bash-completion/completions/benchpass`.
#[derive(clap::Args)]
struct CompletionsArgs {
    shell: clap_complete::Shell,
}

/// Plan files.
#[derive(Subcommand)]
enum PlanCommand {
    /// Validate a plan without running it: unknown keys, missing files, unknown engines or
    /// models, each error with file:line and a hint.
    Check { plan: PathBuf },
    /// Print each engine preset's resolved values and where each was read (docs/plans.md):
    ///   benchpass plan presets             every preset
    ///   benchpass plan presets rapid-mlx   one
    ///   benchpass plan presets --json      as JSON, for tools
    Presets {
        /// One preset by name (llama-cpp, vllm, sglang, mlx-lm, omlx, rapid-mlx, splash, mtplx,
        /// kapitsa, ollama, lm-studio, benchpass-sim, openai-compatible).
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

/// Benchmark a server and write a raw pass: a running server (--url), or a whole plan.
///
/// A running server:
///   benchpass run --url http://127.0.0.1:8080 --model qwen3-8b --engine llama.cpp \
///     --weights ~/models/qwen3-8b-q4_k_m.gguf --prompt-tokens 128 --prompt-tokens 2048 --runs 3
/// Without --prompt-tokens the workload is `sustained` (one short prose prompt, decode until
/// the cap); with it, `prompt-matrix` (a prompt cut from real prose to each size).
///
/// A plan (engines started fresh and stopped by benchpass, cell by cell):
///   benchpass run plans/seed-protocol.toml [--out DIR] [--dry-run] [--gap-scale 0]
/// A plan may interleave its cells repetition by repetition (`order = "interleaved"`) and
/// hold a soak workload (hours of runs back to back, the engine's memory growth per hour);
/// docs/plans.md has every key.
///
/// Exit status: 0 the pass is recorded; 3 it is recorded but some runs failed (each is kept
/// with its error class; --allow-failures exits 0); 130 interrupted (what ran is on disk);
/// 1 benchpass could not run (the message says why); 2 bad arguments.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
struct RunArgs {
    /// A plan file (TOML); see docs/plans.md. Without it, --url and --model say what to measure.
    #[arg(value_name = "PLAN.toml", conflicts_with_all = ["url", "model"])]
    plan: Option<PathBuf>,
    /// Skip the self-check: before the first cell, benchpass streams a few requests (under a
    /// second) from the reference engine on loopback, at the pass's stream count (up to 32), and
    /// records how far its own TTFT and decode rate were from when that engine sent its tokens;
    /// the report prints it, and a diff calls no change smaller than it (docs/metrics.md, "What
    /// measuring costs").
    #[arg(long, env = "BENCHPASS_NO_SELF_CHECK")]
    no_self_check: bool,
    /// In a concurrency sweep (`--concurrency 1,2,4,8`, in rising order), stop once two levels in
    /// a row are past the knee — output tok/s no longer rising by more than its noise while
    /// median TTFT still rises (docs/metrics.md, "The knee") — and record the stop in pass.json
    /// (`stopped_sweeps`); the levels left out are not owed.
    #[arg(long)]
    stop_at_saturation: bool,
    /// Exit 0 when the pass is recorded even if some of its runs failed (they are recorded as
    /// failed either way). Without it, failed runs make the exit status 3.
    #[arg(long)]
    allow_failures: bool,
    /// Print what would run (a plan's schedule and its total duration, or the steps of a pass
    /// against --url) and run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Finish this interrupted pass of the plan: recorded runs are not repeated, and a cell
    /// whose engine had to be started again is marked.
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    resume: Option<PathBuf>,
    /// Multiply every gap of a plan by this (0: no cool-downs, for tests and demos) [default: 1].
    #[arg(long, value_name = "F", value_parser = parse_gap_scale)]
    gap_scale: Option<f64>,
    /// The server's base URL, e.g. http://127.0.0.1:8080 (a trailing /v1 is fine).
    #[arg(long, required_unless_present = "plan")]
    url: Option<String>,
    /// The model id to request (as the server knows it) [default: the only model the server's
    /// /v1/models lists, recorded as picked; an error when it lists several].
    #[arg(long)]
    model: Option<String>,
    /// Engine name for the record, e.g. llama.cpp, vllm, mlx-lm [default: the --preset's name, else
    /// openai-compatible].
    #[arg(long)]
    engine: Option<String>,
    /// What benchpass knows of the engine, as a plan's `preset` (benchpass plan presets NAME):
    /// how its version is read, its metrics and draft counters, its way past EOS (nothing is sent
    /// that it would reject), its request fields (llama-cpp: cache_prompt false), and the flush of
    /// its prefix cache before the runs (sglang, vllm).
    #[arg(long, value_name = "NAME", value_parser = parse_preset)]
    preset: Option<&'static harness::plan::presets::Preset>,
    /// Engine version; when absent, asked of the server (/version, /api/version, /props).
    #[arg(long)]
    engine_version: Option<String>,
    /// The engine executable, to record its SHA-256.
    #[arg(long, value_name = "PATH")]
    engine_path: Option<PathBuf>,
    /// A weight file or folder to hash (SHA-256 of every file, cached by path, size, mtime).
    #[arg(long, value_name = "PATH")]
    weights: Option<PathBuf>,
    /// Where the weight-hash cache lives [default: $BENCHPASS_CACHE_DIR, $XDG_CACHE_HOME/benchpass
    /// or ~/.cache/benchpass, file weight-hashes.json].
    #[arg(long, value_name = "FILE")]
    hash_cache: Option<PathBuf>,
    /// The model family that reports compare engines on, when it differs from --model
    /// (e.g. `qwen3-8b` for both `qwen3-8b-q4_k_m.gguf` and `mlx-community/Qwen3-8B-4bit`).
    #[arg(long)]
    family: Option<String>,
    /// Server path: `text`, or e.g. `vision`, `spec` for a lane with speculation.
    #[arg(long, default_value = "text")]
    lane: String,
    /// What to run [default: sustained, or prompt-matrix with --prompt-tokens]. `agent` replays
    /// the shipped coding-agent sessions turn by turn (docs/agent.md); `quality` runs the
    /// shipped prompts greedily with top-K logprobs, for `benchpass quality --reference` (docs/quality.md).
    #[arg(long, value_enum)]
    workload: Option<WorkloadArg>,
    /// Agent workload: sessions to replay (each is 10–20 turns; every turn is a run).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(harness::plan::file::MAX_RUNS)))]
    sessions: Option<u32>,
    /// Quality workload: alternatives asked for per generated token.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=i64::from(harness::workloads::quality::MAX_TOP_LOGPROBS)))]
    top_logprobs: Option<u32>,
    /// Measured runs per prompt target (quality: runs of each repeated prompt).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=i64::from(harness::plan::file::MAX_RUNS)))]
    runs: u32,
    /// Warmup runs per prompt target (recorded, marked as warmups).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=i64::from(harness::plan::file::MAX_RUNS)))]
    warmup: u32,
    /// Token cap per request [default: 256; 128 for --workload quality].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=harness::plan::file::MAX_TOKENS))]
    max_tokens: Option<u64>,
    /// Prompt-size target in tokens; repeat for several (e.g. 128, 2048, 8192).
    #[arg(long = "prompt-tokens", value_name = "N", value_parser = clap::value_parser!(u64).range(0..=harness::plan::file::MAX_TOKENS))]
    prompt_tokens: Vec<u64>,
    /// The API to call: `chat` (/v1/chat/completions, the prompt as one user message) or
    /// `completions` (/v1/completions, the raw prompt, no chat template).
    #[arg(long, value_enum, default_value_t = ApiArg::Chat)]
    api: ApiArg,
    /// Sampling temperature sent with every request; 0 is greedy, and at 0 runs of one prompt
    /// that produce different text are flagged `nondeterministic`.
    #[arg(long, default_value_t = 0.0, value_parser = parse_temperature)]
    temperature: f64,
    /// Sampling seed sent with every request (`seed`), for engines that honour it; not sent
    /// without it.
    #[arg(long)]
    seed: Option<u64>,
    /// Ask the server to ignore EOS (llama.cpp, vLLM): every run then reaches the cap.
    #[arg(long)]
    ignore_eos: bool,
    /// Ask for at least this many tokens (vLLM's `min_tokens`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=harness::plan::file::MAX_TOKENS))]
    min_tokens: Option<u64>,
    /// JSON object merged into every request body, e.g. '{"reasoning_effort":"none"}'.
    #[arg(long, value_name = "JSON")]
    extra: Option<String>,
    /// Parallel streams; a comma-separated list sweeps them (`1,2,4,8`: every step at 1 stream,
    /// then at 2, …), for the serving figures and the throughput–latency chart of the report
    /// [default: 1].
    #[arg(long, value_delimiter = ',', value_name = "N[,N...]",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(harness::plan::file::MAX_CONCURRENCY)))]
    concurrency: Vec<u32>,
    /// Send requests at this many a second, at seeded Poisson arrivals (as vLLM's `bench serve
    /// --request-rate`), instead of keeping the streams busy; --concurrency then caps the
    /// streams in flight [default cap: 4096]. For the serving figures of a server under load.
    #[arg(long, value_name = "R", value_parser = parse_request_rate)]
    request_rate: Option<f64>,
    /// The seed of --request-rate's arrivals: the same seed, the same gaps.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "request_rate")]
    arrival_seed: u64,
    /// Service-level objectives for goodput: the most a run's TTFT, TPOT, ITL or E2E may be for
    /// it to count, e.g. `--slo ttft=2000ms,tpot=100ms` (MLPerf Inference's llama3.1-8b server
    /// limits). A run meets them when every one holds (TTFT and E2E counted from when it was
    /// due, ITL at its slowest gap); each step then reports the share of runs that met them and
    /// the goodput, in requests/s and output tok/s of those runs alone (docs/metrics.md,
    /// "Goodput"). Recorded in the pass; passes with other objectives never pair goodput.
    #[arg(long, value_name = "NAME=LIMIT[,...]", value_parser = harness::pass::Slo::parse)]
    slo: Option<harness::pass::Slo>,
    /// Environment variable that holds the API key (the key is never written anywhere).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// Also trust the PEM certificate(s) in FILE for `https://` servers (a private CA or a
    /// self-signed server); the system's trusted roots are always used.
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// Seconds to wait for the first token before recording the run as failed.
    #[arg(long, default_value_t = 600.0, value_name = "SECONDS", value_parser = parse_timeout)]
    first_token_timeout: f64,
    /// Seconds of silence mid-stream before recording the run as failed.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS", value_parser = parse_timeout)]
    idle_timeout: f64,
    /// The pass folder to create [default: data/passes/<pass id>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// [default: <date>-<time>-<engine>]
    #[arg(long)]
    pass_id: Option<String>,
    /// `auto`: a bar on a terminal, one line per run otherwise; `quiet` also leaves out the
    /// table of figures at the end.
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    progress: ProgressArg,
    /// At the end, print the pass's figures as JSON on stdout (instead of the pass folder):
    /// pass_dir, pass_id, status, runs, failed, and per step its figures and flags
    /// (docs/raw-format.md, "`run --json`").
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum WorkloadArg {
    Sustained,
    PromptMatrix,
    PpTg,
    Agent,
    Quality,
}

#[derive(Clone, Copy, ValueEnum)]
enum ApiArg {
    Chat,
    Completions,
}

#[derive(Clone, Copy, ValueEnum)]
enum ProgressArg {
    Auto,
    Plain,
    Quiet,
}

/// Serve the reference engine: an OpenAI-compatible server with a known token schedule.
///
/// It prints `benchpass sim listening on http://ADDR` once it accepts connections.
/// Flags override the profile's values. Token i of a reply is due at
/// TTFT + i / decode rate, where TTFT = base latency + prompt tokens / prefill rate.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
struct SimArgs {
    /// Address to listen on; loopback unless you say otherwise.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port; 0 picks a free one (read it from the printed line).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// A preset (default, llama-cpp, spec-decode, no-usage, eos) or a JSON profile file.
    #[arg(long, default_value = "default")]
    profile: String,
    /// The model id served at /v1/models and echoed in replies [default profile: sim-model].
    #[arg(long)]
    model: Option<String>,
    /// Time to first token before any prefill [default profile: 20].
    #[arg(long, value_name = "MS")]
    base_latency_ms: Option<f64>,
    /// Prompt tokens prefilled per second [default profile: 2000].
    #[arg(long, value_name = "TOK/S")]
    prefill_tps: Option<f64>,
    /// Tokens decoded per second after the first [default profile: 60].
    #[arg(long, value_name = "TOK/S")]
    decode_tps: Option<f64>,
    /// Tokens per stream event after the first (k > 1: speculative-decoding bursts)
    /// [default profile: 1].
    #[arg(long, value_name = "K")]
    tokens_per_event: Option<u64>,
    /// Do not send a role-only first event.
    #[arg(long)]
    no_role_event: bool,
    /// Reach EOS after N tokens (unless the request sets ignore_eos).
    #[arg(long, value_name = "N")]
    eos_after: Option<u64>,
    /// The first N tokens come as reasoning_content.
    #[arg(long, value_name = "N")]
    reasoning_tokens: Option<u64>,
    /// Never send usage.
    #[arg(long)]
    no_usage: bool,
    /// Attach llama.cpp's `timings` object: the schedule's truth, and when the first and last
    /// token events actually left (`sim_sent_first_token_ms`, `sim_sent_last_token_ms`).
    #[arg(long)]
    timings: bool,
    /// Do not serve POST /tokenize.
    #[arg(long)]
    no_tokenize: bool,
    /// Relative jitter on rates per request, e.g. 0.05 for ±5% (seeded) [default profile: 0].
    #[arg(long)]
    jitter: Option<f64>,
    /// Seed of the jitter, so that a run can be repeated [default profile: 0].
    #[arg(long)]
    seed: Option<u64>,
    /// Fault: stop sending after N tokens and hold the connection open.
    #[arg(long, value_name = "N")]
    stall_after_tokens: Option<u64>,
    /// Fault: every Nth request answers with an HTTP error (see --fail-status).
    #[arg(long, value_name = "N")]
    fail_every: Option<u64>,
    /// The status of --fail-every answers (429 comes with Retry-After: 1) [default profile: 500].
    #[arg(long, value_name = "CODE")]
    fail_status: Option<u16>,
    /// Fault in every streamed reply: crash-mid-stream, hang-before-first-token, truncated-json,
    /// malformed-sse-line, wrong-content-type, huge-event, only-role, double-done, data-after-done,
    /// error-event, ends-early.
    #[arg(long, value_name = "NAME", value_parser = parse_fault)]
    fault: Option<sim::Fault>,
    /// Tokens sent before a mid-stream fault strikes [default profile: 5].
    #[arg(long, value_name = "N")]
    fault_after_tokens: Option<u64>,
    /// Serve at most N requests at once, as a batching engine's batch width: the rest wait for a
    /// slot before their prefill starts, so output tok/s stops rising at N streams while TTFT
    /// grows with the queue (a server that saturates at a known level).
    #[arg(long, value_name = "N")]
    batch_width: Option<u32>,
    /// Use the timer wheel alone: up to ~1 ms late per event, and the events of many streams
    /// leave together at each tick, as a batching engine sends them (for hundreds of streams).
    #[arg(long)]
    coarse_timer: bool,
    /// Answer 503 `Loading model` on every route for the first S seconds, as llama.cpp does
    /// while it loads weights.
    #[arg(long, value_name = "S")]
    loading_s: Option<f64>,
    /// Keep N bytes per request for good: a leaking server, for soak tests.
    #[arg(long, value_name = "N")]
    leak_bytes_per_request: Option<u64>,
    /// Keep the prompts served and charge prefill only for tokens past the longest common
    /// prefix with any of them (reported as usage prompt_tokens_details.cached_tokens, and
    /// timings.cache_n with --timings); `/flush_cache` (SGLang's) and `/reset_prefix_cache`
    /// (vLLM's) empty it; docs/agent.md.
    #[arg(long)]
    prefix_cache: bool,
    /// Requests that ask for logprobs are answered by the sim's seeded language model (greedy,
    /// top-K logprobs per token); its logits shifted by seeded noise of scale S (0 to 100), so
    /// that a test knows the true KL from the unperturbed model [default: 0]; docs/quality.md.
    #[arg(long, value_name = "S")]
    perturb: Option<f64>,
    /// After each streamed reply, write oMLX's DFlash line (`… acceptance=73.2%, cycles=…`)
    /// with this draft acceptance (0 to 1) to stderr, as oMLX logs it: for the `omlx` preset's
    /// log reading (docs/plans.md, Engine counters).
    #[arg(long, value_name = "FRACTION")]
    log_draft_acceptance: Option<f64>,
}

/// The passes under a folder, newest first: start time, status, runs, engines × models.
///   benchpass list                  under data/passes (or the current folder without it)
///   benchpass list ~/bench --json   as JSON, for scripts
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
struct ListArgs {
    /// Where to look (three levels deep) [default: data/passes, else the current folder].
    dir: Option<PathBuf>,
    /// One JSON object per pass, in an array: dir, pass_id, started_at, status, runs, cells.
    #[arg(long)]
    json: bool,
}

/// Write a pass's runs as CSV (the columns are fixed; see docs/raw-format.md).
#[derive(clap::Args)]
struct ExportArgs {
    /// The pass folder (holding pass.json and runs.jsonl).
    pass: PathBuf,
    /// The CSV file to write [default: stdout; `-` says so too].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Write a file to open in a spreadsheet: a text value that starts with `=`, `+`, `-`, `@`,
    /// a tab or a carriage return gets a `'` in front, so it is not run as a formula. Such a
    /// file does not import back to the same pass; without this flag the file is for tools
    /// (export → import → export gives the same bytes), not for opening in a spreadsheet.
    #[arg(long)]
    for_spreadsheet: bool,
}

/// Read runs from another tool into pass folders: a runs CSV (one folder per pass_id,
/// DIR/<pass_id>/), llama-bench's `-o json` output (one pass; each repetition a run, in a
/// `llama-bench` lane of its own), or the result file of `vllm bench serve --save-result
/// --save-detailed` (one pass; each request a run, failed ones included, in a `vllm-bench`
/// lane of its own).
#[derive(clap::Args)]
struct ImportArgs {
    /// The file to read.
    #[arg(value_name = "FILE")]
    csv: PathBuf,
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    #[arg(long, value_enum, default_value_t = ImportFormat::RunsCsv)]
    format: ImportFormat,
    /// llama-bench and vllm-bench only: the pass id [default: llama-bench-<file name> or
    /// vllm-bench-<file name>].
    #[arg(long)]
    pass_id: Option<String>,
    /// llama-bench and vllm-bench only: the machine the results came from (the file does not say).
    #[arg(long)]
    machine: Option<String>,
    /// vllm-bench only: the engine that served the requests (the file names only vLLM's client
    /// backend, e.g. `openai`) [default: openai-compatible].
    #[arg(long)]
    engine: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum ImportFormat {
    /// benchpass's runs CSV (`benchpass export`).
    RunsCsv,
    /// `llama-bench -o json`.
    LlamaBench,
    /// `vllm bench serve --save-result --save-detailed` (or benchmarks/benchmark_serving.py).
    VllmBench,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // macOS starts processes with 256 open files: fewer than 256 concurrent streams need.
    harness::platform::raise_open_file_limit();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // Line by line: a message may span lines (every problem of a plan), and each line
            // is made printable on its own (no escapes from a server or a file reach the terminal).
            for (i, line) in format!("{e:#}").lines().enumerate() {
                let head = if i == 0 { "error: " } else { "  " };
                eprintln!("{head}{}", harness::progress::printable(line));
            }
            ExitCode::FAILURE
        }
    }
}

/// One preset as `key: value` lines, each value's source indented under it.
fn presets_text(preset: &serde_json::Value) -> String {
    let mut out = format!("{}\n", preset["name"].as_str().unwrap_or_default());
    let assumed: Vec<&str> = preset["assumed"].as_array().map(|a| a.iter().filter_map(|v| v.as_str()).collect()).unwrap_or_default();
    let keys = [
        "health_path",
        "loads_lazily",
        "version",
        "kv_cache_dirs",
        "kv_cache_lookup",
        "saves_arguments",
        "metrics_path",
        "request_extra",
        "request_headers",
        "ignore_eos",
        "draft_counters",
        "cache_flush",
        // What of the API it serves.
        "logprobs",
        "stream_usage",
        "cached_tokens",
        "tool_calls",
    ];
    for key in keys {
        let value = &preset[key];
        // Keys a preset has nothing for are left out, but what it serves is always said.
        let optional = matches!(key, "kv_cache_lookup" | "saves_arguments" | "request_headers");
        if optional && (value.is_null() || value.as_array().is_some_and(Vec::is_empty)) {
            continue;
        }
        let shown = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
        let mark = if assumed.contains(&key) { "  (assumed: not verified in the engine's source)" } else { "" };
        out.push_str(&format!("  {key}: {shown}{mark}\n"));
        if let Some(source) = preset["sources"][key].as_str() {
            out.push_str(&format!("      source: {source}\n"));
        }
    }
    out
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => {
            if let Some(path) = &args.ca_cert {
                harness::tls::trust_ca_file(path)?;
            }
            match args.plan.clone() {
                Some(plan) => plan_run_command(&plan, *args),
                None => run_command(*args),
            }
        }
        Command::Demo(args) => {
            let pass_id = benchpass::demo::pass_id();
            let (pass_dir, report_dir) = match &args.out {
                Some(dir) => (dir.join("pass"), dir.join("report")),
                None => (PathBuf::from("data/passes").join(&pass_id), PathBuf::from("reports").join(&pass_id)),
            };
            benchpass::demo::run(&pass_id, &pass_dir, &report_dir, progress_mode(args.progress))?.print();
            Ok(ExitCode::SUCCESS)
        }
        Command::Plan(PlanCommand::Check { plan }) => {
            let plan = load_plan(&plan)?;
            print_advice(&plan);
            print_not_ready(&plan);
            // Not ready here is still a plan that checks (exit 0): it can be read and
            // previewed; the line says that `run` refuses it.
            let verdict = match plan.not_ready.len() {
                0 => "ok".to_owned(),
                n => format!("checks, with {n} to fix above before `benchpass run` takes it (`--dry-run` shows its schedule now)"),
            };
            println!(
                "{}: {} engines, {} models, {} cells, {} steps: {verdict}",
                plan.path.display(),
                plan.file.engines.len(),
                plan.file.models.len(),
                plan.file.cells.len(),
                plan.steps.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Plan(PlanCommand::Presets { name, json }) => {
            use harness::plan::presets;
            let chosen: Vec<&presets::Preset> = match &name {
                Some(name) => vec![parse_preset(name).map_err(anyhow::Error::msg)?],
                None => presets::PRESETS.iter().collect(),
            };
            let described: Vec<serde_json::Value> = chosen.iter().map(|p| presets::describe(p)).collect();
            if json {
                let value = if name.is_some() { described[0].clone() } else { serde_json::Value::Array(described) };
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                for (i, preset) in described.iter().enumerate() {
                    if i > 0 {
                        println!();
                    }
                    print!("{}", presets_text(preset));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Sim(args) => sim_command(args),
        Command::List(args) => list_command(&args),
        Command::Report(args) if args.format == ReportFormat::Post => {
            anyhow::ensure!(args.out.is_none() && args.quality_reference.is_none(), "--format post prints to stdout: it takes neither --out nor --quality-reference");
            let pass = benchpass::load(&args.pass)?;
            let steps = analysis::cells::summarize(&pass)?;
            print!("{}", report::post::render(&pass, &steps));
            Ok(ExitCode::SUCCESS)
        }
        Command::Report(args) => {
            let cwd = std::env::current_dir().context("the current folder")?;
            let out = benchpass::report(&args.pass, args.out.as_deref(), &cwd, args.quality_reference.as_deref())?;
            println!("{}", out.join("report.html").display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Diff(args) => diff_command(&args),
        Command::Leaderboard(args) => {
            let format = match &args.out {
                Some(out) => benchpass::Format::of_file(out)
                    .filter(|f| *f != benchpass::Format::Html)
                    .with_context(|| format!("--out {}: the extension says the format: .csv, .md or .json", out.display()))?,
                None => benchpass::Format::Csv,
            };
            use std::io::Write as _;
            let options = benchpass::leaderboard::Options { verify: args.verify };
            // The CSV of a fleet's passes is streamed, never held whole.
            let tally = match (&args.out, format) {
                (None, _) if args.parquet.is_some() => {
                    let out = args.parquet.as_deref().expect("given");
                    let (tally, written) = benchpass::leaderboard::parquet::write(&args.passes, options, out)?;
                    eprintln!(
                        "{} rows of {} passes in {} Parquet files, {} partitions (machine, engine)",
                        written.rows, tally.passes, written.files, written.partitions
                    );
                    println!("{}", out.display());
                    tally
                }
                (None, _) => {
                    let mut out = harness::progress::PrintableWriter::new(std::io::BufWriter::new(std::io::stdout().lock()));
                    let tally = benchpass::leaderboard::write_csv(&args.passes, options, &mut out)?;
                    out.flush().context("writing the leaderboard")?;
                    tally
                }
                (Some(path), benchpass::Format::Csv) => {
                    let tally = benchpass::write_with(path, |file| benchpass::leaderboard::write_csv(&args.passes, options, file))?;
                    println!("{}", path.display());
                    tally
                }
                (Some(path), format) => {
                    let (text, tally) = benchpass::leaderboard_with(&args.passes, format, options)?;
                    emit(&text, Some(path))?;
                    tally
                }
            };
            for dir in &tally.disagreed {
                eprintln!(
                    "warning: {}: its leaderboard.cache disagreed with its raw runs; the rows are the raw runs' (the cache is rewritten)",
                    harness::progress::printable(&dir.display().to_string())
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Quality(args) => {
            let format = match &args.out {
                Some(out) => benchpass::Format::of_file(out)
                    .filter(|f| *f != benchpass::Format::Json)
                    .with_context(|| format!("--out {}: the extension says the format: .md, .html or .csv", out.display()))?,
                None => benchpass::Format::Markdown,
            };
            emit(&benchpass::quality(&args.reference, &args.passes, format)?, args.out.as_deref())
        }
        Command::Completions(args) => {
            clap_complete::generate(args.shell, &mut <Cli as clap::CommandFactory>::command(), "benchpass", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut std::io::stdout())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Export(args) => {
            if let Some(message) = harness::pass::listing::not_a_pass(&args.pass) {
                anyhow::bail!(message);
            }
            // One run at a time from runs.jsonl to the CSV: memory for one run, whatever the
            // size of the pass (docs/raw-format.md, "Export").
            use harness::pass::csv::{export_pass, Audience};
            let audience = if args.for_spreadsheet { Audience::Spreadsheet } else { Audience::Tools };
            let out = args.out.as_ref().filter(|o| o.as_os_str() != "-");
            let exported = if let Some(out) = out {
                // Whole or not at all: the rows before a refused run, or before a kill, would
                // pass for the whole pass.
                benchpass::write_with(out, |file| export_pass(&args.pass, file, audience))?
            } else {
                // Rows reach a pipe as they are made; one refused part-way exits non-zero.
                let mut stdout = harness::progress::PrintableWriter::new(std::io::stdout().lock());
                let exported = export_pass(&args.pass, &mut stdout, audience)?;
                std::io::Write::flush(&mut stdout)?;
                exported
            };
            // The CSV's columns are fixed: what was left out is said here.
            benchpass::warn_if_damaged(&args.pass, &exported.damage, None);
            if let Some(torn) = &exported.torn_tail {
                eprintln!(
                    "warning: {}: line {} is cut short ({} bytes; the writer stopped mid-run); exported the runs before it",
                    args.pass.join(harness::pass::RUNS_FILE).display(),
                    torn.line,
                    torn.bytes
                );
            }
            if let Some(out) = out {
                eprintln!("wrote {} runs to {}", exported.runs, out.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Import(args) => {
            // Another tool's file does not say which machine it ran on; a runs CSV does.
            let machine_unknown = args.machine.is_none() && !matches!(args.format, ImportFormat::RunsCsv);
            let dirs = match args.format {
                ImportFormat::RunsCsv => harness::pass::csv::import_runs(&args.csv, &args.out)?,
                ImportFormat::LlamaBench => vec![harness::pass::llama_bench::import(harness::pass::llama_bench::LlamaBenchImport {
                    file: &args.csv,
                    out_dir: &args.out,
                    pass_id: args.pass_id,
                    machine: args.machine,
                })?],
                ImportFormat::VllmBench => vec![harness::pass::vllm_bench::import(harness::pass::vllm_bench::VllmBenchImport {
                    file: &args.csv,
                    out_dir: &args.out,
                    pass_id: args.pass_id,
                    machine: args.machine,
                    engine: args.engine,
                })?],
            };
            for dir in dirs {
                println!("{}", dir.display());
            }
            if matches!(args.format, ImportFormat::RunsCsv) {
                for (column, default) in harness::pass::csv::missing_later_columns(&args.csv) {
                    eprintln!(
                        "warning: {}: no `{column}` column (a file from before it): its runs are imported with {column} {default}",
                        harness::progress::printable(&args.csv.display().to_string())
                    );
                }
            }
            if machine_unknown {
                eprintln!("note: no --machine NAME: the pass records machine `unknown`, and a diff against it says `machine` differs");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

/// Writes `text` to `out` (and says where), or to stdout.
fn emit(text: &str, out: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    match out {
        Some(out) => {
            benchpass::write(out, text)?;
            println!("{}", out.display());
        }
        None => print!("{}", harness::progress::printable_document(text)),
    }
    Ok(ExitCode::SUCCESS)
}

/// The exit status of a diff that found a verdict `--fail-on` names.
const EXIT_DIFF_FAILED_ON: u8 = 4;

fn diff_command(args: &DiffArgs) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal as _;
    let format = match (&args.format, &args.out) {
        (Some(name), _) => benchpass::Format::parse(name).filter(|f| *f != benchpass::Format::Json).with_context(|| format!("--format {name}: md, html or csv"))?,
        (None, Some(out)) => benchpass::Format::of_file(out)
            .filter(|f| *f != benchpass::Format::Json)
            .with_context(|| format!("--out {}: the extension says the format: .md, .html or .csv", out.display()))?,
        (None, None) if std::io::stdout().is_terminal() => benchpass::Format::Markdown,
        (None, None) => benchpass::Format::Csv,
    };
    let correction = match args.correction {
        CorrectionArg::None => analysis::diff::Correction::None,
        CorrectionArg::Holm => analysis::diff::Correction::Holm,
    };
    let of = benchpass::diff(&args.a, &args.b, correction)?;
    emit(&benchpass::render_diff(&of, format)?, args.out.as_deref())?;
    eprintln!("{}", harness::progress::printable_block(&benchpass::diff_summary(&of)));
    let d = &of.diff;
    let engines = |rows: &[analysis::diff::DiffRow]| rows.iter().map(|r| r.engine.clone()).collect::<std::collections::BTreeSet<_>>();
    let matched: Vec<_> = d.rows.iter().filter(|r| !matches!(r.verdict, analysis::diff::Verdict::New | analysis::diff::Verdict::Gone)).cloned().collect();
    if matched.is_empty() && !d.rows.is_empty() {
        let names: Vec<String> = engines(&d.rows).into_iter().collect();
        eprintln!(
            "warning: no row of A matched a row of B (engines: {}): was --engine given the same on both sides?",
            harness::progress::printable(&names.join(", "))
        );
    }
    let failed: Vec<&str> = args
        .fail_on
        .iter()
        .filter(|f| {
            let verdict = match f {
                FailOn::Slower => analysis::diff::Verdict::Slower,
                FailOn::Faster => analysis::diff::Verdict::Faster,
                FailOn::Incomparable => analysis::diff::Verdict::Incomparable,
            };
            d.rows.iter().any(|r| r.verdict == verdict)
        })
        .map(|f| match f {
            FailOn::Slower => "slower",
            FailOn::Faster => "faster",
            FailOn::Incomparable => "incomparable",
        })
        .collect();
    if failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("--fail-on: rows are {}: exit status {EXIT_DIFF_FAILED_ON}", failed.join(" and "));
    Ok(ExitCode::from(EXIT_DIFF_FAILED_ON))
}

fn list_command(args: &ListArgs) -> anyhow::Result<ExitCode> {
    let default = PathBuf::from("data/passes");
    let root = args.dir.clone().unwrap_or_else(|| if default.is_dir() { default } else { PathBuf::from(".") });
    anyhow::ensure!(root.is_dir(), "{} is not a folder", root.display());
    let found = harness::pass::listing::find_passes(&root);
    let runs_of = |dir: &std::path::Path| -> Option<u64> {
        use std::io::Read as _;
        let mut file = std::fs::File::open(dir.join(harness::pass::RUNS_FILE)).ok()?;
        let (mut lines, mut buffer) = (0u64, vec![0u8; 1 << 16]);
        loop {
            let n = file.read(&mut buffer).ok()?;
            if n == 0 {
                return Some(lines);
            }
            lines += buffer[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        }
    };
    if args.json {
        let rows: Vec<serde_json::Value> = found
            .iter()
            .map(|f| match &f.info {
                Ok(info) => serde_json::json!({
                    "dir": f.dir,
                    "pass_id": info.pass_id,
                    "started_at": info.started_at,
                    "status": info.status,
                    "runs": runs_of(&f.dir),
                    "cells": info.cells.iter().map(|c| serde_json::json!({"engine": c.engine.name, "model": c.model, "lane": c.lane})).collect::<Vec<_>>(),
                }),
                Err(why) => serde_json::json!({"dir": f.dir, "error": why}),
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if found.is_empty() {
        eprintln!("no passes under {}", root.display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = vec![["started".to_owned(), "status".to_owned(), "runs".to_owned(), "engines × models".to_owned(), "pass".to_owned()]];
    for f in &found {
        let dir = f.dir.display().to_string();
        table.push(match &f.info {
            Ok(info) => {
                let mut cells: Vec<String> = info.cells.iter().map(|c| format!("{} × {}", c.engine.name, c.model)).collect();
                cells.dedup();
                // `2026-11-30T10:31:45Z` → `2026-11-30 10:31`
                let started = info.started_at.replace('T', " ").chars().take(16).collect();
                let status = serde_json::to_value(info.status).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
                [started, status, runs_of(&f.dir).map_or("?".to_owned(), |n| n.to_string()), cells.join(", "), dir]
            }
            Err(why) => ["?".to_owned(), "unreadable".to_owned(), "?".to_owned(), why.clone(), dir],
        });
    }
    let widths: Vec<usize> = (0..4).map(|c| table.iter().map(|row| row[c].chars().count()).max().unwrap_or(0)).collect();
    for row in &table {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            match c {
                4 => line.push_str(cell),
                2 => line.push_str(&format!("{cell:>w$}  ", w = widths[c])),
                _ => line.push_str(&format!("{cell:<w$}  ", w = widths[c])),
            }
        }
        println!("{}", harness::progress::printable(&line));
    }
    Ok(ExitCode::SUCCESS)
}

fn seconds(flag: &str, value: f64) -> anyhow::Result<Duration> {
    anyhow::ensure!(value.is_finite() && value > 0.0, "--{flag} must be a positive number of seconds");
    Ok(Duration::from_secs_f64(value))
}

fn load_plan(path: &std::path::Path) -> anyhow::Result<harness::plan::Plan> {
    harness::plan::load(path).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let problems = if errors.len() == 1 { "1 problem".to_owned() } else { format!("{} problems", errors.len()) };
        anyhow::anyhow!("{problems} in the plan:\n{}", lines.join("\n"))
    })
}

/// The plan's notes (`harness::plan::advice`), on stderr: they do not stop anything.
fn print_advice(plan: &harness::plan::Plan) {
    for note in harness::plan::advice::notes(plan) {
        eprintln!("{}: {note}", plan.path.display());
    }
}

/// What keeps the plan from running here (a program not installed, a placeholder left as
/// shipped), on stderr, for `plan check` and `--dry-run`, which go on; `run` refuses with them.
fn print_not_ready(plan: &harness::plan::Plan) {
    for problem in &plan.not_ready {
        for line in problem.to_string().lines() {
            eprintln!("{}", harness::progress::printable(line));
        }
    }
}

fn progress_mode(arg: ProgressArg) -> ProgressMode {
    match arg {
        ProgressArg::Auto => ProgressMode::Auto,
        ProgressArg::Plain => ProgressMode::Plain,
        ProgressArg::Quiet => ProgressMode::Quiet,
    }
}

fn plan_run_command(path: &std::path::Path, args: RunArgs) -> anyhow::Result<ExitCode> {
    let plan = load_plan(path)?;
    print_advice(&plan);
    let gap_scale = args.gap_scale.unwrap_or(1.0);
    if args.dry_run {
        print_not_ready(&plan);
        print!("{}", harness::plan::dry_run(&plan, gap_scale));
        return Ok(ExitCode::SUCCESS);
    }
    let shown = Shown { json: args.json, table: !matches!(args.progress, ProgressArg::Quiet) };
    let options = harness::plan::PlanRunOptions {
        out: args.out,
        pass_id: args.pass_id,
        gap_scale,
        progress: progress_mode(args.progress),
        hash_cache: args.hash_cache,
        api_key_env: args.api_key_env,
        resume: args.resume,
        self_check: self_check(args.no_self_check)?,
        saturation: None,
    };
    let summary = runtime()?.block_on(harness::plan::run_plan(&plan, options))?;
    let resume = format!(
        "`benchpass run {} --resume {}` runs what is left, without repeating a recorded run",
        harness::progress::printable(&path.display().to_string()),
        harness::progress::printable(&summary.dir.display().to_string())
    );
    report_summary(&summary, args.allow_failures, shown, &resume)
}

/// The reference engine the self-check needs, started unless `--no-self-check`.
fn self_check(skip: bool) -> anyhow::Result<Option<harness::self_check::SelfCheckServer>> {
    if skip {
        return Ok(None);
    }
    benchpass::start_self_check_engine().map(Some)
}

fn run_command(args: RunArgs) -> anyhow::Result<ExitCode> {
    let Some(url) = args.url.clone() else {
        anyhow::bail!("give --url (a running server), or a plan file");
    };
    // A pass against a running server has no gaps and is not resumed: say so rather than
    // quietly doing something else than asked.
    anyhow::ensure!(args.resume.is_none(), "--resume is for plans: an interrupted --url pass is not resumed; run it again");
    anyhow::ensure!(args.gap_scale.is_none(), "--gap-scale is for plans: a pass against --url has no gaps between runs");
    // Picked from the server's list once the pass starts.
    let (model, pick_model) = match args.model.clone() {
        Some(model) => (model, false),
        None => (String::new(), true),
    };
    let levels = match (args.concurrency.is_empty(), args.request_rate) {
        (true, None) => vec![1],
        // Arrivals at a rate: as many streams as the arrivals need, unless capped.
        (true, Some(_)) => vec![harness::plan::file::MAX_CONCURRENCY],
        (false, _) => harness::runner::sweep_levels(&args.concurrency)?,
    };
    anyhow::ensure!(args.request_rate.is_none() || levels.len() == 1, "--request-rate takes one --concurrency (the cap), not a sweep");
    anyhow::ensure!(
        !args.stop_at_saturation || (levels.len() >= 3 && levels.windows(2).all(|w| w[0] < w[1])),
        "--stop-at-saturation stops a sweep of rising levels: give --concurrency three or more in rising order, e.g. 1,2,4,8"
    );
    let allow_failures = args.allow_failures;
    let shown = Shown { json: args.json, table: !matches!(args.progress, ProgressArg::Quiet) };
    anyhow::ensure!(!args.prompt_tokens.contains(&0), "--prompt-tokens must be at least 1");
    let workload = match (args.workload, args.prompt_tokens.is_empty()) {
        (None, true) => Workload::Sustained,
        (None, false) => Workload::PromptMatrix,
        (Some(WorkloadArg::Sustained), true) => Workload::Sustained,
        (Some(WorkloadArg::Sustained), false) => anyhow::bail!("--workload sustained takes no --prompt-tokens"),
        (Some(WorkloadArg::Agent), true) => Workload::Agent,
        (Some(WorkloadArg::Quality), true) => Workload::Quality,
        (Some(WorkloadArg::Agent | WorkloadArg::Quality), false) => anyhow::bail!("--workload agent and quality bring their own prompts: drop --prompt-tokens"),
        (Some(_), true) => anyhow::bail!("--workload prompt-matrix and pp-tg need at least one --prompt-tokens N"),
        (Some(WorkloadArg::PromptMatrix), false) => Workload::PromptMatrix,
        (Some(WorkloadArg::PpTg), false) => Workload::PpTg,
    };
    let extra = match &args.extra {
        Some(text) => {
            let value: serde_json::Value = serde_json::from_str(text).context("--extra is not valid JSON")?;
            anyhow::ensure!(value.is_object(), "--extra must be a JSON object, e.g. '{{\"reasoning_effort\":\"none\"}}'");
            // These are what benchpass measures by; overriding them would silently change the protocol.
            if let Some(key) = harness::plan::file::OWN_FIELDS.iter().find(|k| value.get(**k).is_some()) {
                anyhow::bail!("--extra may not set `{key}`: benchpass sets it from its own flags");
            }
            Some(value)
        }
        None => None,
    };
    let options = RunOptions {
        url,
        engine: args.engine.unwrap_or_else(|| args.preset.map_or("openai-compatible", |p| p.name).to_owned()),
        preset: args.preset,
        engine_version: args.engine_version,
        engine_path: args.engine_path,
        weights: args.weights,
        hash_cache: args.hash_cache,
        lane: args.lane,
        family: args.family,
        steps: {
            anyhow::ensure!(args.sessions.is_none() || workload == Workload::Agent, "--sessions is for --workload agent");
            anyhow::ensure!(args.top_logprobs.is_none() || workload == Workload::Quality, "--top-logprobs is for --workload quality");
            let runs = args.sessions.unwrap_or(args.runs);
            let max_tokens = match (workload, args.max_tokens) {
                (_, Some(n)) => n,
                (Workload::Quality, None) => harness::workloads::quality::MAX_TOKENS,
                (_, None) => 256,
            };
            let mut steps = harness::runner::steps_for(workload, &args.prompt_tokens, runs, args.warmup, max_tokens);
            for step in steps.iter_mut().filter(|s| s.workload == Workload::Quality) {
                step.top_logprobs = Some(args.top_logprobs.unwrap_or(harness::workloads::quality::DEFAULT_TOP_LOGPROBS));
            }
            harness::runner::sweep(&steps, &levels)
        },
        // The most streams any step runs (a sweep's steps carry their own).
        concurrency: levels.iter().copied().max().unwrap_or(1),
        api_key_env: args.api_key_env,
        pick_model,
        arrivals: args.request_rate.map(|rate| harness::runner::Arrivals { rate, seed: args.arrival_seed }),
        slo: args.slo,
        request: RequestConfig {
            api: match args.api {
                ApiArg::Chat => Api::Chat,
                ApiArg::Completions => Api::Completions,
            },
            model,
            temperature: args.temperature,
            seed: args.seed,
            ignore_eos: args.ignore_eos,
            min_tokens: args.min_tokens,
            extra,
            headers: Vec::new(),
            first_token_timeout: seconds("first-token-timeout", args.first_token_timeout)?,
            idle_timeout: seconds("idle-timeout", args.idle_timeout)?,
        },
        out: args.out,
        pass_id: args.pass_id,
        progress: progress_mode(args.progress),
        self_check: None,
        saturation: None,
    };
    if args.dry_run {
        print!("{}", harness::runner::dry_run(&options));
        return Ok(ExitCode::SUCCESS);
    }
    let saturation = args.stop_at_saturation.then(benchpass::saturation);
    let options = RunOptions { self_check: self_check(args.no_self_check)?, saturation, ..options };
    let summary = runtime()?.block_on(run_pass(options))?;
    report_summary(&summary, allow_failures, shown, "a pass against --url is not resumed: run it again")
}

/// The exit status of a pass that was recorded but has failed runs (`--allow-failures` makes
/// it 0): a script can tell "benchpass could not run" (1), "bad arguments" (2) and "the
/// figures are missing runs" (3) apart.
const EXIT_RUNS_FAILED: u8 = 3;

/// How a finished run shows itself: the pass folder on stdout and the table on stderr, or, with
/// `--json`, the summary as JSON on stdout.
#[derive(Clone, Copy)]
struct Shown {
    json: bool,
    table: bool,
}

/// `resume`: what to do after an interruption (how to finish the pass, or that it is not
/// resumed).
fn report_summary(summary: &harness::runner::PassSummary, allow_failures: bool, shown: Shown, resume: &str) -> anyhow::Result<ExitCode> {
    // The leaderboard's rows, kept beside the raw runs they come from (docs/leaderboard.md): a
    // courtesy, like the figures below; a leaderboard works them out again when it is missing.
    if let Err(e) = benchpass::leaderboard::write_cache(&summary.dir) {
        eprintln!("note: no leaderboard.cache: {}", harness::progress::printable(&format!("{e:#}")));
    }
    let sources: Vec<_> = summary.token_count_sources.iter().map(|s| s.as_str()).collect();
    let sources = if sources.is_empty() { "nowhere".to_owned() } else { sources.join(" and ") };
    // The figures are a courtesy on top of the recorded pass: a pass they cannot be worked out
    // for (say, every run failed) is still recorded, and says why.
    let figures = if shown.json || shown.table { Some(benchpass::run_summary(&summary.dir)) } else { None };
    match &figures {
        Some(Ok(figures)) if shown.json => println!("{}", serde_json::to_string_pretty(&figures.json)?),
        _ => println!("{}", summary.dir.display()),
    }
    match &figures {
        Some(Ok(figures)) if shown.table => {
            eprintln!("\n{}", harness::progress::printable_block(&figures.markdown));
            eprintln!("{}", figures.next);
        }
        Some(Err(e)) => eprintln!("warning: no summary of the figures: {e:#}"),
        _ => {}
    }
    eprintln!(
        "{} runs recorded ({} failed, {} short-stopped); token counts from {sources}",
        summary.n_runs, summary.n_failed, summary.n_short
    );
    if summary.token_count_sources.contains(&harness::pass::TokenCountSource::Estimate) {
        eprintln!("warning: the server sent no usage and has no tokenizer endpoint: token counts are estimates (4 characters a token)");
    }
    Ok(match summary.status {
        PassStatus::Interrupted => {
            eprintln!("interrupted: the runs above are on disk; pass.json says `interrupted`; {resume}");
            ExitCode::from(130)
        }
        _ if summary.n_failed > 0 && !allow_failures => {
            eprintln!(
                "{} of {} runs failed (recorded as failed, with their error class): exit status {EXIT_RUNS_FAILED}; --allow-failures exits 0",
                summary.n_failed, summary.n_runs
            );
            ExitCode::from(EXIT_RUNS_FAILED)
        }
        _ => ExitCode::SUCCESS,
    })
}

/// A timeout in seconds: above 0 and at most a day (`harness::plan::file::MAX_TIMEOUT_S`), so
/// that it is a wait and always a `Duration`.
fn parse_timeout(text: &str) -> Result<f64, String> {
    let max = harness::plan::file::MAX_TIMEOUT_S;
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 && s <= max => Ok(s),
        _ => Err(format!("expected seconds above 0 and at most {max} (a day), found `{text}`")),
    }
}

/// Requests a second for `--request-rate`: above 0 and at most 10,000.
fn parse_request_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 10_000.0 => Ok(r),
        _ => Err(format!("expected requests a second above 0 and at most 10000, found `{text}`")),
    }
}

/// A factor for a plan's gaps: 0 to 100 (a gap is at most a week; 100 weeks still sleeps).
fn parse_gap_scale(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(f) if (0.0..=100.0).contains(&f) => Ok(f),
        _ => Err(format!("expected a factor from 0 to 100, found `{text}`")),
    }
}

/// A sampling temperature: 0 to `harness::plan::file::MAX_TEMPERATURE`.
fn parse_temperature(text: &str) -> Result<f64, String> {
    let max = harness::plan::file::MAX_TEMPERATURE;
    match text.parse::<f64>() {
        Ok(t) if (0.0..=max).contains(&t) => Ok(t),
        _ => Err(format!("expected a temperature from 0 to {max}, found `{text}`")),
    }
}

fn parse_preset(name: &str) -> Result<&'static harness::plan::presets::Preset, String> {
    use harness::plan::presets;
    presets::preset(name).ok_or_else(|| format!("no preset `{name}`; one of: {}", presets::names().join(", ")))
}

fn parse_fault(name: &str) -> Result<sim::Fault, String> {
    sim::Fault::parse(name).ok_or_else(|| {
        let names: Vec<String> = sim::Fault::ALL.iter().map(|f| f.name()).collect();
        format!("no fault `{name}`; one of: {}", names.join(", "))
    })
}

fn sim_command(args: SimArgs) -> anyhow::Result<ExitCode> {
    let mut profile = SimProfile::load(&args.profile)?;
    macro_rules! set {
        ($($field:ident),*) => { $(if let Some(v) = args.$field { profile.$field = v; })* };
    }
    set!(model, base_latency_ms, prefill_tps, decode_tps, tokens_per_event, reasoning_tokens, jitter, seed, fail_status, fault_after_tokens, loading_s, leak_bytes_per_request, perturb);
    if args.fault.is_some() {
        profile.fault = args.fault;
    }
    if args.log_draft_acceptance.is_some() {
        profile.log_draft_acceptance = args.log_draft_acceptance;
    }
    if args.eos_after.is_some() {
        profile.eos_after = args.eos_after;
    }
    if args.stall_after_tokens.is_some() {
        profile.stall_after_tokens = args.stall_after_tokens;
    }
    if args.fail_every.is_some() {
        profile.fail_every = args.fail_every;
    }
    if args.batch_width.is_some() {
        profile.batch_width = args.batch_width;
    }
    profile.role_event &= !args.no_role_event;
    profile.usage &= !args.no_usage;
    profile.timings |= args.timings;
    profile.tokenize_endpoint &= !args.no_tokenize;
    profile.precise_timer &= !args.coarse_timer;
    profile.prefix_cache |= args.prefix_cache;
    profile.validate()?;
    runtime()?.block_on(async {
        let listener = sim::bind(SocketAddr::new(args.host, args.port)).await?;
        let addr = listener.local_addr()?;
        println!("benchpass sim listening on http://{addr}");
        use std::io::Write as _;
        std::io::stdout().flush()?;
        sim::serve(profile, listener).await
    })?;
    Ok(ExitCode::SUCCESS)
}
