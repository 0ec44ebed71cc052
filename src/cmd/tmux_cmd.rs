//! `orchestra tmux …`: the plugin's tmux side — key table, menus, status segment, badges,
//! pane hooks — done by `crate::plugin`; menu entries that run a command run it here,
//! through the router, as the command line would.

use std::path::Path;

use crate::cli::{
    ApproveArgs, Command, ConflictsArgs, DenyArgs, ForkArgs, KillArgs, ManifestArg, PickArgs,
    PrArgs, RepoArg, StatusArgs, TmuxArgs, TmuxCommand,
};
use crate::cmd::{
    dispatch_command, open_repo, pick_task, quietly, run as run_command, Context, Output,
};
use crate::command_error::CommandError;
use crate::error::Error;
use crate::plugin::menu::{Chosen, SessionCommand};

pub fn run(ctx: &Context, args: &TmuxArgs, out: &mut Output<'_>) -> Result<(), Error> {
    match &args.command {
        TmuxCommand::Init => {
            let ready = crate::plugin::init(&ctx.tmux())?;
            out.line(format!(
                "orchestra {} ready on {} (prefix + {})",
                env!("CARGO_PKG_VERSION"),
                ready.version,
                ready.key
            ));
            Ok(())
        }
        TmuxCommand::Menu { client } => {
            // Run by a key binding's run-shell: an error printed would open over the pane.
            let tmux = ctx.tmux();
            let shown = crate::plugin::resolve_client(&tmux, client.as_deref())
                .and_then(|client| crate::plugin::menu::show(ctx, &tmux, &client));
            reported(ctx, shown.map(|()| None))
        }
        TmuxCommand::Pick { action, client } => {
            let client = crate::plugin::resolve_client(&ctx.tmux(), client.as_deref())?;
            let picked = crate::plugin::menu::pick(ctx, action, &client);
            reported(ctx, picked.map(|()| None))
        }
        TmuxCommand::Act {
            action,
            session,
            task,
            client,
            yes,
        } => {
            let chosen = crate::plugin::menu::choose(
                ctx,
                action,
                session.as_deref(),
                task.as_deref(),
                client,
                *yes,
            );
            reported(ctx, chosen.and_then(|chosen| act(ctx, chosen)))
        }
        TmuxCommand::Ask {
            what,
            session,
            repo,
        } => ask(ctx, what, session.as_deref(), repo.as_deref(), out),
        TmuxCommand::NextWaiting { client } => {
            // A message, not output: a binding's run-shell would show that in view mode.
            let moved = crate::plugin::next_waiting(&ctx.tmux(), client.as_deref());
            reported(
                ctx,
                moved.map(|window| {
                    window
                        .is_none()
                        .then(|| "no window is waiting for you".into())
                }),
            )
        }
    }
}

/// Runs what a menu entry chose: a task picked (and dispatched on), or a command on a
/// session, its output the message.
fn act(ctx: &Context, chosen: Chosen) -> Result<Option<String>, Error> {
    let (command, label, repo) = match chosen {
        Chosen::Shown => return Ok(None),
        Chosen::Task { repo, id } => {
            let args = PickArgs {
                id,
                dispatch: true,
                label: None,
                agent: None,
                requested_by: None,
                repo: RepoArg { repo: None },
            };
            return quietly(|quiet| pick_task(ctx, &repo, &args, quiet)).map(Some);
        }
        Chosen::Run {
            command,
            label,
            repo,
        } => (command, label, RepoArg { repo: Some(repo) }),
    };
    let command = match command {
        SessionCommand::Approve => Command::Approve(ApproveArgs {
            label,
            always: false,
            expect: None,
            repo,
        }),
        SessionCommand::Deny => Command::Deny(DenyArgs { label, repo }),
        SessionCommand::Kill => Command::Kill(KillArgs {
            label,
            repo,
            force: false,
        }),
    };
    outcome(|out| run_command(ctx, &command, out))
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
/// brief: the text; fork: the new label), or show `status` until Enter.
fn ask(
    ctx: &Context,
    what: &str,
    session: Option<&str>,
    repo: Option<&Path>,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    let result = match what {
        "dispatch" => ask_dispatch(ctx, repo),
        "brief" => crate::plugin::ask::brief_dialog(ctx, session),
        "fork" => ask_fork(ctx, session),
        "pr" => ask_pr(ctx, session),
        "allow" => open_repo(repo).and_then(|repo| crate::plugin::ask::allow_dialog(ctx, &repo)),
        "status" => {
            let args = StatusArgs {
                manifest: ManifestArg {
                    config: None,
                    repo: repo.map(Path::to_path_buf),
                },
                json: false,
            };
            return until_enter(out, |out| run_command(ctx, &Command::Status(args), out));
        }
        "conflicts" => {
            let args = ConflictsArgs {
                repo: RepoArg {
                    repo: repo.map(Path::to_path_buf),
                },
                json: false,
            };
            return until_enter(out, |out| run_command(ctx, &Command::Conflicts(args), out));
        }
        other => Err(Error::BadInput(format!("nothing to ask for {other:?}"))),
    };
    reported(ctx, result)
}

fn ask_dispatch(ctx: &Context, repo: Option<&Path>) -> Result<Option<String>, Error> {
    let repo = open_repo(repo)?;
    // The menu has no --agent: its dispatch runs `@orchestra-agent`, else the default,
    // and a missing agent is said before anything is asked, with the option to set.
    let agent = ctx.tmux().global_option(MENU_AGENT_OPTION)?;
    let choose = format!("set the menu's agent: tmux set -g {MENU_AGENT_OPTION} 'COMMAND'");
    crate::session::launch::chosen_agent_command(agent.as_deref(), &choose)?;
    // The popup's terminal stays raw (held by `asked`) until the dispatch is done.
    let Some(asked) = crate::plugin::ask::dispatch_dialog(ctx, &repo)? else {
        return Ok(None);
    };
    let dispatch = dispatch_command(&asked.label, &repo, asked.task.clone(), agent);
    quietly(|quiet| run_command(ctx, &dispatch, quiet))?;
    Ok(Some(format!("dispatched {}", asked.label)))
}

/// The menu's Fork…: the new label asked in the popup, then `orchestra fork LABEL NEW`
/// through the router, as the command line runs it.
fn ask_fork(ctx: &Context, session: Option<&str>) -> Result<Option<String>, Error> {
    // The popup's terminal stays raw (held by `asked`) until the fork is done.
    let Some(asked) = crate::plugin::ask::fork_dialog(ctx, session)? else {
        return Ok(None);
    };
    let fork = Command::Fork(ForkArgs {
        source: asked.source.label.clone(),
        label: asked.label.clone(),
        repo: RepoArg {
            repo: Some(asked.source.repo.clone().into()),
        },
        prompt: None,
        agent: None,
        kind: None,
    });
    quietly(|quiet| run_command(ctx, &fork, quiet))?;
    Ok(Some(format!(
        "forked {} into {}",
        asked.source.label, asked.label
    )))
}

/// The menu's Pull request…: `orchestra pr LABEL` on the popup's terminal, so the draft
/// opens in $EDITOR there for the person to edit and save (or empty, to send nothing);
/// what it printed becomes the message.
fn ask_pr(ctx: &Context, session: Option<&str>) -> Result<Option<String>, Error> {
    let session = crate::plugin::menu::menu_session(ctx, session)?;
    let pr = Command::Pr(PrArgs {
        label: Some(session.label.clone()),
        repo: RepoArg {
            repo: Some(session.repo.clone().into()),
        },
        yes: false,
        ready: false,
        title: None,
        base: None,
        background: false,
        json: false,
    });
    outcome(|out| run_command(ctx, &pr, out))
}

/// The tmux option naming the agent command the menu's Dispatch… runs.
const MENU_AGENT_OPTION: &str = crate::tmux::options::AGENT;

/// What `show` prints, kept on the popup's screen until Enter (an error as its message).
fn until_enter(
    out: &mut Output<'_>,
    show: impl FnOnce(&mut Output<'_>) -> Result<(), Error>,
) -> Result<(), Error> {
    if let Some(line) = show(out).err().and_then(|e| CommandError::from(&e).line()) {
        out.line(format!("orchestra: {line}"));
    }
    out.line("\n(Enter closes)");
    let _ = std::io::stdin().read_line(&mut String::new());
    Ok(())
}

/// A menu action's outcome as a tmux message: what went wrong, or what was done (output
/// printed by a `run-shell` would open over the pane instead). The error is returned
/// only when no message could be shown.
fn reported(ctx: &Context, result: Result<Option<String>, Error>) -> Result<(), Error> {
    let message = match &result {
        Err(e) => match CommandError::from(e).line() {
            Some(line) => format!("orchestra: {line}"),
            // A false check says nothing: its status is all there is.
            None => return result.map(|_| ()),
        },
        Ok(Some(done)) => format!("orchestra: {done}"),
        Ok(None) => return Ok(()),
    };
    if crate::plugin::show_message(ctx, &message) {
        return Ok(());
    }
    result.map(|_| ())
}
