//! What a pass id may be, and the one benchpass gives a pass that was not named: the id names
//! the pass's folder, so every writer and importer checks it here before it creates one.

/// The id of a pass started at `started_at` (RFC 3339) with `engine`: its start, to the
/// second, then the engine's name with anything a folder name should not hold made `-`.
pub fn default_pass_id(started_at: &str, engine: &str) -> String {
    // 2026-11-30T09:03:13Z → 20261130-090313
    let stamp: String = started_at.chars().filter(char::is_ascii_digit).collect();
    let engine: String = engine
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '-' })
        .collect();
    format!("{}-{}-{engine}", &stamp[..8], &stamp[8..14])
}

/// A pass id names a folder: letters, digits, `.`, `_` and `-`, not starting with `.`.
pub fn check_pass_id(pass_id: &str) -> anyhow::Result<()> {
    let ok = !pass_id.is_empty()
        && !pass_id.starts_with('.')
        && pass_id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    anyhow::ensure!(ok, "pass id `{pass_id}`: use letters, digits, `.`, `_` and `-` (it names a folder), not starting with `.`");
    Ok(())
}
