//! The shared test harness, one file per part it starts: `env` (a test's world: a real tmux
//! server on its own socket, killed on drop, only that socket; a real git repo in a temp
//! folder), `person` (the terminal a person looks at, and their keys), `agents` (the real
//! agent CLIs, each against its scripted API stand-in in tests/fake-api, and a world with
//! one in it), `sessions` (what a test reads of a session: screen, state, changes),
//! `sshd` (a real OpenSSH server for the remote side), `dbus` (a private session bus with a
//! notification daemon); `run` is what a run of a program gave, and `cli` a CLI test as
//! one chain.
//!
//! Under `CI=true` a missing real part fails the test; elsewhere the test says it skipped.

#![allow(dead_code)]

mod agents;
mod cli;
mod dbus;
mod env;
mod person;
mod run;
mod sessions;
mod sshd;

use std::path::PathBuf;
use std::time::{Duration, Instant};

// Every name the harness had as one file stays `harness::<name>`, used or not.
#[allow(unused_imports)]
pub(crate) use agents::{
    agent_cli, agent_home, claude_bin, fake_api_dir, screen_fixture, screen_fixtures,
    stand_in_passes_its_own_tests, test_cache, AgentCli, AgentWorld, ClaudeWorld, FakeApi,
    MixedWorld, StandIn, AIDER_VERSION, CLAUDE_VERSION, CODEX_VERSION, GEMINI_VERSION,
};
#[allow(unused_imports)]
pub(crate) use cli::Cli;
pub(crate) use dbus::Bus;
#[allow(unused_imports)]
pub(crate) use env::{commit_file, end_processes_of, git_in, shell_dispatch, write_script, Env};
pub(crate) use person::Person;
pub(crate) use run::Run;
#[allow(unused_imports)]
pub(crate) use sessions::Change;
#[allow(unused_imports)]
pub(crate) use sshd::{
    attach_here_shows, remote_claude_runs_an_approved_command, remote_folder, remote_state,
    sshd_bin, sshd_world, trusted_sshd_world, Sshd,
};

pub(crate) fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Fails (on CI) or reports a skip (elsewhere) for a missing real part. Returns whether
/// the test may go on.
pub(crate) fn require(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if on_ci() {
        panic!("required test dependency missing: {what} (tests/run.sh installs it)");
    }
    eprintln!("SKIP: {what} is missing (tests/run.sh installs it)");
    false
}

pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_orchestra")
}

pub(crate) fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Polls `check` every 50 ms until it holds or `timeout` passes.
pub(crate) fn wait_until(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
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

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
