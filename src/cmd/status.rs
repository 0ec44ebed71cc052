//! status, tail, attach, collect.
use crate::cli::{AttachArgs, CollectArgs, StatusArgs, TailArgs};
use crate::cmd::{Context, Output};
use crate::error::Error;

pub fn status(_ctx: &Context, _args: &StatusArgs, _out: &mut Output<'_>) -> Result<(), Error> {
    Err(Error::Refused("not built yet".into()))
}
pub fn tail(_ctx: &Context, _args: &TailArgs, _out: &mut Output<'_>) -> Result<(), Error> {
    Err(Error::Refused("not built yet".into()))
}
pub fn attach(_ctx: &Context, _args: &AttachArgs, _out: &mut Output<'_>) -> Result<(), Error> {
    Err(Error::Refused("not built yet".into()))
}
pub fn collect(_ctx: &Context, _args: &CollectArgs, _out: &mut Output<'_>) -> Result<(), Error> {
    Err(Error::Refused("not built yet".into()))
}
