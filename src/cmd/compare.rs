//! `orchestra compare`: a group's candidates side by side (what each changed, its check,
//! cost and time, its conflicts with the target and the others), what one changes that
//! another does not, and the choice: one merged through `orchestra merge`, the others
//! archived (never deleted) on the person's yes.

use std::io::{BufRead, IsTerminal};

use crate::cli::{CompareArgs, KillArgs, MergeArgs, RepoArg};
use crate::cmd::{dollars, open_repo, render_table, run_in_popup, Context, Output};
use crate::error::Error;
use crate::git::Repo;
use crate::group;
use crate::state::{Session, Status};

pub fn run(ctx: &Context, args: &CompareArgs, out: &mut Output<'_>) -> Result<(), Error> {
    crate::label::validate(&args.group)?;
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    let (group, members) = group::members(&store, &repo, &args.group)?;
    group::refuse_remote(&members, "compare reads")?;
    if group.is_none() || members.len() < 2 {
        return Err(Error::BadInput(format!(
            "{} has {} candidate(s): compare needs a group of two or more (`dispatch {} --agents …` or `--count N` makes one)",
            args.group,
            members.len(),
            args.group
        )));
    }
    let member = |label: &str| -> Result<&Session, Error> {
        members.iter().find(|s| s.label == label).ok_or_else(|| {
            Error::BadInput(format!(
                "{label} is not a candidate of group {}: its candidates are {}",
                args.group,
                labels(&members)
            ))
        })
    };
    if args.popup {
        return run_in_popup(
            ctx,
            args.client.as_deref(),
            repo.main_worktree(),
            &format!(" compare {} ", args.group),
        );
    }
    if let Some(a) = &args.a {
        let Some(b) = &args.b else {
            return Err(Error::BadInput(format!(
                "compare {} {a}: name a second candidate to compare it with ({})",
                args.group,
                labels(&members)
            )));
        };
        let (a, b) = (member(a)?, member(b)?);
        let patch = group::difference(&repo, a, b)?;
        if patch.is_empty() {
            out.line(format!(
                "{} changes nothing that {} does not change the same way",
                a.label, b.label
            ));
        } else {
            out.line(format!(
                "what {} changes that {} does not:",
                a.label, b.label
            ));
            out.line(patch.trim_end());
        }
        return Ok(());
    }
    if let Some(pick) = &args.pick {
        let chosen = member(pick)?.clone();
        return pick_one(ctx, &repo, &members, &chosen, out);
    }
    let prices =
        crate::cost::Prices::load(&ctx.home).map_err(|e| Error::BadInput(e.to_string()))?;
    let costs = crate::cost::session_costs(&store, &prices, &members)?
        .into_iter()
        .map(|(id, c)| (id, c.cost_usd))
        .collect();
    let rows = group::compare(&store, &repo, &members, &costs)?;
    if args.json {
        out.line(serde_json::to_string_pretty(&rows).unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    table(&rows, out);
    if args.choose {
        let live: Vec<&Session> = members
            .iter()
            .filter(|s| s.status != Status::Merged)
            .collect();
        let Some(label) = ask(
            out,
            &format!(
                "Merge which candidate ({})? Empty leaves them all: ",
                live.iter()
                    .map(|s| s.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )?
        else {
            out.line("nothing merged");
            return Ok(());
        };
        if label.is_empty() {
            out.line("nothing merged");
            return Ok(());
        }
        let chosen = member(&label)?.clone();
        return pick_one(ctx, &repo, &members, &chosen, out);
    }
    Ok(())
}

fn labels(members: &[Session]) -> String {
    members
        .iter()
        .map(|s| s.label.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn table(rows: &[group::Row], out: &mut Output<'_>) {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut conflicts: Vec<String> = Vec::new();
            if !r.conflicts_target.is_empty() {
                conflicts.push(format!(
                    "target ({})",
                    crate::paths::short_list(&r.conflicts_target)
                ));
            }
            for c in &r.conflicts_with {
                conflicts.push(format!(
                    "{} ({})",
                    c.label,
                    crate::paths::short_list(&c.paths)
                ));
            }
            vec![
                r.label.clone(),
                r.agent.clone(),
                r.status.clone(),
                r.state.clone(),
                r.commits.to_string(),
                r.files.to_string(),
                format!("+{} -{}", r.insertions, r.deletions),
                match &r.check {
                    None => "-".into(),
                    Some(c) => format!(
                        "{} {}",
                        if c.passed { "pass" } else { "FAIL" },
                        crate::duration::spell(std::time::Duration::from_millis(c.duration_ms))
                    ),
                },
                dollars(r.cost_usd),
                crate::duration::age(r.wall_secs),
                if conflicts.is_empty() {
                    "-".into()
                } else {
                    conflicts.join(", ")
                },
            ]
        })
        .collect();
    for line in render_table(
        &[
            "LABEL",
            "AGENT",
            "STATUS",
            "STATE",
            "COMMITS",
            "FILES",
            "LINES",
            "CHECK",
            "COST",
            "TIME",
            "CONFLICTS",
        ],
        &cells,
    ) {
        out.line(line);
    }
}

/// A line read from the terminal after `question`; `None` without a terminal.
fn ask(out: &mut Output<'_>, question: &str) -> Result<Option<String>, Error> {
    if !std::io::stdin().is_terminal() {
        return Ok(None);
    }
    let _ = write!(out.out, "{}", crate::inert::line(question));
    let _ = out.out.flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(Error::io("reading the answer"))?;
    Ok(Some(answer.trim().to_string()))
}

/// `chosen` merged through the ordinary merge (its summary, its [y/N], its in-memory
/// check), then, on a yes, the other live candidates archived as `kill --force` does.
fn pick_one(
    ctx: &Context,
    repo: &Repo,
    members: &[Session],
    chosen: &Session,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    if chosen.status == Status::Merged {
        return Err(Error::Refused(format!(
            "{} is already merged",
            chosen.label
        )));
    }
    let repo_arg = || RepoArg {
        repo: Some(repo.main_worktree().to_path_buf()),
    };
    crate::cmd::run(
        ctx,
        &crate::cli::Command::Merge(MergeArgs {
            label: chosen.label.clone(),
            repo: repo_arg(),
            yes: false,
            into: None,
            squash: false,
            include_uncommitted: false,
            popup: false,
            client: None,
        }),
        out,
    )?;
    let others: Vec<&Session> = members
        .iter()
        .filter(|s| s.id != chosen.id && s.status != Status::Merged)
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    let names = others
        .iter()
        .map(|s| s.label.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let answer = ask(
        out,
        &format!(
            "Archive the other candidates ({names})? Each goes with its commits (uncommitted work as a WIP commit) to an archive/ branch [y/N] "
        ),
    )?;
    if !matches!(
        answer.as_deref().map(str::to_ascii_lowercase).as_deref(),
        Some("y" | "yes")
    ) {
        out.line(format!(
            "the others stay: `orchestra kill LABEL --force` archives one ({names})"
        ));
        return Ok(());
    }
    for other in others {
        crate::cmd::run(
            ctx,
            &crate::cli::Command::Kill(KillArgs {
                label: other.label.clone(),
                repo: repo_arg(),
                force: true,
            }),
            out,
        )?;
    }
    Ok(())
}
