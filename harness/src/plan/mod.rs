//! Plans: the seed protocol and others as TOML files, run unattended with each engine started
//! fresh and stopped again (docs/plans.md).

pub mod advice;
pub mod eos;
pub mod file;
pub mod kv_cache;
pub mod lifecycle;
pub mod presets;
pub mod run;

pub use file::{load, Plan, PlanError};
pub use run::{dry_run, run_plan, PlanRunOptions};
