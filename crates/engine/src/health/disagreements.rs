//! Screens that disagreed with a hook's word long enough for the screen to win: kept so a
//! person can see what the rules read and turn one into a fixture (`orchestra classify
//! --disagreements`). Only the captured screen is kept (never a prompt or hook JSON),
//! private, under the home, and bounded in count and in bytes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// At most this many are kept; the oldest go first.
pub const MAX_KEPT: usize = 50;
/// A screen's last this many bytes are kept (its bottom is what the rules read).
pub const MAX_SCREEN_BYTES: usize = 32 * 1024;

/// One disagreement, as kept.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Disagreement {
    pub session: String,
    pub label: String,
    pub agent: String,
    /// The agent's release, when recorded (`health` learns it once per session).
    #[serde(default)]
    pub release: Option<String>,
    /// When the screen won (microseconds since the epoch).
    pub at: i64,
    /// What the hook had said, and when.
    pub hook_state: String,
    pub hook_at: i64,
    pub screen_state: String,
    pub rule: Option<String>,
    /// The captured screen, its last [`MAX_SCREEN_BYTES`] at most.
    pub screen: String,
}

fn dir(home: &Path) -> PathBuf {
    home.join("disagreements")
}

/// Keeps `d` (its screen cut to its bottom), then drops the oldest past [`MAX_KEPT`].
/// A disagreement that cannot be written is only one less to look at: never an error of
/// the tick that found it.
pub fn keep(home: &Path, mut d: Disagreement) {
    d.screen = bottom(&d.screen, MAX_SCREEN_BYTES).to_string();
    let name = format!(
        "{:020}-{}.json",
        d.at.max(0),
        crate::paths::stable_hash(&d.session)
    );
    let Ok(json) = serde_json::to_vec_pretty(&d) else {
        return;
    };
    if crate::paths::replace_private(&dir(home).join(name), json).is_err() {
        return;
    }
    let files = files(home);
    for old in files.iter().take(files.len().saturating_sub(MAX_KEPT)) {
        let _ = std::fs::remove_file(old);
    }
}

/// The kept disagreements, oldest first (numbered from 1 in that order when listed).
pub fn list(home: &Path) -> Vec<Disagreement> {
    files(home)
        .iter()
        .filter_map(|f| serde_json::from_slice(&std::fs::read(f).ok()?).ok())
        .collect()
}

fn files(home: &Path) -> Vec<PathBuf> {
    crate::paths::files_ending(&dir(home), "json")
}

/// The last `max` bytes of `text`, cut at a line start when one is near (else at a
/// character boundary).
fn bottom(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let tail = &text[start..];
    match tail.find('\n') {
        Some(nl) => &tail[nl + 1..],
        None => tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn sample(n: i64, screen: &str) -> Disagreement {
        Disagreement {
            session: format!("s{n}"),
            label: "api".into(),
            agent: "claude".into(),
            release: Some("2.1.332".into()),
            at: 1_000_000 + n,
            hook_state: "idle".into(),
            hook_at: n,
            screen_state: "busy".into(),
            rule: Some("busy-footer".into()),
            screen: screen.into(),
        }
    }

    #[test]
    fn kept_private_bounded_in_count_and_bytes_oldest_dropped() {
        let home = tempfile::tempdir().unwrap();
        let big = format!("{}\nlast line\n", "é".repeat(MAX_SCREEN_BYTES));
        keep(home.path(), sample(0, &big));
        for n in 1..(MAX_KEPT as i64 + 5) {
            keep(home.path(), sample(n, "✻ Working… (esc to interrupt)\n"));
        }
        let kept = list(home.path());
        assert_eq!(kept.len(), MAX_KEPT);
        assert_eq!(kept[0].session, "s5", "the oldest went first");
        let mode = std::fs::metadata(dir(home.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        for f in files(home.path()) {
            let mode = std::fs::metadata(&f).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{}: {mode:o}", f.display());
        }
        let home = tempfile::tempdir().unwrap();
        keep(home.path(), sample(0, &big));
        let screen = &list(home.path())[0].screen;
        assert!(screen.len() <= MAX_SCREEN_BYTES, "{}", screen.len());
        assert!(screen.ends_with("last line\n"), "the bottom is kept");
    }
}
