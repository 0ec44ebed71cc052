//! `orchestra tmux …`: the plugin's tmux side — key table, menus, status segment, badges,
//! pane hooks.

use std::path::Path;

use crate::cli::{Command, TmuxArgs, TmuxCommand};
use crate::cmd::{popup_orchestra, quietly, Context, Output};
use crate::error::Error;
use crate::state::Session;
use crate::term::Terminal;
use crate::tmux::format_literal;

/// The global option that holds the command line running this orchestra (shell words,
/// with its ORCHESTRA_HOME). Jobs, hooks, bindings and menu entries name it as
/// [`EXE_FORMAT`]: tmux pastes its value into the shell command as the last step of
/// expanding it, so no path is ever read by tmux's parser or as a format.
const EXE_OPTION: &str = "@orchestra-exe";
const EXE_FORMAT: &str = "#{@orchestra-exe}";
/// The placeholder users put in status-left/right.
const STATUS_PLACEHOLDER: &str = "#{orchestra_status}";
/// A fixed hook slot, so loading twice replaces instead of adding.
const HOOK_SLOT: &str = "4242";
const BADGE: &str = "#{?@orchestra_state, #{@orchestra_state},}";
/// The conflict radar's badge (`⚠2`), after the state's.
const CONFLICTS_BADGE: &str = "#{?@orchestra_conflicts, #{@orchestra_conflicts},}";
/// The budget's mark (`$` at 80 %, `$!` past `@orchestra-budget`), after the others.
const BUDGET_BADGE: &str = "#{?@orchestra_budget, #{@orchestra_budget},}";

const OPTIONS: &[&str] = &[
    "status-left",
    "status-right",
    "window-status-format",
    "window-status-current-format",
    "@orchestra-key",
    "@orchestra-key-next",
    "@orchestra-badge",
];

pub fn run(ctx: &Context, args: &TmuxArgs, out: &mut Output<'_>) -> Result<(), Error> {
    match &args.command {
        TmuxCommand::Init => init(ctx, out),
        TmuxCommand::Menu { client } => menu(ctx, client.as_deref()),
        TmuxCommand::Pick { action, client } => {
            let client = crate::cmd::resolve_client(&ctx.tmux(), client.as_deref())?;
            reported(ctx, pick(ctx, action, &client))
        }
        TmuxCommand::Act {
            action,
            session,
            task,
            client,
            yes,
        } => act(
            ctx,
            action,
            session.as_deref(),
            task.as_deref(),
            client,
            *yes,
        ),
        TmuxCommand::Ask {
            what,
            session,
            repo,
        } => ask(ctx, what, session.as_deref(), repo.as_deref(), out),
        TmuxCommand::NextWaiting { client } => next_waiting(ctx, client.as_deref(), out),
    }
}

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
    args.iter().map(|a| a.to_string()).collect()
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

/// One read, one write: everything the plugin sets up, idempotently.
fn init(ctx: &Context, out: &mut Output<'_>) -> Result<(), Error> {
    let tmux = ctx.tmux();
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
    if get("@orchestra-badge") != "off" {
        for format in ["window-status-format", "window-status-current-format"] {
            // Each badge once, also where an older init added only the first.
            let mut value = get(format);
            for (option, badge) in [
                ("@orchestra_state", BADGE),
                ("@orchestra_conflicts", CONFLICTS_BADGE),
                ("@orchestra_budget", BUDGET_BADGE),
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
    let key = Some(get("@orchestra-key"))
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
    let next = get("@orchestra-key-next");
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
    out.line(format!(
        "orchestra {} ready on {version} (prefix + {key})",
        env!("CARGO_PKG_VERSION")
    ));
    Ok(())
}

/// The top menu, drawn on `client`.
fn menu(ctx: &Context, client: Option<&str>) -> Result<(), Error> {
    let tmux = ctx.tmux();
    let client = crate::cmd::resolve_client(&tmux, client)?;
    let act = |action: &str| menu_entry(&["tmux", "act", action, "--client", &client]);
    let pick = |action: &str| menu_entry(&["tmux", "pick", action, "--client", &client]);
    let mut items = vec![
        // Free text is asked in a popup by orchestra itself, never by a tmux prompt.
        ("Dispatch…", "d", act("dispatch")),
        ("Review…", "r", pick("review")),
        ("Merge…", "m", pick("merge")),
        ("Brief…", "b", pick("brief")),
        ("Approve", "a", pick("approve")),
        ("Deny", "n", pick("deny")),
        ("Dashboard", "w", act("watch")),
        // The conflict radar's pairs of the current pane's repo.
        ("Conflicts", "c", act("conflicts")),
        // Every session of the current pane's repo, remote hosts included.
        ("Status", "s", act("status")),
        (
            "Next waiting",
            "j",
            menu_entry(&["tmux", "next-waiting", "--client", &client]),
        ),
        ("Kill…", "k", pick("kill")),
    ];
    // The tracker's open tasks (pick → dispatch), for a repo with a task source only.
    if client_repo(&tmux, &client)
        .ok()
        .and_then(|repo| crate::tasks::work::configured(&repo).ok().flatten())
        .is_some()
    {
        items.insert(1, ("Tasks…", "t", pick("tasks")));
    }
    let mut args = strings(&[
        "display-menu",
        "-c",
        &client,
        "-T",
        "#[align=centre] orchestra ",
        "-x",
        "C",
        "-y",
        "C",
    ]);
    for (label, key, command) in items {
        args.extend([label.to_string(), key.to_string(), command]);
    }
    // The entries name this very binary, also when the menu was opened without `init`.
    tmux.run_commands(&[strings(&["set-option", "-g", EXE_OPTION, &exe()?]), args])?;
    Ok(())
}

/// A sub-menu of the sessions of the repo `client` looks at; choosing one runs `action`
/// on it (by its id: no path or label travels through tmux).
fn pick(ctx: &Context, action: &str, client: &str) -> Result<Option<String>, Error> {
    let tmux = ctx.tmux();
    let repo = client_repo(&tmux, client)?;
    if action == "tasks" {
        return pick_task(&tmux, &repo, client);
    }
    let sessions = ctx.store()?.sessions(Some(&repo.id()), false)?;
    let mut args = strings(&[
        "display-menu",
        "-c",
        client,
        "-T",
        &format!("#[align=centre] {} ", format_literal(action)),
    ]);
    for (i, s) in sessions.iter().enumerate() {
        let key = char::from_digit(((i + 1) % 10) as u32, 10)
            .map(String::from)
            .unwrap_or_default();
        args.extend([
            format_literal(&format!("{} ({})", s.label, s.state)),
            key,
            menu_entry(&[
                "tmux",
                "act",
                action,
                "--session",
                &s.id,
                "--client",
                client,
            ]),
        ]);
    }
    if sessions.is_empty() {
        args.extend(["no sessions".to_string(), String::new(), String::new()]);
    }
    tmux.run_commands(&[args])?;
    Ok(None)
}

/// A sub-menu of the open tasks of `repo`; choosing one picks it and dispatches a session
/// on it (the task by its id: no title travels through tmux as a command).
fn pick_task(
    tmux: &crate::tmux::Tmux,
    repo: &crate::git::Repo,
    client: &str,
) -> Result<Option<String>, Error> {
    let (_, source) = crate::tasks::work::source_of(repo)?;
    let open = source
        .open_tasks()
        .map_err(crate::tasks::work::task_error)?;
    let mut args = strings(&["display-menu", "-c", client, "-T", "#[align=centre] tasks "]);
    for (i, task) in open.iter().take(40).enumerate() {
        let key = char::from_digit(((i + 1) % 10) as u32, 10)
            .filter(|_| i < 10)
            .map(String::from)
            .unwrap_or_default();
        // A name starting with `-` is drawn disabled.
        let name = format!(" {}", crate::tasks::one_line(&task.title, 60));
        args.extend([
            format_literal(&name),
            key,
            menu_entry(&[
                "tmux", "act", "task", "--task", &task.id, "--client", client,
            ]),
        ]);
    }
    if open.is_empty() {
        args.extend(["no open tasks".to_string(), String::new(), String::new()]);
    }
    tmux.run_commands(&[args])?;
    Ok(None)
}

/// A menu entry's action for `client`: a popup, the kill confirmation, or the command
/// itself with its outcome shown as a message.
fn act(
    ctx: &Context,
    action: &str,
    session: Option<&str>,
    task: Option<&str>,
    client: &str,
    yes: bool,
) -> Result<(), Error> {
    let result = (|| {
        let tmux = ctx.tmux();
        match action {
            "task" => {
                let repo = client_repo(&tmux, client)?;
                let id =
                    task.ok_or_else(|| Error::BadInput("this action needs --task ID".into()))?;
                let args = crate::cli::PickArgs {
                    id: id.to_string(),
                    dispatch: true,
                    label: None,
                    agent: None,
                    repo: crate::cli::RepoArg { repo: None },
                };
                let picked = quietly(|quiet| super::pick_task(ctx, &repo, &args, quiet))?;
                return Ok(Some(picked));
            }
            "dispatch" | "status" | "conflicts" => {
                let repo = client_repo(&tmux, client)?;
                let dir = repo.main_worktree().to_string_lossy().into_owned();
                let args = ["tmux", "ask", action, "--repo", &dir];
                popup_orchestra(
                    ctx,
                    Some(client),
                    repo.main_worktree(),
                    &format!(" {action} "),
                    &args,
                )?;
                return Ok(None);
            }
            "watch" => {
                let cwd = tmux
                    .global_values_for_client(client, &["pane_current_path"])?
                    .remove(0);
                let cwd = if cwd.is_empty() { "/".to_string() } else { cwd };
                popup_orchestra(
                    ctx,
                    Some(client),
                    Path::new(&cwd),
                    " dashboard ",
                    &["watch"],
                )?;
                return Ok(None);
            }
            _ => {}
        }
        let session = menu_session(ctx, session)?;
        let (label, repo) = (session.label.as_str(), session.repo.as_str());
        let repo_arg = || crate::cli::RepoArg {
            repo: Some(repo.into()),
        };
        match action {
            "review" | "merge" => {
                // A refusal now is a message; in the popup it would vanish with it.
                let opened = crate::cmd::open_repo(Some(Path::new(repo)))?;
                crate::session::find_branch_session(&ctx.store()?, &opened, label, action)?;
                let title = format!(" {action} {label} ");
                let args = [action, label, "--repo", repo];
                popup_orchestra(ctx, Some(client), Path::new(repo), &title, &args)?;
                Ok(None)
            }
            "brief" => {
                let args = ["tmux", "ask", "brief", "--session", &session.id];
                let title = format!(" brief {label} ");
                popup_orchestra(ctx, Some(client), Path::new(repo), &title, &args)?;
                Ok(None)
            }
            "approve" => outcome(|out| {
                let args = crate::cli::ApproveArgs {
                    label: label.to_string(),
                    always: false,
                    repo: repo_arg(),
                };
                super::run(ctx, &Command::Approve(args), out)
            }),
            "deny" => outcome(|out| {
                let args = crate::cli::DenyArgs {
                    label: label.to_string(),
                    repo: repo_arg(),
                };
                super::run(ctx, &Command::Deny(args), out)
            }),
            "kill" if !yes => {
                confirm_kill(ctx, client, &session)?;
                Ok(None)
            }
            "kill" => outcome(|out| {
                let args = crate::cli::KillArgs {
                    label: label.to_string(),
                    repo: repo_arg(),
                    force: false,
                };
                super::run(ctx, &Command::Kill(args), out)
            }),
            other => Err(Error::BadInput(format!("no menu action {other:?}"))),
        }
    })();
    reported(ctx, result)
}

/// "kill LABEL?" as a menu on `client`: y kills, anything else leaves it.
fn confirm_kill(ctx: &Context, client: &str, session: &Session) -> Result<(), Error> {
    let label = format_literal(&session.label);
    let yes = menu_entry(&[
        "tmux",
        "act",
        "kill",
        "--session",
        &session.id,
        "--client",
        client,
        "--yes",
    ]);
    let args = strings(&[
        "display-menu",
        "-c",
        client,
        "-T",
        &format!("#[align=centre] kill {label}? "),
        &format!("Yes, kill {label}"),
        "y",
        &yes,
        "No",
        "n",
        "",
    ]);
    ctx.tmux().run_commands(&[args])?;
    Ok(())
}

/// The session a menu entry names by id; it may have gone since the menu was drawn.
fn menu_session(ctx: &Context, id: Option<&str>) -> Result<Session, Error> {
    let id = id.ok_or_else(|| Error::BadInput("this action needs --session ID".into()))?;
    ctx.store()?.session_by_id(id)?.ok_or_else(|| {
        Error::Refused("that session is gone (killed or merged since the menu was drawn)".into())
    })
}

/// Runs a command for a menu: what it prints becomes the message (`run-shell` would open
/// its output over the pane).
fn outcome(f: impl FnOnce(&mut Output<'_>) -> Result<(), Error>) -> Result<Option<String>, Error> {
    let (mut out, mut err) = (Vec::new(), std::io::sink());
    f(&mut Output {
        out: &mut out,
        err: &mut err,
    })?;
    let text = String::from_utf8_lossy(&out);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    Ok((!lines.is_empty()).then(|| lines.join("; ")))
}

/// Inside a menu's popup, on its terminal: ask and act (dispatch: a title and a task;
/// brief: the text), or show `status` until Enter.
fn ask(
    ctx: &Context,
    what: &str,
    session: Option<&str>,
    repo: Option<&Path>,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    let result = match what {
        "dispatch" => ask_dispatch(ctx, repo),
        "brief" => ask_brief(ctx, session),
        "status" => return show_status(ctx, repo, out),
        "conflicts" => return show_conflicts(ctx, repo, out),
        other => Err(Error::BadInput(format!("nothing to ask for {other:?}"))),
    };
    reported(ctx, result)
}

fn terminal_error(e: std::io::Error) -> Error {
    Error::Io {
        context: "reading the popup's terminal".into(),
        source: e,
    }
}

fn ask_dispatch(ctx: &Context, repo: Option<&Path>) -> Result<Option<String>, Error> {
    let repo = crate::cmd::open_repo(repo)?;
    let mut term = Terminal::open().map_err(terminal_error)?;
    term.say(format!(
        "Dispatch an agent in {}",
        repo.main_worktree().display()
    ));
    let label = loop {
        let title = term
            .ask("title: ", "Enter: next · Esc: cancel", false)
            .map_err(terminal_error)?;
        let Some(title) = title.filter(|t| !t.trim().is_empty()) else {
            return Ok(None);
        };
        let label = crate::label::slug(&title)
            .map_err(Error::from)
            .and_then(|slug| crate::session::free_label(ctx, &repo, &slug));
        match label {
            Ok(label) => break label,
            Err(e) => term.say(format!("{e}: try another title")),
        }
    };
    term.say(format!("label: {label}"));
    let Some(task) = term
        .ask(
            "task: ",
            "Enter: dispatch · Ctrl-J: new line · Esc: cancel",
            true,
        )
        .map_err(terminal_error)?
    else {
        return Ok(None);
    };
    // The terminal stays raw until the work is done: a Ctrl-C now is a byte, not a signal
    // that would stop the dispatch half-way.
    term.show(&format!("dispatching {label}…"))
        .map_err(terminal_error)?;
    let args = crate::cli::DispatchArgs {
        label,
        repo: crate::cli::RepoArg {
            repo: Some(repo.main_worktree().to_path_buf()),
        },
        prompt: Some(task).filter(|t| !t.trim().is_empty()),
        prompt_file: None,
        base: None,
        agent: None,
        kind: None,
        no_hooks: false,
        after: Vec::new(),
        from_upstream: false,
        wait_setup: false,
    };
    let label = args.label.clone();
    quietly(|quiet| super::run(ctx, &Command::Dispatch(args), quiet))?;
    Ok(Some(format!("dispatched {label}")))
}

fn ask_brief(ctx: &Context, session: Option<&str>) -> Result<Option<String>, Error> {
    let session = menu_session(ctx, session)?;
    let mut term = Terminal::open().map_err(terminal_error)?;
    let text = term
        .ask(
            &format!("brief {}: ", session.label),
            "Enter: send · Ctrl-J: new line · Esc: cancel",
            true,
        )
        .map_err(terminal_error)?;
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    term.show("sending…").map_err(terminal_error)?;
    // The text as typed: brief_one, not `brief`, which would read `@FILE`.
    crate::session::brief::brief_one(ctx, &session, &text, false)?;
    Ok(Some(format!("briefed {}", session.label)))
}

/// What `show` prints, kept on the popup's screen until Enter (an error as its message).
fn until_enter(
    out: &mut Output<'_>,
    show: impl FnOnce(&mut Output<'_>) -> Result<(), Error>,
) -> Result<(), Error> {
    if let Err(e) = show(out) {
        out.line(format!("orchestra: {e}"));
    }
    out.line("\n(Enter closes)");
    let _ = std::io::stdin().read_line(&mut String::new());
    Ok(())
}

/// `orchestra status` of `repo`, until Enter.
fn show_status(ctx: &Context, repo: Option<&Path>, out: &mut Output<'_>) -> Result<(), Error> {
    let args = crate::cli::StatusArgs {
        manifest: crate::cli::ManifestArg {
            config: None,
            repo: repo.map(Path::to_path_buf),
        },
        json: false,
    };
    until_enter(out, |out| super::run(ctx, &Command::Status(args), out))
}

/// `orchestra conflicts` of `repo`, until Enter.
fn show_conflicts(ctx: &Context, repo: Option<&Path>, out: &mut Output<'_>) -> Result<(), Error> {
    let args = crate::cli::ConflictsArgs {
        repo: crate::cli::RepoArg {
            repo: repo.map(Path::to_path_buf),
        },
        json: false,
    };
    until_enter(out, |out| super::run(ctx, &Command::Conflicts(args), out))
}

/// Moves `client` to the next window (after the current one) whose agent is waiting.
fn next_waiting(ctx: &Context, client: Option<&str>, out: &mut Output<'_>) -> Result<(), Error> {
    let tmux = ctx.tmux();
    let panes = tmux.list_panes()?;
    let waiting: Vec<&crate::tmux::Pane> = panes
        .iter()
        .filter(|p| p.orchestra_state == "waiting")
        .collect();
    let Some(first) = waiting.first() else {
        out.line("no window is waiting for you");
        return Ok(());
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
    out.line(format!("{} is waiting", target.window));
    Ok(())
}

/// The repository of the pane `client` is looking at.
fn client_repo(tmux: &crate::tmux::Tmux, client: &str) -> Result<crate::git::Repo, Error> {
    let path = tmux.global_values_for_client(client, &["pane_current_path"])?;
    crate::cmd::open_repo(Some(Path::new(&path[0])))
}

/// A menu action's outcome as a tmux message: what went wrong, or what was done (output
/// printed by a `run-shell` would open over the pane instead). The error is returned
/// only when no message could be shown.
fn reported(ctx: &Context, result: Result<Option<String>, Error>) -> Result<(), Error> {
    let message = match &result {
        Err(e) => format!("orchestra: {e}"),
        Ok(Some(done)) => format!("orchestra: {done}"),
        Ok(None) => return Ok(()),
    };
    let socket = ctx.server.socket.as_ref().map(|p| p.to_string_lossy());
    if crate::tmux::display_message(socket.as_deref(), &message) {
        return Ok(());
    }
    result.map(|_| ())
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
