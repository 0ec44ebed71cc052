//! `orchestra prepare` (hidden): what a session's window runs before its agent when there
//! is something to do first. A session unblocked just now has its branch moved forward
//! onto the work it waited for; a session in `setup` runs the worktree's setup command
//! here, visibly, as the terminal's foreground job. Then this process becomes the agent
//! (exec: same pane, same process), and a detached `prepare --after-start` types the
//! prompt or answers the trust dialog as dispatch would. A failed setup records
//! `setup-failed`, notifies, and leaves its output in the window.

use std::path::Path;

use crate::cli::PrepareArgs;
use crate::cmd::{Context, Output};
use crate::error::Error;
use crate::paths::session_dir;
use crate::session::launch::{START_PROMPT, TYPED_PROMPT};
use crate::session::prepare;
use crate::state::{Session, Status};

pub fn run(ctx: &Context, args: &PrepareArgs, out: &mut Output<'_>) -> Result<(), Error> {
    if args.after_start {
        return prepare::after_start(ctx, &args.session, out);
    }
    let store = ctx.store()?;
    let Some(session) = prepare::wait_for_row(&store, &args.session)? else {
        out.line("orchestra: the session this window was made for is not recorded (its dispatch did not finish): nothing to do here");
        return Ok(());
    };
    let mut note = None;
    if args.unblocked {
        note = prepare::move_branch(ctx, &store, &session, out);
    }
    match session.status {
        Status::Setup => {
            if let Err(message) = prepare::setup(&ctx.home, &store, &session, out)? {
                return Err(hold(&session, &message));
            }
        }
        Status::Running => {}
        other => {
            let message = format!(
                "orchestra: {} is {other}: its agent is not started here",
                session.label
            );
            return Err(hold(&session, &message));
        }
    }
    Err(start_agent(
        ctx,
        &session,
        note.as_deref(),
        args.resume,
        out,
    ))
}

/// Ends this process by becoming the session's agent, with the prompt it starts with (and
/// `note` after it), or its conversation continued (`resume`: a restart's, no prompt).
/// Returns only when that cannot be done.
fn start_agent(
    ctx: &Context,
    session: &Session,
    note: Option<&str>,
    resume: bool,
    out: &mut Output<'_>,
) -> Error {
    let dir = session_dir(&ctx.home, &session.id);
    let mut prompt = if resume {
        None
    } else {
        std::fs::read_to_string(dir.join(START_PROMPT))
            .ok()
            .or_else(|| session.prompt.clone())
    };
    if let Some(note) = note {
        let text = prompt.get_or_insert_with(String::new);
        text.push_str("\n\n");
        text.push_str(note);
    }
    let prompt = prompt.map(|p| p.trim_start().to_string());
    let (launch, env) =
        match crate::session::launch::agent_launch(ctx, session, prompt.as_deref(), resume) {
            Ok(launched) => launched,
            Err(e) => return e,
        };
    let typed = dir.join(TYPED_PROMPT);
    if let Some(text) = &launch.typed_prompt {
        if let Err(e) = crate::paths::write_private(&typed, text) {
            return Error::io(format!("writing {}", typed.display()))(e);
        }
    }
    // A clean screen: what `--after-start` waits for is the agent's first drawing.
    let _ = out.out.write_all(b"\x1b[H\x1b[2J");
    if note.is_some() {
        let _ = writeln!(
            out.out,
            "orchestra: {} was not moved onto the work it waited for (see the prompt)",
            session.branch
        );
    }
    let _ = out.out.flush();
    if launch.typed_prompt.is_some() || crate::session::launch::asks_to_trust(session.agent_kind) {
        crate::notify::spawn_self_detached(
            &[
                "prepare".to_string(),
                session.id.clone(),
                "--after-start".to_string(),
            ],
            &[],
        );
    }
    exec(
        &launch.argv,
        Path::new(&session.worktree),
        &env,
        session.sandbox.is_some(),
    )
}

/// Ends this process by becoming the placeholder that shows `message` and keeps the window
/// (and what it shows above) open.
fn hold(session: &Session, message: &str) -> Error {
    exec(
        &crate::session::launch::waiting_placeholder(message),
        Path::new(&session.worktree),
        &[],
        false,
    )
}

/// Replaces this process with `argv`; returns only the error when that fails. `only`:
/// `env` is all it gets (a sandbox's allowed environment), not added to this one's.
fn exec(argv: &[String], cwd: &Path, env: &[(String, String)], only: bool) -> Error {
    use std::os::unix::process::CommandExt;
    let Some((program, args)) = argv.split_first() else {
        return Error::BadInput("nothing to run".into());
    };
    let mut command = crate::process::command(program);
    if only {
        command.env_clear();
    }
    let e = command
        .args(args)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .exec();
    Error::Io {
        context: format!("starting {program}"),
        source: e,
    }
}
