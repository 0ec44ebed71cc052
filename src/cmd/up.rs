//! `orchestra up` and `down`: the sessions an orchestra.toml describes, on this machine
//! or on a remote host. A manifest session works in a plain folder (no branch, no
//! worktree of ours); its row in the record lives from `up` to `down`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::agent::{self, AgentKind, LaunchContext};
use crate::cli::UpDownArgs;
use crate::cmd::{host_spec, load_manifest, open_repo, remote_tmux, session_tmux, Context, Output};
use crate::error::Error;
use crate::git::Repo;
use crate::manifest::{Condition, Manifest, ManifestSession};
use crate::paths::session_dir;
use crate::state::{now, AgentState, Session, Status, Store};
use crate::tmux::{Key, OwnedPane, Placement, Tmux, TmuxError, WindowSpec};

/// The manifest and the sessions of it a command acts on, checked before anything runs.
struct Plan {
    repo: Repo,
    path: PathBuf,
    manifest: Manifest,
    /// In start order (upstreams first).
    names: Vec<String>,
}

fn plan(args: &UpDownArgs) -> Result<Plan, Error> {
    let repo = open_repo(args.manifest.repo.as_deref())?;
    let Some((path, manifest)) = load_manifest(&repo, args.manifest.config.as_deref(), true)?
    else {
        return Err(Error::BadInput("no manifest".into()));
    };
    let wanted: Vec<String> = if args.target == "all" {
        manifest.sessions.keys().cloned().collect()
    } else {
        crate::label::validate(&args.target)?;
        if !manifest.sessions.contains_key(&args.target) {
            return Err(Error::BadInput(format!(
                "{:?} is not a session of {} (it has: {})",
                args.target,
                path.display(),
                manifest
                    .sessions
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        vec![args.target.clone()]
    };
    if wanted.is_empty() {
        return Err(Error::BadInput(format!(
            "{} describes no [sessions.*]",
            path.display()
        )));
    }
    let names = manifest.start_order(&wanted);
    Ok(Plan {
        repo,
        path,
        manifest,
        names,
    })
}

pub fn up(ctx: &Context, args: &UpDownArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let plan = plan(args)?;
    let store = ctx.store()?;
    let _work = crate::lock::work_shared(&ctx.home).map_err(Error::io("taking the work lock"))?;
    // Upstreams named by blocked_by come up first, even when only NAME was asked for.
    let mut names = plan.names.clone();
    for name in &plan.names {
        for upstream in &plan.manifest.sessions[name].blocked_by {
            if !names.contains(upstream) {
                names.push(upstream.clone());
            }
        }
    }
    let names = plan.manifest.start_order(&names);
    // Nothing starts when a name is taken by a dispatched session.
    for name in &names {
        if let Some(existing) = store.session_by_label(&plan.repo.id(), name)? {
            if !existing.is_manifest() {
                return Err(Error::BadInput(format!(
                    "{name:?} is already the label of a dispatched session of this repo: rename one"
                )));
            }
        }
    }
    // Every host is reached (key checked, logged in) before anything starts anywhere.
    let mut servers: BTreeMap<Option<String>, Tmux> = BTreeMap::new();
    for name in &names {
        let host = plan.manifest.sessions[name].host.clone();
        if let std::collections::btree_map::Entry::Vacant(slot) = servers.entry(host) {
            let tmux = match slot.key() {
                Some(h) => remote_tmux(&host_spec(&plan.manifest, h)?)?,
                None => ctx.tmux(),
            };
            slot.insert(tmux);
        }
    }
    let mut failed = 0;
    for name in &names {
        let tmux = &servers[&plan.manifest.sessions[name].host];
        let result = up_one(ctx, &store, &plan, tmux, name, None, out);
        tally(name, result, names.len() == 1, &mut failed, out)?;
    }
    crate::cmd::refresh::refresh_remote_quietly(ctx);
    if failed > 0 {
        return Err(Error::Refused(format!(
            "{failed} of {} session(s) did not come up",
            names.len()
        )));
    }
    Ok(())
}

/// Reports one session's outcome: its line, or a note and a count. Acting on one session
/// alone, its error is the command's (one line, its own exit status).
fn tally(
    name: &str,
    result: Result<String, Error>,
    alone: bool,
    failed: &mut usize,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    match result {
        Ok(line) => out.line(line),
        Err(e) if alone => return Err(e),
        Err(e) => {
            *failed += 1;
            out.note(format!("{name}: {e}"));
        }
    }
    Ok(())
}

/// Starts session `name` unless it is already up. Returns what happened, in one line.
fn up_one(
    ctx: &Context,
    store: &Store,
    plan: &Plan,
    tmux: &Tmux,
    name: &str,
    resume_uuid: Option<String>,
    out: &mut Output<'_>,
) -> Result<String, Error> {
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
        close_and_forget(store, tmux, &existing, "its pane is gone")?;
    }
    let command = agent_command(&plan.manifest, spec)?;
    let kind = AgentKind::from_program(&command[0]);
    let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
    let agent_uuid = resume_uuid
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let dir = session_dir(&ctx.home, &id);
    let mut argv = command.clone();
    if kind == AgentKind::Claude {
        if spec.host.is_none() {
            crate::paths::private_dir(&dir)
                .map_err(Error::io(format!("creating {}", dir.display())))?;
            crate::cmd::dispatch::write_claude_settings(ctx, &dir, &command, true)?;
            argv = agent::launch(
                kind,
                &command,
                None,
                &LaunchContext {
                    agent_uuid: &agent_uuid,
                    settings_file: &dir.join("settings.json"),
                    session_dir: &dir,
                    orchestra: &std::env::current_exe()
                        .map_err(Error::io("finding the orchestra binary for the hooks"))?,
                    system_prompt: None,
                    resume: resume_uuid.is_some(),
                    gemini_home: None,
                    trust_worktree: false,
                    notify: None,
                },
            )
            .argv;
        } else {
            // The hooks would call an orchestra on the host: its state comes from its screen.
            let flag = if resume_uuid.is_some() {
                "--resume"
            } else {
                "--session-id"
            };
            argv.extend([flag.to_string(), agent_uuid.clone()]);
        }
    }
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
    let env = vec![
        ("ORCHESTRA_SESSION".to_string(), id.clone()),
        (
            "ORCHESTRA_HOME".to_string(),
            ctx.home.to_string_lossy().into_owned(),
        ),
    ];
    let cwd = PathBuf::from(&spec.path);
    if spec.host.is_none() && !cwd.is_dir() {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(Error::BadInput(format!(
            "path {} is not a folder",
            cwd.display()
        )));
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
            &[
                ("@orchestra_id", &id),
                ("@orchestra_label", name),
                ("@orchestra_state", AgentState::Unknown.as_str()),
            ],
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
    let at = now();
    let session = Session {
        id: id.clone(),
        repo: repo_id,
        label: name.to_string(),
        branch: String::new(),
        base_commit: String::new(),
        base_branch: None,
        worktree: spec.path.clone(),
        host: spec.host.clone(),
        tmux_socket: Some(created.socket_path.clone()),
        tmux_session: Some(created.session_name.clone()),
        window: Some(created.window.clone()),
        pane: Some(created.pane.clone()),
        agent_kind: kind,
        agent_argv: command,
        agent_uuid: (kind == AgentKind::Claude).then_some(agent_uuid),
        port: None,
        prompt: None,
        status: Status::Running,
        state: AgentState::Unknown,
        retry_count: 0,
        created_at: at,
        updated_at: at,
        state_at: 0,
        state_source: Default::default(),
        manifest: Some(plan.path.to_string_lossy().into_owned()),
        owns_tmux_session: owns,
    };
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

pub fn down(ctx: &Context, args: &UpDownArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let plan = plan(args)?;
    let store = ctx.store()?;
    let mut failed = 0;
    // One connection per server (a host, or a local socket), made when first needed.
    let mut servers: BTreeMap<(Option<String>, Option<String>), Tmux> = BTreeMap::new();
    // Dependents stop before what they depend on.
    for name in plan.names.iter().rev() {
        let Some(session) = store
            .session_by_label(&plan.repo.id(), name)?
            .filter(Session::is_manifest)
        else {
            out.line(format!("{name}: not up"));
            continue;
        };
        let key = match &session.host {
            Some(host) => (Some(host.clone()), None),
            None => (None, session.tmux_socket.clone()),
        };
        let tmux = match servers.entry(key) {
            std::collections::btree_map::Entry::Occupied(slot) => slot.into_mut(),
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(session_tmux(&session)?)
            }
        };
        let result = down_one(&store, tmux, &session, Duration::from_secs(args.wait));
        tally(name, result, plan.names.len() == 1, &mut failed, out)?;
    }
    crate::cmd::refresh::refresh_remote_quietly(ctx);
    if failed > 0 {
        return Err(Error::Refused(format!(
            "{failed} session(s) did not go down"
        )));
    }
    Ok(())
}

/// Asks the agent to exit, waits up to `wait`, then closes what `up` made and forgets
/// the session.
pub fn down_one(
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
    close_and_forget(store, tmux, session, "down")?;
    Ok(format!("{name}: down{note}"))
}

/// Types the agent's own exit command (the agent saves its state on the way out).
fn ask_to_exit(tmux: &Tmux, pane: &OwnedPane, kind: AgentKind) -> Result<(), TmuxError> {
    let command = match kind {
        AgentKind::Claude | AgentKind::Aider => "/exit",
        AgentKind::Codex | AgentKind::Gemini => "/quit",
        AgentKind::Generic => return tmux.press(pane, &[Key::CtrlC]),
    };
    // Escape first: a half-typed line or an open menu would swallow the command.
    tmux.press(pane, &[Key::Escape])?;
    std::thread::sleep(Duration::from_millis(300));
    tmux.type_text(pane, command, kind.typing())?;
    std::thread::sleep(Duration::from_millis(300));
    tmux.press(pane, &[Key::Enter])
}

/// Ends the tmux session if `up` created it (else closes the window), only when they are
/// ours; then removes the row.
fn close_and_forget(store: &Store, tmux: &Tmux, session: &Session, why: &str) -> Result<(), Error> {
    let closed_session = match (&session.tmux_session, session.owns_tmux_session) {
        (Some(name), true) => tmux.kill_session_if_ours(name, &session.id)?,
        _ => false,
    };
    if !closed_session {
        if let Some(window) = &session.window {
            tmux.kill_window_if_ours(window, &session.id)?;
        }
    }
    store.delete_session(session, why)?;
    Ok(())
}

/// `restart` of a manifest session: down, then up again with its conversation resumed.
pub fn restart(ctx: &Context, session: &Session, out: &mut Output<'_>) -> Result<(), Error> {
    let manifest_path = session.manifest.as_deref().unwrap_or_default();
    let manifest = crate::manifest::load(Path::new(manifest_path))?;
    if !manifest.sessions.contains_key(&session.label) {
        return Err(Error::Refused(format!(
            "{} is no longer in {manifest_path}",
            session.label
        )));
    }
    let repo = Repo::discover(Path::new(&session.repo))?;
    let store = ctx.store()?;
    // One connection for both halves.
    let tmux = session_tmux(session)?;
    let line = down_one(&store, &tmux, session, Duration::from_secs(10))?;
    out.line(line);
    let plan = Plan {
        repo,
        path: PathBuf::from(manifest_path),
        manifest,
        names: vec![session.label.clone()],
    };
    let line = up_one(
        ctx,
        &store,
        &plan,
        &tmux,
        &session.label,
        session.agent_uuid.clone(),
        out,
    )?;
    out.line(line);
    Ok(())
}

/// A file a remote `has` dependency waits for: `path` in the folder of session
/// `session_id` on `host`. Only a remote refresh looks for these (in its host's thread,
/// within that host's deadline): never the status line, `done` or a local tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteArtifact {
    pub session_id: String,
    pub host: String,
    pub path: String,
}

/// A manifest dependency whose upstream session is up and whose `then` has not run.
struct Pending<'a> {
    manifest: &'a str,
    dependency: crate::manifest::Dependency,
    upstream: &'a Session,
    /// The file in the upstream's folder a `has` waits for (None: `done`).
    file: Option<String>,
    marker: PathBuf,
}

fn pending_dependencies<'a>(ctx: &Context, sessions: &'a [Session]) -> Vec<Pending<'a>> {
    let mut manifests: Vec<&str> = sessions
        .iter()
        .filter_map(|s| s.manifest.as_deref())
        .collect();
    manifests.sort();
    manifests.dedup();
    let mut pending = Vec::new();
    for path in manifests {
        // A manifest edited into an error since `up` fires nothing until it is mended.
        let Ok(manifest) = crate::manifest::load(Path::new(path)) else {
            continue;
        };
        for dependency in manifest.dependencies {
            let (name, file) = match dependency.condition() {
                Some(Condition::Done { upstream }) => (upstream.to_string(), None),
                Some(Condition::Has { upstream, artifact }) => {
                    // Validated when the manifest loaded; `file:` is the only kind here.
                    let Ok(locator) = crate::artifact::parse(&artifact) else {
                        continue;
                    };
                    (upstream.to_string(), Some(locator.name.to_string()))
                }
                None => continue,
            };
            let Some(upstream) = sessions
                .iter()
                .find(|s| s.label == name && s.manifest.as_deref() == Some(path))
            else {
                continue;
            };
            let marker = ctx
                .home
                .join("dependencies")
                .join(crate::paths::stable_hash(&format!(
                    "{path}\n{}\n{}\n{}",
                    upstream.id, dependency.when, dependency.then
                )));
            if marker.exists() {
                continue;
            }
            pending.push(Pending {
                manifest: path,
                dependency,
                upstream,
                file,
                marker,
            });
        }
    }
    pending
}

/// The files pending remote `has` dependencies wait for, for a remote refresh to look for.
pub fn remote_artifacts(ctx: &Context, sessions: &[Session]) -> Vec<RemoteArtifact> {
    pending_dependencies(ctx, sessions)
        .into_iter()
        .filter_map(|p| {
            Some(RemoteArtifact {
                session_id: p.upstream.id.clone(),
                host: p.upstream.host.clone()?,
                path: artifact_path(p.upstream, p.file.as_deref()?),
            })
        })
        .collect()
}

fn artifact_path(session: &Session, file: &str) -> String {
    Path::new(&session.worktree)
        .join(file)
        .to_string_lossy()
        .into_owned()
}

/// Runs the `then` of each `[[dependencies]]` entry whose `when` has come true, once per
/// upstream session (a marker file, created exclusively, decides who runs it). `then` is
/// an orchestra command line, run as argv in the manifest's folder, its output in
/// `$ORCHESTRA_HOME/logs/dependencies.log`. A `has` on a remote host counts only when
/// `remote_found` lists its file (what a remote refresh saw): nothing here waits on a
/// host. Returns the lines run.
pub fn run_ready_dependencies(
    ctx: &Context,
    remote_found: &[RemoteArtifact],
) -> Result<Vec<String>, Error> {
    let store = ctx.store()?;
    let sessions = store.sessions(None, false)?;
    let mut ran = Vec::new();
    for p in pending_dependencies(ctx, &sessions) {
        let upstream = p.upstream;
        let ready = match (&p.file, &upstream.host) {
            (None, _) => upstream.status == Status::Done,
            (Some(file), None) => Path::new(&artifact_path(upstream, file)).exists(),
            (Some(file), Some(host)) => remote_found.contains(&RemoteArtifact {
                session_id: upstream.id.clone(),
                host: host.clone(),
                path: artifact_path(upstream, file),
            }),
        };
        if !ready {
            continue;
        }
        if let Some(dir) = p.marker.parent() {
            crate::paths::private_dir(dir)
                .map_err(Error::io(format!("creating {}", dir.display())))?;
        }
        if crate::paths::open_private(
            &p.marker,
            std::fs::OpenOptions::new().write(true).create_new(true),
        )
        .is_err()
        {
            continue;
        }
        let Ok(args) = shell_words::split(&p.dependency.then) else {
            continue;
        };
        let folder = Path::new(p.manifest).parent().unwrap_or(Path::new("/"));
        crate::notify::spawn_self_logged(
            &args,
            &[("ORCHESTRA_HOME", &ctx.home)],
            Some(folder),
            Some(&ctx.home.join("logs").join("dependencies.log")),
        );
        store.record_event(
            upstream,
            "dependency",
            "",
            &p.dependency.when,
            &p.dependency.then,
        )?;
        ran.push(format!(
            "{} → orchestra {}",
            p.dependency.when, p.dependency.then
        ));
    }
    Ok(ran)
}
