//! `orchestra connect HOST [--check | --close]`: the OpenSSH master connection of a host.

use crate::cli::ConnectArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::remote::openssh::Master;
use crate::remote::{HostSpec, RemoteError, TransportKind};
use crate::session::{host_spec, load_manifest};

pub fn run(ctx: &Context, args: &ConnectArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let spec = host(args)?;
    let persist = crate::duration::parse_timeout(&args.persist).ok_or_else(|| {
        Error::BadInput(format!(
            "--persist {:?} is not a duration such as \"4h\" or \"30m\"",
            args.persist
        ))
    })?;
    let master = Master::new(&ctx.home, &spec)?;
    let name = &spec.name;
    if args.check {
        if master.is_live(spec.connect_timeout) {
            out.line(format!("{name}: connected"));
            return Ok(());
        }
        return Err(Error::Refused(
            RemoteError::NotConnected { host: name.clone() }.to_string(),
        ));
    }
    if args.close {
        if master.close(spec.connect_timeout)? {
            out.line(format!("{name}: closed"));
        } else {
            out.line(format!("{name}: was not connected"));
        }
        return Ok(());
    }
    if master.is_live(spec.connect_timeout) {
        out.line(format!("{name}: already connected"));
    } else {
        master.open(persist)?;
        if !master.is_live(spec.connect_timeout) {
            return Err(Error::Refused(format!(
                "{name}: ssh logged in but left no master connection at {}",
                master.socket.display()
            )));
        }
        out.line(format!(
            "{name}: connected (open until {} after its last use; orchestra connect {name} --close ends it)",
            crate::duration::spell(persist)
        ));
    }
    if spec.transport != TransportKind::OpenSsh {
        out.line(format!(
            "note: host {name} has transport = \"ssh2\"; add transport = \"openssh\" to its \
             [hosts.{name}] for orchestra to use this connection"
        ));
    }
    Ok(())
}

/// A [hosts.*] name of the manifest (when there is one), else `user@host[:port]`, held
/// to the characters a user and host name may have (nothing ssh would read as an option).
fn host(args: &ConnectArgs) -> Result<HostSpec, Error> {
    let explicit = args.manifest.config.is_some() || args.manifest.repo.is_some();
    let manifest = match open_repo(args.manifest.repo.as_deref()) {
        Ok(repo) => load_manifest(&repo, args.manifest.config.as_deref(), false)?,
        Err(e) if explicit => return Err(e),
        Err(_) => None,
    };
    if let Some((_, manifest)) = &manifest {
        if manifest.hosts.contains_key(&args.host) {
            return host_spec(manifest, &args.host);
        }
    }
    crate::remote::config::parse_address(&args.host).map_err(|e| {
        Error::BadInput(format!(
            "{:?} is neither a [hosts.*] name of the manifest nor user@host[:port]: {e}",
            args.host
        ))
    })?;
    Ok(HostSpec::for_address(&args.host))
}
