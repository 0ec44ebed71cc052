//! Artifact locators: what an upstream session makes that others wait for (`deps add`,
//! `dispatch --after UPSTREAM:ARTIFACT`, a manifest's `when = "NAME has ARTIFACT"`). A
//! locator names a file relative to the upstream's folder (or, with `branch:`/`commit:`,
//! a ref), so it must never reach outside that folder: one validator for every way in.

use std::path::{Component, Path};

use crate::git::{artifact_kind, ArtifactKind};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactError {
    #[error("the artifact is empty")]
    Empty,
    #[error("artifact {0:?} is an absolute path: name it relative to the session's folder")]
    Absolute(String),
    #[error("artifact {0:?} leaves the session's folder (`..`)")]
    LeavesFolder(String),
    #[error("artifact {0:?} holds a control character")]
    ControlCharacter(String),
}

/// A checked locator: its forced kind (`file:`, `branch:`, `commit:`), if any, and the
/// name after that prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Locator<'a> {
    pub kind: Option<ArtifactKind>,
    pub name: &'a str,
}

/// Checks `locator` and splits off its kind. The path rules hold for every kind: a
/// branch or commit name never needs a leading `/` or a `..` component (git refuses both
/// in ref names), and an unprefixed locator is tried as a file first.
pub fn parse(locator: &str) -> Result<Locator<'_>, ArtifactError> {
    let (kind, name) = artifact_kind(locator);
    if name.trim().is_empty() {
        return Err(ArtifactError::Empty);
    }
    if name.chars().any(char::is_control) {
        return Err(ArtifactError::ControlCharacter(locator.to_string()));
    }
    let path = Path::new(name);
    if path.has_root() {
        return Err(ArtifactError::Absolute(locator.to_string()));
    }
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(ArtifactError::LeavesFolder(locator.to_string()));
    }
    Ok(Locator { kind, name })
}

/// Checks `locator` (see [`parse`]).
pub fn validate(locator: &str) -> Result<(), ArtifactError> {
    parse(locator).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_the_folder_are_refused() {
        for (locator, want) in [
            ("/etc/passwd", ArtifactError::Absolute("/etc/passwd".into())),
            (
                "file:/etc/passwd",
                ArtifactError::Absolute("file:/etc/passwd".into()),
            ),
            ("..", ArtifactError::LeavesFolder("..".into())),
            ("../x", ArtifactError::LeavesFolder("../x".into())),
            ("a/../../b", ArtifactError::LeavesFolder("a/../../b".into())),
            (
                "file:a/../b",
                ArtifactError::LeavesFolder("file:a/../b".into()),
            ),
            ("", ArtifactError::Empty),
            ("file:", ArtifactError::Empty),
            ("branch: ", ArtifactError::Empty),
            (
                "out\n.csv",
                ArtifactError::ControlCharacter("out\n.csv".into()),
            ),
        ] {
            assert_eq!(parse(locator), Err(want), "{locator:?}");
        }
    }

    #[test]
    fn relative_paths_branches_and_commits_pass() {
        assert_eq!(
            parse("out/data.csv"),
            Ok(Locator {
                kind: None,
                name: "out/data.csv"
            })
        );
        assert_eq!(parse("./out/x..y").map(|l| l.name), Ok("./out/x..y"));
        assert_eq!(
            parse("branch:api-v2").map(|l| l.kind),
            Ok(Some(ArtifactKind::Branch))
        );
        assert_eq!(parse("branch:feature/x").map(|l| l.name), Ok("feature/x"));
        assert_eq!(
            parse("commit:abc123").map(|l| (l.kind, l.name)),
            Ok((Some(ArtifactKind::Commit), "abc123"))
        );
        assert_eq!(
            parse("file:out/x").map(|l| l.kind),
            Ok(Some(ArtifactKind::File))
        );
    }
}
