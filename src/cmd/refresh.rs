//! `orchestra refresh`, `status-line` and `health`: the status path.

use std::collections::BTreeMap;
use std::path::Path;

use crate::cli::{HealthArgs, RefreshArgs};
use crate::cmd::{host_spec, human_age, remote_tmux, render_table, Context, Output};
use crate::error::Error;
use crate::health::{self, Outcome};
use crate::notify::Fallback;
use crate::state::{Session, Transition};

pub fn refresh_once(ctx: &Context) -> Result<Outcome, Error> {
    let key = health::server_key(ctx.server.socket.as_deref());
    let rules = || crate::agent::rules::Rules::load(&ctx.home);
    let outcome = health::refresh(&ctx.home, &key, &ctx.tmux(), rules)?;
    // Status ticks are where blocked sessions notice their inputs, without a daemon.
    if outcome.blocked > 0 {
        let store = ctx.store()?;
        crate::cmd::quietly(|quiet| crate::cmd::deps::start_ready(ctx, &store, quiet))?;
    }
    // A transition is when a manifest's `when` may have come true (not on quiet ticks).
    if !outcome.transitions.is_empty() {
        let _ = crate::cmd::up::run_ready_dependencies(ctx);
    }
    Ok(outcome)
}

pub fn run(ctx: &Context, args: &RefreshArgs, out: &mut Output<'_>) -> Result<(), Error> {
    if args.remote {
        return run_remote(ctx, args, out);
    }
    let outcome = refresh_once(ctx)?;
    let transitions: Vec<serde_json::Value> = outcome
        .transitions
        .iter()
        .map(|t| {
            serde_json::json!({
                "id": t.session.id, "label": t.session.label, "kind": t.kind, "old": t.old, "new": t.new,
            })
        })
        .collect();
    if args.json {
        out.line(
            serde_json::json!({
                "tmux_calls": outcome.tmux_calls,
                "captured": outcome.captured,
                "transitions": transitions,
                "summary": outcome.summary,
            })
            .to_string(),
        );
        return Ok(());
    }
    for t in &outcome.transitions {
        out.line(format!(
            "{}: {} {} → {}",
            t.session.label, t.kind, t.old, t.new
        ));
    }
    out.line(format!(
        "refreshed {} window(s): captured {}, {} change(s), {} tmux call(s)",
        outcome.rows.len(),
        outcome.captured,
        outcome.transitions.len(),
        outcome.tmux_calls
    ));
    Ok(())
}

pub fn status_line(ctx: &Context, out: &mut Output<'_>) -> Result<(), Error> {
    let key = health::server_key(ctx.server.socket.as_deref());
    let summary = health::status_line(&ctx.home, &key, || {
        refresh_once(ctx).map_err(|e| match e {
            Error::Health(h) => h,
            Error::State(s) => health::HealthError::State(s),
            Error::Tmux(t) => health::HealthError::Tmux(t),
            other => health::HealthError::Other(other.to_string()),
        })
    })?;
    let remote = remote_status_part(ctx);
    out.line(match (summary.is_empty(), remote.is_empty()) {
        (_, true) => summary,
        (true, false) => remote,
        (false, false) => format!("{summary} · {remote}"),
    });
    Ok(())
}

/// The remote hosts' part of the status line, from the cache only: a refresh that is due
/// starts in a detached process (unless one runs), so a slow or dead host never delays
/// the line. Nothing at all when no session lives on a remote host.
fn remote_status_part(ctx: &Context) -> String {
    let Some(cache) = health::load_remote_cache(&ctx.home) else {
        return String::new();
    };
    if cache.hosts.is_empty() {
        return String::new();
    }
    let now_ms = health::now_micros() / 1000;
    if health::remote_is_stale(&cache, now_ms) && !remote_refresh_running(ctx) {
        let mut args = vec!["refresh".to_string(), "--remote".to_string()];
        if let Some(socket) = &ctx.server.socket {
            args.push("--socket".into());
            args.push(socket.to_string_lossy().into_owned());
        }
        crate::notify::spawn_self_detached(&args, &[("ORCHESTRA_HOME", &ctx.home)]);
    }
    health::remote_summary(&cache, now_ms)
}

fn remote_refresh_running(ctx: &Context) -> bool {
    let path = health::remote_lock_path(&ctx.home);
    match std::fs::File::open(&path) {
        // Free now: the lock is released at once, the child takes it for real.
        Ok(file) => file.try_lock().is_err(),
        Err(_) => false,
    }
}

/// `refresh --remote`: one at a time (a lock), every host at once (a thread each).
fn run_remote(ctx: &Context, args: &RefreshArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let lock_path = health::remote_lock_path(&ctx.home);
    if let Some(dir) = lock_path.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;
    }
    let lock = std::fs::File::create(&lock_path)
        .map_err(Error::io(format!("opening {}", lock_path.display())))?;
    if lock.try_lock().is_err() {
        out.note("a remote refresh is already running");
        return Ok(());
    }
    let cache = refresh_remote(ctx)?;
    if args.json {
        out.line(serde_json::to_string_pretty(&cache.hosts).unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    for host in &cache.hosts {
        match &host.error {
            None => out.line(format!(
                "{}: {} session(s), {} ms",
                host.name,
                host.rows.len(),
                host.latency_ms
            )),
            Some(e) => out.line(format!("{}: {e}", host.name)),
        }
    }
    Ok(())
}

/// A remote refresh whose failure is nobody's business (after up/down).
pub fn refresh_remote_quietly(ctx: &Context) {
    let _ = refresh_remote(ctx);
}

/// Refreshes every remote host that has sessions, in parallel, and saves what was seen
/// for the status line (hosts that fail keep their last answer time, for its age).
pub fn refresh_remote(ctx: &Context) -> Result<health::RemoteCache, Error> {
    let store = ctx.store()?;
    let mut groups: BTreeMap<(String, String), Vec<Session>> = BTreeMap::new();
    for s in store.sessions(None, false)? {
        if let (Some(host), Some(manifest)) = (&s.host, &s.manifest) {
            groups
                .entry((manifest.clone(), host.clone()))
                .or_default()
                .push(s.clone());
        }
    }
    drop(store);
    let previous = health::load_remote_cache(&ctx.home).unwrap_or_default();
    let fallback = Fallback {
        command: None,
        tmux_socket: ctx
            .server
            .socket
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
    };
    let results: Vec<(health::HostSeen, u64, Vec<Transition>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .into_iter()
            .map(|((manifest, host), sessions)| {
                let home = ctx.home.clone();
                let answered = previous
                    .hosts
                    .iter()
                    .find(|h| h.name == host)
                    .map_or(0, |h| h.answered_ms);
                scope.spawn(move || refresh_one_host(&home, &manifest, &host, &sessions, answered))
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut cache = health::RemoteCache {
        refreshed_ms: health::now_micros() / 1000,
        poll_secs: results.iter().map(|(_, p, _)| *p).min().unwrap_or(5),
        hosts: Vec::new(),
    };
    let mut changed = false;
    for (seen, _, transitions) in results {
        for t in &transitions {
            health::notify_transition(t, &fallback);
        }
        changed |= !transitions.is_empty();
        cache.hosts.push(seen);
    }
    health::save_remote_cache(&ctx.home, &cache);
    if changed {
        let _ = crate::cmd::up::run_ready_dependencies(ctx);
    }
    Ok(cache)
}

/// One host's refresh: connect, one batched exec, classify, record. A failure is kept
/// in what is returned (the rows then show the recorded states).
fn refresh_one_host(
    home: &Path,
    manifest_path: &str,
    host: &str,
    sessions: &[Session],
    answered_ms: i64,
) -> (health::HostSeen, u64, Vec<Transition>) {
    let now_us = health::now_micros();
    let recorded_rows = sessions
        .iter()
        .map(|s| health::HealthRow::recorded(s, now_us))
        .collect();
    let mut seen = health::HostSeen {
        name: host.to_string(),
        reachable: false,
        error: None,
        answered_ms,
        latency_ms: 0,
        counts: BTreeMap::new(),
        rows: recorded_rows,
    };
    let manifest = match crate::manifest::load(Path::new(manifest_path)) {
        Ok(m) => m,
        Err(e) => {
            seen.reachable = true;
            seen.error = Some(e.to_string());
            return (seen, 5, Vec::new());
        }
    };
    let poll = manifest.orchestrator.poll_interval.max(1);
    let started = std::time::Instant::now();
    let result = (|| -> Result<health::HostOutcome, Error> {
        let tmux = remote_tmux(&host_spec(&manifest, host)?)?;
        let rules =
            crate::agent::rules::Rules::load(home).map_err(|e| Error::BadInput(e.to_string()))?;
        Ok(health::refresh_host(home, host, &tmux, sessions, &rules)?)
    })();
    match result {
        Ok(outcome) => {
            seen.reachable = true;
            seen.answered_ms = health::now_micros() / 1000;
            seen.latency_ms = started.elapsed().as_millis() as i64;
            seen.counts = outcome.counts;
            seen.rows = outcome.rows;
            (seen, poll, outcome.transitions)
        }
        Err(e) => {
            seen.reachable = !matches!(&e, Error::Remote(r) if r.is_unreachable());
            seen.error = Some(e.to_string());
            (seen, poll, Vec::new())
        }
    }
}

/// Redraws the health table in place: cursor home, the table, clear what is left below.
pub fn watch(ctx: &Context, interval: u64, count: u64, out: &mut Output<'_>) -> Result<(), Error> {
    let mut drawn = 0;
    loop {
        let mut frame = Vec::new();
        {
            let mut sink = std::io::sink();
            let mut buffer = Output {
                out: &mut frame,
                err: &mut sink,
            };
            let mut outcome = refresh_once(ctx)?;
            // The dashboard never waits for a host: it shows the remote cache.
            let _ = remote_status_part(ctx);
            if let Some(remote) = health::load_remote_cache(&ctx.home) {
                add_remote_rows(&mut outcome, &remote);
            }
            table(ctx, &outcome, &mut buffer);
        }
        let now = chrono::Local::now().format("%H:%M:%S");
        let _ = write!(
            out.out,
            "\x1b[H\x1b[2Korchestra · {now} · Ctrl-C to leave\n\x1b[2K\n"
        );
        for line in String::from_utf8_lossy(&frame).lines() {
            let _ = writeln!(out.out, "\x1b[2K{line}");
        }
        let _ = write!(out.out, "\x1b[J");
        let _ = out.out.flush();
        drawn += 1;
        if count > 0 && drawn >= count {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_secs(interval.max(1)));
    }
}

pub fn health(ctx: &Context, args: &HealthArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let mut outcome = refresh_once(ctx)?;
    let mut stranded = crate::cmd::deps::stranded_reasons(&ctx.store()?, None)?;
    for row in &mut outcome.rows {
        if let Some(why) = stranded.remove(&row.id) {
            row.status = format!("{} ({why})", row.status);
        }
    }
    // Remote sessions live: each host once, in parallel, bounded by its timeouts.
    let remote = refresh_remote(ctx)?;
    add_remote_rows(&mut outcome, &remote);
    if args.json {
        out.line(serde_json::to_string_pretty(&outcome.rows).unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    table(ctx, &outcome, out);
    for host in remote.hosts.iter().filter(|h| h.error.is_some()) {
        out.line(format!(
            "{}: {}",
            host.name,
            host.error.as_deref().unwrap_or_default()
        ));
    }
    Ok(())
}

fn add_remote_rows(outcome: &mut Outcome, remote: &health::RemoteCache) {
    for host in &remote.hosts {
        outcome.rows.extend(host.rows.iter().cloned());
    }
}

fn table(_ctx: &Context, outcome: &Outcome, out: &mut Output<'_>) {
    if outcome.rows.is_empty() {
        out.line("no orchestra windows on this tmux server");
        return;
    }
    let rows: Vec<Vec<String>> = outcome
        .rows
        .iter()
        .map(|r| {
            vec![
                r.label.clone(),
                r.state.clone(),
                r.status.clone(),
                if r.source.is_empty() {
                    "-".into()
                } else {
                    r.source.clone()
                },
                human_age(r.state_age),
                human_age(r.idle_for),
                match (&r.screen, &r.rule) {
                    (Some(s), Some(rule)) => format!("{s} ({rule})"),
                    (Some(s), None) => s.clone(),
                    _ => "-".into(),
                },
                r.window.clone(),
                r.pane.clone(),
                r.host.clone().unwrap_or_else(|| "local".into()),
            ]
        })
        .collect();
    for line in render_table(
        &[
            "LABEL", "STATE", "STATUS", "SAID BY", "SINCE", "QUIET", "SCREEN", "WINDOW", "PANE",
            "HOST",
        ],
        &rows,
    ) {
        out.line(line);
    }
}
