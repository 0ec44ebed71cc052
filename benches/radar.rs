//! The conflict radar at scale, side by side in one run: 32 live sessions (real
//! `orchestra dispatch`, real worktrees and tmux windows) on a generated repo of 10,000
//! files, each with 20 changed files, some overlapping (committed and uncommitted), the
//! target moved too. Measured against one in-memory merge check of two sessions:
//!   - the full first pass (every pair merged),
//!   - a pass with nothing moved (every pair from the record),
//!   - the incremental pass after one branch moves, as the background runs it (the moved
//!     session's worktree read, it checked against the others and its target: at most 32
//!     pairs; target: at most 40x one merge check), and with every worktree read,
//!   - the status line with the radar off and on (target: ratio <= 1.05).
//!
//!   cargo bench --bench radar          (BENCH_SESSIONS, BENCH_FILES to scale it down)

// Tests and benchmarks start real programs their own way; the rule that every child goes
// through src/process.rs (clippy.toml) is the product's.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use orchestra::git::Repo;
use orchestra::radar::Reader;
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
        self.orchestra_at(&self.home, cwd, args)
    }

    /// [`World::orchestra`] with another ORCHESTRA_HOME.
    fn orchestra_at(&self, home: &Path, cwd: &Path, args: &[&str]) -> Output {
        let out = Command::new(env!("CARGO_BIN_EXE_orchestra"))
            .args(args)
            .current_dir(cwd)
            .env("ORCHESTRA_HOME", home)
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

    let home = world.home.clone();
    // A pass as the background runs it (`hinted`: worktrees read only when they may have
    // changed), or as `orchestra conflicts` does (every worktree read).
    let pass = |full: bool| {
        let t = Instant::now();
        let mut reader = if full {
            Reader::full(&home)
        } else {
            Reader::hinted(&home)
        };
        let scan = orchestra::radar::scan(&store, &repo, &live, &mut reader).expect("pass");
        reader.save(&home);
        (t.elapsed(), scan)
    };
    // What the status line does before it starts a pass: a refresh (each window's output).
    let refresh = || {
        world.orchestra(&repo_dir, &["refresh"]);
    };

    let (first_time, first) = pass(true);
    let pairs = sessions * (sessions - 1) / 2 + sessions;
    assert_eq!(first.pairs, pairs);
    assert_eq!(first.checked, pairs, "the first pass checks every pair");
    // The windows' last output (their start) a second behind the reads.
    std::thread::sleep(Duration::from_millis(1100));

    let mut unchanged = Vec::new();
    for _ in 0..5 {
        refresh();
        let (took, scan) = pass(false);
        unchanged.push(took);
        assert_eq!(scan.checked, 0, "nothing moved: nothing checked");
        assert_eq!(scan.read, 0, "nothing moved: no worktree read");
    }
    let unchanged = median(unchanged);

    let moved = |round: usize, n: usize| {
        let wt = world.worktree(n);
        change(&wt, n * 300 + 280 + round, &format!("{} again", label(n)));
        git(&wt, &["commit", "-q", "-am", "more session work"]);
    };
    let (mut incremental, mut checked, mut merged, mut read) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (round, n) in (0..sessions - 2).step_by(4).take(5).enumerate() {
        moved(round, n);
        refresh();
        let (took, scan) = pass(false);
        incremental.push(took);
        checked.push(scan.checked);
        merged.push(scan.merged);
        read.push(scan.read);
    }
    let incremental = median(incremental);
    let most_checked = checked.iter().copied().max().unwrap_or(0);
    let most_merged = merged.iter().copied().max().unwrap_or(0);
    let most_read = read.iter().copied().max().unwrap_or(0);
    assert!(
        most_checked <= sessions,
        "an incremental pass checked {most_checked} pairs"
    );
    let mut incremental_full = Vec::new();
    for (round, n) in (1..sessions - 2).step_by(4).take(3).enumerate() {
        moved(round + 10, n);
        let (took, scan) = pass(true);
        incremental_full.push(took);
        assert!(scan.checked <= sessions);
    }
    let incremental_full = median(incremental_full);

    // The status line, radar off and on, run for run in one run: a second home with
    // the same record has the radar off (its status cache, refreshed with the option
    // off, says so); before each pair both caches are refreshed, so both runs read a
    // fresh cache, as the status line does between refreshes. The radar's file is fresh.
    world.orchestra(&repo_dir, &["radar"]);
    drop(store);
    let home_off = world.home.with_file_name("home-off");
    std::fs::create_dir_all(&home_off).expect("home");
    for name in ["state.db", "state.db-wal", "state.db-shm"] {
        let _ = std::fs::copy(world.home.join(name), home_off.join(name));
    }
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for pair in 0..100 {
        for (mode, home) in [("off", &home_off), ("on", &world.home)] {
            world.tmux(&["set-option", "-g", "@orchestra-radar", mode]);
            world.orchestra_at(home, &repo_dir, &["refresh"]);
        }
        // Every other pair the other way round: whatever the second run pays, both pay.
        let order = if pair % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for radar_on in order {
            let home = if radar_on { &world.home } else { &home_off };
            let t = Instant::now();
            let out = world.orchestra_at(home, &repo_dir, &["status-line"]);
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
        "  full first pass ({pairs} pairs, {} merged)    {:8.1} ms  {:6.1}x a check",
        first.merged,
        ms(first_time),
        first_time.as_secs_f64() / check.as_secs_f64()
    );
    println!(
        "  pass with nothing moved (0 read, 0 checked) {:8.1} ms  {:6.1}x a check",
        ms(unchanged),
        unchanged.as_secs_f64() / check.as_secs_f64()
    );
    println!(
        "  incremental pass, one branch moved         {:8.1} ms  {:6.1}x a check (target <= 40x)",
        ms(incremental),
        incremental.as_secs_f64() / check.as_secs_f64()
    );
    println!(
        "    ({most_read} worktree read, {most_checked} pairs checked (target <= {sessions}), {most_merged} merged, at most)"
    );
    println!(
        "  the same, every worktree read (`conflicts`) {:8.1} ms  {:6.1}x a check",
        ms(incremental_full),
        incremental_full.as_secs_f64() / check.as_secs_f64()
    );
    println!(
        "  status line, radar off / on                {:8.2} / {:.2} ms  ratio {:.3} (target <= 1.05)",
        ms(off),
        ms(on),
        on.as_secs_f64() / off.as_secs_f64()
    );
}
