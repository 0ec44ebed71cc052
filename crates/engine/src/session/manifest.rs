//! Manifest sessions (`up`, `down`): the sessions an orchestra.toml describes, on this
//! machine or on a remote host. One works in a plain folder (no branch, no worktree of
//! ours); its row in the record lives from `up` to `down`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::agent::{AgentKind, Quit};
use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
use crate::manifest::{Manifest, ManifestSession};
use crate::paths::session_dir;
use crate::report::Report;
use crate::session::launch::{agent_env, agent_launch, write_hook_settings};
use crate::session::New;
use crate::state::{AgentState, Session, Status, Store};
use crate::tmux::{Key, OwnedPane, Placement, Tmux, TmuxError, WindowSpec};

/// The manifest and the sessions of it a command acts on.
pub struct Plan {
    pub repo: Repo,
    pub path: PathBuf,
    pub manifest: Manifest,
    /// In start order (upstreams first).
    pub names: Vec<String>,
}

/// Starts session `name` unless it is already up. Returns what happened, in one line.
/// What a restarted manifest session brings into the new one `up` makes: the
/// conversation it resumes, and the agent's history files (aider's), read from the old
/// session's folder before `down` removed it.
#[derive(Debug, Default)]
pub struct Carried {
    pub conversation: Option<String>,
    /// (file name, contents): written into the new session's folder before the agent starts.
    pub history: Vec<(String, Vec<u8>)>,
}

impl Carried {
    /// What `session` carries into its restart.
    pub fn from(ctx: &Context, session: &Session) -> Carried {
        let dir = session_dir(&ctx.home, &session.id);
        let history = session
            .agent_kind
            .history_files()
            .iter()
            .filter_map(|name| Some((name.to_string(), std::fs::read(dir.join(name)).ok()?)))
            .collect();
        Carried {
            conversation: session.agent_uuid.clone(),
            history,
        }
    }
}

pub fn up_one(
    ctx: &Context,
    store: &Store,
    plan: &Plan,
    tmux: &Tmux,
    name: &str,
    carried: Carried,
    out: &mut dyn Report,
) -> Result<String, Error> {
    let Carried {
        conversation: resume_uuid,
        history,
    } = carried;
    let spec = &plan.manifest.sessions[name];
    let repo_id = plan.repo.id();
    let where_ = match &spec.host {
        Some(host) => format!("on {host}"),
        None => "here".to_string(),
    };
    if let Some(existing) = store.session_by_label(&repo_id, name)? {
        let alive = existing
            .pane
            .as_ref()
            .and_then(|p| OwnedPane::new(p, &existing.id).ok())
            .is_some_and(|p| tmux.pane_alive(&p).unwrap_or(false));
        if alive {
            return Ok(format!("{name}: already up {where_}"));
        }
        // A stale row (its pane ended or its server went away): start afresh.
        close_and_forget(ctx, store, tmux, &existing, "its pane is gone")?;
    }
    let mut command = agent_command(&plan.manifest, spec)?;
    let kind = AgentKind::from_program(&command[0]);
    if let Some(mode) = spec.permission_mode {
        mode.add_to(kind, &mut command)?;
    }
    // In a box like a dispatch's with --sandbox, allowed like a setup.
    let boxed = match spec.sandbox.as_ref().filter(|b| b.on()) {
        Some(setting) => {
            crate::trust::require_commands_allowed(&ctx.home, plan.repo.main_worktree())?;
            Some(crate::session::sandbox::network_of(setting, &plan.path)?)
        }
        None => None,
    };
    let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
    // claude resumes its conversation; aider reads back the history carried in. gemini's
    // and codex's latest chat in the person's own folder may be the person's, not this
    // session's: they start afresh. A boxed one's conversation was in the home of its
    // own that `down` removed: it starts afresh too.
    let resume = boxed.is_none()
        && crate::agent::of(kind)
            .resumes_in_person_folder(resume_uuid.is_some(), !history.is_empty());
    let agent_uuid = resume_uuid
        .filter(|_| boxed.is_none())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let cwd = PathBuf::from(&spec.path);
    if spec.host.is_none() && !cwd.is_dir() {
        return Err(Error::BadInput(format!(
            "path {} is not a folder",
            cwd.display()
        )));
    }
    let mut session = Session::from_manifest(
        New {
            id: id.clone(),
            repo: repo_id,
            label: name.to_string(),
            worktree: spec.path.clone(),
            kind,
            argv: command.clone(),
            agent_uuid: agent_uuid.clone(),
            status: Status::Running,
        },
        plan.path.to_string_lossy().into_owned(),
        spec.host.clone(),
    );
    session.sandbox = boxed.clone();
    let dir = session_dir(&ctx.home, &id);
    let (mut argv, env) = if spec.host.is_none() {
        // Here: what dispatch gives an agent of this kind, from the same functions.
        let launched = crate::paths::private_dir(&dir)
            .map_err(Error::io(format!("creating {}", dir.display())))
            .and_then(|()| {
                history.iter().try_for_each(|(name, text)| {
                    let path = dir.join(name);
                    crate::paths::replace_private(&path, text)
                        .map_err(Error::io(format!("writing {}", path.display())))
                })
            })
            .and_then(|()| write_hook_settings(ctx, &dir, &id, kind, &command, true, out))
            .and_then(|()| {
                if boxed.is_some() {
                    // A box starts from the window's `prepare`, which clears the
                    // environment tmux gives the pane (`session::sandbox`).
                    let argv = crate::session::launch::boxed_window_argv(&id, resume)?;
                    Ok((argv, agent_env(ctx, &session)))
                } else {
                    agent_launch(ctx, &session, None, resume).map(|(l, env)| (l.argv, env))
                }
            });
        match launched {
            Ok(launched) => launched,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        }
    } else {
        // On a host: claude's hooks call the host's own orchestra when `hosts install` put
        // this version there; otherwise (and for other kinds) the screen tells its state.
        let mut argv = command;
        let mut env = agent_env(ctx, &session);
        if kind == AgentKind::Claude {
            let flag = if resume { "--resume" } else { "--session-id" };
            argv.extend([flag.to_string(), agent_uuid]);
            if let Some(host) = &spec.host {
                if let Some(hooks) = remote_claude_hooks(plan, host, &id, out) {
                    argv.extend(["--settings".to_string(), hooks.settings]);
                    env.retain(|(k, _)| k != "ORCHESTRA_HOME");
                    env.push(("ORCHESTRA_HOME".to_string(), hooks.home));
                }
            }
        }
        (argv, env)
    };
    if let Some(snippet) = spec.env.as_deref().filter(|e| !e.trim().is_empty()) {
        // The snippet is the user's own shell text; the agent's argv stays argv.
        let mut wrapped = vec![
            "sh".to_string(),
            "-c".into(),
            format!("{snippet}\nexec \"$@\""),
            "sh".into(),
        ];
        wrapped.extend(argv);
        argv = wrapped;
    }
    let tmux_name = spec
        .tmux
        .clone()
        .unwrap_or_else(|| format!("orchestra-{name}"));
    let mode = crate::session::sandbox::mode(&session);
    let mut marks = vec![
        (crate::tmux::options::WINDOW_ID, id.as_str()),
        (crate::tmux::options::WINDOW_LABEL, name),
        (
            crate::tmux::options::WINDOW_STATE,
            AgentState::Unknown.as_str(),
        ),
    ];
    if !mode.is_empty() {
        marks.push((crate::tmux::options::WINDOW_SANDBOX, mode.as_str()));
    }
    let created = tmux
        .new_window(
            &WindowSpec {
                name,
                cwd: &cwd,
                argv: &argv,
                env: &env,
                placement: Placement::Detached(tmux_name.clone()),
            },
            &marks,
        )
        .inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&dir);
        })?;
    // Ours only if this call made it: another `up` may have made it since we looked.
    let owns = created.made_session;
    if owns {
        if let Err(e) = tmux.mark_session(&tmux_name, &id) {
            out.note(format!(
                "{name}: could not mark tmux session {tmux_name}: {e}"
            ));
        }
    }
    session.tmux_socket = Some(created.socket_path.clone());
    session.tmux_session = Some(created.session_name.clone());
    session.window = Some(created.window.clone());
    session.pane = Some(created.pane.clone());
    session.owns_tmux_session = owns;
    if let Err(e) = store.insert_session(&session) {
        // Take back what was made: nothing is left without its row.
        if owns {
            let _ = tmux.kill_session_if_ours(&tmux_name, &id);
        } else {
            let _ = tmux.kill_window_if_ours(&created.window, &id);
        }
        let _ = std::fs::remove_dir_all(&dir);
        return Err(e.into());
    }
    store.record_event(&session, "up", "", "running", &where_)?;
    Ok(format!(
        "{name}: up {where_}, tmux session {} window {}{}",
        created.session_name,
        created.window,
        if owns { " (created)" } else { "" }
    ))
}

/// Hook settings for claude session `id` on `host`, written there, when the host runs
/// this orchestra; `None` (with a note when something is off) leaves it to its screen.
fn remote_claude_hooks(
    plan: &Plan,
    host: &str,
    id: &str,
    out: &mut dyn Report,
) -> Option<crate::remote_hooks::SessionHooks> {
    use crate::remote_hooks::Prepared;
    let prepared = crate::session::host_spec(&plan.manifest, host)
        .and_then(|spec| Ok(crate::remote::connect(&spec)?))
        .and_then(|conn| crate::remote_hooks::prepare_claude_session(&conn, id));
    match prepared {
        Ok(Prepared::Hooks(hooks)) => Some(hooks),
        Ok(Prepared::NotInstalled) => None,
        Ok(Prepared::Skew(version)) => {
            out.note(crate::remote_hooks::skew_message(host, &version));
            None
        }
        Err(e) => {
            out.note(format!(
                "{host}: no hooks ({e}): its states come from screens"
            ));
            None
        }
    }
}

/// The manifest's agent command plus the session's own arguments.
fn agent_command(manifest: &Manifest, spec: &ManifestSession) -> Result<Vec<String>, Error> {
    let mut command = shell_words::split(&manifest.orchestrator.agent).map_err(|e| {
        Error::BadInput(format!(
            "cannot split agent {:?}: {e}",
            manifest.orchestrator.agent
        ))
    })?;
    if command.is_empty() {
        return Err(Error::BadInput("[orchestrator] agent is empty".into()));
    }
    if spec.host.is_none() && crate::paths::find_program(&command[0]).is_none() {
        return Err(Error::BadInput(format!(
            "agent program {:?} not found (not on PATH or not executable)",
            command[0]
        )));
    }
    if let Some(args) = &spec.agent_args {
        command.extend(
            shell_words::split(args)
                .map_err(|e| Error::BadInput(format!("cannot split agent_args {args:?}: {e}")))?,
        );
    }
    Ok(command)
}

/// Asks the agent to exit, waits up to `wait`, then closes what `up` made and forgets
/// the session.
pub fn down_one(
    ctx: &Context,
    store: &Store,
    tmux: &Tmux,
    session: &Session,
    wait: Duration,
) -> Result<String, Error> {
    let name = &session.label;
    let mut note = String::new();
    let pane = session
        .pane
        .as_ref()
        .and_then(|p| OwnedPane::new(p, &session.id).ok());
    if let Some(pane) = pane {
        // Only a pane that is still this session's gets the exit keys.
        if tmux.pane_alive(&pane)? {
            let kind = session.agent_kind;
            match ask_to_exit(tmux, &pane, kind) {
                Err(TmuxError::NotOurs { .. }) => {}
                other => other?,
            }
            let started = Instant::now();
            while tmux.pane_alive(&pane)? && started.elapsed() < wait {
                std::thread::sleep(Duration::from_millis(250));
            }
            if tmux.pane_alive(&pane)? {
                note = format!(
                    " (the agent did not exit within {}s: closed)",
                    wait.as_secs()
                );
            }
        }
    }
    close_and_forget(ctx, store, tmux, session, "down")?;
    Ok(format!("{name}: down{note}"))
}

/// Types the agent's own exit command (the agent saves its state on the way out).
fn ask_to_exit(tmux: &Tmux, pane: &OwnedPane, kind: AgentKind) -> Result<(), TmuxError> {
    let command = match crate::agent::of(kind).quit() {
        Quit::Typed(command) => command,
        Quit::Keys(keys) => return tmux.press(pane, keys),
    };
    // Escape first: a half-typed line or an open menu would swallow the command.
    tmux.press(pane, &[Key::Escape])?;
    std::thread::sleep(Duration::from_millis(300));
    tmux.type_text(pane, command, kind.typing())?;
    std::thread::sleep(Duration::from_millis(300));
    tmux.press(pane, &[Key::Enter])
}

/// Ends the tmux session if `up` created it (else closes the window), only when they are
/// ours; then removes the row and the session's folder (its hook settings, Gemini home).
fn close_and_forget(
    ctx: &Context,
    store: &Store,
    tmux: &Tmux,
    session: &Session,
    why: &str,
) -> Result<(), Error> {
    let closed_session = match (&session.tmux_session, session.owns_tmux_session) {
        (Some(name), true) => tmux.kill_session_if_ours(name, &session.id)?,
        _ => false,
    };
    if !closed_session {
        if let Some(window) = &session.window {
            tmux.kill_window_if_ours(window, &session.id)?;
        }
    }
    crate::cost::close(store, session, crate::cost::DOWN)?;
    store.delete_session(session, why)?;
    crate::paths::remove_session_files(&ctx.home, &session.id);
    forget_on_host(session);
    Ok(())
}

/// A remote claude session's hook settings and last word, taken off its host (best
/// effort: what is left is a few bytes no refresh reads again).
fn forget_on_host(session: &Session) {
    let (Some(host), Some(manifest)) = (&session.host, &session.manifest) else {
        return;
    };
    if session.agent_kind != AgentKind::Claude {
        return;
    }
    let conn = crate::manifest::load(std::path::Path::new(manifest))
        .map_err(Error::from)
        .and_then(|m| crate::session::host_spec(&m, host))
        .and_then(|spec| Ok(crate::remote::connect(&spec)?));
    if let Ok(conn) = conn {
        crate::remote_hooks::forget_session(&conn, &session.id);
    }
}
