//! Sessions on a remote host over a real `sshd` on 127.0.0.1 (throwaway keys, the remote
//! side's own TMUX_TMPDIR): up, status, brief, approve, tail, down; host keys that are
//! unknown or changed are refused; a closed port never slows the status line.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::harness::{
    attach_here_shows, remote_claude_runs_an_approved_command, remote_folder, sshd_world,
    trusted_sshd_world, wait_until, write_script, ClaudeWorld, Env, Sshd,
};

pub(crate) fn write_manifest(env: &Env, sshd: &Sshd, agent: &str, session: &str) {
    let text = format!(
        "[orchestrator]\nagent = {agent}\npoll_interval = 1\n\n\
         [hosts.gpu]\naddress = {}\nidentity = '{}'\n\n{session}",
        toml_string(&sshd.address()),
        sshd.user_key.display(),
        agent = toml_string(agent),
    );
    std::fs::write(env.repo.join("orchestra.toml"), text).expect("manifest");
}

/// One session `pipeline` on host gpu running `cat` in `folder`.
fn cat_session(env: &Env, sshd: &Sshd, folder: &std::path::Path) {
    write_manifest(
        env,
        sshd,
        "cat",
        &format!(
            "[sessions.pipeline]\nhost = \"gpu\"\npath = '{}'\n",
            folder.display()
        ),
    );
}

fn toml_string(s: &str) -> String {
    format!("'{s}'")
}

#[test]
fn a_remote_session_comes_up_is_seen_briefed_tailed_and_goes_down() {
    let Some((env, sshd)) = trusted_sshd_world() else {
        return;
    };
    let folder = remote_folder(&env, "remote-project");
    write_manifest(
        &env,
        &sshd,
        "cat",
        &format!(
            "[sessions.pipeline]\nhost = \"gpu\"\npath = '{}'\ntmux = \"claude_pipeline\"\n",
            folder.display()
        ),
    );
    let up = env.orchestra(&["up"]).ok();
    assert!(up.stdout.contains("pipeline: up on gpu"), "{}", up.stdout);
    assert!(up.stdout.contains("(created)"), "{}", up.stdout);
    assert!(up.stderr.is_empty(), "{}", up.stderr);
    let owner = sshd
        .remote_tmux(&[
            "show-options",
            "-v",
            "-t",
            "=claude_pipeline:",
            "@orchestra_owner",
        ])
        .ok()
        .stdout;
    assert_eq!(
        owner.trim(),
        env.session("pipeline")["id"].as_str().unwrap()
    );
    // The session is on the remote side's server, not on this test's local one.
    assert!(sshd.has_session("claude_pipeline"));
    assert!(
        env.tmux_try(&["has-session", "-t", "=claude_pipeline"])
            .code
            != 0
    );

    let status = env.orchestra(&["status"]).ok();
    let line = status
        .stdout
        .lines()
        .find(|l| l.starts_with("pipeline"))
        .unwrap_or_else(|| panic!("{}", status.stdout));
    assert!(line.contains("gpu") && line.contains("reachable"), "{line}");
    let list = env.list_json();
    assert_eq!(list[0]["host"], "gpu");

    env.orchestra(&["brief", "pipeline", "hello from afar"])
        .ok();
    assert!(
        wait_until(Duration::from_secs(10), || env
            .orchestra(&["tail", "pipeline", "5"])
            .stdout
            .contains("hello from afar")),
        "{}",
        env.orchestra(&["tail", "pipeline"]).stdout
    );
    // A multi-line briefing goes as one paste through the SSH channel's stdin.
    env.orchestra(&["brief", "pipeline", "line one\nline two"])
        .ok();
    assert!(wait_until(Duration::from_secs(10), || {
        let t = env.orchestra(&["tail", "pipeline", "10"]).stdout;
        t.contains("line one") && t.contains("line two")
    }));
    let collected = env.root.join("collected");
    env.orchestra(&["collect", collected.to_str().unwrap()])
        .ok();
    let capture = std::fs::read_to_string(collected.join("pipeline.txt")).expect("collected");
    assert!(capture.contains("hello from afar"), "{capture}");

    let down = env.orchestra(&["down"]).ok();
    assert!(down.stdout.contains("pipeline: down"), "{}", down.stdout);
    assert!(!sshd.has_session("claude_pipeline"));
    assert!(env.list_json().is_empty());
    assert!(folder.exists(), "down never deletes the folder");
}

/// A remote session's worktree is on its host: `check`, `compare` and `fork` refuse it by
/// its label in one line, exit 2, and make nothing here or there (no branch, worktree,
/// window, row or recorded check, no remote window).
#[test]
fn check_compare_and_fork_refuse_a_remote_session_in_one_line_and_make_nothing() {
    let Some((env, sshd)) = trusted_sshd_world() else {
        return;
    };
    let folder = remote_folder(&env, "remote-project");
    // A check configured and allowed: the refusal is for the host, not a missing check.
    write_manifest(
        &env,
        &sshd,
        "cat",
        &format!(
            "[sessions.pipeline]\nhost = \"gpu\"\npath = '{}'\n\n[worktree]\ncheck = \"true\"\n",
            folder.display()
        ),
    );
    env.orchestra(&["allow"]).ok();
    env.orchestra(&["up"]).ok();
    let remote_windows = || {
        sshd.remote_tmux(&["list-windows", "-a", "-F", "#{session_name}:#{window_name}"])
            .ok()
            .stdout
    };
    let seen = || {
        (
            env.branches(),
            env.windows(),
            env.list_json().len(),
            remote_windows(),
            std::fs::read_dir(&folder).unwrap().count(),
        )
    };
    let before = seen();
    assert_eq!(before.2, 1, "the remote session is recorded");
    for (args, line) in [
        (
            &["check", "pipeline"][..],
            "pipeline runs on host gpu: the check runs in a local session's worktree only",
        ),
        (
            &["check", "pipeline", "--json"][..],
            "pipeline runs on host gpu: the check runs in a local session's worktree only",
        ),
        (
            &["compare", "pipeline"][..],
            "pipeline runs on host gpu: compare reads a local session's worktree only",
        ),
        (
            &["compare", "pipeline", "--json"][..],
            "pipeline runs on host gpu: compare reads a local session's worktree only",
        ),
        (
            &["fork", "pipeline", "nearby"][..],
            "pipeline runs on host gpu: a fork is made from a local session's worktree only",
        ),
    ] {
        env.cli(args)
            .status(2)
            .stderr_line(format!("orchestra: {line}"))
            .run();
        assert_eq!(seen(), before, "{args:?} changed something");
    }
    assert!(env.session("pipeline")["check"].is_null());
    assert!(!env.worktree_path("nearby").exists());
    env.orchestra(&["down"]).ok();
}

#[test]
fn down_leaves_a_tmux_session_it_did_not_create() {
    let Some((env, sshd)) = trusted_sshd_world() else {
        return;
    };
    let folder = remote_folder(&env, "shared");
    sshd.remote_tmux(&["new-session", "-d", "-s", "mine", "sleep 600"])
        .ok();
    write_manifest(
        &env,
        &sshd,
        "cat",
        &format!(
            "[sessions.worker]\nhost = \"gpu\"\npath = '{}'\ntmux = \"mine\"\n",
            folder.display()
        ),
    );
    let up = env.orchestra(&["up", "worker"]).ok();
    assert!(!up.stdout.contains("(created)"), "{}", up.stdout);
    env.orchestra(&["down", "worker"]).ok();
    let windows = sshd
        .remote_tmux(&["list-windows", "-t", "=mine", "-F", "#{window_name}"])
        .ok()
        .stdout;
    assert_eq!(
        windows.lines().count(),
        1,
        "only our window closed: {windows}"
    );
    assert!(!windows.contains("worker"), "{windows}");
}

#[test]
fn an_unknown_host_key_is_refused_until_trusted_by_fingerprint() {
    let Some((env, sshd)) = sshd_world() else {
        return;
    };
    let folder = remote_folder(&env, "p");
    cat_session(&env, &sshd, &folder);
    let refused = env.orchestra(&["up"]).fails_with(1);
    assert!(refused.stderr.contains("is not in"), "{}", refused.stderr);
    let fingerprint = refused
        .stderr
        .split_whitespace()
        .find(|w| w.starts_with("SHA256:"))
        .expect("the fingerprint is shown")
        .trim_end_matches('.')
        .to_string();
    assert!(
        refused.stderr.contains(&format!(
            "orchestra hosts trust gpu --fingerprint {fingerprint}"
        )),
        "{}",
        refused.stderr
    );
    // Nothing was made on the host, nothing recorded.
    assert!(sshd.remote_tmux(&["list-sessions"]).code != 0);
    assert!(env.list_json().is_empty());
    let known = sshd.home.join(".ssh/known_hosts");
    assert_eq!(std::fs::read_to_string(&known).unwrap(), "");

    // A wrong fingerprint trusts nothing.
    env.orchestra(&["hosts", "trust", "gpu", "--fingerprint", "SHA256:nope"])
        .fails_with(1);
    assert_eq!(std::fs::read_to_string(&known).unwrap(), "");
    env.orchestra(&["hosts", "trust", "gpu", "--fingerprint", &fingerprint])
        .ok();
    assert_eq!(
        std::fs::read_to_string(&known).unwrap(),
        sshd.known_hosts_line()
    );
    let check = env.orchestra(&["hosts", "check"]).ok();
    assert!(check.stdout.contains("gpu: ok (tmux"), "{}", check.stdout);
    env.orchestra(&["up"]).ok();
    env.orchestra(&["down"]).ok();
}

#[test]
fn a_changed_host_key_is_refused_loudly_and_never_replaced() {
    let Some((env, sshd)) = sshd_world() else {
        return;
    };
    let other = sshd.dir.join("otherkey");
    let out = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&other)
        .output()
        .unwrap();
    assert!(out.status.success());
    let other_public = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let stale = format!(
        "[127.0.0.1]:{} {}\n",
        sshd.port,
        other_public
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let known = sshd.home.join(".ssh/known_hosts");
    std::fs::write(&known, &stale).unwrap();
    let folder = remote_folder(&env, "p");
    cat_session(&env, &sshd, &folder);
    let refused = env.orchestra(&["up"]).fails_with(1);
    assert!(
        refused.stderr.contains("HOST KEY CHANGED"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("line 1"), "{}", refused.stderr);
    let trust = env.orchestra(&["hosts", "trust", "gpu"]).fails_with(1);
    assert!(
        trust.stderr.contains("HOST KEY CHANGED"),
        "{}",
        trust.stderr
    );
    let check = env.orchestra(&["hosts", "check", "gpu"]).fails_with(1);
    assert!(
        check.stdout.contains("HOST KEY CHANGED"),
        "{}",
        check.stdout
    );
    assert_eq!(std::fs::read_to_string(&known).unwrap(), stale);
    assert!(sshd.remote_tmux(&["list-sessions"]).code != 0);
    assert!(env.list_json().is_empty());
}

#[test]
fn a_closed_port_never_slows_the_status_line() {
    let Some((env, mut sshd)) = trusted_sshd_world() else {
        return;
    };
    let folder = remote_folder(&env, "p");
    cat_session(&env, &sshd, &folder);
    env.orchestra(&["up"]).ok();
    let line = env.orchestra(&["status-line"]).ok().stdout;
    assert!(line.contains("gpu"), "{line}");
    sshd.stop();
    let mut slowest = Duration::ZERO;
    let mut seen = String::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(15) {
        let t = Instant::now();
        seen = env.orchestra(&["status-line"]).ok().stdout;
        slowest = slowest.max(t.elapsed());
        if seen.contains("gpu unreachable") {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(seen.contains("gpu unreachable"), "{seen}");
    // A status line that waited on the host would take its connect timeout (3 s, the
    // default); half of it is far above a loaded machine's noise. How fast the status line
    // is, is bench/remote.sh's to measure.
    assert!(
        slowest < remote_connect_timeout() / 2,
        "a status line took {slowest:?}"
    );
    // What is shown gets older, and says so.
    assert!(
        wait_until(Duration::from_secs(10), || env
            .orchestra(&["status-line"])
            .stdout
            .contains("ago)")),
        "{}",
        env.orchestra(&["status-line"]).stdout
    );
    let status = env.orchestra(&["status"]).ok().stdout;
    assert!(status.contains("UNREACHABLE"), "{status}");
}

#[test]
fn a_broken_manifest_starts_nothing() {
    let env = Env::new();
    std::fs::write(
        env.repo.join("orchestra.toml"),
        "[sessions.a]\npath = \"/tmp\"\nhots = \"gpu\"\n",
    )
    .unwrap();
    let run = env.orchestra(&["up"]).fails_with(2);
    assert!(
        run.stderr
            .contains("orchestra.toml:3:1: unknown field `hots`"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    let run = env.orchestra(&["up", "nope"]).fails_with(2);
    assert!(run.stderr.contains("orchestra.toml"), "{}", run.stderr);
    std::fs::write(
        env.repo.join("orchestra.toml"),
        "[sessions.a]\npath = \"/tmp\"\n",
    )
    .unwrap();
    let run = env.orchestra(&["up", "ghost"]).fails_with(2);
    assert!(run.stderr.contains("not a session"), "{}", run.stderr);
    assert!(env.list_json().is_empty());
    let run = env
        .orchestra(&["up", "--config", "/nowhere.toml"])
        .fails_with(2);
    assert!(run.stderr.contains("no manifest"), "{}", run.stderr);
}

/// Session `pipeline` on host gpu running the claude of `world` in `folder` (`more`: further
/// TOML lines), asking before it runs a tool. What claude needs to reach the fake API
/// travels in the manifest's env snippet.
pub(crate) fn claude_session(world: &ClaudeWorld, folder: &std::path::Path, more: &str) -> String {
    format!(
        "[sessions.pipeline]\nhost = \"gpu\"\npath = '{}'\n{more}\
         agent_args = \"--permission-mode default\"\nenv = '''{}'''\n",
        folder.display(),
        world.exports().join("\n")
    )
}

#[test]
fn a_remote_claude_is_briefed_approved_tailed_and_stopped() {
    let Some((env, sshd)) = sshd_world() else {
        return;
    };
    let folder = remote_folder(&env, "remote-project");
    let Some(world) = ClaudeWorld::start(&env, &[folder.as_path()]) else {
        return;
    };
    sshd.trust();
    write_manifest(
        &env,
        &sshd,
        &world.claude.to_string_lossy(),
        &claude_session(&world, &folder, "tmux = \"claude_pipeline\"\n"),
    );
    env.orchestra(&["up"]).ok();
    remote_claude_runs_an_approved_command(&env, &folder);
    let health = env.orchestra(&["health"]).ok().stdout;
    assert!(
        health.contains("pipeline") && health.contains("gpu"),
        "{health}"
    );
    let down = env.orchestra(&["down"]).ok();
    assert!(
        down.stdout.contains("pipeline: down") && !down.stdout.contains("did not exit"),
        "the agent left by its own /exit: {}",
        down.stdout
    );
    assert!(!sshd.has_session("claude_pipeline"));
}

#[test]
fn attach_inside_tmux_opens_the_remote_session_in_a_window_here() {
    let Some((env, sshd)) = trusted_sshd_world() else {
        return;
    };
    env.start_server(&[]);
    let folder = remote_folder(&env, "p");
    cat_session(&env, &sshd, &folder);
    env.orchestra(&["up"]).ok();
    env.orchestra(&["brief", "pipeline", "seen-through-ssh"])
        .ok();
    attach_here_shows(&env, "pipeline", "seen-through-ssh");
}

#[test]
fn logins_try_ssh_config_then_the_agent_then_the_default_keys() {
    let Some((mut env, sshd)) = trusted_sshd_world() else {
        return;
    };
    let folder = remote_folder(&env, "p");
    let session = format!(
        "[sessions.pipeline]\nhost = \"gpu\"\npath = '{}'\n",
        folder.display()
    );
    let manifest = |address: &str| {
        std::fs::write(
            env.repo.join("orchestra.toml"),
            format!(
                "[orchestrator]\nagent = \"cat\"\n[hosts.gpu]\naddress = '{address}'\n\n{session}"
            ),
        )
        .unwrap();
    };
    // No identity anywhere, no agent, no default key: refused, saying what was tried.
    manifest(&sshd.address());
    let run = env.orchestra(&["hosts", "check"]).fails_with(1);
    assert!(run.stdout.contains("no key was accepted"), "{}", run.stdout);

    // ~/.ssh/config: an alias with HostName, Port, User and IdentityFile.
    std::fs::write(
        sshd.home.join(".ssh/config"),
        format!(
            "Host gpu-alias\n    HostName 127.0.0.1\n    Port {}\n    User {}\n    IdentityFile {}\n",
            sshd.port,
            sshd.user,
            sshd.user_key.display()
        ),
    )
    .unwrap();
    manifest("gpu-alias");
    env.orchestra(&["hosts", "check"]).ok();
    std::fs::remove_file(sshd.home.join(".ssh/config")).unwrap();

    // The agent: a real ssh-agent holding the key.
    let agent_sock = env.root.join("agent.sock");
    let mut agent = std::process::Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&agent_sock)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("ssh-agent");
    assert!(wait_until(Duration::from_secs(5), || agent_sock.exists()));
    let added = std::process::Command::new("ssh-add")
        .arg(&sshd.user_key)
        .env("SSH_AUTH_SOCK", &agent_sock)
        .output()
        .expect("ssh-add");
    assert!(added.status.success());
    manifest(&sshd.address());
    env.env.retain(|(k, _)| k != "SSH_AUTH_SOCK");
    env.env.push((
        "SSH_AUTH_SOCK".into(),
        agent_sock.to_string_lossy().into_owned(),
    ));
    env.orchestra(&["hosts", "check"]).ok();
    let _ = agent.kill();
    let _ = agent.wait();

    // The default key, ~/.ssh/id_ed25519 (and no agent).
    env.env.retain(|(k, _)| k != "SSH_AUTH_SOCK");
    env.env.push(("SSH_AUTH_SOCK".into(), String::new()));
    std::fs::copy(&sshd.user_key, sshd.home.join(".ssh/id_ed25519")).unwrap();
    env.orchestra(&["hosts", "check"]).ok();
}

/// A second login to the same sshd, as another "host": its own key, its own remote tmux
/// server, and `bin` first on its PATH (where a test puts a misbehaving `tmux`).
struct OtherLogin {
    key: PathBuf,
    tmux_tmpdir: PathBuf,
}

fn other_login(env: &Env, sshd: &Sshd, name: &str, bin: &std::path::Path) -> OtherLogin {
    let key = sshd.dir.join(format!("{name}-key"));
    let out = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .output()
        .expect("ssh-keygen");
    assert!(out.status.success());
    let public = std::fs::read_to_string(key.with_extension("pub")).expect("public key");
    let tmux_tmpdir = env.root.join(format!("{name}-tmux"));
    std::fs::create_dir_all(&tmux_tmpdir).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let line = format!(
        "environment=\"TMUX_TMPDIR={}\",environment=\"HOME={}\",environment=\"PATH={path}\" {}\n",
        tmux_tmpdir.display(),
        env.root.join("remote-home").display(),
        public.trim()
    );
    let authorized = sshd.dir.join("authorized_keys");
    let mut keys = std::fs::read_to_string(&authorized).expect("authorized_keys");
    keys.push_str(&line);
    std::fs::write(&authorized, keys).unwrap();
    OtherLogin { key, tmux_tmpdir }
}

impl Drop for OtherLogin {
    fn drop(&mut self) {
        // Only this login's own tmux server, by its own TMUX_TMPDIR.
        let _ = std::process::Command::new("tmux")
            .env("TMUX_TMPDIR", &self.tmux_tmpdir)
            .env_remove("TMUX")
            .arg("kill-server")
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// `status --json`'s rows by label.
fn status_rows(run: &crate::harness::Run) -> Vec<serde_json::Value> {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

#[test]
fn a_host_that_drips_or_floods_is_cut_off_by_its_deadline_and_the_others_still_answer() {
    let Some((env, sshd)) = trusted_sshd_world() else {
        return;
    };
    // The misbehaving host's `tmux`: the real one until a mode is written to its switch
    // (so `up` works), then output a byte at a time for 30 s, or 100 MB at once.
    let bin = env.root.join("slow-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let switch = env.root.join("slow-mode");
    let real_tmux = crate::harness::which("tmux").expect("tmux");
    let script = bin.join("tmux");
    write_script(
        &script,
        &format!(
            "#!/bin/sh\n\
             case \"$(cat '{switch}' 2>/dev/null)\" in\n\
             drip) i=0; while [ $i -lt 300 ]; do printf x; sleep 0.1; i=$((i+1)); done; exit 0 ;;\n\
             flood) head -c 100000000 /dev/zero; exit 0 ;;\n\
             esac\n\
             exec '{real}' \"$@\"\n",
            switch = switch.display(),
            real = real_tmux.display()
        ),
    );
    let slow = other_login(&env, &sshd, "slow", &bin);
    let good_folder = remote_folder(&env, "good");
    let slow_folder = remote_folder(&env, "slow");
    std::fs::write(
        env.repo.join("orchestra.toml"),
        format!(
            "[orchestrator]\nagent = \"cat\"\npoll_interval = 1\n\n\
             [hosts.gpu]\naddress = '{address}'\nidentity = '{good_key}'\n\n\
             [hosts.slow]\naddress = '{address}'\nidentity = '{slow_key}'\ncommand_timeout = \"2s\"\n\n\
             [sessions.pipeline]\nhost = \"gpu\"\npath = '{good}'\n\n\
             [sessions.dripper]\nhost = \"slow\"\npath = '{slow_path}'\n",
            address = sshd.address(),
            good_key = sshd.user_key.display(),
            slow_key = slow.key.display(),
            good = good_folder.display(),
            slow_path = slow_folder.display(),
        ),
    )
    .unwrap();
    env.orchestra(&["up"]).ok();
    let status = env.orchestra(&["status", "--json"]).ok();
    assert!(
        status_rows(&status).iter().all(|r| r["error"].is_null()),
        "{}",
        status.stdout
    );

    for (mode, why) in [
        (
            "drip",
            "slow: waiting for its command to finish timed out after 2s",
        ),
        ("flood", "host slow sent more than 16 MiB for one command"),
    ] {
        std::fs::write(&switch, mode).unwrap();
        for verb in ["status", "health"] {
            let started = Instant::now();
            let run = env.orchestra(&[verb, "--json"]).ok();
            let took = started.elapsed();
            eprintln!("{mode}: {verb} took {took:?}");
            // command_timeout (2 s) plus the login and a little: never the 30 s drip.
            assert!(
                took < Duration::from_secs(5),
                "{mode}: {verb} took {took:?}"
            );
            if verb == "status" {
                let rows = status_rows(&run);
                let row = |label: &str| {
                    rows.iter()
                        .find(|r| r["label"] == label)
                        .unwrap_or_else(|| panic!("{label}: {}", run.stdout))
                        .clone()
                };
                let dripper = row("dripper");
                assert!(
                    dripper["error"].as_str().unwrap_or_default().contains(why),
                    "{mode}: {dripper}"
                );
                let pipeline = row("pipeline");
                assert!(pipeline["error"].is_null(), "{mode}: {pipeline}");
                assert_eq!(pipeline["reachable"], true, "{mode}: {pipeline}");
            }
        }
        // The cache the status line reads has the healthy host's answer and the reason.
        let cache = std::fs::read_to_string(env.home.join("cache/remote.json")).unwrap();
        let cache: serde_json::Value = serde_json::from_str(&cache).unwrap();
        let hosts = cache["hosts"].as_array().unwrap();
        let gpu = hosts.iter().find(|h| h["name"] == "gpu").expect("gpu");
        assert!(gpu["error"].is_null() && gpu["rows"].as_array().unwrap().len() == 1);
        let slow_seen = hosts.iter().find(|h| h["name"] == "slow").expect("slow");
        assert!(
            slow_seen["error"]
                .as_str()
                .unwrap_or_default()
                .contains(why),
            "{slow_seen}"
        );
    }
    std::fs::remove_file(&switch).unwrap();
    env.orchestra(&["down"]).ok();
}

#[test]
fn a_remote_has_dependency_is_looked_for_by_the_remote_refresh_never_by_the_status_line() {
    let Some((env, sshd)) = trusted_sshd_world() else {
        return;
    };
    env.start_server(&[]);
    let remote = remote_folder(&env, "remote-project");
    let here = remote_folder(&env, "here");
    let manifest = |address: &str| {
        std::fs::write(
            env.repo.join("orchestra.toml"),
            format!(
                "[orchestrator]\nagent = \"cat\"\npoll_interval = 1\n\n\
                 [hosts.gpu]\naddress = '{address}'\nidentity = '{key}'\nconnect_timeout = \"5s\"\n\n\
                 [sessions.pipeline]\nhost = \"gpu\"\npath = '{remote}'\n\n\
                 [sessions.analysis]\npath = '{here}'\n\n\
                 [sessions.bystander]\npath = '{here}'\n\n\
                 [[dependencies]]\nwhen = \"pipeline has out/result.csv\"\n\
                 then = 'brief analysis \"result is there\"'\n",
                key = sshd.user_key.display(),
                remote = remote.display(),
                here = here.display(),
            ),
        )
        .unwrap();
    };
    manifest(&sshd.address());
    env.orchestra(&["up"]).ok();
    // The host turns into one that accepts and never answers (the manifest is read
    // again for the host on each use): a login there waits the whole connect_timeout.
    let blackhole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = format!(
        "{}@127.0.0.1:{}",
        sshd.user,
        blackhole.local_addr().unwrap().port()
    );
    manifest(&silent);
    // A transition on this machine (a window closed under a session) makes the next
    // status tick look at the manifest's dependencies.
    let window = env.session("bystander")["window"]
        .as_str()
        .unwrap()
        .to_string();
    env.tmux(&["kill-window", "-t", &window]);
    std::thread::sleep(Duration::from_millis(1100));
    let started = Instant::now();
    env.orchestra(&["status-line"]).ok();
    let took = started.elapsed();
    assert_eq!(
        env.session("bystander")["status"],
        "dead",
        "the tick saw the transition"
    );
    assert!(
        took < Duration::from_secs(2),
        "the status line waited on a host: {took:?}"
    );

    // Where it is looked for: the remote refresh (started detached by the status line,
    // or by hand), over the host's own connection.
    manifest(&sshd.address());
    std::fs::create_dir_all(remote.join("out")).unwrap();
    std::fs::write(remote.join("out/result.csv"), "x\n").unwrap();
    let tail = |env: &Env| env.orchestra(&["tail", "analysis", "20"]).stdout;
    assert!(
        wait_until(Duration::from_secs(20), || {
            env.orchestra(&["refresh", "--remote"]);
            tail(&env).contains("result is there")
        }),
        "{}",
        tail(&env)
    );
    drop(blackhole);
    env.orchestra(&["down"]).ok();
}

/// The connect timeout of a host whose manifest does not set one.
fn remote_connect_timeout() -> Duration {
    Duration::from_secs(3)
}

/// Issue 25: a remote session's agent release is asked on its host once (its `--version`,
/// over the host's connection, by the remote refresh: never by the status line), and
/// `health` names a release the screen rules were not proven on as it does a local one.
#[test]
fn health_names_a_remote_agent_release_the_screen_rules_were_not_proven_on() {
    let Some((env, sshd)) = trusted_sshd_world() else {
        return;
    };
    let folder = remote_folder(&env, "remote-project");
    let asked = env.root.join("version-asked");
    let program = env.root.join("claude-2.1.400");
    write_script(
        &program,
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then\n  echo asked >> '{}'\n  echo '2.1.400 (Claude Code)'\n  exit 0\nfi\nexec cat\n",
            asked.display()
        ),
    );
    write_manifest(
        &env,
        &sshd,
        &program.to_string_lossy(),
        &format!(
            "[sessions.pipeline]\nhost = \"gpu\"\npath = '{}'\n",
            folder.display()
        ),
    );
    env.orchestra(&["up"]).ok();
    for _ in 0..2 {
        let health = env.orchestra(&["health"]).ok().stdout;
        let notes: Vec<&str> = health
            .lines()
            .filter(|l| l.contains("screen rules unproven"))
            .collect();
        assert_eq!(
            notes,
            ["claude 2.1.400: screen rules unproven, hooks exact (pipeline)"],
            "{health}"
        );
    }
    let rows = env.orchestra(&["health", "--json"]).ok().stdout;
    let rows: Vec<serde_json::Value> = serde_json::from_str(&rows).unwrap();
    let row = rows
        .iter()
        .find(|r| r["label"] == "pipeline")
        .unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!(row["agent_release"], "2.1.400");
    assert_eq!(row["rules_proven"], false);
    let times = std::fs::read_to_string(&asked).unwrap_or_default();
    assert_eq!(times.lines().count(), 1, "--version asked {times:?}");
    env.orchestra(&["down"]).ok();
}
