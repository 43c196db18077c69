//! What of an engine's preset has to be looked up on this machine: the program that tells its
//! version (beside its executable, or on `PATH`), and a model's EOS ids in its weights folder.
//! The values come from the `engines` crate, which does no I/O; the looking is done here.

use std::path::{Path, PathBuf};

use engines::eos::{logit_bias, CONFIG_FILES};
use engines::presets::{IgnoreEos, VersionFrom};
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

#[cfg(test)]
mod tests {
    use super::*;

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
