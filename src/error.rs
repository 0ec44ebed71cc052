//! The error a command returns, and the exit status it maps to: 2 when the request cannot
//! be carried out as given, 1 when a valid request was refused by the state of the work
//! (or failed on the way).

use crate::git::GitError;
use crate::label::LabelError;
use crate::state::StateError;
use crate::tmux::TmuxError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request itself is wrong: usage, labels, missing programs. Exit 2.
    #[error("{0}")]
    BadInput(String),
    /// A valid request refused by the current state of the work. Exit 1.
    #[error("{0}")]
    Refused(String),
    /// A check that came out false: exit 1 and no message (the output said it).
    #[error("")]
    CheckFailed,
    #[error(transparent)]
    Label(#[from] LabelError),
    #[error(transparent)]
    Artifact(#[from] crate::artifact::ArtifactError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Tmux(#[from] TmuxError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Health(#[from] crate::health::HealthError),
    // Boxed: these carry several strings, and every Result<_, Error> pays for the largest.
    #[error(transparent)]
    Manifest(Box<crate::manifest::ManifestError>),
    #[error(transparent)]
    Remote(Box<crate::remote::RemoteError>),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::BadInput(_) | Error::Label(_) | Error::Artifact(_) | Error::Manifest(_) => 2,
            Error::Remote(e) if matches!(**e, crate::remote::RemoteError::BadAddress { .. }) => 2,
            Error::Tmux(
                TmuxError::NotInstalled | TmuxError::TooOld { .. } | TmuxError::Untypable { .. },
            ) => 2,
            Error::Git(
                GitError::NotARepo(_)
                | GitError::Bare(_)
                | GitError::NoCommits
                | GitError::BadRevision(_)
                | GitError::BranchExists(_)
                | GitError::CliMissing,
            ) => 2,
            Error::State(StateError::LabelTaken { .. }) => 2,
            Error::Health(crate::health::HealthError::Tmux(
                TmuxError::NotInstalled | TmuxError::TooOld { .. },
            )) => 2,
            Error::Health(crate::health::HealthError::Rules(_)) => 2,
            _ => 1,
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

/// A library's message (toml and regex write several lines: a snippet, a caret, a hint)
/// as one line, its lines joined by ": "; `fallback` when it says nothing.
pub fn one_line(message: &str, fallback: &str) -> String {
    let parts: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if parts.is_empty() {
        fallback.to_string()
    } else {
        parts.join(": ")
    }
}

impl From<crate::manifest::ManifestError> for Error {
    fn from(e: crate::manifest::ManifestError) -> Error {
        Error::Manifest(Box::new(e))
    }
}

impl From<crate::worktree::WorktreeError> for Error {
    fn from(e: crate::worktree::WorktreeError) -> Error {
        use crate::worktree::WorktreeError;
        match e {
            WorktreeError::Manifest(m) => Error::Manifest(m),
            WorktreeError::Git(g) => Error::Git(g),
            WorktreeError::Io { context, source } => Error::Io { context, source },
        }
    }
}

impl From<crate::remote::RemoteError> for Error {
    fn from(e: crate::remote::RemoteError) -> Error {
        Error::Remote(Box::new(e))
    }
}

impl From<crate::radar::RadarError> for Error {
    fn from(e: crate::radar::RadarError) -> Error {
        match e {
            crate::radar::RadarError::Git(e) => Error::Git(e),
            crate::radar::RadarError::State(e) => Error::State(e),
        }
    }
}
