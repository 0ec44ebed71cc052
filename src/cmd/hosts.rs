//! `orchestra hosts check|trust|install`: the manifest's SSH hosts.

use std::io::{BufRead, IsTerminal};
use std::time::Instant;

use crate::cli::{HostsArgs, HostsCommand};
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::remote::known_hosts::Verdict;
use crate::remote_hooks::Installed;
use crate::session::{host_spec, load_manifest};

pub fn run(_ctx: &Context, args: &HostsArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.manifest.repo.as_deref())?;
    let Some((path, manifest)) = load_manifest(&repo, args.manifest.config.as_deref(), true)?
    else {
        return Err(Error::BadInput("no manifest".into()));
    };
    let named = |name: &str| -> Result<(), Error> {
        if manifest.hosts.contains_key(name) {
            Ok(())
        } else {
            Err(Error::BadInput(format!(
                "{name:?} is not a [hosts.*] entry of {}",
                path.display()
            )))
        }
    };
    match &args.command {
        HostsCommand::Check { name } => {
            let names: Vec<String> = match name {
                Some(n) => {
                    named(n)?;
                    vec![n.clone()]
                }
                None => manifest.hosts.keys().cloned().collect(),
            };
            if names.is_empty() {
                out.line(format!("{} names no [hosts.*]", path.display()));
                return Ok(());
            }
            let mut failed = 0;
            for name in names {
                let spec = host_spec(&manifest, &name)?;
                let started = Instant::now();
                let checked =
                    crate::session::remote_tmux(&spec).and_then(|tmux| Ok(tmux.check_version()?));
                match checked {
                    Ok(version) => out.line(format!(
                        "{name}: ok ({version}, {} ms)",
                        started.elapsed().as_millis()
                    )),
                    Err(e) => {
                        failed += 1;
                        out.line(format!("{name}: {e}"));
                    }
                }
            }
            if failed > 0 {
                return Err(Error::Refused(format!("{failed} host(s) failed the check")));
            }
            Ok(())
        }
        HostsCommand::Trust { name, fingerprint } => {
            named(name)?;
            let spec = host_spec(&manifest, name)?;
            let scan = crate::remote::scan(&spec)?;
            if scan.verdict == Verdict::Known {
                out.line(format!(
                    "{name}: already trusted ({} {})",
                    scan.key_type(),
                    scan.fingerprint()
                ));
                return Ok(());
            }
            if fingerprint.is_none() && matches!(scan.verdict, Verdict::Unknown { .. }) {
                let stdin = std::io::stdin();
                if !stdin.is_terminal() {
                    return Err(Error::BadInput(format!(
                        "{name} shows {} key {}: pass --fingerprint {} to trust it without a terminal",
                        scan.key_type(),
                        scan.fingerprint(),
                        scan.fingerprint()
                    )));
                }
                let _ = write!(
                    out.err,
                    "{name} ({}:{}) shows {} key {}. Trust it? [y/N] ",
                    scan.target.hostname,
                    scan.target.port,
                    scan.key_type(),
                    scan.fingerprint()
                );
                let _ = out.err.flush();
                let mut answer = String::new();
                let _ = stdin.lock().read_line(&mut answer);
                if !matches!(answer.trim(), "y" | "Y" | "yes") {
                    return Err(Error::Refused("nothing trusted".into()));
                }
            }
            crate::remote::trust(&scan, fingerprint.as_deref())?;
            out.line(format!(
                "{name}: trusted {} key {} in {}",
                scan.key_type(),
                scan.fingerprint(),
                scan.known_hosts.display()
            ));
            Ok(())
        }
        HostsCommand::Install { name, force } => {
            named(name)?;
            let spec = host_spec(&manifest, name)?;
            let exe = std::env::current_exe()
                .map_err(Error::io("finding this orchestra binary to copy"))?;
            let at = format!("~/{}", crate::remote_hooks::REMOTE_BIN);
            match crate::remote_hooks::install(&spec, &exe, *force)? {
                Installed::AlreadyThere { version } => out.line(format!(
                    "{name}: {version} is already at {at}: nothing copied (--force copies it again)"
                )),
                Installed::Copied { version, bytes } => out.line(format!(
                    "{name}: installed {version} at {at} ({} MiB); its claude sessions started \
                     by `up` from now on get hooks",
                    bytes.div_ceil(1 << 20)
                )),
            }
            Ok(())
        }
    }
}
