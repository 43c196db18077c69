//! What of an engine's preset has to be looked up on this machine: the program that tells its
//! version (beside its executable, or on `PATH`), and a model's EOS ids in its weights folder.
//! The values come from the `engines` crate, which does no I/O; the looking is done here.

use std::path::{Path, PathBuf};

use engines::eos::{logit_bias, CONFIG_FILES};
use engines::presets::{CacheFolderLookup, IgnoreEos, VersionFrom};
use serde_json::Value;

/// The command line that reads an engine's version, found on this machine.
pub trait VersionArgv {
    /// The command line, given the engine executable (if one was found); `None` for an
    /// endpoint, or when the program to run cannot be found.
    fn argv(&self, executable: Option<&Path>) -> Option<Vec<String>>;
}

impl VersionArgv for VersionFrom {
    fn argv(&self, executable: Option<&Path>) -> Option<Vec<String>> {
        match *self {
            VersionFrom::Endpoint { .. } => None,
            VersionFrom::Command { arg } => executable.map(|exe| vec![exe.display().to_string(), arg.to_owned()]),
            VersionFrom::Program { program, args } => {
                let beside = executable.and_then(Path::parent).map(|dir| dir.join(program)).filter(|p| p.is_file());
                let found: Option<PathBuf> = beside.or_else(|| super::file::find_executable(program));
                found.map(|p| std::iter::once(p.display().to_string()).chain(args.iter().map(|a| (*a).to_owned())).collect())
            }
        }
    }
}

/// `eos_token_id` (a number or a list) from `generation_config.json` and `config.json` in the
/// weights folder, merged; empty when neither says (a file that is missing or not JSON says
/// nothing).
pub fn eos_ids(weights: &Path) -> Vec<u64> {
    let configs: Vec<Value> = CONFIG_FILES
        .iter()
        .filter_map(|file| std::fs::read_to_string(weights.join(file)).ok())
        .filter_map(|text| serde_json::from_str::<Value>(&text).ok())
        .collect();
    engines::eos::eos_ids_in(&configs)
}

/// The `logit_bias` that holds `engine` past EOS, for an engine whose preset's way is
/// `logit_bias` and a pass with steps that ask for it: `Ok(None)` when none is needed, and the
/// warning to print when one is needed but no EOS id is found (runs may then stop early; they
/// are flagged).
pub fn bias_for(engine: &str, way: IgnoreEos, weights: Option<&Path>, asked: bool) -> Result<Option<Value>, String> {
    if !asked || !way.adds_logit_bias() {
        return Ok(None);
    }
    let why = match weights {
        None => "no weights folder was given to read its EOS ids from".to_owned(),
        Some(weights) => match logit_bias(&eos_ids(weights)) {
            Some(bias) => return Ok(Some(bias)),
            None => format!("{} names no eos_token_id", weights.display()),
        },
    };
    Err(format!("warning: {engine} ignores `ignore_eos` and {why}: runs may stop early (they are flagged if so)"))
}

/// An engine's KV-cache folder found by its preset's rule ([`CacheFolderLookup`]), and which
/// part of the rule gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundCacheFolder {
    /// `None`: the engine's cache is off, so there is no folder to clear.
    pub dir: Option<PathBuf>,
    /// Which rule gave the folder (or turned the cache off), as the log and the dry run say it.
    pub rule: String,
}

impl FoundCacheFolder {
    /// Whether the engine keeps a cache on disk at all.
    pub fn enabled(&self) -> bool {
        self.dir.is_some()
    }
}

/// The last value of `flag` in `argv` (`--flag value` or `--flag=value`), as argparse takes it.
fn flag_value(argv: &[String], flag: &str) -> Option<String> {
    let mut found = None;
    for (i, arg) in argv.iter().enumerate() {
        if arg == flag {
            found = argv.get(i + 1).cloned();
        } else if let Some(value) = arg.strip_prefix(flag).and_then(|rest| rest.strip_prefix('=')) {
            found = Some(value.to_owned());
        }
    }
    found
}

/// `~` and `~/x` against `home`, as Python's `expanduser` reads them; anything else as given.
fn expand_user(path: &str, home: Option<&Path>) -> PathBuf {
    match (path, home) {
        ("~", Some(home)) => home.to_owned(),
        (p, Some(home)) if p.starts_with("~/") => home.join(&p[2..]),
        (p, _) => PathBuf::from(p),
    }
}

/// Python's truth of a settings value: `false`, `null`, `0` and `""` are false.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::Null => false,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Finds the engine's cache folder as the engine itself does (oMLX: `omlx/settings.py` and
/// `omlx/cli.py`, cited in the preset): the base folder from the start command's flag, else
/// the environment, else the file that names it, else the default; then the start command's
/// folder flag (its off flag first), else the environment's folder, else the settings file's,
/// else the default under the base, unless the environment or the settings file turned the
/// cache off. `argv` is the start command, `env` the engine's environment, `home` the home
/// folder. Reads two small files; a file that is missing or not JSON says nothing, as for
/// the engine.
pub fn cache_folder(lookup: &CacheFolderLookup, argv: &[String], env: &dyn Fn(&str) -> Option<String>, home: Option<&Path>) -> FoundCacheFolder {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    let (base, base_rule) = if let Some(flag) = flag_value(argv, lookup.base_flag).filter(|v| !v.is_empty()) {
        (expand_user(&flag, home), format!("{} in the start command", lookup.base_flag))
    } else if let Some(value) = env(lookup.base_env) {
        (expand_user(&value, home), format!("${}", lookup.base_env))
    } else if let Some(named) = std::fs::read_to_string(expand_user(lookup.base_file, home)).ok().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()) {
        (expand_user(&named, home), format!("the content of {}", lookup.base_file))
    } else {
        (expand_user(lookup.base_default, home), format!("the default {}", lookup.base_default))
    };
    let settings_path = base.join(lookup.settings_file);
    let section = std::fs::read_to_string(&settings_path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get(lookup.section).cloned())
        .unwrap_or(Value::Null);
    let settings_named = || format!("<base>/{} (base: {base_rule}, {})", lookup.settings_file, base.display());
    let mut enabled = section.get(lookup.enabled_key).is_none_or(truthy);
    let mut enabled_rule = (!enabled).then(|| format!("`{}.{}` is false in {}", lookup.section, lookup.enabled_key, settings_named()));
    let mut dir = section
        .get(lookup.dir_key)
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .map(|d| (expand_user(d, home), format!("`{}.{}` in {}", lookup.section, lookup.dir_key, settings_named())));
    if let Some(value) = env(lookup.enabled_env) {
        enabled = matches!(value.to_lowercase().as_str(), "true" | "1" | "yes");
        enabled_rule = (!enabled).then(|| format!("${}={value}", lookup.enabled_env));
    }
    if let Some(value) = env(lookup.dir_env) {
        dir = Some((expand_user(&value, home), format!("${}", lookup.dir_env)));
    }
    if argv.iter().any(|a| a == lookup.off_flag) {
        return FoundCacheFolder { dir: None, rule: format!("the cache is off: {} in the start command", lookup.off_flag) };
    }
    if let Some(flag) = flag_value(argv, lookup.dir_flag).filter(|v| !v.is_empty()) {
        return FoundCacheFolder { dir: Some(expand_user(&flag, home)), rule: format!("{} in the start command", lookup.dir_flag) };
    }
    if !enabled {
        return FoundCacheFolder { dir: None, rule: format!("the cache is off: {}", enabled_rule.unwrap_or_default()) };
    }
    match dir {
        Some((dir, rule)) => FoundCacheFolder { dir: Some(dir), rule },
        None => FoundCacheFolder { dir: Some(base.join(lookup.default_dir)), rule: format!("<base>/{}, base: {base_rule}", lookup.default_dir) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn omlx() -> &'static CacheFolderLookup {
        engines::presets::preset("omlx").unwrap().kv_cache_lookup.as_ref().unwrap()
    }

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    /// Each rule of oMLX's, in its order (omlx/settings.py resolve_default_base_path,
    /// GlobalSettings.load, the overrides; omlx/cli.py serve_command), on a home folder of files
    /// made here.
    #[test]
    fn omlx_finds_its_cache_folder_as_omlx_does() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path();
        let no_env = |_: &str| -> Option<String> { None };
        let serve = argv(&["omlx", "serve", "--model-dir", "/m", "--port", "8000"]);
        // Nothing anywhere: ~/.omlx/cache.
        let found = cache_folder(omlx(), &serve, &no_env, Some(home));
        assert_eq!(found, FoundCacheFolder { dir: Some(home.join(".omlx/cache")), rule: "<base>/cache, base: the default ~/.omlx".into() });

        // The macOS app's file names the base (trimmed, `~` expanded).
        let app = home.join("Library/Application Support/oMLX");
        std::fs::create_dir_all(&app).unwrap();
        std::fs::write(app.join("base-path"), "~/omlx-data\n").unwrap();
        let found = cache_folder(omlx(), &serve, &no_env, Some(home));
        assert_eq!(found.dir, Some(home.join("omlx-data/cache")));
        assert_eq!(found.rule, "<base>/cache, base: the content of ~/Library/Application Support/oMLX/base-path");

        // OMLX_BASE_PATH is over the file.
        let base_env = |k: &str| (k == "OMLX_BASE_PATH").then(|| home.join("env-base").display().to_string());
        assert_eq!(cache_folder(omlx(), &serve, &base_env, Some(home)).dir, Some(home.join("env-base/cache")));

        // --base-path is over both; its settings.json names the folder.
        let flag_base = home.join("flag-base");
        std::fs::create_dir_all(&flag_base).unwrap();
        std::fs::write(flag_base.join("settings.json"), r#"{"cache": {"enabled": true, "ssd_cache_dir": "~/ssd/omlx"}}"#).unwrap();
        let with_base = argv(&["omlx", "serve", "--base-path", flag_base.to_str().unwrap()]);
        let found = cache_folder(omlx(), &with_base, &base_env, Some(home));
        assert_eq!(found.dir, Some(home.join("ssd/omlx")));
        assert_eq!(found.rule, format!("`cache.ssd_cache_dir` in <base>/settings.json (base: --base-path in the start command, {})", flag_base.display()));

        // OMLX_SSD_CACHE_DIR over the file, --paged-ssd-cache-dir over both (= form too).
        let dir_env = |k: &str| (k == "OMLX_SSD_CACHE_DIR").then(|| "/var/tmp/omlx-env".to_owned());
        assert_eq!(cache_folder(omlx(), &with_base, &dir_env, Some(home)).rule, "$OMLX_SSD_CACHE_DIR");
        let flagged = argv(&["omlx", "serve", "--base-path", flag_base.to_str().unwrap(), "--paged-ssd-cache-dir=/var/tmp/omlx-flag"]);
        let found = cache_folder(omlx(), &flagged, &dir_env, Some(home));
        assert_eq!((found.dir, found.rule.as_str()), (Some(PathBuf::from("/var/tmp/omlx-flag")), "--paged-ssd-cache-dir in the start command"));

        // Off: in the settings file, by the environment, by --no-cache (over everything); the
        // folder flag turns a cache the file turned off on again.
        std::fs::write(flag_base.join("settings.json"), r#"{"cache": {"enabled": false}}"#).unwrap();
        let found = cache_folder(omlx(), &with_base, &no_env, Some(home));
        assert_eq!(found.dir, None);
        assert!(found.rule.starts_with("the cache is off: `cache.enabled` is false in <base>/settings.json"), "{}", found.rule);
        assert!(cache_folder(omlx(), &flagged, &no_env, Some(home)).enabled());
        let off_env = |k: &str| (k == "OMLX_CACHE_ENABLED").then(|| "0".to_owned());
        assert_eq!(cache_folder(omlx(), &serve, &off_env, Some(home)).rule, "the cache is off: $OMLX_CACHE_ENABLED=0");
        let no_cache = argv(&["omlx", "serve", "--no-cache", "--paged-ssd-cache-dir", "/x"]);
        assert_eq!(cache_folder(omlx(), &no_cache, &no_env, Some(home)).rule, "the cache is off: --no-cache in the start command");
        // A settings file that is not JSON says nothing.
        std::fs::write(flag_base.join("settings.json"), "{not json").unwrap();
        assert_eq!(cache_folder(omlx(), &with_base, &no_env, Some(home)).dir, Some(flag_base.join("cache")));
    }

    #[test]
    fn ids_come_from_both_configs_as_numbers_or_lists() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.json"), r#"{"eos_token_id": [2, 32000]}"#).unwrap();
        std::fs::write(dir.path().join("generation_config.json"), r#"{"eos_token_id": 2}"#).unwrap();
        assert_eq!(eos_ids(dir.path()), vec![2, 32000]);
        assert_eq!(logit_bias(&[2, 32000]).unwrap(), serde_json::json!({"2": -1.0e9, "32000": -1.0e9}));
        assert_eq!(eos_ids(&dir.path().join("missing")), Vec::<u64>::new());
        assert_eq!(logit_bias(&[]), None);
    }

    #[test]
    fn version_argv_runs_the_executable_or_a_program_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let server = dir.path().join("mlx_lm.server");
        std::fs::write(&server, "").unwrap();
        let command = VersionFrom::Command { arg: "--version" };
        assert_eq!(command.argv(Some(&server)).unwrap(), vec![server.display().to_string(), "--version".to_owned()]);
        assert_eq!(command.argv(None), None);
        let endpoint = VersionFrom::Endpoint { path: "/version", pointer: "/version" };
        assert_eq!(endpoint.argv(Some(&server)), None);

        let program = VersionFrom::Program { program: "benchpass-test-no-such-program", args: &["--version"] };
        // Neither beside the executable nor on PATH: nothing to run.
        assert_eq!(program.argv(Some(&server)), None);
        let sibling = dir.path().join("benchpass-test-no-such-program");
        std::fs::write(&sibling, "").unwrap();
        assert_eq!(program.argv(Some(&server)).unwrap(), vec![sibling.display().to_string(), "--version".to_owned()]);
    }
}
