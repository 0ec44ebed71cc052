//! A CLI test as one chain: what to run, then what must come out of it.
//!
//! ```ignore
//! env.cli(&["deps", "add", "a", "a", "x"])
//!     .status(2)
//!     .stderr_line("orchestra: a session cannot wait for itself")
//!     .run();
//! ```
//!
//! What the chain does not name must be empty: a test that expects a message on stderr
//! says which, and a run that should print nothing is checked to print nothing. The
//! checks are exact, so the one-clear-line rule for bad input is checked by every such
//! test, and `run` returns the [`Run`] for what is checked afterwards (that nothing
//! changed).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::{Env, Run};

#[must_use = "nothing runs until .run()"]
pub(crate) struct Cli<'a> {
    env: &'a Env,
    cwd: PathBuf,
    args: Vec<String>,
    status: i32,
    /// Environment for this run only, over the world's.
    vars: Vec<(String, OsString)>,
    stdout: String,
    stderr: String,
}

impl Env {
    /// orchestra with `args`, in the repo, on this test's server; expected to exit 0 and
    /// print nothing until the chain says otherwise.
    pub(crate) fn cli(&self, args: &[&str]) -> Cli<'_> {
        Cli {
            env: self,
            cwd: self.repo.clone(),
            args: args.iter().map(std::string::ToString::to_string).collect(),
            status: 0,
            vars: Vec::new(),
            stdout: String::new(),
            stderr: String::new(),
        }
    }
}

impl Cli<'_> {
    /// Runs it in `dir` instead of the repo.
    pub(crate) fn current_dir(mut self, dir: &Path) -> Self {
        self.cwd = dir.to_path_buf();
        self
    }

    /// Sets `key` to `value` in its environment.
    pub(crate) fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.vars.push((key.to_string(), value.as_ref().to_owned()));
        self
    }

    /// The exit status it must end with.
    pub(crate) fn status(mut self, code: i32) -> Self {
        self.status = code;
        self
    }

    /// stderr must be exactly this one line.
    pub(crate) fn stderr_line(mut self, line: impl Into<String>) -> Self {
        let line = line.into();
        assert!(
            !line.contains('\n'),
            "stderr_line takes one line, without its newline: {line:?}"
        );
        self.stderr = line + "\n";
        self
    }

    /// stdout must be exactly this text.
    pub(crate) fn stdout(mut self, text: impl Into<String>) -> Self {
        self.stdout = text.into();
        self
    }

    /// Runs orchestra and checks the status, stderr and stdout the chain named; a failure
    /// shows every one that differs, with both streams.
    #[track_caller]
    pub(crate) fn run(self) -> Run {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let mut cmd = self.env.orchestra_command(&self.cwd, &args);
        cmd.envs(self.vars.iter().map(|(k, v)| (k, v)));
        let run = Run::from(cmd.output().expect("run orchestra"));
        let mut wrong = Vec::new();
        if run.code != self.status {
            wrong.push(format!(
                "exit status {}, expected {}",
                run.code, self.status
            ));
        }
        for (name, have, want) in [
            ("stderr", &run.stderr, &self.stderr),
            ("stdout", &run.stdout, &self.stdout),
        ] {
            if have != want {
                wrong.push(format!("{name} {have:?}, expected {want:?}"));
            }
        }
        assert!(
            wrong.is_empty(),
            "orchestra {args:?}:\n  {}\n--- stdout ---\n{}--- stderr ---\n{}",
            wrong.join("\n  "),
            run.stdout,
            run.stderr
        );
        run
    }
}
