//! What a session's window does before its agent (`orchestra prepare`): it waits for the
//! session's row, moves an unblocked session's branch onto the work it waited for, runs
//! the worktree's setup as the terminal's foreground job and records how it went; once the
//! agent runs, types its prompt and answers the trust dialog.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::context::Context;
use crate::duration::spell;
use crate::error::Error;
use crate::git::{FastForward, Repo};
use crate::paths::session_dir;
use crate::report::Report;
use crate::session::launch::{FROM_UPSTREAM, TYPED_PROMPT};
use crate::state::{Session, Status, Store};
use crate::worktree::Job;

/// How long the window waits for dispatch to record the session it was made for.
const ROW_WAIT: Duration = Duration::from_secs(30);

/// The session's row, once it names this window's pane: dispatch records it just after it
/// made the window, a restart in a new window just after it made that.
pub fn wait_for_row(store: &Store, id: &str) -> Result<Option<Session>, Error> {
    if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Error::BadInput(format!("{id:?} is not a session id")));
    }
    let here = crate::paths::non_empty_env("TMUX_PANE");
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(s) = store.session_by_id(id)? {
            if here.is_none() || s.pane.as_deref() == here.as_deref() {
                return Ok(Some(s));
            }
        }
        if started.elapsed() > ROW_WAIT {
            return Ok(None);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Moves the branch of a session unblocked just now onto the head of its base branch (or,
/// with `--from-upstream`, of its upstream's branch), when it has no commit of its own.
/// Says what happened in the window; returns a line for the agent's prompt when the
/// branch stayed where it was.
pub fn move_branch(
    ctx: &Context,
    store: &Store,
    session: &Session,
    out: &mut dyn Report,
) -> Option<String> {
    let repo = Repo::discover(Path::new(&session.repo)).ok()?;
    let upstream = std::fs::read_to_string(session_dir(&ctx.home, &session.id).join(FROM_UPSTREAM))
        .ok()
        .and_then(|id| store.session_by_id(id.trim()).ok().flatten())
        .filter(|u| repo.branch_exists(&u.branch));
    let target = match (&upstream, &session.base_branch) {
        (Some(u), _) => u.branch.clone(),
        (None, Some(base)) if repo.branch_exists(base) => base.clone(),
        _ => {
            out.line(format!(
                "orchestra: {} was dispatched from no branch: it starts where it is",
                session.branch
            ));
            return None;
        }
    };
    let to = repo.branch_tip(&target).ok()?;
    // A branch is moved only in the session's own worktree, never in what was put there.
    let worktree = Path::new(&session.worktree);
    if let Err(e) =
        crate::session::remove::check_own_worktree(&repo, worktree, &session.label, &session.branch)
    {
        out.line(format!("orchestra: {e}"));
        return Some("its folder is not its worktree".to_string());
    }
    let short = |oid: crate::git::Oid| oid.to_string()[..10].to_string();
    let (said, kept) = match repo.fast_forward(worktree, to) {
        Ok(FastForward::Moved { from }) => {
            let said = format!(
                "orchestra: moved {} onto the head of {target} ({} → {}): what landed there while it waited is in the worktree",
                session.branch,
                short(from),
                short(to)
            );
            let _ = store.record_event(session, "moved", &from.to_string(), &to.to_string(), &said);
            (said, None)
        }
        Ok(FastForward::AlreadyThere) => (
            format!(
                "orchestra: {} is at the head of {target} already",
                session.branch
            ),
            None,
        ),
        Ok(FastForward::OwnCommits(n)) => (
            format!(
                "orchestra: {} has {n} commit(s) of its own: not moved onto {target} ({}); it starts where it is",
                session.branch,
                short(to)
            ),
            Some(format!("it has {n} commit(s) of its own")),
        ),
        Ok(FastForward::Uncommitted(paths)) => (
            format!(
                "orchestra: {} has uncommitted changes ({}): not moved onto {target}; it starts where it is",
                session.branch,
                crate::paths::short_list(&paths)
            ),
            Some("its worktree has uncommitted changes".to_string()),
        ),
        Err(e) => (
            format!(
                "orchestra: could not move {} onto {target}: {e}; it starts where it is",
                session.branch
            ),
            Some(format!("moving it failed ({e})")),
        ),
    };
    out.line(said.clone());
    let why = kept?;
    let _ = store.record_event(session, "not-moved", "", &target, &said);
    Some(format!(
        "(orchestra: your branch {} was not moved onto the current head of {target} because {why}: work that landed on {target} while you waited is not in your worktree.)",
        session.branch
    ))
}

/// Runs the worktree's setup command in this window, bounded by its timeout, and records
/// how it went: `Ok(Ok(()))` when the agent may start, `Ok(Err(message))` when not. A
/// setup changed since it was allowed (a pull between dispatch and now) does not run.
pub fn setup(
    home: &Path,
    store: &Store,
    session: &Session,
    out: &mut dyn Report,
) -> Result<Result<(), String>, Error> {
    let label = &session.label;
    let table = match crate::worktree::table(Path::new(&session.repo)) {
        Ok(table) => table,
        Err(e) => return Ok(Err(failed(store, session, &e.to_string(), out)?)),
    };
    match crate::trust::Asked::of(Path::new(&session.repo)) {
        Ok(asked) if !asked.commands_allowed(home) => {
            return Ok(Err(failed(store, session, &asked.refusal(), out)?))
        }
        Ok(_) => {}
        Err(e) => return Ok(Err(failed(store, session, &e.to_string(), out)?)),
    }
    let Some((argv, timeout)) = table
        .as_ref()
        .and_then(|(_, t)| t.setup_argv().map(|argv| (argv, t.setup_timeout())))
    else {
        store.claim_status(
            session,
            Status::Setup,
            Status::Running,
            "no setup command any more",
        )?;
        return Ok(Ok(()));
    };
    out.line(format!(
        "orchestra: setting up {label}: {} (at most {})",
        shell_words::join(&argv),
        spell(timeout)
    ));
    let (argv, env) = crate::session::sandbox::job_command(home, session, argv)?;
    let started = Instant::now();
    let ended = crate::worktree::run_in_terminal(&Job {
        argv: &argv,
        cwd: Path::new(&session.worktree),
        env: &env,
        timeout,
    });
    let took = spell(started.elapsed());
    if !ended.ok() {
        let why = format!("setup of {label} failed after {took}: {ended}");
        return Ok(Err(failed(store, session, &why, out)?));
    }
    out.line(format!("orchestra: setup of {label} done in {took}"));
    if !store.claim_status(
        session,
        Status::Setup,
        Status::Running,
        &format!("setup done in {took}"),
    )? {
        let now = store
            .session_by_id(&session.id)?
            .map_or("gone".to_string(), |s| s.status.to_string());
        return Ok(Err(format!(
            "orchestra: setup of {label} is done, but the session is {now} now: its agent is not started here"
        )));
    }
    Ok(Ok(()))
}

/// Records a failed setup (`setup-failed`, the badge, a notification); returns what the
/// window says.
pub fn failed(
    store: &Store,
    session: &Session,
    why: &str,
    out: &mut dyn Report,
) -> Result<String, Error> {
    let label = &session.label;
    out.line(format!("orchestra: {why}"));
    store.claim_status(session, Status::Setup, Status::SetupFailed, why)?;
    crate::tell::setup_failed(session, why)?;
    Ok(format!(
        "orchestra: its agent did not start. Fix the setup (its output is above), then `orchestra restart {label}` runs it again."
    ))
}

/// `prepare --after-start`: what dispatch does once an agent runs (its typed prompt, the
/// trust dialog), for an agent this window's `prepare` became.
pub fn after_start(ctx: &Context, id: &str, out: &mut dyn Report) -> Result<(), Error> {
    let store = ctx.store()?;
    let Some(session) = store.session_by_id(id)? else {
        return Ok(());
    };
    let file = session_dir(&ctx.home, id).join(TYPED_PROMPT);
    let typed = std::fs::read_to_string(&file).ok();
    let _ = std::fs::remove_file(&file);
    crate::session::launch::after_start(ctx, &session, typed.as_deref(), out)
}
