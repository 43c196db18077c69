#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| benchpass_fuzz::client_event(data));
