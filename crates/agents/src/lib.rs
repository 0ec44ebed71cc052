//! What each kind of agent is: how it is launched and with which settings, what its hook
//! events mean, how its screens read (the rules as data), and where it records what it cost.

pub mod agent;
pub mod cost;
pub mod usage;

use orchestra_model::inert;
use orchestra_sys::{notify, paths, process, state, tmux};
