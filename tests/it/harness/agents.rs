//! The agent stand-ins: the real `claude` CLI, and the scripted stand-in for the
//! Anthropic API it talks to (tests/fake-api) in a sandboxed HOME.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{require, wait_until, which, Env};

pub const CLAUDE_VERSION: &str = "2.1.332";

/// The cache of pinned agent releases that tests/run.sh fills: `$ORCHESTRA_TEST_CACHE`,
/// else ~/.cache/orchestra-test.
pub fn test_cache() -> PathBuf {
    std::env::var("ORCHESTRA_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/orchestra-test")
        })
}

/// An agent CLI: the file `$<var>` names (to try another build), else `in_cache` under
/// [`test_cache`]; None when that file is not there.
pub fn agent_cli(var: &str, in_cache: &str) -> Option<PathBuf> {
    if let Ok(p) = std::env::var(var) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let p = test_cache().join(in_cache);
    p.is_file().then_some(p)
}

/// The real `claude` CLI: `$ORCHESTRA_TEST_CLAUDE`, else the pinned release in the test
/// cache.
pub fn claude_bin() -> Option<PathBuf> {
    agent_cli(
        "ORCHESTRA_TEST_CLAUDE",
        &format!("claude-{CLAUDE_VERSION}/node_modules/@anthropic-ai/claude-code-linux-x64/claude"),
    )
}

/// The folder of the API stand-ins: `$ORCHESTRA_FAKE_API` (to try another version of
/// them), else the repository's own tests/fake-api.
pub fn fake_api_dir() -> PathBuf {
    std::env::var_os("ORCHESTRA_FAKE_API")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-api"))
}

/// An API stand-in of tests/fake-api (`anthropic.py` for claude, `gemini.py`, `openai.py`
/// for codex, `openai_chat.py` for aider) on a free loopback port; each request lands in
/// its log, one JSON line each, before its reply.
pub struct StandIn {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

/// The scripted stand-in for the Anthropic API.
pub type FakeApi = StandIn;

impl StandIn {
    /// Starts `script` with its port file and log in `dir` (named after the script, so
    /// several stand-ins can share a folder).
    pub fn start(dir: &Path, script: &str) -> StandIn {
        let stem = script.trim_end_matches(".py");
        let port_file = dir.join(format!("{stem}.port"));
        let log = dir.join(format!("{stem}-requests.jsonl"));
        let mut child = Command::new("python3")
            .arg(fake_api_dir().join(script))
            .args(["--port", "0", "--port-file"])
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start the API stand-in {script} (python3): {e}"));
        let mut exited = None;
        let listening = wait_until(Duration::from_secs(10), || {
            exited = child.try_wait().ok().flatten();
            port_file.exists() || exited.is_some()
        });
        assert!(
            listening && exited.is_none(),
            "the API stand-in {script} did not start ({exited:?})"
        );
        let port = std::fs::read_to_string(&port_file)
            .expect("port file")
            .trim()
            .parse()
            .expect("port number");
        StandIn { child, port, log }
    }

    /// Every request the stand-in received, one JSON line each (`{"path", "turn",
    /// "request"}` for claude's). A line still being written is left out.
    pub fn requests(&self) -> String {
        let mut log = std::fs::read_to_string(&self.log).unwrap_or_default();
        log.truncate(log.rfind('\n').map_or(0, |end| end + 1));
        log
    }

    /// [`StandIn::requests`], parsed.
    pub fn requests_json(&self) -> Vec<serde_json::Value> {
        self.requests()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The real claude CLI, a fake API and a sandboxed HOME: what a test needs to run the agent.
pub struct ClaudeWorld {
    pub claude: PathBuf,
    pub api: FakeApi,
    /// The environment a tmux server must start with for claude to reach the fake API.
    pub env: Vec<(String, String)>,
}

impl ClaudeWorld {
    /// `None` (a reported skip) when the CLI is not installed, except on CI where that fails.
    pub fn start(env: &Env, trust: &[&Path]) -> Option<ClaudeWorld> {
        let claude = claude_bin();
        if !require(
            &format!("the claude CLI {CLAUDE_VERSION}"),
            claude.is_some(),
        ) {
            return None;
        }
        if !require("python3", which("python3").is_some()) {
            return None;
        }
        let api = StandIn::start(&env.root, "anthropic.py");
        let vars = agent_home(
            env,
            "claude_home.py",
            &env.root.join("claude-home"),
            api.port,
            trust,
        );
        Some(ClaudeWorld {
            claude: claude.expect("checked above"),
            api,
            env: vars,
        })
    }
}

/// Makes a sandboxed HOME for an agent CLI with `script` of tests/fake-api (its settings
/// point at the stand-in on `port`; `trust`: folders it trusts without asking) and returns
/// the environment a tmux server must start with for the CLI to use it.
pub fn agent_home(
    env: &Env,
    script: &str,
    home: &Path,
    port: u16,
    trust: &[&Path],
) -> Vec<(String, String)> {
    let mut cmd = Command::new("python3");
    cmd.arg(fake_api_dir().join(script))
        .arg(home)
        .arg("--print-env")
        .arg("--port")
        .arg(port.to_string());
    for t in trust {
        cmd.arg("--trust").arg(t);
    }
    let out = cmd.output().expect(script);
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut vars = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(assignment) = line.strip_prefix("export ") else {
            continue;
        };
        let words = shell_words::split(assignment).expect("shell words");
        let (k, v) = words[0].split_once('=').expect("NAME=value");
        vars.push((k.to_string(), v.to_string()));
    }
    vars.push((
        "TMUX_TMPDIR".into(),
        env.tmux_tmpdir.to_string_lossy().into_owned(),
    ));
    vars
}
