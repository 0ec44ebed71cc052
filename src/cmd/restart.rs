//! `orchestra restart`: a dead or exited session comes back in its worktree, its
//! conversation resumed.

use std::path::Path;

use crate::agent::AgentKind;
use crate::cli::RestartArgs;
use crate::cmd::dispatch::{agent_env, agent_launch, start_agent_in_pane};
use crate::cmd::prepare::window_argv;
use crate::cmd::{agent_pane, find_session, open_repo, Context, Output};
use crate::error::Error;
use crate::state::{AgentState, Session, Status};
use crate::tmux::WindowSpec;

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
    for session in targets {
        if session.is_manifest() {
            // A manifest session restarts as `down` then `up`, its conversation resumed.
            crate::cmd::up::restart(ctx, &session, out)?;
            continue;
        }
        if !Path::new(&session.worktree).exists() {
            out.note(format!(
                "{}: its worktree {} is gone; not restarted",
                session.label, session.worktree
            ));
            continue;
        }
        // A session whose setup did not finish has no agent yet: the setup runs again,
        // then the agent starts with its prompt. Else claude resumes its conversation by
        // id; aider reads back its chat history file (in the session's folder).
        let setup_again = matches!(session.status, Status::SetupFailed | Status::Setup);
        let resume = !setup_again
            && match session.agent_kind {
                AgentKind::Claude => session.agent_uuid.is_some(),
                AgentKind::Aider => true,
                _ => false,
            };
        // In place only while the recorded pane is still this session's (pane ids are
        // reused after a tmux restart); else a new window.
        let pane_exists = match agent_pane(&session) {
            Ok((tmux, pane)) => tmux.is_ours(&pane).unwrap_or(false),
            Err(_) => false,
        };
        if setup_again {
            // Recorded first: the window's `prepare` runs the setup only for a session in
            // `setup`.
            store.claim_status(
                &session,
                session.status,
                Status::Setup,
                "restart: its setup runs again",
            )?;
        }
        crate::fault::point("restart");
        let (window, pane, tmux_session, socket) = if pane_exists && setup_again {
            let result = agent_pane(&session).and_then(|(tmux, pane)| {
                let env = agent_env(ctx, &session);
                let argv = window_argv(&session.id, false)?;
                Ok(tmux.respawn(&pane, Path::new(&session.worktree), &env, &argv)?)
            });
            crate::cmd::record_if_gone(ctx, &session, result)?;
            (
                session.window.clone(),
                session.pane.clone(),
                session.tmux_session.clone().unwrap_or_default(),
                None,
            )
        } else if pane_exists {
            start_agent_in_pane(ctx, &session, None, resume, out)?;
            (
                session.window.clone(),
                session.pane.clone(),
                session.tmux_session.clone().unwrap_or_default(),
                None,
            )
        } else {
            // The window is gone: a new one on the server we are talking to.
            let (launch, env) = agent_launch(ctx, &session, None, resume)?;
            let (argv, badge) = if setup_again {
                (window_argv(&session.id, false)?, Status::Setup.as_str())
            } else {
                (launch.argv, AgentState::Unknown.as_str())
            };
            let here = ctx.tmux();
            let w = here.new_window(
                &WindowSpec {
                    name: &session.label,
                    cwd: Path::new(&session.worktree),
                    argv: &argv,
                    env: &env,
                    placement: here.placement_for_repo(&repo.name()),
                },
                &[
                    ("@orchestra_id", &session.id),
                    ("@orchestra_label", &session.label),
                    ("@orchestra_state", badge),
                ],
            )?;
            (
                Some(w.window),
                Some(w.pane),
                w.session_name,
                Some(w.socket_path),
            )
        };
        crate::fault::point("restart");
        store.record_restart(
            &session,
            window.as_ref(),
            pane.as_ref(),
            &tmux_session,
            socket.as_deref(),
            // A setup's window records how it went: its status is left to it (it moved to
            // `setup` before the window ran).
            (!setup_again).then_some(Status::Running),
        )?;
        crate::fault::point("restart");
        out.line(format!(
            "restarted {} (retry {}){}",
            session.label,
            session.retry_count + 1,
            if resume {
                ", conversation resumed"
            } else if setup_again {
                ": its setup runs again in its window, then its agent starts"
            } else {
                ""
            }
        ));
    }
    Ok(())
}

fn needs_restart(s: &Session) -> bool {
    matches!(s.status, Status::Dead | Status::SetupFailed) || s.state == AgentState::Exited
}

fn session_alive(s: &Session) -> bool {
    agent_pane(s).is_ok_and(|(tmux, pane)| tmux.pane_alive(&pane).unwrap_or(false))
}
