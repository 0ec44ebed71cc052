//! The ONLY module that uses ssh2: reaching remote hosts. Host keys are checked against
//! `~/.ssh/known_hosts` (unknown or changed keys are refused, never accepted silently);
//! authentication tries the configured identity, then the ssh agent, then the default
//! keys; `~/.ssh/config` decides where a host really is. [`RemoteTmux`] carries tmux
//! commands over one SSH channel per call, so the tmux module's batching serves remote
//! hosts exactly as local ones. A host with `transport = "openssh"` is reached through
//! an OpenSSH master connection instead (openssh.rs: `ssh` run through process.rs); both
//! give the same [`Connection::exec`].

pub mod config;
pub mod known_hosts;
pub mod openssh;

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::tmux::{TmuxError, Transport};
pub use config::Target;
use known_hosts::Verdict;

pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// The most output (stdout and stderr together) one command on a host may send. The
/// largest thing orchestra asks for is a refresh: every session's screen, tens of KiB
/// even with long captures, or a full scrollback for `collect` (a few MiB). 16 MiB is
/// well above both, and small enough that every host of a refresh can be held at once;
/// a host that sends more is broken or hostile, and its answer is refused.
pub const MAX_EXEC_OUTPUT: usize = 16 << 20;

/// How long one wait for stdout lasts before stderr is looked at again.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// How long closing a channel after a failed command may wait for the host.
const CLEANUP_GRACE: Duration = Duration::from_millis(500);

/// ssh's exit status for its own failure (and the status an exec reports when it has none).
pub const SSH_FAILED: i32 = 255;

/// How orchestra reaches a host (the manifest's `transport`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// libssh2 in this process, logging in by key (the default).
    #[default]
    Ssh2,
    /// `ssh` over a master connection `orchestra connect` opened.
    OpenSsh,
}

/// A host as the manifest names it.
#[derive(Debug, Clone)]
pub struct HostSpec {
    pub name: String,
    /// `user@host:port`, user and port optional; `host` may be a `~/.ssh/config` alias.
    pub address: String,
    /// Tried before the agent and the default keys.
    pub identity: Option<PathBuf>,
    pub connect_timeout: Duration,
    pub command_timeout: Duration,
    pub transport: TransportKind,
    /// The ssh_config(5) file OpenSSH reads instead of ~/.ssh/config (openssh only).
    pub ssh_config: Option<PathBuf>,
}

impl HostSpec {
    /// A host named by its address alone (`connect user@host`): reached through OpenSSH
    /// with its own defaults.
    pub fn for_address(address: &str) -> HostSpec {
        HostSpec {
            name: address.to_string(),
            address: address.to_string(),
            identity: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            transport: TransportKind::OpenSsh,
            ssh_config: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("host {host}: {address:?} is not an address (user@host:port)")]
    BadAddress { host: String, address: String },
    #[error("host {host} ({target}) is unreachable: {message}")]
    Unreachable {
        host: String,
        target: String,
        message: String,
    },
    /// The host shows a key known_hosts does not list.
    #[error("{message}")]
    UnknownHostKey { host: String, message: String },
    /// The host shows a different key than known_hosts lists: possibly an attack.
    #[error("{message}")]
    ChangedHostKey { host: String, message: String },
    #[error("{message}")]
    RevokedHostKey { host: String, message: String },
    #[error("host {host}: no key was accepted for user {user} (tried {tried})")]
    AuthFailed {
        host: String,
        user: String,
        tried: String,
    },
    #[error("host {host}: {what} timed out after {}", crate::duration::spell(*.after))]
    Timeout {
        host: String,
        what: String,
        after: Duration,
    },
    #[error("host {host} sent more than {limit_mib} MiB for one command: its answer was refused")]
    TooMuchOutput { host: String, limit_mib: usize },
    #[error("host {host}: {what}: {message}")]
    Ssh {
        host: String,
        what: String,
        message: String,
    },
    /// An openssh host whose master connection does not answer.
    #[error("not connected — orchestra connect {host}")]
    NotConnected { host: String },
    #[error(
        "the master connection's socket {} is {length} bytes, more than a Unix socket \
         path holds ({limit} with ssh's temporary suffix): set a shorter ORCHESTRA_HOME",
        path.display()
    )]
    SocketPathTooLong {
        path: PathBuf,
        length: usize,
        limit: usize,
    },
    #[error("cannot write {path}: {source}")]
    KnownHostsWrite {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl RemoteError {
    /// Whether the host could not be reached at all (as opposed to refused or failing).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            RemoteError::Unreachable { .. }
                | RemoteError::Timeout { .. }
                | RemoteError::NotConnected { .. }
        )
    }
}

/// What a command run on a host gave back.
#[derive(Debug, Clone)]
pub struct ExecOutput {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The key a host showed, and what known_hosts says of it.
pub struct Scan {
    /// The host's name in the manifest.
    pub name: String,
    pub target: Target,
    pub key: Vec<u8>,
    pub verdict: Verdict,
    pub known_hosts: PathBuf,
    session: ssh2::Session,
}

impl Scan {
    pub fn fingerprint(&self) -> String {
        known_hosts::fingerprint(&self.key)
    }

    pub fn key_type(&self) -> String {
        known_hosts::key_type(&self.key).unwrap_or_else(|| "unknown".into())
    }

    fn target_text(&self) -> String {
        format!(
            "{}@{}:{}",
            self.target.user, self.target.hostname, self.target.port
        )
    }
}

/// An authenticated connection to a host, whichever its transport. Clones share the one
/// SSH session (or master).
#[derive(Clone)]
pub struct Connection {
    pub name: String,
    link: Link,
    command_timeout: Duration,
}

#[derive(Clone)]
enum Link {
    Ssh2 {
        target: Target,
        session: ssh2::Session,
    },
    OpenSsh(openssh::Master),
}

fn user_home() -> PathBuf {
    PathBuf::from(crate::paths::non_empty_env("HOME").unwrap_or_else(|| "/".into()))
}

fn local_user() -> String {
    crate::paths::non_empty_env("USER")
        .or_else(|| crate::paths::non_empty_env("LOGNAME"))
        .unwrap_or_else(|| "root".into())
}

/// `~/.ssh/known_hosts`.
pub fn known_hosts_path() -> PathBuf {
    user_home().join(".ssh").join("known_hosts")
}

/// Resolves `spec` through `~/.ssh/config`.
pub fn resolve(spec: &HostSpec) -> Result<Target, RemoteError> {
    let home = user_home();
    let config = std::fs::read_to_string(home.join(".ssh").join("config")).unwrap_or_default();
    config::resolve(&spec.address, &config, &home, &local_user()).ok_or_else(|| {
        RemoteError::BadAddress {
            host: spec.name.clone(),
            address: spec.address.clone(),
        }
    })
}

fn millis(d: Duration) -> u32 {
    d.as_millis().clamp(1, u128::from(u32::MAX)) as u32
}

/// libssh2's code for a blocking call that ran out of time.
const LIBSSH2_ERROR_TIMEOUT: i32 = -9;

fn ssh_error(spec_name: &str, what: &str, timeout: Duration, e: ssh2::Error) -> RemoteError {
    if e.code() == ssh2::ErrorCode::Session(LIBSSH2_ERROR_TIMEOUT) {
        return RemoteError::Timeout {
            host: spec_name.to_string(),
            what: what.to_string(),
            after: timeout,
        };
    }
    RemoteError::Ssh {
        host: spec_name.to_string(),
        what: what.to_string(),
        message: e.message().to_string(),
    }
}

/// Host key algorithms to offer, those known_hosts already lists for the host first (so
/// a host known by its RSA key is not asked for a new ed25519 one and refused).
fn host_key_preference(known_types: &[String]) -> String {
    const ALL: &[&str] = &[
        "ssh-ed25519",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "rsa-sha2-512",
        "rsa-sha2-256",
        "ssh-rsa",
    ];
    let mut order: Vec<&str> = Vec::new();
    for t in known_types {
        let algorithms: &[&str] = match t.as_str() {
            "ssh-rsa" => &["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"],
            other => match ALL.iter().find(|a| **a == other) {
                Some(a) => std::slice::from_ref(a),
                None => &[],
            },
        };
        for a in algorithms {
            if !order.contains(a) {
                order.push(a);
            }
        }
    }
    for a in ALL {
        if !order.contains(a) {
            order.push(a);
        }
    }
    order.join(",")
}

/// Connects and reads the host's key, without judging it or logging in.
pub fn scan(spec: &HostSpec) -> Result<Scan, RemoteError> {
    let target = resolve(spec)?;
    let target_text = format!("{}@{}:{}", target.user, target.hostname, target.port);
    let unreachable = |message: String| RemoteError::Unreachable {
        host: spec.name.clone(),
        target: target_text.clone(),
        message,
    };
    let addresses: Vec<_> = (target.hostname.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| unreachable(e.to_string()))?
        .collect();
    let mut last = String::from("no address");
    let mut tcp = None;
    for address in addresses {
        match TcpStream::connect_timeout(&address, spec.connect_timeout) {
            Ok(stream) => {
                tcp = Some(stream);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                return Err(RemoteError::Timeout {
                    host: spec.name.clone(),
                    what: format!("connecting to {target_text}"),
                    after: spec.connect_timeout,
                })
            }
            Err(e) => last = e.to_string(),
        }
    }
    let tcp = tcp.ok_or_else(|| unreachable(last))?;
    let known_hosts = known_hosts_path();
    let known = std::fs::read_to_string(&known_hosts).unwrap_or_default();
    let mut session = ssh2::Session::new()
        .map_err(|e| ssh_error(&spec.name, "starting ssh", spec.connect_timeout, e))?;
    session.set_tcp_stream(tcp);
    session.set_timeout(millis(spec.connect_timeout));
    let types = known_hosts::known_types(&known, &target.hostname, target.port);
    let _ = session.method_pref(ssh2::MethodType::HostKey, &host_key_preference(&types));
    session.handshake().map_err(|e| {
        ssh_error(
            &spec.name,
            &format!("ssh handshake with {target_text}"),
            spec.connect_timeout,
            e,
        )
    })?;
    let key = session
        .host_key()
        .map(|(k, _)| k.to_vec())
        .ok_or_else(|| RemoteError::Ssh {
            host: spec.name.clone(),
            what: "reading the host key".into(),
            message: "the server showed none".into(),
        })?;
    let verdict = known_hosts::check(&known, &target.hostname, target.port, &key);
    Ok(Scan {
        name: spec.name.clone(),
        target,
        key,
        verdict,
        known_hosts,
        session,
    })
}

/// Connects, checks the host key and logs in; for an openssh host, finds its master
/// connection answering (never logs in itself: that is `orchestra connect`).
pub fn connect(spec: &HostSpec) -> Result<Connection, RemoteError> {
    if spec.transport == TransportKind::OpenSsh {
        let home = crate::paths::orchestra_home().map_err(|e| RemoteError::Ssh {
            host: spec.name.clone(),
            what: "finding the master connection".into(),
            message: e.to_string(),
        })?;
        let master = openssh::Master::new(&home, spec)?;
        if !master.is_live(spec.connect_timeout) {
            return Err(RemoteError::NotConnected {
                host: spec.name.clone(),
            });
        }
        return Ok(Connection {
            name: spec.name.clone(),
            link: Link::OpenSsh(master),
            command_timeout: spec.command_timeout,
        });
    }
    let scan = scan(spec)?;
    match &scan.verdict {
        Verdict::Known => {}
        Verdict::Unknown { other_types } => {
            let others = if other_types.is_empty() {
                String::new()
            } else {
                format!(
                    " (known_hosts lists it only with {})",
                    other_types.join(", ")
                )
            };
            let fingerprint = scan.fingerprint();
            return Err(RemoteError::UnknownHostKey {
                host: spec.name.clone(),
                message: format!(
                    "host {host} ({target}) is not in {known_hosts}: it shows a {key_type} \
                     key {fingerprint}{others}. If that is its key, run: orchestra hosts trust \
                     {host} --fingerprint {fingerprint}",
                    host = spec.name,
                    target = scan.target_text(),
                    known_hosts = scan.known_hosts.display(),
                    key_type = scan.key_type(),
                ),
            });
        }
        Verdict::Changed { line } => return Err(changed_key(&spec.name, &scan, *line)),
        Verdict::Revoked { line } => return Err(revoked_key(&spec.name, &scan, *line)),
    }
    authenticate(&scan.session, spec, &scan.target)?;
    scan.session.set_timeout(millis(spec.command_timeout));
    Ok(Connection {
        name: spec.name.clone(),
        link: Link::Ssh2 {
            target: scan.target,
            session: scan.session,
        },
        command_timeout: spec.command_timeout,
    })
}

/// Adds the key `scan` saw to known_hosts. Refuses a changed or revoked key, and a key
/// whose fingerprint is not `expected` when one is given. Returns false when it was
/// already there.
pub fn trust(scan: &Scan, expected: Option<&str>) -> Result<bool, RemoteError> {
    match &scan.verdict {
        Verdict::Known => return Ok(false),
        Verdict::Changed { line } => return Err(changed_key(&scan.name, scan, *line)),
        Verdict::Revoked { line } => return Err(revoked_key(&scan.name, scan, *line)),
        Verdict::Unknown { .. } => {}
    }
    if let Some(expected) = expected {
        if expected.trim() != scan.fingerprint() {
            return Err(RemoteError::Ssh {
                host: scan.target.hostname.clone(),
                what: "trusting its key".into(),
                message: format!(
                    "it shows {}, not the {} you named: nothing was trusted",
                    scan.fingerprint(),
                    expected.trim()
                ),
            });
        }
    }
    let line = known_hosts::line_for(&scan.target.hostname, scan.target.port, &scan.key)
        .ok_or_else(|| RemoteError::Ssh {
            host: scan.target.hostname.clone(),
            what: "trusting its key".into(),
            message: "the key is malformed".into(),
        })?;
    append_line(&scan.known_hosts, &line)?;
    Ok(true)
}

fn changed_key(host: &str, scan: &Scan, line: usize) -> RemoteError {
    RemoteError::ChangedHostKey {
        host: host.to_string(),
        message: format!(
            "HOST KEY CHANGED for {host} ({}): it now shows {} key {}, not the one in {} \
             line {line}. Someone may be intercepting the connection; orchestra will not \
             connect. If the change is expected, remove the old line (ssh-keygen -R '{}') and \
             run: orchestra hosts trust {host}",
            scan.target_text(),
            scan.key_type(),
            scan.fingerprint(),
            scan.known_hosts.display(),
            known_hosts::host_entry_name(&scan.target.hostname, scan.target.port),
        ),
    }
}

fn revoked_key(host: &str, scan: &Scan, line: usize) -> RemoteError {
    RemoteError::RevokedHostKey {
        host: host.to_string(),
        message: format!(
            "host {host} ({}): its key {} is marked @revoked in {} line {line}",
            scan.target_text(),
            scan.fingerprint(),
            scan.known_hosts.display()
        ),
    }
}

fn append_line(path: &Path, line: &str) -> Result<(), RemoteError> {
    let write = |source| RemoteError::KnownHostsWrite {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        if !dir.exists() {
            std::fs::create_dir_all(dir).map_err(write)?;
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        }
    }
    let existing = std::fs::read(path).unwrap_or_default();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(write)?;
    let mut text = String::new();
    if !existing.is_empty() && !existing.ends_with(b"\n") {
        text.push('\n');
    }
    text.push_str(line);
    text.push('\n');
    file.write_all(text.as_bytes()).map_err(write)
}

/// The configured identity, then the agent, then the default keys.
fn authenticate(
    session: &ssh2::Session,
    spec: &HostSpec,
    target: &Target,
) -> Result<(), RemoteError> {
    let user = target.user.as_str();
    let mut tried: Vec<String> = Vec::new();
    let mut configured: Vec<PathBuf> = spec.identity.iter().cloned().collect();
    configured.extend(target.identity_files.iter().cloned());
    let try_key = |key: &Path, tried: &mut Vec<String>| -> bool {
        if !key.is_file() {
            tried.push(format!("{} (missing)", key.display()));
            return false;
        }
        let public = PathBuf::from(format!("{}.pub", key.display()));
        let ok = session
            .userauth_pubkey_file(
                user,
                public.is_file().then_some(public.as_path()),
                key,
                None,
            )
            .is_ok();
        if !ok {
            tried.push(key.display().to_string());
        }
        ok
    };
    for key in &configured {
        if try_key(key, &mut tried) {
            return Ok(());
        }
    }
    if crate::paths::non_empty_env("SSH_AUTH_SOCK").is_some() {
        if let Ok(mut agent) = session.agent() {
            if agent.connect().is_ok() && agent.list_identities().is_ok() {
                for identity in agent.identities().unwrap_or_default() {
                    if agent.userauth(user, &identity).is_ok() {
                        return Ok(());
                    }
                }
            }
            tried.push("the ssh agent".into());
        }
    }
    let ssh_dir = user_home().join(".ssh");
    for name in ["id_ed25519", "id_ecdsa", "id_rsa"] {
        let key = ssh_dir.join(name);
        if key.is_file() && !configured.contains(&key) && try_key(&key, &mut tried) {
            return Ok(());
        }
    }
    if tried.is_empty() {
        tried.push("no keys: none configured, no agent, no ~/.ssh/id_*".into());
    }
    Err(RemoteError::AuthFailed {
        host: spec.name.clone(),
        user: user.to_string(),
        tried: tried.join(", "),
    })
}

impl Connection {
    /// Runs `command` (a shell command line on the host), feeding it `input`, and gives
    /// it at most `timeout` (default: the host's command timeout) in total, however the
    /// host paces its output, and at most [`MAX_EXEC_OUTPUT`] bytes of output.
    pub fn exec(
        &self,
        command: &str,
        input: Option<&[u8]>,
        timeout: Option<Duration>,
    ) -> Result<ExecOutput, RemoteError> {
        let timeout = timeout.unwrap_or(self.command_timeout);
        let session = match &self.link {
            Link::OpenSsh(master) => return master.exec(command, input, timeout),
            Link::Ssh2 { session, .. } => session,
        };
        let deadline = Instant::now() + timeout;
        let result = self.exec_until(session, command, input, deadline, timeout);
        if result.is_err() {
            // The failed channel went within the deadline; whatever follows on this
            // session (another exec, closing it) may wait on the host only briefly.
            session.set_blocking(true);
            session.set_timeout(millis(CLEANUP_GRACE));
        }
        result
    }

    fn exec_until(
        &self,
        session: &ssh2::Session,
        command: &str,
        input: Option<&[u8]>,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<ExecOutput, RemoteError> {
        let timed_out = |what: &str| RemoteError::Timeout {
            host: self.name.clone(),
            what: what.to_string(),
            after: timeout,
        };
        // Each blocking libssh2 call may wait only for what is left of the deadline.
        let arm = |what: &str| -> Result<(), RemoteError> {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out(what));
            }
            session.set_blocking(true);
            session.set_timeout(millis(left));
            Ok(())
        };
        let fail = |what: &str| {
            let what = what.to_string();
            let name = self.name.clone();
            move |e: ssh2::Error| ssh_error(&name, &what, timeout, e)
        };
        let io_fail = |what: &str| {
            let what = what.to_string();
            let name = self.name.clone();
            move |e: std::io::Error| {
                if e.kind() == std::io::ErrorKind::TimedOut {
                    RemoteError::Timeout {
                        host: name.clone(),
                        what: what.clone(),
                        after: timeout,
                    }
                } else {
                    RemoteError::Ssh {
                        host: name.clone(),
                        what: what.clone(),
                        message: e.to_string(),
                    }
                }
            }
        };
        arm("opening a channel")?;
        let mut channel = session
            .channel_session()
            .map_err(fail("opening a channel"))?;
        arm("running a command")?;
        channel.exec(command).map_err(fail("running a command"))?;
        if let Some(input) = input {
            arm("sending input")?;
            channel.write_all(input).map_err(io_fail("sending input"))?;
        }
        arm("sending input")?;
        channel.send_eof().map_err(fail("sending input"))?;

        // Both streams are drained without blocking, then the call waits in libssh2 for
        // stdout (where answers come) a short slice at a time, so that stderr is looked at
        // too: a host that fills one stream while the other is waited for cannot stall
        // the call, and the deadline and the byte cap count everything it sends.
        // [stdout, stderr]
        let mut output: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
        let mut total = 0usize;
        let mut buffer = vec![0u8; 32 * 1024];
        let mut take = |id: usize, n: usize, buffer: &[u8]| -> Result<(), RemoteError> {
            output[id].extend_from_slice(&buffer[..n]);
            total += n;
            if total > MAX_EXEC_OUTPUT {
                return Err(RemoteError::TooMuchOutput {
                    host: self.name.clone(),
                    limit_mib: MAX_EXEC_OUTPUT >> 20,
                });
            }
            Ok(())
        };
        loop {
            session.set_blocking(false);
            let mut progressed = false;
            for id in 0..2 {
                loop {
                    let read = if id == 0 {
                        channel.read(&mut buffer)
                    } else {
                        channel.stderr().read(&mut buffer)
                    };
                    match read {
                        Ok(0) => break,
                        Ok(n) => {
                            take(id, n, &buffer)?;
                            progressed = true;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) => return Err(io_fail("reading output")(e)),
                    }
                }
            }
            if channel.eof() {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out("waiting for its command to finish"));
            }
            if progressed {
                continue;
            }
            session.set_blocking(true);
            session.set_timeout(millis(left.min(WAIT_SLICE)));
            match channel.read(&mut buffer) {
                Ok(0) => {
                    // stdout ended; what is left (stderr, the close) comes at once, but a
                    // pause keeps an odd libssh2 answer from becoming a busy loop.
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(n) => take(0, n, &buffer)?,
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(e) => return Err(io_fail("reading output")(e)),
            }
        }
        arm("closing a channel")?;
        channel.wait_close().map_err(fail("closing a channel"))?;
        let status = channel
            .exit_status()
            .map_err(fail("reading an exit status"))?;
        Ok(ExecOutput {
            status,
            stdout: String::from_utf8_lossy(&output[0]).into_owned(),
            stderr: String::from_utf8_lossy(&output[1]).into_owned(),
        })
    }

    /// Which of `paths` exist on the host, in one exec (`test -e`, each path quoted).
    pub fn paths_exist(&self, paths: &[String]) -> Result<Vec<bool>, RemoteError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let command = paths
            .iter()
            .map(|p| format!("test -e {} && echo y || echo n", shell_words::quote(p)))
            .collect::<Vec<_>>()
            .join("; ");
        let out = self.exec(&command, None, None)?;
        let answers: Vec<bool> = out.stdout.lines().map(|l| l.trim() == "y").collect();
        if answers.len() != paths.len() {
            return Err(RemoteError::Ssh {
                host: self.name.clone(),
                what: "looking for files".into(),
                message: format!(
                    "{} answer(s) for {} path(s): {}",
                    answers.len(),
                    paths.len(),
                    out.stderr.trim()
                ),
            });
        }
        Ok(answers)
    }

    /// The argv of an interactive `ssh` to this host running `remote` (for attach).
    pub fn ssh_argv(target: &Target, identity: Option<&Path>, remote: &[String]) -> Vec<String> {
        let mut argv = vec![
            "ssh".to_string(),
            "-t".into(),
            "-o".into(),
            "StrictHostKeyChecking=yes".into(),
            // The file orchestra checked the key against, whatever ssh's own default.
            "-o".into(),
            format!("UserKnownHostsFile={}", known_hosts_path().display()),
            "-p".into(),
            target.port.to_string(),
        ];
        if let Some(identity) = identity {
            argv.push("-i".into());
            argv.push(identity.display().to_string());
        }
        argv.push(format!("{}@{}", target.user, target.hostname));
        argv.push("--".into());
        argv.push(shell_words::join(remote));
        argv
    }
}

/// tmux on a remote host: each call is one `exec` on the connection.
pub struct RemoteTmux {
    conn: Connection,
    identity: Option<PathBuf>,
}

impl RemoteTmux {
    pub fn new(conn: Connection, identity: Option<PathBuf>) -> RemoteTmux {
        RemoteTmux { conn, identity }
    }
}

impl Transport for RemoteTmux {
    fn tmux(&self, args: &[String]) -> Result<String, TmuxError> {
        self.tmux_with_input(args, None)
    }

    fn tmux_with_input(&self, args: &[String], input: Option<&[u8]>) -> Result<String, TmuxError> {
        // -u: the exec channel carries no locale, and a client tmux thinks is not UTF-8
        // gets its output sanitized (tabs become `_`).
        let mut words = vec!["tmux".to_string(), "-u".to_string()];
        words.extend(args.iter().cloned());
        let command = args.first().cloned().unwrap_or_default();
        match self.conn.exec(&shell_words::join(&words), input, None) {
            Ok(out) if out.status == 0 => Ok(out.stdout),
            Ok(out) if out.status == 127 => Err(TmuxError::Failed {
                command,
                message: format!("tmux is not installed on host {}", self.conn.name),
            }),
            Ok(out) => Err(TmuxError::Failed {
                command,
                message: out.stderr.trim().to_string(),
            }),
            Err(e) => Err(TmuxError::Remote(e.to_string())),
        }
    }

    fn command_prefix(&self) -> Vec<String> {
        let tmux = ["tmux".to_string()];
        match &self.conn.link {
            Link::Ssh2 { target, .. } => {
                Connection::ssh_argv(target, self.identity.as_deref(), &tmux)
            }
            Link::OpenSsh(master) => master.ssh_argv(&tmux),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_key_types_are_asked_for_first() {
        let order = host_key_preference(&["ssh-rsa".into()]);
        assert!(order.starts_with("rsa-sha2-512,rsa-sha2-256,ssh-rsa,ssh-ed25519"));
        assert!(host_key_preference(&[]).starts_with("ssh-ed25519,"));
    }
}
