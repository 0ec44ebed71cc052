//! `orchestra kill`: close a session without losing work. Its window (only ours) and
//! worktree go; its branch is deleted only if merged, else archived under a new name.

use crate::cli::KillArgs;
use crate::cmd::{find_session, open_repo, session_tmux, Context, Output};
use crate::error::Error;
use crate::git::{self, Repo};
use crate::state::Session;
use crate::tmux::TmuxError;

pub fn run(ctx: &Context, args: &KillArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    let session = find_session(&store, &repo, &args.label)?;
    let worktree = std::path::Path::new(&session.worktree);
    let has_worktree = worktree.exists();

    if has_worktree && !args.force {
        let dirty = git::uncommitted_paths(worktree)?;
        if !dirty.is_empty() {
            return Err(Error::Refused(format!(
                "session {} has uncommitted changes ({}): commit them, or run `orchestra kill {} --force` to save them as a WIP commit on {}",
                session.label,
                summarize(&dirty),
                session.label,
                session.branch
            )));
        }
    }

    close_window(&session, out);

    if has_worktree {
        // Checked again now that the agent is stopped: whatever it wrote meanwhile is kept.
        let dirty = git::uncommitted_paths(worktree)?;
        if !dirty.is_empty() {
            let oid = git::commit_all(
                worktree,
                &format!(
                    "WIP: uncommitted work of session {}\n\nSaved by `orchestra kill` so that nothing is lost.",
                    session.label
                ),
            )?;
            out.line(format!(
                "saved {} uncommitted path(s) as WIP commit {} on {}",
                dirty.len(),
                &oid.to_string()[..10],
                session.branch
            ));
        }
        repo.remove_worktree(worktree)?;
        // The shared `<repo>.worktrees` folder goes with its last worktree.
        if let Some(root) = worktree.parent() {
            let _ = std::fs::remove_dir(root);
        }
    } else {
        repo.prune_worktrees()?;
    }

    settle_branch(&repo, &session, out)?;
    store.delete_session(&session, "killed")?;
    let _ = std::fs::remove_dir_all(crate::paths::session_dir(&ctx.home, &session.id));
    out.line(format!("killed {}", session.label));
    Ok(())
}

/// Closes the session's window if it is still ours; a gone window or server is fine.
fn close_window(session: &Session, out: &mut Output<'_>) {
    let Some(window) = &session.window else {
        return;
    };
    match session_tmux(session).kill_window_if_ours(window, &session.id) {
        Ok(_) => {}
        Err(TmuxError::Failed { .. }) => {}
        Err(e) => out.note(format!("could not close window {window}: {e}")),
    }
}

/// Deletes the branch when its work is in the base branch; otherwise renames it to
/// `archive/<label>-<time>` so the label is free and the work stays.
fn settle_branch(repo: &Repo, session: &Session, out: &mut Output<'_>) -> Result<(), Error> {
    if !repo.branch_exists(&session.branch) {
        return Ok(());
    }
    let into = session
        .base_branch
        .clone()
        .or_else(|| repo.current_branch());
    let merged = match &into {
        Some(into) if repo.branch_exists(into) => repo.is_merged(&session.branch, into)?,
        _ => false,
    };
    if merged {
        repo.delete_branch(&session.branch)?;
        out.line(format!(
            "deleted branch {} (merged into {})",
            session.branch,
            into.unwrap_or_default()
        ));
        return Ok(());
    }
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    let mut archive = format!("archive/{}-{stamp}", session.label);
    let mut n = 2;
    while repo.branch_exists(&archive) {
        archive = format!("archive/{}-{stamp}-{n}", session.label);
        n += 1;
    }
    repo.rename_branch(&session.branch, &archive)?;
    out.line(format!(
        "branch {} has unmerged work: kept as {archive}",
        session.branch
    ));
    Ok(())
}

fn summarize(paths: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = paths
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    text
}
