//! The one way orchestra runs a child process: argv (never a shell string), working
//! folder, environment, standard input, and a deadline on every call. At the deadline the
//! child is killed — its whole process group when it has one of its own — and the caller
//! gets a typed error naming the program and the time it had. Captured output is capped
//! (a program may print without end); a detached spawn serves notifications and background
//! refreshes. `std::process::Command::new` is forbidden elsewhere (clippy.toml): modules
//! above say which program and how long, this one says how.
//!
//! It is also the only module that calls `libc`, for the job control std has no word for:
//! handing the terminal to a child's process group and back, signalling a group, waiting
//! for a child's end without reaping it.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A deadline for a child that waits for a person (a popup, a pager): nobody is hurried,
/// yet a process nobody came back to for a day does not live on forever.
pub const A_PERSON: Duration = Duration::from_secs(24 * 3600);

/// What captured output may grow to before the program is stopped (`Head`) — far above
/// anything tmux or git print for orchestra, far below what would exhaust memory.
pub const OUTPUT_CAP: usize = 64 * 1024 * 1024;

/// How long the output of a child that ended may take to arrive: a grandchild that kept
/// the pipe open must not hold the caller.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// The same after a kill at the deadline, when what was printed is rarely wanted and a
/// pipe may stay open for long: a tmux client hands its stdout to the server, and a
/// stopped server holds it, unread, in its socket.
const KILLED_DRAIN_GRACE: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("could not run {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{program} did not finish within {}: it was killed", crate::duration::spell(*after))]
    TimedOut { program: String, after: Duration },
    #[error("{program} printed more than {} MiB: it was stopped", cap / (1024 * 1024))]
    TooMuchOutput { program: String, cap: usize },
}

impl ProcessError {
    /// Whether the program was not found (so the caller can say "install …").
    pub fn not_found(&self) -> bool {
        matches!(self, ProcessError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// The lint's one door to `std::process::Command`, for what cannot use [`Run`]: an
/// `exec` that replaces this process (nothing is left to wait), and tests' own setup.
#[allow(clippy::disallowed_methods)]
pub fn command(program: impl AsRef<OsStr>) -> std::process::Command {
    std::process::Command::new(program)
}

enum Input {
    Null,
    Bytes(Vec<u8>),
    Inherit,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sink {
    Capture,
    Null,
    Inherit,
}

/// Which end of a long output is kept.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// The start; more than the cap stops the program and fails the call.
    Head,
    /// The end (where an error usually is); the program runs on.
    Tail,
}

/// A child process to run once, to its end or its deadline.
pub struct Run {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Vec<(OsString, OsString)>,
    stdin: Input,
    stdout: Sink,
    stderr: Sink,
    merged: bool,
    deadline: Duration,
    cap: usize,
    keep: Keep,
    own_group: bool,
    term_grace: Option<Duration>,
    foreground: bool,
}

/// How a [`Run`] ended.
#[derive(Debug)]
pub struct Output {
    /// `None`: killed at the deadline.
    pub status: Option<ExitStatus>,
    pub stdout: Vec<u8>,
    /// Empty when stderr went with stdout ([`Run::merge_output`]).
    pub stderr: Vec<u8>,
    /// More was printed than was kept.
    pub truncated: bool,
}

impl Output {
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
}

impl Run {
    /// `program` (found on PATH unless it holds a `/`), stopped if still running after
    /// `deadline`. By default: stdin empty, stdout and stderr captured, up to
    /// [`OUTPUT_CAP`] each, SIGKILL at the deadline.
    pub fn new(program: impl AsRef<OsStr>, deadline: Duration) -> Run {
        Run {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            stdin: Input::Null,
            stdout: Sink::Capture,
            stderr: Sink::Capture,
            merged: false,
            deadline,
            cap: OUTPUT_CAP,
            keep: Keep::Head,
            own_group: false,
            term_grace: None,
            foreground: false,
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Run {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Run {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn cwd(mut self, dir: impl AsRef<Path>) -> Run {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Run {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    pub fn envs<K: AsRef<OsStr>, V: AsRef<OsStr>>(mut self, vars: &[(K, V)]) -> Run {
        self.env.extend(
            vars.iter()
                .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned())),
        );
        self
    }

    /// `bytes` on the child's stdin (written by a thread: a child that does not read
    /// cannot block the deadline).
    pub fn input(mut self, bytes: impl Into<Vec<u8>>) -> Run {
        self.stdin = Input::Bytes(bytes.into());
        self
    }

    /// The child reads this process's stdin (a terminal).
    pub fn stdin_inherit(mut self) -> Run {
        self.stdin = Input::Inherit;
        self
    }

    /// stdout and stderr go where ours go.
    pub fn inherit_output(mut self) -> Run {
        self.stdout = Sink::Inherit;
        self.stderr = Sink::Inherit;
        self
    }

    /// stdout and stderr are thrown away.
    pub fn quiet(mut self) -> Run {
        self.stdout = Sink::Null;
        self.stderr = Sink::Null;
        self
    }

    pub fn stderr_null(mut self) -> Run {
        self.stderr = Sink::Null;
        self
    }

    /// stdout and stderr captured together, in the order printed, into `stdout`.
    pub fn merge_output(mut self) -> Run {
        self.stdout = Sink::Capture;
        self.stderr = Sink::Capture;
        self.merged = true;
        self
    }

    /// Keeps at most `bytes` of each captured stream.
    pub fn cap(mut self, bytes: usize) -> Run {
        self.cap = bytes;
        self
    }

    /// Keeps the last `bytes` of captured output instead of failing past the cap.
    pub fn keep_tail(mut self, bytes: usize) -> Run {
        self.cap = bytes;
        self.keep = Keep::Tail;
        self
    }

    /// The child leads a process group of its own, and the deadline kills the group
    /// whole (what it started in the background included). A Ctrl-C on the terminal no
    /// longer reaches it, unless it is also [`Run::foreground`].
    pub fn own_group(mut self) -> Run {
        self.own_group = true;
        self
    }

    /// At the deadline: SIGTERM first, SIGKILL after `grace` (a setup may clean up).
    pub fn term_grace(mut self, grace: Duration) -> Run {
        self.term_grace = Some(grace);
        self
    }

    /// When this process is the terminal's foreground job, the child's group becomes it
    /// while it runs (a Ctrl-C stops it, it may read the terminal, a closed window hangs
    /// it up), and the terminal comes back after. Implies [`Run::own_group`].
    pub fn foreground(mut self) -> Run {
        self.foreground = true;
        self.own_group = true;
        self
    }

    fn name(&self) -> String {
        self.program.to_string_lossy().into_owned()
    }

    /// Runs to the end, or to the deadline: a killed child is `Ok` with no status, and
    /// output past the cap is `truncated`. `Err` only when it could not start.
    pub fn finish(self) -> Result<Output, ProcessError> {
        use std::os::unix::process::CommandExt;
        let program = self.name();
        let spawn_error = |source| ProcessError::Spawn {
            program: program.clone(),
            source,
        };
        let mut cmd = command(&self.program);
        cmd.args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        if self.own_group {
            cmd.process_group(0);
        }
        cmd.stdin(match self.stdin {
            Input::Null => Stdio::null(),
            Input::Bytes(_) => Stdio::piped(),
            Input::Inherit => Stdio::inherit(),
        });
        let sink = |s: Sink| match s {
            Sink::Capture => Stdio::piped(),
            Sink::Null => Stdio::null(),
            Sink::Inherit => Stdio::inherit(),
        };
        let mut merged_reader = None;
        if self.merged {
            let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
            let second = writer.try_clone().map_err(spawn_error)?;
            cmd.stdout(writer).stderr(second);
            merged_reader = Some(reader);
        } else {
            cmd.stdout(sink(self.stdout)).stderr(sink(self.stderr));
        }
        let spawned = cmd.spawn();
        // Our copies of a merged pipe's write end go with `cmd`: the reader sees the end
        // of the output once the child (and whatever it left holding the pipe) is gone.
        drop(cmd);
        let mut child = spawned.map_err(spawn_error)?;
        let foreground = self.foreground && terminal::ours();
        if foreground {
            terminal::hand_to(child.id());
        }
        if let (Input::Bytes(bytes), Some(mut stdin)) = (self.stdin, child.stdin.take()) {
            // A child that stops reading (a hung tmux) must not hold us past the deadline.
            std::thread::spawn(move || {
                let _ = stdin.write_all(&bytes);
            });
        }
        let (cap, keep) = (self.cap, self.keep);
        let stdout = merged_reader
            .map(|r| collect(r, cap, keep))
            .or_else(|| child.stdout.take().map(|r| collect(r, cap, keep)));
        let stderr = child.stderr.take().map(|r| collect(r, cap, keep));
        let group = self.own_group.then_some(child.id());
        let status =
            wait_bounded(&mut child, self.deadline, group, self.term_grace).map_err(spawn_error)?;
        if foreground {
            terminal::take_back();
        }
        let grace = match status {
            Some(_) => DRAIN_GRACE,
            None => KILLED_DRAIN_GRACE,
        };
        let (stdout, out_cut) = drained(stdout, grace);
        let (stderr, err_cut) = drained(stderr, grace);
        Ok(Output {
            status,
            stdout,
            stderr,
            truncated: out_cut || err_cut,
        })
    }

    /// Runs to the end; a deadline passed or output past the cap is an error.
    pub fn output(self) -> Result<Output, ProcessError> {
        let (program, deadline, cap, keep) = (self.name(), self.deadline, self.cap, self.keep);
        let output = self.finish()?;
        if output.status.is_none() {
            return Err(ProcessError::TimedOut {
                program,
                after: deadline,
            });
        }
        if output.truncated && keep == Keep::Head {
            return Err(ProcessError::TooMuchOutput { program, cap });
        }
        Ok(output)
    }

    /// [`Run::output`]'s status, for a child whose output is not captured.
    pub fn status(self) -> Result<ExitStatus, ProcessError> {
        self.output()
            .map(|o| o.status.expect("output() has a status"))
    }
}

type Collected = mpsc::Receiver<(Vec<u8>, bool)>;

/// Reads `reader` on a thread of its own, keeping `cap` bytes (its head or its tail).
/// Past the cap in `Head` mode the pipe is closed: the program stops on its next write.
fn collect(mut reader: impl Read + Send + 'static, cap: usize, keep: Keep) -> Collected {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept: Vec<u8> = Vec::new();
        let mut truncated = false;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    kept.extend_from_slice(&chunk[..n]);
                    if kept.len() > cap {
                        truncated = true;
                        match keep {
                            Keep::Head => {
                                kept.truncate(cap);
                                break;
                            }
                            // Drained in bulk, not per read: a long output stays linear.
                            Keep::Tail if kept.len() > 2 * cap.max(chunk.len()) => {
                                kept.drain(..kept.len() - cap);
                            }
                            Keep::Tail => {}
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if kept.len() > cap {
            kept.drain(..kept.len() - cap);
        }
        let _ = tx.send((kept, truncated));
    });
    rx
}

fn drained(rx: Option<Collected>, grace: Duration) -> (Vec<u8>, bool) {
    rx.and_then(|rx| rx.recv_timeout(grace).ok())
        .unwrap_or_default()
}

/// Waits for `child` until `deadline`; then kills it — its whole `group` when it leads
/// one (SIGTERM first when there is a `term_grace`, then SIGKILL) — and reaps it: `None`.
/// A helper thread blocks until the child ends, without reaping it (its id names the
/// group until the SIGKILL), so an end is seen at once, with no polling delay.
fn wait_bounded(
    child: &mut Child,
    deadline: Duration,
    group: Option<u32>,
    term_grace: Option<Duration>,
) -> std::io::Result<Option<ExitStatus>> {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        terminal::wait_exit(pid);
        let _ = tx.send(());
    });
    if rx.recv_timeout(deadline).is_ok() {
        return child.wait().map(Some);
    }
    match group {
        Some(group) => {
            if let Some(grace) = term_grace {
                terminal::signal_group(group, libc::SIGTERM);
                let _ = rx.recv_timeout(grace);
            }
            terminal::signal_group(group, libc::SIGKILL);
        }
        None => {
            if let Some(grace) = term_grace {
                terminal::signal_one(pid, libc::SIGTERM);
                if rx.recv_timeout(grace).is_ok() {
                    let _ = child.wait();
                    return Ok(None);
                }
            }
            let _ = child.kill();
        }
    }
    let _ = child.wait();
    Ok(None)
}

/// Starts `program` in the background and returns at once, never waiting for it: no
/// inherited pipes (a hook or a tmux `#()` job waits for its pipes to close), its own
/// process group (a job's end does not take it along), its output appended to `log` or
/// thrown away. `input`, if any, is its stdin (then closed): text that must not stand on
/// its command line, which every local user reads in `/proc/PID/cmdline`. No deadline
/// here: the children it is for are orchestra itself, whose every own child has one. A
/// thread reaps it, so a long-lived caller (`watch`) keeps no zombies.
pub fn spawn_detached(
    program: &Path,
    args: &[String],
    cwd: Option<&Path>,
    env: &[(&str, &Path)],
    log: Option<&Path>,
    input: Option<Vec<u8>>,
) -> Result<(), ProcessError> {
    use std::os::unix::process::CommandExt;
    let output = || -> Stdio {
        log.and_then(|path| crate::paths::open_log(path).ok())
            .map_or_else(Stdio::null, Stdio::from)
    };
    let mut cmd = command(program);
    cmd.args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(output())
        .stderr(output())
        .process_group(0);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().map_err(|source| ProcessError::Spawn {
        program: program.to_string_lossy().into_owned(),
        source,
    })?;
    // Written before returning, as the caller may exit at once (a hook) and take a
    // writing thread along; a few KiB fit in the pipe, so this does not wait for the
    // child. Closed once written: the child reads to its end.
    if let (Some(mut stdin), Some(bytes)) = (child.stdin.take(), input) {
        let _ = stdin.write_all(&bytes);
    }
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

/// From now on this process goes to its end whatever happens to its terminal: a hangup
/// (the popup it runs in closed over it), tmux's SIGTERM to a popup's command and Ctrl-C
/// do nothing (a merge the person said yes to finishes; only SIGKILL stops it, and
/// `doctor` settles what that leaves). A handler that does nothing rather than SIG_IGN:
/// children get their default dispositions back at exec. And the terminal stops being
/// this process's controlling one, so the children it starts from now on (git removing
/// the worktree) get no hangup either when it goes: a session of its own where it can
/// (a popup's shell leads the terminal's session and, as it dies, hangs up its foreground
/// group, children included), else the terminal let go (a session leader's letting go
/// sends that group one SIGHUP, handled here, while no child runs).
pub fn outlive_the_terminal() {
    extern "C" fn nothing(_: libc::c_int) {}
    for signal in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction filled with a handler that touches nothing; system
        // calls it interrupts restart (SA_RESTART).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = nothing as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
    // SAFETY: setsid takes no arguments and fails harmlessly for a group leader.
    if unsafe { libc::setsid() } != -1 {
        return;
    }
    for fd in 0..3 {
        // SAFETY: queries and an ioctl on our own standard descriptors.
        unsafe {
            if libc::isatty(fd) == 1 {
                libc::ioctl(fd, terminal::TIOCNOTTY);
                return;
            }
        }
    }
}

/// Job control: the few system calls std has no word for.
mod terminal {
    /// Lets go of the controlling terminal. libc names it for Linux and FreeBSD, not for
    /// macOS, whose <sys/ttycom.h> defines it as `_IO('t', 113)`.
    #[cfg(target_os = "macos")]
    pub const TIOCNOTTY: libc::c_ulong = 0x2000_7471;
    #[cfg(not(target_os = "macos"))]
    pub(super) use libc::TIOCNOTTY;

    /// Whether stdin is a terminal whose foreground job is this process's group.
    pub(super) fn ours() -> bool {
        // SAFETY: plain queries on fd 0 and this process; no memory is shared.
        unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
    }

    /// Makes process group `group` the terminal's foreground job, and wakes it in case
    /// it read the terminal (and stopped) before it was.
    pub(super) fn hand_to(group: u32) {
        let Ok(group) = libc::pid_t::try_from(group) else {
            return;
        };
        // SAFETY: as above; `group` is our child's own group, made at its spawn.
        unsafe {
            libc::tcsetpgrp(0, group);
            libc::kill(-group, libc::SIGCONT);
        }
    }

    /// Makes this process's group the foreground job again. Asking from the background
    /// would stop us with SIGTTOU: it is ignored for the call.
    pub(super) fn take_back() {
        // SAFETY: as above; the old disposition is put back at once.
        unsafe {
            let old = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
            libc::tcsetpgrp(0, libc::getpgrp());
            libc::signal(libc::SIGTTOU, old);
        }
    }

    /// Sends `signal` to every process of group `group` (never to group 0 or 1: that
    /// would be our own group, or everyone).
    pub(super) fn signal_group(group: u32, signal: libc::c_int) {
        let Ok(group) = libc::pid_t::try_from(group) else {
            return;
        };
        if group > 1 {
            // SAFETY: a signal to a process group our unreaped child leads.
            unsafe {
                libc::kill(-group, signal);
            }
        }
    }

    /// Sends `signal` to our unreaped child `pid`.
    pub(super) fn signal_one(pid: u32, signal: libc::c_int) {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return;
        };
        if pid > 1 {
            // SAFETY: a signal to our own unreaped child: its id cannot have been reused.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }

    /// Blocks until child `pid` has ended, without reaping it (std does that after).
    pub(super) fn wait_exit(pid: u32) {
        let pid: libc::id_t = pid;
        loop {
            // SAFETY: `info` is a zeroed struct the kernel fills; WNOWAIT leaves the
            // child to be reaped by std.
            let r = unsafe {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT)
            };
            if r == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn sh(script: &str, deadline: Duration) -> Run {
        Run::new("sh", deadline).arg("-c").arg(script)
    }

    #[test]
    fn a_run_gives_its_status_and_both_outputs_apart() {
        let out = sh("echo out; echo err >&2; exit 3", Duration::from_secs(10))
            .output()
            .unwrap();
        assert_eq!(out.status.and_then(|s| s.code()), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
        assert!(!out.success());
    }

    #[test]
    fn input_cwd_and_env_reach_the_child() {
        let dir = tempfile::tempdir().unwrap();
        let out = sh("cat; pwd; echo \"$ORCH_TEST\"", Duration::from_secs(10))
            .input(b"from-stdin\n".to_vec())
            .cwd(dir.path())
            .env("ORCH_TEST", "from-env")
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let real = dir.path().canonicalize().unwrap();
        assert_eq!(
            text,
            format!("from-stdin\n{}\nfrom-env\n", real.to_string_lossy())
        );
    }

    #[test]
    fn a_child_past_its_deadline_is_killed_and_named() {
        let started = Instant::now();
        let err = sh("sleep 30", Duration::from_millis(300))
            .output()
            .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(
            matches!(&err, ProcessError::TimedOut { program, after } if program == "sh" && *after == Duration::from_millis(300)),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "sh did not finish within 300ms: it was killed"
        );
    }

    #[test]
    fn a_child_that_does_not_read_its_input_does_not_hold_the_deadline() {
        // More than a pipe holds, to a child that never reads: the write must not block.
        let started = Instant::now();
        let err = sh("sleep 30", Duration::from_millis(300))
            .input(vec![b'x'; 4 * 1024 * 1024])
            .output()
            .unwrap_err();
        assert!(matches!(err, ProcessError::TimedOut { .. }), "{err:?}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn endless_output_stops_at_the_cap() {
        let started = Instant::now();
        let err = Run::new("yes", Duration::from_secs(20))
            .cap(100_000)
            .output()
            .unwrap_err();
        assert!(
            matches!(err, ProcessError::TooMuchOutput { cap: 100_000, .. }),
            "{err:?}"
        );
        // Stopped by its closed pipe, not by the deadline.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_tail_keeps_the_end_of_merged_output() {
        let out = sh(
            "yes 0123456789 | head -c 3000000; echo to-err >&2; echo THE-END",
            Duration::from_secs(20),
        )
        .merge_output()
        .keep_tail(64 * 1024)
        .output()
        .unwrap();
        assert!(out.truncated);
        assert!(out.stdout.len() <= 64 * 1024, "{}", out.stdout.len());
        assert!(out.stdout.ends_with(b"to-err\nTHE-END\n"));
    }

    #[test]
    fn a_missing_program_is_said_so() {
        let err = Run::new("no-such-program-here", Duration::from_secs(5))
            .output()
            .unwrap_err();
        assert!(err.not_found(), "{err:?}");
        assert!(err
            .to_string()
            .starts_with("could not run no-such-program-here: "));
    }

    #[test]
    fn a_group_is_killed_whole_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        // The grandchild ignores SIGTERM: only the SIGKILL to the group ends it.
        let script =
            "sh -c 'trap \"\" TERM; echo $$ > \"$1\"; while :; do sleep 1; done' g \"$1\" & wait";
        let started = Instant::now();
        let out = Run::new("sh", Duration::from_secs(1))
            .args(["-c", script, "s"])
            .arg(&pid_file)
            .own_group()
            .term_grace(Duration::from_millis(500))
            .finish()
            .unwrap();
        assert!(out.status.is_none());
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "{:?}",
            started.elapsed()
        );
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let gone = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            !Path::new(&format!("/proc/{}", pid.trim())).exists()
                || std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
                    .is_ok_and(|s| s.contains(") Z "))
        });
        assert!(gone, "the grandchild {pid} outlived its group's deadline");
    }

    #[test]
    fn a_detached_child_runs_on_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        spawn_detached(
            Path::new("sh"),
            &[
                "-c".into(),
                "echo \"$ORCH_TEST\"; cut -d' ' -f5 /proc/$$/stat; cat".into(),
            ],
            Some(dir.path()),
            &[("ORCH_TEST", Path::new("detached"))],
            Some(&log),
            Some(b"from stdin".to_vec()),
        )
        .unwrap();
        let text = (0..100)
            .find_map(|_| {
                std::thread::sleep(Duration::from_millis(50));
                std::fs::read_to_string(&log)
                    .ok()
                    .filter(|t| t.lines().count() >= 3)
            })
            .expect("the detached child wrote its log");
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("detached"));
        let group: u32 = lines.next().unwrap().trim().parse().unwrap();
        // SAFETY: a plain query of this process's group.
        let ours = unsafe { libc::getpgrp() } as u32;
        assert_ne!(group, ours, "the detached child shares our process group");
        assert_eq!(lines.next(), Some("from stdin"), "{text}");
    }
}
