//! orchestra: run several AI coding agents in parallel on one project, each in its own git
//! worktree, branch and tmux window. `main.rs` is the only place that prints and exits; every
//! module here returns typed errors. See ARCHITECTURE.md for the map.

pub mod agent;
pub mod artifact;
pub mod cli;
pub mod cmd;
pub mod context;
pub mod cost;
pub mod deps;
pub mod doctor;
pub mod duration;
pub mod error;
pub mod fault;
pub mod git;
pub mod health;
pub mod hooks;
pub mod import;
pub mod inert;
pub mod label;
#[cfg(test)]
mod layering;
pub mod lock;
pub mod manifest;
pub mod notify;
pub mod paths;
pub mod plugin;
pub mod process;
pub mod prompts;
pub mod radar;
pub mod remote;
pub mod remote_hooks;
pub mod report;
pub mod session;
pub mod state;
pub mod sync;
pub mod tasks;
pub mod term;
pub mod tmux;
pub mod trust;
pub mod worktree;
