//! How the reference engine turns a chat request into the text it counts and caches.
//!
//! A plain request (user messages, no tools) is its messages' text joined by newlines, as it
//! always was, so that prompt-size tests keep their hand-worked counts. A conversation with
//! tools is rendered the way chat templates render one: a role header before each message, the
//! tool definitions after the system message (as Qwen's template puts them), each tool call as
//! its name and arguments, and the header of the reply to come at the end. Every part ends with
//! a newline, a token of its own in the reference tokenizer, so a conversation's rendering is
//! exactly a prefix of the rendering of any conversation that continues it: what a prefix cache
//! needs, and what lets a test work out each turn's cached tokens by hand.

use serde_json::Value;

/// The text of `messages` (and `tools`) as the reference engine counts it.
pub fn prompt_text(messages: &[Value], tools: Option<&Value>) -> String {
    let tools = tools.filter(|t| t.as_array().is_some_and(|a| !a.is_empty()));
    let agentic = tools.is_some() || messages.iter().any(|m| m.get("tool_calls").is_some() || role(m) == "tool");
    if !agentic {
        return messages.iter().map(message_text).collect::<Vec<_>>().join("\n");
    }
    let mut text = String::new();
    let mut tools_written = false;
    for (i, message) in messages.iter().enumerate() {
        if !tools_written && (i > 0 || role(message) != "system") {
            write_tools(&mut text, tools);
            tools_written = true;
        }
        text.push_str(&format!("<|{}|>\n", role(message)));
        let content = message_text(message);
        if !content.is_empty() {
            text.push_str(&content);
            text.push('\n');
        }
        for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let name = call.pointer("/function/name").and_then(Value::as_str).unwrap_or_default();
            let arguments = call.pointer("/function/arguments").and_then(Value::as_str).unwrap_or_default();
            text.push_str(&format!("<tool_call>{name} {arguments}</tool_call>\n"));
        }
    }
    if !tools_written {
        write_tools(&mut text, tools);
    }
    text.push_str("<|assistant|>\n");
    text
}

fn write_tools(text: &mut String, tools: Option<&Value>) {
    if let Some(tools) = tools {
        text.push_str(&format!("<|tools|>\n{tools}\n"));
    }
}

fn role(message: &Value) -> &str {
    message.get("role").and_then(Value::as_str).unwrap_or_default()
}

/// A message's text: a string, or the text parts of an array of parts.
pub fn message_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("")
        }
        _ => String::new(),
    }
}

/// Whether the reply to `messages` is a tool call: tools are offered and the conversation
/// waits on the assistant's next step (its last message is the user's or a tool result).
pub fn wants_tool_call(messages: &[Value], tools: Option<&Value>) -> Option<String> {
    let first_tool = tools?.as_array()?.first()?;
    let name = first_tool.pointer("/function/name").and_then(Value::as_str).unwrap_or("tool");
    matches!(messages.last().map(role), Some("user" | "tool")).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::tokens::reference_tokens;
    use serde_json::json;

    #[test]
    fn plain_requests_are_their_messages_joined_by_newlines() {
        let messages = [json!({"role": "user", "content": "Hello there"}), json!({"role": "user", "content": [{"type": "text", "text": "again"}]})];
        assert_eq!(prompt_text(&messages, None), "Hello there\nagain");
    }

    #[test]
    fn a_conversation_renders_as_a_token_prefix_of_its_continuation() {
        let tools = json!([{"type": "function", "function": {"name": "read_file", "parameters": {}}}]);
        let first = vec![json!({"role": "system", "content": "Be brief."}), json!({"role": "user", "content": "Read a.rs"})];
        let mut next = first.clone();
        next.push(json!({"role": "assistant", "content": "Reading.", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}}]}));
        next.push(json!({"role": "tool", "tool_call_id": "c1", "content": "fn main() {}"}));
        let a = prompt_text(&first, Some(&tools));
        let b = prompt_text(&next, Some(&tools));
        assert!(a.starts_with("<|system|>\nBe brief.\n<|tools|>\n"), "{a}");
        assert!(a.ends_with("<|user|>\nRead a.rs\n<|assistant|>\n"), "{a}");
        let (ta, tb) = (reference_tokens(&a), reference_tokens(&b));
        assert_eq!(&tb[..ta.len()], &ta[..], "the earlier turn's tokens are the later turn's first tokens");
        assert!(b.contains("<tool_call>read_file {\"path\":\"a.rs\"}</tool_call>\n<|tool|>\nfn main() {}\n<|assistant|>\n"), "{b}");
    }

    #[test]
    fn a_tool_call_is_the_reply_when_tools_are_offered_and_a_user_or_tool_spoke_last() {
        let tools = json!([{"type": "function", "function": {"name": "search"}}]);
        let user = [json!({"role": "user", "content": "go"})];
        assert_eq!(wants_tool_call(&user, Some(&tools)).as_deref(), Some("search"));
        assert_eq!(wants_tool_call(&user, None), None);
        assert_eq!(wants_tool_call(&[json!({"role": "assistant", "content": "done"})], Some(&tools)), None);
    }
}
