//! What a test reads of a session in its world: its pane, its screen, its state and the
//! changes of it, and waits on them that say what they saw when they fail.

use std::fmt;
use std::time::Duration;

use super::{wait_until, Env};

/// A change of a session's state, as `events --json` records it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    pub old: String,
    pub new: String,
    /// The hook event or screen rule that said it.
    pub detail: String,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}>{}:{}", self.old, self.new, self.detail)
    }
}

impl Env {
    /// The pane (`%N`) of session `label`.
    pub(crate) fn pane(&self, label: &str) -> String {
        self.session(label)["pane"]
            .as_str()
            .expect("a pane")
            .to_string()
    }

    /// What `label`'s pane shows now.
    pub(crate) fn screen(&self, label: &str) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.pane(label)])
    }

    /// Waits up to `limit` for `text` on `label`'s screen; fails showing the screen.
    #[track_caller]
    pub(crate) fn wait_screen(&self, label: &str, text: &str, limit: Duration) {
        assert!(
            wait_until(limit, || self.screen(label).contains(text)),
            "{text:?} never showed:\n{}",
            self.screen(label)
        );
    }

    /// `label`'s state as recorded (no tick reads it).
    pub(crate) fn state(&self, label: &str) -> String {
        self.session(label)["state"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Ticks (`refresh`) until `label` is in `state`, or `limit` passes.
    pub(crate) fn ticks_until(&self, label: &str, state: &str, limit: Duration) -> bool {
        wait_until(limit, || {
            self.orchestra(&["refresh"]).ok();
            self.state(label) == state
        })
    }

    /// [`Env::ticks_until`]; fails with what `label` is, shows and said when it never
    /// gets there.
    #[track_caller]
    pub(crate) fn reaches(&self, label: &str, state: &str, limit: Duration) {
        let reached = self.ticks_until(label, state, limit);
        self.assert_reached(reached, label, state, "");
    }

    /// Waits up to `limit`, with no tick, until `label` is in `state`: only a hook (or
    /// orchestra itself) can have said it.
    #[track_caller]
    pub(crate) fn said_without_ticks(&self, label: &str, state: &str, limit: Duration) {
        let reached = wait_until(limit, || self.state(label) == state);
        self.assert_reached(reached, label, state, " without a tick");
    }

    #[track_caller]
    fn assert_reached(&self, reached: bool, label: &str, state: &str, how: &str) {
        assert!(
            reached,
            "{label} never became {state}{how} (it is {}):\n{}\nchanges: {}",
            self.state(label),
            self.screen(label),
            self.changes_text(label)
        );
    }

    /// The state changes of `label`, oldest first (of its last 200 events).
    pub(crate) fn state_changes(&self, label: &str) -> Vec<Change> {
        let run = self
            .orchestra(&["events", label, "--json", "-n", "200"])
            .ok();
        let events: Vec<serde_json::Value> =
            serde_json::from_str(&run.stdout).expect("events --json is JSON");
        let word = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        events
            .iter()
            .filter(|e| e["kind"] == "state")
            .map(|e| Change {
                old: word(&e["old"]),
                new: word(&e["new"]),
                detail: word(&e["detail"]),
            })
            .collect()
    }

    /// [`Env::state_changes`] as one line of `old>new:detail` words.
    pub(crate) fn changes_text(&self, label: &str) -> String {
        let changes: Vec<String> = self
            .state_changes(label)
            .iter()
            .map(Change::to_string)
            .collect();
        changes.join(" ")
    }

    /// Types `text` into `label` (`orchestra brief`).
    pub(crate) fn brief(&self, label: &str, text: &str) {
        self.orchestra(&["brief", label, text]).ok();
    }

    /// `orchestra classify --kind <kind>` of `screen`: the state and the rule that said it.
    pub(crate) fn classify(&self, kind: &str, screen: &[u8]) -> (String, String) {
        let run = self.orchestra_stdin(&["classify", "--kind", kind, "--json"], screen);
        assert_eq!(run.code, 0, "classify: {}", run.stderr);
        let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("classify --json");
        let word = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        (word(&v["state"]), word(&v["rule"]))
    }
}
