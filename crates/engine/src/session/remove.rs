//! A session's end without losing work: its worktree removed (uncommitted changes as a
//! WIP commit, a detached HEAD's commits kept, the teardown run once the work is safe),
//! its branch settled, its row and folder gone.

use std::path::Path;

use crate::context::Context;
use crate::error::Error;
use crate::fault;
use crate::git::{self, Repo};
use crate::report::Report;
use crate::session::{settle_branch, Settled};
use crate::state::{Session, Status, Store};

/// Refuses a folder at a session's worktree path that is not this repository's
/// registered worktree of the session's `branch` (the worktree was removed by hand and
/// another repository, or anything else, put there): nothing may be committed into it,
/// typed at or removed. A folder that is gone passes (there is nothing to touch).
pub fn check_own_worktree(
    repo: &Repo,
    worktree: &Path,
    label: &str,
    branch: &str,
) -> Result<(), Error> {
    if !worktree.exists() {
        return Ok(());
    }
    let Some(stranger) = repo.not_worktree_of(worktree, branch)? else {
        return Ok(());
    };
    let remedy = match stranger {
        git::Stranger::OtherBranch(_) => format!("check out {branch} there, then try again"),
        _ => {
            format!("move that folder away ({branch} keeps the session's commits), then try again")
        }
    };
    Err(Error::Refused(format!(
        "the folder {} is not the worktree of session {label}: it {stranger}. Nothing was committed or removed there; {remedy}",
        worktree.display()
    )))
}

/// Looks into the submodules of `worktree` before anything is done: one whose repository
/// is outside this one is refused whatever the command's options; with `refuse_work`
/// (how the command would keep the work instead: its `--force`), so is work there that
/// removing the worktree would lose (uncommitted edits, commits no remote has).
pub fn check_submodules(
    worktree: &Path,
    label: &str,
    refuse_work: Option<&str>,
) -> Result<(), Error> {
    if !worktree.exists() {
        return Ok(());
    }
    let work = git::submodule_work(worktree)?;
    let Some(keep_it) = refuse_work.filter(|_| !work.is_empty()) else {
        return Ok(());
    };
    let listed: Vec<String> = work.iter().map(ToString::to_string).collect();
    Err(Error::Refused(format!(
        "session {label} has work in its submodules that only its worktree holds, which removing it would lose: {}. Commit and push it, or {keep_it} to keep it (a WIP commit, and an archive/ branch in the submodule's repository)",
        listed.join(", ")
    )))
}

/// The teardown a removal runs: that of `session`, if allowed by the records in `home`.
#[derive(Clone, Copy)]
pub struct Teardown<'a> {
    pub home: &'a Path,
    pub session: &'a Session,
}

/// Removes a session's worktree (its window already closed, so nothing writes there any
/// more) without losing work: uncommitted changes become a WIP commit, and commits only a
/// detached HEAD reaches are kept on `archive/<label>-detached-<time>`; in each of its
/// submodules, edits become a WIP commit there and commits the removal would take are
/// kept on an archive/ branch of a repository that stays; the output says where. A
/// folder that is not the registered worktree of `branch` is refused before anything is
/// done ([`check_own_worktree`]). A worktree already gone leaves only git's record of it
/// to prune. `verb` names the command, for the fault points between the steps. With
/// `teardown`, the worktree's teardown command (orchestra.toml) runs for that session
/// once the work is safe, if the person allowed it (`crate::trust`), and whatever it does is not the session's work: it cannot stop
/// the removal, and a commit it takes off the branch is kept on an archive/ branch.
#[allow(clippy::too_many_arguments)]
pub fn remove_worktree_keeping_work(
    repo: &Repo,
    worktree: &Path,
    label: &str,
    branch: &str,
    wip_message: &str,
    verb: &str,
    teardown: Option<Teardown<'_>>,
    out: &mut dyn Report,
) -> Result<(), Error> {
    if !worktree.exists() {
        repo.prune_worktrees()?;
        return Ok(());
    }
    check_own_worktree(repo, worktree, label, branch)?;
    for kept in repo.keep_submodule_work(worktree, label, wip_message)? {
        if let Some((oid, paths)) = kept.wip {
            out.line(format!(
                "saved {paths} uncommitted path(s) of submodule {} as WIP commit {}",
                kept.path,
                &oid.to_string()[..10],
            ));
        }
        for (branch, commits) in &kept.branches {
            out.line(format!(
                "submodule {} of {label} had {commits} commit(s) only its worktree held: kept as {branch} in {}",
                kept.path,
                kept.repository.display()
            ));
        }
        fault::point(verb);
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
/// if merged into the branch the session started from, else archived), the session's own
/// folder deleted. A session whose work was squashed or rebased into that branch counts
/// as merged: its row stays, `merged` as after `orchestra merge` (so what waits for it
/// finds its artifacts where it merged); any other's row is removed. `doctor --fix`
/// finishes an interrupted kill with it. Returns what was done with the branch.
pub fn forget(
    ctx: &Context,
    repo: &Repo,
    store: &Store,
    session: &Session,
    why: &str,
    verb: &str,
    out: &mut dyn Report,
) -> Result<Settled, Error> {
    let into = session
        .base_branch
        .clone()
        .or_else(|| repo.current_branch());
    let pull = store.pull_request(&session.id)?;
    let settled = settle_branch(repo, session, into.as_deref(), pull.as_ref(), out)?;
    fault::point(verb);
    if let Some(how) = settled.merged_elsewhere() {
        let into = into.unwrap_or_default();
        store.change_status(
            session,
            Status::Merged,
            &format!("{why}: {}", how.describe(&into)),
        )?;
        fault::point(verb);
        // Merged is merged: the task's write-back as after `orchestra merge`.
        let merged = crate::tasks::Merged {
            how: how.describe(&into),
            pull_request: match how {
                crate::git::Landed::PullRequest(number) => Some(number),
                _ => None,
            },
        };
        crate::tasks::work::after_merge(store, repo, session, &merged, out);
        crate::paths::remove_session_files(&ctx.home, &session.id);
        return Ok(settled);
    }
    let outcome = if settled == Settled::Archived {
        crate::cost::ARCHIVED
    } else {
        crate::cost::KILLED
    };
    crate::cost::close(store, session, outcome)?;
    store.delete_session(session, why)?;
    fault::point(verb);
    crate::deps::upstream_removed(ctx, store, session, out)?;
    crate::paths::remove_session_files(&ctx.home, &session.id);
    Ok(settled)
}
