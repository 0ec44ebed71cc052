//! up, down.
use crate::cli::UpDownArgs;
use crate::cmd::{Context, Output};
use crate::error::Error;

pub fn up(_ctx: &Context, _args: &UpDownArgs, _out: &mut Output<'_>) -> Result<(), Error> {
    Err(Error::Refused("not built yet".into()))
}
pub fn down(_ctx: &Context, _args: &UpDownArgs, _out: &mut Output<'_>) -> Result<(), Error> {
    Err(Error::Refused("not built yet".into()))
}
