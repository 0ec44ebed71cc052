//! The doctor: checks the tools and the store, and reconciles the record with what tmux
//! and git really hold. With `fix` it also finishes or takes back what a command killed
//! part-way left behind (the crash tests in tests/it/faults.rs stop `dispatch`, `merge`,
//! `kill` and `restart` at every step and run it after). Each finding goes to the
//! caller's [`Findings`], which shows it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::context::Context;
use crate::error::Error;
use crate::git::{self, Repo};
use crate::report::Report;
use crate::session::create::worktree_root;
use crate::session::remove::{forget, remove_worktree_keeping_work};
use crate::state::{Session, StateError, Status, Store};
use crate::tmux::{Pane, Server, Tmux};

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    Problem,
    Fixed,
}

/// Where the doctor says what it finds: each finding, and (as a [`Report`]) what its
/// repairs do on the way.
pub trait Findings: Report {
    fn finding(&mut self, verdict: Verdict, text: String);
}

/// The problems counted as they are found.
#[derive(Default)]
struct Tally {
    problems: usize,
}

impl Tally {
    fn ok(&mut self, out: &mut dyn Findings, text: String) {
        out.finding(Verdict::Ok, text);
    }
    fn problem(&mut self, out: &mut dyn Findings, text: String) {
        self.problems += 1;
        out.finding(Verdict::Problem, text);
    }
    fn fixed(&mut self, out: &mut dyn Findings, text: String) {
        out.finding(Verdict::Fixed, text);
    }
    /// `fixed` when `fix` (having run `repair`), else a problem saying what --fix does.
    fn repair(
        &mut self,
        out: &mut dyn Findings,
        fix: bool,
        what: String,
        done: &str,
        repair: impl FnOnce(&mut dyn Findings) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if fix {
            repair(out)?;
            self.fixed(out, format!("{what}: {done}"));
        } else {
            self.problem(out, format!("{what} (doctor --fix: {done})"));
        }
        Ok(())
    }
}

/// One local tmux server as doctor saw it.
struct Seen {
    /// The sockets it was asked by (a session's `tmux_socket`, or this command's server).
    keys: Vec<Option<String>>,
    tmux: Tmux,
    socket_path: Option<String>,
    /// The panes carrying `@orchestra_id`; none when no server runs there; `None` when it
    /// could not be asked (which is not proof of anything).
    panes: Option<Vec<Pane>>,
}

/// Checks everything (and with `fix` repairs what can be). Refused (`CheckFailed`) when a
/// problem is left.
pub fn check(ctx: &Context, fix: bool, out: &mut dyn Findings) -> Result<(), Error> {
    let mut report = Tally::default();
    match ctx.tmux().check_version() {
        Ok(v) => report.ok(out, v),
        Err(e) => report.problem(out, e.to_string()),
    }
    match git::cli_version() {
        Ok(v) => report.ok(out, v),
        Err(e) => report.problem(out, e.to_string()),
    }
    match ctx
        .rules()
        .and_then(|r| r.check_all().map_err(|e| Error::BadInput(e.to_string())))
    {
        Ok(()) => report.ok(
            out,
            "screen rules (built in, plus agents.toml if present)".into(),
        ),
        Err(e) => report.problem(out, e.to_string()),
    }
    // Repairs wait for the commands running now: what is half-made after that was left by
    // a process that died.
    let _work = if fix {
        let lock = |wait| {
            crate::lock::work_exclusive(&ctx.home, wait).map_err(Error::io("taking the work lock"))
        };
        match lock(false)? {
            Some(held) => Some(held),
            None => {
                out.note("waiting for the orchestra commands running now to finish".into());
                lock(true)?
            }
        }
    } else {
        None
    };
    let Some(store) = open_record(ctx, fix, &mut report, out)? else {
        return Err(Error::CheckFailed);
    };

    check_merge_journals(ctx, fix, &store, &mut report, out)?;
    check_groups(ctx, fix, &store, &mut report, out)?;

    let servers = look_at_servers(ctx, &local_sessions(&store)?);
    check_windows(ctx, fix, &store, &servers, &mut report, out)?;
    check_panes(fix, &store, &servers, &mut report, out)?;
    check_setups(ctx, fix, &store, &mut report, out)?;
    check_worktrees_of_rows(ctx, fix, &store, &servers, &mut report, out)?;

    // Sessions a window carries: check_windows has said what they are.
    let windowed: HashSet<String> = servers
        .iter()
        .flat_map(|s| s.panes.iter().flatten())
        .map(|p| p.orchestra_id.clone())
        .collect();
    let sessions = local_sessions(&store)?;
    let mut repos: Vec<String> = sessions.iter().map(|s| s.repo.clone()).collect();
    if let Ok(cwd) = std::env::current_dir() {
        if let Ok(repo) = Repo::discover(&cwd) {
            repos.push(repo.id());
        }
    }
    repos.sort();
    repos.dedup();
    for repo_id in repos {
        let Ok(repo) = Repo::discover(Path::new(&repo_id)) else {
            report.problem(
                out,
                format!("repository {repo_id} is gone, but sessions are recorded for it"),
            );
            continue;
        };
        check_repo(ctx, fix, &store, &repo, &windowed, &mut report, out)?;
    }
    check_session_folders(ctx, fix, &store, &windowed, &mut report, out)?;

    if report.problems == 0 {
        out.line("all good".into());
        Ok(())
    } else {
        Err(Error::CheckFailed)
    }
}

/// The record, checked: a damaged one is never deleted. Without `fix` doctor says how to
/// recover and stops there (nothing else can be read); with it the file is moved aside
/// and a fresh record opened, which the checks after fill again from tmux and git
/// (`check_windows` adopts the sessions still alive).
fn open_record(
    ctx: &Context,
    fix: bool,
    report: &mut Tally,
    out: &mut dyn Findings,
) -> Result<Option<Store>, Error> {
    let path = ctx.home.join("state.db");
    let damage = match Store::open(&ctx.home) {
        Ok(store) => match store.integrity_problem() {
            Ok(None) => {
                report.ok(out, format!("state store {}", path.display()));
                return Ok(Some(store));
            }
            Ok(Some(problem)) => problem,
            Err(StateError::Corrupt { source, .. }) => source.to_string(),
            Err(e) => return Err(e.into()),
        },
        Err(StateError::Corrupt { source, .. }) => source.to_string(),
        Err(e) => {
            report.problem(out, e.to_string());
            return Ok(None);
        }
    };
    if !fix {
        report.problem(
            out,
            format!(
                "state store {} is damaged ({damage}): `orchestra doctor --fix` moves it aside \
                 (as state.db.corrupt-<time>) and rebuilds the record from tmux and git; \
                 running agents keep running",
                path.display()
            ),
        );
        return Ok(None);
    }
    let aside = Store::set_aside(&ctx.home)?;
    report.fixed(
        out,
        format!(
            "state store {} was damaged ({damage}): moved aside to {}; a fresh record is \
             rebuilt from tmux and git",
            path.display(),
            aside.display()
        ),
    );
    Ok(Some(ctx.store()?))
}

/// The live rows of this machine (merged ones are history; remote ones live elsewhere).
fn local_sessions(store: &Store) -> Result<Vec<Session>, Error> {
    Ok(store
        .sessions(None, false)?
        .into_iter()
        .filter(|s| s.host.is_none())
        .collect())
}

/// Every tmux server a session lives on, and the one this command talks to (where a
/// dispatch or restart killed part-way made its window): one call each.
fn look_at_servers(ctx: &Context, sessions: &[Session]) -> Vec<Seen> {
    let own = ctx
        .server
        .socket
        .as_ref()
        .map(|p| p.to_string_lossy().into_owned());
    let mut keys = vec![own.clone()];
    for s in sessions {
        if !keys.contains(&s.tmux_socket) {
            keys.push(s.tmux_socket.clone());
        }
    }
    let mut seen: Vec<Seen> = Vec::new();
    for key in keys {
        let tmux = if key == own {
            ctx.tmux()
        } else {
            Tmux::new(&Server::at(key.as_deref()))
        };
        let (socket_path, panes) = match tmux.snapshot(&[], &[]) {
            Ok(Some(snapshot)) => (Some(snapshot.socket_path), Some(snapshot.panes)),
            Ok(None) => (None, Some(Vec::new())),
            Err(_) => (None, None),
        };
        if let Some(same) = seen
            .iter_mut()
            .find(|s| socket_path.is_some() && s.socket_path == socket_path)
        {
            same.keys.push(key);
            continue;
        }
        seen.push(Seen {
            keys: vec![key],
            tmux,
            socket_path,
            panes,
        });
    }
    seen
}

/// The index of the server a session's window lives on.
fn server_of(servers: &[Seen], session: &Session) -> Option<usize> {
    servers.iter().position(|s| {
        s.keys.contains(&session.tmux_socket)
            || (session.tmux_socket.is_some() && s.socket_path == session.tmux_socket)
    })
}

/// The panes of the session's server: `None` when it could not be asked.
fn panes_of<'a>(servers: &'a [Seen], session: &Session) -> Option<&'a [Pane]> {
    server_of(servers, session).and_then(|i| servers[i].panes.as_deref())
}

/// Windows carrying `@orchestra_id`: each must be the recorded window of a live row. A
/// restart killed before recording its new window left it: adopted. A dispatch killed
/// before recording its row left one with no row: closed (it is ours: its session folder
/// exists). One whose id this ORCHESTRA_HOME never knew is not touched.
fn check_windows(
    ctx: &Context,
    fix: bool,
    store: &Store,
    servers: &[Seen],
    report: &mut Tally,
    out: &mut dyn Findings,
) -> Result<(), Error> {
    // (server index, window, id, its first pane), once per window.
    let mut windows: Vec<(usize, &Pane)> = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        for pane in server.panes.iter().flatten() {
            if !windows
                .iter()
                .any(|(j, p)| *j == i && p.window == pane.window)
            {
                windows.push((i, pane));
            }
        }
    }
    let mut by_id: HashMap<&str, Vec<(usize, &Pane)>> = HashMap::new();
    for (i, pane) in windows {
        by_id
            .entry(pane.orchestra_id.as_str())
            .or_default()
            .push((i, pane));
    }
    let mut ids: Vec<&str> = by_id.keys().copied().collect();
    ids.sort();
    for id in ids {
        let found = &by_id[id];
        let row = store.session_by_id(id)?;
        let live = row.as_ref().filter(|s| s.status != Status::Merged);
        let Some(session) = live else {
            if row.is_none() {
                match lost_row(ctx, store, servers, found, id)? {
                    Lost::No => {}
                    Lost::Alive(adopted) => {
                        report.repair(
                            out,
                            fix,
                            format!(
                                "window {} runs session {} ({}), whose row was lost (its branch {} is older than the record)",
                                adopted.window.as_deref().unwrap_or("-"),
                                adopted.label,
                                adopted.repo,
                                adopted.branch
                            ),
                            "adopted into the record, running",
                            |_| Ok(store.adopt(&adopted)?),
                        )?;
                        continue;
                    }
                    Lost::Stranded(why) => {
                        report.problem(
                            out,
                            format!(
                                "window {} carries session id {id}, whose row was lost, but {why}: left alone",
                                found[0].1.window
                            ),
                        );
                        continue;
                    }
                }
            }
            let ours = row.is_some() || crate::paths::session_dir(&ctx.home, id).is_dir();
            for (i, pane) in found {
                let what = format!(
                    "window {} ({}) carries session id {id}, which has no live row",
                    pane.window, pane.session_name
                );
                if !ours {
                    report.problem(
                        out,
                        format!("{what} and is not of this ORCHESTRA_HOME: left alone"),
                    );
                    continue;
                }
                let tmux = &servers[*i].tmux;
                report.repair(out, fix, what, "closed", |_| {
                    tmux.kill_window_if_ours(&pane.window, id)?;
                    Ok(())
                })?;
            }
            continue;
        };
        let Some(home_server) = server_of(servers, session) else {
            continue;
        };
        if servers[home_server].panes.is_none() {
            // Its own server could not be asked: its recorded window may be alive there.
            continue;
        }
        let recorded = found
            .iter()
            .find(|(i, p)| *i == home_server && Some(&p.window) == session.window.as_ref());
        let keep = match recorded {
            Some(kept) => *kept,
            None => {
                // The recorded window is gone: the newest one with the id is the restart
                // that did not get to record it.
                let Some(&(i, pane)) = found.iter().find(|(_, p)| !p.dead).or(found.last()) else {
                    continue;
                };
                let server = &servers[i];
                report.repair(
                    out,
                    fix,
                    format!(
                        "session {} runs in window {}, not in its recorded window {} (a restart that did not finish)",
                        session.label,
                        pane.window,
                        session.window.as_deref().unwrap_or("-")
                    ),
                    "recorded",
                    |_| {
                        store.record_restart(
                            session,
                            Some(&pane.window),
                            Some(&pane.pane),
                            &pane.session_name,
                            server.socket_path.as_deref(),
                            // A setup restart's window records its own outcome.
                            (session.status != Status::Setup).then_some(Status::Running),
                        )?;
                        Ok(())
                    },
                )?;
                (i, pane)
            }
        };
        for &(i, pane) in found {
            if i == keep.0 && pane.window == keep.1.window {
                continue;
            }
            let tmux = &servers[i].tmux;
            report.repair(
                out,
                fix,
                format!(
                    "window {} is a second window of session {} (recorded: {})",
                    pane.window, session.label, keep.1.window
                ),
                "closed",
                |_| {
                    tmux.kill_window_if_ours(&pane.window, id)?;
                    Ok(())
                },
            )?;
        }
    }
    Ok(())
}

/// What a window with no row is.
enum Lost {
    /// Not a lost row: made since the record began (a dispatch that did not finish).
    No,
    /// A session older than the record, alive: its row as tmux and git tell it.
    Alive(Box<Session>),
    /// Older than the record, but not safe to adopt (why): reported, never removed.
    Stranded(String),
}

/// Whether session `id`, whose windows are `found` and which has no row, had its row in a
/// record that was lost: its `session/` branch (or else its folder) is older than the
/// record. A lost record must never cost a running agent, so such a window is adopted when
/// its pane is alive and its branch is checked out in a worktree, and otherwise left alone.
fn lost_row(
    ctx: &Context,
    store: &Store,
    servers: &[Seen],
    found: &[(usize, &Pane)],
    id: &str,
) -> Result<Lost, Error> {
    let began = store.began_at()?;
    if began == 0 {
        return Ok(Lost::No);
    }
    let (server, pane) = found
        .iter()
        .find(|(_, p)| !p.dead)
        .or(found.first())
        .copied()
        .ok_or_else(|| Error::Refused(format!("no window of session {id}")))?;
    let tmux = &servers[server].tmux;
    let told = tmux
        .pane_values(&pane.pane, &["pane_current_path", "pane_start_command"])
        .unwrap_or_default();
    let (path, start) = match told.as_slice() {
        [path, start, ..] => (path.as_str(), start.as_str()),
        _ => ("", ""),
    };
    // Where its agent works tells the repository; so may the one doctor runs in.
    let mut repos: Vec<Repo> = Vec::new();
    for dir in [Some(PathBuf::from(path)), std::env::current_dir().ok()]
        .into_iter()
        .flatten()
    {
        if let Ok(repo) = Repo::discover(&dir) {
            if !repos.iter().any(|r| r.id() == repo.id()) {
                repos.push(repo);
            }
        }
    }
    let mut made = None;
    for repo in repos {
        if let Some((branch, at)) = repo.branch_made_for_session(id)? {
            made = Some((repo, branch, at));
            break;
        }
    }
    let Some((repo, branch, made_at)) = made else {
        let folder = crate::paths::session_dir(&ctx.home, id);
        return Ok(if predates(&folder, began) {
            Lost::Stranded("no branch made for it is found".into())
        } else {
            Lost::No
        });
    };
    if made_at >= began {
        return Ok(Lost::No);
    }
    if pane.dead {
        return Ok(Lost::Stranded(format!("its pane {} is dead", pane.pane)));
    }
    let Some(worktree) = repo.worktree_of_branch(&branch)? else {
        return Ok(Lost::Stranded(format!(
            "its branch {branch} is checked out in no worktree"
        )));
    };
    let label = branch.trim_start_matches("session/").to_string();
    if let Some(other) = store.session_by_label(&repo.id(), &label)? {
        return Ok(Lost::Stranded(format!(
            "label {label} is taken by session {}",
            other.id
        )));
    }
    let base_branch = repo.current_branch().filter(|b| *b != branch);
    let base_commit = match &base_branch {
        Some(base) => repo.merge_base_of(&branch, base)?,
        None => repo.branch_tip(&branch)?,
    };
    let (agent_kind, agent_argv, agent_uuid) = agent_of(ctx, id, start);
    let now = crate::state::now();
    Ok(Lost::Alive(Box::new(Session {
        id: id.to_string(),
        repo: repo.id(),
        label,
        branch,
        base_commit: base_commit.to_string(),
        base_branch,
        worktree: worktree.to_string_lossy().into_owned(),
        host: None,
        tmux_socket: servers[server].socket_path.clone(),
        tmux_session: Some(pane.session_name.clone()),
        window: Some(pane.window.clone()),
        pane: Some(pane.pane.clone()),
        agent_kind,
        agent_argv,
        agent_uuid,
        port: None,
        prompt: None,
        status: Status::Running,
        state: crate::state::AgentState::Unknown,
        retry_count: 0,
        created_at: made_at,
        updated_at: now,
        state_at: 0,
        state_source: Default::default(),
        manifest: None,
        owns_tmux_session: false,
        sandbox: None,
        yolo: false,
    })))
}

/// Whether `path` was last changed before `began` (seconds): it predates the record.
fn predates(path: &Path, began: i64) -> bool {
    crate::paths::modified_secs(path).is_some_and(|at| at < began)
}

/// The agent a pane runs, from the command it started with (as `Agent::launch` built it:
/// the person's command, then claude's `--session-id`/`--resume` and the conversation),
/// or what dispatch left in its folder: kind, the command, claude's conversation.
fn agent_of(
    ctx: &Context,
    id: &str,
    start: &str,
) -> (crate::agent::AgentKind, Vec<String>, Option<String>) {
    use crate::agent::AgentKind;
    let words = shell_words::split(start).unwrap_or_default();
    let mut kind = words
        .first()
        .map_or(AgentKind::Generic, |w| AgentKind::from_program(w));
    let dir = crate::paths::session_dir(&ctx.home, id);
    if kind == AgentKind::Generic {
        let settings = std::fs::read_to_string(dir.join("settings.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
        if dir.join(crate::agent::gemini::HOME_DIR).is_dir() {
            kind = AgentKind::Gemini;
        } else if settings.as_ref().is_some_and(|s| s.get("notify").is_some()) {
            kind = AgentKind::Codex;
        } else if settings.as_ref().is_some_and(|s| s.get("hooks").is_some()) {
            kind = AgentKind::Claude;
        }
    }
    let ours = |w: &String| matches!(w.as_str(), "--session-id" | "--resume" | "--");
    let cut = words.iter().position(ours).unwrap_or(words.len());
    let uuid = words
        .get(cut + 1)
        .filter(|_| kind == AgentKind::Claude && cut < words.len())
        .filter(|u| crate::agent::is_conversation_id(u))
        .cloned();
    let mut argv = words[..cut].to_vec();
    if argv.is_empty() {
        argv.push(kind.as_str().to_string());
    }
    (kind, argv, uuid)
}

/// A live row whose pane is gone is dead.
fn check_panes(
    fix: bool,
    store: &Store,
    servers: &[Seen],
    report: &mut Tally,
    out: &mut dyn Findings,
) -> Result<(), Error> {
    for s in local_sessions(store)? {
        // A failed setup is restarted in a new window when its own is gone.
        if matches!(s.status, Status::Dead | Status::SetupFailed) {
            continue;
        }
        let alive = match (&s.pane, panes_of(servers, &s)) {
            (Some(pane), Some(panes)) => panes
                .iter()
                .any(|p| p.pane == *pane && p.orchestra_id == s.id && !p.dead),
            // A server we cannot ask is not proof of death.
            (Some(_), None) => true,
            (None, _) => false,
        };
        if alive {
            continue;
        }
        let what = format!(
            "session {} ({}): its pane {} is gone",
            s.label,
            s.repo,
            s.pane.as_deref().unwrap_or("-")
        );
        // A session that never got past its setup has no agent to be dead.
        let (next, done) = if s.status == Status::Setup {
            (Status::SetupFailed, "marked setup-failed")
        } else {
            (Status::Dead, "marked dead")
        };
        report.repair(out, fix, what, done, |_| {
            store.change_status(&s, next, "doctor: pane gone")?;
            Ok(())
        })?;
    }
    Ok(())
}

/// A fan-out its maker never completed (killed part-way: doctor --fix holds the work lock,
/// so no maker still runs): the fix undoes it whole, as the fan-out would have on a
/// failure — each member's window, worktree, branch (only while at its base: a commit is
/// never lost), folder and row, then the group.
fn check_groups(
    ctx: &Context,
    fix: bool,
    store: &Store,
    report: &mut Tally,
    out: &mut dyn Findings,
) -> Result<(), Error> {
    for g in store.groups(None)?.into_iter().filter(|g| !g.complete) {
        let Ok(repo) = Repo::discover(Path::new(&g.repo)) else {
            report.problem(
                out,
                format!(
                    "group {} of {} (a fan-out never finished): its repository is gone",
                    g.label, g.repo
                ),
            );
            continue;
        };
        let what = format!(
            "group {} ({}) was never finished: its fan-out stopped after {} of {} session(s)",
            g.label,
            g.repo,
            g.members.len(),
            g.planned.len()
        );
        report.repair(out, fix, what, "undone, every member it made", |out| {
            for problem in crate::group::undo_incomplete(&ctx.home, store, &repo, &g) {
                out.note(format!("while undoing group {}: {problem}", g.label));
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// A session in `setup` longer than its setup may take (orchestra.toml's setup_timeout,
/// and the grace for recording it): its window's process died or hangs. The fix records
/// `setup-failed` and says so in the window (ending what runs there).
fn check_setups(
    ctx: &Context,
    fix: bool,
    store: &Store,
    report: &mut Tally,
    out: &mut dyn Findings,
) -> Result<(), Error> {
    let now = crate::state::now();
    for s in local_sessions(store)? {
        if s.status != Status::Setup {
            continue;
        }
        let timeout = crate::worktree::table(Path::new(&s.repo))
            .ok()
            .flatten()
            .map_or(crate::manifest::DEFAULT_SETUP_TIMEOUT, |(_, t)| {
                t.setup_timeout()
            });
        let since = store.setup_started_at(&s)?.unwrap_or(s.updated_at);
        let limit = timeout + crate::session::create::SETUP_GRACE;
        if now - since <= limit.as_secs() as i64 {
            continue;
        }
        let what = format!(
            "session {} ({}) has been in setup for {}, past its setup_timeout of {} (window {})",
            s.label,
            s.repo,
            crate::duration::age(now - since),
            crate::duration::spell(timeout),
            s.window.as_deref().unwrap_or("-")
        );
        report.repair(
            out,
            fix,
            what,
            &format!(
                "marked setup-failed; `orchestra restart {}` runs it again",
                s.label
            ),
            |out| {
                let why = format!(
                    "doctor: the setup did not finish within its timeout of {}",
                    crate::duration::spell(timeout)
                );
                if store.claim_status(&s, Status::Setup, Status::SetupFailed, &why)? {
                    let message = format!(
                        "orchestra: {why}. `orchestra restart {}` runs it again.",
                        s.label
                    );
                    let shown = crate::session::agent_pane(&s).and_then(|(tmux, pane)| {
                        let argv = crate::session::launch::waiting_placeholder(&message);
                        Ok(tmux.respawn(&pane, Path::new(&s.worktree), &[], &argv)?)
                    });
                    if let Err(e) = crate::session::record_if_gone(ctx, &s, shown) {
                        out.note(format!("could not say so in {}'s window: {e}", s.label));
                    }
                }
                Ok(())
            },
        )?;
    }
    Ok(())
}

/// A dispatched session whose worktree is gone cannot run again. When its window is gone
/// too (a kill that died after removing the worktree) the kill is finished: the branch
/// settled as kill would (archived unless merged), the row removed.
fn check_worktrees_of_rows(
    ctx: &Context,
    fix: bool,
    store: &Store,
    servers: &[Seen],
    report: &mut Tally,
    out: &mut dyn Findings,
) -> Result<(), Error> {
    for s in local_sessions(store)? {
        if Path::new(&s.worktree).exists() {
            // Something else put where the worktree was is left alone, and said.
            let stranger = match Repo::discover(Path::new(&s.repo)) {
                Ok(repo) if !s.is_manifest() => {
                    repo.not_worktree_of(Path::new(&s.worktree), &s.branch)?
                }
                _ => None,
            };
            if let Some(stranger) = stranger {
                report.problem(
                    out,
                    format!(
                        "session {} ({}): the folder {} is not its worktree: it {stranger} (left alone: move it away, then `orchestra kill {}`)",
                        s.label, s.repo, s.worktree, s.label
                    ),
                );
            }
            continue;
        }
        let window_alive = panes_of(servers, &s)
            .is_none_or(|panes| panes.iter().any(|p| p.orchestra_id == s.id && !p.dead));
        if s.is_manifest() || window_alive {
            report.problem(
                out,
                format!(
                    "session {} ({}): its worktree {} is missing (its branch {} keeps the work; `orchestra kill {}` clears the row)",
                    s.label, s.repo, s.worktree, s.branch, s.label
                ),
            );
            continue;
        }
        let Ok(repo) = Repo::discover(Path::new(&s.repo)) else {
            continue;
        };
        report.repair(
            out,
            fix,
            format!(
                "session {} ({}): its worktree {} and its window are gone (a kill that did not finish?)",
                s.label, s.repo, s.worktree
            ),
            "branch settled, row removed",
            |out| {
                forget(ctx, &repo, store, &s, "doctor: worktree and window gone", "doctor", out)
                    .map(|_| ())
            },
        )?;
    }
    Ok(())
}

/// Whether `id` names a session of this ORCHESTRA_HOME: it has a row, or the folder that
/// dispatch makes before anything else.
fn known_id(ctx: &Context, store: &Store, id: &str) -> Result<bool, Error> {
    Ok(store.session_by_id(id)?.is_some() || crate::paths::session_dir(&ctx.home, id).is_dir())
}

/// git's side: worktrees whose folders are gone, worktrees and `session/` branches that a
/// dispatch killed before it recorded its row left behind (taken apart without losing a
/// commit), and worktrees nobody recorded (listed, never touched).
fn check_repo(
    ctx: &Context,
    fix: bool,
    store: &Store,
    repo: &Repo,
    windowed: &HashSet<String>,
    report: &mut Tally,
    out: &mut dyn Findings,
) -> Result<(), Error> {
    let sessions: Vec<Session> = local_sessions(store)?
        .into_iter()
        .filter(|s| s.repo == repo.id())
        .collect();
    let recorded: HashSet<PathBuf> = sessions
        .iter()
        .map(|s| PathBuf::from(&s.worktree))
        .collect();
    let live_branches: HashSet<&str> = sessions.iter().map(|s| s.branch.as_str()).collect();
    let root = worktree_root(repo);
    let began = store.began_at()?;
    // A branch made before the record began had its row in a record that was lost: not
    // a dispatch that died, so nothing of it is taken apart.
    let older_than_record =
        |branch: &str| began > 0 && repo.branch_made(branch).is_some_and(|(_, at)| at < began);
    for (name, path, exists) in repo.linked_worktrees()? {
        if !exists {
            report.repair(
                out,
                fix,
                format!(
                    "git records worktree {name} at {}, whose folder is gone",
                    path.display()
                ),
                "pruned",
                |_| Ok(repo.prune_worktrees()?),
            )?;
            continue;
        }
        let canonical = path.canonicalize().unwrap_or(path.clone());
        if !path.starts_with(&root) || recorded.contains(&path) || recorded.contains(&canonical) {
            continue;
        }
        let made_for = Repo::checked_out_branch(&path)?
            .filter(|b| b.starts_with("session/") && !live_branches.contains(b.as_str()))
            .and_then(|b| repo.branch_made_for(&b).map(|id| (b, id)));
        match made_for {
            // check_windows said what a window of it is.
            Some((branch, id)) if older_than_record(&branch) => {
                if !windowed.contains(&id) {
                    report.problem(
                        out,
                        format!(
                            "worktree {} of {branch} is older than the record, whose row of it was lost, and no window of it runs: left alone (review it, then `git worktree remove {}`)",
                            path.display(),
                            path.display()
                        ),
                    );
                }
            }
            Some((branch, id)) if known_id(ctx, store, &id)? => {
                let label = branch.trim_start_matches("session/").to_string();
                report.repair(
                    out,
                    fix,
                    format!(
                        "worktree {} of {branch} has no row (a dispatch that did not finish)",
                        path.display()
                    ),
                    "removed, its work kept",
                    |out| {
                        remove_worktree_keeping_work(
                            repo,
                            &path,
                            &label,
                            &branch,
                            &format!("WIP: left in the worktree of {branch}, which had no session"),
                            "doctor",
                            // No session: nothing was set up that a teardown would undo.
                            None,
                            out,
                        )?;
                        settle_orphan_branch(repo, &branch, &label, out)
                    },
                )?;
            }
            _ => report.problem(
                out,
                format!(
                    "worktree {} has no session row: review it, then `git worktree remove {}` (left alone: it may hold work)",
                    path.display(),
                    path.display()
                ),
            ),
        }
    }

    for branch in repo.branches_with_prefix("session/")? {
        if live_branches.contains(branch.as_str()) || repo.worktree_of_branch(&branch)?.is_some() {
            continue;
        }
        let Some(id) = repo.branch_made_for(&branch) else {
            continue;
        };
        if !known_id(ctx, store, &id)? {
            continue;
        }
        if older_than_record(&branch) {
            report.problem(
                out,
                format!("branch {branch} is older than the record, whose row of it was lost: left alone"),
            );
            continue;
        }
        let label = branch.trim_start_matches("session/").to_string();
        report.repair(
            out,
            fix,
            format!("branch {branch} has no session (a dispatch or kill that did not finish)"),
            "settled",
            |out| settle_orphan_branch(repo, &branch, &label, out),
        )?;
    }
    if fix && root.is_dir() {
        // remove_dir refuses a folder that is not empty, which is the point.
        let _ = std::fs::remove_dir(&root);
    }
    Ok(())
}

/// A `session/` branch with no session: deleted when every commit of it is on another
/// branch too, else kept as `archive/<label>-<time>`.
fn settle_orphan_branch(
    repo: &Repo,
    branch: &str,
    label: &str,
    out: &mut dyn Findings,
) -> Result<(), Error> {
    if repo.commits_only_on(branch)? == 0 {
        repo.delete_branch(branch)?;
        out.line(format!("deleted branch {branch} (no commit only it has)"));
    } else {
        let archive = repo.free_archive_name(label);
        repo.rename_branch(branch, &archive)?;
        out.line(format!(
            "branch {branch} has unmerged work: kept as {archive}"
        ));
    }
    Ok(())
}

/// `$ORCHESTRA_HOME/sessions/<id>` of a session with no live row: removed.
fn check_session_folders(
    ctx: &Context,
    fix: bool,
    store: &Store,
    windowed: &HashSet<String>,
    report: &mut Tally,
    out: &mut dyn Findings,
) -> Result<(), Error> {
    let Ok(entries) = std::fs::read_dir(ctx.home.join("sessions")) else {
        return Ok(());
    };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.sort();
    let began = store.began_at()?;
    for dir in dirs {
        let Some(id) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let live = store
            .session_by_id(id)?
            .is_some_and(|s| s.status != Status::Merged);
        if live || !dir.is_dir() {
            continue;
        }
        if predates(&dir, began) {
            if !windowed.contains(id) {
                report.problem(
                    out,
                    format!(
                        "folder {} belongs to no live session, but to one older than the record, whose row of it was lost: left alone",
                        dir.display()
                    ),
                );
            }
            continue;
        }
        report.repair(
            out,
            fix,
            format!("folder {} belongs to no live session", dir.display()),
            "removed, with its briefings",
            |_| {
                std::fs::remove_dir_all(&dir)
                    .map_err(Error::io(format!("removing {}", dir.display())))?;
                crate::paths::remove_session_files(&ctx.home, id);
                Ok(())
            },
        )?;
    }
    Ok(())
}

/// A merge killed part-way left its journal: finish what the record shows was done (the
/// ref moved: bring the target's worktree along, tear the session down), or drop a
/// journal of a merge that never landed.
fn check_merge_journals(
    ctx: &Context,
    fix: bool,
    store: &Store,
    report: &mut Tally,
    out: &mut dyn Findings,
) -> Result<(), Error> {
    use crate::session::merge::{finish_teardown, journal_dir, Journal};
    let Ok(entries) = std::fs::read_dir(journal_dir(&ctx.home)) else {
        return Ok(());
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Some(journal) = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Journal>(&b).ok())
        else {
            report.problem(out, format!("unreadable merge journal {}", path.display()));
            continue;
        };
        let what = format!("merge of {} into {}", journal.branch, journal.target);
        let Ok(repo) = Repo::discover(Path::new(&journal.repo)) else {
            report.problem(out, format!("{what}: repository {} is gone", journal.repo));
            continue;
        };
        let tip = repo.branch_tip(&journal.target)?.to_string();
        let landed = journal.new.as_deref() == Some(tip.as_str());
        if !landed && tip == journal.old {
            report.repair(
                out,
                fix,
                format!("{what} was interrupted before it landed: nothing changed"),
                "journal dropped",
                |_| {
                    let _ = std::fs::remove_file(&path);
                    Ok(())
                },
            )?;
            continue;
        }
        if !landed {
            report.problem(
                out,
                format!(
                    "{what}: {} moved on since; check it by hand ({})",
                    journal.target,
                    path.display()
                ),
            );
            continue;
        }
        report.repair(
            out,
            fix,
            format!("{what} landed but its teardown did not finish"),
            "teardown finished",
            |out| {
                let old = git::Oid::from_str(&journal.old).map_err(git::GitError::from)?;
                let new = git::Oid::from_str(&tip).map_err(git::GitError::from)?;
                if let Some(wt) = &journal.target_worktree {
                    if Repo::index_tree(wt)? == repo.commit_tree(old)? {
                        repo.update_worktree(wt, old, new)?;
                    }
                }
                if let Some(session) = store.session_by_id(&journal.session_id)? {
                    if session.status != Status::Merged {
                        finish_teardown(ctx, &repo, store, &session, &journal.target, out)?;
                    }
                }
                let _ = std::fs::remove_file(&path);
                Ok(())
            },
        )?;
    }
    Ok(())
}
