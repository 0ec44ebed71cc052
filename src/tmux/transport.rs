//! How a tmux command reaches its server.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::TmuxError;
use crate::paths::find_program;

pub trait Transport {
    /// Runs tmux with `args` (socket selection is the transport's job) and returns its
    /// standard output.
    fn tmux(&self, args: &[String]) -> Result<String, TmuxError>;

    /// Like [`Transport::tmux`], with `input` on tmux's standard input (`load-buffer -`).
    fn tmux_with_input(&self, args: &[String], input: Option<&[u8]>) -> Result<String, TmuxError>;

    /// The program and socket arguments a person would type to reach the same server.
    fn command_prefix(&self) -> Vec<String>;

    /// The argv that runs tmux with `args` on a person's terminal (for `attach`).
    fn interactive_argv(&self, args: &[String]) -> Vec<String> {
        let mut argv = self.command_prefix();
        argv.extend(args.iter().cloned());
        argv
    }
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
        self.tmux_with_input(args, None)
    }

    fn tmux_with_input(&self, args: &[String], input: Option<&[u8]>) -> Result<String, TmuxError> {
        let spawn_error = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::NotFound => TmuxError::NotInstalled,
            _ => TmuxError::Spawn(e),
        };
        let mut child = Command::new("tmux")
            .args(self.socket_args())
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_error)?;
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            use std::io::Write;
            stdin.write_all(input).map_err(TmuxError::Spawn)?;
        }
        let output = child.wait_with_output().map_err(TmuxError::Spawn)?;
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
