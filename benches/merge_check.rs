//! The in-memory conflict check (git2 merge of the trees, no working tree touched) against
//! `git merge-tree --write-tree`, side by side on a generated repo of 10,000 files where
//! the session changed 200 files and the target 200 others. Target: at most 1.5x.
//!
//!   cargo bench --bench merge_check

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use orchestra::git::Repo;

const FILES: usize = 10_000;
const CHANGED: usize = 200;
const RUNS: usize = 15;

fn git(dir: &Path, args: &[&str]) -> String {
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

fn file(dir: &Path, i: usize) -> std::path::PathBuf {
    dir.join(format!("src/mod{:03}/file{i:05}.rs", i / 100))
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("repo");
    for i in 0..FILES {
        let path = file(&dir, i);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(
            &path,
            format!("// file {i}\npub fn f{i}() -> u32 {{ {i} }}\n").repeat(20),
        )
        .expect("write");
    }
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "files"]);
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
