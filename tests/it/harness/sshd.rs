//! A real OpenSSH server for the remote side of a test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{free_port, require, wait_until, which, Env, Run};

/// A real OpenSSH server on 127.0.0.1 (a free port), with a throwaway host key and user
/// key; the "remote" side runs as this same user with a TMUX_TMPDIR of the test's own (so
/// its tmux server is the test's too). `home` is the HOME orchestra runs with: its
/// `.ssh/known_hosts` starts empty.
pub(crate) struct Sshd {
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

pub(crate) fn sshd_bin() -> Option<PathBuf> {
    let p = PathBuf::from("/usr/sbin/sshd");
    p.is_file().then_some(p)
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
    pub(crate) fn start(env: &Env) -> Option<Sshd> {
        Sshd::start_named(env, "sshd", "")
    }

    /// A server of its own folders (`NAME`, `NAME-home`, …; "sshd" is the one of
    /// [`Sshd::start`]), with `extra` sshd_config lines put first (where they win).
    pub(crate) fn start_named(env: &Env, name: &str, extra: &str) -> Option<Sshd> {
        let sshd = sshd_bin();
        if !require("sshd (openssh-server)", sshd.is_some())
            || !require("ssh-keygen", which("ssh-keygen").is_some())
        {
            return None;
        }
        let named = |default: &str, suffix: &str| match name {
            "sshd" => env.root.join(default),
            _ => env.root.join(format!("{name}{suffix}")),
        };
        let dir = env.root.join(name);
        let home = named("ssh-home", "-home");
        let remote_tmux_tmpdir = named("remote-tmux", "-tmux");
        // The remote side's HOME: its login shell reads no rc file of this machine's user
        // (whose rc files may be slow, or wait on a lock).
        let remote_home = named("remote-home", "-remote-home");
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
                "{extra}Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nAuthorizedKeysFile {ak}\n\
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
    pub(crate) fn known_hosts_line(&self) -> String {
        format!("[127.0.0.1]:{} {}\n", self.port, self.host_public)
    }

    pub(crate) fn trust(&self) {
        std::fs::write(self.home.join(".ssh/known_hosts"), self.known_hosts_line())
            .expect("known_hosts");
    }

    /// `user@127.0.0.1:port`.
    pub(crate) fn address(&self) -> String {
        format!("{}@127.0.0.1:{}", self.user, self.port)
    }

    /// The remote side's tmux, by its socket.
    pub(crate) fn remote_tmux(&self, args: &[&str]) -> Run {
        let out = Command::new("tmux")
            .env("TMUX_TMPDIR", &self.remote_tmux_tmpdir)
            .env_remove("TMUX")
            .args(args)
            .output()
            .expect("tmux");
        Run::from(out)
    }

    /// Whether the remote side's tmux has a session named exactly `name`.
    pub(crate) fn has_session(&self, name: &str) -> bool {
        self.remote_tmux(&["has-session", "-t", &format!("={name}")])
            .code
            == 0
    }

    /// The remote side's HOME (where `hosts install` puts ~/.local/bin/orchestra).
    pub(crate) fn remote_home(&self) -> PathBuf {
        self.dir
            .parent()
            .expect("the sshd folder is in the test's root")
            .join("remote-home")
    }

    /// Puts `dir` first on the PATH of every later login (its key's `environment=`), so a
    /// stand-in program there is what the remote side runs.
    pub(crate) fn prepend_remote_path(&self, dir: &Path) {
        self.set_remote_path(&format!("{}:/usr/local/bin:/usr/bin:/bin", dir.display()));
    }

    /// Makes `path` the whole PATH of every later login (its key's `environment=`): a
    /// host without some program. Called once per test, as [`Sshd::prepend_remote_path`].
    pub(crate) fn set_remote_path(&self, path: &str) {
        let keys = self.dir.join("authorized_keys");
        let line = std::fs::read_to_string(&keys).expect("authorized_keys");
        std::fs::write(&keys, format!("environment=\"PATH={path}\",{line}"))
            .expect("authorized_keys");
    }

    /// Stops the server: its port closes.
    pub(crate) fn stop(&mut self) {
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

/// A test's world with an sshd: orchestra's HOME holds the test's ~/.ssh (the known_hosts
/// orchestra and OpenSSH check keys against, empty), and no ssh agent is in reach.
/// `None` (a reported skip) without sshd, except on CI where that fails.
pub(crate) fn sshd_world() -> Option<(Env, Sshd)> {
    let mut env = Env::new();
    let sshd = Sshd::start(&env)?;
    env.env
        .push(("HOME".into(), sshd.home.to_string_lossy().into_owned()));
    env.env.push(("SSH_AUTH_SOCK".into(), String::new()));
    Some((env, sshd))
}

/// [`sshd_world`] with the server's host key trusted.
pub(crate) fn trusted_sshd_world() -> Option<(Env, Sshd)> {
    let (env, sshd) = sshd_world()?;
    sshd.trust();
    Some((env, sshd))
}

/// A folder `name` in the test's root, made: where a remote session works.
pub(crate) fn remote_folder(env: &Env, name: &str) -> PathBuf {
    let p = env.root.join(name);
    std::fs::create_dir_all(&p).expect("remote folder");
    p
}

/// The state `orchestra status --json` gives `label` (a live remote refresh each time).
pub(crate) fn remote_state(env: &Env, label: &str) -> String {
    let out = env.orchestra(&["status", "--json"]).ok().stdout;
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).expect("status --json");
    rows.iter()
        .find(|r| r["label"] == label)
        .map(|r| r["state"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

/// A remote claude session `pipeline` working in `folder`, through orchestra alone: its
/// prompt drawn, a command briefed is waiting for approval and not run, approved it runs,
/// and the session is idle again.
pub(crate) fn remote_claude_runs_an_approved_command(env: &Env, folder: &Path) {
    let tail = |lines: &str| env.orchestra(&["tail", "pipeline", lines]).stdout;
    let ready = || {
        tail("40")
            .lines()
            .any(|l| l.trim_end() == "❯" || l.starts_with("❯ "))
    };
    assert!(
        wait_until(Duration::from_secs(30), ready),
        "claude never drew its prompt:\n{}",
        tail("40")
    );
    env.orchestra(&["brief", "pipeline", "[[bash: touch made-remotely.txt]]"])
        .ok();
    assert!(
        wait_until(Duration::from_secs(30), || remote_state(env, "pipeline")
            == "waiting"),
        "never waiting:\n{}",
        tail("30")
    );
    assert!(!folder.join("made-remotely.txt").exists());
    let approved = env.orchestra(&["approve", "pipeline"]).ok();
    assert!(approved.stdout.contains("Yes"), "{}", approved.stdout);
    assert!(
        wait_until(Duration::from_secs(20), || folder
            .join("made-remotely.txt")
            .exists()),
        "{}",
        tail("30")
    );
    assert!(
        wait_until(Duration::from_secs(30), || remote_state(env, "pipeline")
            == "idle"),
        "{}",
        tail("30")
    );
}

/// `orchestra attach <label>` as run inside tmux (this test's server, started) opens the
/// remote session in a window here; that window comes to show `text`.
pub(crate) fn attach_here_shows(env: &Env, label: &str, text: &str) {
    let mut cmd = env.orchestra_command(&env.repo, &["attach", label]);
    cmd.env("TMUX", format!("{},1,0", env.socket.display()));
    let run = Run::from(cmd.output().expect("attach")).ok();
    let window = run
        .stdout
        .split_whitespace()
        .last()
        .expect("the window")
        .to_string();
    assert!(
        wait_until(Duration::from_secs(15), || env
            .tmux(&["capture-pane", "-p", "-t", &window])
            .contains(text)),
        "{}",
        env.tmux(&["capture-pane", "-p", "-t", &window])
    );
}
