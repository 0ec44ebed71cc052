//! The plan: every session to ask, the agent for each, where it runs, and the prompts,
//! checked against the manifest before anything runs or is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Deadline, Kind, Part, SyncError};
use crate::manifest::Manifest;
use crate::remote::HostSpec;

/// What the command found before the plan: the repository's root, its manifest, and the
/// flags.
pub struct Request<'a> {
    /// `$ORCHESTRA_HOME`, where prompt overrides live.
    pub home: &'a Path,
    /// The repository's main worktree.
    pub root: PathBuf,
    pub manifest_path: &'a Path,
    pub manifest: &'a Manifest,
    /// The connection settings of every `[hosts.*]` entry of the manifest, by name.
    pub hosts: BTreeMap<String, HostSpec>,
    /// Only this session; every one when None.
    pub name: Option<&'a str>,
    pub kind: Kind,
    pub deadline: Deadline,
    /// How many agents run at once (at least 1).
    pub jobs: usize,
}

/// Where one session's agent runs.
pub(super) enum Place {
    Local(PathBuf),
    Remote { spec: HostSpec, path: String },
}

/// A manifest session, ready to be asked.
pub struct Target {
    pub name: String,
    pub(super) role: String,
    pub(super) place: Place,
    pub(super) env: Option<String>,
    pub(super) argv: Vec<String>,
}

impl Target {
    /// The folder as the agent sees it (on its own host).
    pub(super) fn folder(&self) -> String {
        match &self.place {
            Place::Local(p) => p.display().to_string(),
            Place::Remote { path, .. } => path.clone(),
        }
    }

    /// The folder as the person sees it: `host:path` for a remote one.
    pub fn path_text(&self) -> String {
        match &self.place {
            Place::Local(p) => p.display().to_string(),
            Place::Remote { spec, path } => format!("{}:{path}", spec.name),
        }
    }
}

/// Everything checked before anything runs or is written.
pub struct Plan {
    pub kind: Kind,
    pub targets: Vec<Target>,
    /// The agent for the local synthesis runs (print mode).
    pub(super) synth_argv: Vec<String>,
    pub(super) root: PathBuf,
    pub(super) context_dir: PathBuf,
    pub(super) deadline: Deadline,
    pub jobs: usize,
    /// orchestra.toml's sync_interval, in seconds (for --if-due).
    pub interval_secs: i64,
    /// Per part: the session prompt template and the synthesis template.
    pub(super) templates: Vec<(Part, String, String)>,
}

/// Checks the request against the manifest: nothing runs and nothing is written before
/// this has passed.
pub fn plan(req: Request<'_>) -> Result<Plan, SyncError> {
    let Request {
        home: orchestra_home,
        root,
        manifest_path,
        manifest,
        hosts,
        name,
        kind,
        deadline,
        jobs,
    } = req;
    let base = manifest_path.parent().unwrap_or(&root).to_path_buf();
    let names = chosen_sessions(manifest, name, manifest_path)?;

    let agent = shell_words::split(&manifest.orchestrator.agent)
        .ok()
        .filter(|w| !w.is_empty())
        .ok_or_else(|| {
            SyncError::Request(format!(
                "[orchestrator] agent {:?} in {} is not a command",
                manifest.orchestrator.agent,
                manifest_path.display()
            ))
        })?;
    // The synthesis always runs here, so the agent must exist here.
    let found = crate::paths::find_program(&agent[0]).ok_or_else(|| {
        SyncError::Request(format!(
            "agent {:?} not found (set [orchestrator] agent in {})",
            agent[0],
            manifest_path.display()
        ))
    })?;
    let mut local_agent = agent.clone();
    // A relative path would resolve against each session's folder, not against ours.
    if agent[0].contains('/') {
        local_agent[0] = std::path::absolute(&found)
            .unwrap_or(found)
            .to_string_lossy()
            .into_owned();
    }

    let home = PathBuf::from(crate::paths::non_empty_env("HOME").unwrap_or_else(|| "/".into()));
    let mut targets = Vec::new();
    for name in names {
        let session = &manifest.sessions[&name];
        let extra = match &session.agent_args {
            Some(a) => shell_words::split(a)
                .map_err(|e| SyncError::Request(format!("sessions.{name}.agent_args: {e}")))?,
            None => Vec::new(),
        };
        let (place, mut argv) = match &session.host {
            Some(host) => {
                // The manifest names only hosts it has (checked when it was loaded).
                let spec = hosts.get(host).cloned().ok_or_else(|| {
                    SyncError::Request(format!(
                        "host {host:?} is not a [hosts.*] entry of the manifest"
                    ))
                })?;
                (
                    Place::Remote {
                        spec,
                        path: session.path.clone(),
                    },
                    agent.clone(),
                )
            }
            None => {
                let path = crate::remote::config::expand_home(&session.path, &home);
                (Place::Local(base.join(path)), local_agent.clone())
            }
        };
        argv.extend(extra);
        argv.push("-p".into());
        targets.push(Target {
            role: session.role.clone().unwrap_or_else(|| "not set".into()),
            name,
            place,
            env: session.env.clone().filter(|e| !e.trim().is_empty()),
            argv,
        });
    }

    let context_dir = match manifest.orchestrator.shared_fs.trim() {
        "" => root.clone(),
        shared => {
            let dir = base.join(crate::remote::config::expand_home(shared, &home));
            if !dir.is_dir() {
                return Err(SyncError::Request(format!(
                    "[orchestrator] shared_fs {} is not a folder",
                    dir.display()
                )));
            }
            dir
        }
    };

    let load = |name: &str| {
        crate::prompts::load(orchestra_home, name)
            .ok_or_else(|| SyncError::PromptMissing(name.to_string()))
    };
    let mut templates = Vec::new();
    for part in kind.parts() {
        templates.push((*part, load(part.prompt())?, load(part.synthesis_prompt())?));
    }
    let mut synth_argv = local_agent;
    synth_argv.push("-p".into());
    Ok(Plan {
        kind,
        targets,
        synth_argv,
        root,
        context_dir,
        deadline,
        jobs,
        // Validated with the manifest.
        interval_secs: crate::duration::parse_secs(&manifest.orchestrator.sync_interval)
            .unwrap_or(6 * 3600),
        templates,
    })
}

fn chosen_sessions(
    manifest: &Manifest,
    name: Option<&str>,
    manifest_path: &Path,
) -> Result<Vec<String>, SyncError> {
    let all: Vec<String> = manifest.sessions.keys().cloned().collect();
    match name {
        Some(n) if manifest.sessions.contains_key(n) => Ok(vec![n.to_string()]),
        Some(n) => Err(SyncError::Request(format!(
            "no session {n:?} in {} (it has: {})",
            manifest_path.display(),
            if all.is_empty() {
                "none".into()
            } else {
                crate::paths::short_list(&all)
            }
        ))),
        None if all.is_empty() => Err(SyncError::Request(format!(
            "{} names no [sessions.*]",
            manifest_path.display()
        ))),
        None => Ok(all),
    }
}
