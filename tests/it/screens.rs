//! The labelled screens in tests/fixtures/screens/<agent>/<version>/: each file's agent
//! directory is the kind to classify it as, and the first word of its name the state the
//! classifier must read (`busy-streaming.txt` → busy). A screen of the catalogue
//! (tests/fixtures/screens/<agent>/catalogue.toml) is named
//! `<state>-<entry>@<cols>x<rows>.txt`: its entry and the pane's size follow the state. Shared by the classify tests and the
//! accuracy benchmark (benches/accuracy.rs includes this file), so both read the same set.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// One labelled screen.
pub(crate) struct Screen {
    /// The agent kind: the directory under tests/fixtures/screens.
    pub agent: String,
    /// The release the screen was captured from: the directory under the agent's.
    pub version: String,
    /// The file name, e.g. `busy-streaming.ansi`.
    pub name: String,
    /// The state the name says.
    pub expected: String,
    /// The catalogue entry (`<state>-<entry>@<cols>x<rows>`), `None` for a screen named
    /// otherwise.
    pub entry: Option<String>,
    pub path: PathBuf,
}

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/screens")
}

fn dirs(path: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    found.sort();
    found
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .and_then(|n| n.to_str())
        .expect("UTF-8 fixture names")
        .to_string()
}

/// Every labelled screen (`.txt` plain, `.ansi` with escapes), sorted by agent, release
/// and name. Release directories sort by their numbers (2.1.100 after 2.1.50).
pub(crate) fn labelled() -> Vec<Screen> {
    let mut screens = Vec::new();
    for agent in dirs(&root()).into_iter().filter(|p| p.is_dir()) {
        let mut versions: Vec<PathBuf> = dirs(&agent).into_iter().filter(|p| p.is_dir()).collect();
        versions.sort_by_key(|v| version_key(&name_of(v)));
        for version in versions {
            for file in dirs(&version) {
                if !matches!(
                    file.extension().and_then(|e| e.to_str()),
                    Some("txt" | "ansi")
                ) {
                    continue;
                }
                let name = name_of(&file);
                let entry = entry_of(&name);
                screens.push(Screen {
                    entry,
                    agent: name_of(&agent),
                    version: name_of(&version),
                    expected: name
                        .split(['-', '.'])
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                    name,
                    path: file,
                });
            }
        }
    }
    screens
}

/// `waiting-web-fetch@120x40.txt` → `web-fetch`: what lies between the state and `@`.
pub(crate) fn entry_of(name: &str) -> Option<String> {
    let (before, _) = name.split_once('@')?;
    let (_, entry) = before.split_once('-')?;
    Some(entry.to_string())
}

/// "2.1.100" → [2, 1, 100]; words that are not numbers sort as 0.
pub(crate) fn version_key(version: &str) -> Vec<u64> {
    version
        .split('.')
        .map(|part| part.parse().unwrap_or(0))
        .collect()
}

/// The states a name may start with.
pub(crate) const STATES: [&str; 6] = ["busy", "waiting", "idle", "error", "exited", "unknown"];
