//! orchestra's effects: child processes with deadlines, HTTP, locks, fault points, the SQLite store,
//! tmux, git, ssh and desktop notifications. Each module is the only one that talks to its
//! part of the world and returns its own typed error; nothing here knows what a session is
//! for.

pub mod fault;
pub mod git;
pub mod http;
pub mod lock;
pub mod notify;
pub mod opencode_db;
pub mod paths;
pub mod process;
pub mod remote;
pub mod sandbox;
pub mod sandbox_net;
pub mod state;
pub mod tmux;

// The vocabulary under the names the modules were written with.
use orchestra_model::{duration, inert};
