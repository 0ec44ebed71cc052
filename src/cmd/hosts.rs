//! hosts check, hosts trust.
use crate::cli::HostsArgs;
use crate::cmd::{Context, Output};
use crate::error::Error;

pub fn run(_ctx: &Context, _args: &HostsArgs, _out: &mut Output<'_>) -> Result<(), Error> {
    Err(Error::Refused("not built yet".into()))
}
