//! The one integration test binary: every test drives the real `orchestra` binary against
//! real tmux, git and (where it matters) the real `claude` CLI.

// Tests and benchmarks start real programs their own way; the rule that every child goes
// through src/process.rs (clippy.toml) is the product's.
#![allow(clippy::disallowed_methods)]

mod harness;

mod aider;
mod allow;
mod background;
mod classify;
mod codex;
mod concurrency;
mod cost;
mod deps;
mod dispatch;
mod doctor;
mod fake_api;
mod fanout;
mod faults;
mod files;
mod fork;
mod gemini;
mod gh_issues;
mod hardening;
mod health;
mod hostile;
mod import;
mod kill;
mod labels;
mod linear;
mod list;
mod manifest;
mod markup;
mod matrix;
mod mcp;
mod merge;
mod notify;
mod opencode;
mod openssh;
mod permission;
mod plugin;
mod popups;
mod pr;
mod pr_state;
mod radar;
mod record;
mod reference;
mod remote;
mod remote_hooks;
mod removal;
mod resumed;
mod sandbox;
mod screens;
mod setup;
mod status;
mod sync;
mod talk;
mod tasks;
mod truth;
mod workflow;
