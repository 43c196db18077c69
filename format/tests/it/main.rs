//! The format crate's integration tests: what it links (`layering`) and that the runs CSV of
//! every fixture round-trips through it (`round_trip`).

mod docs_define_fields;
mod layering;
mod round_trip;
