//! The one integration test binary: every test drives the real `orchestra` binary against
//! real tmux, git and (where it matters) the real `claude` CLI.

mod harness;

mod classify;
mod deps;
mod dispatch;
mod doctor;
mod fake_api;
mod faults;
mod files;
mod hardening;
mod health;
mod kill;
mod labels;
mod list;
mod manifest;
mod merge;
mod notify;
mod plugin;
mod remote;
mod setup;
mod status;
mod sync;
mod talk;
mod truth;
mod workflow;
