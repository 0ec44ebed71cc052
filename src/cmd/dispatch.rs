//! `orchestra dispatch`: a new branch, worktree and tmux window with an agent working in it.
//! Any failure part-way undoes what was made, newest first.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::agent::{self, AgentKind, LaunchContext};
use crate::cli::DispatchArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::git::{Oid, Repo};
use crate::label;
use crate::paths::{find_program, non_empty_env, session_dir};
use crate::state::{now, AgentState, Session, Status, Store};
use crate::tmux::{Key, OwnedPane, Tmux, WindowId, WindowSpec};

/// How long a generic agent gets to draw something before its prompt is typed anyway.
const TYPE_PROMPT_AFTER: Duration = Duration::from_secs(1);
/// How long an agent whose screens the rules read (aider) gets to show its prompt; its
/// start may take seconds on a busy machine.
const PROMPT_READY_WAIT: Duration = Duration::from_secs(120);
/// How long dispatch watches a new claude for its trust dialog.
const TRUST_DIALOG_WAIT: Duration = Duration::from_secs(6);

pub fn run(ctx: &Context, args: &DispatchArgs, out: &mut Output<'_>) -> Result<(), Error> {
    label::validate(&args.label)?;
    let prompt = read_prompt(args)?;
    let repo = open_repo(args.repo.repo.as_deref())?;
    let command = agent_command(args.agent.as_deref())?;
    let kind = args
        .kind
        .unwrap_or_else(|| AgentKind::from_program(&command[0]));
    let mut store = ctx.store()?;
    let repo_id = repo.id();
    let label = args.label.as_str();
    if let Some(existing) = store.session_by_label(&repo_id, label)? {
        return Err(Error::BadInput(format!(
            "label {label:?} is already used by session {} ({}) in this repo: pick another (`orchestra slugify <title>` finds a free one)",
            existing.id, existing.status
        )));
    }
    let branch = format!("session/{label}");
    if repo.branch_exists(&branch) {
        return Err(Error::BadInput(format!(
            "branch {branch} already exists: pick another label (`orchestra slugify <title>` finds a free one)"
        )));
    }
    let worktree = worktree_root(&repo).join(label);
    if worktree.exists() {
        return Err(Error::BadInput(format!(
            "{} already exists: pick another label or remove it",
            worktree.display()
        )));
    }
    let mut waits: Vec<(Session, String)> = Vec::new();
    for spec in &args.after {
        let (upstream, artifact) = spec.split_once(':').ok_or_else(|| {
            Error::BadInput(format!(
                "--after {spec:?}: write it UPSTREAM:ARTIFACT (e.g. api:out/schema.json)"
            ))
        })?;
        let upstream = crate::cmd::find_session(&store, &repo, upstream)?;
        crate::artifact::validate(artifact)?;
        waits.push((upstream, artifact.to_string()));
    }
    let from_upstream = match (args.from_upstream, &waits[..]) {
        (false, _) => None,
        (true, []) => {
            return Err(Error::BadInput(
                "--from-upstream needs --after UPSTREAM:ARTIFACT: the session starts from that upstream's branch".into(),
            ))
        }
        (true, [(first, _), rest @ ..]) => {
            if let Some((other, _)) = rest.iter().find(|(u, _)| u.id != first.id) {
                return Err(Error::BadInput(format!(
                    "--from-upstream: the session waits for {} and {}: it can start from one upstream's branch only",
                    first.label, other.label
                )));
            }
            Some(first.id.clone())
        }
    };
    let base = repo.resolve_commit(args.base.as_deref())?;
    let base_branch = match args.base.as_deref() {
        Some(rev) if repo.branch_exists(rev) => Some(rev.to_string()),
        _ => repo.current_branch(),
    };
    // orchestra.toml's [worktree]: a broken file is refused here, before anything is made.
    let table = crate::worktree::table(repo.main_worktree())?;
    if let Some((file, table)) = &table {
        crate::worktree::check_sources(repo.main_worktree(), file, table)?;
    }
    let setup = table.as_ref().and_then(|(_, t)| t.setup_argv()).is_some();

    let _work = crate::lock::work_shared(&ctx.home).map_err(Error::io("taking the work lock"))?;
    let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
    let agent_uuid = uuid::Uuid::new_v4().to_string();
    let port = free_port(&store)?;
    let tmux = ctx.tmux();
    let mut undo = Undo::new(&repo, &tmux);

    let result = (|out: &mut Output<'_>| -> Result<Session, Error> {
        let dir = session_dir(&ctx.home, &id);
        crate::paths::private_dir(&dir)
            .map_err(Error::io(format!("creating {}", dir.display())))?;
        undo.session_dir = Some(dir.clone());
        match kind {
            AgentKind::Claude => write_claude_settings(ctx, &dir, &command, !args.no_hooks)?,
            AgentKind::Codex => write_codex_settings(&dir, &id, !args.no_hooks)?,
            _ => {}
        }
        if kind == AgentKind::Gemini && !args.no_hooks {
            write_gemini_home(ctx, &dir, &id, out)?;
        }
        crate::fault::point("dispatch");

        let root = worktree_root(&repo);
        if !root.exists() {
            std::fs::create_dir_all(&root)
                .map_err(Error::io(format!("creating {}", root.display())))?;
            undo.worktree_root = Some(root);
            crate::fault::point("dispatch");
        }
        repo.add_worktree(&worktree, &branch, base, &id)?;
        undo.worktree = Some((worktree.clone(), branch.clone(), base));
        crate::fault::point("dispatch");
        repo.copy_worktree_includes(&worktree)?;
        crate::fault::point("dispatch");
        if let Some((file, table)) = &table {
            for note in crate::worktree::place(repo.main_worktree(), &worktree, file, table)? {
                out.note(note);
            }
            crate::fault::point("dispatch");
        }
        if let Some(upstream) = &from_upstream {
            let file = dir.join(crate::cmd::prepare::FROM_UPSTREAM);
            crate::paths::write_private(&file, upstream)
                .map_err(Error::io(format!("writing {}", file.display())))?;
        }

        let at = now();
        let blocked = !waits.is_empty();
        let mut session = Session {
            id: id.clone(),
            repo: repo_id.clone(),
            label: label.to_string(),
            branch: branch.clone(),
            base_commit: base.to_string(),
            base_branch: base_branch.clone(),
            worktree: worktree.to_string_lossy().into_owned(),
            host: None,
            tmux_socket: None,
            tmux_session: None,
            window: None,
            pane: None,
            agent_kind: kind,
            agent_argv: command.clone(),
            agent_uuid: (kind == AgentKind::Claude).then(|| agent_uuid.clone()),
            port: Some(port),
            prompt: prompt.clone(),
            status: if blocked {
                Status::Blocked
            } else if setup {
                Status::Setup
            } else {
                Status::Running
            },
            state: AgentState::Unknown,
            state_at: 0,
            state_source: Default::default(),
            manifest: None,
            owns_tmux_session: false,
            retry_count: 0,
            created_at: at,
            updated_at: at,
        };
        let (launch, env) = agent_launch(ctx, &session, prompt.as_deref(), false)?;
        // A blocked session's window says what it waits for; its agent starts later.
        let argv = if blocked {
            let what: Vec<String> = waits
                .iter()
                .map(|(u, a)| format!("{}: {a}", u.label))
                .collect();
            waiting_placeholder(&format!("orchestra: {label} waits for {}", what.join(", ")))
        } else if setup {
            // The window runs the setup, visibly, then becomes the agent.
            crate::cmd::prepare::window_argv(&id, false)?
        } else {
            launch.argv.clone()
        };
        let badge = if session.status == Status::Setup {
            Status::Setup.as_str()
        } else {
            AgentState::Unknown.as_str()
        };
        let window = tmux.new_window(
            &WindowSpec {
                name: label,
                cwd: &worktree,
                argv: &argv,
                env: &env,
                placement: tmux.placement_for_repo(&repo.name()),
            },
            &[
                ("@orchestra_id", &id),
                ("@orchestra_label", label),
                ("@orchestra_state", badge),
            ],
        )?;
        undo.window = Some((window.window.clone(), id.clone()));
        crate::fault::point("dispatch");
        session.tmux_socket = Some(window.socket_path.clone());
        session.tmux_session = Some(window.session_name.clone());
        session.window = Some(window.window.clone());
        session.pane = Some(window.pane.clone());

        store.insert_session(&session)?;
        undo.row = Some(id.clone());
        crate::fault::point("dispatch");
        for (upstream, artifact) in &waits {
            if let Err(refusal) = store.add_dependency(&id, upstream, artifact)? {
                return Err(Error::BadInput(format!(
                    "--after {}:{artifact}: {refusal:?}",
                    upstream.label
                )));
            }
        }
        store.record_event(&session, "dispatched", "", session.status.as_str(), &branch)?;
        crate::fault::point("dispatch");
        if blocked || setup {
            return Ok(session);
        }

        let pane = OwnedPane::new(&window.pane, &id)?;
        if let Some(text) = &launch.typed_prompt {
            type_prompt_when_ready(ctx, &tmux, &pane, &session, text, out)?;
        }
        if asks_to_trust(kind) {
            trust_our_worktree(ctx, &tmux, &session, out);
        }
        Ok(session)
    })(out);

    let session = match result {
        Ok(session) => session,
        Err(e) => {
            if let Some(id) = undo.row.take() {
                if let Ok(Some(row)) = store.session_by_id(&id) {
                    let _ = store.delete_session(&row, "dispatch undone");
                }
            }
            for problem in undo.run() {
                out.note(format!("while undoing: {problem}"));
            }
            return Err(e);
        }
    };

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
        let timeout = table
            .as_ref()
            .map_or(crate::manifest::DEFAULT_SETUP_TIMEOUT, |(_, t)| {
                t.setup_timeout()
            });
        wait_for_setup(ctx, &store, &session, timeout, out)?;
    }
    Ok(())
}

/// How long past its own timeout a setup may take to be recorded (the window's process
/// starts, the process group's grace between SIGTERM and SIGKILL, the record).
pub const SETUP_GRACE: Duration = Duration::from_secs(30);

/// `--wait-setup`: waits until the session's setup has been recorded done (its agent
/// starts) or failed (refused, exit 1). Reads the record only when its files changed.
fn wait_for_setup(
    ctx: &Context,
    store: &Store,
    session: &Session,
    timeout: Duration,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    let label = &session.label;
    let started = Instant::now();
    let mut seen = String::new();
    let mut read_at = Instant::now();
    loop {
        let fingerprint = Store::fingerprint(&ctx.home);
        // The files' stamps tell a write at once; a read now and then covers two writes
        // the clock's granularity would not tell apart.
        if fingerprint != seen || read_at.elapsed() > Duration::from_millis(250) {
            seen = fingerprint;
            read_at = Instant::now();
            let now = store.session_by_id(&session.id)?;
            match now.as_ref().map(|s| s.status) {
                Some(Status::Setup) => {}
                Some(Status::Running) => {
                    out.line(format!("setup of {label} done: its agent started"));
                    return Ok(());
                }
                Some(Status::SetupFailed) => {
                    let why = store
                        .events(Some(&session.repo), Some(label), 20)?
                        .into_iter()
                        .rev()
                        .find(|e| e.kind == "status" && e.new.as_deref() == Some("setup-failed"))
                        .and_then(|e| e.detail)
                        .unwrap_or_else(|| format!("setup of {label} failed"));
                    return Err(Error::Refused(format!(
                        "{why}: its window keeps the output; `orchestra restart {label}` runs it again"
                    )));
                }
                Some(other) => {
                    return Err(Error::Refused(format!(
                        "{label} is {other} now, before its setup was recorded done"
                    )))
                }
                None => {
                    return Err(Error::Refused(format!(
                        "{label} was removed while it set up"
                    )))
                }
            }
        }
        if started.elapsed() > timeout + SETUP_GRACE {
            return Err(Error::Refused(format!(
                "setup of {label} is still not recorded done after {}: see its window (`orchestra doctor` reports it)",
                crate::duration::spell(timeout + SETUP_GRACE)
            )));
        }
        // Two `stat`s a look: cheap enough to see a quick setup end within milliseconds.
        std::thread::sleep(Duration::from_millis(3));
    }
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

/// An agent command line longer than this does not go through tmux as it is: tmux
/// refuses a command over its message size (about 16 KB, "command too long").
const ARGV_IN_TMUX_MAX: usize = 8 * 1024;

/// The argv and environment that start `session`'s agent with `prompt` (or continue its
/// conversation with `resume`), as dispatch, unblocking and restart all need them. A
/// command line too long for tmux (a long prompt) has its last argument — the prompt —
/// read from a file in the session's folder by the shell that execs the agent.
pub fn agent_launch(
    ctx: &Context,
    session: &Session,
    prompt: Option<&str>,
    resume: bool,
) -> Result<(agent::Launch, Vec<(String, String)>), Error> {
    let kind = session.agent_kind;
    let dir = session_dir(&ctx.home, &session.id);
    let settings_file = dir.join("settings.json");
    let worker_prompt = crate::prompts::load(&ctx.home, crate::prompts::WORKER);
    let orchestra = std::env::current_exe().map_err(Error::io(
        "finding the orchestra binary for the agent's hooks",
    ))?;
    let gemini_home = dir.join(agent::gemini::HOME_DIR);
    // Made by dispatch (unless --no-hooks); brought up to date on every start, as the
    // person's settings may have changed. If they cannot be read now, last time's stay.
    let gemini_home = (kind == AgentKind::Gemini && gemini_home.is_dir()).then(|| {
        let _ = prepare_gemini_home(ctx, &dir, &session.id);
        gemini_home
    });
    let trust_worktree = kind == AgentKind::Gemini && trusts_worktrees(&ctx.tmux());
    let notify = match kind {
        AgentKind::Codex => codex_notify_from(&settings_file),
        _ => None,
    };
    let mut launch = agent::launch(
        kind,
        &session.agent_argv,
        prompt,
        &LaunchContext {
            agent_uuid: session.agent_uuid.as_deref().unwrap_or_default(),
            settings_file: &settings_file,
            session_dir: &dir,
            orchestra: &orchestra,
            system_prompt: worker_prompt.as_deref(),
            resume,
            gemini_home: gemini_home.as_deref(),
            trust_worktree,
            notify: notify.as_deref(),
        },
    );
    let length: usize = launch.argv.iter().map(|a| a.len() + 1).sum();
    if length > ARGV_IN_TMUX_MAX {
        let file = session_dir(&ctx.home, &session.id).join("last-argument.txt");
        launch.argv = last_argument_from_file(&launch.argv, &file)?;
    }
    let mut env = agent_env(ctx, session);
    env.append(&mut launch.env);
    Ok((launch, env))
}

/// The environment a session's window runs with: its id, orchestra's home, its port.
pub fn agent_env(ctx: &Context, session: &Session) -> Vec<(String, String)> {
    let mut env = vec![
        ("ORCHESTRA_SESSION".to_string(), session.id.clone()),
        (
            "ORCHESTRA_HOME".to_string(),
            ctx.home.to_string_lossy().into_owned(),
        ),
    ];
    if let Some(port) = session.port {
        env.push(("ORCHESTRA_PORT".to_string(), port.to_string()));
    }
    env
}

/// `argv` with its last argument written to `file` and read back by `sh` just before it
/// execs the program: exactly (the `x` keeps trailing newlines from `$(…)`), with the
/// file's path, not its text, on the command line tmux sees.
fn last_argument_from_file(argv: &[String], file: &Path) -> Result<Vec<String>, Error> {
    let Some((last, head)) = argv.split_last() else {
        return Ok(argv.to_vec());
    };
    crate::paths::write_private(file, last)
        .map_err(Error::io(format!("writing {}", file.display())))?;
    let mut words: Vec<String> = [
        "sh",
        "-c",
        "last=$(cat -- \"$1\"; printf x) && shift && exec \"$@\" \"${last%x}\"",
        "orchestra-launch",
    ]
    .map(String::from)
    .to_vec();
    words.push(file.to_string_lossy().into_owned());
    words.extend(head.iter().cloned());
    Ok(words)
}

/// Writes `dir/settings.json` for `claude --settings`: hooks calling `orchestra event`
/// for the events the installed release knows (none when `hooks` is false).
pub fn write_claude_settings(
    ctx: &Context,
    dir: &Path,
    command: &[String],
    hooks: bool,
) -> Result<(), Error> {
    let settings_file = dir.join("settings.json");
    let settings = if hooks {
        let version = agent::agent_version(command, &ctx.home.join("agent-versions.json"));
        let exe = std::env::current_exe()
            .map_err(Error::io("finding the orchestra binary for the hooks"))?;
        agent::claude_settings(&exe, version)
    } else {
        serde_json::json!({})
    };
    let settings = serde_json::to_string_pretty(&settings).unwrap_or_default();
    crate::paths::write_private(&settings_file, settings)
        .map_err(Error::io(format!("writing {}", settings_file.display())))
}

/// Makes the session's Gemini home (`agent::gemini`): the person's settings with hooks
/// calling `orchestra event`. Settings the CLI could not read either leave the agent
/// without hooks (its screen still tells its state), with a note saying so.
fn write_gemini_home(
    ctx: &Context,
    dir: &Path,
    id: &str,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    match prepare_gemini_home(ctx, dir, id) {
        Ok(()) => Ok(()),
        Err(e @ agent::gemini::GeminiHomeError::Settings { .. }) => {
            // A half-made home must not be taken for a good one by later starts.
            let _ = std::fs::remove_dir_all(dir.join(agent::gemini::HOME_DIR));
            out.note(e.to_string());
            Ok(())
        }
        Err(agent::gemini::GeminiHomeError::Io { path, source }) => Err(Error::Io {
            context: format!("making the Gemini home {}", path.display()),
            source,
        }),
    }
}

fn prepare_gemini_home(
    ctx: &Context,
    dir: &Path,
    id: &str,
) -> Result<(), agent::gemini::GeminiHomeError> {
    let exe = std::env::current_exe().map_err(|source| agent::gemini::GeminiHomeError::Io {
        path: PathBuf::from("the orchestra binary"),
        source,
    })?;
    // Where the person's own CLI keeps its `.gemini`.
    let person = non_empty_env("GEMINI_CLI_HOME")
        .or_else(|| non_empty_env("HOME"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    let hooks = agent::gemini::hooks(&exe, &ctx.home, id);
    agent::gemini::prepare_home(&dir.join(agent::gemini::HOME_DIR), &person, &hooks)
}

/// `@orchestra-trust-worktrees` (default on): agents may trust the worktrees orchestra made.
fn trusts_worktrees(tmux: &Tmux) -> bool {
    tmux.global_option("@orchestra-trust-worktrees")
        .ok()
        .flatten()
        .as_deref()
        != Some("off")
}

/// Writes `dir/settings.json` for a codex session: the `notify` program that reports the
/// end of each turn to `orchestra event` (none when `hooks` is false). Read back at each
/// launch, so a restart keeps what dispatch chose.
pub fn write_codex_settings(dir: &Path, id: &str, hooks: bool) -> Result<(), Error> {
    let settings_file = dir.join("settings.json");
    let settings = if hooks {
        let exe = std::env::current_exe()
            .map_err(Error::io("finding the orchestra binary for the hooks"))?;
        serde_json::json!({ "notify": agent::codex_notify(&exe, id) })
    } else {
        serde_json::json!({})
    };
    let settings = serde_json::to_string_pretty(&settings).unwrap_or_default();
    crate::paths::write_private(&settings_file, settings)
        .map_err(Error::io(format!("writing {}", settings_file.display())))
}

/// The `notify` program a codex session's settings name; none for a missing or unreadable
/// file (the screen still tells its state).
fn codex_notify_from(settings_file: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(settings_file).ok()?;
    let settings: serde_json::Value = serde_json::from_str(&text).ok()?;
    let words: Vec<String> = settings
        .get("notify")?
        .as_array()?
        .iter()
        .map(|w| w.as_str().map(str::to_string))
        .collect::<Option<_>>()?;
    (!words.is_empty()).then_some(words)
}

/// What a blocked session's window runs until its agent starts: the message, then nothing.
/// The message is an argument, never part of a shell string.
pub fn waiting_placeholder(message: &str) -> Vec<String> {
    [
        "sh",
        "-c",
        "printf '%s\\n' \"$1\"; exec tail -f /dev/null",
        "orchestra-blocked",
        message,
    ]
    .map(String::from)
    .to_vec()
}

/// Runs a session's agent in its pane (replacing whatever is there, if the pane is still
/// the session's), then gives it what it needs to get going: a typed prompt, an answer to
/// the trust dialog. A pane that is gone or not ours records the session dead.
pub fn start_agent_in_pane(
    ctx: &Context,
    session: &Session,
    prompt: Option<&str>,
    resume: bool,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    let result = (|| {
        let (tmux, pane) = crate::cmd::agent_pane(session)?;
        let (launch, env) = agent_launch(ctx, session, prompt, resume)?;
        tmux.respawn(&pane, Path::new(&session.worktree), &env, &launch.argv)?;
        Ok(launch.typed_prompt)
    })();
    let typed = crate::cmd::record_if_gone(ctx, session, result)?;
    after_start(ctx, session, typed.as_deref(), out)
}

/// What an agent just started in the session's pane needs to get going: its prompt typed
/// (for agents that take none on their command line), the trust dialog answered.
pub fn after_start(
    ctx: &Context,
    session: &Session,
    typed_prompt: Option<&str>,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    let result = (|| {
        let (tmux, pane) = crate::cmd::agent_pane(session)?;
        if let Some(text) = typed_prompt {
            type_prompt_when_ready(ctx, &tmux, &pane, session, text, out)?;
        }
        Ok(tmux)
    })();
    let tmux = crate::cmd::record_if_gone(ctx, session, result)?;
    if asks_to_trust(session.agent_kind) {
        trust_our_worktree(ctx, &tmux, session, out);
    }
    Ok(())
}

/// `--agent`, else `$ORCHESTRA_AGENT`, else `claude`, split like a shell would; the program
/// must exist.
pub fn agent_command(flag: Option<&str>) -> Result<Vec<String>, Error> {
    let text = flag
        .map(str::to_string)
        .or_else(|| non_empty_env("ORCHESTRA_AGENT"))
        .unwrap_or_else(|| "claude".into());
    let words = shell_words::split(&text)
        .map_err(|e| Error::BadInput(format!("cannot split the agent command {text:?}: {e}")))?;
    let Some(program) = words.first() else {
        return Err(Error::BadInput("the agent command is empty".into()));
    };
    if find_program(program).is_none() {
        return Err(Error::BadInput(format!(
            "agent program {program:?} not found (not on PATH or not executable): install it or pass --agent"
        )));
    }
    Ok(words)
}

/// Where worktrees go: orchestra.toml's `worktree_dir` (`{repo}` is the repo's name;
/// relative to the repo root), else `<parent>/<repo>.worktrees`, beside the main worktree.
/// An unreadable manifest is the default here: `up` and `status` report its errors.
pub fn worktree_root(repo: &Repo) -> PathBuf {
    let main = repo.main_worktree();
    let configured = crate::manifest::load(&crate::manifest::default_path(main))
        .ok()
        .map(|m| m.orchestrator.worktree_dir)
        .filter(|d| !d.trim().is_empty());
    let dir = configured.unwrap_or_else(|| "../{repo}.worktrees".into());
    let dir = dir.replace("{repo}", &repo.name());
    let home = PathBuf::from(crate::paths::non_empty_env("HOME").unwrap_or_else(|| "/".into()));
    let path = crate::remote::config::expand_home(&dir, &home);
    let joined = main.join(path);
    // Lexically: the folder may not exist yet.
    let mut clean = PathBuf::new();
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                clean.pop();
            }
            std::path::Component::CurDir => {}
            other => clean.push(other),
        }
    }
    clean
}

/// A free loopback port no other live session holds, for the session's dev servers.
fn free_port(store: &Store) -> Result<u16, Error> {
    let taken = store.ports_in_use()?;
    for _ in 0..32 {
        let listener =
            TcpListener::bind(("127.0.0.1", 0)).map_err(Error::io("finding a free port"))?;
        let port = listener
            .local_addr()
            .map_err(Error::io("finding a free port"))?
            .port();
        if !taken.contains(&port) {
            return Ok(port);
        }
    }
    Err(Error::Refused(
        "no free TCP port found for the session".into(),
    ))
}

/// The agents that ask whether to trust a folder they have not seen.
pub fn asks_to_trust(kind: AgentKind) -> bool {
    matches!(kind, AgentKind::Claude | AgentKind::Codex)
}

/// Answers the CLI's "trust this folder?" dialog for the worktree dispatch just made (the
/// person already works in this repo), unless `@orchestra-trust-worktrees` is off. Waits
/// only until the agent has drawn its first screen.
fn trust_our_worktree(ctx: &Context, tmux: &Tmux, session: &Session, out: &mut Output<'_>) {
    if !trusts_worktrees(tmux) {
        return;
    }
    let Some(pane) = session.pane.as_ref() else {
        return;
    };
    let kind = session.agent_kind;
    let started = Instant::now();
    while started.elapsed() < TRUST_DIALOG_WAIT {
        let screen = tmux.capture_pane(pane, 0).unwrap_or_default();
        if let Some(menu) = crate::agent::menu::parse(&screen) {
            if menu.is_trust_dialog() {
                match crate::cmd::approve::answer_session(
                    ctx,
                    session,
                    crate::agent::menu::Answer::Yes,
                ) {
                    Ok(_) => out.line(format!("trusted {} for the agent", session.worktree)),
                    Err(e) => out.note(format!("could not answer the trust dialog: {e}")),
                }
            }
            return;
        }
        if started_without_asking(kind, &screen) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether `screen` shows the agent at work in a folder it trusts, so no trust dialog is
/// coming: claude's empty input box; codex's footer hint "← for agents", drawn once its
/// conversation is live (its input box shows earlier, while it still checks the folder).
fn started_without_asking(kind: AgentKind, screen: &str) -> bool {
    match kind {
        AgentKind::Codex => screen.lines().any(|l| l.contains("← for agents")),
        _ => screen.lines().any(|l| l.trim_end() == "❯"),
    }
}

/// Types the prompt once the agent is ready for it, as one message (a bracketed paste),
/// then submits it. An agent whose screens the rules read (aider) is ready when its screen
/// says idle: text typed before it reads its terminal is echoed there and each line goes
/// as a message of its own. If it asks a question first, or its prompt does not show
/// within [`PROMPT_READY_WAIT`], nothing is typed and the output says so. Any other
/// program is ready once it has drawn something (or after a second).
fn type_prompt_when_ready(
    ctx: &Context,
    tmux: &Tmux,
    pane: &OwnedPane,
    session: &Session,
    text: &str,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    let rules =
        crate::agent::rules::Rules::load(&ctx.home).map_err(crate::health::HealthError::from)?;
    let kind = session.agent_kind.as_str();
    let started = Instant::now();
    if rules.has_rules(kind) {
        loop {
            let screen = tmux.capture_pane(pane.pane(), 0).unwrap_or_default();
            let state = rules
                .classify(kind, &screen)
                .map_err(crate::health::HealthError::from)?
                .state;
            let not_typed = match state {
                AgentState::Idle => break,
                AgentState::Waiting => "it asks a question first: answer it",
                AgentState::Exited => "it has exited",
                _ if started.elapsed() > PROMPT_READY_WAIT => "its prompt did not show",
                _ => {
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            };
            out.note(format!(
                "the task was not typed into {}: {not_typed}, then `orchestra brief {} @FILE`",
                session.label, session.label
            ));
            return Ok(());
        }
    } else {
        while started.elapsed() < TYPE_PROMPT_AFTER {
            if tmux
                .capture_pane(pane.pane(), 0)
                .is_ok_and(|screen| drawn(&screen))
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // Typed prompts go to programs that take no prompt argument (aider, generic ones).
    tmux.type_text(pane, text, crate::tmux::Typing::Natural)?;
    tmux.press(pane, &[Key::Enter])?;
    Ok(())
}

/// Whether the program drew something: a line that is not orchestra's own (`prepare`
/// may leave one on the screen it hands over).
fn drawn(screen: &str) -> bool {
    screen
        .lines()
        .any(|l| !l.trim().is_empty() && !l.starts_with("orchestra: "))
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

/// What dispatch has made so far, to be taken back newest first if a later step fails.
struct Undo<'a> {
    repo: &'a Repo,
    tmux: &'a Tmux,
    session_dir: Option<PathBuf>,
    worktree_root: Option<PathBuf>,
    worktree: Option<(PathBuf, String, Oid)>,
    /// The session row (and its dependency edges), removed by the caller holding the store.
    row: Option<String>,
    window: Option<(WindowId, String)>,
}

impl<'a> Undo<'a> {
    fn new(repo: &'a Repo, tmux: &'a Tmux) -> Undo<'a> {
        Undo {
            repo,
            tmux,
            session_dir: None,
            worktree_root: None,
            worktree: None,
            row: None,
            window: None,
        }
    }

    /// Undoes everything recorded; returns what could not be undone.
    fn run(self) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some((window, id)) = &self.window {
            if let Err(e) = self.tmux.kill_window_if_ours(window, id) {
                problems.push(format!("closing window {window}: {e}"));
            }
        }
        if let Some((path, branch, base)) = &self.worktree {
            if let Err(e) = self.repo.remove_worktree(path) {
                problems.push(format!("removing worktree {}: {e}", path.display()));
            }
            // Only a branch still at its base holds no work; anything else is kept.
            match self.repo.branch_tip(branch) {
                Ok(tip) if tip == *base => {
                    if let Err(e) = self.repo.delete_branch(branch) {
                        problems.push(format!("deleting branch {branch}: {e}"));
                    }
                }
                Ok(_) => problems.push(format!("branch {branch} has new commits: kept")),
                Err(e) => problems.push(format!("reading branch {branch}: {e}")),
            }
        }
        if let Some(root) = &self.worktree_root {
            remove_if_empty(root);
        }
        if let Some(dir) = &self.session_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        problems
    }
}

fn remove_if_empty(dir: &Path) {
    // remove_dir refuses a folder that is not empty, which is the point.
    let _ = std::fs::remove_dir(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_settings_say_its_notify_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        write_codex_settings(dir.path(), "abc123", true).unwrap();
        let notify = codex_notify_from(&dir.path().join("settings.json")).unwrap();
        assert_eq!(
            notify[1..],
            [
                "event",
                "--from-hook",
                "--session",
                "abc123",
                "codex-notify"
            ]
        );
        write_codex_settings(dir.path(), "abc123", false).unwrap();
        assert_eq!(codex_notify_from(&dir.path().join("settings.json")), None);
        assert_eq!(codex_notify_from(&dir.path().join("missing.json")), None);
        std::fs::write(dir.path().join("bad.json"), "{\"notify\": [1]}").unwrap();
        assert_eq!(codex_notify_from(&dir.path().join("bad.json")), None);
    }
}
