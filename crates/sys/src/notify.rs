//! Desktop notifications, whatever the platform: what a note is, the detached sender, the
//! fallbacks, and what a person can do from one. Sending happens in a detached child
//! process (`orchestra notify …`), so whoever records a transition — a hook, the status
//! line — never waits for a bus. The desktop's own way first (the platform's backend,
//! chosen below), then the command in `@orchestra-notify-cmd`, then the backend's own
//! command (osascript on macOS), then tmux `display-message`; failing all, silence.
//!
//! A waiting session's notification offers actions (Approve, Deny, Open) where the
//! backend and the notification server show them (D-Bus only): its detached sender stays
//! to wait for one, bounded (`@orchestra-notify-wait`, 15 minutes by default), and closes
//! the notification when it gives up. Elsewhere the note goes out without actions. What
//! an action does is the caller's: this module only shows and waits.

use std::time::Duration;

use crate::process::Run;

// The one place the platform is chosen: each backend has the same few items (`NAME`,
// `COMMAND`, `show`, `offers_actions`, `show_and_wait`). D-Bus where notify-rust speaks
// it (Linux, the BSDs; Cargo.toml builds notify-rust and zbus only there); osascript on
// macOS, without actions. osascript's is built everywhere, so the suite runs its argv here.
#[cfg(all(unix, not(target_os = "macos")))]
mod dbus;
#[cfg(all(unix, not(target_os = "macos")))]
use dbus as desktop;
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
mod osascript;
#[cfg(target_os = "macos")]
use osascript as desktop;

/// A person's notify command shows a message and returns; one still running after this
/// is stuck (it runs in the detached `orchestra notify`, so nobody waited meanwhile).
const NOTIFY_CMD_DEADLINE: Duration = Duration::from_secs(10);

/// What a notification says.
#[derive(Debug, Clone)]
pub struct Note {
    pub title: String,
    pub body: String,
}

/// How much of an agent's own text (a command, a path) a notification quotes.
pub const ASK_CHARS: usize = 80;

/// How long a notification's title and body are at most, as shown.
const TITLE_CHARS: usize = 120;
const BODY_CHARS: usize = 400;

impl Note {
    /// The note as it is shown and sent, whoever wrote it (a hook here, a host's word, a
    /// tracker): title and body each one line, inert ([`crate::inert::cut`]) and bounded.
    pub fn shown(&self) -> Note {
        Note {
            title: crate::inert::cut(&self.title, TITLE_CHARS),
            body: crate::inert::cut(&self.body, BODY_CHARS),
        }
    }
}

/// Where to fall back to when there is no notification bus.
#[derive(Debug, Clone, Default)]
pub struct Fallback {
    /// `@orchestra-notify-cmd`: a command line; title and body are appended as arguments.
    pub command: Option<String>,
    /// The tmux socket for `display-message`.
    pub tmux_socket: Option<String>,
}

/// What the detached sender reads on its stdin: the note (the agent's words, perhaps a
/// token in a command, never on a command line) and, for a waiting session, what the
/// note says is asked, which an action checks against the screen when pressed.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Sent {
    pub title: String,
    pub body: String,
    #[serde(default)]
    pub asks: Option<String>,
}

impl Sent {
    pub fn note(&self) -> Note {
        Note {
            title: self.title.clone(),
            body: self.body.clone(),
        }
    }
}

/// Starts a detached `orchestra notify` for `note` and returns at once. Never fails:
/// a notification that cannot be sent is not the caller's problem.
pub fn spawn(note: &Note, fallback: &Fallback) {
    spawn_sender(note, None, notify_args(fallback));
}

/// [`spawn`] for a session waiting for a person: where the bus shows actions, the detached
/// sender offers them and stays to act on the one chosen, as long as the session's newest
/// change of state is still `event` (the transition to waiting this note tells of) and
/// the screen still asks what `asks` says (the phrase the note names), when it names one.
pub fn spawn_waiting(
    note: &Note,
    asks: Option<&str>,
    fallback: &Fallback,
    session: &str,
    event: i64,
) {
    let mut args = notify_args(fallback);
    args.extend([
        "--session".to_string(),
        session.to_string(),
        "--event".into(),
        event.to_string(),
    ]);
    spawn_sender(note, asks, args);
}

/// The sender gets the note on its stdin: shown (bounded) first, so it always fits.
fn spawn_sender(note: &Note, asks: Option<&str>, args: Vec<String>) {
    let shown = note.shown();
    let sent = Sent {
        title: shown.title,
        body: shown.body,
        asks: asks.map(str::to_string),
    };
    let Ok(input) = serde_json::to_vec(&sent) else {
        return;
    };
    spawn_self(&args, &[], None, None, Some(input));
}

fn notify_args(fallback: &Fallback) -> Vec<String> {
    let mut args = vec!["notify".to_string(), "--stdin".into()];
    if let Some(c) = &fallback.command {
        args.extend(["--fallback-cmd".to_string(), c.clone()]);
    }
    if let Some(s) = &fallback.tmux_socket {
        args.extend(["--socket".to_string(), s.clone()]);
    }
    args
}

/// Starts this very binary with `args` in the background and returns at once: no
/// inherited pipes (a hook or a tmux `#()` job waits for its pipes to close), its own
/// process group (a job's end does not take it along). Never fails.
pub fn spawn_self_detached(args: &[String], env: &[(&str, &std::path::Path)]) {
    spawn_self(args, env, None, None, None);
}

/// [`spawn_self_detached`] in folder `cwd`, its output appended to `log`.
pub fn spawn_self_logged(
    args: &[String],
    env: &[(&str, &std::path::Path)],
    cwd: Option<&std::path::Path>,
    log: Option<&std::path::Path>,
) {
    spawn_self(args, env, cwd, log, None);
}

fn spawn_self(
    args: &[String],
    env: &[(&str, &std::path::Path)],
    cwd: Option<&std::path::Path>,
    log: Option<&std::path::Path>,
    input: Option<Vec<u8>>,
) {
    // A unit test's binary is not orchestra: what it would start is not a notification.
    if cfg!(test) {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let _ = crate::process::spawn_detached(&exe, args, cwd, env, log, input);
}

/// Sends `note` now, trying the desktop, then the commands, then tmux. Returns which way
/// it went.
pub fn send(note: &Note, fallback: &Fallback) -> &'static str {
    let note = &note.shown();
    if desktop::show(note) {
        return desktop::NAME;
    }
    let person = fallback
        .command
        .as_deref()
        .and_then(|c| shell_words::split(c).ok())
        .filter(|argv| !argv.is_empty())
        .map(|argv| ("command", argv));
    let own = desktop::COMMAND.and_then(|argv| {
        let program = *argv.first()?;
        Some((
            program,
            argv.iter().map(std::string::ToString::to_string).collect(),
        ))
    });
    for (via, argv) in person.into_iter().chain(own) {
        if run_command(argv, note) {
            return via;
        }
    }
    let message = format!("{}: {}", note.title, note.body);
    if crate::tmux::display_message(fallback.tmux_socket.as_deref(), &message) {
        return "tmux";
    }
    "none"
}

/// Runs `argv` with the note's title and body appended; whether it said it showed it.
fn run_command(mut argv: Vec<String>, note: &Note) -> bool {
    if argv.is_empty() {
        return false;
    }
    let program = argv.remove(0);
    Run::new(program, NOTIFY_CMD_DEADLINE)
        .args(argv)
        .arg(&note.title)
        .arg(&note.body)
        .quiet()
        .own_group()
        .status()
        .is_ok_and(|s| s.success())
}

/// What a person can do from a waiting session's notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Approve,
    Deny,
    Open,
}

impl Action {
    /// The key the bus reports back (the label is what the person sees).
    pub fn key(self) -> &'static str {
        match self {
            Action::Approve => "approve",
            Action::Deny => "deny",
            Action::Open => "open",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Action::Approve => "Approve",
            Action::Deny => "Deny",
            Action::Open => "Open",
        }
    }

    fn from_key(key: &str) -> Option<Action> {
        [Action::Approve, Action::Deny, Action::Open]
            .into_iter()
            .find(|a| a.key() == key)
    }
}

/// How long a notification's actions are waited for unless `@orchestra-notify-wait` says.
pub const ACTION_WAIT: Duration = Duration::from_secs(15 * 60);

/// What became of a notification shown with actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    Chose(Action),
    /// Closed by the person or the server, or answered with no action of ours.
    Dismissed,
    /// Nothing chosen within the bound: the notification was closed.
    GaveUp,
    /// What it asked was answered elsewhere (or another question came) first: the
    /// notification was closed, so no button is left that can only be refused.
    Outlived,
}

/// Whether this platform's notifications show actions here (D-Bus: the server's
/// capabilities say "actions"; osascript: never).
pub fn offers_actions() -> bool {
    desktop::offers_actions()
}

/// Shows `note` with `actions` and waits up to `bound` for the person to choose one; at
/// the bound, or once `still_asked` says no (asked every few seconds), the notification
/// is closed. `None`: it could not be shown with actions (send it plainly).
pub fn show_and_wait(
    note: &Note,
    actions: &[Action],
    bound: Duration,
    still_asked: &mut dyn FnMut() -> bool,
) -> Option<Waited> {
    desktop::show_and_wait(&note.shown(), actions, bound, still_asked)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for a notify program that writes each argument it got on a line of
    /// `log`, and succeeds.
    fn recorder(dir: &std::path::Path) -> (String, std::path::PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let script = dir.join("record.sh");
        let log = dir.join("argv");
        std::fs::write(
            &script,
            format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n", log.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        (script.to_string_lossy().into_owned(), log)
    }

    /// macOS's command, run here with a stand-in for osascript (there is none on Linux):
    /// the script stays fixed and the note's words arrive as its last two arguments,
    /// never inside the AppleScript, whatever they hold.
    #[test]
    fn the_macos_command_gets_the_notes_words_as_arguments_only() {
        let dir = tempfile::tempdir().unwrap();
        let (stand_in, log) = recorder(dir.path());
        let mut argv: Vec<String> = osascript::COMMAND
            .unwrap()
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert_eq!(argv[0], "osascript");
        argv[0] = stand_in;
        let note = Note {
            title: "-e orchestra: api is waiting".into(),
            body: "run: echo \"x\" & (item 1 of argv)".into(),
        };
        assert!(run_command(argv, &note));
        let got = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            got.lines().collect::<Vec<_>>(),
            [
                "-e",
                "on run argv",
                "-e",
                "display notification (item -1 of argv) with title (item -2 of argv)",
                "-e",
                "end run",
                "--",
                "-e orchestra: api is waiting",
                "run: echo \"x\" & (item 1 of argv)",
            ]
        );
        // Its notifications have no buttons: a waiting note goes out plainly.
        assert!(!osascript::offers_actions());
    }
}
