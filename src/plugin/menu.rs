//! The menus: the top menu, a sub-menu of a repo's sessions or of its tracker's open
//! tasks, the kill confirmation, and what choosing an entry comes to (a popup opened
//! here, or a command the caller runs as the command line would).

use std::path::{Path, PathBuf};

use super::{client_folder, client_repo, exe, menu_entry, popup_orchestra, strings, EXE_OPTION};
use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
use crate::state::Session;
use crate::tmux::{format_literal, Tmux};

/// The top menu, drawn on `client`.
pub fn show(ctx: &Context, tmux: &Tmux, client: &str) -> Result<(), Error> {
    let act = |action: &str| menu_entry(&["tmux", "act", action, "--client", client]);
    let pick = |action: &str| menu_entry(&["tmux", "pick", action, "--client", client]);
    let mut items = vec![
        // Free text is asked in a popup by orchestra itself, never by a tmux prompt.
        ("Dispatch…", "d", act("dispatch")),
        ("Review…", "r", pick("review")),
        ("Merge…", "m", pick("merge")),
        ("Brief…", "b", pick("brief")),
        // The pull request's draft edited in $EDITOR, on the popup's terminal.
        ("Pull request…", "p", pick("pr")),
        // A second approach from where a session stands: the new label asked in a popup.
        ("Fork…", "f", pick("fork")),
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
            menu_entry(&["tmux", "next-waiting", "--client", client]),
        ),
        ("Kill…", "k", pick("kill")),
    ];
    let repo = client_repo(tmux, client).ok();
    // The tracker's open tasks (pick → dispatch), for a repo with a task source only.
    if repo
        .as_ref()
        .and_then(|repo| crate::tasks::work::configured(repo).ok().flatten())
        .is_some()
    {
        items.insert(1, ("Tasks…", "t", pick("tasks")));
    }
    // A repo with a group of candidates: compare them and choose one, in a popup.
    if repo.as_ref().is_some_and(|repo| {
        ctx.store()
            .ok()
            .and_then(|store| store.groups(Some(&repo.id())).ok())
            .is_some_and(|groups| groups.iter().any(|g| g.members.len() > 1))
    }) {
        items.insert(3, ("Compare…", "C", pick("compare")));
    }
    // The repo's own commands, shown in a popup before they are allowed.
    if repo
        .as_ref()
        .and_then(|repo| crate::trust::Asked::of(repo.main_worktree()).ok())
        .is_some_and(|asked| !asked.listing().is_empty())
    {
        items.push(("Allow…", "A", act("allow")));
    }
    let mut args = strings(&[
        "display-menu",
        "-c",
        client,
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
    tmux.menu(&[strings(&["set-option", "-g", EXE_OPTION, &exe()?]), args])?;
    Ok(())
}

/// The key of a menu's `i`-th entry: 1…9, then 0.
fn digit(i: usize) -> String {
    char::from_digit(((i + 1) % 10) as u32, 10)
        .map(String::from)
        .unwrap_or_default()
}

/// A sub-menu of the sessions of the repo `client` looks at; choosing one runs `action`
/// on it (by its id: no path or label travels through tmux).
pub fn pick(ctx: &Context, action: &str, client: &str) -> Result<(), Error> {
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
        args.extend([
            format_literal(&format!("{} ({})", s.label, s.state)),
            digit(i),
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
    tmux.menu(&[args])?;
    Ok(())
}

/// A sub-menu of the open tasks of `repo`; choosing one picks it and dispatches a session
/// on it (the task by its id: no title travels through tmux as a command).
fn pick_task(tmux: &Tmux, repo: &Repo, client: &str) -> Result<(), Error> {
    let (_, source) = crate::tasks::work::source_of(repo)?;
    let open = source
        .open_tasks()
        .map_err(crate::tasks::work::task_error)?;
    let mut args = strings(&["display-menu", "-c", client, "-T", "#[align=centre] tasks "]);
    for (i, task) in open.iter().take(40).enumerate() {
        let key = if i < 10 { digit(i) } else { String::new() };
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
    tmux.menu(&[args])?;
    Ok(())
}

/// A command a menu entry runs on a session, as `orchestra <command> LABEL --repo REPO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionCommand {
    Approve,
    Deny,
    Kill,
}

/// What a chosen menu entry comes to, once checked.
pub enum Chosen {
    /// Done here: a popup or the kill confirmation is open.
    Shown,
    /// The tracker's task `id` of `repo`, to pick and dispatch a session on.
    Task { repo: Repo, id: String },
    /// `command` on the session `label` of the repository at `repo`.
    Run {
        command: SessionCommand,
        label: String,
        repo: PathBuf,
    },
}

/// A menu entry's action for `client`: a popup or the kill confirmation opened here, or
/// the command the caller is to run.
pub fn choose(
    ctx: &Context,
    action: &str,
    session: Option<&str>,
    task: Option<&str>,
    client: &str,
    yes: bool,
) -> Result<Chosen, Error> {
    let tmux = ctx.tmux();
    match action {
        "task" => {
            let repo = client_repo(&tmux, client)?;
            let id = task.ok_or_else(|| Error::BadInput("this action needs --task ID".into()))?;
            return Ok(Chosen::Task {
                repo,
                id: id.to_string(),
            });
        }
        "dispatch" | "status" | "conflicts" | "allow" => {
            let repo = client_repo(&tmux, client)?;
            let dir = repo.main_worktree().to_string_lossy().into_owned();
            let args = ["tmux", "ask", action, "--repo", &dir];
            let title = format!(" {action} ");
            popup_orchestra(ctx, Some(client), repo.main_worktree(), &title, &args)?;
            return Ok(Chosen::Shown);
        }
        "watch" => {
            let cwd = client_folder(&tmux, client)?.unwrap_or_else(|| "/".into());
            popup_orchestra(
                ctx,
                Some(client),
                Path::new(&cwd),
                " dashboard ",
                &["watch"],
            )?;
            return Ok(Chosen::Shown);
        }
        _ => {}
    }
    let session = menu_session(ctx, session)?;
    let (label, repo) = (session.label.as_str(), session.repo.as_str());
    let run = |command| {
        Ok(Chosen::Run {
            command,
            label: label.to_string(),
            repo: PathBuf::from(repo),
        })
    };
    match action {
        "review" | "merge" => {
            // A refusal now is a message; in the popup it would vanish with it.
            let opened = Repo::discover(Path::new(repo))?;
            crate::session::find_branch_session(&ctx.store()?, &opened, label, action)?;
            let title = format!(" {action} {label} ");
            let args = [action, label, "--repo", repo];
            popup_orchestra(ctx, Some(client), Path::new(repo), &title, &args)?;
            Ok(Chosen::Shown)
        }
        "compare" => {
            // The group of the session picked, its candidates side by side.
            let group = ctx
                .store()?
                .session_groups(Some(repo))?
                .remove(&session.id)
                .ok_or_else(|| {
                    Error::BadInput(format!(
                        "{label} is no candidate of a group: nothing to compare"
                    ))
                })?;
            let title = format!(" compare {group} ");
            let args = ["compare", &group, "--choose", "--repo", repo];
            popup_orchestra(ctx, Some(client), Path::new(repo), &title, &args)?;
            Ok(Chosen::Shown)
        }
        "fork" => {
            // A session that cannot be forked is said now, before a label is asked for.
            let opened = Repo::discover(Path::new(repo))?;
            crate::session::fork::source(&ctx.home, &ctx.store()?, &opened, label)?;
            let args = ["tmux", "ask", "fork", "--session", &session.id];
            let title = format!(" fork {label} ");
            popup_orchestra(ctx, Some(client), Path::new(repo), &title, &args)?;
            Ok(Chosen::Shown)
        }
        "pr" => {
            let args = ["tmux", "ask", "pr", "--session", &session.id];
            let title = format!(" pull request {label} ");
            popup_orchestra(ctx, Some(client), Path::new(repo), &title, &args)?;
            Ok(Chosen::Shown)
        }
        "brief" => {
            let args = ["tmux", "ask", "brief", "--session", &session.id];
            let title = format!(" brief {label} ");
            popup_orchestra(ctx, Some(client), Path::new(repo), &title, &args)?;
            Ok(Chosen::Shown)
        }
        "approve" => run(SessionCommand::Approve),
        "deny" => run(SessionCommand::Deny),
        "kill" if !yes => {
            confirm_kill(&tmux, client, &session)?;
            Ok(Chosen::Shown)
        }
        "kill" => run(SessionCommand::Kill),
        other => Err(Error::BadInput(format!("no menu action {other:?}"))),
    }
}

/// "kill LABEL?" as a menu on `client`: y kills, anything else leaves it.
fn confirm_kill(tmux: &Tmux, client: &str, session: &Session) -> Result<(), Error> {
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
    tmux.menu(&[args])?;
    Ok(())
}

/// The session a menu entry names by id; it may have gone since the menu was drawn.
pub fn menu_session(ctx: &Context, id: Option<&str>) -> Result<Session, Error> {
    let id = id.ok_or_else(|| Error::BadInput("this action needs --session ID".into()))?;
    ctx.store()?.session_by_id(id)?.ok_or_else(|| {
        Error::Refused("that session is gone (killed or merged since the menu was drawn)".into())
    })
}
