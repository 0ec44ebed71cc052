//! The in-memory conflict check (git2 merge of the trees, no working tree touched) against
//! `git merge-tree --write-tree`, side by side on a generated repo of 10,000 files where
//! the session changed 200 files and the target 200 others. Target: at most 1.5x.
//!
//!   cargo bench --bench merge_check

// Tests and benchmarks start real programs their own way; the rule that every child goes
// through src/process.rs (clippy.toml) is the product's.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

use orchestra::git::Repo;

mod common;
use common::{file, generated_repo, git, median};

const FILES: usize = 10_000;
const CHANGED: usize = 200;
const RUNS: usize = 15;

fn main() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("repo");
    generated_repo(&dir, FILES);
    git(&dir, &["checkout", "-q", "-b", "session/bench"]);
    for i in (0..FILES).step_by(FILES / CHANGED).take(CHANGED) {
        std::fs::write(file(&dir, i), format!("// changed by the session {i}\n")).expect("write");
    }
    git(&dir, &["commit", "-q", "-am", "session work"]);
    git(&dir, &["checkout", "-q", "main"]);
    for i in (1..FILES).step_by(FILES / CHANGED).take(CHANGED) {
        std::fs::write(file(&dir, i), format!("// changed on main {i}\n")).expect("write");
    }
    git(&dir, &["commit", "-q", "-am", "main work"]);

    let repo = Repo::discover(&dir).expect("repo");
    let ours = repo.branch_tip("main").expect("main");
    let theirs = repo.branch_tip("session/bench").expect("branch");
    let (mut lib, mut cli) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let t = Instant::now();
        let conflicts = repo.conflicts(ours, theirs).expect("check");
        lib.push(t.elapsed());
        assert!(conflicts.is_empty());
        let t = Instant::now();
        git(
            &dir,
            &["merge-tree", "--write-tree", "main", "session/bench"],
        );
        cli.push(t.elapsed());
    }
    let (lib, cli) = (median(lib), median(cli));
    println!("conflict check, {FILES} files, {CHANGED} changed on each side, median of {RUNS}:");
    println!(
        "  git merge-tree --write-tree   {:8.1} ms",
        cli.as_secs_f64() * 1e3
    );
    println!(
        "  orchestra (git2, in memory)   {:8.1} ms",
        lib.as_secs_f64() * 1e3
    );
    println!(
        "  ratio                         {:8.2}x (target <= 1.5)",
        lib.as_secs_f64() / cli.as_secs_f64()
    );
}
