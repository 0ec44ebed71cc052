//! `orchestra tmux …`: the plugin's tmux side — key table, menus, status segment, badges,
//! pane hooks.

use crate::cli::{TmuxArgs, TmuxCommand};
use crate::cmd::{Context, Output};
use crate::error::Error;

/// The placeholder users put in status-left/right.
const STATUS_PLACEHOLDER: &str = "#{orchestra_status}";
/// A fixed hook slot, so loading twice replaces instead of adding.
const HOOK_SLOT: &str = "4242";
const BADGE: &str = "#{?@orchestra_state, #{@orchestra_state},}";

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
        TmuxCommand::Pick { action, client } => pick(ctx, action, client.as_deref()),
        TmuxCommand::AskTask { client } => ask(
            ctx,
            client,
            "task:",
            "@orchestra-input-task",
            &format!("tmux dispatch-input --client '{client}'"),
        ),
        TmuxCommand::DispatchInput { client } => dispatch_input(ctx, client, out),
        TmuxCommand::BriefInput { label, client } => brief_input(ctx, label, client, out),
        TmuxCommand::NextWaiting { client } => next_waiting(ctx, client.as_deref(), out),
    }
}

/// The command line that runs this orchestra from tmux (jobs, hooks, bindings): its
/// absolute path, and the ORCHESTRA_HOME it was set up with when one was given.
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

/// One read, one write: everything the plugin sets up, idempotently.
fn init(ctx: &Context, out: &mut Output<'_>) -> Result<(), Error> {
    let tmux = ctx.tmux();
    let version = tmux.check_version()?;
    let values = tmux.global_values(OPTIONS)?;
    let get = |name: &str| values[OPTIONS.iter().position(|o| *o == name).unwrap_or(0)].clone();
    let exe = exe()?;
    let mut commands = Vec::new();

    let status = format!("#({exe} status-line)");
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
            let value = get(format);
            if !value.contains("@orchestra_state") {
                commands.push(strings(&[
                    "set-option",
                    "-gw",
                    format,
                    &format!("{value}{BADGE}"),
                ]));
            }
        }
    }
    for hook in ["pane-died", "pane-exited"] {
        // One level of formats, expanded with the dying pane as the target (a nested
        // if-shell loses it under load). Panes that are not ours pass an empty id.
        let action = format!(
            "run-shell -b \"{exe} event --from-hook --session '#{{@orchestra_id}}' {hook}\""
        );
        // Pane hooks live with the window options: -gw (plain -g misses them inside tmux).
        commands.push(strings(&[
            "set-hook",
            "-gw",
            &format!("{hook}[{HOOK_SLOT}]"),
            &action,
        ]));
    }
    let key = Some(get("@orchestra-key"))
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| "O".into());
    commands.push(strings(&[
        "bind-key",
        "-T",
        "prefix",
        &key,
        "run-shell",
        "-b",
        &format!("{exe} tmux menu --client '#{{client_name}}'"),
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
            &format!("{exe} tmux next-waiting --client '#{{client_name}}'"),
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
    let exe = exe()?;
    let pick =
        |action: &str| format!("run-shell -b \"{exe} tmux pick {action} --client '{client}'\"");
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
    let items: Vec<(String, &str, String)> = vec![
        (
            "Dispatch…".into(),
            "d",
            // Answers go into options, escaped by tmux (%%%), never into a shell string.
            prompt_command(
                "title:",
                "@orchestra-input-title",
                &exe,
                &format!("tmux ask-task --client '{client}'"),
            ),
        ),
        ("Review…".into(), "r", pick("review")),
        ("Merge…".into(), "m", pick("merge")),
        ("Brief…".into(), "b", pick("brief")),
        ("Approve".into(), "a", pick("approve")),
        ("Deny".into(), "n", pick("deny")),
        (
            "Dashboard".into(),
            "w",
            format!("display-popup -E -w 90% -h 80% \"{exe} watch\""),
        ),
        (
            // Every session of the current pane's repo, remote hosts included.
            "Status".into(),
            "s",
            format!(
                "display-popup -E -w 90% -h 80% -d '#{{pane_current_path}}' \"{exe} status; printf '\\\\n(Enter closes)'; read _\""
            ),
        ),
        (
            "Next waiting".into(),
            "j",
            format!("run-shell -b \"{exe} tmux next-waiting --client '{client}'\""),
        ),
        ("Kill…".into(), "k", pick("kill")),
    ];
    for (label, key, command) in items {
        args.extend([label, key.to_string(), command]);
    }
    tmux.run_commands(&[args])?;
    Ok(())
}

/// A sub-menu of the repo's sessions; choosing one runs `action` on it.
fn pick(ctx: &Context, action: &str, client: Option<&str>) -> Result<(), Error> {
    let tmux = ctx.tmux();
    let client = crate::cmd::resolve_client(&tmux, client)?;
    let repo = client_repo(&tmux, &client)?;
    let store = ctx.store()?;
    let sessions = store.sessions(Some(&repo.id()), false)?;
    let exe = exe()?;
    let repo_arg = shell_words::quote(&repo.main_worktree().to_string_lossy()).into_owned();
    let repo_arg = repo_arg.replace('"', "\\\"");
    let mut args = strings(&[
        "display-menu",
        "-c",
        &client,
        "-T",
        &format!("#[align=centre] {action} "),
    ]);
    for (i, s) in sessions.iter().enumerate() {
        let key = char::from_digit(((i + 1) % 10) as u32, 10)
            .map(String::from)
            .unwrap_or_default();
        // Output would open in the pane; errors (stderr) still show.
        let run = |cmd: &str| {
            format!(
                "run-shell -b \"{exe} {cmd} {} --repo {repo_arg} >/dev/null\"",
                s.label
            )
        };
        let command = match action {
            "review" => format!(
                "display-popup -E -w 90% -h 90% \"{exe} review {} --repo {repo_arg}\"",
                s.label
            ),
            "merge" => format!(
                "display-popup -E -w 90% -h 90% \"{exe} merge {} --repo {repo_arg}\"",
                s.label
            ),
            "brief" => prompt_command(
                &format!("brief {}:", s.label),
                "@orchestra-input-text",
                &exe,
                &format!("tmux brief-input {} --client '{client}'", s.label),
            ),
            "kill" => format!(
                "confirm-before -p \"kill {}? (y/n)\" \"{}\"",
                s.label,
                run("kill").replace('"', "\\\"")
            ),
            other => run(other),
        };
        args.extend([format!("{} ({})", s.label, s.state), key, command]);
    }
    if sessions.is_empty() {
        args.extend(["no sessions".to_string(), String::new(), String::new()]);
    }
    tmux.run_commands(&[args])?;
    Ok(())
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
    crate::cmd::open_repo(Some(std::path::Path::new(&path[0])))
}

fn dispatch_input(ctx: &Context, client: &str, out: &mut Output<'_>) -> Result<(), Error> {
    let tmux = ctx.tmux();
    let values = tmux.global_values(&["@orchestra-input-title", "@orchestra-input-task"])?;
    let repo = client_repo(&tmux, client)?;
    let label = crate::cmd::slugify::free_label(ctx, &repo, &crate::label::slug(&values[0])?)?;
    let args = crate::cli::DispatchArgs {
        label,
        repo: crate::cli::RepoArg {
            repo: Some(repo.main_worktree().to_path_buf()),
        },
        prompt: Some(values[1].clone()).filter(|p| !p.is_empty()),
        prompt_file: None,
        base: None,
        agent: None,
        kind: None,
        no_hooks: false,
        after: Vec::new(),
    };
    // run-shell would show anything printed in the pane: the result goes to a message.
    let result = crate::cmd::quietly(|quiet| crate::cmd::dispatch::run(ctx, &args, quiet));
    let _ = out;
    report(ctx, &result, Some(&format!("dispatched {}", args.label)));
    result
}

fn brief_input(
    ctx: &Context,
    label: &str,
    client: &str,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    let tmux = ctx.tmux();
    let text = tmux.global_values(&["@orchestra-input-text"])?.remove(0);
    let repo = client_repo(&tmux, client)?;
    let args = crate::cli::BriefArgs {
        words: vec![label.to_string(), text],
        all: false,
        force: false,
        repo: crate::cli::RepoArg {
            repo: Some(repo.main_worktree().to_path_buf()),
        },
    };
    let result = crate::cmd::quietly(|quiet| crate::cmd::brief::run(ctx, &args, quiet));
    let _ = out;
    report(ctx, &result, None);
    result
}

/// A menu action's result as a tmux message: what went wrong, or `done` when given
/// (output printed by a `run-shell` would open over the pane instead).
fn report(ctx: &Context, result: &Result<(), Error>, done: Option<&str>) {
    let message = match (result, done) {
        (Err(e), _) => format!("orchestra: {e}"),
        (Ok(()), Some(done)) => format!("orchestra: {done}"),
        (Ok(()), None) => return,
    };
    let socket = ctx.server.socket.as_ref().map(|p| p.to_string_lossy());
    crate::tmux::display_message(socket.as_deref(), &message);
}

/// A `command-prompt` that stores the answer in `option` exactly (tmux escapes `%%%`) and
/// then runs `orchestra <then>`.
fn prompt_command(prompt: &str, option: &str, exe: &str, then: &str) -> String {
    format!("command-prompt -p \"{prompt}\" \"set -g {option} \\\"%%%\\\" ; run-shell -b \\\"{exe} {then}\\\"\"")
}

/// Shows a follow-up prompt on `client`.
fn ask(ctx: &Context, client: &str, prompt: &str, option: &str, then: &str) -> Result<(), Error> {
    let exe = exe()?;
    let command = prompt_command(prompt, option, &exe, then);
    let tmux = ctx.tmux();
    // command-prompt as its own command, on the client: parse the string we built.
    let words = shell_words::split(&command).map_err(|e| Error::BadInput(e.to_string()))?;
    let mut args = strings(&["command-prompt", "-t", client]);
    args.extend(words.into_iter().skip(1));
    tmux.run_commands(&[args])?;
    Ok(())
}
