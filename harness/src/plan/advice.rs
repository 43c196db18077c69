//! What a plan that checks can still get wrong about its engines, said before anything runs
//! (`plan check`, `run`, `--dry-run`): advice, not errors, since the plan may mean it.

use super::file::Plan;
use super::presets;

/// One line per engine of a cell whose preset says the figures will suffer as planned.
pub fn notes(plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    let mut engines: Vec<&str> = Vec::new();
    for cell in &plan.file.cells {
        if !engines.contains(&cell.engine.get_ref().as_str()) {
            engines.push(cell.engine.get_ref());
        }
    }
    let first_has_warmup = plan.steps.first().is_some_and(|(_, s)| s.warmup > 0);
    let ignores_eos = plan.steps.iter().any(|(_, s)| s.ignore_eos);
    for name in engines {
        let spec = plan.engine(name);
        let Some(preset) = spec.preset.as_ref().and_then(|p| presets::preset(p.get_ref())) else { continue };
        if preset.loads_lazily && !first_has_warmup {
            out.push(format!(
                "note: engine `{name}` (preset `{}`) answers its health check before its model is loaded: the first measured run of each of its cells includes the load (give the first workload `warmup = 1`)",
                preset.name
            ));
        }
        if let (Some(file), Some(start)) = (preset.saves_arguments, &spec.start) {
            if start.get_ref().iter().skip(1).any(|a| a.starts_with("--")) {
                out.push(format!(
                    "note: engine `{name}` (preset `{}`) saves the arguments it is started with into {file}: after the pass, the arguments of its `start` ({}) are its defaults for every later start, by benchpass or by you (keep a copy of that file if yours matters)",
                    preset.name,
                    start.get_ref().iter().skip(1).filter(|a| a.starts_with("--")).cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        if preset.ignore_eos.may_stop_short() && ignores_eos {
            out.push(format!(
                "note: engine `{name}` (preset `{}`) has no way past EOS: its runs of `ignore_eos` steps may stop before max_tokens (they are flagged, and the report says why)",
                preset.name
            ));
        }
    }
    out
}
