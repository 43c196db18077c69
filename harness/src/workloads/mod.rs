//! Workloads that bring their own prompts rather than cutting them from the corpus to a size:
//! replayed agent sessions and the quality prompts. Each turns a step into the runner's jobs.

pub mod agent;
pub mod quality;
