//! Measurement accuracy against the reference engine's known schedule, in a test binary of
//! its own: cargo runs test binaries one after another, so these tests (one engine at a time,
//! under the engine lock) have the cores to themselves. Beside the other integration tests,
//! whatever of those does not hold the lock (imports that sync every run, plan checks) ran on
//! the second core and could push a TTFT past its 2 ms bar.

#[allow(dead_code)]
#[path = "../it/support.rs"]
mod support;

mod accuracy;
