//! `orchestra restart`: a dead or exited session comes back in its worktree, its
//! conversation resumed.

use crate::cli::RestartArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::session::{agent_pane, find_session};
use crate::state::{AgentState, Session, Status};

pub fn run(ctx: &Context, args: &RestartArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    let _work = crate::lock::work_shared(&ctx.home).map_err(Error::io("taking the work lock"))?;
    let targets: Vec<Session> = if args.target == "all" {
        store
            .sessions(Some(&repo.id()), false)?
            .into_iter()
            .filter(|s| (s.host.is_none() || s.is_manifest()) && needs_restart(s))
            .collect()
    } else {
        let s = find_session(&store, &repo, &args.target)?;
        // A manifest session restarts whatever its state: down, then up.
        if !s.is_manifest() && !needs_restart(&s) && session_alive(&s) {
            let doing = if s.status == Status::Setup {
                "is setting up (see its window)"
            } else {
                "is running"
            };
            return Err(Error::Refused(format!(
                "session {} {doing}: nothing to restart",
                s.label
            )));
        }
        vec![s]
    };
    if targets.is_empty() {
        out.line("no dead or exited session to restart");
        return Ok(());
    }
    // `restart all` refuses before it restarts any: a setup to run again is not allowed.
    if targets
        .iter()
        .any(|s| !s.is_manifest() && s.status.in_setup())
    {
        crate::trust::require_commands_allowed(&ctx.home, repo.main_worktree())?;
    }
    for session in targets {
        if session.is_manifest() {
            // A manifest session restarts as `down` then `up`, its conversation resumed.
            crate::session::restart::manifest(ctx, &session, out)?;
            continue;
        }
        crate::session::restart::dispatched(ctx, &repo, &store, &session, out)?;
    }
    Ok(())
}

fn needs_restart(s: &Session) -> bool {
    matches!(s.status, Status::Dead | Status::SetupFailed) || s.state == AgentState::Exited
}

fn session_alive(s: &Session) -> bool {
    agent_pane(s).is_ok_and(|(tmux, pane)| tmux.pane_alive(&pane).unwrap_or(false))
}
