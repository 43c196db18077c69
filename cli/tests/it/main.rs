//! Integration tests: the real `benchpass` binary against the real reference engine
//! (`benchpass sim`) over loopback HTTP. Figures are checked against the sim's schedule, which
//! is worked out by hand in each test.

mod support;

mod agent;
mod assumed_probe;
mod busy_port;
mod cache_clear;
mod cache_flush;
mod cli;
mod energy;
mod engine_facts;
mod csv_io;
mod demo;
mod faults;
mod fuzz_corpus;
mod hostile;
mod hostile_files;
mod hostile_numbers;
mod hostile_records;
mod hostile_sizes;
mod key_echo;
mod leaderboard_cache;
mod leaderboard_md;
mod leaderboard_parquet;
mod llama_cpp;
mod llama_cpp_agent;
mod llama_cpp_quality;
mod log_only_engines;
mod mlx_lm;
mod plan_preview;
mod plans;
mod process_groups;
mod quality;
mod shared_passes;
mod resume_jobs;
mod round_trip;
mod self_check;
mod sizes;
mod slo;
mod sweep;
mod timed_path;
mod tls;
mod vllm_bench;
