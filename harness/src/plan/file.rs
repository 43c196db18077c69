//! Plan files (TOML): what to run, on which engines and models, in what order. Parsing keeps
//! the position of every value a check may complain about, so that each error names the file,
//! the line and what to do.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::presets;
use crate::pass::{Order, Step, Workload};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    /// Used in the pass id.
    pub name: Option<String>,
    /// `sequential` (default): each cell runs all its repetitions in turn; `interleaved`:
    /// round k runs repetition k of every cell, engines taking turns.
    pub order: Option<Spanned<String>>,
    #[serde(default)]
    pub request: RequestSection,
    #[serde(default)]
    pub gaps: Gaps,
    #[serde(default)]
    pub engines: Vec<EngineSpec>,
    #[serde(default)]
    pub models: Vec<ModelSpec>,
    #[serde(default)]
    pub cells: Vec<CellSpec>,
    #[serde(default)]
    pub workloads: Vec<WorkloadSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSection {
    #[serde(default)]
    pub temperature: f64,
    #[serde(default = "chat")]
    pub api: Spanned<String>,
    #[serde(default = "one")]
    pub concurrency: u32,
    /// Merged into every request (e.g. `reasoning_effort = "none"`).
    #[serde(default)]
    pub extra: toml::Table,
    #[serde(default = "six_hundred")]
    pub first_token_timeout_s: f64,
    #[serde(default = "sixty")]
    pub idle_timeout_s: f64,
    /// The objectives goodput is counted against, as `--slo` writes them
    /// (`"ttft=2000ms,tpot=100ms"`).
    #[serde(default)]
    pub slo: Option<Spanned<String>>,
}

impl RequestSection {
    /// The objectives, read; `None` without `slo` or where it does not read (plan check says so).
    pub fn objectives(&self) -> Option<benchpass_format::Slo> {
        benchpass_format::Slo::parse(self.slo.as_ref()?.get_ref()).ok()
    }
}

impl Default for RequestSection {
    fn default() -> Self {
        RequestSection {
            temperature: 0.0,
            api: chat(),
            concurrency: 1,
            extra: toml::Table::new(),
            first_token_timeout_s: 600.0,
            idle_timeout_s: 60.0,
            slo: None,
        }
    }
}

fn chat() -> Spanned<String> {
    Spanned::new(0..0, "chat".to_owned())
}
fn one() -> u32 {
    1
}
fn six_hundred() -> f64 {
    600.0
}
fn sixty() -> f64 {
    60.0
}
fn text_lane() -> String {
    "text".to_owned()
}
fn health_timeout() -> f64 {
    120.0
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gaps {
    /// Seconds to wait between one workload and the next within a cell (cool-down).
    #[serde(default)]
    pub between_workloads_s: f64,
    /// Seconds to wait between cells, after an engine stops and before the next starts.
    #[serde(default)]
    pub between_cells_s: f64,
    /// A thermal gate after the gap between cells: `cooldown = { until = "nominal", max_s = 600 }`.
    #[serde(default)]
    pub cooldown: Option<Spanned<CooldownSpec>>,
}

/// Wait, before each cell after the first, until the machine's thermal pressure is at or below
/// `until`, at most `max_s` seconds.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CooldownSpec {
    pub until: String,
    pub max_s: f64,
}

impl CooldownSpec {
    /// The level, where `until` names one.
    pub fn level(&self) -> Option<benchpass_format::machine::ThermalPressure> {
        use benchpass_format::machine::ThermalPressure::*;
        [Nominal, Moderate, Heavy, Trapping].into_iter().find(|l| l.as_str() == self.until)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineSpec {
    pub name: Spanned<String>,
    /// One of the presets (docs/plans.md); `openai-compatible` when absent.
    pub preset: Option<Spanned<String>>,
    /// The command that starts the server, as argv. Placeholders: `{port}`, `{host}`,
    /// `{model}` (the id the server knows the model by), `{weights}`, `{benchpass}`.
    pub start: Option<Spanned<Vec<String>>>,
    /// A command that stops the server; without it benchpass sends SIGTERM, then SIGKILL.
    pub stop: Option<Vec<String>>,
    /// The server's base URL; default `http://127.0.0.1:{port}`.
    pub url: Option<String>,
    pub port: Option<u16>,
    pub health_path: Option<String>,
    #[serde(default = "health_timeout")]
    pub health_timeout_s: f64,
    /// A command whose first line of output is the version (overrides the preset).
    pub version_command: Option<Vec<String>>,
    /// A persistent KV-cache folder whose contents are deleted before the engine starts.
    pub kv_cache_dir: Option<Spanned<String>>,
    /// The executable to hash; default: the first word of `start`, looked up on PATH.
    pub executable: Option<Spanned<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Merged into every request to this engine, after the plan's `[request] extra`.
    #[serde(default)]
    pub extra: toml::Table,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    pub name: Spanned<String>,
    pub family: Option<String>,
    /// A weight file or folder to hash.
    pub weights: Option<Spanned<String>>,
    /// The id the server knows the model by; default `name`.
    pub id: Option<String>,
    #[serde(default = "text_lane")]
    pub lane: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellSpec {
    pub engine: Spanned<String>,
    pub model: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    pub kind: Spanned<String>,
    /// Measured runs per target (a target may override it).
    #[serde(default = "three")]
    pub runs: u32,
    #[serde(default)]
    pub warmup: u32,
    /// The cap per request [default: 256; 128 for `quality`].
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub ignore_eos: bool,
    /// How long a `soak` workload runs, in seconds (hours: 4 h is 14400).
    pub duration_s: Option<u64>,
    /// How many sessions an `agent` workload replays (its measured runs are their turns).
    pub sessions: Option<u32>,
    /// Alternatives asked for per token in a `quality` workload [default: 20, the API's maximum].
    pub top_logprobs: Option<u32>,
    /// Streams in flight at once for this workload (e.g. agent sessions side by side, as an
    /// engine's parallel slots serve them) [default: `[request] concurrency`].
    pub concurrency: Option<u32>,
    /// Prompt-size targets; not for `sustained` or `soak`.
    #[serde(default)]
    pub targets: Vec<TargetSpec>,
}

fn three() -> u32 {
    3
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    pub tokens: u64,
    pub runs: Option<u32>,
    pub max_tokens: Option<u64>,
}

/// One complaint about a plan, with where it is and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    pub path: PathBuf,
    pub line: usize,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Line 0: the problem is the file as a whole (it cannot be read), not a line of it.
        match self.line {
            0 => write!(f, "{}: {}", self.path.display(), self.message)?,
            line => write!(f, "{}:{line}: {}", self.path.display(), self.message)?,
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// A plan that parsed and passed every check.
#[derive(Debug)]
pub struct Plan {
    pub path: PathBuf,
    pub file: PlanFile,
    /// The workloads as pass steps, in order, each with its workload index.
    pub steps: Vec<(usize, Step)>,
    pub order: Order,
    /// What keeps a plan that checks from running on this machine: an engine's program not
    /// found here, a placeholder value left as shipped. `plan check` and `--dry-run` name each
    /// and go on, so that a plan can be read and previewed before its engines are installed;
    /// `run` refuses the plan ([`Plan::ready_to_run`]).
    pub not_ready: Vec<PlanError>,
}

impl Plan {
    pub fn engine(&self, name: &str) -> &EngineSpec {
        self.file.engines.iter().find(|e| *e.name.get_ref() == name).expect("checked: cells name known engines")
    }

    pub fn model(&self, name: &str) -> &ModelSpec {
        self.file.models.iter().find(|m| *m.name.get_ref() == name).expect("checked: cells name known models")
    }

    /// Whether the plan can run here: an error naming everything in [`Plan::not_ready`].
    pub fn ready_to_run(&self) -> anyhow::Result<()> {
        let n = self.not_ready.len();
        if n == 0 {
            return Ok(());
        }
        let lines: Vec<String> = self.not_ready.iter().map(ToString::to_string).collect();
        let things = if n == 1 { "1 thing".to_owned() } else { format!("{n} things") };
        anyhow::bail!("the plan is not ready to run on this machine ({things} to fix first; nothing was started or written):\n{}", lines.join("\n"))
    }
}

/// A value a shipped plan leaves for its user to fill in: a whole string between `<` and `>`,
/// such as `"<folder of your model folders>"`, or an example inside the marks,
/// `"<Qwen3.6-35B-A3B-4bit>"`. The mark is in the value itself because a TOML comment is
/// invisible to the parser: a value marked so is named by `plan check` wherever it is, and no
/// real path, program, model id or URL has this form.
pub fn is_placeholder(value: &str) -> bool {
    value.len() > 2 && value.starts_with('<') && value.ends_with('>')
}

/// Every string of `text` (a TOML file the parser read) that [`is_placeholder`], with the byte
/// offset of its opening quote, outside comments: basic and literal strings, single-line and
/// multi-line.
fn placeholders(text: &str) -> Vec<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'#' => i = text[i..].find('\n').map_or(bytes.len(), |n| i + n),
            quote @ (b'"' | b'\'') => {
                let triple = bytes[i..].starts_with(&[quote; 3]);
                let close: &[u8] = if triple { &bytes[i..i + 3] } else { &bytes[i..i + 1] };
                let start = i + close.len();
                let mut end = start;
                while end < bytes.len() && !bytes[end..].starts_with(close) {
                    // A basic string's escape: `\"` does not close it (escapes are ASCII).
                    end += if quote == b'"' && bytes[end] == b'\\' { 2 } else { 1 };
                }
                let end = end.min(bytes.len());
                if let Some(value) = text.get(start..end).filter(|v| is_placeholder(v)) {
                    found.push((i, value));
                }
                i = end + close.len();
            }
            _ => i += 1,
        }
    }
    found
}

/// What a TOML syntax error's hint says: the shapes a plan is written in.
const SYNTAX_HINT: &str = "a plan is TOML: tables `[gaps]`, entries `[[engines]]` (two brackets each side), \
    `key = value` with strings in double quotes and lists in `[...]`; plans/ has examples";

/// Whether a parse error is the file's syntax (`invalid table header`, `expected =`), not a
/// value that does not fit its key (serde's `missing field`, `invalid type`, …).
fn is_syntax_error(message: &str) -> bool {
    !["missing field", "invalid type", "invalid value", "unknown variant", "unknown field", "invalid length", "duplicate field"]
        .iter()
        .any(|serde| message.starts_with(serde))
}

/// The key of `unknown field `x`, expected one of `a`, `b`` nearest to `x`: within two edits,
/// and fewer than half of its letters (so `presett` finds `preset`, `foo` finds nothing).
fn closest_key(message: &str) -> Option<&str> {
    let mut quoted = message.split('`').skip(1).step_by(2);
    let unknown = quoted.next()?;
    quoted
        .map(|key| (edit_distance(unknown, key), key))
        .filter(|&(d, _)| d <= 2 && d * 2 < unknown.chars().count().max(2))
        .min_by_key(|&(d, _)| d)
        .map(|(_, key)| key)
}

/// Edit distance over chars, a swap of two neighbours counting one edit (the optimal string
/// alignment distance): `prot` is one edit from `port`.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

fn column_of(text: &str, offset: usize) -> usize {
    let before = &text[..offset.min(text.len())];
    before.chars().rev().take_while(|&c| c != '\n').count() + 1
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// `~/x` (or `~\\x` on Windows) → the home folder's `x`; plans are shared between people, so
/// they say `~` rather than a home path.
pub fn expand_home(path: &str) -> PathBuf {
    let rest = path.strip_prefix("~/").or_else(|| path.strip_prefix("~\\").filter(|_| cfg!(windows)));
    match (rest, crate::platform::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// Finds `program` as a path or on PATH; on Windows with each of PATHEXT's extensions too
/// (`llama-server` is `llama-server.exe` there).
pub fn find_executable(program: &str) -> Option<PathBuf> {
    let extensions: Vec<String> = if cfg!(windows) {
        let pathext = std::env::var("PATHEXT").unwrap_or_else(|_| ".COM;.EXE;.BAT;.CMD".to_owned());
        std::iter::once(String::new()).chain(pathext.split(';').filter(|e| !e.is_empty()).map(str::to_owned)).collect()
    } else {
        vec![String::new()]
    };
    let with_extension = |path: PathBuf| {
        extensions.iter().map(|ext| PathBuf::from(format!("{}{ext}", path.display()))).find(|p| p.is_file())
    };
    if program.contains('/') || (cfg!(windows) && program.contains('\\')) {
        return with_extension(expand_home(program));
    }
    std::env::split_paths(&std::env::var_os("PATH")?).find_map(|dir| with_extension(dir.join(program)))
}

/// Reads, parses and checks a plan; every problem found is reported, not just the first.
pub fn load(path: &Path) -> Result<Plan, Vec<PlanError>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![PlanError { path: path.to_owned(), line: 0, message: format!("cannot read the plan: {e}"), hint: None }]
    })?;
    // The parser stops at the first unknown key: each is reported, its line blanked out (so
    // every offset and line number stays), and the plan read again, so that one `plan check`
    // names every unknown key and then every problem of the checks below.
    let mut errors = Vec::new();
    let mut readable = text.clone();
    let file: PlanFile = loop {
        match toml::from_str(&readable) {
            Ok(file) => break file,
            Err(e) => {
                let line = e.span().map_or(1, |s| line_of(&text, s.start));
                let message = e.message().trim().replace('\n', ", ");
                let unknown = message.contains("unknown field");
                let (message, hint) = if unknown {
                    let hint = match closest_key(&message) {
                        Some(key) => format!("did you mean `{key}`? docs/plans.md lists every key a plan may have"),
                        None => "docs/plans.md lists every key a plan may have".to_owned(),
                    };
                    (message, Some(hint))
                } else if is_syntax_error(&message) {
                    let column = e.span().map_or(1, |s| column_of(&text, s.start));
                    (format!("{message} (column {column})"), Some(SYNTAX_HINT.to_owned()))
                } else {
                    (message, None)
                };
                errors.push(PlanError { path: path.to_owned(), line, message, hint });
                match e.span().filter(|_| unknown && errors.len() < MAX_UNKNOWN_KEYS) {
                    Some(span) if blank_line_at(&mut readable, span.start) => continue,
                    _ => return Err(errors),
                }
            }
        }
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let mut error = |span: std::ops::Range<usize>, message: String, hint: Option<String>| {
        errors.push(PlanError { path: path.to_owned(), line: line_of(&text, span.start), message, hint });
    };
    // What this machine lacks and what the user has still to fill in: named, but not errors.
    let mut not_ready: Vec<PlanError> = placeholders(&text)
        .into_iter()
        .map(|(at, value)| PlanError {
            path: path.to_owned(),
            line: line_of(&text, at),
            message: format!("`{value}` is a placeholder: put your own value in its place"),
            hint: Some(
                "a value between `<` and `>` is one the plan leaves to you; where it is an example that is yours, drop the `<` and `>` \
                 (`plan check` and `--dry-run` go on past it, `run` refuses the plan)"
                    .into(),
            ),
        })
        .collect();
    let mut missing = |span: std::ops::Range<usize>, message: String, hint: &str| {
        not_ready.push(PlanError { path: path.to_owned(), line: line_of(&text, span.start), message, hint: Some(hint.to_owned()) });
    };
    const MISSING_HINT: &str =
        "install the engine, or give the full path to its executable (`plan check` and `--dry-run` go on without it, `run` refuses the plan)";

    // What no `kv_cache_dir` may reach: the home, working and plan's folders, every model's
    // weights and every engine's executable.
    let cache_guards = super::kv_cache::Protected::machine().with_above(base, "the plan's folder").with_plan(&file, base);
    let engine_names: Vec<&str> = file.engines.iter().map(|e| e.name.get_ref().as_str()).collect();
    let model_names: Vec<&str> = file.models.iter().map(|m| m.name.get_ref().as_str()).collect();
    for (i, engine) in file.engines.iter().enumerate() {
        let name = engine.name.get_ref();
        if engine_names[..i].contains(&name.as_str()) {
            error(engine.name.span(), format!("engine `{name}` is defined twice"), Some("give each [[engines]] entry its own name".into()));
        }
        // The name becomes part of file names in the pass folder (logs/<cell>-<engine>.log, the
        // pid file): a `/`, `\`, `..` or NUL would put them elsewhere, a leading `.` hide them.
        let name_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if name.is_empty() || name.starts_with('.') || !name.chars().all(name_ok) {
            error(
                engine.name.span(),
                format!("engine name `{}` may hold only letters, digits, `-`, `_` and `.` (not first)", name.escape_debug()),
                Some("the name is used in file names in the pass folder; e.g. `llama.cpp`, `mlx-lm`, `vllm_0.8`".into()),
            );
        }
        if let Some(preset) = &engine.preset {
            if presets::preset(preset.get_ref()).is_none() {
                error(preset.span(), format!("no engine preset `{}`", preset.get_ref()), Some(format!("presets: {}", presets::names().join(", "))));
            }
        }
        match (&engine.start, &engine.url, engine.port) {
            (None, None, _) => error(
                engine.name.span(),
                format!("engine `{name}` has neither `start` nor `url`"),
                Some("give `start` (a command benchpass runs and stops) or `url` (a server you run yourself)".into()),
            ),
            (Some(start), _, None) if engine.url.is_none() => error(
                start.span(),
                format!("engine `{name}` has a `start` command but no `port`"),
                Some("set `port = 8080` (benchpass passes it as {port} and talks to http://127.0.0.1:{port})".into()),
            ),
            _ => {}
        }
        if let Some(start) = &engine.start {
            match start.get_ref().first() {
                None => error(start.span(), "`start` is empty".to_owned(), Some("`start = [\"llama-server\", \"-m\", \"{weights}\", \"--port\", \"{port}\"]`".into())),
                Some(program) if !program.contains('{') && !is_placeholder(program) && find_executable(program).is_none() => {
                    missing(start.span(), format!("`{program}` is neither a file nor on PATH"), MISSING_HINT)
                }
                _ => {}
            }
        }
        if let Some(exe) = engine.executable.as_ref().filter(|e| !is_placeholder(e.get_ref())) {
            if find_executable(exe.get_ref()).is_none() {
                missing(exe.span(), format!("executable `{}` not found", exe.get_ref()), MISSING_HINT);
            }
        }
        if let Some(dir) = engine.kv_cache_dir.as_ref().filter(|d| !is_placeholder(d.get_ref())) {
            // Checked again, against the pass folder too, right before every clear.
            let empty = dir.get_ref().trim().is_empty().then(|| "an empty path names no cache folder".to_owned());
            if let Some(why) = empty.or_else(|| cache_guards.check(&resolve(base, dir.get_ref()))) {
                error(dir.span(), format!("refusing to clear `{}`: {why}", dir.get_ref()), Some("name the engine's own cache folder".into()));
            }
        }
        // A preset with a rule for its cache folder (oMLX's): the folder the rule gives now,
        // checked as a named one is (and again right before every clear).
        let lookup = engine.preset.as_ref().and_then(|p| presets::preset(p.get_ref())).and_then(|p| p.kv_cache_lookup.as_ref());
        if let (None, Some(start), Some(lookup)) = (&engine.kv_cache_dir, &engine.start, lookup) {
            let env = |name: &str| engine.env.get(name).cloned().or_else(|| std::env::var(name).ok());
            let found = super::engine_files::cache_folder(lookup, start.get_ref(), &env, crate::platform::home_dir().as_deref());
            if let Some(why) = found.dir.as_ref().and_then(|dir| cache_guards.check(dir)) {
                let dir = found.dir.as_ref().map(|d| d.display().to_string()).unwrap_or_default();
                error(
                    start.span(),
                    format!("refusing to clear `{dir}`, engine `{name}`'s KV-cache folder by its preset's rule ({}): {why}", found.rule),
                    Some("set `kv_cache_dir` on the engine to its own cache folder, or change what the rule reads".into()),
                );
            }
        }
        for (key, table) in [("extra", &engine.extra)] {
            if let Some(own) = OWN_FIELDS.iter().find(|k| table.contains_key(**k)) {
                error(engine.name.span(), format!("engine `{name}`: `{key}` may not set `{own}`"), Some("benchpass sets it from the plan's workloads".into()));
            }
        }
        if !(engine.health_timeout_s > 0.0 && engine.health_timeout_s <= MAX_TIMEOUT_S) {
            error(
                engine.name.span(),
                format!("engine `{name}`: health_timeout_s must be above 0 and at most {MAX_TIMEOUT_S} (a day), not {}", shown(engine.health_timeout_s)),
                Some("`health_timeout_s = 600` waits up to 10 minutes for the engine to load".into()),
            );
        }
    }
    for (i, model) in file.models.iter().enumerate() {
        let name = model.name.get_ref();
        if model_names[..i].contains(&name.as_str()) {
            error(model.name.span(), format!("model `{name}` is defined twice"), None);
        }
        if let Some(weights) = model.weights.as_ref().filter(|w| !is_placeholder(w.get_ref())) {
            let resolved = resolve(base, weights.get_ref());
            if !resolved.exists() {
                error(weights.span(), format!("weights `{}` do not exist", weights.get_ref()), Some("give the path of the weight file or folder (relative to the plan, or with ~)".into()));
            }
        }
    }
    if file.cells.is_empty() {
        error(0..0, "the plan has no [[cells]]".to_owned(), Some("add `[[cells]]` with `engine = \"…\"` and `model = \"…\"`".into()));
    }
    for cell in &file.cells {
        if !engine_names.contains(&cell.engine.get_ref().as_str()) {
            error(
                cell.engine.span(),
                format!("the cell names engine `{}`, which no [[engines]] entry defines", cell.engine.get_ref()),
                Some(format!("engines in this plan: {}", engine_names.join(", "))),
            );
        }
        if !model_names.contains(&cell.model.get_ref().as_str()) {
            error(
                cell.model.span(),
                format!("the cell names model `{}`, which no [[models]] entry defines", cell.model.get_ref()),
                Some(format!("models in this plan: {}", model_names.join(", "))),
            );
        }
    }
    if let Some(own) = OWN_FIELDS.iter().find(|k| file.request.extra.contains_key(**k)) {
        error(file.request.api.span(), format!("[request] extra may not set `{own}`"), Some("benchpass sets it from the plan's workloads".into()));
    }
    let r = &file.request;
    // Written so that NaN fails every check.
    let positive = |x: f64| x > 0.0;
    let timeout_ok = |x: f64| positive(x) && x <= MAX_TIMEOUT_S;
    let timeouts_ok = timeout_ok(r.first_token_timeout_s) && timeout_ok(r.idle_timeout_s);
    let temperature_ok = (r.temperature == 0.0 || positive(r.temperature)) && r.temperature <= MAX_TEMPERATURE;
    if r.concurrency == 0 || r.concurrency > MAX_CONCURRENCY || !timeouts_ok || !temperature_ok {
        error(
            0..0,
            format!(
                "[request]: concurrency must be 1 to {MAX_CONCURRENCY}, timeouts above 0 and at most {MAX_TIMEOUT_S} seconds (a day), \
                 temperature 0 to {MAX_TEMPERATURE}"
            ),
            Some("`first_token_timeout_s = 600` and `idle_timeout_s = 60` are the defaults".into()),
        );
    }
    if let Some(slo) = &r.slo {
        if let Err(why) = benchpass_format::Slo::parse(slo.get_ref()) {
            error(slo.span(), format!("[request] slo = {:?}: {why}", slo.get_ref()), Some("`slo = \"ttft=2000ms,tpot=100ms\"`, as `--slo` takes it".into()));
        }
    }
    if let Some(cooldown) = &file.gaps.cooldown {
        let spec = cooldown.get_ref();
        if spec.level().is_none() || !(spec.max_s > 0.0 && spec.max_s <= MAX_GAP_S) {
            error(
                cooldown.span(),
                format!("[gaps] cooldown waits until a thermal level (nominal, moderate, heavy, trapping), at most max_s seconds (above 0, at most {MAX_GAP_S})"),
                Some("`cooldown = { until = \"nominal\", max_s = 600 }`".into()),
            );
        }
    }
    let gap_ok = |x: f64| (0.0..=MAX_GAP_S).contains(&x);
    if !(gap_ok(file.gaps.between_cells_s) && gap_ok(file.gaps.between_workloads_s)) {
        error(
            0..0,
            format!("[gaps]: gaps are 0 to {MAX_GAP_S} seconds (a week)"),
            Some("`between_cells_s = 60` cools down for a minute".into()),
        );
    }
    if let Some(name) = &file.name {
        if let Err(e) = crate::runner::check_pass_id(&format!("20260101-000000-{name}")) {
            error(0..0, format!("name `{name}`: {e:#}"), Some("the name becomes part of the pass id".into()));
        }
    }
    if !matches!(file.request.api.get_ref().as_str(), "chat" | "completions") {
        error(file.request.api.span(), format!("api `{}`", file.request.api.get_ref()), Some("`chat` or `completions`".into()));
    }
    let mut steps = Vec::new();
    if file.workloads.is_empty() {
        error(0..0, "the plan has no [[workloads]]".to_owned(), Some("add `[[workloads]]` with `kind = \"sustained\"`".into()));
    }
    for (w, spec) in file.workloads.iter().enumerate() {
        let Some(workload) = Workload::parse(spec.kind.get_ref()) else {
            error(spec.kind.span(), format!("no workload kind `{}`", spec.kind.get_ref()), Some("sustained, prompt-matrix, pp-tg, soak, agent or quality".into()));
            continue;
        };
        let default_max_tokens = if workload == Workload::Quality { crate::workloads::quality::MAX_TOKENS } else { 256 };
        let spec_max_tokens = spec.max_tokens.unwrap_or(default_max_tokens);
        let step = |target: u64, runs: u32, max_tokens: u64| Step {
            workload,
            target_prompt_tokens: target,
            max_tokens,
            warmup: spec.warmup,
            runs,
            ignore_eos: spec.ignore_eos,
            duration_s: spec.duration_s.filter(|_| workload == Workload::Soak),
            top_logprobs: (workload == Workload::Quality).then(|| spec.top_logprobs.unwrap_or(crate::workloads::quality::DEFAULT_TOP_LOGPROBS)),
            concurrency: spec.concurrency,
        };
        if spec.concurrency.is_some_and(|c| c == 0 || c > MAX_CONCURRENCY) {
            error(spec.kind.span(), format!("concurrency = {}", spec.concurrency.unwrap_or(0)), Some(format!("1 to {MAX_CONCURRENCY} streams")));
        }
        if spec.concurrency.is_some_and(|c| c > 1) && workload == Workload::Soak {
            error(spec.kind.span(), "a soak workload runs one stream at a time".to_owned(), Some("drop `concurrency` here".into()));
        }
        if spec.sessions.is_some() && workload != Workload::Agent {
            error(spec.kind.span(), format!("`sessions` is for agent workloads, not {}", workload.as_str()), Some("use `runs` to say how many".into()));
        }
        if let Some(k) = spec.top_logprobs {
            if workload != Workload::Quality {
                error(spec.kind.span(), format!("`top_logprobs` is for quality workloads, not {}", workload.as_str()), None);
            } else if !(1..=crate::workloads::quality::MAX_TOP_LOGPROBS).contains(&k) {
                error(spec.kind.span(), format!("top_logprobs = {k}"), Some(format!("1 to {} (the API's maximum)", crate::workloads::quality::MAX_TOP_LOGPROBS)));
            }
        }
        match (workload, spec.duration_s) {
            (Workload::Soak, None | Some(0)) => error(
                spec.kind.span(),
                "a soak workload needs `duration_s` (at least 1)".to_owned(),
                Some("`duration_s = 14400` soaks for 4 hours".into()),
            ),
            (Workload::Soak, Some(_)) => {}
            (_, Some(_)) => error(spec.kind.span(), format!("`duration_s` is for soak workloads, not {}", workload.as_str()), Some("use `runs` to say how many".into())),
            (_, None) => {}
        }
        match (workload, spec.targets.is_empty()) {
            (Workload::Sustained | Workload::Quality, true) => steps.push((w, step(0, spec.runs, spec_max_tokens))),
            // One measured run per turn; `runs` counts sessions here.
            (Workload::Agent, true) => steps.push((w, step(0, spec.sessions.unwrap_or(spec.runs), spec_max_tokens))),
            // Its runs are open-ended: as many as fit in its duration.
            (Workload::Soak, true) => steps.push((w, step(0, 0, spec_max_tokens))),
            (Workload::Sustained | Workload::Soak | Workload::Agent | Workload::Quality, false) => error(
                spec.kind.span(),
                format!("a {} workload takes no `targets`", workload.as_str()),
                Some("use kind = \"prompt-matrix\" for prompt sizes".into()),
            ),
            (_, true) => error(spec.kind.span(), format!("a {} workload needs `targets`", workload.as_str()), Some("`targets = [{ tokens = 128, runs = 3 }, { tokens = 2048, runs = 2 }]`".into())),
            (_, false) => {
                for t in &spec.targets {
                    steps.push((w, step(t.tokens, t.runs.unwrap_or(spec.runs), t.max_tokens.unwrap_or(spec_max_tokens))));
                }
            }
        }
    }
    for (i, (w, s)) in steps.iter().enumerate() {
        let span = file.workloads[*w].kind.span();
        if s.max_tokens == 0 || (s.workload.has_prompt_targets() && s.target_prompt_tokens == 0) {
            error(span.clone(), "token counts (max_tokens, target tokens) must be at least 1".to_owned(), None);
        }
        // Far beyond any real protocol, and small enough that no schedule arithmetic overflows.
        if s.max_tokens > MAX_TOKENS || s.target_prompt_tokens > MAX_TOKENS || s.runs > MAX_RUNS || s.warmup > MAX_RUNS || s.duration_s.unwrap_or(0) > MAX_SOAK_S {
            error(
                span.clone(),
                format!("a count is out of range (max_tokens and target tokens at most {MAX_TOKENS}, runs and warmup at most {MAX_RUNS}, duration_s at most {MAX_SOAK_S})"),
                Some("these bounds are far beyond any real benchmark; check for a typo".into()),
            );
        }
        // Runs are keyed on workload, target and repetition (resume relies on it).
        if steps[..i].iter().any(|(_, o)| (o.workload, o.target_prompt_tokens) == (s.workload, s.target_prompt_tokens)) {
            error(
                span,
                format!("{} at target {} appears twice", s.workload.as_str(), s.target_prompt_tokens),
                Some("raise `runs` instead of repeating a workload".into()),
            );
        }
    }
    // A quality workload asks for logprobs: an engine that refuses them (or that many) would
    // fail every one of its requests.
    let mut refused: Vec<(&str, usize)> = Vec::new();
    for cell in &file.cells {
        let Some(engine) = file.engines.iter().find(|e| e.name.get_ref() == cell.engine.get_ref()) else { continue };
        let Some(preset) = presets::preset(engine.preset.as_ref().map_or("openai-compatible", |p| p.get_ref())) else { continue };
        for (w, s) in steps.iter().filter(|(_, s)| s.workload == Workload::Quality) {
            let Some(why) = s.top_logprobs.and_then(|k| preset.logprobs.refusal(k)) else { continue };
            if refused.contains(&(engine.name.get_ref().as_str(), *w)) {
                continue;
            }
            refused.push((engine.name.get_ref().as_str(), *w));
            let hint = match preset.logprobs {
                presets::Logprobs::Supported { max_top_logprobs: Some(max) } => {
                    format!("set `top_logprobs = {max}` on this workload (every cell is then asked for as many)")
                }
                _ => format!("run the quality workload in a plan without engine `{}`", engine.name.get_ref()),
            };
            error(
                file.workloads[*w].kind.span(),
                format!("engine `{}` (preset `{}`) cannot run this quality workload: {why}", engine.name.get_ref(), preset.name),
                Some(format!("{hint} ({})", preset.source_of("logprobs").unwrap_or("the preset's logprobs"))),
            );
        }
    }
    let order = match file.order.as_ref().map(|o| o.get_ref().as_str()) {
        None | Some("sequential") => Order::Sequential,
        Some("interleaved") => Order::Interleaved,
        Some(other) => {
            let span = file.order.as_ref().map_or(0..0, Spanned::span);
            error(span, format!("order `{other}`"), Some("`sequential` (the default) or `interleaved`".into()));
            Order::Sequential
        }
    };
    // Every turn of an interleaved plan warms its engine up again.
    let per_cell: u64 = steps
        .iter()
        .map(|(_, s)| match order {
            Order::Sequential => u64::from(s.warmup) + u64::from(s.runs),
            Order::Interleaved => u64::from(s.runs) * (u64::from(s.warmup) + 1),
        })
        .sum();
    let total = per_cell.saturating_mul(file.cells.len() as u64);
    if total > MAX_PLANNED_RUNS {
        error(0..0, format!("the plan makes {total} runs, more than {MAX_PLANNED_RUNS}"), Some("split it into several plans".into()));
    }
    if order == Order::Interleaved {
        if let Some((w, _)) = steps.iter().find(|(_, s)| s.workload == Workload::Soak) {
            error(
                file.workloads[*w].kind.span(),
                "a soak workload cannot be interleaved: it is one unbroken stretch of hours".to_owned(),
                Some("put the soak in its own plan, or use order = \"sequential\"".into()),
            );
        }
    }
    not_ready.sort_by_key(|e| e.line);
    if errors.is_empty() {
        Ok(Plan { path: path.to_owned(), file, steps, order, not_ready })
    } else {
        Err(errors)
    }
}

/// Unknown keys named before `plan check` gives up on the rest of a file.
const MAX_UNKNOWN_KEYS: usize = 32;

/// Replaces the line holding byte `at` of `text` with spaces, keeping every byte offset and line
/// number; false when there is nothing left to blank (the key's line already is).
fn blank_line_at(text: &mut String, at: usize) -> bool {
    let start = text[..at.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    if text[start..end].trim().is_empty() {
        return false;
    }
    let blank = " ".repeat(text[start..end].len());
    text.replace_range(start..end, &blank);
    true
}

/// Bounds on a plan's counts: far beyond any real benchmark (a million-token prompt, ten
/// thousand repetitions, a 30-day soak), so a typo is caught and no count overflows.
pub use crate::client::limits::MAX_TOKENS;
pub const MAX_RUNS: u32 = 10_000;
pub const MAX_SOAK_S: u64 = 30 * 24 * 3600;
/// A number as a person reads it: `1e300` rather than 301 digits.
fn shown(x: f64) -> String {
    if x.abs() >= 1e9 { format!("{x:e}") } else { x.to_string() }
}

/// The longest first-token, idle or health timeout: a day, in seconds. Beyond it a wait is
/// not a timeout, and a value near f64's range cannot become a `Duration` at all.
pub const MAX_TIMEOUT_S: f64 = 24.0 * 3600.0;
/// The longest gap between cells or workloads: a week, in seconds.
pub const MAX_GAP_S: f64 = 7.0 * 24.0 * 3600.0;
/// The most streams a pass keeps in flight at once (each is a task and a connection).
pub const MAX_CONCURRENCY: u32 = 4096;
/// The highest sampling temperature benchpass sends (servers accept 0 to 2; some more).
pub const MAX_TEMPERATURE: f64 = 100.0;
pub const MAX_PLANNED_RUNS: u64 = 1_000_000;

/// Request fields that define the protocol: a plan's extra fields may not override them.
pub const OWN_FIELDS: [&str; 10] =
    ["model", "messages", "prompt", "stream", "stream_options", "max_tokens", "temperature", "tools", "logprobs", "top_logprobs"];

/// A path in a plan: `~/…`, absolute, or relative to the plan's folder.
pub fn resolve(base: &Path, path: &str) -> PathBuf {
    let expanded = expand_home(path);
    if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_whole_strings_outside_comments_in_every_kind_of_string() {
        let text = "a = \"<x>\" # \"<in a comment>\"\nb = '<y>'\nc = \"\\\"<not>\\\"\"\nd = \"\"\"<z>\"\"\"\ne = ['''<w>''', \"a<b>\", \"<>\"]\nf = \"é <v> é\"\n";
        let found: Vec<(usize, &str)> = placeholders(text).into_iter().map(|(at, v)| (line_of(text, at), v)).collect();
        assert_eq!(found, [(1, "<x>"), (2, "<y>"), (4, "<z>"), (5, "<w>")]);
        assert!(toml::from_str::<toml::Table>(text).is_ok(), "the text is TOML");
    }

    #[test]
    fn an_unknown_key_names_the_nearest_known_one_and_a_syntax_error_its_column() {
        let dir = tempfile::tempdir().unwrap();
        let plan = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            load(&path).map(|_| ()).expect_err("refused")
        };
        let errors = plan("typo.toml", "[[engines]]\nname = \"a\"\npresett = \"llama.cpp\"\n");
        assert_eq!(errors[0].line, 3);
        assert_eq!(errors[0].hint.as_deref(), Some("did you mean `preset`? docs/plans.md lists every key a plan may have"));
        let errors = plan("far.toml", "[[engines]]\nname = \"a\"\nzzz = 1\n");
        assert_eq!(errors[0].hint.as_deref(), Some("docs/plans.md lists every key a plan may have"), "nothing near `zzz`");
        // `[[engines]` is missing its last bracket: line 1, column 10 (after `[[engines`).
        let errors = plan("syntax.toml", "[[engines]\nname = \"a\"\n");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].line, 1);
        assert!(errors[0].message.starts_with("invalid table header") && errors[0].message.ends_with("(column 10)"), "{}", errors[0].message);
        assert_eq!(errors[0].hint.as_deref(), Some(SYNTAX_HINT));
    }

    #[test]
    fn edit_distances_by_hand() {
        assert_eq!(edit_distance("presett", "preset"), 1);
        assert_eq!(edit_distance("kv_cache", "kv_cache_dir"), 4);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("port", "prot"), 1, "a swap is one edit");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(closest_key("unknown field `prot`, expected one of `port`, `preset`"), Some("port"));
    }
}
