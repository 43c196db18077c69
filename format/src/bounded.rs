//! What a record becomes on its way to disk so that every reader takes it back: the one place
//! that decides it, called by the store's writer ([`super::store::PassWriter::append`] and
//! [`super::store::write_pass_info`]) for every run and every `pass.json`.
//!
//! A server may say anything. JSON it sent that a record keeps verbatim (`usage`, `timings`)
//! is held to [`MAX_DEPTH`] levels and [`MAX_BYTES`] bytes, the part past a bound replaced by a
//! marker that says what was cut: serde_json refuses to read JSON nested more than 128 deep, so
//! a `timings` object 126 deep, one level deeper in the record, made the run unreadable. A
//! float JSON cannot hold (a Prometheus counter of `NaN` or `+Inf`) is written as text by
//! [`float`], and read back as the same float. A time no clock gives (a negative or not finite
//! `ttft_ms`) is written absent and the run marked failed, rather than written and refused on
//! read. docs/raw-format.md ("Bounds") is the user-facing description.

use std::borrow::Cow;

use serde_json::Value;

use super::format::{CellInfo, PassInfo, RunError, RunRecord};

/// Levels of arrays and objects kept of a server's JSON, the value itself the first: an honest
/// `usage` or `timings` is 2 or 3 deep. Kept inside a record (itself 2 levels above it), this
/// stays far below serde_json's limit of 128.
pub const MAX_DEPTH: usize = 32;

/// Bytes of a server's JSON kept, as written compact: an honest `usage` or `timings` is well
/// under a kilobyte.
pub const MAX_BYTES: usize = 64 << 10;

/// Of an object over [`MAX_BYTES`], the top-level strings kept whole are at most this long (in
/// bytes); numbers, booleans and null are always kept, since the figures read them there
/// (`completion_tokens`, `draft_n`, `predicted_per_second`).
pub const MAX_KEPT_STRING: usize = 256;

/// The longest server-provided string a pass keeps (a version, a process name): a server
/// that sends megabytes there would otherwise repeat them into every CSV row.
pub const MAX_SERVER_STRING_CHARS: usize = 200;

/// `text` cut to [`MAX_SERVER_STRING_CHARS`], with `…` where it was cut; the key is redacted
/// first, so that one straddling the cut leaves nothing of itself.
pub fn server_string(text: &str) -> String {
    crate::secrets::redacted_cut(text, MAX_SERVER_STRING_CHARS)
}

/// The marker that replaces an array or object nested deeper than [`MAX_DEPTH`].
pub fn deeper_marker() -> String {
    format!("<cut: nested deeper than {MAX_DEPTH}>")
}

/// The marker that replaces a value of `bytes` bytes of JSON that did not fit.
pub fn size_marker(bytes: usize) -> String {
    format!("<cut: {bytes} bytes of JSON, over the {MAX_BYTES} kept>")
}

/// `value` held to [`MAX_DEPTH`] and [`MAX_BYTES`]; borrowed when it is within both.
pub fn bound_value(value: &Value) -> Cow<'_, Value> {
    if within_bounds(value) {
        return Cow::Borrowed(value);
    }
    let mut value = value.clone();
    cut_below(&mut value, 1);
    let bytes = json_len(&value);
    if bytes > MAX_BYTES {
        value = match value {
            Value::Object(members) => {
                let kept: serde_json::Map<String, Value> = members
                    .into_iter()
                    .map(|(key, member)| {
                        let member = match member {
                            Value::String(s) if s.len() > MAX_KEPT_STRING => Value::String(size_marker(json_len(&Value::String(s)))),
                            Value::Array(_) | Value::Object(_) => Value::String(size_marker(json_len(&member))),
                            scalar => scalar,
                        };
                        (key, member)
                    })
                    .collect();
                let kept = Value::Object(kept);
                // A million small members is still too much: then nothing but the marker.
                if json_len(&kept) > MAX_BYTES {
                    Value::String(size_marker(bytes))
                } else {
                    kept
                }
            }
            _ => Value::String(size_marker(bytes)),
        };
    }
    Cow::Owned(value)
}

/// Whether `value` is kept as it is.
pub fn within_bounds(value: &Value) -> bool {
    depth_within(value, 1) && json_len_at_most(value, MAX_BYTES)
}

/// Whether no array or object at or below `value` (at `depth`) lies deeper than [`MAX_DEPTH`].
/// The recursion stops there, whatever the depth of `value`.
fn depth_within(value: &Value, depth: usize) -> bool {
    match value {
        Value::Array(_) | Value::Object(_) if depth > MAX_DEPTH => false,
        Value::Array(items) => items.iter().all(|v| depth_within(v, depth + 1)),
        Value::Object(members) => members.values().all(|v| depth_within(v, depth + 1)),
        _ => true,
    }
}

/// Replaces every array or object deeper than [`MAX_DEPTH`] with [`deeper_marker`].
fn cut_below(value: &mut Value, depth: usize) {
    match value {
        Value::Array(_) | Value::Object(_) if depth > MAX_DEPTH => *value = Value::String(deeper_marker()),
        Value::Array(items) => items.iter_mut().for_each(|v| cut_below(v, depth + 1)),
        Value::Object(members) => members.values_mut().for_each(|v| cut_below(v, depth + 1)),
        _ => {}
    }
}

/// Bytes of `value` written compact (as a record holds it).
fn json_len(value: &Value) -> usize {
    let mut counter = Counter { bytes: 0, limit: usize::MAX };
    serde_json::to_writer(&mut counter, value).expect("a counter takes every byte");
    counter.bytes
}

/// Whether `value` written compact takes at most `limit` bytes; stops counting past it.
fn json_len_at_most(value: &Value, limit: usize) -> bool {
    let mut counter = Counter { bytes: 0, limit };
    serde_json::to_writer(&mut counter, value).is_ok()
}

struct Counter {
    bytes: usize,
    limit: usize,
}

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes += buf.len();
        if self.bytes > self.limit {
            return Err(std::io::Error::other("over the limit"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether a time in milliseconds is one a run record may hold: finite, 0 or more. The reader
/// refuses a line that holds any other (docs/raw-format.md, "Bounds"); the writer writes none.
pub fn possible_ms(ms: f64) -> bool {
    ms.is_finite() && ms >= 0.0
}

/// The error class of a run whose time no clock gives, written absent.
pub const IMPOSSIBLE_TIME: &str = "impossible-time";

/// `run` as the writer writes it: its server JSON within bounds, its times possible (a time
/// that is not is left out and the run marked failed with [`IMPOSSIBLE_TIME`], or, already
/// failed, its message says so). Borrowed when nothing needs to change, as for every run an
/// honest server and benchpass's clock make.
pub fn bound_run(run: &RunRecord) -> Cow<'_, RunRecord> {
    let values_within = [&run.usage, &run.timings].into_iter().flatten().all(within_bounds);
    let times_possible = [run.ttft_ms, run.decode_ms].into_iter().flatten().all(possible_ms);
    if values_within && times_possible {
        return Cow::Borrowed(run);
    }
    let mut run = run.clone();
    for value in [&mut run.usage, &mut run.timings].into_iter().flatten() {
        if let Cow::Owned(bounded) = bound_value(value) {
            *value = bounded;
        }
    }
    let mut dropped = Vec::new();
    for (field, time) in [("ttft_ms", &mut run.ttft_ms), ("decode_ms", &mut run.decode_ms)] {
        if let Some(ms) = time.take_if(|ms| !possible_ms(*ms)) {
            dropped.push(format!("`{field}` was {ms}, which no clock gives; it is written absent"));
        }
    }
    if !dropped.is_empty() {
        let said = dropped.join("; ");
        match &mut run.error {
            Some(error) if error.message.is_empty() => error.message = said,
            Some(error) => error.message = format!("{}; {said}", error.message),
            None => run.error = Some(RunError { class: IMPOSSIBLE_TIME.to_owned(), message: said }),
        }
    }
    Cow::Owned(run)
}

/// `info` as the writer writes it: the JSON its cells and request parameters hold within
/// bounds (`request_extra`, `ignore_eos_logit_bias`, `extra`: a user's or a preset's, not a
/// server's, but a pass.json nested past serde_json's limit would not read either).
pub fn bound_info(info: &PassInfo) -> Cow<'_, PassInfo> {
    fn cell_values(c: &CellInfo) -> [Option<&Value>; 2] {
        [c.request_extra.as_ref(), c.ignore_eos_logit_bias.as_ref()]
    }
    let request_extra = info.request.as_ref().and_then(|r| r.extra.as_ref());
    let within = info.cells.iter().flat_map(cell_values).chain([request_extra]).flatten().all(within_bounds);
    if within {
        return Cow::Borrowed(info);
    }
    let mut info = info.clone();
    let bound = |value: &mut Option<Value>| {
        if let Some(Cow::Owned(bounded)) = value.as_ref().map(bound_value) {
            *value = Some(bounded);
        }
    };
    for cell in &mut info.cells {
        bound(&mut cell.request_extra);
        bound(&mut cell.ignore_eos_logit_bias);
    }
    if let Some(request) = &mut info.request {
        bound(&mut request.extra);
    }
    Cow::Owned(info)
}

/// Floats that JSON cannot hold, written as text: `NaN`, `inf`, `-inf` (serde_json would write
/// `null`, which no reader of an `f64` takes). A finite value is written as the number it is,
/// so every pass written before reads as it did. For `#[serde(with = "…")]`: `float` for an
/// `f64`, [`float::option`] for an `Option<f64>`, [`float::option_map`] for counters.
pub mod float {
    use std::collections::BTreeMap;
    use std::fmt;

    use serde::de::{self, Deserializer, Visitor};
    use serde::{Deserialize, Serialize, Serializer};

    /// An `f64` as a record writes it.
    #[derive(Debug, Clone, Copy)]
    pub struct Float(pub f64);

    /// The text a float JSON cannot hold is written as; `None` for a finite one.
    pub fn text(x: f64) -> Option<&'static str> {
        match x {
            _ if x.is_nan() => Some("NaN"),
            f64::INFINITY => Some("inf"),
            f64::NEG_INFINITY => Some("-inf"),
            _ => None,
        }
    }

    impl Serialize for Float {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match text(self.0) {
                Some(text) => s.serialize_str(text),
                None => s.serialize_f64(self.0),
            }
        }
    }

    impl<'de> Deserialize<'de> for Float {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Float, D::Error> {
            d.deserialize_any(FloatVisitor)
        }
    }

    struct FloatVisitor;

    impl Visitor<'_> for FloatVisitor {
        type Value = Float;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a number, or \"NaN\", \"inf\" or \"-inf\"")
        }

        fn visit_f64<E: de::Error>(self, x: f64) -> Result<Float, E> {
            Ok(Float(x))
        }

        fn visit_u64<E: de::Error>(self, x: u64) -> Result<Float, E> {
            Ok(Float(x as f64))
        }

        fn visit_i64<E: de::Error>(self, x: i64) -> Result<Float, E> {
            Ok(Float(x as f64))
        }

        fn visit_str<E: de::Error>(self, s: &str) -> Result<Float, E> {
            match s {
                "NaN" => Ok(Float(f64::NAN)),
                "inf" => Ok(Float(f64::INFINITY)),
                "-inf" => Ok(Float(f64::NEG_INFINITY)),
                _ => Err(E::invalid_value(de::Unexpected::Str(s), &self)),
            }
        }
    }

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        Float(*x).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Float::deserialize(d).map(|f| f.0)
    }

    /// An `Option<f64>`: absent or `null` is `None`.
    pub mod option {
        use super::*;

        pub fn serialize<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
            x.map(Float).serialize(s)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
            Ok(Option::<Float>::deserialize(d)?.map(|f| f.0))
        }
    }

    /// Named counters (`server_counters`).
    pub mod option_map {
        use super::*;

        pub fn serialize<S: Serializer>(map: &Option<BTreeMap<String, f64>>, s: S) -> Result<S::Ok, S::Error> {
            match map {
                Some(map) => s.collect_map(map.iter().map(|(k, v)| (k, Float(*v)))),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BTreeMap<String, f64>>, D::Error> {
            let map = Option::<BTreeMap<String, Float>>::deserialize(d)?;
            Ok(map.map(|m| m.into_iter().map(|(k, v)| (k, v.0)).collect()))
        }
    }
}
