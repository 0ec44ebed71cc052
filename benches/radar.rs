//! The conflict radar at scale, side by side in one run: 32 live sessions (real
//! `orchestra dispatch`, real worktrees and tmux windows) on a generated repo of 10,000
//! files, each with 20 changed files, some overlapping (committed and uncommitted), the
//! target moved too. Measured against one in-memory merge check of two sessions:
//!   - the full first pass (every pair merged),
//!   - a pass with nothing moved (every pair from the record),
//!   - the incremental pass after one branch moves (the moved session against the others
//!     and its target: at most 32 merges; target: at most 40x one merge check),
//!   - the status line with the radar off and on (target: ratio <= 1.05).
//!
//!   cargo bench --bench radar          (BENCH_SESSIONS, BENCH_FILES to scale it down)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use orchestra::git::Repo;
use orchestra::state::Store;

mod common;
use common::{file, generated_repo, git, median};

const CHANGED: usize = 20;
/// Sessions 2j and 2j+1 (j below this) both change one more file, differently.
const OVERLAPPING_PAIRS: usize = 4;
const RUNS: usize = 15;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Changes the first line of file `i` in `dir`.
fn change(dir: &Path, i: usize, by: &str) {
    let path = file(dir, i);
    let text = std::fs::read_to_string(&path).expect("read");
    let rest = text.split_once('\n').map_or("", |(_, rest)| rest);
    std::fs::write(&path, format!("// changed by {by}\n{rest}")).expect("write");
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

struct World {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    home: PathBuf,
    socket: PathBuf,
}

impl World {
    fn orchestra(&self, cwd: &Path, args: &[&str]) -> Output {
        let out = Command::new(env!("CARGO_BIN_EXE_orchestra"))
            .args(args)
            .current_dir(cwd)
            .env("ORCHESTRA_HOME", &self.home)
            .env("ORCHESTRA_TMUX_SOCKET", &self.socket)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .output()
            .expect("orchestra runs");
        assert!(
            out.status.success(),
            "orchestra {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn tmux(&self, args: &[&str]) {
        let ok = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .status()
            .expect("tmux runs")
            .success();
        assert!(ok, "tmux {args:?}");
    }

    fn worktree(&self, n: usize) -> PathBuf {
        self.repo
            .parent()
            .expect("parent")
            .join("repo.worktrees")
            .join(label(n))
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // This benchmark's own server only, by its own socket.
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}

fn label(n: usize) -> String {
    format!("s{n:02}")
}

/// The files session `n` changes: 20 of its own (no other session's).
fn own_files(n: usize) -> impl Iterator<Item = usize> {
    (0..CHANGED).map(move |k| n * 300 + k * 13 + 1)
}

fn main() {
    let sessions = env_usize("BENCH_SESSIONS", 32).clamp(2, 32);
    let files = env_usize("BENCH_FILES", 10_000).max(32 * 300);
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().canonicalize().expect("canonical");
    let world = World {
        repo: root.join("repo"),
        home: root.join("home"),
        socket: root.join("tmux.sock"),
        _tmp: tmp,
    };
    let repo_dir = world.repo.clone();
    generated_repo(&repo_dir, files);
    world.tmux(&["-f", "/dev/null", "new-session", "-d", "-s", "bench"]);

    eprintln!("setting up {sessions} sessions on {files} files (real dispatch: a worktree each)…");
    for n in 0..sessions {
        world.orchestra(
            &repo_dir,
            &[
                "dispatch",
                &label(n),
                "--agent",
                "sleep 600",
                "--kind",
                "generic",
            ],
        );
        let wt = world.worktree(n);
        for i in own_files(n) {
            change(&wt, i, &label(n));
        }
        if n / 2 < OVERLAPPING_PAIRS {
            change(&wt, files - 1 - n / 2, &label(n));
        }
        git(&wt, &["commit", "-q", "-am", "session work"]);
    }
    // Uncommitted work: the last two sessions collide on a file neither committed.
    for n in [sessions - 2, sessions - 1] {
        change(
            &world.worktree(n),
            files - 20,
            &format!("{} (uncommitted)", label(n)),
        );
    }
    // The target moves too, into a file session 1 changed.
    change(&repo_dir, own_files(1).next().expect("a file"), "main");
    git(&repo_dir, &["commit", "-q", "-am", "main work"]);

    let repo = Repo::discover(&repo_dir).expect("repo");
    let store = Store::open(&world.home).expect("store");
    let live = store.sessions(None, false).expect("sessions");
    assert_eq!(live.len(), sessions);

    // One in-memory merge check (what `merge` does), of two sessions' branches.
    let a = repo.branch_tip("session/s00").expect("s00");
    let b = repo.branch_tip("session/s02").expect("s02");
    let mut check = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let paths = repo.conflicts(a, b).expect("check");
        check.push(t.elapsed());
        assert!(paths.is_empty());
    }
    let check = median(check);

    // What every pass pays before any merge: each session's work read (branch tip, and
    // its worktree's status and uncommitted files).
    let mut reading = Vec::new();
    for _ in 0..5 {
        let scratch = repo.scratch().expect("scratch");
        let t = Instant::now();
        for s in &live {
            scratch
                .worktree_side(&s.branch, Path::new(&s.worktree))
                .expect("side");
        }
        reading.push(t.elapsed());
    }
    let reading = median(reading);

    let t = Instant::now();
    let first = orchestra::radar::scan(&store, &repo, &live).expect("first pass");
    let first_time = t.elapsed();
    let pairs = sessions * (sessions - 1) / 2 + sessions;
    assert_eq!(first.pairs, pairs);
    assert_eq!(first.merged, pairs, "the first pass merges every pair");

    let mut unchanged = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let scan = orchestra::radar::scan(&store, &repo, &live).expect("pass");
        unchanged.push(t.elapsed());
        assert_eq!(scan.merged, 0, "nothing moved: nothing merged");
    }
    let unchanged = median(unchanged);

    let mut incremental = Vec::new();
    let mut merged = Vec::new();
    for (round, n) in (0..sessions - 2).step_by(4).take(5).enumerate() {
        let wt = world.worktree(n);
        change(&wt, n * 300 + 280 + round, &format!("{} again", label(n)));
        git(&wt, &["commit", "-q", "-am", "more session work"]);
        let t = Instant::now();
        let scan = orchestra::radar::scan(&store, &repo, &live).expect("pass");
        incremental.push(t.elapsed());
        merged.push(scan.merged);
    }
    let incremental = median(incremental);
    let most_merged = merged.iter().copied().max().unwrap_or(0);
    assert!(
        most_merged <= sessions,
        "an incremental pass merged {most_merged} pairs"
    );

    // The status line, radar off and on, alternating blocks in one run. Each block
    // starts with a refresh (a fresh status cache); the radar's file is fresh too.
    world.orchestra(&repo_dir, &["radar"]);
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for block in 0..20 {
        let radar_on = block % 2 == 1;
        world.tmux(&[
            "set-option",
            "-g",
            "@orchestra-radar",
            if radar_on { "on" } else { "off" },
        ]);
        world.orchestra(&repo_dir, &["refresh"]);
        for _ in 0..15 {
            let t = Instant::now();
            let out = world.orchestra(&repo_dir, &["status-line"]);
            let took = t.elapsed();
            let shown = String::from_utf8_lossy(&out.stdout).contains('⚠');
            assert_eq!(shown, radar_on, "the radar's segment shows only when on");
            if radar_on {
                on.push(took);
            } else {
                off.push(took);
            }
        }
    }
    let (off, on) = (median(off), median(on));

    let conflicts = first.conflicts.len();
    println!(
        "conflict radar, {sessions} sessions x {CHANGED} changed files on {files} files ({conflicts} conflicting pairs):"
    );
    println!(
        "  one in-memory merge check (two sessions)   {:8.1} ms",
        ms(check)
    );
    println!(
        "  reading the {sessions} sessions' work             {:8.1} ms  (worktree status, uncommitted files)",
        ms(reading)
    );
    println!(
        "  full first pass ({pairs} merges)            {:8.1} ms  {:6.1}x a check",
        ms(first_time),
        first_time.as_secs_f64() / check.as_secs_f64()
    );
    println!(
        "  pass with nothing moved (0 merges)         {:8.1} ms  {:6.1}x a check",
        ms(unchanged),
        unchanged.as_secs_f64() / check.as_secs_f64()
    );
    println!(
        "  incremental pass, one branch moved ({most_merged} merges) {:8.1} ms  {:6.1}x a check (target <= 40x, <= {sessions} merges)",
        ms(incremental),
        incremental.as_secs_f64() / check.as_secs_f64()
    );
    println!(
        "  status line, radar off / on                {:8.2} / {:.2} ms  ratio {:.3} (target <= 1.05)",
        ms(off),
        ms(on),
        on.as_secs_f64() / off.as_secs_f64()
    );
}
