//! The shared test harness: a real tmux server per test on its own socket (killed on drop,
//! only that socket), real git repos in temp folders, the real `claude` CLI against the
//! scripted stand-in for the Anthropic API in tests/fake-api.
//!
//! Under `CI=true` a missing real part fails the test; elsewhere the test says it skipped.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const CLAUDE_VERSION: &str = "2.1.332";

pub fn on_ci() -> bool {
    std::env::var("CI")
        .map(|v| v == "true" || v == "1")
        .unwrap_or(false)
}

/// Fails (on CI) or reports a skip (elsewhere) for a missing real part. Returns whether
/// the test may go on.
pub fn require(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if on_ci() {
        panic!("required test dependency missing: {what} (tests/run.sh installs it)");
    }
    eprintln!("SKIP: {what} is missing (tests/run.sh installs it)");
    false
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_orchestra")
}

pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Polls `check` every 50 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if check() {
            return true;
        }
        if start.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn from(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    #[track_caller]
    pub fn ok(self) -> Run {
        assert_eq!(
            self.code, 0,
            "expected success; stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Exit `code` with exactly one line on stderr.
    #[track_caller]
    pub fn fails_with(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        assert_eq!(
            self.stderr.lines().count(),
            1,
            "expected one line on stderr, got:\n{}",
            self.stderr
        );
        self
    }
}

/// One isolated world: a temp folder holding a git repo, `ORCHESTRA_HOME` and a tmux
/// socket of its own.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub socket: PathBuf,
    pub repo: PathBuf,
    pub tmux_tmpdir: PathBuf,
    /// Extra environment for orchestra runs (e.g. PATH overrides).
    pub env: Vec<(String, String)>,
}

impl Env {
    pub fn new() -> Env {
        assert!(
            which("tmux").is_some(),
            "tmux is required (tests/run.sh installs it)"
        );
        assert!(
            which("git").is_some(),
            "git is required (tests/run.sh installs it)"
        );
        let dir = tempfile::Builder::new()
            .prefix("orch")
            .tempdir_in("/tmp")
            .expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical temp dir");
        let tmux_tmpdir = root.join("tmux");
        std::fs::create_dir_all(&tmux_tmpdir).expect("tmux tmpdir");
        let env = Env {
            home: root.join("home"),
            socket: tmux_tmpdir.join("sock"),
            repo: root.join("repo"),
            tmux_tmpdir,
            root,
            dir,
            env: Vec::new(),
        };
        init_repo(&env.repo);
        env
    }

    /// Runs orchestra in the repo, outside tmux, on this test's server.
    pub fn orchestra(&self, args: &[&str]) -> Run {
        self.orchestra_in(&self.repo, args)
    }

    pub fn orchestra_in(&self, cwd: &Path, args: &[&str]) -> Run {
        let mut cmd = self.orchestra_command(cwd, args);
        Run::from(cmd.output().expect("run orchestra"))
    }

    pub fn orchestra_command(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args);
        self.orchestra_env(&mut cmd, cwd);
        cmd
    }

    /// [`Env::orchestra`] under `umask` (set by `sh`, as a login shell would).
    pub fn orchestra_umask(&self, umask: &str, args: &[&str]) -> Run {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
            .arg(bin())
            .args(args);
        self.orchestra_env(&mut cmd, &self.repo);
        Run::from(cmd.output().expect("run orchestra"))
    }

    /// This test's world for an orchestra run in `cwd`.
    fn orchestra_env(&self, cmd: &mut Command, cwd: &Path) {
        cmd.current_dir(cwd)
            .env("ORCHESTRA_HOME", &self.home)
            .env("ORCHESTRA_TMUX_SOCKET", &self.socket)
            .env("TMUX_TMPDIR", &self.tmux_tmpdir)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env_remove("ORCHESTRA_AGENT")
            .env_remove("ORCHESTRA_SESSION")
            .stdin(Stdio::null());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
    }

    /// Starts this test's tmux server with a session `harness` (so it outlives the
    /// sessions orchestra makes), its global environment taken from `env`.
    pub fn start_server(&self, env: &[(String, String)]) {
        let mut cmd = Command::new("tmux");
        cmd.args(["-S"])
            .arg(&self.socket)
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "harness",
                "-x",
                "200",
                "-y",
                "50",
            ])
            .env("TMUX_TMPDIR", &self.tmux_tmpdir)
            .env_remove("TMUX");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("start tmux");
        assert!(
            out.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Ends this test's tmux server and waits until it is gone.
    pub fn stop_server(&self) {
        let _ = self.tmux_try(&["kill-server"]);
        assert!(wait_until(Duration::from_secs(5), || self
            .tmux_try(&["list-sessions"])
            .code
            != 0
            && !self.socket.exists()
            || self
                .tmux_try(&["list-sessions"])
                .stderr
                .contains("no server")));
        let _ = std::fs::remove_file(&self.socket);
    }

    /// Runs the shell `command` in a new window of the `harness` session (a real terminal,
    /// inside tmux, in the repo, with this test's ORCHESTRA_HOME); returns its pane id.
    pub fn run_in_window(&self, command: &str) -> String {
        self.tmux(&[
            "new-window",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            "harness:",
            "-c",
            self.repo.to_str().expect("utf-8 temp path"),
            "-e",
            &format!("ORCHESTRA_HOME={}", self.home.display()),
            command,
        ])
        .trim()
        .to_string()
    }

    /// Runs tmux on this test's server; panics on failure.
    #[track_caller]
    pub fn tmux(&self, args: &[&str]) -> String {
        let run = self.tmux_try(args);
        assert_eq!(run.code, 0, "tmux {args:?}: {}", run.stderr);
        run.stdout
    }

    pub fn tmux_try(&self, args: &[&str]) -> Run {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .env("TMUX_TMPDIR", &self.tmux_tmpdir)
            .env_remove("TMUX")
            .output()
            .expect("run tmux");
        Run::from(out)
    }

    /// `window_id window_name @orchestra_id` of every window on the server.
    pub fn windows(&self) -> Vec<String> {
        let run = self.tmux_try(&[
            "list-windows",
            "-a",
            "-F",
            "#{window_id} #{window_name} #{@orchestra_id}",
        ]);
        run.stdout.lines().map(str::to_string).collect()
    }

    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.repo, args)
    }

    pub fn branches(&self) -> Vec<String> {
        self.git(&["branch", "--format=%(refname:short)"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    pub fn worktree_path(&self, label: &str) -> PathBuf {
        self.root.join("repo.worktrees").join(label)
    }

    pub fn list_json(&self) -> Vec<serde_json::Value> {
        let run = self.orchestra(&["list", "--json"]).ok();
        serde_json::from_str(&run.stdout).expect("list --json is JSON")
    }

    pub fn session(&self, label: &str) -> serde_json::Value {
        self.list_json()
            .into_iter()
            .find(|s| s["label"] == label)
            .unwrap_or_else(|| panic!("no session {label} in list --json"))
    }

    /// A generic agent that stays put: a shell reading commands.
    pub fn dispatch_shell(&self, label: &str) -> Run {
        self.orchestra(&[
            "dispatch",
            label,
            "--agent",
            "bash --norc --noprofile",
            "--kind",
            "generic",
        ])
    }
}

impl Drop for Env {
    /// Ends this test's world, so that its temp folder goes with it (also when the test
    /// failed): the server, then every process still running in the folder's name.
    fn drop(&mut self) {
        // Only this test's own server, by its own socket.
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
        // kill-server does not wait: agents exit in their own time, and their exit hooks
        // (an `orchestra event`, claude saving its config) would write the folder again
        // after it was removed.
        end_processes_of(&self.root, Duration::from_secs(10));
    }
}

/// The processes (not this one) whose environment or working folder names `root`: what
/// a test started there, directly or through tmux, hooks and detached children.
fn processes_of(root: &Path) -> Vec<u32> {
    let needle = root.as_os_str().as_encoded_bytes();
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            let proc = PathBuf::from(format!("/proc/{pid}"));
            let in_env = std::fs::read(proc.join("environ"))
                .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle));
            in_env || std::fs::read_link(proc.join("cwd")).is_ok_and(|cwd| cwd.starts_with(root))
        })
        .collect()
}

/// Waits up to `grace` for the processes of `root` to end, then kills those left.
pub fn end_processes_of(root: &Path, grace: Duration) {
    if wait_until(grace, || processes_of(root).is_empty()) {
        return;
    }
    for pid in processes_of(root) {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }
    wait_until(Duration::from_secs(2), || processes_of(root).is_empty());
}

pub fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn init_repo(repo: &Path) {
    std::fs::create_dir_all(repo).expect("repo dir");
    git_in(repo, &["init", "-q", "-b", "main"]);
    git_in(repo, &["config", "user.name", "Test"]);
    git_in(repo, &["config", "user.email", "test@example.com"]);
    std::fs::write(repo.join("README.md"), "hello\n").expect("write");
    git_in(repo, &["add", "."]);
    git_in(repo, &["commit", "-q", "-m", "initial"]);
}

/// The real `claude` CLI: `$ORCHESTRA_TEST_CLAUDE`, else the pinned release in the test
/// cache that tests/run.sh fills.
pub fn claude_bin() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("ORCHESTRA_TEST_CLAUDE") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let cache = std::env::var("ORCHESTRA_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/orchestra-test")
        });
    let p = cache
        .join(format!("claude-{CLAUDE_VERSION}"))
        .join("node_modules/@anthropic-ai/claude-code-linux-x64/claude");
    p.is_file().then_some(p)
}

/// The folder of the API stand-ins: `$ORCHESTRA_FAKE_API` (to try another version of
/// them), else the repository's own tests/fake-api.
pub fn fake_api_dir() -> PathBuf {
    std::env::var_os("ORCHESTRA_FAKE_API")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-api"))
}

/// The scripted stand-in for the Anthropic API, on a free loopback port.
pub struct FakeApi {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl FakeApi {
    pub fn start(dir: &Path) -> FakeApi {
        let port_file = dir.join("fake-api.port");
        let log = dir.join("requests.jsonl");
        let mut child = Command::new("python3")
            .arg(fake_api_dir().join("anthropic.py"))
            .args(["--port", "0", "--port-file"])
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::null())
            .spawn()
            .expect("start the fake API (python3)");
        let mut exited = None;
        let listening = wait_until(Duration::from_secs(10), || {
            exited = child.try_wait().ok().flatten();
            port_file.exists() || exited.is_some()
        });
        assert!(
            listening && exited.is_none(),
            "the fake API did not start ({exited:?})"
        );
        let port = std::fs::read_to_string(&port_file)
            .expect("port file")
            .trim()
            .parse()
            .expect("port number");
        FakeApi { child, port, log }
    }

    /// Every request the fake API received, one JSON line each (`{"path", "turn",
    /// "request"}`). A line still being written is left out.
    pub fn requests(&self) -> String {
        let mut log = std::fs::read_to_string(&self.log).unwrap_or_default();
        log.truncate(log.rfind('\n').map_or(0, |end| end + 1));
        log
    }
}

impl Drop for FakeApi {
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
        let api = FakeApi::start(&env.root);
        let home = env.root.join("claude-home");
        let mut cmd = Command::new("python3");
        cmd.arg(fake_api_dir().join("claude_home.py"))
            .arg(&home)
            .arg("--print-env")
            .arg("--port")
            .arg(api.port.to_string());
        for t in trust {
            cmd.arg("--trust").arg(t);
        }
        let out = cmd.output().expect("claude_home.py");
        assert!(
            out.status.success(),
            "claude_home.py: {}",
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
        Some(ClaudeWorld {
            claude: claude.expect("checked above"),
            api,
            env: vars,
        })
    }
}

/// The outer terminal a person looks at: a tmux server whose one pane is a client
/// attached to the server under test.
pub struct Person {
    socket: std::path::PathBuf,
}

impl Person {
    pub fn attach(env: &Env) -> Person {
        let socket = env.root.join("person.sock");
        let attach = format!(
            "env -u TMUX tmux -S {} attach -t harness",
            env.socket.display()
        );
        let ok = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "person",
                "-x",
                "180",
                "-y",
                "50",
                &attach,
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok);
        assert!(wait_until(Duration::from_secs(10), || !env
            .tmux(&["list-clients"])
            .trim()
            .is_empty()));
        Person { socket }
    }

    pub fn tmux(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn sees(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "person"])
    }

    #[track_caller]
    pub fn wait_to_see(&self, text: &str) {
        assert!(
            wait_until(Duration::from_secs(30), || self.sees().contains(text)),
            "never saw {text:?}:\n{}",
            self.sees()
        );
    }

    /// The status line shows the window's badge: "1:label  waiting".
    #[track_caller]
    pub fn wait_for_badge(&self, window: &str, state: &str) {
        let shows = || {
            let screen = self.sees();
            let status = screen
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .to_string();
            status
                .split(window)
                .nth(1)
                .is_some_and(|after| after.trim_start().starts_with(state))
        };
        assert!(
            wait_until(Duration::from_secs(30), shows),
            "the badge of {window} never said {state}:\n{}",
            self.sees()
        );
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "person"];
        args.extend_from_slice(keys);
        self.tmux(&args);
        std::thread::sleep(Duration::from_millis(300));
    }

    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "person", "-l", text]);
        std::thread::sleep(Duration::from_millis(200));
    }
}

impl Drop for Person {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}

/// A real OpenSSH server on 127.0.0.1 (a free port), with a throwaway host key and user
/// key; the "remote" side runs as this same user with a TMUX_TMPDIR of the test's own (so
/// its tmux server is the test's too). `home` is the HOME orchestra runs with: its
/// `.ssh/known_hosts` starts empty.
pub struct Sshd {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    pub home: PathBuf,
    pub user_key: PathBuf,
    /// `ssh-ed25519 AAAA…` of the host key.
    pub host_public: String,
    /// The remote side's TMUX_TMPDIR.
    pub remote_tmux_tmpdir: PathBuf,
    pub user: String,
}

pub fn sshd_bin() -> Option<PathBuf> {
    let p = PathBuf::from("/usr/sbin/sshd");
    p.is_file().then_some(p)
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn keygen(path: &Path) -> String {
    let out = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "orchestra-test",
            "-f",
        ])
        .arg(path)
        .output()
        .expect("ssh-keygen");
    assert!(out.status.success(), "ssh-keygen failed");
    let public = std::fs::read_to_string(path.with_extension("pub")).expect("public key");
    public
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

impl Sshd {
    /// `None` (a reported skip) without sshd, except on CI where that fails.
    pub fn start(env: &Env) -> Option<Sshd> {
        let sshd = sshd_bin();
        if !require("sshd (openssh-server)", sshd.is_some())
            || !require("ssh-keygen", which("ssh-keygen").is_some())
        {
            return None;
        }
        let dir = env.root.join("sshd");
        let home = env.root.join("ssh-home");
        let remote_tmux_tmpdir = env.root.join("remote-tmux");
        // The remote side's HOME: its login shell reads no rc file of this machine's user
        // (whose rc files may be slow, or wait on a lock).
        let remote_home = env.root.join("remote-home");
        for d in [&dir, &home.join(".ssh"), &remote_tmux_tmpdir, &remote_home] {
            std::fs::create_dir_all(d).expect("sshd dirs");
        }
        let host_public = keygen(&dir.join("hostkey"));
        let user_key = dir.join("userkey");
        let user_public = keygen(&user_key);
        std::fs::write(
            dir.join("authorized_keys"),
            format!(
                "environment=\"TMUX_TMPDIR={}\",environment=\"HOME={}\" {user_public}\n",
                remote_tmux_tmpdir.display(),
                remote_home.display()
            ),
        )
        .expect("authorized_keys");
        std::fs::write(home.join(".ssh/known_hosts"), "").expect("known_hosts");
        let port = free_port();
        std::fs::write(
            dir.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nAuthorizedKeysFile {ak}\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PermitUserEnvironment yes\nStrictModes no\nUsePAM no\nPidFile {pid}\n\
                 PermitRootLogin prohibit-password\nLogLevel VERBOSE\n",
                hk = dir.join("hostkey").display(),
                ak = dir.join("authorized_keys").display(),
                pid = dir.join("sshd.pid").display(),
            ),
        )
        .expect("sshd_config");
        let _ = std::fs::create_dir_all("/run/sshd");
        let child = Command::new(sshd.expect("checked above"))
            .arg("-D")
            .arg("-f")
            .arg(dir.join("sshd_config"))
            .arg("-E")
            .arg(dir.join("sshd.log"))
            .stdin(Stdio::null())
            .spawn()
            .expect("start sshd");
        assert!(
            wait_until(Duration::from_secs(10), || std::net::TcpStream::connect((
                "127.0.0.1",
                port
            ))
            .is_ok()),
            "sshd did not listen: {}",
            std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
        );
        let user =
            String::from_utf8_lossy(&Command::new("id").arg("-un").output().expect("id").stdout)
                .trim()
                .to_string();
        Some(Sshd {
            child: Some(child),
            port,
            dir,
            home,
            user_key,
            host_public,
            remote_tmux_tmpdir,
            user,
        })
    }

    /// The known_hosts line that trusts this server.
    pub fn known_hosts_line(&self) -> String {
        format!("[127.0.0.1]:{} {}\n", self.port, self.host_public)
    }

    pub fn trust(&self) {
        std::fs::write(self.home.join(".ssh/known_hosts"), self.known_hosts_line())
            .expect("known_hosts");
    }

    /// `user@127.0.0.1:port`.
    pub fn address(&self) -> String {
        format!("{}@127.0.0.1:{}", self.user, self.port)
    }

    /// The remote side's tmux, by its socket.
    pub fn remote_tmux(&self, args: &[&str]) -> Run {
        let out = Command::new("tmux")
            .env("TMUX_TMPDIR", &self.remote_tmux_tmpdir)
            .env_remove("TMUX")
            .args(args)
            .output()
            .expect("tmux");
        Run::from(out)
    }

    /// Stops the server: its port closes.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
        // Only the remote side's own tmux server, found through its own TMUX_TMPDIR.
        let _ = Command::new("tmux")
            .env("TMUX_TMPDIR", &self.remote_tmux_tmpdir)
            .env_remove("TMUX")
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
    }
}
