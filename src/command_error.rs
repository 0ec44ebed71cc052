//! The one conversion of an error into what a person sees: a message of one line, a hint
//! where the message alone leaves the next step unsaid, and the exit status of the
//! error's class. `main.rs` prints it and exits with it; the tmux menu shows the same line.
//!
//! The engine keeps its errors typed and decides their [`Class`] where it converts them
//! (only that code knows whether a repository that is none was named by the person);
//! what a class means as an exit status, and every hint, is decided here alone.

use crate::error::{Class, Error};
use crate::git::GitError;
use crate::remote::RemoteError;
use crate::state::StateError;

/// An error as a person is shown it.
#[derive(Debug)]
pub struct CommandError {
    class: Class,
    /// `None` for a check that came out false: its output said so.
    message: Option<String>,
    hint: Option<String>,
}

/// The exit status of a class: 2 when the request cannot be carried out as given (so a
/// script can tell its own mistake from the state of the work), 1 when a valid request
/// was refused or failed.
pub fn status(class: Class) -> u8 {
    match class {
        Class::BadInput => 2,
        Class::Refused | Class::Failed => 1,
    }
}

impl CommandError {
    /// A command line clap refused. clap's own text runs to several lines (the message,
    /// tips, usage); folded here into one: the message, its tips and the usage, joined.
    pub fn usage(e: &clap::Error) -> CommandError {
        let text = e.to_string();
        // Paragraphs: the message (its indented lines name what is missing), tips, usage.
        let mut paragraphs = text
            .split("\n\n")
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|p| !p.is_empty());
        let first = paragraphs.next().unwrap_or_default();
        let message = first.strip_prefix("error: ").unwrap_or(&first);
        let mut parts = vec![message.to_string()];
        parts.extend(paragraphs.filter(|p| p.starts_with("tip:") || p.starts_with("Usage:")));
        CommandError {
            class: Class::BadInput,
            message: Some(format!("{} (see --help)", parts.join("; "))),
            hint: None,
        }
    }

    /// The exit status.
    pub fn status(&self) -> u8 {
        status(self.class)
    }

    /// The one line to show (without the `orchestra: ` a terminal gets), or `None` when
    /// there is nothing to say. Whatever path or name the message quotes, it stays one
    /// line, and so does the hint, which follows it on that line: bad input is ONE line.
    pub fn line(&self) -> Option<String> {
        let message = crate::inert::line(self.message.as_deref()?);
        Some(match &self.hint {
            Some(hint) => format!("{message} (hint: {})", crate::inert::line(hint)),
            None => message,
        })
    }
}

impl From<&Error> for CommandError {
    fn from(e: &Error) -> CommandError {
        CommandError {
            class: e.class(),
            message: (!e.is_silent()).then(|| e.to_string()),
            hint: hint(e),
        }
    }
}

/// What to do next, for the errors whose message says what is wrong but not that. A
/// message that names its fix already (a missing tmux, an unknown host key, a damaged
/// record) gets none.
fn hint(e: &Error) -> Option<String> {
    if e.is_busy() {
        return Some(
            "another orchestra is writing the record right now; try again in a moment".into(),
        );
    }
    match e {
        Error::Git(GitError::BadRevision(_), _) => Some(
            "name a branch, tag or commit of this repository (`git branch` lists the branches)"
                .into(),
        ),
        Error::Git(GitError::CliMissing, _) => {
            Some("install git, or put the folder holding it on PATH".into())
        }
        Error::State(StateError::LabelTaken { .. }, _) => {
            Some("`orchestra list` shows it; pick another label".into())
        }
        Error::State(StateError::TooNew { .. }, _) => {
            Some("run the newer orchestra that wrote it, or upgrade this one".into())
        }
        Error::State(StateError::Folder { .. }, _) => {
            Some("set ORCHESTRA_HOME to a folder you can write".into())
        }
        Error::Remote(remote, _) => match remote.as_ref() {
            RemoteError::AuthFailed { .. } => Some(
                "name its key (`identity` in its [hosts.*] table, or IdentityFile in \
                 ~/.ssh/config), or add one to the ssh agent with ssh-add"
                    .into(),
            ),
            RemoteError::RevokedHostKey { host, .. } => Some(format!(
                "orchestra never connects to a revoked key; once the host shows a new one, \
                 `orchestra hosts trust {host}` adds it"
            )),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::tmux::TmuxError;

    #[test]
    fn every_class_has_its_exit_status() {
        assert_eq!(status(Class::BadInput), 2);
        assert_eq!(status(Class::Refused), 1);
        assert_eq!(status(Class::Failed), 1);
        let cases: Vec<(Error, u8)> = vec![
            (Error::BadInput("x".into()), 2),
            (Error::Refused("x".into()), 1),
            (Error::CheckFailed, 1),
            (TmuxError::NotInstalled.into(), 2),
            (TmuxError::Remote("gone".into()).into(), 1),
            (GitError::BadRevision("nope".into()).into(), 2),
            (
                GitError::Cli {
                    command: "worktree add".into(),
                    message: "failed".into(),
                }
                .into(),
                1,
            ),
        ];
        for (e, code) in cases {
            assert_eq!(CommandError::from(&e).status(), code, "{e:?}");
        }
    }

    #[test]
    fn a_false_check_says_nothing() {
        let shown = CommandError::from(&Error::CheckFailed);
        assert_eq!(shown.line(), None);
        assert_eq!(shown.status(), 1);
    }

    #[test]
    fn a_message_that_names_its_fix_gets_no_hint() {
        for e in [
            Error::from(TmuxError::NotInstalled),
            Error::from(TmuxError::TooOld {
                found: "tmux 3.1c".into(),
            }),
            Error::from(GitError::NotARepo(PathBuf::from("/x"))),
            Error::BadInput("a label".into()),
        ] {
            let line = CommandError::from(&e).line().unwrap();
            assert_eq!(line, e.to_string());
            assert!(!line.contains("hint:"), "{line}");
        }
    }

    #[test]
    fn a_hint_follows_its_message_on_the_same_line() {
        let e = Error::from(GitError::BadRevision("nope".into()));
        let shown = CommandError::from(&e);
        assert_eq!(
            shown.line().unwrap(),
            "unknown revision \"nope\" (hint: name a branch, tag or commit of this repository \
             (`git branch` lists the branches))"
        );
        assert_eq!(shown.status(), 2);
    }

    #[test]
    fn a_hinted_line_stays_one_line_whatever_path_it_quotes() {
        let e = Error::from(StateError::Folder {
            path: PathBuf::from("/home/a\norchestra: forged\tline"),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        });
        let line = CommandError::from(&e).line().unwrap();
        assert!(!line.contains('\n') && !line.contains('\t'), "{line:?}");
        assert!(
            line.starts_with("cannot create the state folder or database in /home/a\\norchestra: forged\\tline: "),
            "{line}"
        );
        assert!(
            line.ends_with(" (hint: set ORCHESTRA_HOME to a folder you can write)"),
            "{line}"
        );
        assert_eq!(CommandError::from(&e).status(), 1);
    }

    #[test]
    fn a_host_named_in_a_hint_is_shown_inert() {
        let e = Error::from(RemoteError::RevokedHostKey {
            host: "gpu\nforged".into(),
            message: "host gpu: its key is marked @revoked".into(),
        });
        let line = CommandError::from(&e).line().unwrap();
        assert!(!line.contains('\n'), "{line:?}");
        assert!(
            line.contains("`orchestra hosts trust gpu\\nforged`"),
            "{line}"
        );
    }

    #[test]
    fn a_label_taken_meanwhile_points_at_the_list() {
        let e = Error::from(StateError::LabelTaken {
            repo: "/r".into(),
            label: "api".into(),
        });
        let shown = CommandError::from(&e);
        assert_eq!(
            shown.line().unwrap(),
            "a session labelled \"api\" already exists in /r (hint: `orchestra list` shows it; \
             pick another label)"
        );
        assert_eq!(shown.status(), 2);
    }

    #[test]
    fn clap_refusals_are_one_line_of_bad_input() {
        use clap::Parser;
        let e = crate::cli::Cli::try_parse_from(["orchestra", "dispatch"]).unwrap_err();
        let shown = CommandError::usage(&e);
        let line = shown.line().unwrap();
        assert!(!line.contains('\n'), "{line:?}");
        assert!(
            line.contains("<LABEL>") && line.ends_with(" (see --help)"),
            "{line}"
        );
        assert_eq!(shown.status(), 2);
    }
}
