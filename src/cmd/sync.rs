//! insights, dream, sync: ask each manifest session's agent what it knows (`claude -p` in
//! its folder), save the reports, synthesize them into CONTEXT.md.

use crate::cli::SyncArgs;
use crate::cmd::{Context, Output};
use crate::error::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Insights,
    Dream,
    Both,
}

pub fn run(
    _ctx: &Context,
    _args: &SyncArgs,
    _kind: Kind,
    _out: &mut Output<'_>,
) -> Result<(), Error> {
    Err(Error::Refused("not built yet".into()))
}
