//! `benchpass sim`: the reference engine. A real OpenAI-compatible HTTP server whose token
//! schedule is known exactly, so that every figure benchpass measures can be checked against
//! the truth: it is the ground truth of the accuracy tests, and it serves the demo where no
//! real engine is installed. It takes the texts it shares with the client (the corpus, the
//! reference tokenizer) from `harness`, never the other way round. Two rules keep it the
//! truth: it is never linked into what reads passes (`analysis` and `report` take it only as a
//! dev-dependency, for tests that measure it), so no figure can be computed from the sim's own
//! knowledge instead of from what was measured; and its schedule (`schedule.rs`) is plain
//! arithmetic over the profile, with no clock in it, so a test's expected figure is a formula
//! a reader can check by hand. Only the server (`server.rs`) reads a clock, to send each event
//! at the instant the schedule names.

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
