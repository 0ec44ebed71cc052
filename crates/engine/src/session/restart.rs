//! Restarting a session: a dead or exited one comes back in its worktree, its
//! conversation resumed (or its setup run again); a manifest session goes down and up.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
use crate::report::Report;
use crate::session::launch::{
    agent_env, agent_launch, boxed_window_argv, start_agent_in_pane, window_argv,
};
use crate::session::manifest::{down_one, up_one, Carried, Plan};
use crate::session::{agent_pane, record_if_gone, session_tmux};
use crate::state::{AgentState, Session, Status, Store};
use crate::tmux::WindowSpec;

/// Restarts dispatched `session` of `repo`: in its pane while that is still the
/// session's, else in a new window; claude resumes its conversation, aider its chat
/// history; a session whose setup never finished runs it again first.
pub fn dispatched(
    ctx: &Context,
    repo: &Repo,
    store: &Store,
    session: &Session,
    out: &mut dyn Report,
) -> Result<(), Error> {
    if !Path::new(&session.worktree).exists() {
        out.note(format!(
            "{}: its worktree {} is gone; not restarted",
            session.label, session.worktree
        ));
        return Ok(());
    }
    // An agent started in a folder that is not its worktree would work on someone
    // else's repository.
    crate::session::remove::check_own_worktree(
        repo,
        Path::new(&session.worktree),
        &session.label,
        &session.branch,
    )?;
    // A session whose setup did not finish has no agent yet: the setup runs again,
    // then the agent starts with its prompt. Else it resumes what it saved, if it did
    // (claude its conversation by id, codex and gemini their latest in the worktree,
    // aider its chat history file in the session's folder: `Agent::can_resume`).
    let setup_again = matches!(session.status, Status::SetupFailed | Status::Setup);
    let resume = !setup_again
        && crate::agent::of(session.agent_kind).can_resume(&ctx.home, store, session)?;
    // In place only while the recorded pane is still this session's (pane ids are
    // reused after a tmux restart); else a new window.
    let pane_exists = match agent_pane(session) {
        Ok((tmux, pane)) => tmux.is_ours(&pane).unwrap_or(false),
        Err(_) => false,
    };
    if setup_again {
        crate::trust::require_commands_allowed(&ctx.home, repo.main_worktree())?;
        // Recorded first: the window's `prepare` runs the setup only for a session in
        // `setup`.
        store.claim_status(
            session,
            session.status,
            Status::Setup,
            "restart: its setup runs again",
        )?;
    } else if session.sandbox.is_some() {
        // A boxed agent starts through the window's `prepare`, which starts only a running
        // session: recorded first, or a quick `prepare` reads it still dead.
        store.claim_status(
            session,
            session.status,
            Status::Running,
            "restart: its agent starts in its box",
        )?;
    }
    crate::fault::point("restart");
    let (window, pane, tmux_session, socket) = if pane_exists && setup_again {
        let result = agent_pane(session).and_then(|(tmux, pane)| {
            let env = agent_env(ctx, session);
            let argv = window_argv(&session.id, false)?;
            Ok(tmux.respawn(&pane, Path::new(&session.worktree), &env, &argv)?)
        });
        record_if_gone(ctx, session, result)?;
        (
            session.window.clone(),
            session.pane.clone(),
            session.tmux_session.clone().unwrap_or_default(),
            None,
        )
    } else if pane_exists {
        start_agent_in_pane(ctx, session, None, resume, out)?;
        (
            session.window.clone(),
            session.pane.clone(),
            session.tmux_session.clone().unwrap_or_default(),
            None,
        )
    } else {
        // The window is gone: a new one on the server we are talking to.
        let (launch, env) = agent_launch(ctx, session, None, resume)?;
        let (argv, badge) = if setup_again {
            (window_argv(&session.id, false)?, Status::Setup.as_str())
        } else if session.sandbox.is_some() {
            (
                boxed_window_argv(&session.id, resume)?,
                Status::Setup.as_str(),
            )
        } else {
            (launch.argv, AgentState::Unknown.as_str())
        };
        let boxed = crate::session::sandbox::mode(session);
        let mut marks = vec![
            (crate::tmux::options::WINDOW_ID, session.id.as_str()),
            (crate::tmux::options::WINDOW_LABEL, session.label.as_str()),
            (crate::tmux::options::WINDOW_STATE, badge),
        ];
        if !boxed.is_empty() {
            marks.push((crate::tmux::options::WINDOW_SANDBOX, boxed.as_str()));
        }
        let here = ctx.tmux();
        let w = here.new_window(
            &WindowSpec {
                name: &session.label,
                cwd: Path::new(&session.worktree),
                argv: &argv,
                env: &env,
                placement: here.placement_for_repo(&repo.name()),
            },
            &marks,
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
        session,
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
    Ok(())
}

/// Restarts manifest `session`: down, then up again with its conversation resumed (aider's
/// history files carried into the new session's folder).
pub fn manifest(ctx: &Context, session: &Session, out: &mut dyn Report) -> Result<(), Error> {
    let manifest_path = session.manifest.as_deref().unwrap_or_default();
    let manifest = crate::manifest::load(Path::new(manifest_path))?;
    if !manifest.sessions.contains_key(&session.label) {
        return Err(Error::Refused(format!(
            "{} is no longer in {manifest_path}",
            session.label
        )));
    }
    let repo = Repo::discover(Path::new(&session.repo))?;
    let store = ctx.store()?;
    // One connection for both halves.
    let tmux = session_tmux(session)?;
    // Read before `down` removes the old session's folder (aider writes its history as
    // it goes, so nothing said is lost).
    let carried = Carried::from(ctx, session);
    let line = down_one(ctx, &store, &tmux, session, Duration::from_secs(10))?;
    out.line(line);
    let plan = Plan {
        repo,
        path: PathBuf::from(manifest_path),
        manifest,
        names: vec![session.label.clone()],
    };
    let line = up_one(ctx, &store, &plan, &tmux, &session.label, carried, out)?;
    out.line(line);
    Ok(())
}
