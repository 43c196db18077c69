//! `benchpass sim`: the reference engine. A real OpenAI-compatible HTTP server whose token
//! schedule is known exactly, so that every figure benchpass measures can be checked against
//! the truth. It also serves the demo where no real engine is installed.

pub mod logprobs;
mod profile;
mod schedule;
mod server;

pub use profile::{Fault, SimProfile, PRESETS};
pub use schedule::{Schedule, ScheduleInput, ScheduledEvent};
pub use server::{bind, serve};
