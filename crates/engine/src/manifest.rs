//! orchestra.toml: parse, validate, and report every error with file, line and column.
//! Unknown keys are errors; nothing starts on an invalid file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use crate::error::ManifestError;

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Orchestrator {
    #[serde(default)]
    pub shared_fs: String,
    #[serde(default = "default_sync_interval")]
    pub sync_interval: String,
    #[serde(default = "default_poll_interval")]
    pub poll_interval: u64,
    #[serde(default = "default_capture_lines")]
    pub capture_lines: usize,
    #[serde(default = "default_worktree_dir")]
    pub worktree_dir: String,
    #[serde(default)]
    pub wrap_up_cmd: String,
    #[serde(default = "default_agent")]
    pub agent: String,
}

// A manifest without [orchestrator] gets the same defaults as one with an empty table.
impl Default for Orchestrator {
    fn default() -> Orchestrator {
        Orchestrator {
            shared_fs: String::new(),
            sync_interval: default_sync_interval(),
            poll_interval: default_poll_interval(),
            capture_lines: default_capture_lines(),
            worktree_dir: default_worktree_dir(),
            wrap_up_cmd: String::new(),
            agent: default_agent(),
        }
    }
}

fn default_sync_interval() -> String {
    "6h".into()
}
fn default_poll_interval() -> u64 {
    5
}
fn default_capture_lines() -> usize {
    50
}
fn default_worktree_dir() -> String {
    "../{repo}.worktrees".into()
}
fn default_agent() -> String {
    "claude".into()
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// `user@host:port` (user and port optional).
    pub address: String,
    pub identity: Option<String>,
    /// "3s", "500ms" or a number of seconds. Default 3 s.
    pub connect_timeout: Option<String>,
    /// How long one command on the host may take. Default 5 s.
    pub command_timeout: Option<String>,
    /// `ssh2` (libssh2, by key; the default) or `openssh` (over the master connection
    /// `orchestra connect NAME` opens).
    #[serde(default)]
    pub transport: crate::remote::TransportKind,
    /// An ssh_config(5) file OpenSSH reads instead of ~/.ssh/config (openssh only).
    pub ssh_config: Option<String>,
}

impl Host {
    pub fn connect_timeout(&self) -> std::time::Duration {
        self.connect_timeout
            .as_deref()
            .and_then(crate::duration::parse_timeout)
            .unwrap_or(crate::remote::DEFAULT_CONNECT_TIMEOUT)
    }

    pub fn command_timeout(&self) -> std::time::Duration {
        self.command_timeout
            .as_deref()
            .and_then(crate::duration::parse_timeout)
            .unwrap_or(crate::remote::DEFAULT_COMMAND_TIMEOUT)
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ManifestSession {
    pub host: Option<String>,
    pub path: String,
    pub tmux: Option<String>,
    pub role: Option<String>,
    pub env: Option<String>,
    #[serde(alias = "claude_args")]
    pub agent_args: Option<String>,
    /// claude's `--permission-mode` for this session; none: the person's settings decide.
    pub permission_mode: Option<crate::agent::PermissionMode>,
    #[serde(default)]
    pub blocked_by: Vec<String>,
    /// `sandbox = true` or `[sessions.NAME.sandbox]`: its agent runs in a box, as a
    /// dispatched one with `--sandbox` (here only, allowed like a setup).
    pub sandbox: Option<SandboxSetting>,
}

impl ManifestSession {
    /// Whether its agent runs in a sandbox.
    pub fn sandboxed(&self) -> bool {
        self.sandbox.as_ref().is_some_and(SandboxSetting::on)
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Dependency {
    pub when: String,
    pub then: String,
}

/// How long a worktree's setup may run unless `setup_timeout` says otherwise.
pub const DEFAULT_SETUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);
/// How long a worktree's teardown may run unless `teardown_timeout` says otherwise.
pub const DEFAULT_TEARDOWN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// How long `orchestra check` may run unless `check_timeout` says otherwise.
pub const DEFAULT_CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1800);

/// `[worktree]`: what makes a dispatched worktree ready to work, and what runs before one
/// is removed.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct WorktreeTable {
    /// Runs in each new worktree, in the session's window, before the agent starts.
    pub setup: Option<CommandLine>,
    pub setup_timeout: Option<Seconds>,
    /// Runs in a worktree before `kill` or `merge` removes it.
    pub teardown: Option<CommandLine>,
    pub teardown_timeout: Option<Seconds>,
    /// What `orchestra check` runs in a session's worktree (e.g. "cargo test").
    pub check: Option<CommandLine>,
    pub check_timeout: Option<Seconds>,
    /// Paths of the main worktree copied into each new one.
    #[serde(default)]
    pub copy: Vec<String>,
    /// Paths of the main worktree linked into each new one.
    #[serde(default)]
    pub symlink: Vec<String>,
}

impl WorktreeTable {
    pub fn setup_argv(&self) -> Option<Vec<String>> {
        self.setup.as_ref().and_then(CommandLine::argv)
    }

    pub fn teardown_argv(&self) -> Option<Vec<String>> {
        self.teardown.as_ref().and_then(CommandLine::argv)
    }

    pub fn check_argv(&self) -> Option<Vec<String>> {
        self.check.as_ref().and_then(CommandLine::argv)
    }

    pub fn check_timeout(&self) -> std::time::Duration {
        self.check_timeout
            .as_ref()
            .and_then(Seconds::duration)
            .unwrap_or(DEFAULT_CHECK_TIMEOUT)
    }

    pub fn setup_timeout(&self) -> std::time::Duration {
        self.setup_timeout
            .as_ref()
            .and_then(Seconds::duration)
            .unwrap_or(DEFAULT_SETUP_TIMEOUT)
    }

    pub fn teardown_timeout(&self) -> std::time::Duration {
        self.teardown_timeout
            .as_ref()
            .and_then(Seconds::duration)
            .unwrap_or(DEFAULT_TEARDOWN_TIMEOUT)
    }
}

/// A command: one string split like a shell would (no shell runs it), or its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    Line(String),
    Words(Vec<String>),
}

impl CommandLine {
    /// The argv; `None` when it cannot be split or is empty (refused when parsed).
    pub fn argv(&self) -> Option<Vec<String>> {
        let words = match self {
            CommandLine::Line(line) => shell_words::split(line).ok()?,
            CommandLine::Words(words) => words.clone(),
        };
        words
            .first()
            .is_some_and(|w| !w.is_empty())
            .then_some(words)
    }
}

impl<'de> Deserialize<'de> for CommandLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CommandLine, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = CommandLine;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a command line (\"npm ci\") or its words ([\"sh\", \"-c\", \"...\"])")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CommandLine, E> {
                Ok(CommandLine::Line(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<CommandLine, A::Error> {
                let mut words = Vec::new();
                while let Some(word) = seq.next_element::<String>()? {
                    words.push(word);
                }
                Ok(CommandLine::Words(words))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// A duration: "10m", "90s", "1h", or a number of seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seconds {
    Text(String),
    Number(i64),
}

impl Seconds {
    /// `None` when it is not a duration of a second or more (refused when parsed).
    pub fn duration(&self) -> Option<std::time::Duration> {
        let secs = match self {
            Seconds::Text(t) => crate::duration::parse_secs(t)?,
            Seconds::Number(n) => *n,
        };
        (secs > 0).then(|| std::time::Duration::from_secs(secs as u64))
    }
}

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Seconds, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Seconds;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a duration such as \"10m\" or a number of seconds")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Seconds, E> {
                Ok(Seconds::Text(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Seconds, E> {
                Ok(Seconds::Number(v))
            }
        }
        d.deserialize_any(Visitor)
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    #[serde(default)]
    pub orchestrator: Orchestrator,
    #[serde(default)]
    pub worktree: WorktreeTable,
    #[serde(default)]
    pub hosts: BTreeMap<String, Host>,
    #[serde(default)]
    pub sessions: BTreeMap<String, ManifestSession>,
    #[serde(default)]
    pub dependencies: Vec<Dependency>,
    #[serde(default)]
    pub tasks: TasksTable,
    #[serde(default)]
    pub github: GithubTable,
    /// `sandbox = true` or `[sandbox]`: the repo's dispatched sessions run sandboxed.
    #[serde(default)]
    pub sandbox: Option<SandboxSetting>,
}

/// `sandbox = true|false`, or a `[sandbox]` table (which turns it on).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum SandboxSetting {
    On(bool),
    Table(SandboxTable),
}

/// `[sandbox]`: what the box lets out.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SandboxTable {
    /// "on" (default), "off", or a list of hosts (refused: not built yet).
    pub network: Option<NetworkSetting>,
}

/// `[sandbox] network`: a word, or a list of hosts.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum NetworkSetting {
    Word(String),
    Hosts(Vec<String>),
}

impl SandboxSetting {
    /// Whether it turns the sandbox on.
    pub fn on(&self) -> bool {
        match self {
            SandboxSetting::On(on) => *on,
            SandboxSetting::Table(_) => true,
        }
    }

    /// Its `network`, as written.
    pub fn network(&self) -> Option<&NetworkSetting> {
        match self {
            SandboxSetting::On(_) => None,
            SandboxSetting::Table(t) => t.network.as_ref(),
        }
    }
}

/// `[github]`: where `orchestra pr` finds the repository's API when the remote's address
/// does not say (a mirror, a proxy, a stand-in).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct GithubTable {
    /// The REST API's base, e.g. "https://HOST/api/v3".
    pub api: Option<String>,
    /// "owner/name", when the remote's path is not that.
    pub repo: Option<String>,
}

/// `[tasks]`: where the project's open tasks come from (the tasks module). No source
/// named and blank Notion data sources (the default) mean no task source at all.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TasksTable {
    /// The tracker: "notion" (the default), "github" (the repo's GitHub Issues) or
    /// "linear".
    pub source: Option<String>,
    /// The Notion data source of the projects (else $NOTION_PROJECTS_DATA_SOURCE_ID).
    pub projects_data_source: Option<String>,
    /// The Notion data source of the tasks (else $NOTION_TASKS_DATA_SOURCE_ID).
    pub tasks_data_source: Option<String>,
    /// The project page's title or id; default the repo folder's name.
    pub project: Option<String>,
    pub status_property: Option<String>,
    /// The status a pick moves a task to (GitHub: the label a pick adds).
    pub in_progress: Option<String>,
    pub done: Option<String>,
    /// Whether a merge writes back to the task; default false for Notion, true for
    /// GitHub.
    pub done_on_merge: Option<bool>,
    /// GitHub: only issues with all these labels are listed.
    pub labels: Option<Vec<String>>,
    /// GitHub: only issues assigned to this login ("none": to nobody, "*": to anyone).
    pub assignee: Option<String>,
    /// GitHub: who a pick assigns (default: the token's own user).
    pub pick_assignee: Option<String>,
    /// Linear: the team's key (ENG) or id.
    pub team: Option<String>,
    /// Linear: the API's base (default Linear's own; $ORCHESTRA_LINEAR_API wins).
    pub api: Option<String>,
    /// How long one request may take: "10s", "500ms", "1m".
    pub timeout: Option<String>,
}

/// The manifest's default place: `orchestra.toml` at the repo root.
pub fn default_path(repo_root: &Path) -> PathBuf {
    repo_root.join("orchestra.toml")
}

/// Reads and validates the manifest at `path`.
pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
    let text = std::fs::read_to_string(path).map_err(|e| ManifestError {
        file: path.display().to_string(),
        line: 1,
        column: 1,
        message: format!("cannot read: {e}"),
    })?;
    parse(&text, &path.display().to_string())
}

/// Parses and validates manifest `text` (named `file` in errors).
pub fn parse(text: &str, file: &str) -> Result<Manifest, ManifestError> {
    let manifest: Manifest = toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| line_column(text, s.start));
        ManifestError {
            file: file.to_string(),
            line,
            column,
            message: crate::error::one_line(e.message(), "not valid TOML"),
        }
    })?;
    validate(&manifest, text, file)?;
    Ok(manifest)
}

pub use orchestra_model::text::line_column;

/// An error about `needle` in table `header` of the manifest at `file`, found after
/// parsing (against the repo, say): placed where `needle` is written.
pub fn error_in(file: &Path, header: &str, needle: &str, message: String) -> ManifestError {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let (line, column) = locate(&text, header, needle);
    ManifestError {
        file: file.display().to_string(),
        line,
        column,
        message,
    }
}

/// Where `needle` first appears after the line of `[header]` (best effort for
/// errors found after parsing).
fn locate(text: &str, header: &str, needle: &str) -> (usize, usize) {
    let start = text.find(header).unwrap_or(0);
    let at = text[start..].find(needle).map_or(start, |i| start + i);
    line_column(text, at)
}

fn validate(m: &Manifest, text: &str, file: &str) -> Result<(), ManifestError> {
    let err = |(line, column): (usize, usize), message: String| ManifestError {
        file: file.to_string(),
        line,
        column,
        message,
    };
    if crate::duration::parse_secs(&m.orchestrator.sync_interval).is_none() {
        return Err(err(
            locate(text, "[orchestrator]", "sync_interval"),
            format!(
                "orchestrator.sync_interval {:?} is not a duration such as \"6h\" or \"30m\"",
                m.orchestrator.sync_interval
            ),
        ));
    }
    if m.orchestrator.poll_interval == 0 {
        return Err(err(
            locate(text, "[orchestrator]", "poll_interval"),
            "orchestrator.poll_interval must be 1 second or more".into(),
        ));
    }
    validate_worktree(&m.worktree, text, file)?;
    validate_tasks(&m.tasks, text, file)?;
    for (name, host) in &m.hosts {
        let header = format!("[hosts.{name}]");
        for (key, value) in [
            ("connect_timeout", &host.connect_timeout),
            ("command_timeout", &host.command_timeout),
        ] {
            if let Some(value) = value
                .as_deref()
                .filter(|v| crate::duration::parse_timeout(v).is_none())
            {
                return Err(err(
                    locate(text, &header, key),
                    format!("hosts.{name}.{key} {value:?} is not a duration such as \"3s\" or \"500ms\""),
                ));
            }
        }
        if host.ssh_config.is_some() && host.transport != crate::remote::TransportKind::OpenSsh {
            return Err(err(
                locate_key(text, &header, "ssh_config"),
                format!(
                    "hosts.{name}.ssh_config is read by OpenSSH only: add transport = \"openssh\""
                ),
            ));
        }
        if let Err(e) = crate::remote::config::parse_address(&host.address) {
            return Err(err(
                locate(text, &header, "address"),
                format!(
                    "hosts.{name}.address {:?} is not user@host:port (user and port optional): {e}",
                    host.address
                ),
            ));
        }
    }
    for (label, s) in &m.sessions {
        let header = format!("[sessions.{label}]");
        if crate::label::validate(label).is_err() {
            return Err(err(
                locate(text, &header, label),
                format!("session name {label:?} must be 1-63 characters of a-z, 0-9 and '-'"),
            ));
        }
        if let Some(host) = &s.host {
            if !m.hosts.contains_key(host) {
                return Err(err(
                    locate(text, &header, "host"),
                    format!("sessions.{label}.host {host:?} is not a [hosts.*] entry"),
                ));
            }
        }
        if let Some(tmux) = &s.tmux {
            if let Err(why) = check_tmux_name(tmux) {
                return Err(err(
                    locate(text, &header, "tmux"),
                    format!("sessions.{label}.tmux {tmux:?} {why}"),
                ));
            }
        }
        if s.path.trim().is_empty() {
            return Err(err(
                locate(text, &header, "path"),
                format!("sessions.{label}.path is empty"),
            ));
        }
        for field in [&s.agent_args, &s.env].into_iter().flatten() {
            if shell_words::split(field).is_err() {
                return Err(err(
                    locate(text, &header, field),
                    format!("sessions.{label}: cannot split {field:?} like a shell would"),
                ));
            }
        }
        if s.sandboxed() {
            let refused = if s.host.is_some() {
                Some("a sandbox is made on this machine only: not with host")
            } else if s.env.is_some() {
                Some("not with env (its snippet would run outside the box): give the variables to the tmux server instead")
            } else {
                None
            };
            if let Some(why) = refused {
                return Err(err(
                    locate(text, &header, "sandbox"),
                    format!("sessions.{label}.sandbox: {why}"),
                ));
            }
        }
        for upstream in &s.blocked_by {
            if !m.sessions.contains_key(upstream) {
                return Err(err(
                    locate(text, &header, "blocked_by"),
                    format!(
                        "sessions.{label}.blocked_by names {upstream:?}, which is not a session"
                    ),
                ));
            }
        }
    }
    if let Some(cycle) = blocked_by_cycle(m) {
        return Err(err(
            locate(text, &format!("[sessions.{}]", cycle[0]), "blocked_by"),
            format!("blocked_by goes round in a circle: {}", cycle.join(" → ")),
        ));
    }
    for d in &m.dependencies {
        let at = locate(text, "[[dependencies]]", &d.when);
        let upstream = match d.condition() {
            Some(Condition::Done { upstream }) => upstream,
            Some(Condition::Has { upstream, artifact }) => {
                // One validator for every artifact (dispatch --after, deps add, here).
                let checked = crate::artifact::parse(&artifact)
                    .map_err(|e| err(at, format!("when = {:?}: {e}", d.when)))?;
                if checked
                    .kind
                    .is_some_and(|k| k != crate::git::ArtifactKind::File)
                {
                    return Err(err(
                        at,
                        format!(
                            "when = {:?}: a manifest session has no branch; `has` names a file in its folder",
                            d.when
                        ),
                    ));
                }
                upstream
            }
            None => "",
        };
        if !m.sessions.contains_key(upstream) {
            return Err(err(
                at,
                format!(
                    "when = {:?}: write \"NAME done\" or \"NAME has ARTIFACT\" with NAME a session",
                    d.when
                ),
            ));
        }
        if shell_words::split(&d.then).map_or(true, |w| w.is_empty()) {
            return Err(err(
                locate(text, "[[dependencies]]", &d.then),
                format!("then = {:?} is not a command", d.then),
            ));
        }
    }
    Ok(())
}

fn validate_worktree(w: &WorktreeTable, text: &str, file: &str) -> Result<(), ManifestError> {
    let err = |(line, column): (usize, usize), message: String| ManifestError {
        file: file.to_string(),
        line,
        column,
        message,
    };
    const HEADER: &str = "[worktree]";
    for (key, command) in [("setup", &w.setup), ("teardown", &w.teardown)] {
        let Some(command) = command else { continue };
        if command.argv().is_some() {
            continue;
        }
        let (at, why) = match command {
            CommandLine::Line(line) => match shell_words::split(line) {
                Err(e) => (
                    locate(text, HEADER, line),
                    format!("cannot split {line:?} like a shell would ({e}); write it as words: [\"sh\", \"-c\", \"...\"]"),
                ),
                Ok(_) => (locate_key(text, HEADER, key), "is empty".to_string()),
            },
            CommandLine::Words(_) => (
                locate_key(text, HEADER, key),
                "has no program (its first word is missing or empty)".to_string(),
            ),
        };
        return Err(err(at, format!("worktree.{key} {why}")));
    }
    for (key, value) in [
        ("setup_timeout", &w.setup_timeout),
        ("teardown_timeout", &w.teardown_timeout),
    ] {
        if value.as_ref().is_some_and(|v| v.duration().is_none()) {
            return Err(err(
                locate_key(text, HEADER, key),
                format!("worktree.{key} is not a duration such as \"10m\", \"90s\" or a number of seconds (at least 1)"),
            ));
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    for (key, paths) in [("copy", &w.copy), ("symlink", &w.symlink)] {
        for path in paths {
            let at = locate(text, HEADER, &format!("{path:?}"));
            if let Err(why) = check_worktree_path(path) {
                return Err(err(at, format!("worktree.{key} {path:?} {why}")));
            }
            let clean = path.trim_end_matches('/');
            if seen.contains(&clean) {
                return Err(err(
                    at,
                    format!("worktree.{key} {path:?} is listed twice (copy and symlink together name one path once)"),
                ));
            }
            seen.push(clean);
        }
    }
    Ok(())
}

fn validate_tasks(t: &TasksTable, text: &str, file: &str) -> Result<(), ManifestError> {
    let err = |key: &str, message: String| {
        let (line, column) = locate_key(text, "[tasks]", key);
        ManifestError {
            file: file.to_string(),
            line,
            column,
            message,
        }
    };
    let source = t.source.as_deref().unwrap_or("notion");
    if !["notion", "github", "linear"].contains(&source) {
        return Err(err(
            "source",
            format!(
                "tasks.source {source:?} is not a task source orchestra knows: \"notion\", \"github\" or \"linear\""
            ),
        ));
    }
    // A key of another source is a mistake worth saying, not one to ignore.
    let keys_of: [(&str, &[(&str, bool)]); 3] = [
        (
            "notion",
            &[
                ("projects_data_source", t.projects_data_source.is_some()),
                ("tasks_data_source", t.tasks_data_source.is_some()),
                ("project", t.project.is_some()),
                ("status_property", t.status_property.is_some()),
            ],
        ),
        (
            "github",
            &[
                ("labels", t.labels.is_some()),
                ("assignee", t.assignee.is_some()),
                ("pick_assignee", t.pick_assignee.is_some()),
            ],
        ),
        (
            "linear",
            &[("team", t.team.is_some()), ("api", t.api.is_some())],
        ),
    ];
    for (owner, keys) in keys_of {
        if owner == source {
            continue;
        }
        if let Some((key, _)) = keys.iter().find(|(_, given)| *given) {
            return Err(err(
                key,
                format!(
                    "tasks.{key} is a setting of source \"{owner}\", and the source is {source:?}"
                ),
            ));
        }
    }
    if source == "github" && t.done.is_some() {
        return Err(err(
            "done",
            "tasks.done is no setting of source \"github\": a merge closes the issue".into(),
        ));
    }
    for label in t.labels.iter().flatten() {
        if label.trim().is_empty() || label.contains(',') {
            return Err(err(
                "labels",
                format!("tasks.labels {label:?} is no label name (empty, or holds a comma)"),
            ));
        }
    }
    for (key, value) in [
        ("assignee", &t.assignee),
        ("pick_assignee", &t.pick_assignee),
    ] {
        if let Some(login) = value.as_deref() {
            let login = login.trim().trim_start_matches('@');
            let any = key == "assignee" && (login == "*" || login == "none");
            if !any && !github_login(login) {
                return Err(err(
                    key,
                    format!("tasks.{key} {login:?} is not a GitHub login (letters, digits and single dashes)"),
                ));
            }
        }
    }
    for (key, value) in [
        ("projects_data_source", &t.projects_data_source),
        ("tasks_data_source", &t.tasks_data_source),
    ] {
        if let Some(id) = value.as_deref().filter(|v| !v.trim().is_empty()) {
            if orchestra_model::notion::id(id).is_none() {
                return Err(err(
                    key,
                    format!(
                        "tasks.{key} {id:?} is not a Notion id (32 hex digits, dashes allowed)"
                    ),
                ));
            }
        }
    }
    if let Some(team) = t.team.as_deref().map(str::trim) {
        if !orchestra_model::linear::team_key(team) && orchestra_model::linear::uuid(team).is_none()
        {
            return Err(err(
                "team",
                format!("tasks.team {team:?} is not a Linear team's key (such as ENG) or id"),
            ));
        }
    }
    if let Some(api) = t.api.as_deref().map(str::trim) {
        if !(api.starts_with("https://") || api.starts_with("http://")) {
            return Err(err(
                "api",
                format!("tasks.api {api:?} is not an http(s) address such as \"https://api.linear.app\""),
            ));
        }
    }
    for (key, value) in [
        ("status_property", &t.status_property),
        ("in_progress", &t.in_progress),
        ("done", &t.done),
    ] {
        if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err(err(key, format!("tasks.{key} is empty")));
        }
    }
    if let Some(timeout) = t
        .timeout
        .as_deref()
        .filter(|v| crate::duration::parse_timeout(v).is_none())
    {
        return Err(err(
            "timeout",
            format!("tasks.timeout {timeout:?} is not a duration such as \"10s\" or \"500ms\""),
        ));
    }
    Ok(())
}

/// Whether `login` is a GitHub user name: 1-39 letters, digits and inner single dashes.
fn github_login(login: &str) -> bool {
    !login.is_empty()
        && login.len() <= 39
        && login
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !login.starts_with('-')
        && !login.ends_with('-')
        && !login.contains("--")
}

/// Why `path` cannot name a place inside every worktree: it must be relative, stay inside
/// (no `..`), and not be the worktree itself or its `.git`.
pub fn check_worktree_path(path: &str) -> Result<(), &'static str> {
    let p = Path::new(path);
    if path.trim().is_empty() {
        return Err("is empty");
    }
    if p.is_absolute() || path.starts_with('~') {
        return Err("escapes the repo: write a path relative to the repo's root");
    }
    let mut depth = 0usize;
    for part in p.components() {
        match part {
            std::path::Component::Normal(name) if name == ".git" => {
                return Err("names git's own folder");
            }
            std::path::Component::Normal(_) => depth += 1,
            std::path::Component::CurDir => {}
            _ => return Err("escapes the repo: `..` leaves the worktree"),
        }
    }
    if depth == 0 {
        return Err("names the whole worktree");
    }
    if path.chars().any(char::is_control) {
        return Err("holds a control character");
    }
    Ok(())
}

/// Where `key = ` is written as a key of the table `header` (best effort).
fn locate_key(text: &str, header: &str, key: &str) -> (usize, usize) {
    let start = text.find(header).unwrap_or(0);
    let mut offset = start;
    for line in text[start..].split_inclusive('\n') {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix(key) {
            if rest.trim_start().starts_with('=') {
                return line_column(text, offset + (line.len() - trimmed.len()));
            }
        }
        offset += line.len();
    }
    line_column(text, start)
}

/// Why `name` cannot be a tmux session name orchestra targets as `=NAME:`: tmux reads
/// `:` and `.` in a target as window and pane separators (and renames such sessions).
pub(crate) fn check_tmux_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        Err("is empty")
    } else if name.contains([':', '.']) {
        Err("holds ':' or '.', which tmux reads as window and pane separators")
    } else if name.contains(['#', '$', '\\']) {
        // `#(…)` in `new-session -s` runs a command; `$` and `\` come back escaped, so the
        // session could not be found again by its name.
        Err("holds '#', '$' or '\\', which tmux expands or rewrites in a session name")
    } else if name.chars().any(char::is_control) {
        Err("holds a control character")
    } else {
        Ok(())
    }
}

/// What a dependency's `when` waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition<'a> {
    /// `NAME done`
    Done { upstream: &'a str },
    /// `NAME has ARTIFACT`: a file in the upstream's folder (words joined by one space).
    Has { upstream: &'a str, artifact: String },
}

impl Dependency {
    /// The `when`, read; `None` when it is neither form.
    pub fn condition(&self) -> Option<Condition<'_>> {
        let words: Vec<&str> = self.when.split_whitespace().collect();
        match words.as_slice() {
            [upstream, "done"] => Some(Condition::Done { upstream }),
            [upstream, "has", artifact @ ..] if !artifact.is_empty() => Some(Condition::Has {
                upstream,
                artifact: artifact.join(" "),
            }),
            _ => None,
        }
    }
}

/// A `blocked_by` cycle, as names ending where they began.
fn blocked_by_cycle(m: &Manifest) -> Option<Vec<String>> {
    fn visit(
        m: &Manifest,
        name: &str,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == name) {
            let mut cycle = path[at..].to_vec();
            cycle.push(name.to_string());
            return Some(cycle);
        }
        if done.contains(name) {
            return None;
        }
        path.push(name.to_string());
        for upstream in m
            .sessions
            .get(name)
            .map(|s| &s.blocked_by[..])
            .unwrap_or(&[])
        {
            if let Some(cycle) = visit(m, upstream, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(name.to_string());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    m.sessions
        .keys()
        .find_map(|name| visit(m, name, &mut Vec::new(), &mut done))
}

impl Manifest {
    /// Session names with every `blocked_by` upstream before its dependents (names in
    /// `wanted`, plus nothing else), in a stable order.
    pub fn start_order(&self, wanted: &[String]) -> Vec<String> {
        let mut order: Vec<String> = Vec::new();
        fn place(m: &Manifest, name: &str, order: &mut Vec<String>, depth: usize) {
            if order.iter().any(|o| o == name) || depth > m.sessions.len() {
                return;
            }
            for upstream in m
                .sessions
                .get(name)
                .map(|s| &s.blocked_by[..])
                .unwrap_or(&[])
            {
                place(m, upstream, order, depth + 1);
            }
            order.push(name.to_string());
        }
        for name in wanted {
            place(self, name, &mut order, 0);
        }
        order.retain(|n| wanted.contains(n));
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_keys_are_checked_where_they_are() {
        let refused = |text: &str| parse(text, "orchestra.toml").unwrap_err().to_string();
        let e = refused("[tasks]\nsource = \"linear\"\nteam = \"E NG\"\n");
        assert!(
            e.contains("orchestra.toml:3:1") && e.contains("not a Linear team"),
            "{e}"
        );
        let e = refused("[tasks]\nteam = \"ENG\"\n");
        assert!(e.contains("setting of source \"linear\""), "{e}");
        let e = refused("[tasks]\nsource = \"linear\"\nteam = \"ENG\"\napi = \"ftp://x\"\n");
        assert!(
            e.contains("orchestra.toml:4:1") && e.contains("http(s)"),
            "{e}"
        );
        let e = refused("[tasks]\nsource = \"linear\"\nteam = \"ENG\"\nstatus_property = \"S\"\n");
        assert!(e.contains("setting of source \"notion\""), "{e}");
        let ok = "[tasks]\nsource = \"linear\"\nteam = \"ENG\"\napi = \"http://127.0.0.1:9\"\ndone = \"Shipped\"\n";
        assert_eq!(
            parse(ok, "orchestra.toml").unwrap().tasks.team.as_deref(),
            Some("ENG")
        );
    }

    const GOOD: &str = r#"
[orchestrator]
shared_fs = ""
sync_interval = "6h"
poll_interval = 5
capture_lines = 50
worktree_dir = "../{repo}.worktrees"
wrap_up_cmd = ""
agent = "claude"

[hosts.gpu]
address = "user@gpu-box:22"
identity = "~/.ssh/id_ed25519"

[sessions.pipeline]
host = "gpu"
path = "/home/user/project"
tmux = "claude_pipeline"
role = "pipeline"
env = "export PATH=$HOME/.local/bin:$PATH"
agent_args = "--allowedTools Edit,Write,Bash"
blocked_by = []

[sessions.analysis]
path = "/home/user/analysis"
claude_args = "--model opus"
permission_mode = "acceptEdits"
blocked_by = ["pipeline"]

[[dependencies]]
when = "pipeline done"
then = 'brief analysis "Data ready at /share/output"'
"#;

    #[test]
    fn the_documented_example_parses() {
        let m = parse(GOOD, "orchestra.toml").unwrap();
        assert_eq!(m.hosts["gpu"].address, "user@gpu-box:22");
        assert_eq!(
            m.sessions["analysis"].agent_args.as_deref(),
            Some("--model opus"),
            "claude_args is an alias"
        );
        assert_eq!(m.sessions["analysis"].blocked_by, ["pipeline"]);
        assert_eq!(
            m.sessions["analysis"].permission_mode,
            Some(crate::agent::PermissionMode::AcceptEdits)
        );
        assert_eq!(m.sessions["pipeline"].permission_mode, None);
        assert_eq!(m.dependencies[0].when, "pipeline done");
        assert_eq!(
            m.start_order(&["analysis".into(), "pipeline".into()]),
            ["pipeline", "analysis"]
        );
        assert_eq!(m.hosts["gpu"].connect_timeout().as_secs(), 3);
        assert_eq!(
            crate::duration::parse_timeout("500ms").map(|d| d.as_millis()),
            Some(500)
        );
        assert_eq!(crate::duration::parse_timeout("0s"), None);
        let bare = parse("[sessions.a]\npath = \"/x\"\n", "orchestra.toml").unwrap();
        assert_eq!(
            bare.orchestrator.agent, "claude",
            "defaults without [orchestrator]"
        );
        assert_eq!(bare.orchestrator.poll_interval, 5);
        assert_eq!(bare.orchestrator.capture_lines, 50);
    }

    #[test]
    fn plain_names_and_artifacts_pass() {
        let m = parse(
            "[hosts.h]\naddress = \"deploy.bot_1-x@gpu-box.lan:2222\"\n\
             [sessions.a]\npath = \"/x\"\ntmux = \"claude_a-1\"\nhost = \"h\"\n\
             [[dependencies]]\nwhen = \"a has out/data.csv\"\nthen = \"brief a hi\"\n\
             [[dependencies]]\nwhen = \"a has file:./x..y\"\nthen = \"brief a hi\"\n",
            "orchestra.toml",
        )
        .expect("valid");
        assert_eq!(
            m.dependencies[0].condition(),
            Some(Condition::Has {
                upstream: "a",
                artifact: "out/data.csv".into()
            })
        );
        assert_eq!(m.sessions["a"].tmux.as_deref(), Some("claude_a-1"));
    }

    #[test]
    fn the_worktree_table_takes_a_line_or_words_and_has_defaults() {
        let m = parse(
            "[worktree]\nsetup = \"npm ci --prefer-offline\"\nteardown = [\"sh\", \"-c\", \"docker compose down\"]\n\
             setup_timeout = \"2m\"\ncopy = [\".env\"]\nsymlink = [\"models\"]\n",
            "orchestra.toml",
        )
        .expect("valid");
        let w = &m.worktree;
        assert_eq!(w.setup_argv().unwrap(), ["npm", "ci", "--prefer-offline"]);
        assert_eq!(
            w.teardown_argv().unwrap(),
            ["sh", "-c", "docker compose down"]
        );
        assert_eq!(w.setup_timeout().as_secs(), 120);
        assert_eq!(w.teardown_timeout().as_secs(), 60, "the default");
        assert_eq!(
            (&w.copy[..], &w.symlink[..]),
            (&[".env".to_string()][..], &["models".to_string()][..])
        );
        let bare = parse("", "orchestra.toml").unwrap().worktree;
        assert_eq!(bare.setup_argv(), None);
        assert_eq!(bare.setup_timeout().as_secs(), 600);
        let numeric = parse("[worktree]\nsetup_timeout = 30\n", "orchestra.toml").unwrap();
        assert_eq!(numeric.worktree.setup_timeout().as_secs(), 30);
    }

    #[test]
    fn every_error_names_file_line_and_column() {
        let cases: &[(&str, &str, usize, usize, &str)] = &[
            ("unknown key", "[orchestrator]\npoll_intervall = 5\n", 2, 1, "unknown field"),
            ("unknown table", "[orchestra]\nagent = \"x\"\n", 1, 2, "unknown field"),
            ("bad value type", "[orchestrator]\npoll_interval = \"five\"\n", 2, 17, "invalid type"),
            ("bad toml", "[sessions.a\npath = \"/x\"\n", 1, 12, ""),
            ("missing path", "[sessions.a]\nhost = \"h\"\n", 1, 1, "missing field `path`"),
            ("unknown host", "[sessions.a]\npath = \"/x\"\nhost = \"nowhere\"\n", 3, 1, "not a [hosts.*] entry"),
            ("bad address", "[hosts.h]\naddress = \"me@box:ssh\"\n", 2, 1, "not user@host:port"),
            ("bad label", "[sessions.Bad_Name]\npath = \"/x\"\n", 1, 11, "must be 1-63"),
            ("unknown upstream", "[sessions.a]\npath = \"/x\"\nblocked_by = [\"ghost\"]\n", 3, 1, "not a session"),
            (
                "bad when",
                "[sessions.a]\npath = \"/x\"\n[[dependencies]]\nwhen = \"a finished\"\nthen = \"brief a hi\"\n",
                4,
                9,
                "NAME done",
            ),
            ("bad sync interval", "[orchestrator]\nsync_interval = \"often\"\n", 2, 1, "not a duration"),
            ("bad timeout", "[hosts.h]\naddress = \"box\"\ncommand_timeout = \"soon\"\n", 3, 1, "not a duration"),
            (
                "blocked_by cycle",
                "[sessions.a]\npath = \"/x\"\nblocked_by = [\"b\"]\n[sessions.b]\npath = \"/y\"\nblocked_by = [\"a\"]\n",
                3,
                1,
                "a → b → a",
            ),
            ("unknown permission mode", "[sessions.a]\npath = \"/x\"\npermission_mode = \"yolo\"\n", 3, 19, "unknown variant"),
            ("unsplittable args", "[sessions.a]\npath = \"/x\"\nagent_args = \"--x 'open\"\n", 3, 15, "cannot split"),
            ("user with a leading dash", "[hosts.h]\naddress = \"-oProxyCommand=touch@box\"\n", 2, 1, "the user part \"-oProxyCommand=touch\""),
            ("user with a space", "[hosts.h]\naddress = \"a b@box\"\n", 2, 1, "is not a user name"),
            ("user with a control character", "[hosts.h]\naddress = \"a\\u0007@box\"\n", 2, 1, "is not a user name"),
            ("user with shell syntax", "[hosts.h]\naddress = \"$(id)@box\"\n", 2, 1, "is not a user name"),
            ("host with a leading dash", "[hosts.h]\n\naddress = \"me@-oProxyCommand=x\"\n", 3, 1, "the host part"),
            ("tmux name with a dot", "[sessions.a]\npath = \"/x\"\ntmux = \"a.b\"\n", 3, 1, "window and pane separators"),
            ("tmux name with a colon", "[sessions.a]\npath = \"/x\"\ntmux = \"a:b\"\n", 3, 1, "window and pane separators"),
            ("empty tmux name", "[sessions.a]\npath = \"/x\"\ntmux = \"\"\n", 3, 1, "is empty"),
            (
                "absolute artifact",
                "[sessions.a]\npath = \"/x\"\n[[dependencies]]\nwhen = \"a has /etc/passwd\"\nthen = \"brief a hi\"\n",
                4,
                9,
                "absolute path",
            ),
            (
                "artifact above the folder",
                "[sessions.a]\npath = \"/x\"\n[[dependencies]]\nwhen = \"a has ../secret\"\nthen = \"brief a hi\"\n",
                4,
                9,
                "leaves the session's folder",
            ),
            (
                "artifact that climbs out",
                "[sessions.a]\npath = \"/x\"\n[[dependencies]]\nwhen = \"a has a/../../b\"\nthen = \"brief a hi\"\n",
                4,
                9,
                "leaves the session's folder",
            ),
            (
                "branch artifact",
                "[sessions.a]\npath = \"/x\"\n[[dependencies]]\nwhen = \"a has branch:main\"\nthen = \"brief a hi\"\n",
                4,
                9,
                "has no branch",
            ),
            ("unknown worktree key", "[worktree]\nsetup = \"true\"\nsetpu_timeout = \"1m\"\n", 3, 1, "unknown field"),
            ("unsplittable setup", "[worktree]\nsetup = \"npm 'ci\"\n", 2, 10, "cannot split"),
            ("empty setup", "[worktree]\nsetup_timeout = \"1m\"\nsetup = \"  \"\n", 3, 1, "is empty"),
            ("setup words without a program", "[worktree]\nsetup = []\n", 2, 1, "has no program"),
            ("setup of the wrong type", "[worktree]\nsetup = 3\n", 2, 9, "a command line"),
            ("bad setup timeout", "[worktree]\nsetup = \"true\"\nsetup_timeout = \"soon\"\n", 3, 1, "not a duration"),
            ("zero teardown timeout", "[worktree]\nteardown_timeout = 0\n", 2, 1, "not a duration"),
            ("symlink that climbs out", "[worktree]\nsymlink = [\"../models\"]\n", 2, 12, "escapes the repo"),
            ("absolute copy", "[worktree]\ncopy = [\"/etc/passwd\"]\n", 2, 9, "escapes the repo"),
            ("copy of git's folder", "[worktree]\ncopy = [\".git/config\"]\n", 2, 9, "git's own folder"),
            ("copy of the whole worktree", "[worktree]\ncopy = [\".\"]\n", 2, 9, "the whole worktree"),
            ("one path twice", "[worktree]\ncopy = [\"a\"]\nsymlink = [\"a/\"]\n", 3, 12, "listed twice"),
            ("unknown tasks key", "[tasks]\nsource = \"notion\"\nstatus_prop = \"S\"\n", 3, 1, "unknown field"),
            ("unknown task source", "[tasks]\n\nsource = \"jira\"\n", 3, 1, "not a task source"),
            ("bad data source id", "[tasks]\ntasks_data_source = \"tasks\"\n", 2, 1, "not a Notion id"),
            ("empty status name", "[tasks]\ndone = \" \"\n", 2, 1, "tasks.done is empty"),
            ("bad tasks timeout", "[tasks]\ntimeout = \"soon\"\n", 2, 1, "not a duration"),
            ("done_on_merge of the wrong type", "[tasks]\ndone_on_merge = \"yes\"\n", 2, 17, "invalid type"),
            ("unknown task source", "[tasks]\nsource = \"jira\"\n", 2, 1, "\"notion\", \"github\" or \"linear\""),
            ("github key for notion", "[tasks]\nlabels = [\"bug\"]\n", 2, 1, "a setting of source \"github\""),
            ("notion key for github", "[tasks]\nsource = \"github\"\nproject = \"x\"\n", 3, 1, "a setting of source \"notion\""),
            ("done for github", "[tasks]\nsource = \"github\"\ndone = \"Done\"\n", 3, 1, "closes the issue"),
            ("bad assignee", "[tasks]\nsource = \"github\"\nassignee = \"a b\"\n", 3, 1, "not a GitHub login"),
            ("sandbox on a host", "[hosts.h]\naddress = \"h\"\n[sessions.a]\npath = \"/x\"\nhost = \"h\"\nsandbox = true\n", 6, 1, "not with host"),
            ("sandbox with env", "[sessions.a]\npath = \"/x\"\nenv = \"A=1\"\n[sessions.a.sandbox]\nnetwork = \"off\"\n", 4, 13, "not with env"),
        ];
        for (what, text, line, column, message) in cases {
            let e = parse(text, "orchestra.toml").expect_err(what);
            assert_eq!(e.file, "orchestra.toml", "{what}");
            assert_eq!((e.line, e.column), (*line, *column), "{what}: {e}");
            assert!(e.message.contains(message), "{what}: {e}");
            assert!(
                e.to_string()
                    .starts_with(&format!("orchestra.toml:{line}:{column}: ")),
                "{what}: {e}"
            );
        }
    }
}
