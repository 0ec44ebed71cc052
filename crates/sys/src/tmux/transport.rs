//! How a tmux command reaches its server.

use std::path::PathBuf;
use std::time::Duration;

use super::TmuxError;
use crate::paths::find_program;
use crate::process::{ProcessError, Run};

/// A local tmux command answers in milliseconds (a refresh of 64 windows with their
/// screens included); one still running after this is talking to a server that is
/// stopped or wedged, and the status line, a hook or a refresh must not wait for it.
pub const TMUX_DEADLINE: Duration = Duration::from_secs(5);

pub trait Transport {
    /// Runs tmux with `args` (socket selection is the transport's job) and returns its
    /// standard output.
    fn tmux(&self, args: &[String]) -> Result<String, TmuxError>;

    /// Like [`Transport::tmux`], with `input` on tmux's standard input (`load-buffer -`).
    fn tmux_with_input(&self, args: &[String], input: Option<&[u8]>) -> Result<String, TmuxError>;

    /// Like [`Transport::tmux`], for a command that returns only when a person is done
    /// (`display-popup -E` waits for its popup to close): it must not be stopped early.
    fn tmux_waiting_for_a_person(&self, args: &[String]) -> Result<String, TmuxError> {
        self.tmux(args)
    }

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

    fn run(
        &self,
        args: &[String],
        input: Option<&[u8]>,
        deadline: Duration,
    ) -> Result<String, TmuxError> {
        // -u: to a client whose locale is not UTF-8 (cron, a bare CI shell) tmux prints
        // non-ASCII and tabs as `_`, and orchestra reads UTF-8 values split by tabs.
        let mut run = Run::new("tmux", deadline)
            .arg("-u")
            .args(self.socket_args())
            .args(args);
        if let Some(input) = input {
            run = run.input(input);
        }
        let output = run.output().map_err(|e| match e {
            e if e.not_found() => TmuxError::NotInstalled,
            ProcessError::Spawn { source, .. } => TmuxError::Spawn(source),
            e => TmuxError::Process(e),
        })?;
        if output.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(TmuxError::Failed {
                command: args.first().cloned().unwrap_or_default(),
                message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            })
        }
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
        self.run(args, input, TMUX_DEADLINE)
    }

    fn tmux_waiting_for_a_person(&self, args: &[String]) -> Result<String, TmuxError> {
        self.run(args, None, crate::process::A_PERSON)
    }

    fn command_prefix(&self) -> Vec<String> {
        let tmux = find_program("tmux").unwrap_or_else(|| PathBuf::from("tmux"));
        let mut prefix = vec![tmux.to_string_lossy().into_owned()];
        prefix.extend(self.socket_args());
        prefix
    }
}
