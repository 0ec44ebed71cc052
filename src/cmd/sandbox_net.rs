//! `orchestra sandbox-net` (hidden): the two ends of a sandbox's network limited to a list
//! of hosts (`sandbox_net` in orchestra-sys). `outside` starts the proxy on the session's
//! socket and becomes bwrap; `inside`, the box's first command, starts the bridge on the
//! box's loopback and becomes the agent. Each server ends with the process it started
//! as a child of, so a box killed any way leaves neither behind.

use std::path::Path;

use crate::cli::{SandboxNetArgs, SandboxNetPart};
use crate::error::Error;
use crate::sandbox_net::{self as net, NetError};
use orchestra_model::sandbox::Allowed;

pub fn run(args: &SandboxNetArgs) -> Result<(), Error> {
    match &args.part {
        SandboxNetPart::Outside {
            socket,
            allow,
            command,
        } => {
            Allowed::list(allow.split(','))
                .map_err(|e| Error::BadInput(format!("--allow: {e}")))?;
            let log = socket.with_file_name(net::LOG);
            let (socket, pid) = (socket.to_string_lossy(), std::process::id().to_string());
            let words = [
                "sandbox-net",
                "proxy",
                "--socket",
                &*socket,
                "--allow",
                allow.as_str(),
                "--parent",
                pid.as_str(),
            ]
            .map(String::from);
            net::start(&exe()?, &words, "proxy", Some(&log)).map_err(failed)?;
            Err(exec(command))
        }
        SandboxNetPart::Inside {
            socket,
            port,
            command,
        } => {
            let (socket, port, pid) = (
                socket.to_string_lossy(),
                port.to_string(),
                std::process::id().to_string(),
            );
            let words = [
                "sandbox-net",
                "bridge",
                "--socket",
                &*socket,
                "--port",
                port.as_str(),
                "--parent",
                pid.as_str(),
            ]
            .map(String::from);
            net::start(&exe()?, &words, "bridge", None).map_err(failed)?;
            Err(exec(command))
        }
        SandboxNetPart::Proxy {
            socket,
            allow,
            parent,
        } => {
            let list = Allowed::list(allow.split(','))
                .map_err(|e| Error::BadInput(format!("--allow: {e}")))?;
            net::serve_proxy(socket, list, *parent).map_err(failed)
        }
        SandboxNetPart::Bridge {
            socket,
            port,
            parent,
        } => net::serve_bridge(socket, *port, *parent).map_err(failed),
    }
}

fn exe() -> Result<std::path::PathBuf, Error> {
    std::env::current_exe().map_err(Error::io("finding this program"))
}

fn failed(e: NetError) -> Error {
    Error::Io {
        context: "the sandbox's network".into(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// Replaces this process with `argv`, its environment as it is; returns only the error.
fn exec(argv: &[String]) -> Error {
    use std::os::unix::process::CommandExt;
    let Some((program, args)) = argv.split_first() else {
        return Error::BadInput("nothing to run".into());
    };
    let e = crate::process::command(program).args(args).exec();
    Error::io(format!("starting {}", Path::new(program).display()))(e)
}
