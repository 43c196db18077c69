//! The harness: everything that touches a server or the disk while a pass is measured.
//!
//! It drives OpenAI-compatible servers ([`client`], [`runner`]), records provenance
//! ([`provenance`]) and writes passes through the pass format crate, `benchpass_format`, which
//! it names [`pass`] (and its [`metrics`] and [`secrets`] under their old paths). It computes no
//! statistics: a run's own figures, defined there, are all it derives, so that analysis can be
//! redone from the raw runs at any time. The reference engine it is checked against is the
//! `sim` crate, which takes its shared texts from here ([`corpus`], [`tokens`]); nothing here
//! depends on it.

pub(crate) mod chunk;
pub mod client;
pub mod corpus;
pub mod engine_log;
pub mod http_body;
pub mod installs;
pub mod memory;
pub mod plan;
pub mod platform;
pub mod ports;
pub mod probe;
pub mod prometheus;
pub mod progress;
pub mod provenance;
pub mod runner;
pub mod sse;
pub mod sampler;
pub mod self_check;
pub mod tls;
pub mod tokens;
pub mod workloads;

// The raw pass format, its figure definitions and the key's redaction live in the format
// crate; their harness paths stay.
pub use benchpass_format as pass;
pub use benchpass_format::{metrics, secrets};
