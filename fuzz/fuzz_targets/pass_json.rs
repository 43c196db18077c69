#![no_main]

use std::sync::OnceLock;

static SCRATCH: OnceLock<benchpass_fuzz::Scratch> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    benchpass_fuzz::pass_json(SCRATCH.get_or_init(benchpass_fuzz::Scratch::new), data);
});
