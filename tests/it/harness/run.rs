//! What a run of a program gave, and the checks every test makes of it.

use std::process::Output;

pub(crate) struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub(crate) fn from(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    #[track_caller]
    pub(crate) fn ok(self) -> Run {
        assert_eq!(
            self.code, 0,
            "expected success; stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Exit `code` with exactly one line on stderr.
    #[track_caller]
    pub(crate) fn fails_with(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        assert_eq!(
            self.stderr.lines().count(),
            1,
            "expected one line on stderr, got:\n{}",
            self.stderr
        );
        self
    }
}
