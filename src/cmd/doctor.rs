//! `orchestra doctor`: check the tools and the store, and reconcile the record with what
//! tmux and git really hold.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::cli::DoctorArgs;
use crate::cmd::dispatch::worktree_root;
use crate::cmd::{Context, Output};
use crate::error::Error;
use crate::git::{self, Repo};
use crate::state::{Session, Status};
use crate::tmux::{Server, Tmux};

#[derive(Default)]
struct Report {
    problems: usize,
}

impl Report {
    fn ok(&mut self, out: &mut Output<'_>, text: String) {
        out.line(format!("ok       {text}"));
    }
    fn problem(&mut self, out: &mut Output<'_>, text: String) {
        self.problems += 1;
        out.line(format!("PROBLEM  {text}"));
    }
    fn fixed(&mut self, out: &mut Output<'_>, text: String) {
        out.line(format!("fixed    {text}"));
    }
}

pub fn run(ctx: &Context, args: &DoctorArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let mut report = Report::default();
    match ctx.tmux().check_version() {
        Ok(v) => report.ok(out, v),
        Err(e) => report.problem(out, e.to_string()),
    }
    match git::cli_version() {
        Ok(v) => report.ok(out, v),
        Err(e) => report.problem(out, e.to_string()),
    }
    match ctx
        .rules()
        .and_then(|r| r.check_all().map_err(|e| Error::BadInput(e.to_string())))
    {
        Ok(()) => report.ok(
            out,
            "screen rules (built in, plus agents.toml if present)".into(),
        ),
        Err(e) => report.problem(out, e.to_string()),
    }
    let store = match ctx.store() {
        Ok(store) => store,
        Err(e) => {
            report.problem(out, e.to_string());
            return Err(Error::CheckFailed);
        }
    };
    match store.integrity_problem()? {
        None => report.ok(out, format!("state store {}", store.path().display())),
        Some(p) => report.problem(out, format!("state store {}: {p}", store.path().display())),
    }

    let sessions: Vec<Session> = store
        .sessions(None, false)?
        .into_iter()
        .filter(|s| s.host.is_none())
        .collect();

    // Panes: one list-panes per tmux server the sessions live on.
    let mut panes_by_socket: HashMap<Option<String>, Option<HashSet<String>>> = HashMap::new();
    for s in &sessions {
        panes_by_socket
            .entry(s.tmux_socket.clone())
            .or_insert_with(|| {
                Tmux::new(&Server::at(s.tmux_socket.as_deref()))
                    .list_panes()
                    .ok()
                    .map(|panes| {
                        panes
                            .into_iter()
                            .filter(|p| !p.dead)
                            .map(|p| p.pane)
                            .collect()
                    })
            });
    }
    for s in &sessions {
        if s.status == Status::Dead {
            continue;
        }
        let alive = match (&s.pane, panes_by_socket.get(&s.tmux_socket)) {
            (Some(pane), Some(Some(live))) => live.contains(pane),
            // A server we cannot ask is not proof of death.
            (Some(_), Some(None)) => true,
            _ => false,
        };
        if alive {
            continue;
        }
        let what = format!(
            "session {} ({}): its pane {} is gone",
            s.label,
            s.repo,
            s.pane.as_deref().unwrap_or("-")
        );
        if args.fix {
            store.change_status(s, Status::Dead, "doctor: pane gone")?;
            report.fixed(out, format!("{what}; marked dead"));
        } else {
            report.problem(out, format!("{what} (doctor --fix marks it dead)"));
        }
    }

    for s in &sessions {
        if !Path::new(&s.worktree).exists() {
            report.problem(
                out,
                format!(
                    "session {} ({}): its worktree {} is missing (its branch {} keeps the work; `orchestra kill {}` clears the row)",
                    s.label, s.repo, s.worktree, s.branch, s.label
                ),
            );
        }
    }

    let mut repos: Vec<String> = sessions.iter().map(|s| s.repo.clone()).collect();
    if let Ok(cwd) = std::env::current_dir() {
        if let Ok(repo) = Repo::discover(&cwd) {
            repos.push(repo.id());
        }
    }
    repos.sort();
    repos.dedup();
    let recorded: HashSet<PathBuf> = sessions
        .iter()
        .map(|s| PathBuf::from(&s.worktree))
        .collect();
    for repo_id in repos {
        let Ok(repo) = Repo::discover(Path::new(&repo_id)) else {
            report.problem(
                out,
                format!("repository {repo_id} is gone, but sessions are recorded for it"),
            );
            continue;
        };
        let root = worktree_root(&repo);
        for (name, path, exists) in repo.linked_worktrees()? {
            if !exists {
                if args.fix {
                    repo.prune_worktrees()?;
                    report.fixed(
                        out,
                        format!(
                            "git's record of worktree {name} ({}) whose folder is gone: pruned",
                            path.display()
                        ),
                    );
                } else {
                    report.problem(out, format!("git records worktree {name} at {}, whose folder is gone (doctor --fix prunes it)", path.display()));
                }
                continue;
            }
            let ours = path.starts_with(&root);
            let canonical = path.canonicalize().unwrap_or(path.clone());
            if ours && !recorded.contains(&path) && !recorded.contains(&canonical) {
                report.problem(
                    out,
                    format!(
                        "worktree {} has no session row: review it, then `git worktree remove {}` (left alone: it may hold work)",
                        path.display(),
                        path.display()
                    ),
                );
            }
        }
    }

    check_merge_journals(ctx, args, &store, &mut report, out)?;

    if report.problems == 0 {
        out.line("all good");
        Ok(())
    } else {
        Err(Error::CheckFailed)
    }
}

/// A merge killed part-way left its journal: finish what the record shows was done (the
/// ref moved: bring the target's worktree along, tear the session down), or drop a
/// journal of a merge that never landed.
fn check_merge_journals(
    ctx: &Context,
    args: &DoctorArgs,
    store: &crate::state::Store,
    report: &mut Report,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    use crate::cmd::merge::{finish_teardown, journal_dir, Journal};
    let Ok(entries) = std::fs::read_dir(journal_dir(&ctx.home)) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Some(journal) = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Journal>(&b).ok())
        else {
            report.problem(out, format!("unreadable merge journal {}", path.display()));
            continue;
        };
        let what = format!("merge of {} into {}", journal.branch, journal.target);
        let Ok(repo) = Repo::discover(Path::new(&journal.repo)) else {
            report.problem(out, format!("{what}: repository {} is gone", journal.repo));
            continue;
        };
        let tip = repo.branch_tip(&journal.target)?.to_string();
        let landed = journal.new.as_deref() == Some(tip.as_str());
        if !landed && tip == journal.old {
            if args.fix {
                let _ = std::fs::remove_file(&path);
                report.fixed(
                    out,
                    format!(
                        "{what} was interrupted before it landed: nothing changed; journal dropped"
                    ),
                );
            } else {
                report.problem(
                    out,
                    format!(
                        "{what} was interrupted before it landed (doctor --fix drops the journal)"
                    ),
                );
            }
            continue;
        }
        if !landed {
            report.problem(
                out,
                format!(
                    "{what}: {} moved on since; check it by hand ({})",
                    journal.target,
                    path.display()
                ),
            );
            continue;
        }
        if !args.fix {
            report.problem(
                out,
                format!("{what} landed but its teardown did not finish (doctor --fix finishes it)"),
            );
            continue;
        }
        let old = crate::git::Oid::from_str(&journal.old).map_err(crate::git::GitError::from)?;
        let new = crate::git::Oid::from_str(&tip).map_err(crate::git::GitError::from)?;
        if let Some(wt) = &journal.target_worktree {
            if Repo::index_tree(wt)? == repo.commit_tree(old)? {
                repo.update_worktree(wt, old, new)?;
            }
        }
        if let Some(session) = store.session_by_id(&journal.session_id)? {
            if session.status != crate::state::Status::Merged {
                finish_teardown(ctx, &repo, store, &session, &journal.target, out)?;
            }
        }
        let _ = std::fs::remove_file(&path);
        report.fixed(out, format!("{what}: teardown finished"));
    }
    Ok(())
}
