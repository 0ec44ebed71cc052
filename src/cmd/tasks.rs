//! `orchestra tasks`: the open tasks of this repo's project in its tracker, and `tasks pick`
//! (moves one to in progress, and with --dispatch starts a session on it).

use serde::Serialize;

use crate::cli::{TasksArgs, TasksCommand};
use crate::cmd::{open_repo, pick_task, render_table, Context, Output};
use crate::error::Error;
use crate::tasks;
use crate::tasks::work::{source_of, task_error};

pub fn run(ctx: &Context, args: &TasksArgs, out: &mut Output<'_>) -> Result<(), Error> {
    match &args.command {
        None => list(args, out),
        Some(TasksCommand::Pick(pick_args)) => {
            let repo_arg = pick_args.repo.repo.as_deref().or(args.repo.repo.as_deref());
            let repo = open_repo(repo_arg)?;
            let picked = pick_task(ctx, &repo, pick_args, out)?;
            out.line(picked);
            Ok(())
        }
    }
}

#[derive(Serialize)]
struct Row<'a> {
    id: &'a str,
    title: &'a str,
    status: &'a str,
    url: &'a str,
}

fn list(args: &TasksArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.repo.repo.as_deref())?;
    let (_, source) = source_of(&repo)?;
    let open = source.open_tasks().map_err(task_error)?;
    if args.json {
        let rows: Vec<Row<'_>> = open
            .iter()
            .map(|t| Row {
                id: &t.id,
                title: &t.title,
                status: &t.status,
                url: &t.url,
            })
            .collect();
        out.line(serde_json::to_string_pretty(&rows).unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    if open.is_empty() {
        out.line(format!("no open tasks in project {}", source.project()));
        return Ok(());
    }
    let rows: Vec<Vec<String>> = open
        .iter()
        .map(|t| {
            vec![
                t.id.clone(),
                tasks::one_line(&t.title, 60),
                t.status.clone(),
                t.url.clone(),
            ]
        })
        .collect();
    for line in render_table(&["ID", "TITLE", "STATUS", "URL"], &rows) {
        out.line(line);
    }
    Ok(())
}
