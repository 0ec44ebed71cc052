//! orchestra's use cases: sessions and their life (dispatch, merge, remove, restart, the
//! manifest), health and its refresh, the hook endpoint, dependencies, the conflict radar,
//! tasks, sync, doctor. They speak through `report::Report` and return `error::Error`; only
//! the binary prints.

pub mod artifact;
pub mod context;
pub mod deps;
pub mod doctor;
pub mod error;
pub mod forge;
pub mod group;
pub mod health;
pub mod hooks;
pub mod import;
pub mod inbox;
pub mod manifest;
pub mod pr;
pub mod prompts;
pub mod radar;
pub mod remote_hooks;
pub mod session;
pub mod sync;
pub mod tasks;
pub mod tell;
pub mod trust;
pub mod worktree;

// The lower crates under the names the modules were written with.
use orchestra_agents::{agent, cost};
use orchestra_model::{duration, inert, label, report};
use orchestra_sys::{
    fault, git, http, lock, notify, paths, process, remote, sandbox, sandbox_net, state, tmux,
};
