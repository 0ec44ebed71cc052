//! `orchestra fork`: a new session from another's current state, the two in one group.

use crate::agent::AgentKind;
use crate::cli::ForkArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::label;
use crate::session::create::Request;
use crate::session::fork;
use crate::session::launch::agent_command;

pub fn run(ctx: &Context, args: &ForkArgs, out: &mut Output<'_>) -> Result<(), Error> {
    label::validate(&args.label)?;
    let prompt = match &args.prompt {
        Some(p) => {
            crate::tmux::typable(p).map_err(|e| Error::BadInput(format!("the prompt: {e}")))?;
            Some(p.clone())
        }
        None => None,
    };
    let repo = open_repo(args.repo.repo.as_deref())?;
    let mut store = ctx.store()?;
    let source = fork::source(&ctx.home, &store, &repo, &args.source)?;
    let (command, kind) = match &args.agent {
        None => (
            source.agent_argv.clone(),
            args.kind.unwrap_or(source.agent_kind),
        ),
        Some(words) => {
            let mut command = agent_command(Some(words))?;
            let kind = args
                .kind
                .unwrap_or_else(|| AgentKind::from_program(&command[0]));
            if source.yolo {
                crate::session::sandbox::add_no_ask(kind, &mut command)?;
            }
            (command, kind)
        }
    };
    let (sandbox, yolo) = (source.sandbox.clone(), source.yolo);
    let mut planned = fork::plan(
        &ctx.home,
        &store,
        &repo,
        source,
        Request {
            label: &args.label,
            prompt,
            command,
            kind,
            after: &[],
            from_upstream: false,
            base: None,
            hooks: true,
            requested_by: None,
            sandbox,
            yolo,
        },
    )?;
    let _work = crate::lock::work_shared(&ctx.home).map_err(Error::io("taking the work lock"))?;
    let session = fork::make(ctx, &mut store, &repo, &mut planned, out)?;
    let from = &planned.source.label;
    out.line(format!(
        "forked {from} into {}: branch {}, worktree {}, window {}",
        session.label,
        planned.plan.branch,
        session.worktree,
        session.window.as_deref().unwrap_or("-"),
    ));
    if planned.conversation {
        out.line(format!(
            "{}'s conversation goes on from {from}'s (claude --resume --fork-session)",
            session.label
        ));
    } else {
        out.line(format!(
            "{} starts a fresh conversation: only a claude session forked from a claude session (not sandboxed, no setup) carries its conversation",
            session.label
        ));
    }
    out.line(format!(
        "group {}: `orchestra compare {}` shows them side by side",
        planned.group, planned.group
    ));
    Ok(())
}
