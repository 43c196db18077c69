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
            // Nor into a folder everyone shares below the one asked for (other users' passes).
            if entry.file_type().is_ok_and(|t| t.is_dir()) && !is_shared(&entry.path()) {
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

/// A folder anyone may write in, with the sticky bit (`/tmp`, `/var/tmp`): what is in it
/// belongs to many users. Elsewhere than on Unix, the system's temp folder.
fn is_shared(dir: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o1002 == 0o1002)
    }
    #[cfg(not(unix))]
    {
        std::fs::canonicalize(dir).ok() == std::fs::canonicalize(std::env::temp_dir()).ok()
    }
}

/// Why `dir` is not a pass, and the passes nearby (inside it, or beside it) that the user may
/// have meant; `None` when it is one.
pub fn not_a_pass(dir: &Path) -> Option<String> {
    if dir.join(PASS_FILE).is_file() {
        return None;
    }
    let what = if dir.is_dir() { "holds no pass.json" } else { "does not exist" };
    let mut message = format!("{} is not a pass folder: it {what}", dir.display());
    // Never a folder everyone shares (the system's temp folder): the passes in it are other
    // people's, and their paths are not this error's to print.
    let inside = if dir.is_dir() && !is_shared(dir) { find_passes(dir) } else { Vec::new() };
    // Inside it, else beside it: the nearest folder above it that exists.
    let nearby = if inside.is_empty() {
        let above = dir.ancestors().skip(1).map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p }).find(|p| p.is_dir());
        // Not the whole file system: a typo at the top says so and no more.
        above.filter(|p| p.parent().is_some() && !is_shared(p)).map(find_passes).unwrap_or_default()
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

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::not_a_pass;

    #[test]
    fn a_folder_everyone_shares_is_not_searched_for_passes_to_name() {
        let tmp = tempfile::tempdir().unwrap();
        let (own, shared) = (tmp.path().join("own"), tmp.path().join("shared"));
        for parent in [&own, &shared] {
            std::fs::create_dir_all(parent.join("someones-pass")).unwrap();
            std::fs::write(parent.join("someones-pass").join(crate::PASS_FILE), "{}").unwrap();
        }
        // /tmp's mode: anyone may write, the sticky bit set.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(not_a_pass(&own.join("typo")).unwrap().contains("someones-pass"), "a folder of one's own is searched");
        // Asked for the shared folder, or a typo inside it: nothing in it is named (the
        // folder beside it that is one's own still is).
        let message = not_a_pass(&shared).unwrap();
        assert!(!message.contains("shared/someones-pass") && message.contains("own/someones-pass"), "{message}");
        let message = not_a_pass(&shared.join("typo")).unwrap();
        assert!(message.ends_with("it does not exist; `benchpass list DIR` finds passes under a folder"), "{message}");
    }
}
