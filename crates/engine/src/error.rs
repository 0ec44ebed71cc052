//! The error a command returns, typed, with its [`Class`]. The class is decided where an
//! error is converted (a `From` impl here, or a command that knows better, such as a
//! repository the person named that is no repository): only that code knows. What a
//! person is shown of it, the exit status its class gives and any hint are decided in the
//! binary's `command_error`, never here.

use crate::git::GitError;
use crate::label::LabelError;
use crate::remote::RemoteError;
use crate::state::StateError;
use crate::tmux::TmuxError;

/// Why a refresh (`health`) could not be carried out. Defined here beside the one error a
/// command sees, so that this module names no use case (`health` re-exports it).
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    #[error(transparent)]
    Tmux(#[from] TmuxError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Rules(#[from] crate::agent::rules::RulesError),
    #[error("{0}")]
    Other(String),
}

/// An orchestra.toml that does not parse or validate, where (`manifest` re-exports it).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{file}:{line}:{column}: {message}")]
pub struct ManifestError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// What an error says about the request: the one thing its exit status depends on (the
/// binary's `command_error` maps it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The request cannot be carried out as given: usage, labels, not a repo, a missing
    /// tmux or agent, a manifest that does not parse.
    BadInput,
    /// A valid request refused by the state of the work (a dirty tree, a false check).
    Refused,
    /// A valid request that failed on the way (I/O, tmux, git, the database, a host).
    Failed,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request itself is wrong: usage, labels, missing programs.
    #[error("{0}")]
    BadInput(String),
    /// A valid request refused by the current state of the work.
    #[error("{0}")]
    Refused(String),
    /// A check that came out false: no message (the output said it).
    #[error("")]
    CheckFailed,
    #[error(transparent)]
    Label(#[from] LabelError),
    #[error(transparent)]
    Artifact(#[from] crate::artifact::ArtifactError),
    // The errors below carry the class their conversion gave them.
    #[error("{0}")]
    State(#[source] StateError, Class),
    #[error("{0}")]
    Tmux(#[source] TmuxError, Class),
    #[error("{0}")]
    Git(#[source] GitError, Class),
    #[error("{0}")]
    Health(#[source] HealthError, Class),
    // Boxed: these carry several strings, and every Result<_, Error> pays for the largest.
    #[error(transparent)]
    Manifest(Box<ManifestError>),
    #[error("{0}")]
    Remote(#[source] Box<RemoteError>, Class),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl Error {
    /// Whether the record was busy (another process held its write lock) past this
    /// process's patience: nothing is wrong, it is only late.
    pub fn is_busy(&self) -> bool {
        match self {
            Error::State(e, _) | Error::Health(HealthError::State(e), _) => e.is_busy(),
            _ => false,
        }
    }

    pub fn class(&self) -> Class {
        match self {
            Error::BadInput(_) | Error::Label(_) | Error::Artifact(_) | Error::Manifest(_) => {
                Class::BadInput
            }
            Error::Refused(_) | Error::CheckFailed => Class::Refused,
            Error::Io { .. } => Class::Failed,
            Error::State(_, class)
            | Error::Tmux(_, class)
            | Error::Git(_, class)
            | Error::Health(_, class)
            | Error::Remote(_, class) => *class,
        }
    }

    /// Whether there is a message to print (a false check has none).
    pub fn is_silent(&self) -> bool {
        matches!(self, Error::CheckFailed)
    }

    pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let context = context.into();
        move |source| Error::Io { context, source }
    }
}

pub use orchestra_model::text::one_line;

impl From<TmuxError> for Error {
    fn from(e: TmuxError) -> Error {
        // A missing or old tmux is the person's to fix, and so is a text holding a key.
        let class = match e {
            TmuxError::NotInstalled | TmuxError::TooOld { .. } | TmuxError::Untypable { .. } => {
                Class::BadInput
            }
            // Killed at its deadline (a stopped server) or stopped for printing without
            // end: the request was fine, the way failed.
            TmuxError::Process(_) => Class::Failed,
            _ => Class::Failed,
        };
        Error::Tmux(e, class)
    }
}

impl From<GitError> for Error {
    fn from(e: GitError) -> Error {
        let class = match e {
            GitError::NotARepo(_)
            | GitError::Bare(_)
            | GitError::NoCommits
            | GitError::BadRevision(_)
            | GitError::BranchExists(_)
            | GitError::CliMissing => Class::BadInput,
            // Killed at its deadline or for printing without end.
            GitError::Process(_) => Class::Failed,
            _ => Class::Failed,
        };
        Error::Git(e, class)
    }
}

impl From<StateError> for Error {
    fn from(e: StateError) -> Error {
        let class = match e {
            StateError::LabelTaken { .. } => Class::BadInput,
            _ => Class::Failed,
        };
        Error::State(e, class)
    }
}

impl From<HealthError> for Error {
    fn from(e: HealthError) -> Error {
        let class = match &e {
            // A refresh never types text: only a missing or old tmux is the person's.
            HealthError::Tmux(TmuxError::NotInstalled | TmuxError::TooOld { .. }) => {
                Class::BadInput
            }
            HealthError::Rules(_) => Class::BadInput,
            _ => Class::Failed,
        };
        Error::Health(e, class)
    }
}

impl From<RemoteError> for Error {
    fn from(e: RemoteError) -> Error {
        let class = match e {
            RemoteError::BadAddress { .. } | RemoteError::SocketPathTooLong { .. } => {
                Class::BadInput
            }
            _ => Class::Failed,
        };
        Error::Remote(Box::new(e), class)
    }
}

impl From<ManifestError> for Error {
    fn from(e: ManifestError) -> Error {
        Error::Manifest(Box::new(e))
    }
}

impl From<crate::agent::AgentError> for Error {
    fn from(e: crate::agent::AgentError) -> Error {
        match e {
            crate::agent::AgentError::BadInput(message) => Error::BadInput(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_is_decided_at_conversion() {
        let cases: Vec<(Error, Class)> = vec![
            (Error::BadInput("x".into()), Class::BadInput),
            (Error::Refused("x".into()), Class::Refused),
            (Error::CheckFailed, Class::Refused),
            (TmuxError::NotInstalled.into(), Class::BadInput),
            (TmuxError::Remote("gone".into()).into(), Class::Failed),
            (GitError::NoCommits.into(), Class::BadInput),
            (TmuxError::Process(timed_out("tmux")).into(), Class::Failed),
            (GitError::Process(timed_out("git")).into(), Class::Failed),
            (
                StateError::LabelTaken {
                    repo: "r".into(),
                    label: "l".into(),
                }
                .into(),
                Class::BadInput,
            ),
            // tmux refusing typed text is bad input for a command, but a refresh types none.
            (
                HealthError::Tmux(TmuxError::Untypable {
                    found: "U+001B".into(),
                    at: 1,
                })
                .into(),
                Class::Failed,
            ),
            (HealthError::Other("x".into()).into(), Class::Failed),
        ];
        for (e, class) in cases {
            assert_eq!(e.class(), class, "{e:?}");
        }
    }

    fn timed_out(program: &str) -> crate::process::ProcessError {
        crate::process::ProcessError::TimedOut {
            program: program.into(),
            after: std::time::Duration::from_secs(5),
        }
    }
}
