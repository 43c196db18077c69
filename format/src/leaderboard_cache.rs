//! A pass's leaderboard cache, `leaderboard.cache` (docs/raw-format.md): the leaderboard rows
//! worked out from the pass's raw files, with a stamp of exactly those files. It is a cache,
//! never a source: a reader uses it only while the stamp still matches the raw files on this
//! machine, and otherwise works the rows out from the raw runs again (and rewrites it).
//!
//! The stamp of a file is its length, modification time and, on Unix, its device, inode and
//! status-change time (ctime). No program can set a ctime (the kernel sets it to now on every
//! write, rename, chmod or `utime`), so a copied, downloaded or unpacked pass always has files
//! of new ctimes: a cache that travels with a pass from another machine, whatever it says, never
//! matches, and its rows never reach a leaderboard. What it trusts is this machine's own write
//! of the cache, for files unchanged since; someone who can edit the cache here can edit the
//! runs as well. `benchpass leaderboard --verify` ignores every cache and says which disagreed.
//!
//! The file: one line of JSON ([`CacheHeader`]), then the rows as CSV without a header line,
//! byte for byte what the leaderboard CSV holds for the pass, then the same rows typed column
//! by column as recorded (`analysis::leaderboard::typed`, for the Parquet export; opaque here).
//! It is read only up to [`MAX_CACHE_BYTES`], and only when it is a plain file (never through
//! a link).

use std::fs;
use std::io::{Read as _, Write as _};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::store::{PASS_FILE, RUNS_FILE};

pub const CACHE_FILE: &str = "leaderboard.cache";

/// The version of the file's layout; a reader takes only its own (1 had no typed rows).
pub const CACHE_FORMAT: u32 = 2;

/// The most of a cache that is read: a pass's rows are tens of kilobytes; a cache larger than
/// this is not one this program wrote, and is ignored.
pub const MAX_CACHE_BYTES: u64 = 64 << 20;

/// What a file was when the rows were worked out from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    pub len: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub modified_ns: i128,
    /// Status-change time (Unix; 0 elsewhere), nanoseconds since the epoch.
    pub changed_ns: i128,
    pub device: u64,
    pub inode: u64,
}

impl FileStamp {
    fn of(path: &Path) -> std::io::Result<FileStamp> {
        let meta = fs::metadata(path)?;
        Ok(stamp_of(&meta))
    }
}

#[cfg(unix)]
fn stamp_of(meta: &fs::Metadata) -> FileStamp {
    use std::os::unix::fs::MetadataExt as _;
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    FileStamp {
        len: meta.len(),
        modified_ns: ns(meta.mtime(), meta.mtime_nsec()),
        changed_ns: ns(meta.ctime(), meta.ctime_nsec()),
        device: meta.dev(),
        inode: meta.ino(),
    }
}

/// Elsewhere the stamp is the length and the modification and creation times: weaker, since a
/// copy may keep both (docs/raw-format.md says so).
#[cfg(not(unix))]
fn stamp_of(meta: &fs::Metadata) -> FileStamp {
    let ns = |t: std::io::Result<std::time::SystemTime>| {
        t.ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(-1, |d| d.as_nanos() as i128)
    };
    FileStamp {
        len: meta.len(),
        modified_ns: ns(meta.modified()),
        changed_ns: ns(meta.created()),
        device: 0,
        inode: 0,
    }
}

/// The stamps of a pass's raw files: pass.json, and runs.jsonl where there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub pass_json: FileStamp,
    pub runs: Option<FileStamp>,
}

impl Stamp {
    /// The stamp of the pass in `dir` now.
    pub fn of(dir: &Path) -> std::io::Result<Stamp> {
        let pass_json = FileStamp::of(&dir.join(PASS_FILE))?;
        let runs = match FileStamp::of(&dir.join(RUNS_FILE)) {
            Ok(stamp) => Some(stamp),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok(Stamp { pass_json, runs })
    }
}

/// The first line of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheHeader {
    pub format: u32,
    /// Which code worked the rows out (`analysis::leaderboard::ROWS_VERSION`): rows of another
    /// are worked out again.
    pub rows_version: String,
    pub pass_id: String,
    pub stamp: Stamp,
    /// What of runs.jsonl could not be read (`damage_notes`): said again on every read.
    pub damage: Vec<String>,
    /// The length of the CSV rows after the header line.
    pub rows_bytes: u64,
    /// The length of the typed rows after them.
    pub typed_bytes: u64,
}

/// A cache that matches its pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cached {
    pub pass_id: String,
    pub damage: Vec<String>,
    /// The pass's rows, as the leaderboard CSV holds them (no header line); empty where
    /// [`Parts::Typed`] alone was read.
    pub rows: Vec<u8>,
    /// The same rows typed, as `analysis::leaderboard::typed` encodes them (empty where they
    /// could not be typed, or where [`Parts::Rows`] alone was read).
    pub typed: Vec<u8>,
}

/// Why a cache was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// There is none.
    Absent,
    /// It is not a plain file, is larger than [`MAX_CACHE_BYTES`], or is not a cache.
    Unreadable,
    /// It was made from other files than those there now, by other code, or in another layout.
    Stale,
}

/// Which parts of a cache a reader takes: the CSV's reader needs no typed rows and the
/// Parquet export no CSV rows, and neither reads the other's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parts {
    Rows,
    Typed,
    Both,
}

impl Parts {
    fn rows(self) -> bool {
        self != Parts::Typed
    }

    fn typed(self) -> bool {
        self != Parts::Rows
    }
}

/// The cache of the pass in `dir`, when it matches `rows_version` and the raw files as they
/// are now, with the `parts` asked for (a part not asked for is left empty). Whichever parts
/// are read, the file is checked whole: its length is the header's, and the CSV rows end a
/// line where the typed rows begin.
pub fn read(dir: &Path, rows_version: &str, parts: Parts) -> Result<Cached, Miss> {
    use std::io::{BufRead as _, Seek as _};
    let path = dir.join(CACHE_FILE);
    let meta = match fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Miss::Absent),
        Err(_) => return Err(Miss::Unreadable),
    };
    if !meta.file_type().is_file() || meta.len() > MAX_CACHE_BYTES {
        return Err(Miss::Unreadable);
    }
    // Stamped before the cache is read: a write of the raw files from here on is a new ctime.
    let now = Stamp::of(dir).map_err(|_| Miss::Stale)?;
    let file = fs::File::open(&path).map_err(|_| Miss::Unreadable)?;
    // The length of what was opened (a rename since the stat above is another file).
    let len = file.metadata().map_err(|_| Miss::Unreadable)?.len();
    if len > MAX_CACHE_BYTES {
        return Err(Miss::Unreadable);
    }
    let mut file = std::io::BufReader::new(file);
    let mut line = Vec::new();
    file.by_ref()
        .take(MAX_CACHE_BYTES)
        .read_until(b'\n', &mut line)
        .map_err(|_| Miss::Unreadable)?;
    if line.pop() != Some(b'\n') {
        return Err(Miss::Unreadable);
    }
    let header: CacheHeader = serde_json::from_slice(&line).map_err(|_| Miss::Unreadable)?;
    if header.format != CACHE_FORMAT || header.rows_version != rows_version || header.stamp != now {
        return Err(Miss::Stale);
    }
    let body = line.len() as u64 + 1;
    let whole = body
        .checked_add(header.rows_bytes)
        .and_then(|n| n.checked_add(header.typed_bytes))
        == Some(len);
    if !whole {
        return Err(Miss::Unreadable);
    }
    let exactly = |file: &mut std::io::BufReader<fs::File>, n: u64| -> Result<Vec<u8>, Miss> {
        let mut bytes = vec![0; usize::try_from(n).map_err(|_| Miss::Unreadable)?];
        file.read_exact(&mut bytes).map_err(|_| Miss::Unreadable)?;
        Ok(bytes)
    };
    let rows = if parts.rows() {
        let rows = exactly(&mut file, header.rows_bytes)?;
        if rows.last().is_some_and(|b| *b != b'\n') {
            return Err(Miss::Unreadable);
        }
        rows
    } else {
        // Only the CSV rows' last byte, which must end a line.
        if header.rows_bytes > 0 {
            file.seek(std::io::SeekFrom::Start(body + header.rows_bytes - 1))
                .map_err(|_| Miss::Unreadable)?;
            if exactly(&mut file, 1)? != b"\n" {
                return Err(Miss::Unreadable);
            }
        }
        Vec::new()
    };
    let typed = if parts.typed() {
        exactly(&mut file, header.typed_bytes)?
    } else {
        Vec::new()
    };
    Ok(Cached {
        pass_id: header.pass_id,
        damage: header.damage,
        rows,
        typed,
    })
}

/// Writes the cache of the pass in `dir`: `cached` worked out from the raw files as `stamp`
/// found them (taken before they were read). Written only if they are still so, into a
/// temporary beside it that is renamed over the old one. `Ok(false)`: the raw files changed
/// meanwhile, and nothing was written.
pub fn write(dir: &Path, stamp: &Stamp, rows_version: &str, cached: &Cached) -> std::io::Result<bool> {
    let Cached { pass_id, damage, rows, typed } = cached;
    if Stamp::of(dir)? != *stamp {
        return Ok(false);
    }
    let header = CacheHeader {
        format: CACHE_FORMAT,
        rows_version: rows_version.to_owned(),
        pass_id: pass_id.to_owned(),
        stamp: stamp.clone(),
        damage: damage.to_vec(),
        rows_bytes: rows.len() as u64,
        typed_bytes: typed.len() as u64,
    };
    let mut text = serde_json::to_vec(&header).map_err(std::io::Error::other)?;
    text.push(b'\n');
    text.extend_from_slice(rows);
    text.extend_from_slice(typed);
    if text.len() as u64 > MAX_CACHE_BYTES {
        // It would not be read back: none at all says the same more cheaply.
        let _ = fs::remove_file(dir.join(CACHE_FILE));
        return Ok(false);
    }
    let tmp = dir.join(".leaderboard.cache.tmp");
    // A temporary left by a killed writer, or planted as a link, is removed as what it is;
    // create_new (O_EXCL) follows no link put there since.
    if fs::symlink_metadata(&tmp)
        .is_ok_and(|m| m.file_type().is_file() || m.file_type().is_symlink())
    {
        let _ = fs::remove_file(&tmp);
    }
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut file| file.write_all(&text));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    // No sync: a cache lost or cut short by a crash is one that does not match, and is rebuilt.
    fs::rename(&tmp, dir.join(CACHE_FILE))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: &[u8] = b"p,m,e\n";
    const TYPED: &[u8] = b"typed\n,rows";

    fn cached(damage: &[&str]) -> Cached {
        Cached {
            pass_id: "p".to_owned(),
            damage: damage.iter().map(|d| d.to_string()).collect(),
            rows: ROWS.to_vec(),
            typed: TYPED.to_vec(),
        }
    }

    /// The cache of `dir` read each way, which must agree on a miss.
    fn read_each(dir: &Path, rows_version: &str) -> Result<Cached, Miss> {
        let both = read(dir, rows_version, Parts::Both);
        let only = |parts| read(dir, rows_version, parts);
        match &both {
            Ok(whole) => {
                assert_eq!(only(Parts::Rows), Ok(Cached { typed: Vec::new(), ..whole.clone() }));
                assert_eq!(only(Parts::Typed), Ok(Cached { rows: Vec::new(), ..whole.clone() }));
            }
            Err(miss) => {
                assert_eq!(only(Parts::Rows), Err(*miss), "the CSV rows alone");
                assert_eq!(only(Parts::Typed), Err(*miss), "the typed rows alone");
            }
        }
        both
    }

    fn pass() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(PASS_FILE), "{}\n").unwrap();
        fs::write(dir.path().join(RUNS_FILE), "{}\n").unwrap();
        dir
    }

    #[test]
    fn a_cache_is_read_back_while_its_raw_files_are_as_they_were() {
        let dir = pass();
        let stamp = Stamp::of(dir.path()).unwrap();
        assert!(write(dir.path(), &stamp, "v1", &cached(&["a note"])).unwrap());
        assert_eq!(read_each(dir.path(), "v1").unwrap(), cached(&["a note"]));
        assert_eq!(
            read_each(dir.path(), "v2"),
            Err(Miss::Stale),
            "rows of other code"
        );
        // One more byte of runs: another length, another ctime.
        fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(RUNS_FILE))
            .unwrap()
            .write_all(b"\n")
            .unwrap();
        assert_eq!(read_each(dir.path(), "v1"), Err(Miss::Stale));
        // A stamp taken before the raw files changed writes nothing.
        assert!(!write(dir.path(), &stamp, "v1", &cached(&[])).unwrap());
    }

    #[test]
    fn a_cache_that_is_not_one_is_unreadable_and_none_is_absent() {
        let dir = pass();
        assert_eq!(read_each(dir.path(), "v1"), Err(Miss::Absent));
        for bytes in [&b""[..], b"{}", b"not json\n", b"{\"format\":1}\nrows\n"] {
            fs::write(dir.path().join(CACHE_FILE), bytes).unwrap();
            assert_eq!(read_each(dir.path(), "v1"), Err(Miss::Unreadable), "{bytes:?}");
        }
        let stamp = Stamp::of(dir.path()).unwrap();
        write(dir.path(), &stamp, "v1", &cached(&[])).unwrap();
        let text = fs::read(dir.path().join(CACHE_FILE)).unwrap();
        for (cut, what) in [(1, "typed rows cut short"), (TYPED.len(), "no typed rows"), (TYPED.len() + 1, "CSV rows cut short")] {
            fs::write(dir.path().join(CACHE_FILE), &text[..text.len() - cut]).unwrap();
            assert_eq!(read_each(dir.path(), "v1"), Err(Miss::Unreadable), "{what}");
        }
        let mut longer = text.clone();
        longer.push(b'\n');
        fs::write(dir.path().join(CACHE_FILE), &longer).unwrap();
        assert_eq!(read_each(dir.path(), "v1"), Err(Miss::Unreadable), "a byte more");
        // The CSV rows' length moved into the typed rows: the CSV no longer ends a line.
        let header_end = text.iter().position(|&b| b == b'\n').unwrap();
        let header = String::from_utf8(text[..header_end].to_vec()).unwrap();
        let moved = header.replace("\"rows_bytes\":6,\"typed_bytes\":11", "\"rows_bytes\":5,\"typed_bytes\":12");
        assert_ne!(moved, header);
        fs::write(dir.path().join(CACHE_FILE), [moved.as_bytes(), &text[header_end..]].concat()).unwrap();
        assert_eq!(read_each(dir.path(), "v1"), Err(Miss::Unreadable), "rows that end mid-line");
        fs::File::create(dir.path().join(CACHE_FILE))
            .unwrap()
            .set_len(MAX_CACHE_BYTES + 1)
            .unwrap();
        assert_eq!(read_each(dir.path(), "v1"), Err(Miss::Unreadable), "too large");
    }
}
