//! `orchestra up` and `down`: the sessions an orchestra.toml describes, on this machine
//! or on a remote host. A manifest session works in a plain folder (no branch, no
//! worktree of ours); its row in the record lives from `up` to `down`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cli::UpDownArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::session::manifest::{down_one, up_one, Carried, Plan};
use crate::session::{host_spec, load_manifest, remote_tmux, session_tmux};
use crate::state::Session;
use crate::tmux::Tmux;

/// The manifest and the sessions of it a command acts on, checked before anything runs.
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
        let result = up_one(ctx, &store, &plan, tmux, name, Carried::default(), out);
        tally(name, result, names.len() == 1, &mut failed, out)?;
    }
    crate::health::remote::refresh_remote_quietly(ctx);
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
        let result = down_one(ctx, &store, tmux, &session, Duration::from_secs(args.wait));
        tally(name, result, plan.names.len() == 1, &mut failed, out)?;
    }
    crate::health::remote::refresh_remote_quietly(ctx);
    if failed > 0 {
        return Err(Error::Refused(format!(
            "{failed} session(s) did not go down"
        )));
    }
    Ok(())
}
