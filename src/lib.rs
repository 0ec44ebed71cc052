//! orchestra: run several AI coding agents in parallel on one project, each in its own git
//! worktree, branch and tmux window. This crate is the command line: clap, the commands, the
//! tmux plugin and the terminal; `main.rs` is the only place that prints and exits. The work
//! is done in the crates under `crates/` (ARCHITECTURE.md is the map); their modules are
//! re-exported here under the names the tests and benches use.

pub mod cli;
pub mod cmd;
pub mod command_error;
#[cfg(test)]
mod layering;
pub mod mcp;
pub mod plugin;
pub mod term;

pub use orchestra_agents::{agent, cost};
pub use orchestra_engine::{
    artifact, context, deps, doctor, error, group, health, hooks, import, inbox, manifest, pr,
    prompts, radar, remote_hooks, session, sync, tasks, tell, trust, worktree,
};
pub use orchestra_model::{duration, inert, label, report};
pub use orchestra_sys::{
    fault, git, http, lock, notify, paths, process, remote, sandbox_net, state, tmux,
};
