//! An incremental parser for Server-Sent Events as OpenAI-compatible servers send them.
//!
//! Bytes arrive in arbitrary chunks; an event may be split across chunks and one chunk may
//! carry several events. The parser follows the WHATWG rules that matter here: lines end in
//! LF, CRLF or CR; `data:` lines accumulate (joined by LF); a line starting with `:` is a
//! comment; a blank line dispatches the event. Other fields (`event:`, `id:`, `retry:`) are
//! kept out of the payload.

/// One dispatched event: its `data` payload and how many bytes it took on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub data: String,
    pub wire_bytes: usize,
}

#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    event_bytes: usize,
    /// The previous chunk ended in CR: an LF at the start of the next one belongs to it.
    skip_lf: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk and returns the events it completed, in order.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = chunk;
        if std::mem::take(&mut self.skip_lf) {
            if let Some(after) = rest.strip_prefix(b"\n") {
                self.lf_of_crlf();
                rest = after;
            }
        }
        // A line at a time: its bytes are looked at once, to find where it ends, and copied
        // only when it began in an earlier chunk.
        while !rest.is_empty() {
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                self.event_bytes += rest.len();
                self.line.extend_from_slice(rest);
                break;
            };
            self.event_bytes += end + 1;
            if self.line.is_empty() {
                self.end_line(&rest[..end], &mut events);
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&rest[..end]);
                self.end_line(&line, &mut events);
                line.clear();
                self.line = line;
            }
            let ended_by_cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if ended_by_cr {
                match rest.strip_prefix(b"\n") {
                    Some(after) => {
                        self.lf_of_crlf();
                        rest = after;
                    }
                    None => self.skip_lf = rest.is_empty(),
                }
            }
        }
        events
    }

    /// The LF of a CRLF belongs to the event in progress, or to none when that CRLF
    /// dispatched it (the event is complete at its CR).
    fn lf_of_crlf(&mut self) {
        if self.event_bytes > 0 {
            self.event_bytes += 1;
        }
    }

    /// Bytes received that did not complete an event (a stream cut mid-event leaves some).
    pub fn pending_bytes(&self) -> usize {
        self.line.len() + self.data.len()
    }

    fn end_line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                // Valid UTF-8 (every honest event) is copied as it is; anything else loses its
                // invalid bytes to U+FFFD.
                let data = match std::str::from_utf8(&self.data) {
                    Ok(text) => text.to_owned(),
                    Err(_) => String::from_utf8_lossy(&self.data).into_owned(),
                };
                events.push(SseEvent { data, wire_bytes: self.event_bytes });
            }
            self.data.clear();
            self.has_data = false;
            self.event_bytes = 0;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &str, piece: usize) -> Vec<String> {
        let mut parser = SseParser::new();
        input
            .as_bytes()
            .chunks(piece)
            .flat_map(|chunk| parser.feed(chunk))
            .map(|e| e.data)
            .collect()
    }

    #[test]
    fn events_split_anywhere_parse_the_same() {
        let input = "data: {\"a\":1}\n\n: keep-alive\n\ndata: [DONE]\n\n";
        for piece in 1..input.len() {
            assert_eq!(parse_in_pieces(input, piece), vec!["{\"a\":1}", "[DONE]"], "piece {piece}");
        }
    }

    #[test]
    fn crlf_and_cr_end_lines() {
        let input = "data: one\r\n\r\ndata: two\r\rdata:three\n\n";
        for piece in 1..input.len() {
            assert_eq!(parse_in_pieces(input, piece), vec!["one", "two", "three"], "piece {piece}");
        }
    }

    #[test]
    fn multi_line_data_joins_with_lf_and_other_fields_are_ignored() {
        let input = "event: message\nid: 7\ndata: a\ndata: b\n\n";
        assert_eq!(parse_in_pieces(input, 64), vec!["a\nb"]);
    }

    #[test]
    fn wire_bytes_count_the_whole_event() {
        let mut parser = SseParser::new();
        let events = parser.feed(b"data: x\n\ndata: yz\r\n\r\n");
        assert_eq!(events[0].wire_bytes, "data: x\n\n".len());
        // An event dispatched by CRLF CRLF is complete at the last CR; its LF is not waited for.
        assert_eq!(events[1].wire_bytes, "data: yz\r\n\r".len());
    }

    #[test]
    fn wire_bytes_and_data_are_the_same_wherever_the_chunks_split() {
        let input = "data: a\r\n\r\n: c\rdata: b\rdata: c\r\rdata:d\n\ndata: e\r\n\r\n";
        let whole: Vec<SseEvent> = SseParser::new().feed(input.as_bytes());
        assert_eq!(whole.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(), ["a", "b\nc", "d", "e"]);
        assert_eq!(whole.iter().map(|e| e.wire_bytes).collect::<Vec<_>>(), [10, 21, 8, 10]);
        for piece in 1..input.len() {
            let mut parser = SseParser::new();
            let events: Vec<SseEvent> = input.as_bytes().chunks(piece).flat_map(|chunk| parser.feed(chunk)).collect();
            assert_eq!(events, whole, "piece {piece}");
        }
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        let events = SseParser::new().feed(b"data: a\xffb\n\ndata: \xc3\xa9\n\n");
        assert_eq!(events.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(), ["a\u{fffd}b", "\u{e9}"]);
    }

    #[test]
    fn an_unterminated_event_stays_pending() {
        let mut parser = SseParser::new();
        assert!(parser.feed(b"data: {\"partial\"").is_empty());
        assert_eq!(parser.pending_bytes(), "{\"partial\"".len() + "data: ".len());
    }
}
