//! The claude release matrix: the oldest release we support, one from the middle of 2.1
//! whose screens differ from both ends (a JavaScript build with a footer of its own, tips
//! and notices under the spinner), and the newest pinned. tests/run.sh installs each into
//! the test cache; tests/capture-screens.sh captures each one's screens into
//! tests/fixtures/screens/claude/<version>/ (classify:: reads them all).
//!
//! Here each release walks through its live states once, on the real CLI against the fake
//! API, with hooks and status ticks both running (as in use), menus answered through
//! `orchestra approve`/`deny`, and every state checked on the live screen too. The pinned
//! release also walks hooks-only and screens-only (health::).

use std::path::PathBuf;

use crate::harness::require;
use crate::health::{drive_through_states, Walk};

/// Oldest supported, the middle one, the newest pinned (harness::CLAUDE_VERSION).
pub(crate) const CLAUDE_RELEASES: [&str; 3] = ["2.0.77", "2.1.100", crate::harness::CLAUDE_VERSION];

/// The CLI of `version` in the test cache (`None`, a reported skip, when it is missing;
/// on CI that fails).
pub(crate) fn claude_release(version: &str) -> Option<PathBuf> {
    // npm's launcher: the native binary or `cli.js` (node), whichever the release ships.
    let cli =
        crate::harness::test_cache().join(format!("claude-{version}/node_modules/.bin/claude"));
    require(&format!("the claude CLI {version}"), cli.is_file()).then_some(cli)
}

fn walk_release(version: &str) {
    let Some(claude) = claude_release(version) else {
        return;
    };
    drive_through_states(Walk {
        claude: Some(claude),
        hooks: true,
        ticks: true,
        by_orchestra: true,
    });
}

#[test]
fn live_states_on_claude_2_0_77() {
    walk_release(CLAUDE_RELEASES[0]);
}

#[test]
fn live_states_on_claude_2_1_100() {
    walk_release(CLAUDE_RELEASES[1]);
}

#[test]
fn live_states_on_claude_2_1_332() {
    walk_release(CLAUDE_RELEASES[2]);
}

#[test]
fn the_scripts_install_and_capture_the_same_releases() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for script in ["tests/run.sh", "tests/capture-screens.sh"] {
        let text = std::fs::read_to_string(root.join(script)).expect("read the script");
        for version in CLAUDE_RELEASES {
            assert!(
                text.contains(version),
                "{script} does not name claude {version} of the matrix"
            );
        }
    }
}
