//! The openssh transport over real sshds on 127.0.0.1: `orchestra connect` opens an
//! OpenSSH master once, on "the person's terminal"; a host with `transport = "openssh"`
//! rides it for every call (up, status, brief, approve, tail, down) without logging in
//! again; a master that goes away mid-run is `not connected`, at once and without a
//! prompt; a host reached only through a jump host; a login that asks something,
//! answered once at connect; `hosts install` (this binary on the exec's stdin) over the
//! master; hostile host names and transports.
//!
//! OpenSSH reads ~/.ssh of the account (getpwuid), never $HOME, so each test names its
//! own ssh_config file through the host's `ssh_config` (passed as `-F`): nothing of this
//! machine's own ~/.ssh is read or written.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::harness::{
    attach_here_shows, remote_claude_runs_an_approved_command, remote_folder,
    trusted_sshd_world as world, wait_until, write_script, ClaudeWorld, Env, Run, Sshd,
};

/// The test's ssh_config: keys checked against the test's known_hosts (for the jump
/// host's own ssh too), only the keys named, then `extra`.
fn ssh_config(env: &Env, sshd: &Sshd, extra: &str) -> PathBuf {
    let path = env.root.join("ssh_config");
    std::fs::write(
        &path,
        format!(
            "{extra}\nHost *\n  UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n  \
             IdentitiesOnly yes\n",
            sshd.home.join(".ssh/known_hosts").display()
        ),
    )
    .expect("ssh_config");
    path
}

/// orchestra.toml with host gpu at `address` over openssh, and `sessions`.
fn write_manifest(
    env: &Env,
    address: &str,
    identity: Option<&Path>,
    config: &Path,
    agent: &str,
    sessions: &str,
) {
    let identity = identity
        .map(|i| format!("identity = '{}'\n", i.display()))
        .unwrap_or_default();
    std::fs::write(
        env.repo.join("orchestra.toml"),
        format!(
            "[orchestrator]\nagent = '{agent}'\npoll_interval = 1\n\n\
             [hosts.gpu]\naddress = '{address}'\n{identity}transport = \"openssh\"\n\
             ssh_config = '{}'\nconnect_timeout = \"2s\"\ncommand_timeout = \"3s\"\n\n{sessions}",
            config.display()
        ),
    )
    .expect("manifest");
}

/// orchestra.toml with host gpu at `sshd` over openssh (the test's ssh_config) and one
/// session running `cat` there.
fn cat_over_openssh(env: &Env, sshd: &Sshd) {
    let config = ssh_config(env, sshd, "");
    let folder = remote_folder(env, "p");
    write_manifest(
        env,
        &sshd.address(),
        Some(&sshd.user_key),
        &config,
        "cat",
        &cat_session(&folder),
    );
}

fn cat_session(folder: &Path) -> String {
    format!(
        "[sessions.pipeline]\nhost = \"gpu\"\npath = '{}'\ntmux = \"claude_pipeline\"\n",
        folder.display()
    )
}

/// How many logins `sshd` accepted: with a master, only the one of `connect`.
fn logins(sshd: &Sshd) -> usize {
    std::fs::read_to_string(sshd.dir.join("sshd.log"))
        .unwrap_or_default()
        .matches("Accepted publickey")
        .count()
}

/// `orchestra connect gpu` as a person runs it (here with no terminal: nothing asks).
fn connect(env: &Env) -> Run {
    env.orchestra(&["connect", "gpu", "--persist", "5m"])
}

fn tail_shows(env: &Env, text: &str) -> bool {
    wait_until(Duration::from_secs(10), || {
        env.orchestra(&["tail", "pipeline", "10"])
            .stdout
            .contains(text)
    })
}

#[test]
fn a_remote_claude_rides_the_master_up_brief_approve_tail_down() {
    let Some((env, sshd)) = world() else { return };
    let folder = remote_folder(&env, "remote-project");
    let Some(world) = ClaudeWorld::start(&env, &[folder.as_path()]) else {
        return;
    };
    let config = ssh_config(&env, &sshd, "");
    write_manifest(
        &env,
        &sshd.address(),
        Some(&sshd.user_key),
        &config,
        &world.claude.to_string_lossy(),
        &format!(
            "[sessions.pipeline]\nhost = \"gpu\"\npath = '{}'\ntmux = \"claude_pipeline\"\n\
             agent_args = \"--permission-mode default\"\nenv = '''{}'''\n",
            folder.display(),
            world.exports().join("\n")
        ),
    );
    // No master yet: refused at once, nothing made on the host.
    let refused = env.orchestra(&["up"]).fails_with(1);
    assert!(
        refused
            .stderr
            .contains("not connected — orchestra connect gpu"),
        "{}",
        refused.stderr
    );
    assert!(sshd.remote_tmux(&["list-sessions"]).code != 0);
    assert_eq!(logins(&sshd), 0);

    let connected = connect(&env).ok();
    assert!(
        connected.stdout.contains("gpu: connected"),
        "{}",
        connected.stdout
    );
    env.orchestra(&["connect", "gpu", "--check"]).ok();
    // The socket lives in the home's ssh folder, private.
    let ssh_dir = env.home.join("ssh");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&ssh_dir)
        .expect("ssh dir")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);

    env.orchestra(&["up"]).ok();
    assert!(sshd.has_session("claude_pipeline"));
    remote_claude_runs_an_approved_command(&env, &folder);
    let down = env.orchestra(&["down"]).ok();
    assert!(down.stdout.contains("pipeline: down"), "{}", down.stdout);
    assert!(!sshd.has_session("claude_pipeline"));
    // Every call above rode the one login `connect` made.
    assert_eq!(logins(&sshd), 1, "one login, at connect");

    let closed = env.orchestra(&["connect", "gpu", "--close"]).ok();
    assert!(closed.stdout.contains("gpu: closed"), "{}", closed.stdout);
    env.orchestra(&["connect", "gpu", "--check"]).fails_with(1);
}

#[test]
fn a_master_gone_mid_run_is_not_connected_at_once_and_nothing_waits() {
    let Some((env, sshd)) = world() else { return };
    cat_over_openssh(&env, &sshd);
    connect(&env).ok();
    env.orchestra(&["up"]).ok();
    env.orchestra(&["brief", "pipeline", "before the cut"]).ok();
    assert!(tail_shows(&env, "before the cut"));
    let status = env.orchestra(&["status"]).ok().stdout;
    assert!(status.contains("reachable"), "{status}");

    // The master dies without a word (its socket file stays behind).
    let check = Run::from(
        std::process::Command::new("ssh")
            .arg("-S")
            .arg(socket(&env))
            .args(["-O", "check", "gpu"])
            .output()
            .expect("ssh -O check"),
    );
    let pid: u32 = check
        .stderr
        .split("pid=")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no master pid: {}", check.stderr));
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(wait_until(Duration::from_secs(5), || !Path::new(&format!(
        "/proc/{pid}"
    ))
    .exists()));
    assert!(socket(&env).exists(), "the stale socket stays");

    let bounded = |args: &[&str], code: i32| {
        let started = Instant::now();
        let run = env.orchestra(args);
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{args:?} took {:?}",
            started.elapsed()
        );
        assert_eq!(run.code, code, "{args:?}: {}{}", run.stdout, run.stderr);
        run
    };
    let check = bounded(&["connect", "gpu", "--check"], 1);
    assert_eq!(
        check.stderr.trim(),
        "orchestra: not connected — orchestra connect gpu"
    );
    let tail = bounded(&["tail", "pipeline"], 1);
    assert!(
        tail.stderr
            .contains("not connected — orchestra connect gpu"),
        "{}",
        tail.stderr
    );
    let status = bounded(&["status"], 0).stdout;
    assert!(status.contains("NOT CONNECTED"), "{status}");
    assert!(
        status.contains("gpu: not connected — orchestra connect gpu"),
        "{status}"
    );
    bounded(&["refresh", "--remote"], 0);
    let line = bounded(&["status-line"], 0).stdout;
    assert!(
        line.contains("gpu not connected — orchestra connect gpu"),
        "{line}"
    );
    let watch = bounded(&["watch", "--count", "1"], 0).stdout;
    assert!(
        watch.contains("gpu: not connected — orchestra connect gpu"),
        "{watch}"
    );
    // Nothing logged in behind the master's back.
    assert_eq!(logins(&sshd), 1);

    // Connecting again replaces the stale socket; the session is still there.
    connect(&env).ok();
    assert!(tail_shows(&env, "before the cut"));
    let status = env.orchestra(&["status"]).ok().stdout;
    assert!(!status.contains("NOT CONNECTED"), "{status}");
    env.orchestra(&["down"]).ok();
}

/// The master socket of host gpu (the one file in the home's ssh folder).
fn socket(env: &Env) -> PathBuf {
    let entries: Vec<PathBuf> = std::fs::read_dir(env.home.join("ssh"))
        .expect("ssh dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries[0].clone()
}

#[test]
fn a_host_reached_only_through_a_jump_host() {
    let Some((env, inner)) = world() else { return };
    // The jump host logs the forwardings it makes (debug1), which shows the way taken.
    let Some(jump) = Sshd::start_named(&env, "jump", "LogLevel DEBUG1\n") else {
        return;
    };
    std::fs::write(
        inner.home.join(".ssh/known_hosts"),
        format!("{}{}", inner.known_hosts_line(), jump.known_hosts_line()),
    )
    .expect("known_hosts");
    let config = ssh_config(
        &env,
        &inner,
        &format!(
            "Host jump\n  HostName 127.0.0.1\n  Port {}\n  User {user}\n  IdentityFile {}\n\
             Host inner\n  HostName 127.0.0.1\n  Port {}\n  User {user}\n  IdentityFile {}\n  \
             ProxyJump jump\n",
            jump.port,
            jump.user_key.display(),
            inner.port,
            inner.user_key.display(),
            user = inner.user,
        ),
    );
    let folder = remote_folder(&env, "behind");
    // The manifest names only the alias: where it is, and how, is the ssh config's.
    write_manifest(&env, "inner", None, &config, "cat", &cat_session(&folder));
    connect(&env).ok();
    env.orchestra(&["up"]).ok();
    env.orchestra(&["brief", "pipeline", "through the jump"])
        .ok();
    assert!(tail_shows(&env, "through the jump"));
    // A multi-line briefing travels on the exec's stdin (tmux's paste buffer).
    env.orchestra(&["brief", "pipeline", "line one\nline two"])
        .ok();
    assert!(tail_shows(&env, "line two"));
    // attach (inside tmux) opens `ssh -t` over the master in a window here.
    env.start_server(&[]);
    attach_here_shows(&env, "pipeline", "through the jump");
    let jump_log = std::fs::read_to_string(jump.dir.join("sshd.log")).unwrap_or_default();
    assert!(
        jump_log.contains(&format!("target 127.0.0.1 port {}", inner.port)),
        "the jump host forwarded to the inner one:\n{jump_log}"
    );
    assert_eq!(logins(&inner), 1);
    assert_eq!(logins(&jump), 1);
    env.orchestra(&["down"]).ok();
    env.orchestra(&["connect", "gpu", "--close"]).ok();
}

/// A login that asks something, answered once at `connect`, then used by status jobs
/// that never ask.
///
/// Why a key passphrase and not a one-time code: sshd asks keyboard-interactive
/// questions only through PAM on Linux (BSD auth is OpenBSD's); with `UsePAM no` its
/// list of keyboard-interactive devices is empty (`kbdint_alloc: devices ''` in its
/// debug log) and it refuses without asking. A PAM stack of our own would mean a file
/// in /etc/pam.d, and a password login root's password: system files this suite does
/// not change. A passphrase is asked by the same machinery (SSH_ASKPASS, forced here
/// since the test has no terminal) and answered once, at connect, the same way.
#[test]
fn a_login_that_asks_is_answered_once_at_connect_and_never_by_a_status_job() {
    let Some((mut env, sshd)) = world() else {
        return;
    };
    let keygen = std::process::Command::new("ssh-keygen")
        .args(["-q", "-p", "-P", "", "-N", "correct horse", "-f"])
        .arg(&sshd.user_key)
        .status()
        .expect("ssh-keygen -p");
    assert!(keygen.success());
    let asked = env.root.join("asked.log");
    let askpass = env.root.join("askpass.sh");
    write_script(
        &askpass,
        &format!(
            "#!/bin/sh\necho \"$1\" >> '{}'\necho 'correct horse'\n",
            asked.display()
        ),
    );
    // Every orchestra run has the askpass at hand: only `connect` may use it.
    env.env
        .push(("SSH_ASKPASS".into(), askpass.display().to_string()));
    env.env.push(("SSH_ASKPASS_REQUIRE".into(), "force".into()));
    let asks = || {
        std::fs::read_to_string(&asked)
            .unwrap_or_default()
            .lines()
            .count()
    };
    cat_over_openssh(&env, &sshd);
    // Before connect: refused, and nothing asked.
    env.orchestra(&["up"]).fails_with(1);
    assert_eq!(asks(), 0, "up asked for the passphrase");

    connect(&env).ok();
    assert_eq!(asks(), 1, "connect asks once");
    let prompt = std::fs::read_to_string(&asked).unwrap_or_default();
    assert!(prompt.contains("passphrase"), "{prompt}");

    env.orchestra(&["up"]).ok();
    env.orchestra(&["brief", "pipeline", "asked once"]).ok();
    assert!(tail_shows(&env, "asked once"));
    for _ in 0..3 {
        env.orchestra(&["refresh", "--remote"]).ok();
        let status = env.orchestra(&["status"]).ok().stdout;
        assert!(status.contains("reachable"), "{status}");
    }
    let line = env.orchestra(&["status-line"]).ok().stdout;
    assert!(
        line.contains("gpu") && !line.contains("not connected"),
        "{line}"
    );
    assert_eq!(asks(), 1, "status jobs rode the master without asking");
    assert_eq!(logins(&sshd), 1);

    // With the master gone, status jobs say so, and still ask nothing.
    env.orchestra(&["connect", "gpu", "--close"]).ok();
    env.orchestra(&["refresh", "--remote"]).ok();
    let line = env.orchestra(&["status-line"]).ok().stdout;
    assert!(line.contains("gpu not connected"), "{line}");
    assert_eq!(asks(), 1, "a status job asked for the passphrase");
    assert_eq!(logins(&sshd), 1);
    connect(&env).ok();
    assert_eq!(asks(), 2, "connect asks again");
    env.orchestra(&["down"]).ok();
    env.orchestra(&["connect", "gpu", "--close"]).ok();
}

#[test]
fn hostile_hosts_and_bad_transports_are_refused_and_nothing_is_made() {
    let Some((env, sshd)) = world() else { return };
    let marker = env.root.join("pwned");
    let hostile = [
        format!("-oProxyCommand=touch {}", marker.display()),
        format!("me@-oProxyCommand=touch {}", marker.display()),
        format!("gpu;touch {}", marker.display()),
        format!("$(touch {})", marker.display()),
        "me@host:99999".to_string(),
    ];
    for host in &hostile {
        let run = env
            .orchestra(&["connect", "--", host.as_str()])
            .fails_with(2);
        assert!(run.stderr.contains("user@host"), "{host}: {}", run.stderr);
    }
    // A leading dash without `--` is an unknown option to the parser: refused too.
    env.orchestra(&["connect", "-oProxyCommand=x"])
        .fails_with(2);
    assert!(!marker.exists());
    assert!(!env.home.join("ssh").exists(), "no socket folder was made");

    cat_over_openssh(&env, &sshd);
    let manifest = env.repo.join("orchestra.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("transport = \"openssh\"", "transport = \"telnet\""),
    )
    .unwrap();
    for args in [&["up"][..], &["connect", "gpu"], &["status"]] {
        let run = env.orchestra(args).fails_with(2);
        assert!(
            run.stderr.contains("orchestra.toml:8:13") && run.stderr.contains("telnet"),
            "{args:?}: {}",
            run.stderr
        );
    }
    std::fs::write(
        &manifest,
        text.replace("transport = \"openssh\"\n", "transport = \"ssh2\"\n"),
    )
    .unwrap();
    let run = env.orchestra(&["up"]).fails_with(2);
    assert!(
        run.stderr.contains("orchestra.toml:9:1") && run.stderr.contains("ssh_config"),
        "{}",
        run.stderr
    );
    std::fs::write(&manifest, &text).unwrap();
    env.orchestra(&["connect", "gpu", "--persist", "forever"])
        .fails_with(2);
    assert!(!env.home.join("ssh").exists(), "no socket folder was made");
    assert_eq!(logins(&sshd), 0);
    assert!(sshd.remote_tmux(&["list-sessions"]).code != 0);
}

/// `hosts install` sends this binary on the exec's stdin: over the master as over libssh2.
#[test]
fn hosts_install_copies_this_binary_over_the_master() {
    let Some((env, sshd)) = world() else { return };
    cat_over_openssh(&env, &sshd);
    connect(&env).ok();
    let installed = env.orchestra(&["hosts", "install", "gpu"]).ok();
    assert!(
        installed.stdout.contains("gpu: installed orchestra"),
        "{}",
        installed.stdout
    );
    let copy = sshd.remote_home().join(".local/bin/orchestra");
    assert_eq!(
        std::fs::read(&copy).expect("copied"),
        std::fs::read(crate::harness::bin()).expect("this binary"),
        "the copy is this binary, byte for byte"
    );
    assert_eq!(logins(&sshd), 1, "the copy rode the master");
    env.orchestra(&["connect", "gpu", "--close"]).ok();
}
