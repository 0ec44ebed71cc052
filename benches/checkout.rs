//! Why dispatch checks a new worktree out with the git CLI: libgit2's checkout against
//! `git worktree add` on a generated repo of 10,000 files, side by side in one run.
//!
//!   cargo bench --bench checkout

// Tests and benchmarks start real programs their own way; the rule that every child goes
// through src/process.rs (clippy.toml) is the product's.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const FILES: usize = 10_000;
const RUNS: usize = 5;

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@localhost")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@localhost")
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo_dir = tmp.path().join("repo");
    for i in 0..FILES {
        let dir = repo_dir.join(format!("src/mod{:03}", i / 100));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let body = format!("// file {i}\npub fn f{i}() -> u32 {{ {i} }}\n").repeat(20);
        std::fs::write(dir.join(format!("file{i:05}.rs")), body).expect("write");
    }
    git(&repo_dir, &["init", "-q", "-b", "main"]);
    git(&repo_dir, &["add", "-A"]);
    git(&repo_dir, &["commit", "-q", "-m", "files"]);
    let repo = git2::Repository::open(&repo_dir).expect("open");
    let head = repo.head().unwrap().peel_to_commit().unwrap();

    let (mut cli, mut lib) = (Vec::new(), Vec::new());
    for run in 0..RUNS {
        let path = tmp.path().join(format!("cli-{run}"));
        let t = Instant::now();
        git(
            &repo_dir,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("cli-{run}"),
                path.to_str().unwrap(),
                "HEAD",
            ],
        );
        cli.push(t.elapsed());

        let path = tmp.path().join(format!("lib-{run}"));
        let t = Instant::now();
        let branch = repo.branch(&format!("lib-{run}"), &head, false).unwrap();
        let mut opts = git2::WorktreeAddOptions::new();
        opts.reference(Some(branch.get()));
        repo.worktree(&format!("lib-{run}"), &path, Some(&opts))
            .unwrap();
        lib.push(t.elapsed());
    }
    let (cli, lib) = (median(cli), median(lib));
    println!("new worktree of {FILES} files, median of {RUNS}:");
    println!(
        "  git worktree add (CLI)   {:8.1} ms",
        cli.as_secs_f64() * 1e3
    );
    println!(
        "  libgit2 worktree+checkout {:7.1} ms",
        lib.as_secs_f64() * 1e3
    );
    println!(
        "  libgit2 / CLI            {:8.2}x",
        lib.as_secs_f64() / cli.as_secs_f64()
    );
}
