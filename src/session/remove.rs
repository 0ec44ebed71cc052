//! A session's end without losing work: its worktree removed (uncommitted changes as a
//! WIP commit, a detached HEAD's commits kept, the teardown run once the work is safe),
//! its branch settled, its row and folder gone.

use std::path::Path;

use crate::context::Context;
use crate::error::Error;
use crate::fault;
use crate::git::{self, Repo};
use crate::report::Report;
use crate::session::settle_branch;
use crate::state::{Session, Store};

/// The teardown a removal runs: that of `session`, if allowed by the records in `home`.
#[derive(Clone, Copy)]
pub struct Teardown<'a> {
    pub home: &'a Path,
    pub session: &'a Session,
}

/// Removes a session's worktree (its window already closed, so nothing writes there any
/// more) without losing work: uncommitted changes become a WIP commit, and commits only a
/// detached HEAD reaches are kept on `archive/<label>-detached-<time>`; the output says
/// where. A worktree already gone leaves only git's record of it to prune. `verb` names
/// the command, for the fault points between the steps. With `teardown`, the worktree's
/// teardown command (orchestra.toml) runs for that session once the work is safe, if the
/// person allowed it (`crate::trust`), and whatever it does is not the session's work: it
/// cannot stop the removal, and a commit it takes off the branch is kept on an archive/
/// branch.
pub fn remove_worktree_keeping_work(
    repo: &Repo,
    worktree: &Path,
    label: &str,
    wip_message: &str,
    verb: &str,
    teardown: Option<Teardown<'_>>,
    out: &mut dyn Report,
) -> Result<(), Error> {
    if !worktree.exists() {
        repo.prune_worktrees()?;
        return Ok(());
    }
    let dirty = git::uncommitted_paths(worktree)?;
    if !dirty.is_empty() {
        let oid = git::commit_all(worktree, wip_message)?;
        let on = Repo::checked_out_branch(worktree)?.unwrap_or_else(|| "the detached HEAD".into());
        out.line(format!(
            "saved {} uncommitted path(s) as WIP commit {} on {on}",
            dirty.len(),
            &oid.to_string()[..10],
        ));
        fault::point(verb);
    }
    if let Some((kept, commits)) = repo.keep_detached_work(worktree, label)? {
        out.line(format!(
            "the worktree of {label} had a detached HEAD with {commits} commit(s) on no branch: kept as {kept}"
        ));
        fault::point(verb);
    }
    if let Some(teardown) = teardown {
        run_teardown(repo, worktree, teardown, out)?;
    }
    repo.remove_worktree(worktree)?;
    fault::point(verb);
    // The shared `<repo>.worktrees` folder goes with its last worktree.
    if let Some(root) = worktree.parent() {
        let _ = std::fs::remove_dir(root);
    }
    Ok(())
}

/// Runs the `[worktree] teardown` of `session`'s repo in `worktree`, bounded by its
/// timeout, and reports how it went. A failure is said, never returned: the worktree goes
/// anyway. The commit checked out before it ran stays reachable whatever it did.
fn run_teardown(
    repo: &Repo,
    worktree: &Path,
    Teardown { home, session }: Teardown<'_>,
    out: &mut dyn Report,
) -> Result<(), Error> {
    let label = &session.label;
    let table = match crate::worktree::table(repo.main_worktree()) {
        Ok(Some((_, table))) => table,
        Ok(None) => return Ok(()),
        Err(e) => {
            out.note(format!("teardown of {label} not run: {e}"));
            return Ok(());
        }
    };
    let Some(argv) = table.teardown_argv() else {
        return Ok(());
    };
    match crate::trust::Asked::of(repo.main_worktree()) {
        Ok(asked) if asked.commands_allowed(home) => {}
        Ok(_) => {
            out.note(format!(
                "teardown of {label} not run: `{}` is not allowed (`orchestra allow` in the repo allows it); the worktree is removed without it",
                crate::trust::shown(&shell_words::join(&argv))
            ));
            return Ok(());
        }
        Err(e) => {
            out.note(format!("teardown of {label} not run: {e}"));
            return Ok(());
        }
    }
    let head = Repo::worktree_head(worktree).ok();
    let started = std::time::Instant::now();
    let (ended, output) = crate::worktree::run_captured(&crate::worktree::Job {
        argv: &argv,
        cwd: worktree,
        env: &crate::worktree::command_env(session),
        timeout: table.teardown_timeout(),
    });
    let took = crate::duration::spell(started.elapsed());
    if ended.ok() {
        out.line(format!("teardown of {label} done in {took}"));
    } else {
        out.note(format!(
            "teardown of {label} failed after {took} ({ended}); the worktree is removed anyway{}",
            if output.trim().is_empty() {
                ""
            } else {
                ". Its last output:"
            }
        ));
        let lines: Vec<&str> = output.lines().collect();
        for line in &lines[lines.len().saturating_sub(20)..] {
            out.detail(line.to_string());
        }
    }
    if let Some(head) = head {
        if let Some((kept, commits)) = repo.keep_unreachable(
            head,
            &format!("{label}-teardown"),
            &format!("orchestra: what the teardown of {label} took off its branch"),
        )? {
            out.line(format!(
                "the teardown of {label} left {commits} commit(s) on no branch: kept as {kept}"
            ));
        }
    }
    if let Some((kept, commits)) = repo.keep_detached_work(worktree, label)? {
        out.line(format!(
            "the teardown of {label} left a detached HEAD with {commits} commit(s) on no branch: kept as {kept}"
        ));
    }
    Ok(())
}

/// The end of a kill, once the window and worktree are gone: the branch settled (deleted
/// if merged into the branch the session started from, else archived), the row removed,
/// the session's own folder deleted. `doctor --fix` finishes an interrupted kill with it.
pub fn forget(
    ctx: &Context,
    repo: &Repo,
    store: &Store,
    session: &Session,
    why: &str,
    verb: &str,
    out: &mut dyn Report,
) -> Result<(), Error> {
    let into = session
        .base_branch
        .clone()
        .or_else(|| repo.current_branch());
    let archived = settle_branch(repo, session, into.as_deref(), out)?;
    fault::point(verb);
    let outcome = if archived {
        crate::cost::ARCHIVED
    } else {
        crate::cost::KILLED
    };
    crate::cost::close(store, session, outcome)?;
    store.delete_session(session, why)?;
    fault::point(verb);
    crate::deps::upstream_removed(ctx, store, session, out)?;
    let _ = std::fs::remove_dir_all(crate::paths::session_dir(&ctx.home, &session.id));
    Ok(())
}
