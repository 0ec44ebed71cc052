//! orchestra on a remote host, for hook-exact remote states: installing this binary there
//! (`hosts install`), the hook settings a remote claude session starts with, the word
//! each hook leaves on the host, and the part of the remote refresh's one exec that reads
//! those words back (with the host binary's version, so skew is seen).
//!
//! On the host everything lives under its user's `$HOME`, whatever the agent's own
//! environment says (a sandboxed HOME, XDG variables): the binary at
//! `~/.local/bin/orchestra`, its home at `~/.local/state/orchestra`. The host needs no
//! record of the session: a hook writes its word to `remote-states/<id>.json` there (one
//! small file per session, the newest word kept), and the refresh reads it over SSH.
//! Everything sent to the host goes through [`Connection::exec`], the one call both
//! transports offer.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::remote::{Connection, HostSpec};
use crate::state::{believable_at, AgentState};

/// Where `hosts install` puts the binary, from the host user's HOME.
pub const REMOTE_BIN: &str = ".local/bin/orchestra";
/// The orchestra home remote sessions' hooks record into, from the host user's HOME.
pub const REMOTE_HOME: &str = ".local/state/orchestra";
/// The folder of the words, under an orchestra home.
const WORDS_DIR: &str = "remote-states";
/// A word file is a line of JSON; more than this is not one of ours.
const MAX_WORD: usize = 4096;
/// Copying a binary (hundreds of MB for a debug build) over a slow link may take
/// minutes; it must still end.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

/// What `--version` of this binary prints (clap's `name version`).
pub fn this_version() -> String {
    format!("orchestra {}", env!("CARGO_PKG_VERSION"))
}

/// This binary's OS and architecture as `uname -sm` names them.
pub fn this_platform() -> (String, String) {
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        "freebsd" => "FreeBSD",
        "openbsd" => "OpenBSD",
        "netbsd" => "NetBSD",
        other => other,
    };
    (os.to_string(), std::env::consts::ARCH.to_string())
}

/// `uname -m`'s machine as Rust's `ARCH` names it (Darwin says arm64, BSDs amd64).
fn rust_arch(machine: &str) -> String {
    match machine {
        "arm64" | "aarch64" => "aarch64",
        "amd64" | "x86_64" => "x86_64",
        "i386" | "i486" | "i586" | "i686" => "x86",
        "ppc64le" | "ppc64" => "powerpc64",
        m if m.starts_with("armv") => "arm",
        other => other,
    }
    .to_string()
}

/// The Rust target a host of `uname -sm` = (`os`, `machine`) runs.
fn target_triple(os: &str, machine: &str) -> String {
    let arch = rust_arch(machine);
    match os {
        "Linux" if arch == "arm" => "armv7-unknown-linux-gnueabihf".into(),
        "Linux" => format!("{arch}-unknown-linux-gnu"),
        "Darwin" => format!("{arch}-apple-darwin"),
        other => format!("{arch}-unknown-{}", other.to_lowercase()),
    }
}

/// Why the host cannot run this binary, in one line naming what to build; `None` when it
/// can. `uname` is what `uname -sm` printed there.
pub fn platform_mismatch(host: &str, uname: &str) -> Option<String> {
    let mut words = uname.split_whitespace();
    let os = words.next().unwrap_or_default();
    let machine = words.next().unwrap_or_default();
    let (our_os, our_arch) = this_platform();
    if os == our_os && rust_arch(machine) == our_arch {
        return None;
    }
    let shown = if uname.trim().is_empty() {
        "of an unknown system (uname -sm printed nothing)".to_string()
    } else {
        format!("{os} {machine}")
    };
    Some(format!(
        "{host} is {shown}; this orchestra is {our_os} {our_arch}: build one for {} and copy \
         it to ~/{REMOTE_BIN}",
        target_triple(os, machine)
    ))
}

/// What `hosts install` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Installed {
    /// The host already runs this version: nothing was copied.
    AlreadyThere { version: String },
    /// Copied and verified.
    Copied { version: String, bytes: usize },
}

/// Installs `exe` (this binary) on host `spec` at `~/.local/bin/orchestra` unless that
/// already says this version (`force` copies anyway): checks `uname -sm` first, copies
/// through the exec channel's stdin into a temporary file, checked on the host (size,
/// SHA-256, `--version`: [`install_script`]) before it is renamed over the old one (a
/// hook running the old binary meanwhile never sees half a file).
pub fn install(spec: &HostSpec, exe: &Path, force: bool) -> Result<Installed, Error> {
    let conn = crate::remote::connect(spec)?;
    install_over(&conn, exe, force)
}

fn install_over(conn: &Connection, exe: &Path, force: bool) -> Result<Installed, Error> {
    let ours = this_version();
    let probe = conn.exec(
        &sh(&format!(
            "uname -sm; {CHECKSUM_TOOL}; echo \"sum=$sum\"; b=\"$HOME\"/{REMOTE_BIN}; if [ -x \"$b\" ]; \
             then \"$b\" --version 2>/dev/null | head -n 1; fi"
        )),
        None,
        None,
    )?;
    if probe.status != 0 {
        return Err(Error::Refused(format!(
            "{}: could not ask its system (uname -sm): {}",
            conn.name,
            one_line(&probe.stderr)
        )));
    }
    let mut lines = probe.stdout.lines();
    let uname = lines.next().unwrap_or_default().trim().to_string();
    let checksum = lines.next().unwrap_or_default().trim().to_string();
    let installed = lines.next().map(|l| l.trim().to_string());
    if let Some(why) = platform_mismatch(&conn.name, &uname) {
        return Err(Error::Refused(why));
    }
    if !force && installed.as_deref() == Some(ours.as_str()) {
        return Ok(Installed::AlreadyThere { version: ours });
    }
    // Said before hundreds of megabytes go for nothing; the copy's script checks again.
    if checksum == "sum=" {
        return Err(Error::Refused(format!(
            "{}: not installed, ~/{REMOTE_BIN} is left as it was: {NO_CHECKSUM_TOOL}",
            conn.name
        )));
    }
    let binary = std::fs::read(exe).map_err(Error::io(format!("reading {}", exe.display())))?;
    let copied = conn.exec(
        &sh(&install_script(&binary, &ours)),
        Some(&binary),
        Some(INSTALL_TIMEOUT),
    )?;
    let version = copied.stdout.lines().next().unwrap_or_default().trim();
    if copied.status != 0 || version != ours {
        return Err(Error::Refused(format!(
            "{}: not installed, ~/{REMOTE_BIN} is left as it was: {}",
            conn.name,
            one_line(&copied.stderr)
        )));
    }
    Ok(Installed::Copied {
        version: ours,
        bytes: binary.len(),
    })
}

/// Sets `sum` to the host's command that prints the SHA-256 of its stdin first on its
/// line (GNU coreutils, Perl's shasum on macOS, the BSDs' sha256), or to nothing.
const CHECKSUM_TOOL: &str = "if command -v sha256sum >/dev/null 2>&1; then sum=sha256sum; \
    elif command -v shasum >/dev/null 2>&1; then sum='shasum -a 256'; \
    elif command -v sha256 >/dev/null 2>&1; then sum='sha256 -q'; else sum=; fi";

/// Why a host with no [`CHECKSUM_TOOL`] gets no binary: an upload it cannot check might
/// be cut short or changed.
const NO_CHECKSUM_TOOL: &str =
    "the host has no sha256sum, shasum or sha256 to check the upload with";

/// What the host runs to take `binary` from stdin: into a temporary file beside the old
/// binary, then checked — its size, its SHA-256 (`sha256sum`, `shasum -a 256` or
/// `sha256`; a host with none of them is refused, not trusted), and its `--version`
/// saying `version` — and only then renamed over the old one. An upload cut short (a
/// dropped connection, this process killed: the host sees the end of its input early)
/// or garbled never replaces a working binary; the temporary file goes whatever happens
/// (a hangup or signal exits through the same trap).
fn install_script(binary: &[u8], version: &str) -> String {
    use sha2::Digest;
    let sha: String = sha2::Sha256::digest(binary)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let dir = Path::new(REMOTE_BIN)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(
        r#"set -e; d="$HOME"/{dir}; mkdir -p "$d"; t="$d/.orchestra.$$"
trap 'rm -f "$t"' EXIT; trap 'exit 1' HUP INT TERM PIPE
cat > "$t"
n=$(wc -c < "$t" | tr -d ' ')
if [ "$n" != {size} ]; then echo "the upload was cut short ($n of {size} bytes arrived)" >&2; exit 3; fi
{CHECKSUM_TOOL}
if [ -z "$sum" ]; then echo "{NO_CHECKSUM_TOOL}" >&2; exit 4; fi
s=$($sum < "$t")
if [ "${{s%% *}}" != {sha} ]; then echo "the upload arrived changed (its SHA-256 is not the binary's)" >&2; exit 5; fi
chmod 755 "$t"
v=$("$t" --version 2>&1 | head -n 1) || v=
if [ "$v" != {quoted_version} ]; then echo "the upload answers --version with: ${{v:-nothing}}" >&2; exit 6; fi
mv -f "$t" "$d/orchestra"
echo "$v""#,
        size = binary.len(),
        quoted_version = shell_words::quote(version),
    )
}

fn one_line(text: &str) -> String {
    crate::error::one_line(text, "no message")
}

/// Where a remote session's hooks go on the host.
#[derive(Debug, Clone)]
pub struct SessionHooks {
    /// The orchestra home on the host (`ORCHESTRA_HOME` of the session's window).
    pub home: String,
    /// The settings file for `claude --settings`.
    pub settings: String,
}

/// How a remote claude session will hear of its states.
#[derive(Debug)]
pub enum Prepared {
    Hooks(SessionHooks),
    /// No orchestra on the host: the screen tells.
    NotInstalled,
    /// The host's orchestra is another version (`--version` said this): the screen tells.
    Skew(String),
}

/// Prepares session `id`'s hooks on the host: when the host's `~/.local/bin/orchestra`
/// is this version, writes the claude settings whose hooks call it with `--remote`
/// (two execs: the host's HOME and version, then the file under that HOME).
pub fn prepare_claude_session(conn: &Connection, id: &str) -> Result<Prepared, Error> {
    let probe = conn.exec(
        &sh(&format!(
            "printf '%s\\n' \"$HOME\"; b=\"$HOME\"/{REMOTE_BIN}; if [ -x \"$b\" ]; then \
             \"$b\" --version 2>/dev/null | head -n 1; fi"
        )),
        None,
        None,
    )?;
    let mut lines = probe.stdout.lines();
    let user_home = lines.next().unwrap_or_default().trim_end().to_string();
    let Some(version) = lines.next().map(|l| l.trim().to_string()) else {
        return Ok(Prepared::NotInstalled);
    };
    if version != this_version() {
        return Ok(Prepared::Skew(version));
    }
    if !user_home.starts_with('/') {
        return Err(Error::Refused(format!(
            "{}: its HOME is {user_home:?}, not a path: no hooks",
            conn.name
        )));
    }
    let home = format!("{user_home}/{REMOTE_HOME}");
    let dir = format!("{home}/sessions/{id}");
    let settings = format!("{dir}/settings.json");
    let exe = format!("{user_home}/{REMOTE_BIN}");
    let text = serde_json::to_string_pretty(&crate::agent::claude_remote_settings(&exe))
        .unwrap_or_default();
    let write = format!(
        "umask 077 && mkdir -p {dir} && cat > {file}.new && mv -f {file}.new {file}",
        dir = shell_words::quote(&dir),
        file = shell_words::quote(&settings),
    );
    let wrote = conn.exec(&sh(&write), Some(text.as_bytes()), None)?;
    if wrote.status != 0 {
        return Err(Error::Refused(format!(
            "{}: could not write {settings}: {}",
            conn.name,
            one_line(&wrote.stderr)
        )));
    }
    Ok(Prepared::Hooks(SessionHooks { home, settings }))
}

/// Removes what [`prepare_claude_session`] and the hooks left on the host for session
/// `id` (after `down`); a failure leaves only a few bytes behind.
pub fn forget_session(conn: &Connection, id: &str) {
    let command = format!(
        "h=\"$HOME\"/{REMOTE_HOME}; rm -rf \"$h\"/sessions/{id}; rm -f \"$h\"/{WORDS_DIR}/{id}.json \
         \"$h\"/{WORDS_DIR}/{id}.lock",
        id = shell_words::quote(id)
    );
    let _ = conn.exec(&sh(&command), None, None);
}

/// A hook's word as left on the host: the state it implies, when (µs since the epoch) and
/// the event that said it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookWord {
    pub state: String,
    pub at: i64,
    pub event: String,
    /// The conversation claude last started (a SessionStart's: startup, `/clear`,
    /// `/resume`), carried on by later words: what a restart should resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    /// What this word's event asks to be allowed ("run: npm test"), when it asks: the
    /// notification names it. Never carried on to a later word.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asks: Option<String>,
}

impl HookWord {
    pub fn agent_state(&self) -> Option<AgentState> {
        AgentState::parse(&self.state)
    }
}

/// Session ids are orchestra's own (hex); anything else never becomes a path or a shell
/// word on the host.
fn is_safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn word_path(home: &Path, id: &str) -> std::path::PathBuf {
    home.join(WORDS_DIR).join(format!("{id}.json"))
}

/// Keeps `word` as session `id`'s on this (remote) machine unless a newer one is there:
/// hooks fire close together, and the newest word wins here as in the record.
pub fn record_word(home: &Path, id: &str, word: &HookWord) -> Result<(), Error> {
    if !is_safe_id(id) {
        return Err(Error::BadInput(format!("{id:?} is not a session id")));
    }
    let dir = home.join(WORDS_DIR);
    crate::paths::private_dir(&dir).map_err(Error::io(format!("creating {}", dir.display())))?;
    let lock_path = dir.join(format!("{id}.lock"));
    let _lock = crate::lock::exclusive(&lock_path)
        .map_err(Error::io(format!("locking {}", lock_path.display())))?;
    let path = word_path(home, id);
    let kept = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<HookWord>(&t).ok());
    // No time is trusted past now + skew: a kept word stamped further ahead (this clock
    // stepped back, or the file was written by hand) holds back no later word, and a
    // word stamped that far ahead is kept as said now.
    let now_us = crate::state::now_micros();
    let word = &HookWord {
        at: believable_at(word.at, now_us).unwrap_or(now_us),
        ..word.clone()
    };
    let word = match kept {
        // A newer word stays; it learns of a conversation only if it knew of none.
        Some(kept) if believable_at(kept.at, now_us).is_some_and(|at| at > word.at) => {
            if kept.conversation.is_some() || word.conversation.is_none() {
                return Ok(());
            }
            HookWord {
                conversation: word.conversation.clone(),
                ..kept
            }
        }
        kept => HookWord {
            conversation: word
                .conversation
                .clone()
                .or(kept.and_then(|k| k.conversation)),
            ..word.clone()
        },
    };
    let text = serde_json::to_string(&word).unwrap_or_default();
    crate::paths::replace_private(&path, text)
        .map_err(Error::io(format!("writing {}", path.display())))
}

/// What the refresh's exec said of the host's orchestra before tmux answered.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Probe {
    /// What `~/.local/bin/orchestra --version` printed; `None` when it is not there.
    pub version: Option<String>,
    /// The host's clock then (seconds since the epoch).
    pub clock: Option<i64>,
    /// The sessions' words, by session id.
    pub words: HashMap<String, HookWord>,
}

/// How far apart two clocks may be before the host's times are moved onto ours: within
/// it, the second-resolution reading of the host's clock would add more error than it
/// takes away.
const CLOCK_SLACK_SECS: i64 = 2;

/// The words to believe, on this machine's clock.
#[derive(Debug, Default)]
pub struct HostWords {
    /// By session id, `at` moved onto this machine's clock.
    pub words: HashMap<String, HookWord>,
    /// Seconds to add to a time of the host's (a window's activity) to have it on ours.
    pub offset_secs: i64,
}

impl Probe {
    /// The words to believe, their times on this machine's clock (`now_us` as the exec
    /// answered; hosts' clocks drift): none from a binary of another version (its words
    /// may mean something else, or be stale since it stopped understanding the hooks) or
    /// from a host without one (the hooks can no longer speak).
    pub fn trusted_words(&self, now_us: i64) -> HostWords {
        let offset_secs = self
            .clock
            .map(|host| (now_us / 1_000_000).saturating_sub(host))
            .filter(|d| d.abs() > CLOCK_SLACK_SECS)
            .unwrap_or(0);
        if self.version.as_deref() != Some(this_version().as_str()) {
            return HostWords {
                words: HashMap::new(),
                offset_secs,
            };
        }
        let words = self
            .words
            .iter()
            .map(|(id, w)| {
                let mut w = w.clone();
                w.at = w.at.saturating_add(offset_secs.saturating_mul(1_000_000));
                (id.clone(), w)
            })
            .collect();
        HostWords { words, offset_secs }
    }

    /// What a person should hear about the host's orchestra: its version differs from
    /// this one (and `hooked` sessions expected hooks). `None` when all is well.
    pub fn skew(&self, host: &str) -> Option<String> {
        self.version
            .as_deref()
            .filter(|v| *v != this_version())
            .map(|v| skew_message(host, v))
    }
}

/// Host `host`'s orchestra says `version`, not this one's: what a person should do.
pub fn skew_message(host: &str, version: &str) -> String {
    format!(
        "{host} runs {}, this is {}: its states come from screens (orchestra hosts install \
         {host} --force)",
        if version.is_empty() {
            "an orchestra that does not answer --version"
        } else {
            version
        },
        this_version()
    )
}

/// The shell text run before tmux in the remote refresh's one exec: the host binary's
/// version and the words of sessions `ids`, then `marker` on a line of its own. Its
/// output is read by [`parse_probe`]; tmux's follows the marker.
fn probe_script(ids: &[String], marker: &str) -> String {
    let ids: Vec<String> = ids
        .iter()
        .filter(|id| is_safe_id(id))
        .map(|id| shell_words::quote(id).into_owned())
        .collect();
    let mut script = format!(
        "printf 'clock %s\\n' \"$(date +%s)\"; b=\"$HOME\"/{REMOTE_BIN}; if [ -x \"$b\" ]; then printf 'version %s\\n' \
         \"$(\"$b\" --version 2>/dev/null | head -n 1)\"; fi; "
    );
    if !ids.is_empty() {
        script.push_str(&format!(
            "d=\"$HOME\"/{REMOTE_HOME}/{WORDS_DIR}; for i in {}; do if [ -f \"$d/$i.json\" ]; \
             then printf 'word %s %s\\n' \"$i\" \"$(head -c {MAX_WORD} \"$d/$i.json\" | tr -d \
             '\\n')\"; fi; done; ",
            ids.join(" ")
        ));
    }
    script.push_str(&format!("printf '%s\\n' {}", shell_words::quote(marker)));
    script
}

/// The refresh's one command line: [`probe_script`], then tmux with `tmux_args` in its
/// place (its exit status and stderr are tmux's), all run by `sh` whatever the login
/// shell is.
pub fn probe_command(ids: &[String], marker: &str, tmux_args: &[String]) -> String {
    let mut tmux = vec!["tmux".to_string(), "-u".to_string()];
    tmux.extend(tmux_args.iter().cloned());
    sh(&format!(
        "{}; exec {}",
        probe_script(ids, marker),
        shell_words::join(&tmux)
    ))
}

/// `script` as a command line any login shell runs with `sh` (fish and csh read
/// `$(…)`, `if`, `for` their own ways).
fn sh(script: &str) -> String {
    format!("sh -c {}", shell_words::quote(script))
}

/// Splits the refresh exec's output into what [`probe_script`] said and tmux's part.
/// No marker (the script did not run as written): no probe, the whole output is tmux's.
pub fn parse_probe<'a>(output: &'a str, marker: &str) -> (Probe, &'a str) {
    let line = format!("{marker}\n");
    let Some(at) = output.find(&line) else {
        return (Probe::default(), output);
    };
    let (head, rest) = output.split_at(at);
    let mut probe = Probe::default();
    for l in head.lines() {
        if let Some(c) = l.strip_prefix("clock ") {
            probe.clock = c.trim().parse().ok();
        } else if let Some(v) = l.strip_prefix("version ") {
            probe.version = Some(v.trim().to_string());
        } else if let Some(w) = l.strip_prefix("word ") {
            let Some((id, json)) = w.split_once(' ') else {
                continue;
            };
            if let Ok(word) = serde_json::from_str::<HookWord>(json) {
                probe.words.insert(id.to_string(), word);
            }
        }
    }
    (probe, &rest[line.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_platform_mismatch_names_the_target_to_build() {
        let (os, arch) = this_platform();
        assert_eq!(platform_mismatch("gpu", &format!("{os} {arch}")), None);
        let other = if arch == "aarch64" {
            "x86_64"
        } else {
            "aarch64"
        };
        let why = platform_mismatch("gpu", &format!("Linux {other}")).unwrap_or_default();
        if os == "Linux" {
            assert_eq!(
                why,
                format!(
                    "gpu is Linux {other}; this orchestra is Linux {arch}: build one for \
                     {other}-unknown-linux-gnu and copy it to ~/.local/bin/orchestra"
                )
            );
        }
        let mac = platform_mismatch("mac", "Darwin arm64").unwrap_or_default();
        assert!(mac.contains("aarch64-apple-darwin"), "{mac}");
        assert!(platform_mismatch("x", "").is_some());
    }

    #[test]
    fn the_probe_is_split_from_tmux_output_and_words_parsed() {
        let marker = "orchestra-probe-1";
        let out = format!(
            "clock 100\nversion {}\nword abc123def456 {{\"state\":\"idle\",\"at\":5,\"event\":\"Stop\"}}\n\
             word bad not-json\n{marker}\n%1\tpane\n",
            this_version()
        );
        let (probe, tmux) = parse_probe(&out, marker);
        assert_eq!(tmux, "%1\tpane\n");
        assert_eq!(probe.version, Some(this_version()));
        assert_eq!(probe.words.len(), 1);
        assert_eq!(probe.words["abc123def456"].state, "idle");
        // Within the slack the host's times are taken as they are; beyond it, moved.
        assert_eq!(probe.trusted_words(101_000_000).words["abc123def456"].at, 5);
        let moved = probe.trusted_words(200_000_000);
        assert_eq!(moved.offset_secs, 100);
        assert_eq!(moved.words["abc123def456"].at, 100_000_005);
        assert_eq!(probe.skew("gpu"), None);
        let skewed = Probe {
            version: Some("orchestra 0.0.1".into()),
            clock: None,
            words: probe.words.clone(),
        };
        assert!(skewed.trusted_words(0).words.is_empty());
        assert!(skewed
            .skew("gpu")
            .is_some_and(|s| s.contains("orchestra 0.0.1")));
        let (none, all) = parse_probe("%1\n", marker);
        assert_eq!((none, all), (Probe::default(), "%1\n"));
    }

    #[test]
    fn an_older_word_never_replaces_a_newer_one() {
        let home = tempfile::tempdir().expect("tempdir");
        let id = "0123456789ab";
        let word = |state: &str, at| HookWord {
            state: state.into(),
            at,
            event: "Stop".into(),
            conversation: None,
            asks: None,
        };
        record_word(home.path(), id, &word("busy", 10)).expect("record");
        record_word(home.path(), id, &word("idle", 5)).expect("record");
        let kept: HookWord =
            serde_json::from_str(&std::fs::read_to_string(word_path(home.path(), id)).unwrap())
                .unwrap();
        assert_eq!(kept, word("busy", 10));
        assert!(record_word(home.path(), "../x", &word("idle", 1)).is_err());
    }

    #[test]
    fn a_started_conversation_is_carried_by_later_words_until_another_starts() {
        let home = tempfile::tempdir().expect("tempdir");
        let id = "0123456789ab";
        let kept = || -> HookWord {
            serde_json::from_str(&std::fs::read_to_string(word_path(home.path(), id)).unwrap())
                .unwrap()
        };
        let word = |state: &str, at, conversation: Option<&str>| HookWord {
            state: state.into(),
            at,
            event: "SessionStart".into(),
            conversation: conversation.map(str::to_string),
            asks: None,
        };
        let first = "11111111-2222-3333-4444-555555555555";
        let second = "66666666-7777-8888-9999-000000000000";
        record_word(home.path(), id, &word("idle", 1, Some(first))).expect("record");
        record_word(home.path(), id, &word("busy", 2, None)).expect("record");
        assert_eq!(kept(), word("busy", 2, Some(first)));
        record_word(home.path(), id, &word("idle", 3, Some(second))).expect("record");
        record_word(home.path(), id, &word("busy", 4, None)).expect("record");
        assert_eq!(kept().conversation.as_deref(), Some(second));
        // A start written after a newer word (hooks racing) still names its conversation
        // when the newer word knew of none.
        let other = "0123456789ac";
        record_word(home.path(), other, &word("busy", 9, None)).expect("record");
        record_word(home.path(), other, &word("idle", 8, Some(first))).expect("record");
        let raced: HookWord =
            serde_json::from_str(&std::fs::read_to_string(word_path(home.path(), other)).unwrap())
                .unwrap();
        assert_eq!(raced, word("busy", 9, Some(first)));
    }

    /// No time is trusted past now + skew on the host either: a kept word stamped far
    /// ahead (a stepped clock, a file written by hand: `at` 9e18) gives way to the next
    /// hook's word, and a word stamped that far ahead is kept as said now. Words whose
    /// `at` is no integer (9e18 written as a float, NaN) are not words at all.
    #[test]
    fn a_word_from_the_future_gives_way_on_the_host() {
        let home = tempfile::tempdir().expect("tempdir");
        let id = "0123456789ab";
        let kept = || -> HookWord {
            serde_json::from_str(&std::fs::read_to_string(word_path(home.path(), id)).unwrap())
                .unwrap()
        };
        let word = |state: &str, at| HookWord {
            state: state.into(),
            at,
            event: "Stop".into(),
            conversation: None,
            asks: None,
        };
        let forged = r#"{"state":"idle","at":9000000000000000000,"event":"Stop"}"#;
        crate::paths::private_dir(&home.path().join(WORDS_DIR)).unwrap();
        std::fs::write(word_path(home.path(), id), forged).unwrap();
        let now = crate::state::now_micros();
        record_word(home.path(), id, &word("busy", now)).expect("record");
        assert_eq!(kept(), word("busy", now));
        record_word(home.path(), id, &word("idle", i64::MAX)).expect("record");
        let taken = kept();
        assert_eq!(taken.state, "idle");
        assert!(taken.at >= now && taken.at <= crate::state::now_micros());
        let later = crate::state::now_micros() + 1;
        record_word(home.path(), id, &word("busy", later)).expect("record");
        assert_eq!(kept(), word("busy", later));

        let marker = "orchestra-probe-2";
        let out = format!(
            "version {}\nword a1 {{\"state\":\"idle\",\"at\":9e18,\"event\":\"Stop\"}}\n\
             word a2 {{\"state\":\"idle\",\"at\":NaN,\"event\":\"Stop\"}}\n\
             word a3 {{\"state\":\"idle\",\"at\":1e400,\"event\":\"Stop\"}}\n\
             word a4 {{\"state\":\"idle\",\"at\":-7,\"event\":\"Stop\"}}\n{marker}\n",
            this_version()
        );
        let (probe, _) = parse_probe(&out, marker);
        let ids: Vec<&String> = probe.words.keys().collect();
        assert_eq!(
            ids,
            ["a4"],
            "only an integer time is a word (an old one here)"
        );
        // A host clock at either end of time moves the words far away, and overflows
        // nothing.
        for clock in [i64::MIN, i64::MAX] {
            let skewed = Probe {
                clock: Some(clock),
                ..Probe::default()
            };
            let _ = skewed.trusted_words(crate::state::now_micros());
        }
    }
}
