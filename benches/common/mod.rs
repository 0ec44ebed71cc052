//! What the git benchmarks share: a generated repository of many files, git run as a
//! bench author, medians.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Runs git in `dir` as the bench author; panics (with git's words) on failure.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@localhost")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@localhost")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// File `i` of a generated repository: 100 files a folder.
pub(crate) fn file(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("src/mod{:03}/file{i:05}.rs", i / 100))
}

/// A new repository at `dir` on branch `main` with `files` files of 20 lines, committed.
pub(crate) fn generated_repo(dir: &Path, files: usize) {
    for i in 0..files {
        let path = file(dir, i);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(
            &path,
            format!("// file {i}\npub fn f{i}() -> u32 {{ {i} }}\n").repeat(20),
        )
        .expect("write");
    }
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "files"]);
}

pub(crate) fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}
