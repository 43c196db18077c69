//! Every field the machine sampler, the keep-awake assertion and the memory measures added to
//! the pass is defined in docs/metrics.md and described in docs/raw-format.md.

fn doc(name: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs").join(name)).unwrap()
}

const FIELDS: &[&str] = &[
    "swap_used_before_bytes",
    "swap_used_after_bytes",
    "memory_pressure",
    "memory_psi_some_avg10",
    "server_peak_resident_bytes",
    "server_peak_file_backed_bytes",
    "memory_lifetime_peak_bytes",
    "weights_mapped",
    "keep_awake",
    "system-sleep",
    "swapped",
    "weights-mapped",
    "prefill_joules",
    "decode_joules",
    "idle_watts",
];

#[test]
fn metrics_and_raw_format_define_each_new_field() {
    let (metrics, raw) = (doc("metrics.md"), doc("raw-format.md"));
    for field in FIELDS {
        // `field`, or `engine.field` for a cell's.
        assert!(metrics.contains(&format!("`{field}`")) || metrics.contains(&format!(".{field}`")), "docs/metrics.md does not define `{field}`");
    }
    for field in FIELDS.iter().filter(|f| !matches!(**f, "swapped" | "weights-mapped")) {
        assert!(raw.contains(&format!("`{field}`")), "docs/raw-format.md does not describe `{field}`");
    }
}

#[test]
fn the_new_fields_are_written_under_the_documented_names() {
    use benchpass_format::format::RunRecord;
    use benchpass_format::Workload;
    let run = RunRecord {
        swap_used_before_bytes: Some(1),
        swap_used_after_bytes: Some(2),
        memory_pressure: Some(benchpass_format::machine::MemoryPressure::Warning),
        memory_psi_some_avg10: Some(1.5),
        server_peak_resident_bytes: Some(3),
        server_peak_file_backed_bytes: Some(4),
        ..RunRecord::unmeasured("c0", Workload::Sustained, 0, 0, false, 8)
    };
    let json = serde_json::to_value(&run).unwrap();
    for field in &FIELDS[..6] {
        assert!(json.get(field).is_some(), "{field} in {json}");
    }
    assert_eq!(json["memory_pressure"], "warning");
    // A run from before these fields reads as it did.
    let old: RunRecord = serde_json::from_value(serde_json::json!({
        "cell": "c0", "workload": "sustained", "target_prompt_tokens": 0, "rep": 0, "warmup": false, "max_tokens": 8
    }))
    .unwrap();
    assert_eq!((old.swap_used_before_bytes, old.memory_pressure, old.swapped()), (None, None, None));
}
