//! `orchestra dispatch`: a new branch, worktree and tmux window with an agent working in it.
//! Any failure part-way undoes what was made, newest first.

use crate::agent::AgentKind;
use crate::cli::DispatchArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::git::Repo;
use crate::group;
use crate::label;
use crate::session::create::{self, Request};
use crate::session::launch::{agent_command, chosen_agent_command};
use crate::session::sandbox;
use crate::state::Status;

pub fn run(ctx: &Context, args: &DispatchArgs, out: &mut Output<'_>) -> Result<(), Error> {
    label::validate(&args.label)?;
    if let Some(who) = &args.requested_by {
        if who.is_empty() || who.len() > 200 || crate::inert::line(who) != *who {
            return Err(Error::BadInput(
                "--requested-by: one line of at most 200 printable characters".into(),
            ));
        }
    }
    if !args.agents.is_empty() || args.count.is_some() {
        return fan_out(ctx, args, out);
    }
    let prompt = read_prompt(args)?;
    let repo = open_repo(args.repo.repo.as_deref())?;
    let mut command = agent_command(args.agent.as_deref())?;
    let kind = args
        .kind
        .unwrap_or_else(|| AgentKind::from_program(&command[0]));
    if let Some(mode) = args.permission_mode {
        mode.add_to(kind, &mut command)?;
    }
    let sandbox = chosen_sandbox(&repo, args)?;
    if args.yolo {
        sandbox::add_no_ask(kind, &mut command)?;
    }
    let mut store = ctx.store()?;
    let plan = create::plan(
        &ctx.home,
        &store,
        &repo,
        Request {
            label: &args.label,
            prompt,
            command,
            kind,
            after: &args.after,
            from_upstream: args.from_upstream,
            base: args.base.as_deref(),
            hooks: !args.no_hooks,
            requested_by: args.requested_by.as_deref(),
            sandbox,
            yolo: args.yolo,
        },
    )?;
    let _work = crate::lock::work_shared(&ctx.home).map_err(Error::io("taking the work lock"))?;
    let session = create::dispatch(ctx, &mut store, &repo, &plan, out)?;
    let label = args.label.as_str();
    let branch = &plan.branch;
    let tmux = ctx.tmux();

    if session.status == Status::Blocked {
        let what: Vec<String> = args.after.clone();
        out.line(format!(
            "{label} is blocked until ready: {}",
            what.join(", ")
        ));
    }
    out.line(format!(
        "dispatched {label}: branch {branch}, worktree {}, window {} in tmux session {}",
        session.worktree,
        session.window.as_deref().unwrap_or("-"),
        session.tmux_session.as_deref().unwrap_or("-"),
    ));
    if session.status == Status::Setup && !args.wait_setup {
        out.line(format!(
            "{label} is setting up in its window: `orchestra list` says setup until its agent starts"
        ));
    }
    let base_session = session.tmux_session.clone().unwrap_or_default();
    let mut attach = tmux.command_prefix();
    attach.extend(
        [
            "new-session",
            "-A",
            "-t",
            &base_session,
            "-s",
            &format!("{base_session}-{label}"),
            ";",
            "select-window",
            "-t",
            label,
        ]
        .map(String::from),
    );
    out.line(format!("attach: {}", shell_join(&attach)));
    if session.status == Status::Setup && args.wait_setup {
        create::wait_for_setup(ctx, &store, &session, plan.setup_timeout())?;
        out.line(format!("setup of {label} done: its agent started"));
    }
    Ok(())
}

/// `--agents`/`--count`: one session per candidate, all checked before any is made, made
/// as one group; a failure part-way undoes every member made.
fn fan_out(ctx: &Context, args: &DispatchArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let prompt = read_prompt(args)?;
    let repo = open_repo(args.repo.repo.as_deref())?;
    let default = if args.agents.is_empty() {
        agent_command(args.agent.as_deref())?
    } else {
        Vec::new()
    };
    let candidates = group::candidates(
        &args.label,
        &args.agents,
        args.count,
        default,
        args.kind,
        |words| chosen_agent_command(Some(words), "name another in --agents"),
    )?;
    let sandbox = chosen_sandbox(&repo, args)?;
    let mut store = ctx.store()?;
    group::check_free(&store, &repo, &args.label)?;
    let mut commands = Vec::new();
    for c in &candidates {
        let mut command = c.command.clone();
        if let Some(mode) = args.permission_mode {
            mode.add_to(c.kind, &mut command)?;
        }
        if args.yolo {
            sandbox::add_no_ask(c.kind, &mut command)?;
        }
        commands.push(command);
    }
    let mut plans = Vec::new();
    for (c, command) in candidates.iter().zip(commands) {
        plans.push(create::plan(
            &ctx.home,
            &store,
            &repo,
            Request {
                label: &c.label,
                prompt: prompt.clone(),
                command,
                kind: c.kind,
                after: &args.after,
                from_upstream: args.from_upstream,
                base: args.base.as_deref(),
                hooks: !args.no_hooks,
                requested_by: args.requested_by.as_deref(),
                sandbox: sandbox.clone(),
                yolo: args.yolo,
            },
        )?);
    }
    let _work = crate::lock::work_shared(&ctx.home).map_err(Error::io("taking the work lock"))?;
    let sessions = group::fan_out(ctx, &mut store, &repo, &args.label, &plans, out)?;
    for (session, plan) in sessions.iter().zip(&plans) {
        out.line(format!(
            "dispatched {}: {} on branch {}, worktree {}, window {}",
            session.label,
            session.agent_kind.as_str(),
            plan.branch,
            session.worktree,
            session.window.as_deref().unwrap_or("-"),
        ));
    }
    out.line(format!(
        "group {}: {} session(s); `orchestra compare {}` shows them side by side",
        args.label,
        sessions.len(),
        args.label
    ));
    if args.wait_setup {
        for (session, plan) in sessions.iter().zip(&plans) {
            if session.status == Status::Setup {
                create::wait_for_setup(ctx, &store, session, plan.setup_timeout())?;
                out.line(format!(
                    "setup of {} done: its agent started",
                    session.label
                ));
            }
        }
    }
    Ok(())
}

/// The prompt, if any: text an agent can take (typed or on its command line), so no
/// control character but tab and line ends.
fn read_prompt(args: &DispatchArgs) -> Result<Option<String>, Error> {
    let prompt = match (&args.prompt, &args.prompt_file) {
        (Some(p), _) => p.clone(),
        (None, Some(file)) => std::fs::read_to_string(file).map_err(|e| {
            Error::BadInput(format!(
                "cannot read the prompt file {}: {e}",
                file.display()
            ))
        })?,
        (None, None) => return Ok(None),
    };
    crate::tmux::typable(&prompt).map_err(|e| Error::BadInput(format!("the prompt: {e}")))?;
    Ok(Some(prompt))
}

/// A shell line a person can paste: each word quoted where needed, `;` as `\;`.
fn shell_join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if w == ";" {
                "\\;".to_string()
            } else {
                shell_words::quote(w).into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The sandbox a dispatch asked for (its flags over orchestra.toml's), for one session or
/// every candidate of a fan-out alike.
fn chosen_sandbox(repo: &Repo, args: &DispatchArgs) -> Result<Option<sandbox::Network>, Error> {
    sandbox::chosen(
        repo.main_worktree(),
        &sandbox::Asked {
            sandbox: args.sandbox,
            no_sandbox: args.no_sandbox,
            network: args.network.as_deref(),
            yolo: args.yolo,
        },
    )
}
