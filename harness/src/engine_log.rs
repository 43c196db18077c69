//! Draft acceptance read from an engine's own log, for an engine that reports it nowhere else.
//! oMLX's DFlash path logs one line per streamed generation, before its last chunk is queued
//! (jundot/omlx@c9dc68d omlx/engine/dflash.py#L1023-L1042):
//!
//! ```text
//! … - omlx.engine.dflash - INFO - DFlash generation complete: 256 tokens, 48.3 tok/s, acceptance=73.2%, cycles=41
//! ```
//!
//! It gives a ratio and no counts, so a run gets the ratio (`logged_draft_acceptance`) and the
//! analysis takes the median over runs (docs/metrics.md). The line is read from the bytes the log
//! grew by during the run: a run alone on the engine (one stream) finds exactly its own line;
//! none, or more than one, and the run gets nothing rather than a neighbour's figure.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::PathBuf;

/// The most a run's window of log is read (a generation's lines are a few hundred bytes; a
/// chatty engine at debug level may write more, and the last line is the one that counts).
const MAX_WINDOW_BYTES: u64 = 4 << 20;

/// An engine log that carries a draft-acceptance marker (`acceptance=`).
#[derive(Debug, Clone)]
pub struct LogWatch {
    pub path: PathBuf,
    pub marker: &'static str,
}

impl LogWatch {
    /// Where the log ends now; `None` when it cannot be read (not there yet counts as 0).
    pub fn offset(&self) -> Option<u64> {
        match std::fs::metadata(&self.path) {
            Ok(meta) => Some(meta.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(0),
            Err(_) => None,
        }
    }

    /// The acceptance of the one marked line written since `offset`, as a fraction (0 to 1).
    /// `None` when there is no such line, more than one (another request's), or the log was
    /// rotated or cut meanwhile.
    pub fn acceptance_since(&self, offset: u64) -> Option<f64> {
        let mut file = std::fs::File::open(&self.path).ok()?;
        let end = file.metadata().ok()?.len();
        if end < offset {
            return None;
        }
        let start = offset.max(end.saturating_sub(MAX_WINDOW_BYTES));
        file.seek(SeekFrom::Start(start)).ok()?;
        let mut bytes = Vec::with_capacity((end - start) as usize);
        file.take(end - start).read_to_end(&mut bytes).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        let mut found = text.lines().filter_map(|line| parse_acceptance(line, self.marker));
        let first = found.next()?;
        found.next().is_none().then_some(first)
    }
}

/// The value after `marker` on a log line, as a fraction: `acceptance=73.2%` is 0.732 (Python's
/// `{:.1%}`), `acceptance=0.732` is 0.732. Anything else, or a value outside 0 to 1, is `None`.
pub fn parse_acceptance(line: &str, marker: &str) -> Option<f64> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let value: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '%').collect();
    let fraction = match value.strip_suffix('%') {
        Some(percent) => percent.parse::<f64>().ok()? / 100.0,
        None => value.parse::<f64>().ok()?,
    };
    (0.0..=1.0).contains(&fraction).then_some(fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines built from omlx/engine/dflash.py#L1023-L1030's f-string, as its console handler
    /// (`%(asctime)s - %(name)s - %(levelname)s - %(message)s`, cli.py#L114-L117) and its file
    /// handler (with `[%(request_id)s]`, logging_config.py#L256) write them.
    const CONSOLE: &str = "2026-07-04 18:50:01,234 - omlx.engine.dflash - INFO - DFlash generation complete: 256 tokens, 48.3 tok/s, acceptance=73.2%, cycles=41";
    const FILE: &str = "2026-07-04 18:50:01,234 - omlx.engine.dflash - INFO - [-] - DFlash generation complete: 12 tokens, 30.0 tok/s, acceptance=100.0%, cycles=3, fallback=AR";

    #[test]
    fn omlx_lines_give_their_acceptance_as_a_fraction() {
        assert!((parse_acceptance(CONSOLE, "acceptance=").unwrap() - 0.732).abs() < 1e-12);
        assert_eq!(parse_acceptance(FILE, "acceptance="), Some(1.0));
        assert_eq!(parse_acceptance("acceptance=0.5, cycles=2", "acceptance="), Some(0.5));
        // MTP's `accept=42/59` is another marker; nonsense and out-of-range values are nothing.
        assert_eq!(parse_acceptance("MTP[3] finish=stop tokens=103 cycles=59 accept=42/59 (71.2%)", "acceptance="), None);
        assert_eq!(parse_acceptance("acceptance=n/a", "acceptance="), None);
        assert_eq!(parse_acceptance("acceptance=150%", "acceptance="), None);
    }

    #[test]
    fn a_run_reads_only_its_own_line_and_nothing_when_it_is_ambiguous() {
        let dir = tempfile::tempdir().unwrap();
        let watch = LogWatch { path: dir.path().join("engine.log"), marker: "acceptance=" };
        assert_eq!(watch.offset(), Some(0), "a log not written yet");
        std::fs::write(&watch.path, format!("{FILE}\n")).unwrap();
        let before = watch.offset().unwrap();
        assert_eq!(watch.acceptance_since(before), None, "the earlier run's line is not this run's");
        let append = |text: &str| {
            use std::io::Write as _;
            std::fs::OpenOptions::new().append(true).open(&watch.path).unwrap().write_all(text.as_bytes()).unwrap();
        };
        append(&format!("INFO: 127.0.0.1 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n{CONSOLE}\n"));
        assert!((watch.acceptance_since(before).unwrap() - 0.732).abs() < 1e-12);
        append(&format!("{CONSOLE}\n"));
        assert_eq!(watch.acceptance_since(before), None, "two generations in one run's window");
        std::fs::write(&watch.path, "").unwrap();
        assert_eq!(watch.acceptance_since(before), None, "rotated");
    }
}
