//! `orchestra review`: what a session would bring into its target, read before a merge.

use std::io::IsTerminal;

use crate::cli::ReviewArgs;
use crate::cmd::{open_repo, run_in_popup, Context, Output};
use crate::error::Error;
use crate::git;
use crate::session::{find_branch_session, target_branch};

pub fn run(ctx: &Context, args: &ReviewArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    let session = find_branch_session(&store, &repo, &args.label, "review")?;
    let target = target_branch(&repo, &session, args.into.as_deref())?;
    if args.popup {
        return run_in_popup(
            ctx,
            args.client.as_deref(),
            repo.main_worktree(),
            &format!(" review {} ", session.label),
        );
    }
    let review = repo.review(&session.branch, &target)?;
    let worktree = std::path::Path::new(&session.worktree);
    let uncommitted = if worktree.exists() {
        git::uncommitted_paths(worktree)?
    } else {
        Vec::new()
    };
    if args.json {
        let mut json = serde_json::to_value(&review).unwrap_or_default();
        json["uncommitted"] = serde_json::json!(uncommitted);
        out.line(serde_json::to_string_pretty(&json).unwrap_or_default());
        return Ok(());
    }
    let mut text = format!(
        "session {} — {} → {}: {} commit(s), {} file(s), +{} -{}, {}\n\n",
        session.label,
        session.branch,
        target,
        review.commits.len(),
        review.files.len(),
        review.insertions,
        review.deletions,
        if review.merges_cleanly {
            "merges cleanly".to_string()
        } else {
            format!(
                "CONFLICTS in {}",
                crate::inert::line(&review.conflicts.join(", "))
            )
        }
    );
    let color = std::io::stdout().is_terminal();
    text.push_str(&repo.review_text(&review.merge_base, &session.branch, color)?);
    if !uncommitted.is_empty() {
        text.push_str(&format!(
            "\n=== uncommitted in {} (not part of the branch yet) ===\n",
            session.worktree
        ));
        text.push_str(&repo.uncommitted_text(worktree, color)?);
    }
    page(&text, out)
}

/// Shows `text` through `$PAGER` (default `less -R`) when standard output is a terminal.
fn page(text: &str, out: &mut Output<'_>) -> Result<(), Error> {
    if !std::io::stdout().is_terminal() {
        let _ = out.out.write_all(text.as_bytes());
        return Ok(());
    }
    let pager = std::env::var("PAGER")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "less -R".into());
    let argv = shell_words::split(&pager)
        .map_err(|e| Error::BadInput(format!("cannot split $PAGER {pager:?}: {e}")))?;
    let Some((program, rest)) = argv.split_first() else {
        let _ = out.out.write_all(text.as_bytes());
        return Ok(());
    };
    // The pager is read by a person (a pager quit early closes its pipe: not an error).
    let paged = crate::process::Run::new(program, crate::process::A_PERSON)
        .args(rest)
        .input(text.as_bytes())
        .inherit_output()
        .status();
    if let Err(crate::process::ProcessError::Spawn { .. }) = paged {
        let _ = out.out.write_all(text.as_bytes());
    }
    Ok(())
}
