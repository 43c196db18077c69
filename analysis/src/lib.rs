//! Analysis: turns raw passes into the figures people publish, and decides which of them may
//! be compared.
//!
//! It reads passes through [`benchpass_format`] and does no other I/O: no sockets, no processes,
//! no writing. Rendering the figures into files is the job of `xtask` and the templates.
//! docs/statistics.md explains the method.

pub mod agent;
pub mod band;
pub mod cells;
pub mod diff;
pub mod floor;
pub mod key;
pub mod knee;
pub mod leaderboard;
pub mod quality;
pub mod ranksum;
pub mod reasons;
pub mod runs;
pub mod serving;
pub mod soak;
pub mod summary;
