//! The remote refresh, beside the local one (`health::refresh`): every host with sessions
//! at once, a thread each, each bounded by its own timeouts; what it saw is cached for
//! the status line, which never waits for a host.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::agent::AgentKind;
use crate::context::Context;
use crate::deps::RemoteArtifact;
use crate::error::Error;
use crate::health;
use crate::notify::Fallback;
use crate::remote_hooks::Probe;
use crate::session::host_spec;
use crate::state::{Session, Transition};
use crate::tmux::{Tmux, TmuxError, Transport};

/// The remote hosts' part of the status line, from the cache only: a refresh that is due
/// starts in a detached process (unless one runs), so a slow or dead host never delays
/// the line. Nothing at all when no session lives on a remote host.
pub fn status_part(ctx: &Context) -> String {
    let Some(cache) = health::load_remote_cache(&ctx.home) else {
        return String::new();
    };
    if cache.hosts.is_empty() {
        return String::new();
    }
    let now_ms = health::now_micros() / 1000;
    if health::remote_is_stale(&cache, now_ms)
        && !crate::lock::is_held(&health::remote_lock_path(&ctx.home))
    {
        let mut args = vec!["refresh".to_string(), "--remote".to_string()];
        if let Some(socket) = &ctx.server.socket {
            args.push("--socket".into());
            args.push(socket.to_string_lossy().into_owned());
        }
        crate::notify::spawn_self_detached(&args, &[("ORCHESTRA_HOME", &ctx.home)]);
    }
    health::remote_summary(&cache, now_ms)
}

/// A remote refresh whose failure is nobody's business (after up/down).
pub fn refresh_remote_quietly(ctx: &Context) {
    let _ = refresh_remote(ctx);
}

/// What a remote refresh saw, and the dependencies it ran.
pub struct RemoteRefresh {
    pub cache: health::RemoteCache,
    /// The `[[dependencies]]` lines run (see `crate::deps::wake`).
    pub ran: Vec<String>,
}

/// Beyond a host's own timeouts, what its thread may take to hand back its answer.
const HOST_SLACK: Duration = Duration::from_secs(1);

/// What one host's thread hands back.
struct HostAnswer {
    index: usize,
    seen: health::HostSeen,
    transitions: Vec<Transition>,
    asks: HashMap<String, String>,
    found: Vec<RemoteArtifact>,
}

/// Refreshes every remote host that has sessions, each in a thread of its own, and saves
/// what was seen for the status line as each host answers, so a slow host delays neither
/// the others' rows nor the cache. Every exec on a host is bounded by its
/// command_timeout; a host whose thread has not answered by the end of its budget
/// (connect_timeout plus its execs) is reported as timed out and left behind. The files
/// pending remote `has` dependencies wait for are looked for over the same connection
/// (never on the status-line path), and the dependencies that came true are run.
pub fn refresh_remote(ctx: &Context) -> Result<RemoteRefresh, Error> {
    let store = ctx.store()?;
    let sessions = store.sessions(None, false)?;
    drop(store);
    let mut groups: BTreeMap<(String, String), Vec<Session>> = BTreeMap::new();
    for s in &sessions {
        if let (Some(host), Some(manifest)) = (&s.host, &s.manifest) {
            groups
                .entry((manifest.clone(), host.clone()))
                .or_default()
                .push(s.clone());
        }
    }
    let wanted = crate::deps::remote_artifacts(ctx, &sessions);
    let previous = health::load_remote_cache(&ctx.home).unwrap_or_default();
    let mut fallback = Fallback {
        command: None,
        tmux_socket: ctx
            .server
            .socket
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
    };
    let started = Instant::now();
    let mut deadline = started;
    let (sender, answers) = std::sync::mpsc::channel::<HostAnswer>();
    // What the cache shows of each host now (its last answer until a new one comes),
    // and, while its thread runs, what it becomes if no answer comes in time.
    let mut shown: Vec<Option<health::HostSeen>> = Vec::new();
    let mut waiting: Vec<Option<health::HostSeen>> = Vec::new();
    let mut polls: Vec<u64> = Vec::new();
    for (index, ((manifest_path, host), sessions)) in groups.into_iter().enumerate() {
        let last = previous.hosts.iter().find(|h| h.name == host).cloned();
        let answered_ms = last.as_ref().map_or(0, |h| h.answered_ms);
        let mut seen = recorded(&host, &sessions, answered_ms);
        let spec = crate::manifest::load(Path::new(&manifest_path))
            .map_err(Error::from)
            .and_then(|m| {
                polls.push(m.orchestrator.poll_interval.max(1));
                host_spec(&m, &host)
            });
        let spec = match spec {
            Ok(spec) => spec,
            Err(e) => {
                seen.reachable = true;
                seen.error = Some(e.to_string());
                shown.push(Some(seen));
                waiting.push(None);
                continue;
            }
        };
        let paths: Vec<RemoteArtifact> = wanted
            .iter()
            .filter(|a| a.host == host && sessions.iter().any(|s| s.id == a.session_id))
            .cloned()
            .collect();
        // The list-and-capture exec, one for a changed badge, one for the artifacts.
        let execs = 2 + u32::from(!paths.is_empty());
        let budget = spec.connect_timeout + spec.command_timeout * execs + HOST_SLACK;
        deadline = deadline.max(started + budget);
        seen.reachable = false;
        seen.error = Some(
            crate::remote::RemoteError::Timeout {
                host: host.clone(),
                what: "refreshing".into(),
                after: budget,
            }
            .to_string(),
        );
        shown.push(last);
        waiting.push(Some(seen));
        let home = ctx.home.clone();
        let sender = sender.clone();
        // Not scoped: a host stuck past its budget is left behind, never waited for.
        std::thread::spawn(move || {
            let (seen, told, found) =
                refresh_one_host(&home, &spec, &sessions, &paths, answered_ms);
            let _ = sender.send(HostAnswer {
                index,
                seen,
                transitions: told.transitions,
                asks: told.asks,
                found,
            });
        });
    }
    drop(sender);
    let poll_secs = polls.iter().copied().min().unwrap_or(5);
    let cache = |shown: &[Option<health::HostSeen>]| health::RemoteCache {
        refreshed_ms: health::now_micros() / 1000,
        poll_secs,
        hosts: shown.iter().flatten().cloned().collect(),
    };
    let mut changed = false;
    let mut asked_notify_cmd = false;
    let mut found = Vec::new();
    while waiting.iter().any(Option::is_some) {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(answer) = answers.recv_timeout(left) else {
            break;
        };
        // The person's notify command, asked of their tmux once, and only when there is
        // something to tell (a quiet refresh makes no local tmux call).
        if !answer.transitions.is_empty() && !asked_notify_cmd {
            asked_notify_cmd = true;
            fallback.command = ctx
                .tmux()
                .global_option(crate::tmux::options::NOTIFY_CMD)
                .ok()
                .flatten();
        }
        for t in &answer.transitions {
            let ask = answer.asks.get(&t.session.id).map(String::as_str);
            crate::tell::transition(t, ask, None, &fallback);
        }
        changed |= !answer.transitions.is_empty();
        found.extend(answer.found);
        waiting[answer.index] = None;
        shown[answer.index] = Some(answer.seen);
        health::save_remote_cache(&ctx.home, &cache(&shown));
    }
    for (slot, late) in shown.iter_mut().zip(waiting) {
        if late.is_some() {
            *slot = late;
        }
    }
    let cache = cache(&shown);
    health::save_remote_cache(&ctx.home, &cache);
    let ran = if changed || !found.is_empty() {
        let wake = crate::deps::Wake {
            edges: false,
            manifest: true,
            remote_found: &found,
        };
        ctx.store()
            .and_then(|store| crate::deps::wake(ctx, &store, wake))
            .map_or_else(|_| Vec::new(), |woken| woken.ran.unwrap_or_default())
    } else {
        Vec::new()
    };
    Ok(RemoteRefresh { cache, ran })
}

/// A host's sessions as recorded, for when it gives no answer.
fn recorded(host: &str, sessions: &[Session], answered_ms: i64) -> health::HostSeen {
    let now_us = health::now_micros();
    health::HostSeen {
        name: host.to_string(),
        reachable: false,
        error: None,
        not_connected: false,
        answered_ms,
        latency_ms: 0,
        counts: BTreeMap::new(),
        rows: sessions
            .iter()
            .map(|s| health::HealthRow::recorded(s, now_us))
            .collect(),
        note: None,
    }
}

/// One host's refresh: connect, one batched exec, classify, record; then look for the
/// `has` files in `wanted`. A failure is kept in what is returned (the rows then show
/// the recorded states).
/// How long an agent's `--version` on a host may take (node CLIs start slowly).
const VERSION_ASK_TIMEOUT: Duration = Duration::from_secs(5);

fn refresh_one_host(
    home: &Path,
    spec: &crate::remote::HostSpec,
    sessions: &[Session],
    wanted: &[RemoteArtifact],
    answered_ms: i64,
) -> (health::HostSeen, Told, Vec<RemoteArtifact>) {
    let mut seen = recorded(&spec.name, sessions, answered_ms);
    let started = Instant::now();
    let probe: Arc<Mutex<Option<Probe>>> = Arc::default();
    let result = (|| -> Result<(health::HostOutcome, Vec<RemoteArtifact>), Error> {
        let conn = crate::remote::connect(spec)?;
        // Claude sessions may have hooks calling the host's orchestra: their words, and
        // that binary's version, come with the list-and-capture exec.
        let hooked: Vec<String> = sessions
            .iter()
            .filter(|s| s.agent_kind == AgentKind::Claude)
            .map(|s| s.id.clone())
            .collect();
        let tmux = Tmux::with_transport(
            Box::new(Probing {
                plain: crate::remote::RemoteTmux::new(conn.clone(), spec.identity.clone()),
                conn: conn.clone(),
                hooked: Mutex::new(Some(hooked)),
                probe: probe.clone(),
            }),
            false,
        );
        let rules =
            crate::agent::rules::Rules::load(home).map_err(|e| Error::BadInput(e.to_string()))?;
        let words = || {
            let now_us = health::now_micros();
            probe
                .lock()
                .ok()
                .and_then(|p| p.as_ref().map(|p| p.trusted_words(now_us)))
                .unwrap_or_default()
        };
        let mut outcome = health::refresh_host(home, &spec.name, &tmux, sessions, &rules, words)?;
        // The release each session's agent runs on the host, asked once per session.
        for row in &mut outcome.rows {
            let Some(session) = sessions.iter().find(|s| s.id == row.id) else {
                continue;
            };
            let ask = |command: &str| {
                conn.exec(command, None, Some(VERSION_ASK_TIMEOUT))
                    .ok()
                    .map(|o| o.stdout)
            };
            if let Some(release) = health::releases::learn_remote(home, session, ask) {
                let kind = session.agent_kind.as_str();
                row.rules_proven = Some(health::releases::proven(kind, &release));
                row.agent_release = Some(release);
            }
        }
        let paths: Vec<String> = wanted.iter().map(|a| a.path.clone()).collect();
        // An artifact not seen now is looked for again on the next refresh.
        let found = conn
            .paths_exist(&paths)
            .map(|exist| {
                wanted
                    .iter()
                    .zip(exist)
                    .filter(|(_, e)| *e)
                    .map(|(a, _)| a.clone())
                    .collect()
            })
            .unwrap_or_default();
        Ok((outcome, found))
    })();
    match result {
        Ok((outcome, found)) => {
            seen.reachable = true;
            seen.answered_ms = health::now_micros() / 1000;
            seen.latency_ms = started.elapsed().as_millis() as i64;
            seen.counts = outcome.counts;
            seen.rows = outcome.rows;
            seen.note = probe
                .lock()
                .ok()
                .and_then(|p| p.as_ref().and_then(|p| p.skew(&spec.name)));
            let told = Told {
                transitions: outcome.transitions,
                asks: outcome.asks,
            };
            (seen, told, found)
        }
        Err(e) => {
            seen.reachable = !matches!(&e, Error::Remote(r, _) if r.is_unreachable());
            seen.not_connected = matches!(
                &e,
                Error::Remote(r, _) if matches!(**r, crate::remote::RemoteError::NotConnected { .. })
            );
            seen.error = Some(e.to_string());
            (seen, Told::default(), Vec::new())
        }
    }
}

/// What a host's refresh has people told: the transitions, and what each session that
/// began to wait asks.
#[derive(Default)]
struct Told {
    transitions: Vec<Transition>,
    asks: HashMap<String, String>,
}

/// tmux on a host whose first call (the refresh's list-and-capture) also runs the
/// [`crate::remote_hooks`] probe, in the same exec before tmux, and keeps what it said;
/// every later call is a plain one.
struct Probing {
    plain: crate::remote::RemoteTmux,
    conn: crate::remote::Connection,
    /// The sessions whose words to read; taken by the first call.
    hooked: Mutex<Option<Vec<String>>>,
    probe: Arc<Mutex<Option<Probe>>>,
}

impl Transport for Probing {
    fn tmux(&self, args: &[String]) -> Result<String, TmuxError> {
        self.tmux_with_input(args, None)
    }

    fn tmux_with_input(&self, args: &[String], input: Option<&[u8]>) -> Result<String, TmuxError> {
        let hooked = self.hooked.lock().ok().and_then(|mut h| h.take());
        let Some(hooked) = hooked else {
            return self.plain.tmux_with_input(args, input);
        };
        let marker = format!("orchestra-probe-{}", uuid::Uuid::new_v4().simple());
        let command = crate::remote_hooks::probe_command(&hooked, &marker, args);
        let out = self
            .conn
            .exec(&command, input, None)
            .map_err(|e| TmuxError::Remote(e.to_string()))?;
        let (probe, tmux_out) = crate::remote_hooks::parse_probe(&out.stdout, &marker);
        if let Ok(mut slot) = self.probe.lock() {
            *slot = Some(probe);
        }
        match out.status {
            0 => Ok(tmux_out.to_string()),
            127 => Err(TmuxError::Failed {
                command: args.first().cloned().unwrap_or_default(),
                message: format!("tmux is not installed on host {}", self.conn.name),
            }),
            _ => Err(TmuxError::Failed {
                command: args.first().cloned().unwrap_or_default(),
                message: out.stderr.trim().to_string(),
            }),
        }
    }

    fn command_prefix(&self) -> Vec<String> {
        self.plain.command_prefix()
    }
}

/// The rows a remote refresh saw, after the local ones.
pub fn add_remote_rows(outcome: &mut health::Outcome, remote: &health::RemoteCache) {
    for host in &remote.hosts {
        outcome.rows.extend(host.rows.iter().cloned());
    }
}
