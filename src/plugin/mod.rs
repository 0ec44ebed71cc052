//! The tmux plugin's side of orchestra: what `tmux init` sets up (the option naming this
//! binary, the status segment, badges, pane hooks, key bindings), the menus and what their
//! entries do (menu.rs), the questions asked in a popup (ask.rs), popups that run
//! orchestra, and the move to the next waiting window. Every string handed to tmux is
//! escaped here for each layer that reads it; the tmux calls themselves are tmux/'s.

pub mod ask;
pub mod menu;

use std::path::Path;

use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
use crate::tmux::{format_literal, Tmux, WindowId};

/// The global option that holds the command line running this orchestra (shell words,
/// with its ORCHESTRA_HOME). Jobs, hooks, bindings and menu entries name it as
/// [`EXE_FORMAT`]: tmux pastes its value into the shell command as the last step of
/// expanding it, so no path is ever read by tmux's parser or as a format.
const EXE_OPTION: &str = crate::tmux::options::EXE;
const EXE_FORMAT: &str = "#{@orchestra-exe}";
/// The placeholder users put in status-left/right.
const STATUS_PLACEHOLDER: &str = "#{orchestra_status}";
/// A fixed hook slot, so loading twice replaces instead of adding.
const HOOK_SLOT: &str = "4242";
const BADGE: &str = "#{?@orchestra_state, #{@orchestra_state},}";
/// The conflict radar's badge (`⚠2`), after the state's.
const CONFLICTS_BADGE: &str = "#{?@orchestra_conflicts, #{@orchestra_conflicts},}";
/// The pull request's mark (`#12✗`), after the radar's.
const PR_BADGE: &str = "#{?@orchestra_pr, #{@orchestra_pr},}";
/// The sandbox's mark (`[sandboxed yolo]`), after the state's.
const SANDBOX_BADGE: &str = "#{?@orchestra_sandbox, [#{@orchestra_sandbox}],}";
/// The budget's mark (`$` at 80 %, `$!` past `@orchestra-budget`), after the others.
const BUDGET_BADGE: &str = "#{?@orchestra_budget, #{@orchestra_budget},}";

const OPTIONS: &[&str] = &[
    "status-left",
    "status-right",
    "window-status-format",
    "window-status-current-format",
    crate::tmux::options::KEY,
    crate::tmux::options::KEY_NEXT,
    crate::tmux::options::BADGE,
];

/// The command line that runs this orchestra from tmux, as shell words: its absolute
/// path, and the ORCHESTRA_HOME it was set up with when one was given.
fn exe() -> Result<String, Error> {
    let path = std::env::current_exe().map_err(Error::io("finding the orchestra binary"))?;
    let exe = shell_words::quote(&path.to_string_lossy()).into_owned();
    Ok(match crate::paths::non_empty_env("ORCHESTRA_HOME") {
        Some(home) => format!("env ORCHESTRA_HOME={} {exe}", shell_words::quote(&home)),
        None => exe,
    })
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(ToString::to_string).collect()
}

// Every string handed to tmux passes some of these layers, each escaped for here:
// - formats (run-shell's command, #() jobs, display-menu's entries, names and title, a
//   popup's -d and -T): `#` starts one, `##` is a `#`;
// - the command parser (menu entries, hooks): `$VAR`, `~`, `;`, `"` and `\` mean
//   something, except inside single quotes;
// - the shell (run-shell, #() jobs, display-popup's command): shell words.

/// `text` as one word for tmux's command parser: single-quoted, a `'` as `'\''`.
fn parser_word(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The shell command of a `run-shell` or `#()` job (which expand it as a format first):
/// this orchestra with `args`, each reaching it exactly, then `tail`, a format of tmux's
/// own (e.g. ` #{q:client_name}`).
fn orchestra_job(args: &[&str], tail: &str) -> String {
    let words = format_literal(&shell_words::join(args));
    format!("{EXE_FORMAT} {words}{tail}")
}

/// A display-menu entry that runs this orchestra with `args`. The entry is expanded as a
/// format when the menu is drawn and parsed when chosen; run-shell expands its command
/// once more and hands it to the shell.
fn menu_entry(args: &[&str]) -> String {
    let command = format!("run-shell -b {}", parser_word(&orchestra_job(args, "")));
    format_literal(&command)
}

/// What `init` set up: the tmux version it found and the key that opens the menu.
pub struct Ready {
    pub version: String,
    pub key: String,
}

/// One read, one write: everything the plugin sets up, idempotently.
pub fn init(tmux: &Tmux) -> Result<Ready, Error> {
    let version = tmux.check_version()?;
    let values = tmux.global_values(OPTIONS)?;
    let get = |name: &str| values[OPTIONS.iter().position(|o| *o == name).unwrap_or(0)].clone();
    let mut commands = vec![strings(&["set-option", "-g", EXE_OPTION, &exe()?])];

    let status = format!("#({})", orchestra_job(&["status-line"], ""));
    for side in ["status-left", "status-right"] {
        let value = get(side);
        if value.contains(STATUS_PLACEHOLDER) {
            commands.push(strings(&[
                "set-option",
                "-g",
                side,
                &value.replace(STATUS_PLACEHOLDER, &status),
            ]));
        }
    }
    if get(crate::tmux::options::BADGE) != "off" {
        for format in ["window-status-format", "window-status-current-format"] {
            // Each badge once, also where an older init added only the first.
            let mut value = get(format);
            for (option, badge) in [
                (crate::tmux::options::WINDOW_STATE, BADGE),
                (crate::tmux::options::WINDOW_SANDBOX, SANDBOX_BADGE),
                (crate::tmux::options::WINDOW_CONFLICTS, CONFLICTS_BADGE),
                (crate::tmux::options::WINDOW_PR, PR_BADGE),
                (crate::tmux::options::WINDOW_BUDGET, BUDGET_BADGE),
            ] {
                if !value.contains(option) {
                    value.push_str(badge);
                }
            }
            if value != get(format) {
                commands.push(strings(&["set-option", "-gw", format, &value]));
            }
        }
    }
    for hook in ["pane-died", "pane-exited"] {
        // One level of formats, expanded with the dying pane as the target (a nested
        // if-shell loses it under load). Panes that are not ours pass an empty id.
        let job = orchestra_job(
            &["event", "--from-hook"],
            &format!(" --session=#{{q:@orchestra_id}} {hook}"),
        );
        // Pane hooks live with the window options: -gw (plain -g misses them inside tmux).
        commands.push(strings(&[
            "set-hook",
            "-gw",
            &format!("{hook}[{HOOK_SLOT}]"),
            &format!("run-shell -b {}", parser_word(&job)),
        ]));
    }
    let key = Some(get(crate::tmux::options::KEY))
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| "O".into());
    // A binding's command is kept as arguments (never parsed); run-shell expands it.
    let client = " #{q:client_name}";
    commands.push(strings(&[
        "bind-key",
        "-T",
        "prefix",
        &key,
        "run-shell",
        "-b",
        &orchestra_job(&["tmux", "menu", "--client"], client),
    ]));
    let next = get(crate::tmux::options::KEY_NEXT);
    if !next.is_empty() {
        commands.push(strings(&[
            "bind-key",
            "-T",
            "prefix",
            &next,
            "run-shell",
            "-b",
            &orchestra_job(&["tmux", "next-waiting", "--client"], client),
        ]));
    }
    tmux.run_commands(&commands)?;
    Ok(Ready { version, key })
}

/// Runs this orchestra with `args` in a tmux popup on `client` (else the most recently
/// active client), with this process's ORCHESTRA_HOME and tmux server. The command is
/// shell words: display-popup hands it to the shell unexpanded, and no tmux parser reads it.
pub fn popup_orchestra(
    ctx: &Context,
    client: Option<&str>,
    cwd: &Path,
    title: &str,
    args: &[impl AsRef<str>],
) -> Result<(), Error> {
    let tmux = ctx.tmux();
    let client = resolve_client(&tmux, client)?;
    let exe = std::env::current_exe().map_err(Error::io("finding the orchestra binary"))?;
    let mut words = vec![
        "env".to_string(),
        format!("ORCHESTRA_HOME={}", ctx.home.display()),
    ];
    if let Some(socket) = &ctx.server.socket {
        words.push(format!("ORCHESTRA_TMUX_SOCKET={}", socket.display()));
    }
    let dir = ctx.home.join("popups");
    crate::paths::private_dir(&dir).map_err(Error::io("making the popups folder"))?;
    let word = dir.join(uuid::Uuid::new_v4().simple().to_string());
    words.push(format!("{POPUP_WORD_VAR}={}", word.display()));
    words.push(exe.to_string_lossy().into_owned());
    words.extend(args.iter().map(|a| a.as_ref().to_string()));
    let command = shell_words::join(&words);
    // display-popup takes a title from tmux 3.3 on.
    let titled = tmux
        .check_version()
        .map(|v| crate::tmux::parse_version(&v).is_none_or(|v| v >= (3, 3)))
        .unwrap_or(true);
    let shown = tmux.popup(&client, cwd, if titled { title } else { "" }, &command);
    let said = std::fs::read_to_string(&word).ok();
    let _ = std::fs::remove_file(&word);
    match said.as_deref().and_then(parse_word) {
        Some((0, _)) => Ok(()),
        Some((_, "")) => Err(Error::CheckFailed),
        Some((2, message)) => Err(Error::BadInput(message.to_string())),
        Some((_, message)) => Err(Error::Refused(message.to_string())),
        // No word: the command never ended by itself (Ctrl-C, or the popup closed over
        // it). The person left it; tmux's status of the popup is no message of ours.
        None => match shown {
            Err(crate::tmux::TmuxError::Failed { message, .. }) if message.is_empty() => Ok(()),
            other => Ok(other?),
        },
    }
}

/// The variable naming the file where orchestra run in a popup leaves its word (exit
/// status, then its error) for the orchestra that opened the popup: the popup closes as
/// its command ends, and what that command said must still reach the person.
const POPUP_WORD_VAR: &str = "ORCHESTRA_POPUP_WORD";

static POPUP_WORD: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();

/// Takes the popup's word file out of the environment (main calls this first, before any
/// thread or child): only this process answers to it, no child it starts.
pub fn take_popup_word() {
    let path = std::env::var_os(POPUP_WORD_VAR)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from);
    if path.is_some() {
        std::env::remove_var(POPUP_WORD_VAR);
    }
    let _ = POPUP_WORD.set(path);
}

/// Leaves this command's outcome for the orchestra whose popup runs it (nothing when not
/// run in one): `code`, its exit status, and `message`, what it printed as its error.
pub fn leave_popup_word(code: u8, message: &str) {
    if let Some(Some(path)) = POPUP_WORD.get() {
        let _ = crate::paths::write_private(path, format!("{code}\n{message}"));
    }
}

/// A popup's word: its exit status and its error (empty when it had none).
fn parse_word(text: &str) -> Option<(u8, &str)> {
    let (code, message) = text.split_once('\n')?;
    Some((code.parse().ok()?, message.trim_end()))
}

/// `client`, else the attached client that was active most recently.
pub fn resolve_client(tmux: &Tmux, client: Option<&str>) -> Result<String, Error> {
    match client {
        Some(c) => Ok(c.to_string()),
        None => tmux
            .most_recent_client()?
            .ok_or_else(|| Error::Refused("no tmux client is attached to show it on".into())),
    }
}

/// The folder of the pane `client` is looking at (`None` when tmux names none).
fn client_folder(tmux: &Tmux, client: &str) -> Result<Option<String>, Error> {
    let cwd = tmux
        .global_values_for_client(client, &["pane_current_path"])?
        .remove(0);
    Ok(Some(cwd).filter(|c| !c.is_empty()))
}

/// The repository of the pane `client` is looking at.
fn client_repo(tmux: &Tmux, client: &str) -> Result<Repo, Error> {
    let cwd = client_folder(tmux, client)?.unwrap_or_default();
    Ok(Repo::discover(Path::new(&cwd))?)
}

/// Moves `client` to the next window (after the current one) whose agent is waiting:
/// that window, or `None` when none is waiting.
pub fn next_waiting(tmux: &Tmux, client: Option<&str>) -> Result<Option<WindowId>, Error> {
    let panes = tmux.list_panes()?;
    let waiting: Vec<&crate::tmux::Pane> = panes
        .iter()
        .filter(|p| p.orchestra_state == "waiting")
        .collect();
    let Some(first) = waiting.first() else {
        return Ok(None);
    };
    let current = match client {
        Some(c) => tmux.window_of_client(c)?,
        None => None,
    };
    let target = current
        .and_then(|w| waiting.iter().position(|p| p.window == w))
        .map(|i| waiting[(i + 1) % waiting.len()])
        .unwrap_or(first);
    tmux.switch_client_to(client, &target.session_name, &target.window)?;
    Ok(Some(target.window.clone()))
}

/// `message` in the status line of this process's tmux server; false when it could not
/// be shown.
pub fn show_message(ctx: &Context, message: &str) -> bool {
    let socket = ctx.server.socket.as_ref().map(|p| p.to_string_lossy());
    crate::tmux::display_message(socket.as_deref(), message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_words_keep_everything_literal() {
        assert_eq!(parser_word("a b"), "'a b'");
        assert_eq!(parser_word("it's"), r"'it'\''s'");
        assert_eq!(parser_word("$HOME ~ \" ; \\"), "'$HOME ~ \" ; \\'");
    }

    #[test]
    fn a_popups_word_is_its_status_and_its_error() {
        assert_eq!(parse_word("0\n"), Some((0, "")));
        assert_eq!(
            parse_word("1\nnot merged: session/a stays as it is\n"),
            Some((1, "not merged: session/a stays as it is"))
        );
        assert_eq!(
            parse_word("2\nno session labelled \"x\""),
            Some((2, "no session labelled \"x\""))
        );
        assert_eq!(parse_word(""), None);
        assert_eq!(parse_word("x\ny"), None);
    }

    #[test]
    fn menu_entries_escape_each_layer() {
        let entry = menu_entry(&["tmux", "act", "kill", "--client", "/dev/pts/1 #(x)"]);
        // Drawing the menu halves the #s; the parser takes the single quotes away;
        // run-shell halves the #s again, except in the option's name, expanded there.
        assert_eq!(
            entry,
            r"run-shell -b '##{@orchestra-exe} tmux act kill --client '\''/dev/pts/1 ####(x)'\'''"
        );
    }
}
