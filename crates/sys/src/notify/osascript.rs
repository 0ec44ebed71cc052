//! Notifications on macOS: `osascript`'s `display notification`, which every macOS has.
//! It shows no buttons and reports no press, so a waiting session's note goes out without
//! Approve/Deny/Open (answer it from the menu or with `orchestra approve`).

use std::time::Duration;

use super::{Action, Note, Waited};

/// No bus to try first: [`COMMAND`] is this platform's desktop way.
pub(super) const NAME: &str = "osascript";

/// The note's title and body are appended (after `--`) and read from the end of `argv`,
/// so they are only ever data to the script, never AppleScript, and a title that starts
/// with `-` is no option, whether osascript keeps the `--` in `argv` or not.
pub(super) const COMMAND: Option<&[&str]> = Some(&[
    "osascript",
    "-e",
    "on run argv",
    "-e",
    "display notification (item -1 of argv) with title (item -2 of argv)",
    "-e",
    "end run",
    "--",
]);

/// There is no bus here: the note goes through [`COMMAND`].
pub(super) fn show(_note: &Note) -> bool {
    false
}

pub(super) fn offers_actions() -> bool {
    false
}

pub(super) fn show_and_wait(
    _note: &Note,
    _actions: &[Action],
    _bound: Duration,
    _still_asked: &mut dyn FnMut() -> bool,
) -> Option<Waited> {
    None
}
