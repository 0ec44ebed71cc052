//! A test's world: a temp folder holding a real git repo, `ORCHESTRA_HOME` and a tmux
//! server on a socket of its own; orchestra run in it; and the end of everything the test
//! started there.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{bin, wait_until, which, Run};

/// One isolated world: a temp folder holding a git repo, `ORCHESTRA_HOME` and a tmux
/// socket of its own.
pub(crate) struct Env {
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
    pub(crate) fn new() -> Env {
        assert!(
            which("tmux").is_some(),
            "tmux is required (tests/run.sh installs it)"
        );
        // A release of the tmux matrix (tests/run.sh) runs only if it is the tmux the tests
        // and orchestra find on PATH; another tmux would pass for it silently.
        if let Some(chosen) = std::env::var_os("ORCHESTRA_TEST_TMUX") {
            assert_eq!(
                which("tmux"),
                Some(PathBuf::from(&chosen)),
                "ORCHESTRA_TEST_TMUX={} is not the first tmux on PATH",
                PathBuf::from(&chosen).display()
            );
        }
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
    pub(crate) fn orchestra(&self, args: &[&str]) -> Run {
        self.orchestra_in(&self.repo, args)
    }

    pub(crate) fn orchestra_in(&self, cwd: &Path, args: &[&str]) -> Run {
        let mut cmd = self.orchestra_command(cwd, args);
        Run::from(cmd.output().expect("run orchestra"))
    }

    pub(crate) fn orchestra_command(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args);
        self.orchestra_env(&mut cmd, cwd);
        cmd
    }

    /// [`Env::orchestra`] with `input` on its stdin.
    pub(crate) fn orchestra_stdin(&self, args: &[&str], input: &[u8]) -> Run {
        let mut child = self
            .orchestra_command(&self.repo, args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run orchestra");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input)
            .expect("write orchestra's stdin");
        Run::from(child.wait_with_output().expect("run orchestra"))
    }

    /// [`Env::orchestra`] under `umask` (set by `sh`, as a login shell would).
    pub(crate) fn orchestra_umask(&self, umask: &str, args: &[&str]) -> Run {
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
            // As for the server: agents never see the suite's CI=true.
            .env_remove("CI")
            .stdin(Stdio::null());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
    }

    /// orchestra runs with no notification bus in reach (none named, none at the usual
    /// place): notifications go to `@orchestra-notify-cmd`, if any.
    pub(crate) fn without_bus(&mut self) {
        self.env
            .push(("DBUS_SESSION_BUS_ADDRESS".into(), String::new()));
        let runtime = self.root.join("no-runtime");
        self.env.push((
            "XDG_RUNTIME_DIR".into(),
            runtime.to_string_lossy().into_owned(),
        ));
    }

    /// Makes `@orchestra-notify-cmd` (on the running server) a script that appends a line
    /// `title|body` to a file for each notification; returns that file.
    pub(crate) fn notes_to_file(&self) -> PathBuf {
        let script = self.root.join("notify.sh");
        let log = self.root.join("notify.log");
        write_script(
            &script,
            &format!(
                "#!/bin/sh\nprintf '%s|%s\\n' \"$1\" \"$2\" >> '{}'\n",
                log.display()
            ),
        );
        self.tmux(&[
            "set-option",
            "-g",
            "@orchestra-notify-cmd",
            &script.to_string_lossy(),
        ]);
        log
    }

    /// Starts this test's tmux server with a session `harness` (so it outlives the
    /// sessions orchestra makes), its global environment taken from `env`.
    pub(crate) fn start_server(&self, env: &[(String, String)]) {
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
                // A named window keeps its name: an automatic one reads "tmux" until its
                // shell has exec'd, so a before/after look at the windows could differ.
                "-n",
                "harness",
                "-x",
                "200",
                "-y",
                "50",
            ])
            .env("TMUX_TMPDIR", &self.tmux_tmpdir)
            .env_remove("TMUX")
            // The server's environment is what every agent starts with: a person's
            // terminal has no CI=true (gemini would run headless under it).
            .env_remove("CI");
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
    pub(crate) fn stop_server(&self) {
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
    pub(crate) fn run_in_window(&self, command: &str) -> String {
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
    pub(crate) fn tmux(&self, args: &[&str]) -> String {
        let run = self.tmux_try(args);
        assert_eq!(run.code, 0, "tmux {args:?}: {}", run.stderr);
        run.stdout
    }

    pub(crate) fn tmux_try(&self, args: &[&str]) -> Run {
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
    pub(crate) fn windows(&self) -> Vec<String> {
        let run = self.tmux_try(&[
            "list-windows",
            "-a",
            "-F",
            "#{window_id} #{window_name} #{@orchestra_id}",
        ]);
        run.stdout.lines().map(str::to_string).collect()
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        git_in(&self.repo, args)
    }

    pub(crate) fn branches(&self) -> Vec<String> {
        self.git(&["branch", "--format=%(refname:short)"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    pub(crate) fn worktree_path(&self, label: &str) -> PathBuf {
        self.root.join("repo.worktrees").join(label)
    }

    pub(crate) fn list_json(&self) -> Vec<serde_json::Value> {
        let run = self.orchestra(&["list", "--json"]).ok();
        serde_json::from_str(&run.stdout).expect("list --json is JSON")
    }

    pub(crate) fn session(&self, label: &str) -> serde_json::Value {
        self.list_json()
            .into_iter()
            .find(|s| s["label"] == label)
            .unwrap_or_else(|| panic!("no session {label} in list --json"))
    }

    /// Writes the repo's orchestra.toml: one local session `name` running `agent` in
    /// `folder`, its environment set up by the shell `snippet`.
    pub(crate) fn write_agent_manifest(
        &self,
        agent: &str,
        name: &str,
        folder: &Path,
        snippet: &str,
    ) {
        let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
        std::fs::create_dir_all(folder).expect("the session's folder");
        std::fs::write(
            self.repo.join("orchestra.toml"),
            format!(
                "[orchestrator]\nagent = {}\n\n[sessions.{name}]\npath = {}\nenv = {}\n",
                quote(agent),
                quote(&folder.to_string_lossy()),
                quote(snippet)
            ),
        )
        .expect("write orchestra.toml");
    }

    /// `/proc/PID/<file>` (cmdline, environ) of the process in `label`'s pane, its NULs
    /// as newlines.
    pub(crate) fn pane_process(&self, label: &str, file: &str) -> String {
        let pane = self.session(label)["pane"]
            .as_str()
            .expect("a pane")
            .to_string();
        self.pane_proc(&pane, file)
    }

    /// `/proc/PID/<file>` of the process in pane `pane` (`%N`), once it has exec'd its
    /// program, its NULs as newlines.
    pub(crate) fn pane_proc(&self, pane: &str, file: &str) -> String {
        let pid = self.tmux(&["display-message", "-p", "-t", pane, "#{pane_pid}"]);
        let proc_dir = format!("/proc/{}", pid.trim());
        // Until the pane's process has exec'd its program, /proc shows the tmux server it
        // was forked from (its cmdline, its environment).
        let forked_tmux = || {
            std::fs::read(format!("{proc_dir}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).next() == Some(b"tmux".as_slice()))
        };
        wait_until(Duration::from_secs(20), || !forked_tmux());
        // In the middle of an exec (a wrapper shell exec'ing the agent) the kernel shows an
        // empty cmdline and environ for a moment: read again until it has words.
        let read = || std::fs::read(format!("{proc_dir}/{file}")).unwrap_or_default();
        let mut bytes = read();
        wait_until(Duration::from_secs(5), || {
            bytes = read();
            !bytes.is_empty()
        });
        String::from_utf8_lossy(&bytes).replace('\0', "\n")
    }

    /// `/proc/PID/<file>` of the process in `label`'s pane once `ready` holds for it (a
    /// wrapper shell exec's the agent after its snippet; the first read may be the shell's),
    /// or the last read after 20 s.
    pub(crate) fn pane_process_once(
        &self,
        label: &str,
        file: &str,
        ready: impl Fn(&str) -> bool,
    ) -> String {
        let mut last = String::new();
        wait_until(Duration::from_secs(20), || {
            last = self.pane_process(label, file);
            ready(&last)
        });
        last
    }

    /// Kills the process in `pane` with SIGKILL, the way a crash ends an agent, and returns
    /// once the tmux server has reaped it.
    ///
    /// tmux 3.3a, on a loaded machine, can miss the SIGCHLD of a pane's process: the pane
    /// reads dead (its terminal closed) but the process stays a zombie, and pane-died fires
    /// only when another child of the server exits and tmux reaps them all (seen here about
    /// 1 kill in 4 with the cores busy). A person's tmux has such children every few seconds
    /// (status-line jobs); a test server with no client has none, so this one makes one.
    pub(crate) fn kill_pane_process(&self, pane: &str) {
        let pid = self.tmux(&["display-message", "-p", "-t", pane, "#{pane_pid}"]);
        let pid = pid.trim().to_string();
        let status = Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -KILL {pid} failed");
        let stat = format!("/proc/{pid}/stat");
        // The process's state is the field after its parenthesized name.
        let state = || {
            std::fs::read_to_string(&stat)
                .ok()
                .and_then(|s| Some(s.rsplit_once(')')?.1.split_whitespace().next()?.to_string()))
        };
        let reaped = wait_until(Duration::from_secs(10), || match state().as_deref() {
            None => true,
            Some("Z") => {
                self.tmux(&["run-shell", "true"]);
                state().is_none()
            }
            Some(_) => false,
        });
        assert!(
            reaped,
            "pane {pane}'s process {pid} was never reaped by tmux"
        );
    }

    /// A generic agent that stays put: a shell reading commands.
    pub(crate) fn dispatch_shell(&self, label: &str) -> Run {
        self.orchestra(&shell_dispatch(label))
    }
}

/// The arguments of [`Env::dispatch_shell`].
pub(crate) fn shell_dispatch(label: &str) -> [&str; 6] {
    [
        "dispatch",
        label,
        "--agent",
        "bash --norc --noprofile",
        "--kind",
        "generic",
    ]
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
pub(crate) fn end_processes_of(root: &Path, grace: Duration) {
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

pub(crate) fn git_in(dir: &Path, args: &[&str]) -> String {
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

/// Writes an executable script `path` with `text`.
pub(crate) fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}

/// Writes `file` in `dir` (a worktree) with `text` and commits it there as `message`.
pub(crate) fn commit_file(dir: &Path, file: &str, text: &str, message: &str) {
    std::fs::write(dir.join(file), text).expect("write the file to commit");
    git_in(dir, &["add", file]);
    git_in(dir, &["commit", "-q", "-m", message]);
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
