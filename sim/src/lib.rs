//! `benchpass sim`: the reference engine. A real OpenAI-compatible HTTP server whose token
//! schedule is known exactly, so that every figure benchpass measures can be checked against
//! the truth. It also serves the demo where no real engine is installed.

mod chat;
pub mod logprobs;
mod prefix_cache;
mod profile;
mod schedule;
mod server;

pub use chat::prompt_text;
pub use prefix_cache::PrefixCache;
pub use profile::{Fault, SimProfile, PRESETS};
pub use schedule::{Schedule, ScheduleInput, ScheduledEvent};
pub use server::{bind, serve};
