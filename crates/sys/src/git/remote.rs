//! A branch published to the person's own remote: which remote, its address, and the push
//! (the git CLI, so the person's credential helpers and SSH keys do the talking).

use std::time::Duration;

use super::{git_output, GitError, Repo};
use crate::process::Run;

/// What a push that still runs after this is waiting for: a network that stopped
/// answering, or a credential prompt nobody answers.
pub const PUSH_DEADLINE: Duration = Duration::from_secs(5 * 60);

impl Repo {
    /// The remote `branch` is pushed to: its configured one (`branch.<b>.pushRemote`,
    /// `remote.pushDefault`, `branch.<b>.remote`), else `origin`, else the only remote.
    pub fn push_remote(&self, branch: &str) -> Option<String> {
        let config = self.repo.config().ok()?;
        let configured = [
            format!("branch.{branch}.pushRemote"),
            "remote.pushDefault".to_string(),
            format!("branch.{branch}.remote"),
        ]
        .into_iter()
        .find_map(|key| config.get_string(&key).ok())
        .filter(|name| name != ".");
        if configured.is_some() {
            return configured;
        }
        let remotes = self.repo.remotes().ok()?;
        let names: Vec<&str> = remotes.iter().flatten().collect();
        if names.contains(&"origin") {
            return Some("origin".into());
        }
        match names[..] {
            [only] => Some(only.to_string()),
            _ => None,
        }
    }

    /// The address `remote` is pushed to (its push URL, else its URL).
    pub fn remote_url(&self, remote: &str) -> Option<String> {
        let found = self.repo.find_remote(remote).ok()?;
        found.pushurl().or_else(|| found.url()).map(str::to_string)
    }

    /// `git push --set-upstream <remote> <branch>`, bounded by [`PUSH_DEADLINE`].
    pub fn push(&self, remote: &str, branch: &str) -> Result<(), GitError> {
        let run = Run::new("git", PUSH_DEADLINE)
            .arg("-C")
            .arg(self.main_worktree())
            // Nobody is there to answer a prompt of git's own in a script.
            .env("GIT_TERMINAL_PROMPT", "0");
        git_output(run, &["push", "--set-upstream", remote, branch]).map(drop)
    }
}
