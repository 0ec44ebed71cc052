//! Dispatch: a new branch, worktree and tmux window with an agent working in it, checked
//! first (nothing is made on bad input), then made step by step with each step recorded
//! in an [`Undo`], taken back newest first on any failure.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::agent::AgentKind;
use crate::context::Context;
use crate::error::Error;
use crate::git::{Oid, Repo};
use crate::manifest::WorktreeTable;
use crate::paths::session_dir;
use crate::report::Report;
use crate::session::launch::{
    agent_launch_forked, asks_to_trust, trust_our_worktree, type_prompt_when_ready,
    waiting_placeholder, window_argv, write_hook_settings, FROM_UPSTREAM,
};
use crate::session::{find_session, Branch, New};
use crate::state::{Session, Status, Store};
use crate::tmux::{OwnedPane, Tmux, WindowId, WindowSpec};

/// What a dispatch asks for, its arguments read.
pub struct Request<'a> {
    pub label: &'a str,
    pub prompt: Option<String>,
    /// The agent's argv (its program exists).
    pub command: Vec<String>,
    pub kind: AgentKind,
    /// `--after UPSTREAM:ARTIFACT`, as given.
    pub after: &'a [String],
    /// `--from-upstream`: start from the upstream's branch when unblocked.
    pub from_upstream: bool,
    /// `--base REV`.
    pub base: Option<&'a str>,
    /// Hooks in the agent's settings (off with `--no-hooks`).
    pub hooks: bool,
    /// Who asked for it (`orchestra mcp`'s orchestrator), recorded with its row.
    pub requested_by: Option<&'a str>,
    /// Its sandbox's network (`session::sandbox::chosen`), or none.
    pub sandbox: Option<crate::session::sandbox::Network>,
    /// `--yolo`: its no-ask words are on `command` already.
    pub yolo: bool,
}

/// A dispatch checked against the record, the repo and orchestra.toml: nothing is made yet.
pub struct Plan<'a> {
    request: Request<'a>,
    repo_id: String,
    label: &'a str,
    pub branch: String,
    worktree: PathBuf,
    waits: Vec<(Session, String)>,
    from_upstream: Option<String>,
    base: Oid,
    base_branch: Option<String>,
    table: Option<(PathBuf, WorktreeTable)>,
    setup: bool,
    /// `orchestra fork`: the conversation its agent starts from a copy of.
    fork_from: Option<String>,
}

impl Plan<'_> {
    /// The session's label.
    pub fn label(&self) -> &str {
        self.label
    }

    /// The worktree it will make.
    pub fn worktree(&self) -> &Path {
        &self.worktree
    }

    /// `orchestra fork`: the session starts at `base` (the source's work as a commit),
    /// merges back into `base_branch`, its agent from a copy of conversation `fork_from`.
    pub fn forked(&mut self, base: Oid, base_branch: Option<String>, fork_from: Option<String>) {
        self.base = base;
        self.base_branch = base_branch;
        self.fork_from = fork_from;
    }

    /// Whether its window runs the repo's setup before the agent.
    pub fn runs_setup(&self) -> bool {
        self.setup
    }

    /// How long the worktree's setup may take.
    pub fn setup_timeout(&self) -> Duration {
        self.table
            .as_ref()
            .map_or(crate::manifest::DEFAULT_SETUP_TIMEOUT, |(_, t)| {
                t.setup_timeout()
            })
    }
}

/// Checks `request` (bad input: refused, nothing made): the label, branch and worktree
/// are free, the upstreams exist, the base resolves, orchestra.toml's `[worktree]` reads
/// and the commands it would run were allowed (`crate::trust`, records under `home`).
pub fn plan<'a>(
    home: &Path,
    store: &Store,
    repo: &Repo,
    request: Request<'a>,
) -> Result<Plan<'a>, Error> {
    let repo_id = repo.id();
    let label = request.label;
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
    let worktree = worktree_root(repo).join(label);
    if worktree.exists() {
        return Err(Error::BadInput(format!(
            "{} already exists: pick another label or remove it",
            worktree.display()
        )));
    }
    let mut waits: Vec<(Session, String)> = Vec::new();
    for spec in request.after {
        let (upstream, artifact) = spec.split_once(':').ok_or_else(|| {
            Error::BadInput(format!(
                "--after {spec:?}: write it UPSTREAM:ARTIFACT (e.g. api:out/schema.json)"
            ))
        })?;
        let upstream = find_session(store, repo, upstream)?;
        crate::artifact::validate(artifact)?;
        waits.push((upstream, artifact.to_string()));
    }
    let from_upstream = match (request.from_upstream, &waits[..]) {
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
    let base = repo.resolve_commit(request.base)?;
    let base_branch = match request.base {
        Some(rev) if repo.branch_exists(rev) => Some(rev.to_string()),
        _ => repo.current_branch(),
    };
    // orchestra.toml's [worktree]: a broken file is refused here, before anything is made.
    let table = crate::worktree::table(repo.main_worktree())?;
    if let Some((file, table)) = &table {
        crate::worktree::check_sources(repo.main_worktree(), file, table)?;
    }
    // A fresh clone's setup and teardown are not the person's until they allow them.
    crate::trust::require_commands_allowed(home, repo.main_worktree())?;
    let setup = table.as_ref().and_then(|(_, t)| t.setup_argv()).is_some();
    Ok(Plan {
        repo_id,
        label,
        branch,
        worktree,
        waits,
        from_upstream,
        base,
        base_branch,
        table,
        setup,
        request,
        fork_from: None,
    })
}

/// Makes what `plan` checked: the session's folder and agent settings, its worktree and
/// branch, its window (the agent, its setup, or a placeholder while it is blocked), its
/// row and dependency edges; then types its prompt and answers the trust dialog. Any
/// failure takes back what was made, newest first, and returns the error. The caller
/// holds the work lock.
pub fn dispatch(
    ctx: &Context,
    store: &mut Store,
    repo: &Repo,
    plan: &Plan<'_>,
    out: &mut dyn Report,
) -> Result<Session, Error> {
    dispatch_undoable(ctx, store, repo, plan, out).map(|(session, _)| session)
}

/// [`dispatch`], returning with the session what takes it back: a fan-out undoes every
/// member it made when a later one fails.
pub fn dispatch_undoable(
    ctx: &Context,
    store: &mut Store,
    repo: &Repo,
    plan: &Plan<'_>,
    out: &mut dyn Report,
) -> Result<(Session, Undo), Error> {
    let Plan {
        repo_id,
        label,
        branch,
        worktree,
        waits,
        from_upstream,
        base,
        base_branch,
        table,
        setup,
        ..
    } = plan;
    let label: &str = label;
    let (command, kind, prompt) = (
        &plan.request.command,
        plan.request.kind,
        &plan.request.prompt,
    );
    let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
    let agent_uuid = uuid::Uuid::new_v4().to_string();
    let port = free_port(store)?;
    let tmux = ctx.tmux();
    let mut undo = Undo::default();

    let result = (|out: &mut dyn Report| -> Result<Session, Error> {
        let dir = session_dir(&ctx.home, &id);
        crate::paths::private_dir(&dir)
            .map_err(Error::io(format!("creating {}", dir.display())))?;
        undo.session_dir = Some(dir.clone());
        write_hook_settings(ctx, &dir, &id, kind, command, plan.request.hooks, out)?;
        crate::fault::point("dispatch");

        let root = worktree_root(repo);
        if !root.exists() {
            std::fs::create_dir_all(&root)
                .map_err(Error::io(format!("creating {}", root.display())))?;
            undo.worktree_root = Some(root);
            crate::fault::point("dispatch");
        }
        repo.add_worktree(worktree, branch, *base, &id)?;
        undo.worktree = Some((worktree.clone(), branch.clone(), *base));
        crate::fault::point("dispatch");
        for note in crate::worktree::copy_includes(repo, worktree)? {
            out.note(note);
        }
        crate::fault::point("dispatch");
        if let Some((file, table)) = &table {
            for note in crate::worktree::place(repo.main_worktree(), worktree, file, table)? {
                out.note(note);
            }
            crate::fault::point("dispatch");
        }
        if let Some(upstream) = &from_upstream {
            let file = dir.join(FROM_UPSTREAM);
            crate::paths::write_private(&file, upstream)
                .map_err(Error::io(format!("writing {}", file.display())))?;
        }

        let blocked = !waits.is_empty();
        let status = if blocked {
            Status::Blocked
        } else if *setup {
            Status::Setup
        } else {
            Status::Running
        };
        let mut session = Session::dispatched(
            New {
                id: id.clone(),
                repo: repo_id.clone(),
                label: label.to_string(),
                worktree: worktree.to_string_lossy().into_owned(),
                kind,
                argv: command.clone(),
                agent_uuid: agent_uuid.clone(),
                status,
            },
            Branch {
                name: branch.clone(),
                base_commit: base.to_string(),
                base_branch: base_branch.clone(),
            },
            port,
            prompt.clone(),
        );
        session.sandbox.clone_from(&plan.request.sandbox);
        session.yolo = plan.request.yolo;
        let sandboxed = session.sandbox.is_some();
        let (launch, env) = agent_launch_forked(
            ctx,
            &session,
            prompt.as_deref(),
            false,
            plan.fork_from.as_deref(),
        )?;
        // A box starts from `prepare`, which gives it only its allowed environment (the
        // window's is tmux's whole one).
        let env = if sandboxed {
            crate::session::launch::agent_env(ctx, &session)
        } else {
            env
        };
        // A blocked session's window says what it waits for; its agent starts later.
        let argv = if blocked {
            let what: Vec<String> = waits
                .iter()
                .map(|(u, a)| format!("{}: {a}", u.label))
                .collect();
            waiting_placeholder(&format!("orchestra: {label} waits for {}", what.join(", ")))
        } else if *setup || sandboxed {
            // The window runs the setup, visibly, then becomes the agent.
            window_argv(&id, false)?
        } else {
            launch.argv.clone()
        };
        let badge = session.badge();
        let boxed = crate::session::sandbox::mode(&session);
        let mut marks = vec![
            (crate::tmux::options::WINDOW_ID, id.as_str()),
            (crate::tmux::options::WINDOW_LABEL, label),
            (crate::tmux::options::WINDOW_STATE, badge),
        ];
        if !boxed.is_empty() {
            marks.push((crate::tmux::options::WINDOW_SANDBOX, boxed.as_str()));
        }
        let window = tmux.new_window(
            &WindowSpec {
                name: label,
                cwd: worktree,
                argv: &argv,
                env: &env,
                placement: tmux.placement_for_repo(&repo.name()),
            },
            &marks,
        )?;
        undo.window = Some((window.window.clone(), id.clone()));
        crate::fault::point("dispatch");
        session.tmux_socket = Some(window.socket_path.clone());
        session.tmux_session = Some(window.session_name.clone());
        session.window = Some(window.window.clone());
        session.pane = Some(window.pane.clone());

        store.insert_session(&session)?;
        undo.row = Some(id.clone());
        if let Some(who) = plan.request.requested_by {
            store.set_requested_by(&id, who)?;
        }
        crate::fault::point("dispatch");
        for (upstream, artifact) in waits {
            if let Err(refusal) = store.add_dependency(&id, upstream, artifact)? {
                return Err(Error::BadInput(format!(
                    "--after {}:{artifact}: {refusal:?}",
                    upstream.label
                )));
            }
        }
        store.record_event(&session, "dispatched", "", session.status.as_str(), branch)?;
        crate::fault::point("dispatch");
        if blocked || *setup || sandboxed {
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

    match result {
        Ok(session) => Ok((session, undo)),
        Err(e) => {
            for problem in undo.run(repo, &tmux, store) {
                out.note(format!("while undoing: {problem}"));
            }
            Err(e)
        }
    }
}

/// How long past its own timeout a setup may take to be recorded (the window's process
/// starts, the process group's grace between SIGTERM and SIGKILL, the record).
pub const SETUP_GRACE: Duration = Duration::from_secs(30);

/// `--wait-setup`: waits until the session's setup has been recorded done (its agent
/// starts) or failed (refused, exit 1). Reads the record only when its files changed.
pub fn wait_for_setup(
    ctx: &Context,
    store: &Store,
    session: &Session,
    timeout: Duration,
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
                Some(Status::Running) => return Ok(()),
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

/// What a dispatch has made, to be taken back newest first if a later step (or a later
/// member of its fan-out) fails: the one undo of dispatch, of a fan-out's members, and of
/// doctor's settling of a fan-out killed part-way.
#[derive(Debug, Default)]
pub struct Undo {
    session_dir: Option<PathBuf>,
    worktree_root: Option<PathBuf>,
    worktree: Option<(PathBuf, String, Oid)>,
    /// The session row (and its dependency edges).
    row: Option<String>,
    window: Option<(WindowId, String)>,
}

impl Undo {
    /// What undoing a dispatched `session` takes back: its window (only while ours), its
    /// worktree, its branch while it holds no commit past its base, its folder, its row.
    pub fn of_session(home: &Path, session: &Session) -> Undo {
        Undo {
            session_dir: Some(session_dir(home, &session.id)),
            worktree_root: None,
            worktree: Oid::from_str(&session.base_commit).ok().map(|base| {
                (
                    PathBuf::from(&session.worktree),
                    session.branch.clone(),
                    base,
                )
            }),
            row: Some(session.id.clone()),
            window: session.window.clone().map(|w| (w, session.id.clone())),
        }
    }

    /// Undoes everything recorded, newest first; returns what could not be undone.
    pub fn run(mut self, repo: &Repo, tmux: &Tmux, store: &Store) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(id) = self.row.take() {
            if let Ok(Some(row)) = store.session_by_id(&id) {
                if let Err(e) = store.delete_session(&row, "dispatch undone") {
                    problems.push(format!("removing the row of {}: {e}", row.label));
                }
            }
        }
        if let Some((window, id)) = &self.window {
            if let Err(e) = tmux.kill_window_if_ours(window, id) {
                problems.push(format!("closing window {window}: {e}"));
            }
        }
        if let Some((path, branch, base)) = &self.worktree {
            if path.exists() {
                if let Err(e) = repo.remove_worktree(path) {
                    problems.push(format!("removing worktree {}: {e}", path.display()));
                }
            }
            // Only a branch still at its base holds no work; anything else is kept.
            match repo.branch_tip(branch) {
                Ok(tip) if tip == *base => {
                    if let Err(e) = repo.delete_branch(branch) {
                        problems.push(format!("deleting branch {branch}: {e}"));
                    }
                }
                Ok(_) => problems.push(format!("branch {branch} has new commits: kept")),
                Err(_) if !repo.branch_exists(branch) => {}
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
