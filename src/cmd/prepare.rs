//! `orchestra prepare` (hidden): what a session's window runs before its agent when there
//! is something to do first. A session unblocked just now has its branch moved forward
//! onto the work it waited for; a session in `setup` runs the worktree's setup command
//! here, visibly, as the terminal's foreground job. Then this process becomes the agent
//! (exec: same pane, same process), and a detached `prepare --after-start` types the
//! prompt or answers the trust dialog as dispatch would. A failed setup records
//! `setup-failed`, notifies, and leaves its output in the window.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli::PrepareArgs;
use crate::cmd::{Context, Output};
use crate::duration::spell;
use crate::error::Error;
use crate::git::{FastForward, Repo};
use crate::paths::session_dir;
use crate::state::{Session, Status, Store};
use crate::worktree::Job;

/// The prompt a session's agent starts with when it is not the one it was dispatched with
/// (an unblocked session's names the artifacts that are ready): in its folder.
pub const START_PROMPT: &str = "start-prompt.txt";
/// The prompt `--after-start` types, for agents that take none on their command line.
const TYPED_PROMPT: &str = "typed-prompt.txt";
/// `dispatch --from-upstream`: the id of the upstream whose branch head the session
/// starts from when it is unblocked.
pub const FROM_UPSTREAM: &str = "from-upstream";

/// How long the window waits for dispatch to record the session it was made for.
const ROW_WAIT: Duration = Duration::from_secs(30);

/// The argv of a window that prepares session `id` (its setup, a move of its branch) and
/// then runs its agent.
pub fn window_argv(id: &str, unblocked: bool) -> Result<Vec<String>, Error> {
    let exe = std::env::current_exe().map_err(Error::io("finding the orchestra binary"))?;
    let mut argv = vec![
        exe.to_string_lossy().into_owned(),
        "prepare".to_string(),
        id.to_string(),
    ];
    if unblocked {
        argv.push("--unblocked".into());
    }
    Ok(argv)
}

pub fn run(ctx: &Context, args: &PrepareArgs, out: &mut Output<'_>) -> Result<(), Error> {
    if args.after_start {
        return after_start(ctx, &args.session, out);
    }
    let store = ctx.store()?;
    let Some(session) = wait_for_row(&store, &args.session)? else {
        out.line("orchestra: the session this window was made for is not recorded (its dispatch did not finish): nothing to do here");
        return Ok(());
    };
    let mut note = None;
    if args.unblocked {
        note = move_branch(ctx, &store, &session, out);
    }
    match session.status {
        Status::Setup => {
            if let Err(message) = setup(&store, &session, out)? {
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
    Err(start_agent(ctx, &session, note.as_deref(), out))
}

/// The session's row, once it names this window's pane: dispatch records it just after it
/// made the window, a restart in a new window just after it made that.
fn wait_for_row(store: &Store, id: &str) -> Result<Option<Session>, Error> {
    if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Error::BadInput(format!("{id:?} is not a session id")));
    }
    let here = crate::paths::non_empty_env("TMUX_PANE");
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(s) = store.session_by_id(id)? {
            if here.is_none() || s.pane.as_deref() == here.as_deref() {
                return Ok(Some(s));
            }
        }
        if started.elapsed() > ROW_WAIT {
            return Ok(None);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Moves the branch of a session unblocked just now onto the head of its base branch (or,
/// with `--from-upstream`, of its upstream's branch), when it has no commit of its own.
/// Says what happened in the window; returns a line for the agent's prompt when the
/// branch stayed where it was.
fn move_branch(
    ctx: &Context,
    store: &Store,
    session: &Session,
    out: &mut Output<'_>,
) -> Option<String> {
    let repo = Repo::discover(Path::new(&session.repo)).ok()?;
    let upstream = std::fs::read_to_string(session_dir(&ctx.home, &session.id).join(FROM_UPSTREAM))
        .ok()
        .and_then(|id| store.session_by_id(id.trim()).ok().flatten())
        .filter(|u| repo.branch_exists(&u.branch));
    let target = match (&upstream, &session.base_branch) {
        (Some(u), _) => u.branch.clone(),
        (None, Some(base)) if repo.branch_exists(base) => base.clone(),
        _ => {
            out.line(format!(
                "orchestra: {} was dispatched from no branch: it starts where it is",
                session.branch
            ));
            return None;
        }
    };
    let to = repo.branch_tip(&target).ok()?;
    let short = |oid: crate::git::Oid| oid.to_string()[..10].to_string();
    let (said, kept) = match repo.fast_forward(Path::new(&session.worktree), to) {
        Ok(FastForward::Moved { from }) => {
            let said = format!(
                "orchestra: moved {} onto the head of {target} ({} → {}): what landed there while it waited is in the worktree",
                session.branch,
                short(from),
                short(to)
            );
            let _ = store.record_event(session, "moved", &from.to_string(), &to.to_string(), &said);
            (said, None)
        }
        Ok(FastForward::AlreadyThere) => (
            format!(
                "orchestra: {} is at the head of {target} already",
                session.branch
            ),
            None,
        ),
        Ok(FastForward::OwnCommits(n)) => (
            format!(
                "orchestra: {} has {n} commit(s) of its own: not moved onto {target} ({}); it starts where it is",
                session.branch,
                short(to)
            ),
            Some(format!("it has {n} commit(s) of its own")),
        ),
        Ok(FastForward::Uncommitted(paths)) => (
            format!(
                "orchestra: {} has uncommitted changes ({}): not moved onto {target}; it starts where it is",
                session.branch,
                crate::cmd::short_list(&paths)
            ),
            Some("its worktree has uncommitted changes".to_string()),
        ),
        Err(e) => (
            format!(
                "orchestra: could not move {} onto {target}: {e}; it starts where it is",
                session.branch
            ),
            Some(format!("moving it failed ({e})")),
        ),
    };
    out.line(&said);
    let why = kept?;
    let _ = store.record_event(session, "not-moved", "", &target, &said);
    Some(format!(
        "(orchestra: your branch {} was not moved onto the current head of {target} because {why}: work that landed on {target} while you waited is not in your worktree.)",
        session.branch
    ))
}

/// Runs the worktree's setup command in this window, bounded by its timeout, and records
/// how it went: `Ok(Ok(()))` when the agent may start, `Ok(Err(message))` when not.
fn setup(
    store: &Store,
    session: &Session,
    out: &mut Output<'_>,
) -> Result<Result<(), String>, Error> {
    let label = &session.label;
    let table = match crate::worktree::table(Path::new(&session.repo)) {
        Ok(table) => table,
        Err(e) => return Ok(Err(failed(store, session, &e.to_string(), out)?)),
    };
    let Some((argv, timeout)) = table
        .as_ref()
        .and_then(|(_, t)| t.setup_argv().map(|argv| (argv, t.setup_timeout())))
    else {
        store.claim_status(
            session,
            Status::Setup,
            Status::Running,
            "no setup command any more",
        )?;
        return Ok(Ok(()));
    };
    out.line(format!(
        "orchestra: setting up {label}: {} (at most {})",
        shell_words::join(&argv),
        spell(timeout)
    ));
    let env = crate::worktree::command_env(session);
    let started = Instant::now();
    let ended = crate::worktree::run_in_terminal(&Job {
        argv: &argv,
        cwd: Path::new(&session.worktree),
        env: &env,
        timeout,
    });
    let took = spell(started.elapsed());
    if !ended.ok() {
        let why = format!("setup of {label} failed after {took}: {ended}");
        return Ok(Err(failed(store, session, &why, out)?));
    }
    out.line(format!("orchestra: setup of {label} done in {took}"));
    if !store.claim_status(
        session,
        Status::Setup,
        Status::Running,
        &format!("setup done in {took}"),
    )? {
        let now = store
            .session_by_id(&session.id)?
            .map_or("gone".to_string(), |s| s.status.to_string());
        return Ok(Err(format!(
            "orchestra: setup of {label} is done, but the session is {now} now: its agent is not started here"
        )));
    }
    Ok(Ok(()))
}

/// Records a failed setup (`setup-failed`, the badge, a notification); returns what the
/// window says.
fn failed(
    store: &Store,
    session: &Session,
    why: &str,
    out: &mut Output<'_>,
) -> Result<String, Error> {
    let label = &session.label;
    out.line(format!("orchestra: {why}"));
    store.claim_status(session, Status::Setup, Status::SetupFailed, why)?;
    let tmux = crate::cmd::session_tmux(session)?;
    let command = session.window.as_ref().and_then(|w| {
        tmux.set_badge(w, Status::SetupFailed.as_str(), "@orchestra-notify-cmd")
            .ok()
            .flatten()
    });
    crate::notify::spawn(
        &crate::notify::Note {
            title: format!("orchestra: {label} setup failed"),
            body: format!("{why}: `orchestra restart {label}` runs it again"),
        },
        &crate::notify::Fallback {
            command,
            tmux_socket: session.tmux_socket.clone(),
        },
    );
    Ok(format!(
        "orchestra: its agent did not start. Fix the setup (its output is above), then `orchestra restart {label}` runs it again."
    ))
}

/// Ends this process by becoming the session's agent, with the prompt it starts with (and
/// `note` after it). Returns only when that cannot be done.
fn start_agent(
    ctx: &Context,
    session: &Session,
    note: Option<&str>,
    out: &mut Output<'_>,
) -> Error {
    let dir = session_dir(&ctx.home, &session.id);
    let mut prompt = std::fs::read_to_string(dir.join(START_PROMPT))
        .ok()
        .or_else(|| session.prompt.clone());
    if let Some(note) = note {
        let text = prompt.get_or_insert_with(String::new);
        text.push_str("\n\n");
        text.push_str(note);
    }
    let prompt = prompt.map(|p| p.trim_start().to_string());
    let (launch, env) =
        match crate::cmd::dispatch::agent_launch(ctx, session, prompt.as_deref(), false) {
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
    if launch.typed_prompt.is_some() || crate::cmd::dispatch::asks_to_trust(session.agent_kind) {
        crate::notify::spawn_self_detached(
            &[
                "prepare".to_string(),
                session.id.clone(),
                "--after-start".to_string(),
            ],
            &[],
        );
    }
    exec(&launch.argv, Path::new(&session.worktree), &env)
}

/// Ends this process by becoming the placeholder that shows `message` and keeps the window
/// (and what it shows above) open.
fn hold(session: &Session, message: &str) -> Error {
    exec(
        &crate::cmd::dispatch::waiting_placeholder(message),
        Path::new(&session.worktree),
        &[],
    )
}

/// Replaces this process with `argv`; returns only the error when that fails.
fn exec(argv: &[String], cwd: &Path, env: &[(String, String)]) -> Error {
    use std::os::unix::process::CommandExt;
    let Some((program, args)) = argv.split_first() else {
        return Error::BadInput("nothing to run".into());
    };
    let e = std::process::Command::new(program)
        .args(args)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .exec();
    Error::Io {
        context: format!("starting {program}"),
        source: e,
    }
}

/// `prepare --after-start`: what dispatch does once an agent runs (its typed prompt, the
/// trust dialog), for an agent this window's `prepare` became.
fn after_start(ctx: &Context, id: &str, out: &mut Output<'_>) -> Result<(), Error> {
    let store = ctx.store()?;
    let Some(session) = store.session_by_id(id)? else {
        return Ok(());
    };
    let file = session_dir(&ctx.home, id).join(TYPED_PROMPT);
    let typed = std::fs::read_to_string(&file).ok();
    let _ = std::fs::remove_file(&file);
    crate::cmd::dispatch::after_start(ctx, &session, typed.as_deref(), out)
}
