//! Plans: the seed protocol and others as TOML files, run unattended with each engine started
//! fresh and stopped again (docs/plans.md).

pub mod advice;
pub mod cooldown;
pub mod engine_files;
pub mod file;
pub mod kv_cache;
pub mod lifecycle;
pub mod run;

/// The engines' presets (the `engines` crate) under the path the plan code names them by,
/// with the lookup on this machine of the program that tells an engine's version.
pub mod presets {
    pub use super::engine_files::VersionArgv;
    pub use engines::presets::*;
}

/// The EOS ids as a `logit_bias` (the `engines` crate) under the path the plan code names them
/// by, with their reading from a weights folder.
pub mod eos {
    pub use super::engine_files::{bias_for, eos_ids};
    pub use engines::eos::*;
}

pub use file::{load, Plan, PlanError};
pub use run::{dry_run, run_plan, PlanRunOptions};
