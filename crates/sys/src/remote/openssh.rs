//! OpenSSH as a transport (`transport = "openssh"`): a master connection the person opens
//! once on their terminal (`orchestra connect`), answering whatever OpenSSH asks there
//! (password, one-time code, passphrase, jump host), and every later call for the host an
//! `ssh -S <socket>` exec riding it. ~/.ssh/config (or the host's `ssh_config`) is read
//! by OpenSSH itself, entirely; host keys are checked by OpenSSH with
//! `StrictHostKeyChecking=yes` against the known_hosts orchestra's own checks use.
//!
//! A status job never prompts: every exec and check runs with `BatchMode=yes`, stdin
//! empty (or the bytes given), no tty, and a deadline; when the master is gone the call
//! fails at once with [`RemoteError::NotConnected`] instead of logging in afresh.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{ExecOutput, HostSpec, RemoteError, MAX_EXEC_OUTPUT};
use crate::process::{ProcessError, Run};

/// How long a master lives with no client, unless `connect --persist` says otherwise.
pub const DEFAULT_PERSIST: Duration = Duration::from_secs(4 * 3600);

/// What a Unix socket path may hold: 104 bytes with its NUL on the BSDs and macOS (108
/// on Linux; the smaller one is kept so a home works everywhere).
const SUN_PATH: usize = 104;
/// OpenSSH binds the master's socket as `<path>.<16 random characters>` and renames it
/// after, so the path itself must leave room for that suffix.
const MASTER_TEMP_SUFFIX: usize = 17;

/// The master connection of one host: its socket and the words that name the host to
/// `ssh` (config file, port, user, destination).
#[derive(Debug, Clone)]
pub struct Master {
    /// The host's name (in the manifest, or the address `connect` was given).
    pub name: String,
    pub socket: PathBuf,
    config: Option<PathBuf>,
    identity: Option<PathBuf>,
    port: Option<u16>,
    user: Option<String>,
    host: String,
}

/// Where the master socket of `spec` lives: `$ORCHESTRA_HOME/ssh/<hash>`, the hash of the
/// address (and ssh_config file) so that any address fits a socket path and the same host
/// named twice rides one master.
pub fn socket_path(home: &Path, spec: &HostSpec) -> Result<PathBuf, RemoteError> {
    let (user, host, port) = parse(spec)?;
    let key = format!(
        "{}@{host}:{}|{}",
        user.unwrap_or_default(),
        port.map(|p| p.to_string()).unwrap_or_default(),
        spec.ssh_config
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
    let socket = home.join("ssh").join(crate::paths::stable_hash(&key));
    let length = socket.as_os_str().len();
    if length + MASTER_TEMP_SUFFIX >= SUN_PATH {
        return Err(RemoteError::SocketPathTooLong {
            path: socket,
            length,
            limit: SUN_PATH - 1 - MASTER_TEMP_SUFFIX,
        });
    }
    Ok(socket)
}

fn parse(spec: &HostSpec) -> Result<(Option<String>, String, Option<u16>), RemoteError> {
    super::config::parse_address(&spec.address).map_err(|_| RemoteError::BadAddress {
        host: spec.name.clone(),
        address: spec.address.clone(),
    })
}

/// A path as ssh reads it where it expands `%` tokens (ControlPath, IdentityFile,
/// UserKnownHostsFile): a `%` in a folder name stays itself.
fn ssh_path(path: &Path) -> String {
    path.display().to_string().replace('%', "%%")
}

impl Master {
    /// The master `spec` would ride, under `home` (nothing is made yet).
    pub fn new(home: &Path, spec: &HostSpec) -> Result<Master, RemoteError> {
        let (user, host, port) = parse(spec)?;
        Ok(Master {
            name: spec.name.clone(),
            socket: socket_path(home, spec)?,
            config: spec.ssh_config.clone(),
            identity: spec.identity.clone(),
            port,
            user,
            host,
        })
    }

    /// Options every `ssh` of this host takes: the socket, the config file, and host keys
    /// checked by OpenSSH against the file orchestra checks them against.
    fn common(&self) -> Vec<String> {
        let mut argv = vec!["-S".to_string(), ssh_path(&self.socket)];
        if let Some(config) = &self.config {
            argv.push("-F".into());
            argv.push(config.display().to_string());
        }
        argv.extend([
            "-o".into(),
            "StrictHostKeyChecking=yes".into(),
            "-o".into(),
            format!(
                "UserKnownHostsFile={}",
                ssh_path(&super::known_hosts_path())
            ),
        ]);
        argv
    }

    /// Port, user and `-- host`: last, so nothing after the `--` is read as an option.
    fn destination(&self) -> Vec<String> {
        let mut argv = Vec::new();
        if let Some(port) = self.port {
            argv.push("-p".into());
            argv.push(port.to_string());
        }
        if let Some(user) = &self.user {
            argv.push("-l".into());
            argv.push(user.clone());
        }
        argv.push("--".into());
        argv.push(self.host.clone());
        argv
    }

    /// `ssh` options that keep a call from ever asking anything or logging in anew: no
    /// prompts, never a master of its own, and no direct connection when the master is
    /// gone. ssh falls back to connecting by itself when the socket does not answer;
    /// that way here is a proxy command that fails at once, so a dead master is an
    /// immediate error instead of a fresh login (which could prompt, or take seconds).
    fn batch(&self) -> Vec<String> {
        let mut argv = self.common();
        argv.extend(
            [
                "-o",
                "BatchMode=yes",
                "-o",
                "ControlMaster=no",
                "-o",
                "ProxyCommand=exit 255",
                "-o",
                "LogLevel=ERROR",
            ]
            .map(String::from),
        );
        argv
    }

    /// Whether the master answers (`ssh -O check`), within `timeout`.
    pub fn is_live(&self, timeout: Duration) -> bool {
        if !self.socket.exists() {
            return false;
        }
        let mut argv = vec!["-O".to_string(), "check".into()];
        argv.extend(self.batch());
        argv.extend(self.destination());
        Run::new("ssh", timeout)
            .args(&argv)
            .quiet()
            .output()
            .is_ok_and(|o| o.success())
    }

    /// Opens the master on the person's terminal: ssh asks there whatever it needs, once,
    /// then leaves the master in the background for `persist` after its last client.
    /// A socket left by a master that died is removed first (ssh would otherwise start
    /// without a master and say so only in a warning).
    pub fn open(&self, persist: Duration) -> Result<(), RemoteError> {
        let failed = |message: String| RemoteError::Ssh {
            host: self.name.clone(),
            what: "opening the master connection".into(),
            message,
        };
        if let Some(dir) = self.socket.parent() {
            crate::paths::private_dir(dir)
                .map_err(|e| failed(format!("cannot make {}: {e}", dir.display())))?;
        }
        if self.socket.exists() {
            std::fs::remove_file(&self.socket).map_err(|e| {
                failed(format!(
                    "cannot remove the stale socket {}: {e}",
                    self.socket.display()
                ))
            })?;
        }
        let mut argv = vec![
            "-M".to_string(),
            "-fN".into(),
            "-o".into(),
            format!("ControlPersist={}", persist.as_secs().max(1)),
        ];
        argv.extend(self.common());
        if let Some(identity) = &self.identity {
            argv.push("-i".into());
            argv.push(ssh_path(identity));
        }
        argv.extend(self.destination());
        // It waits for a person (a code, a passphrase), hence a person's deadline; as the
        // terminal's foreground job a Ctrl-C reaches ssh.
        let status = Run::new("ssh", crate::process::A_PERSON)
            .args(&argv)
            .stdin_inherit()
            .inherit_output()
            .foreground()
            .status()
            .map_err(|e| failed(e.to_string()))?;
        if !status.success() {
            return Err(failed(format!(
                "ssh exited with {} (what it said is above)",
                status
                    .code()
                    .map_or_else(|| "a signal".into(), |c| c.to_string())
            )));
        }
        Ok(())
    }

    /// Asks the master to exit (`ssh -O exit`). False when none answered.
    pub fn close(&self, timeout: Duration) -> Result<bool, RemoteError> {
        if !self.is_live(timeout) {
            // A socket file no master answers on is only litter.
            let _ = std::fs::remove_file(&self.socket);
            return Ok(false);
        }
        let mut argv = vec!["-O".to_string(), "exit".into()];
        argv.extend(self.batch());
        argv.extend(self.destination());
        let out = Run::new("ssh", timeout)
            .args(&argv)
            .output()
            .map_err(|e| self.process_error(e, "closing the master connection", timeout))?;
        if !out.success() {
            return Err(RemoteError::Ssh {
                host: self.name.clone(),
                what: "closing the master connection".into(),
                message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(true)
    }

    fn process_error(&self, e: ProcessError, what: &str, timeout: Duration) -> RemoteError {
        match e {
            ProcessError::TimedOut { .. } => RemoteError::Timeout {
                host: self.name.clone(),
                what: what.to_string(),
                after: timeout,
            },
            ProcessError::TooMuchOutput { .. } => RemoteError::TooMuchOutput {
                host: self.name.clone(),
                limit_mib: MAX_EXEC_OUTPUT >> 20,
            },
            ProcessError::Spawn { .. } => RemoteError::Ssh {
                host: self.name.clone(),
                what: what.to_string(),
                message: e.to_string(),
            },
        }
    }

    /// Runs `command` (a shell command line on the host) over the master, feeding it
    /// `input`, killed at `timeout`; each stream holds at most [`MAX_EXEC_OUTPUT`].
    pub fn exec(
        &self,
        command: &str,
        input: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<ExecOutput, RemoteError> {
        let mut argv = vec!["-T".to_string(), "-x".into()];
        argv.extend(self.batch());
        argv.extend(self.destination());
        argv.push(command.to_string());
        let mut run = Run::new("ssh", timeout).args(&argv).cap(MAX_EXEC_OUTPUT);
        if let Some(input) = input {
            run = run.input(input.to_vec());
        }
        let out = run
            .output()
            .map_err(|e| self.process_error(e, "running a command", timeout))?;
        let status = out
            .status
            .and_then(|s| s.code())
            .unwrap_or(super::SSH_FAILED);
        // 255 is ssh's own failure (or, rarely, the command's own status): only a master
        // that no longer answers makes it "not connected".
        if status == super::SSH_FAILED && !self.is_live(timeout) {
            return Err(RemoteError::NotConnected {
                host: self.name.clone(),
            });
        }
        Ok(ExecOutput {
            status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// The argv of an interactive `ssh -t` over the master running `remote` (attach).
    pub fn ssh_argv(&self, remote: &[String]) -> Vec<String> {
        let mut argv = vec![
            "ssh".to_string(),
            "-t".into(),
            "-o".into(),
            "ControlMaster=no".into(),
        ];
        argv.extend(self.common());
        argv.extend(self.destination());
        argv.push(shell_words::join(remote));
        argv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(address: &str) -> HostSpec {
        HostSpec::for_address(address)
    }

    #[test]
    fn the_socket_is_short_and_the_same_for_the_same_host() {
        let home = Path::new("/home/someone/.local/state/orchestra");
        let a = socket_path(home, &spec("me@gpu.example.org:2222")).unwrap();
        let b = socket_path(home, &spec("me@gpu.example.org:2222")).unwrap();
        assert_eq!(a, b);
        assert!(a.starts_with(home.join("ssh")));
        assert_ne!(a, socket_path(home, &spec("me@gpu.example.org")).unwrap());
        // However long the address, the name is a hash.
        let long = format!("me@{}.example.org", "a".repeat(200));
        let c = socket_path(home, &spec(&long)).unwrap();
        assert_eq!(c.file_name().unwrap().len(), 16);
    }

    #[test]
    fn a_home_too_long_for_a_socket_is_refused() {
        let home = PathBuf::from(format!("/{}", "h".repeat(80)));
        let e = socket_path(&home, &spec("gpu")).unwrap_err();
        assert!(matches!(e, RemoteError::SocketPathTooLong { .. }), "{e}");
        assert!(e.to_string().contains("ORCHESTRA_HOME"), "{e}");
    }

    #[test]
    fn the_host_comes_after_a_double_dash() {
        let master = Master::new(Path::new("/h"), &spec("me@gpu:2222")).unwrap();
        let argv = master.ssh_argv(&["tmux".into()]);
        let dash = argv.iter().position(|a| a == "--").unwrap();
        assert_eq!(argv[dash + 1], "gpu");
        assert!(argv.windows(2).any(|w| w == ["-p", "2222"]));
        assert!(argv.windows(2).any(|w| w == ["-l", "me"]));
        assert!(argv.contains(&"StrictHostKeyChecking=yes".to_string()));
    }

    #[test]
    fn a_percent_in_a_path_is_not_an_ssh_token() {
        let master = Master::new(Path::new("/h/50%h"), &spec("gpu")).unwrap();
        let argv = master.ssh_argv(&["tmux".into()]);
        let socket = &argv[argv.iter().position(|a| a == "-S").unwrap() + 1];
        assert!(socket.starts_with("/h/50%%h/ssh/"), "{socket}");
    }
}
