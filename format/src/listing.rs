//! Finding passes on disk: `benchpass list`, and the passes near a folder that is not one
//! (so that a mistyped path gets an answer, not an OS error).

use std::path::{Path, PathBuf};

use super::{store::read_pass_info, PassInfo, PASS_FILE};

/// How deep below the folder passes are looked for: `data/passes/<pass>` from the repository
/// root is two levels; a pass of a plan keeps nothing deeper that is a pass.
const MAX_DEPTH: usize = 3;
/// Folders looked into at most, so that `list /` ends.
const MAX_FOLDERS: usize = 20_000;

/// A pass found on disk, or a folder whose pass.json cannot be read (with why).
pub struct Found {
    pub dir: PathBuf,
    pub info: Result<PassInfo, String>,
}

/// Every folder holding a `pass.json` at or below `root` (to [`MAX_DEPTH`] levels, links not
/// followed), newest first by start time; unreadable ones last.
pub fn find_passes(root: &Path) -> Vec<Found> {
    let mut found = Vec::new();
    let mut queue = vec![(root.to_path_buf(), 0)];
    let mut visited = 0;
    while let Some((dir, depth)) = queue.pop() {
        visited += 1;
        if visited > MAX_FOLDERS {
            break;
        }
        if dir.join(PASS_FILE).is_file() {
            let info = read_pass_info(&dir).map_err(|e| e.to_string());
            found.push(Found { dir, info });
            continue;
        }
        if depth == MAX_DEPTH {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            // file_type() does not follow links: a link to `/` is not walked.
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                queue.push((entry.path(), depth + 1));
            }
        }
    }
    found.sort_by(|a, b| match (&a.info, &b.info) {
        (Ok(x), Ok(y)) => y.started_at.cmp(&x.started_at).then_with(|| a.dir.cmp(&b.dir)),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.dir.cmp(&b.dir),
    });
    found
}

/// Why `dir` is not a pass, and the passes nearby (inside it, or beside it) that the user may
/// have meant; `None` when it is one.
pub fn not_a_pass(dir: &Path) -> Option<String> {
    if dir.join(PASS_FILE).is_file() {
        return None;
    }
    let what = if dir.is_dir() { "holds no pass.json" } else { "does not exist" };
    let mut message = format!("{} is not a pass folder: it {what}", dir.display());
    let inside = if dir.is_dir() { find_passes(dir) } else { Vec::new() };
    // Inside it, else beside it: the nearest folder above it that exists.
    let nearby = if inside.is_empty() {
        let above = dir.ancestors().skip(1).map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p }).find(|p| p.is_dir());
        // Not the whole file system: a typo at the top says so and no more.
        above.filter(|p| p.parent().is_some()).map(find_passes).unwrap_or_default()
    } else {
        inside
    };
    const SHOWN: usize = 5;
    if nearby.is_empty() {
        message.push_str("; `benchpass list DIR` finds passes under a folder");
    } else {
        message.push_str("; passes nearby, newest first:");
        for found in nearby.iter().take(SHOWN) {
            message.push_str(&format!("\n  {}", found.dir.display()));
        }
        if nearby.len() > SHOWN {
            message.push_str(&format!("\n  and {} more (benchpass list)", nearby.len() - SHOWN));
        }
    }
    Some(message)
}
