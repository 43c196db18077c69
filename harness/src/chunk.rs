//! The fields of one streamed chunk that the client reads, taken straight from its JSON text
//! without building a tree of it: the per-event path of every stream runs through here.
//!
//! Only what [`crate::client`] reads is kept (the first choice's delta texts, role, tool calls,
//! logprobs and finish reason; the chunk's usage, timings, error and final-chunk stats), the
//! texts borrowed from the event where they hold no escapes; every other field is skipped as
//! it is parsed. A chunk this reader is not sure to read as a `serde_json::Value` reader would
//! (a key twice, a field of an unexpected type, `choices` or an object that is not what the
//! API sends, data that is not an object) is refused with an error, and the caller reads it
//! as a `Value`: the fast path never decides differently from the slow one, it only declines.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// A chunk's top level, as far as the client reads it.
#[derive(Debug, Default)]
pub(crate) struct Chunk<'a> {
    /// The first element of `choices`, when `choices` is an array that has one.
    pub choice: Option<Choice<'a>>,
    pub usage: Option<Value>,
    pub timings: Option<Value>,
    pub error: Option<Value>,
    /// Top-level objects named in [`engines::drafts::FINAL_CHUNK_STATS`], by that name.
    pub stats: Vec<(&'static str, Value)>,
}

#[derive(Debug, Default)]
pub(crate) struct Choice<'a> {
    pub delta: Option<Delta<'a>>,
    pub text: Option<Cow<'a, str>>,
    pub logprobs: Option<Value>,
    pub finish_reason: Option<Cow<'a, str>>,
}

#[derive(Debug, Default)]
pub(crate) struct Delta<'a> {
    pub role: Option<Value>,
    pub content: Option<Cow<'a, str>>,
    pub reasoning_content: Option<Cow<'a, str>>,
    pub reasoning: Option<Cow<'a, str>>,
    pub tool_calls: Option<Value>,
}

/// Reads `data` as a chunk, or refuses it (the caller then reads it as a `Value`).
pub(crate) fn read(data: &str) -> Result<Chunk<'_>, serde_json::Error> {
    serde_json::from_str(data)
}

fn duplicate<E: de::Error>(key: &str) -> E {
    E::custom(format_args!("`{key}` twice: left to the Value reader"))
}

/// Sets `slot` from the map's next value, refusing a key seen before.
fn once<'de, T: Deserialize<'de>, A: MapAccess<'de>>(slot: &mut Option<T>, seen: &mut bool, key: &str, map: &mut A) -> Result<(), A::Error> {
    if std::mem::replace(seen, true) {
        return Err(duplicate(key));
    }
    *slot = map.next_value()?;
    Ok(())
}

/// A string field: absent or null as `None`, a string borrowed where it can be; any other type
/// is refused (the Value reader reads it as no text).
#[derive(Debug)]
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

fn text_once<'de, A: MapAccess<'de>>(slot: &mut Option<Cow<'de, str>>, seen: &mut bool, key: &str, map: &mut A) -> Result<(), A::Error> {
    let mut text: Option<Text<'de>> = None;
    once(&mut text, seen, key, map)?;
    *slot = text.map(|t| t.0);
    Ok(())
}

/// A key, borrowed where it holds no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Text::deserialize(deserializer).map(|t| Key(t.0))
    }
}

impl<'de> Deserialize<'de> for Chunk<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ChunkVisitor;
        impl<'de> Visitor<'de> for ChunkVisitor {
            type Value = Chunk<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a chunk object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut chunk = Chunk::default();
                let (mut choices, mut usage, mut timings, mut error) = (false, false, false, false);
                while let Some(Key(key)) = map.next_key()? {
                    match &*key {
                        "choices" => {
                            if std::mem::replace(&mut choices, true) {
                                return Err(duplicate("choices"));
                            }
                            chunk.choice = map.next_value::<FirstChoice<'de>>()?.0;
                        }
                        "usage" => once(&mut chunk.usage, &mut usage, "usage", &mut map)?,
                        "timings" => once(&mut chunk.timings, &mut timings, "timings", &mut map)?,
                        "error" => once(&mut chunk.error, &mut error, "error", &mut map)?,
                        other => match engines::drafts::FINAL_CHUNK_STATS.iter().find(|s| s.object == other) {
                            Some(stats) => {
                                if chunk.stats.iter().any(|(name, _)| *name == stats.object) {
                                    return Err(duplicate(other));
                                }
                                let value: Value = map.next_value()?;
                                chunk.stats.push((stats.object, value));
                            }
                            None => {
                                map.next_value::<IgnoredAny>()?;
                            }
                        },
                    }
                }
                Ok(chunk)
            }
        }
        deserializer.deserialize_map(ChunkVisitor)
    }
}

/// `choices`: an array, of which the first element is read and the rest skipped. Anything
/// else (null, an object) is refused.
struct FirstChoice<'a>(Option<Choice<'a>>);

impl<'de> Deserialize<'de> for FirstChoice<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ChoicesVisitor;
        impl<'de> Visitor<'de> for ChoicesVisitor {
            type Value = FirstChoice<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<Choice<'de>>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
        }
        deserializer.deserialize_seq(ChoicesVisitor)
    }
}

impl<'de> Deserialize<'de> for Choice<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ChoiceVisitor;
        impl<'de> Visitor<'de> for ChoiceVisitor {
            type Value = Choice<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a choice object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut choice = Choice::default();
                let mut seen = [false; 4];
                while let Some(Key(key)) = map.next_key()? {
                    match &*key {
                        "delta" => once(&mut choice.delta, &mut seen[0], "delta", &mut map)?,
                        "text" => text_once(&mut choice.text, &mut seen[1], "text", &mut map)?,
                        "logprobs" => once(&mut choice.logprobs, &mut seen[2], "logprobs", &mut map)?,
                        "finish_reason" => text_once(&mut choice.finish_reason, &mut seen[3], "finish_reason", &mut map)?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(choice)
            }
        }
        deserializer.deserialize_map(ChoiceVisitor)
    }
}

impl<'de> Deserialize<'de> for Delta<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DeltaVisitor;
        impl<'de> Visitor<'de> for DeltaVisitor {
            type Value = Delta<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a delta object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut delta = Delta::default();
                let mut seen = [false; 5];
                while let Some(Key(key)) = map.next_key()? {
                    match &*key {
                        "role" => once(&mut delta.role, &mut seen[0], "role", &mut map)?,
                        "content" => text_once(&mut delta.content, &mut seen[1], "content", &mut map)?,
                        "reasoning_content" => text_once(&mut delta.reasoning_content, &mut seen[2], "reasoning_content", &mut map)?,
                        "reasoning" => text_once(&mut delta.reasoning, &mut seen[3], "reasoning", &mut map)?,
                        "tool_calls" => once(&mut delta.tool_calls, &mut seen[4], "tool_calls", &mut map)?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(delta)
            }
        }
        deserializer.deserialize_map(DeltaVisitor)
    }
}
