//! How a tmux command reaches its server.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::TmuxError;
use crate::paths::find_program;

pub trait Transport {
    /// Runs tmux with `args` (socket selection is the transport's job) and returns its
    /// standard output.
    fn tmux(&self, args: &[String]) -> Result<String, TmuxError>;

    /// The program and socket arguments a person would type to reach the same server.
    fn command_prefix(&self) -> Vec<String>;
}

/// tmux as a local process, found on `PATH` (users' tmux lives anywhere).
pub struct Local {
    socket: Option<PathBuf>,
}

impl Local {
    pub fn new(socket: Option<PathBuf>) -> Local {
        Local { socket }
    }

    fn socket_args(&self) -> Vec<String> {
        match &self.socket {
            Some(s) => vec!["-S".into(), s.to_string_lossy().into_owned()],
            None => Vec::new(),
        }
    }
}

impl Transport for Local {
    fn tmux(&self, args: &[String]) -> Result<String, TmuxError> {
        let output = Command::new("tmux")
            .args(self.socket_args())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => TmuxError::NotInstalled,
                _ => TmuxError::Spawn(e),
            })?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(TmuxError::Failed {
                command: args.first().cloned().unwrap_or_default(),
                message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            })
        }
    }

    fn command_prefix(&self) -> Vec<String> {
        let tmux = find_program("tmux").unwrap_or_else(|| PathBuf::from("tmux"));
        let mut prefix = vec![tmux.to_string_lossy().into_owned()];
        prefix.extend(self.socket_args());
        prefix
    }
}
