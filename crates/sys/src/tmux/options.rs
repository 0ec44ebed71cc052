//! Every tmux option orchestra reads or writes, by name: the one registry. Window marks
//! (`@orchestra_…`, with an underscore) are orchestra's own, written on the windows it
//! made and read back to find them; settings (`@orchestra-…`, with a dash) are a
//! person's, read and never written except by the plugin's defaults (orchestra.tmux).

use std::fmt::Display;

/// The session id on the window of a session orchestra made: how its windows are found.
pub const WINDOW_ID: &str = "@orchestra_id";
/// The session's label, for the status line and menus.
pub const WINDOW_LABEL: &str = "@orchestra_label";
/// The badge: the session's state (or setup status), as the status line shows it.
pub const WINDOW_STATE: &str = "@orchestra_state";
/// The budget mark (`$`, `$!`) beside the badge.
pub const WINDOW_BUDGET: &str = "@orchestra_budget";
/// The conflict radar's mark on a window whose session conflicts with another.
pub const WINDOW_CONFLICTS: &str = "@orchestra_conflicts";
/// The pull request's mark (`#12✗`: failing checks) beside the badge.
pub const WINDOW_PR: &str = "@orchestra_pr";
/// A sandboxed session's box and mode (`sandboxed`, `sandboxed,net-off`, `yolo`) beside
/// the badge; absent for an agent that runs as the person.
pub const WINDOW_SANDBOX: &str = "@orchestra_sandbox";
/// What a window orchestra made is for, beside its sessions' (the orchestrator's).
pub const WINDOW_ROLE: &str = "@orchestra_role";
/// Which orchestra made a tmux session: one it did not make is never killed.
pub const OWNER: &str = "@orchestra_owner";

/// The command run to notify where no desktop notification can be shown.
pub const NOTIFY_CMD: &str = "@orchestra-notify-cmd";
/// How long a waiting notification waits for a press of its actions.
pub const NOTIFY_WAIT: &str = "@orchestra-notify-wait";
/// How long a busy agent may print nothing before it counts as stalled.
pub const STALL_AFTER: &str = "@orchestra-stall-after";
/// `on`: the status line says what the sessions cost.
pub const STATUS_COST: &str = "@orchestra-status-cost";
/// A budget in dollars per session that marks the badges.
pub const BUDGET: &str = "@orchestra-budget";
/// `off`: no conflict radar.
pub const RADAR: &str = "@orchestra-radar";
/// Seconds between conflict radar passes.
pub const RADAR_INTERVAL: &str = "@orchestra-radar-interval";
/// Seconds between background reads of the sessions' pull requests (0: none).
pub const PR_INTERVAL: &str = "@orchestra-pr-interval";
/// The prefix key table's key for the menu.
pub const KEY: &str = "@orchestra-key";
/// The key that jumps to the next session that needs a person.
pub const KEY_NEXT: &str = "@orchestra-key-next";
/// `off`: the plugin leaves the window-status formats alone (no badges).
pub const BADGE: &str = "@orchestra-badge";
/// The command run in a session's worktree before a merge, and how long it may take.
pub const WRAP_UP_CMD: &str = "@orchestra-wrap-up-cmd";
pub const WRAP_UP_TIMEOUT: &str = "@orchestra-wrap-up-timeout";
/// `on`: a new worktree is trusted by the agent without its dialog.
pub const TRUST_WORKTREES: &str = "@orchestra-trust-worktrees";
/// The orchestra binary the plugin's bindings run.
pub const EXE: &str = "@orchestra-exe";
/// The agent the menu's Dispatch… starts.
pub const AGENT: &str = "@orchestra-agent";

/// The conflict radar's symbol and style on the status line ([`symbol`], [`style`] of
/// `conflict`, as constants for a listing's fixed option list).
pub const SYMBOL_CONFLICT: &str = "@orchestra-symbol-conflict";
pub const STYLE_CONFLICT: &str = "@orchestra-style-conflict";

/// The status line's symbol for `state` (`@orchestra-symbol-busy`, …).
pub fn symbol(state: impl Display) -> String {
    format!("@orchestra-symbol-{state}")
}

/// The status line's style for `state` (`@orchestra-style-busy`, …).
pub fn style(state: impl Display) -> String {
    format!("@orchestra-style-{state}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: &[&str] = &[
        NOTIFY_CMD,
        NOTIFY_WAIT,
        STALL_AFTER,
        STATUS_COST,
        BUDGET,
        RADAR,
        RADAR_INTERVAL,
        PR_INTERVAL,
        KEY,
        KEY_NEXT,
        BADGE,
        WRAP_UP_CMD,
        WRAP_UP_TIMEOUT,
        TRUST_WORKTREES,
        EXE,
        AGENT,
        SYMBOL_CONFLICT,
        STYLE_CONFLICT,
    ];

    /// Each `@orchestra-…` name in `text`.
    fn named(text: &str) -> Vec<String> {
        let mut names: Vec<String> = text
            .match_indices("@orchestra-")
            .map(|(at, _)| {
                let rest = &text[at..];
                let end = rest
                    .char_indices()
                    .skip(1)
                    .find(|(_, c)| !(c.is_ascii_lowercase() || *c == '-'))
                    .map_or(rest.len(), |(i, _)| i);
                rest[..end].trim_end_matches('-').to_string()
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }

    #[test]
    fn every_setting_is_documented_and_every_documented_one_is_here() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        let documented = named(&readme);
        for setting in SETTINGS {
            assert!(
                documented.iter().any(|d| d == setting),
                "{setting} is not in the README"
            );
        }
        for name in &documented {
            let per_state = ["@orchestra-symbol-", "@orchestra-style-"]
                .iter()
                .any(|p| name.starts_with(p));
            assert!(
                per_state || SETTINGS.contains(&name.as_str()),
                "the README documents {name}, which orchestra never reads"
            );
        }
        assert_eq!(symbol("busy"), "@orchestra-symbol-busy");
        assert_eq!(style("conflict"), STYLE_CONFLICT);
    }

    #[test]
    fn marks_and_settings_are_told_apart_by_their_spelling() {
        for mark in [
            WINDOW_ID,
            WINDOW_LABEL,
            WINDOW_STATE,
            WINDOW_BUDGET,
            WINDOW_CONFLICTS,
            WINDOW_PR,
            WINDOW_SANDBOX,
            WINDOW_ROLE,
            OWNER,
        ] {
            assert!(mark.starts_with("@orchestra_"), "{mark}");
        }
        for setting in SETTINGS {
            assert!(setting.starts_with("@orchestra-"), "{setting}");
        }
    }
}
