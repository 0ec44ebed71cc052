//! orchestra's vocabulary: what a kind of agent is called, labels, durations, inert text and
//! one-line messages, the report a use case speaks through. No I/O of any kind: every other
//! crate may depend on this one, and this one on none of them.

pub mod duration;
pub mod inert;
pub mod kind;
pub mod label;
pub mod linear;
pub mod notion;
pub mod report;
pub mod sandbox;
pub mod text;

pub use kind::{AgentKind, Typing};
