//! For engines that ignore `ignore_eos` (mlx-lm): the model's EOS token ids, read from its
//! weights folder the way Hugging Face loaders read them, as a `logit_bias` that keeps greedy
//! decoding off them.

use std::path::Path;

use serde_json::{Map, Value};

/// Added to an EOS logit: far below any real logit, yet finite, so no engine turns it into NaN.
pub const BIAS: f64 = -1.0e9;

/// `eos_token_id` (a number or a list) from `generation_config.json` and `config.json` in the
/// weights folder, merged; empty when neither says.
pub fn eos_ids(weights: &Path) -> Vec<u64> {
    let mut ids = Vec::new();
    for file in ["generation_config.json", "config.json"] {
        let Ok(text) = std::fs::read_to_string(weights.join(file)) else { continue };
        let Ok(config) = serde_json::from_str::<Value>(&text) else { continue };
        match config.get("eos_token_id") {
            Some(Value::Number(n)) => ids.extend(n.as_u64()),
            Some(Value::Array(list)) => ids.extend(list.iter().filter_map(Value::as_u64)),
            _ => {}
        }
    }
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The `logit_bias` that holds `engine` past EOS, for an engine whose preset's way is
/// `logit_bias` and a pass with steps that ask for it: `Ok(None)` when none is needed, and the
/// warning to print when one is needed but no EOS id is found (runs may then stop early; they
/// are flagged).
pub fn bias_for(engine: &str, way: super::presets::IgnoreEos, weights: Option<&Path>, asked: bool) -> Result<Option<Value>, String> {
    if !asked || !way.adds_logit_bias() {
        return Ok(None);
    }
    let why = match weights {
        None => "no weights folder was given to read its EOS ids from".to_owned(),
        Some(weights) => match logit_bias(&eos_ids(weights)) {
            Some(bias) => return Ok(Some(bias)),
            None => format!("{} names no eos_token_id", weights.display()),
        },
    };
    Err(format!("warning: {engine} ignores `ignore_eos` and {why}: runs may stop early (they are flagged if so)"))
}

/// `{"<id>": -1e9, ...}`, or `None` when there are no ids.
pub fn logit_bias(ids: &[u64]) -> Option<Value> {
    (!ids.is_empty()).then(|| Value::Object(ids.iter().map(|id| (id.to_string(), Value::from(BIAS))).collect::<Map<String, Value>>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_both_configs_as_numbers_or_lists() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.json"), r#"{"eos_token_id": [2, 32000]}"#).unwrap();
        std::fs::write(dir.path().join("generation_config.json"), r#"{"eos_token_id": 2}"#).unwrap();
        assert_eq!(eos_ids(dir.path()), vec![2, 32000]);
        assert_eq!(logit_bias(&[2, 32000]).unwrap(), serde_json::json!({"2": -1.0e9, "32000": -1.0e9}));
        assert_eq!(eos_ids(&dir.path().join("missing")), Vec::<u64>::new());
        assert_eq!(logit_bias(&[]), None);
    }
}
