//! A preset whose values are assumed (Kapitsa's: no public source) is checked against the
//! server at the start of each cell: usage in the stream, cached tokens, whether `ignore_eos`
//! holds a reply that stops early to its cap. The findings go into the cell's record, and each
//! contradiction of the preset is a warning naming the fix. The server is the reference engine,
//! whose behaviour is set by its flags, under Kapitsa's preset.

use crate::support::*;

#[test]
fn assumed_values_are_probed_recorded_and_contradictions_warned() {
    let tmp = temp_dir();
    let plan = tmp.path().join("plan.toml");
    let engine = |name: &str, preset: &str, flags: &str| {
        format!(
            "[[engines]]\nname = \"{name}\"\npreset = \"{preset}\"\nport = {}\n\
             start = [\"{{benchpass}}\", \"sim\", \"--port\", \"{{port}}\", \"--decode-tps\", \"2000\"{flags}]\n\n",
            free_port()
        )
    };
    std::fs::write(
        &plan,
        format!(
            "[gaps]\nbetween_cells_s = 0\n\n{}{}{}[[models]]\nname = \"m\"\n\n\
             [[cells]]\nengine = \"eos\"\nmodel = \"m\"\n\n[[cells]]\nengine = \"bare\"\nmodel = \"m\"\n\n[[cells]]\nengine = \"sim\"\nmodel = \"m\"\n\n\
             [[workloads]]\nkind = \"sustained\"\nruns = 1\nmax_tokens = 8\n",
            // Reaches EOS after 40 tokens unless ignore_eos; reports cached tokens.
            engine("eos", "kapitsa", ", \"--profile\", \"eos\", \"--prefix-cache\""),
            // Never sends usage; never stops early.
            engine("bare", "kapitsa", ", \"--no-usage\""),
            // Every value of the sim's own preset is read from its source: no probe.
            engine("sim", "benchpass-sim", ""),
        ),
    )
    .unwrap();
    let out = tmp.path().join("pass");
    let output = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "plain"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let pass = harness::pass::read_pass(&out).unwrap();
    let cell = |engine: &str| pass.info.cells.iter().find(|c| c.engine.name == engine).unwrap();

    // The first sim: usage sent, cached tokens reported, and ignore_eos held the 40-token
    // reply to the probe's 64-token cap. Kapitsa's preset assumes no cached tokens and no way
    // past EOS: two contradictions, each naming the preset value to change.
    let eos = cell("eos").probed.as_ref().expect("kapitsa's cell is probed");
    assert_eq!((eos.stream_usage, eos.cached_tokens, eos.ignore_eos), (Some(true), Some(true), Some(true)), "{eos:?}");
    assert_eq!(eos.notes.len(), 2, "{:?}", eos.notes);
    assert!(eos.notes[0].starts_with("kapitsa does report cached prompt tokens, but its preset assumes it does not") && eos.notes[0].contains("`cached_tokens` should be true"));
    assert!(eos.notes[1].contains("held a reply to its 64-token cap with `ignore_eos: true`") && eos.notes[1].contains("`ignore_eos` should be `field`"));

    // The second: no usage (the preset assumes usage: a contradiction), no cached count (as
    // assumed), and a reply that never stops early, so ignore_eos cannot be told.
    let bare = cell("bare").probed.as_ref().expect("probed");
    assert_eq!((bare.stream_usage, bare.cached_tokens, bare.ignore_eos), (Some(false), Some(false), None), "{bare:?}");
    assert!(bare.notes.iter().any(|n| n.contains("did not stop early") && n.contains("whether `ignore_eos` works is unknown")), "{:?}", bare.notes);
    assert!(bare.notes.iter().any(|n| n.starts_with("kapitsa does not send usage in its stream, but its preset assumes it does")), "{:?}", bare.notes);

    assert_eq!(cell("sim").probed, None, "nothing assumed, nothing probed");
    for note in eos.notes.iter().chain(&bare.notes) {
        assert!(stderr.contains(&format!("warning: {note}")), "said on the terminal: {note}\n{stderr}");
    }
    // The probe's requests are not runs.
    assert_eq!(pass.runs.len(), 3);
}
