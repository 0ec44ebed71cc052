//! Desktop notifications: the ONLY caller of notify-rust. Sending happens in a detached
//! child process (`orchestra notify …`), so whoever records a transition — a hook, the
//! status line — never waits for a bus. Without a bus the fallbacks are the command in
//! `@orchestra-notify-cmd`, then tmux `display-message`; failing all, silence.

use std::time::Duration;

use crate::process::Run;

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

/// `text` as one short line to show, never to interpret: control characters (newlines,
/// escapes) become spaces, runs of spaces one, and past `max` characters it is cut with "…".
pub fn one_line(text: &str, max: usize) -> String {
    let spaced: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let line = words.join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Where to fall back to when there is no notification bus.
#[derive(Debug, Clone, Default)]
pub struct Fallback {
    /// `@orchestra-notify-cmd`: a command line; title and body are appended as arguments.
    pub command: Option<String>,
    /// The tmux socket for `display-message`.
    pub tmux_socket: Option<String>,
}

/// Starts a detached `orchestra notify` for `note` and returns at once. Never fails:
/// a notification that cannot be sent is not the caller's problem.
pub fn spawn(note: &Note, fallback: &Fallback) {
    let mut args = vec![
        "notify".to_string(),
        "--title".into(),
        note.title.clone(),
        "--body".into(),
        note.body.clone(),
    ];
    if let Some(c) = &fallback.command {
        args.extend(["--fallback-cmd".to_string(), c.clone()]);
    }
    if let Some(s) = &fallback.tmux_socket {
        args.extend(["--socket".to_string(), s.clone()]);
    }
    spawn_self_detached(&args, &[]);
}

/// Starts this very binary with `args` in the background and returns at once: no
/// inherited pipes (a hook or a tmux `#()` job waits for its pipes to close), its own
/// process group (a job's end does not take it along). Never fails.
pub fn spawn_self_detached(args: &[String], env: &[(&str, &std::path::Path)]) {
    spawn_self_logged(args, env, None, None);
}

/// [`spawn_self_detached`] in folder `cwd`, its output appended to `log`.
pub fn spawn_self_logged(
    args: &[String],
    env: &[(&str, &std::path::Path)],
    cwd: Option<&std::path::Path>,
    log: Option<&std::path::Path>,
) {
    // A unit test's binary is not orchestra: what it would start is not a notification.
    if cfg!(test) {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let _ = crate::process::spawn_detached(&exe, args, cwd, env, log);
}

/// Sends `note` now, trying the bus, then the fallbacks. Returns which way it went.
pub fn send(note: &Note, fallback: &Fallback) -> &'static str {
    if send_dbus(note) {
        return "dbus";
    }
    if let Some(command) = fallback.command.as_deref().filter(|c| !c.trim().is_empty()) {
        if let Ok(mut argv) = shell_words::split(command) {
            if !argv.is_empty() {
                let program = argv.remove(0);
                let ran = Run::new(program, NOTIFY_CMD_DEADLINE)
                    .args(argv)
                    .arg(&note.title)
                    .arg(&note.body)
                    .quiet()
                    .own_group()
                    .status();
                if ran.map(|s| s.success()).unwrap_or(false) {
                    return "command";
                }
            }
        }
    }
    let message = format!("{}: {}", note.title, note.body);
    if crate::tmux::display_message(fallback.tmux_socket.as_deref(), &message) {
        return "tmux";
    }
    "none"
}

fn send_dbus(note: &Note) -> bool {
    // No session bus to be found: do not let zbus go looking for one.
    let runtime_bus = std::env::var_os("XDG_RUNTIME_DIR")
        .map(|d| std::path::Path::new(&d).join("bus").exists())
        .unwrap_or(false);
    let address = std::env::var_os("DBUS_SESSION_BUS_ADDRESS").filter(|a| !a.is_empty());
    if address.is_none() && !runtime_bus {
        return false;
    }
    notify_rust::Notification::new()
        .appname("orchestra")
        .summary(&note.title)
        .body(&note.body)
        .timeout(notify_rust::Timeout::from(Duration::from_secs(10)))
        .show()
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_takes_out_control_characters_and_cuts_long_text() {
        assert_eq!(
            one_line("npm test\n\x1b[31mrm -rf /\x07\r\t x", 80),
            "npm test [31mrm -rf / x"
        );
        let long = "a".repeat(500);
        let cut = one_line(&long, 80);
        assert_eq!(cut.chars().count(), 80);
        assert!(cut.ends_with('…'));
        assert_eq!(one_line("  ", 80), "");
    }
}
