//! For engines that ignore `ignore_eos` (mlx-lm): the model's EOS token ids, taken from its
//! config files the way Hugging Face loaders take them, as a `logit_bias` that keeps greedy
//! decoding off them. Reading the files from a weights folder is the harness's
//! (harness/src/plan/engine_files.rs); this is what is read and what is made of it.

use serde_json::{Map, Value};

/// Added to an EOS logit: far below any real logit, yet finite, so no engine turns it into NaN.
pub const BIAS: f64 = -1.0e9;

/// The files of a weights folder that may name the EOS ids (`eos_token_id`), in the order they
/// are read.
pub const CONFIG_FILES: [&str; 2] = ["generation_config.json", "config.json"];

/// `eos_token_id` (a number or a list) of each config, merged, sorted and without repeats;
/// empty when none says.
pub fn eos_ids_in<'a>(configs: impl IntoIterator<Item = &'a Value>) -> Vec<u64> {
    let mut ids = Vec::new();
    for config in configs {
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

/// `{"<id>": -1e9, ...}`, or `None` when there are no ids.
pub fn logit_bias(ids: &[u64]) -> Option<Value> {
    (!ids.is_empty()).then(|| Value::Object(ids.iter().map(|id| (id.to_string(), Value::from(BIAS))).collect::<Map<String, Value>>()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ids_are_numbers_or_lists_merged_and_anything_else_says_nothing() {
        let configs = [json!({"eos_token_id": 2}), json!({"eos_token_id": [2, 32000, "3", -1]}), json!({"eos_token_id": null}), json!([1])];
        assert_eq!(eos_ids_in(&configs), vec![2, 32000]);
        assert_eq!(eos_ids_in(&[]), Vec::<u64>::new());
    }
}
