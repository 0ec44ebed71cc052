//! The ONLY module that runs tmux. Commands go through a [`Transport`] (a local process
//! today, an SSH channel for remote hosts) so one batching scheme serves both: several
//! commands travel in one tmux invocation joined by `;`, and their outputs are split apart
//! again on nonce marker lines.

mod transport;

use std::path::{Path, PathBuf};

mod ids;
pub mod options;
pub mod printed;

pub use ids::{PaneId, WindowId};
pub use transport::{Local, Transport, TMUX_DEADLINE};

#[derive(Debug, thiserror::Error)]
pub enum TmuxError {
    #[error("tmux was not found on PATH: install tmux 3.2 or newer")]
    NotInstalled,
    #[error("could not run tmux: {0}")]
    Spawn(std::io::Error),
    /// tmux did not answer by its deadline (a stopped or wedged server), or printed
    /// without end: it was killed.
    #[error(transparent)]
    Process(crate::process::ProcessError),
    #[error("tmux {command}: {message}")]
    Failed { command: String, message: String },
    /// `found` is what `tmux -V` says ("tmux 3.1c").
    #[error("{found} is too old: orchestra needs tmux 3.2 or newer")]
    TooOld { found: String },
    #[error("{0}")]
    Remote(String),
    #[error("unexpected output from tmux {command}: {output:?}")]
    Unexpected { command: String, output: String },
    /// The recorded pane is gone, or its window no longer carries the session's id (tmux
    /// reuses pane ids after a server restart): nothing was sent to it.
    #[error("pane {pane} is gone or no longer belongs to this session: nothing was sent")]
    NotOurs { pane: PaneId },
    #[error("{what} {value:?} cannot name a tmux object")]
    BadTarget { what: &'static str, value: String },
    /// Text holding a control character a terminal reads as a key, not as text.
    #[error("the text holds a control character ({found}) at character {at}: a terminal would read it as a key (Escape, Backspace…), not as text")]
    Untypable { found: String, at: usize },
}

/// Whether `text` can reach an agent as text: no control characters but tab, newline and
/// carriage return. An ESC would be the Escape key (or end a bracketed paste early and
/// type the rest as keys), a DEL a Backspace, a NUL cannot travel at all.
pub fn typable(text: &str) -> Result<(), TmuxError> {
    let bad = |c: char| {
        (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || ('\u{80}'..='\u{9f}').contains(&c)
    };
    match text.chars().enumerate().find(|(_, c)| bad(*c)) {
        Some((at, c)) => Err(TmuxError::Untypable {
            found: format!("U+{:04X}", c as u32),
            at: at + 1,
        }),
        None => Ok(()),
    }
}

/// A session's agent pane as recorded, with the session id its window must carry. Every
/// action on a recorded pane takes this type: tmux checks the window's `@orchestra_id`
/// in the same call as the action, so a pane id reused after a tmux restart (or a pane
/// another program now holds) is never typed into, respawned or killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedPane {
    pane: PaneId,
    id: String,
}

impl OwnedPane {
    /// `id` must look like a session id: it ends up inside a tmux command string.
    pub fn new(pane: &PaneId, id: &str) -> Result<OwnedPane, TmuxError> {
        Ok(OwnedPane {
            pane: pane.clone(),
            id: checked_session_id(id)?.to_string(),
        })
    }

    pub fn pane(&self) -> &PaneId {
        &self.pane
    }
}

/// Which tmux server to talk to, and whether this process runs inside it.
#[derive(Debug, Clone)]
pub struct Server {
    /// `None`: tmux's default socket.
    pub socket: Option<PathBuf>,
    /// True when `$TMUX` names this same server: "the current session" then means
    /// something.
    pub inside: bool,
}

impl Server {
    /// `--socket` (or `ORCHESTRA_TMUX_SOCKET`), else the server in `$TMUX`, else the
    /// default one.
    pub fn resolve(explicit: Option<&Path>) -> Server {
        let tmux_env = std::env::var("TMUX").ok().filter(|v| !v.is_empty());
        let current = tmux_env
            .as_deref()
            .and_then(|v| v.split(',').next())
            .filter(|p| !p.is_empty())
            .map(PathBuf::from);
        match (explicit, current) {
            (Some(socket), Some(current)) => Server {
                inside: same_file(socket, &current),
                socket: Some(socket.to_path_buf()),
            },
            (Some(socket), None) => Server {
                socket: Some(socket.to_path_buf()),
                inside: false,
            },
            (None, Some(current)) => Server {
                socket: Some(current),
                inside: true,
            },
            (None, None) => Server {
                socket: None,
                inside: false,
            },
        }
    }

    /// A server known by the socket path recorded for a session.
    pub fn at(socket: Option<&str>) -> Server {
        let mut server = Server::resolve(socket.map(Path::new));
        if socket.is_none() {
            server.inside = false;
        }
        server
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Where a new window goes.
pub enum Placement {
    /// The session of the client this process runs in.
    Current,
    /// A detached session of this name, created when missing.
    Detached(String),
}

pub struct WindowSpec<'a> {
    pub name: &'a str,
    pub cwd: &'a Path,
    /// The program and its arguments, executed directly (no shell in between).
    pub argv: &'a [String],
    pub env: &'a [(String, String)],
    pub placement: Placement,
}

#[derive(Debug, Clone)]
pub struct NewWindow {
    pub session_name: String,
    pub window: WindowId,
    pub pane: PaneId,
    pub socket_path: String,
    /// Whether this call made the detached session (not another process a moment before).
    pub made_session: bool,
}

/// What one [`Tmux::snapshot`] call learns.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub socket_path: String,
    pub options: Vec<(String, String)>,
    pub panes: Vec<Pane>,
    /// (pane, screen) of the panes recaptured because they changed.
    pub screens: Vec<(PaneId, String)>,
}

impl Snapshot {
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }
}

/// What `list-panes -F` asks of each pane, tab-separated ([`parse_panes`] reads it). With
/// `commands_since`, the pane's command is asked only of windows that showed output at or
/// after it (empty for the others): the command is the one costly field of a listing (tmux
/// reads the pane's foreground process from /proc), at 64 windows a third of a quiet tick's
/// growth over 8. A foreground program that changes prints (the shell a finished agent
/// leaves shows its prompt), and a new window is active from its creation. The session's
/// name is then left out too (a refresh does not use it).
fn pane_format(commands_since: Option<i64>) -> String {
    let command = printed::field("pane_current_command");
    let (command, session) = match commands_since {
        Some(since) => (
            format!("#{{?#{{e|>=:#{{window_activity}},{since}}},{command},}}"),
            String::new(),
        ),
        None => (command, printed::field("session_name")),
    };
    [
        "#{pane_id}".to_string(),
        "#{window_id}".into(),
        "#{pane_dead}".into(),
        "#{window_activity}".into(),
        printed::field(options::WINDOW_ID),
        printed::field(options::WINDOW_STATE),
        printed::field(options::WINDOW_BUDGET),
        command,
        session,
    ]
    .join("\t")
}

fn parse_panes(out: &str) -> Vec<Pane> {
    out.lines()
        .filter_map(|line| {
            let f: Vec<String> = printed::fields(line).collect();
            let [pane, window, dead, activity, id, state, budget, command, session] = &f[..] else {
                return None;
            };
            Some(Pane {
                pane: PaneId::parse(pane).ok()?,
                window: WindowId::parse(window).ok()?,
                dead: dead == "1",
                window_activity: activity.parse().unwrap_or(0),
                orchestra_id: id.clone(),
                orchestra_state: state.clone(),
                orchestra_budget: budget.clone(),
                current_command: command.clone(),
                session_name: session.clone(),
            })
        })
        .collect()
}

/// What [`Tmux::windows_with_option`] learns.
#[derive(Debug, Clone)]
pub struct WindowsSeen {
    /// (window id, `@orchestra_id`, the option's value) of each orchestra window.
    pub windows: Vec<(WindowId, String, String)>,
    /// The global options asked for, in order (unset: empty).
    pub values: Vec<String>,
}

/// One pane as `list-panes -a` sees it.
#[derive(Debug, Clone)]
pub struct Pane {
    pub pane: PaneId,
    pub window: WindowId,
    /// Empty from [`Tmux::snapshot_since`].
    pub session_name: String,
    pub dead: bool,
    /// Empty when not asked ([`Tmux::snapshot_since`]).
    pub current_command: String,
    pub window_activity: i64,
    pub orchestra_id: String,
    pub orchestra_state: String,
    /// The window's budget mark (`@orchestra_budget`: "$" at 80 %, "$!" over budget).
    pub orchestra_budget: String,
}

pub struct Tmux {
    transport: Box<dyn Transport>,
    inside: bool,
    /// Invocations made so far.
    calls: std::sync::atomic::AtomicUsize,
    /// The server's (major, minor), asked once: `None` when unparsable ("master").
    version: std::sync::OnceLock<Option<(u32, u32)>>,
}

/// Where formats are expanded: the server (global options), a client (its current pane),
/// or a pane.
#[derive(Clone, Copy)]
enum FormatTarget<'a> {
    Server,
    Client(&'a str),
    Pane(&'a PaneId),
}

/// What `new-window -P -F` prints: the session's name, the window, the pane, the socket.
fn new_window_format() -> String {
    format!(
        "{}\t#{{window_id}}\t#{{pane_id}}\t{}",
        printed::field("session_name"),
        printed::field("socket_path")
    )
}

impl Tmux {
    pub fn new(server: &Server) -> Tmux {
        Tmux {
            transport: Box::new(Local::new(server.socket.clone())),
            inside: server.inside,
            calls: Default::default(),
            version: std::sync::OnceLock::new(),
        }
    }

    pub fn with_transport(transport: Box<dyn Transport>, inside: bool) -> Tmux {
        Tmux {
            transport,
            inside,
            calls: Default::default(),
            version: std::sync::OnceLock::new(),
        }
    }

    /// Where a window for a repo goes: the current session inside tmux, else a detached
    /// session `orchestra-<repo>`.
    pub fn placement_for_repo(&self, repo_name: &str) -> Placement {
        if self.inside {
            Placement::Current
        } else {
            Placement::Detached(format!("orchestra-{}", session_name_for(repo_name)))
        }
    }

    /// Whether "the current session" exists for this process.
    pub fn inside(&self) -> bool {
        self.inside
    }

    /// The command line a person would type to reach this server (absolute tmux path).
    pub fn command_prefix(&self) -> Vec<String> {
        self.transport.command_prefix()
    }

    fn run(&self, args: &[String]) -> Result<String, TmuxError> {
        self.run_joined(&[args.to_vec()], None)
    }

    /// Runs `commands` in ONE tmux invocation, joined by `;`. tmux reads an argument that
    /// ends in `;` as the end of a command, so every word is passed escaped
    /// ([`argument_word`]): a prompt or path ending in `;` stays whole.
    fn run_joined(
        &self,
        commands: &[Vec<String>],
        input: Option<&[u8]>,
    ) -> Result<String, TmuxError> {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.transport
            .tmux_with_input(&joined_words(commands), input)
    }

    /// Runs `commands`, the last a `display-menu`, in ONE call. tmux answers a menu only
    /// when the person has chosen or left it, so the call has a person's deadline, not
    /// tmux's 5 s.
    pub fn menu(&self, commands: &[Vec<String>]) -> Result<(), TmuxError> {
        self.transport
            .tmux_waiting_for_a_person(&joined_words(commands))
            .map(|_| ())
    }

    /// How many tmux invocations this handle has made (a refresh reports its own).
    pub fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs several commands and returns each one's output: in ONE tmux invocation, or,
    /// when they would not fit in one ([`COMMAND_MAX`]: a refresh of a few hundred
    /// windows), in as few as fit, in order.
    pub fn batch(&self, commands: &[Vec<String>]) -> Result<Vec<String>, TmuxError> {
        let marker = format!("orchestra-split-{}", uuid::Uuid::new_v4().simple());
        let split = strings(&["display-message", "-p", &marker]);
        let mut parts = Vec::with_capacity(commands.len());
        for chunk in chunks_under_limit(commands, &split) {
            self.batch_chunk(chunk, &split, &marker, &mut parts)?;
        }
        Ok(parts)
    }

    /// One call of a batch, its outputs appended to `parts`. A release that refuses a
    /// chunk cut under [`COMMAND_MAX`] and [`WORDS_MAX`] (a limit of a release to come)
    /// gets it in two halves instead, down to one command a call.
    fn batch_chunk(
        &self,
        chunk: &[Vec<String>],
        split: &[String],
        marker: &str,
        parts: &mut Vec<String>,
    ) -> Result<(), TmuxError> {
        let mut joined = Vec::with_capacity(chunk.len() * 2);
        for command in chunk {
            joined.push(command.clone());
            joined.push(split.to_vec());
        }
        let output = match self.run_joined(&joined, None) {
            Err(TmuxError::Failed { message, .. })
                if chunk.len() > 1 && too_long_for_tmux(&message) =>
            {
                let (first, second) = chunk.split_at(chunk.len() / 2);
                self.batch_chunk(first, split, marker, parts)?;
                return self.batch_chunk(second, split, marker, parts);
            }
            result => result?,
        };
        let before = parts.len();
        let mut current = String::new();
        for line in output.split_inclusive('\n') {
            if line.trim_end_matches('\n') == marker {
                parts.push(std::mem::take(&mut current));
            } else {
                current.push_str(line);
            }
        }
        if parts.len() - before != chunk.len() {
            return Err(TmuxError::Unexpected {
                command: "(batch)".into(),
                output,
            });
        }
        Ok(())
    }

    /// The server's version, refused below 3.2.
    pub fn check_version(&self) -> Result<String, TmuxError> {
        let out = self.run(&["-V".to_string()])?;
        let found = out.trim().to_string();
        let _ = self.version.set(parse_version(&found));
        match parse_version(&found) {
            Some(v) if v < (3, 2) => Err(TmuxError::TooOld { found }),
            _ => Ok(found),
        }
    }

    /// The server's (major, minor) where a command differs between releases; `None` when
    /// it cannot be told (then the newest behaviour is assumed).
    fn version(&self) -> Option<(u32, u32)> {
        *self.version.get_or_init(|| {
            self.run(&["-V".to_string()])
                .ok()
                .and_then(|out| parse_version(out.trim()))
        })
    }

    pub fn has_session(&self, name: &str) -> Result<bool, TmuxError> {
        match self.run(&strings(&["has-session", "-t", &format!("={name}")])) {
            Ok(_) => Ok(true),
            Err(TmuxError::Failed { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Opens a window running `spec.argv`, keeps its pane after the program exits (so the
    /// exit is seen, not a vanished window), and sets `options` on it. Returns the ids.
    /// One tmux call: the window is made under a unique name, marked through it, then
    /// renamed, so no process killed half-way leaves a window of ours unmarked.
    pub fn new_window(
        &self,
        spec: &WindowSpec<'_>,
        options: &[(&str, &str)],
    ) -> Result<NewWindow, TmuxError> {
        // Between our look at the detached session and our command, another orchestra
        // may make it (new-session: "duplicate session") or close its last window
        // (new-window: "can't find session"): look again, a bounded number of times.
        let mut tries = 0;
        loop {
            match self.new_window_once(spec, options) {
                Err(TmuxError::Failed { message, .. })
                    if tries < 3
                        && matches!(spec.placement, Placement::Detached(_))
                        && (message.contains("duplicate session")
                            || message.contains("can't find session")) =>
                {
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    fn new_window_once(
        &self,
        spec: &WindowSpec<'_>,
        options: &[(&str, &str)],
    ) -> Result<NewWindow, TmuxError> {
        let unique = format!("orchestra-new-{}", uuid::Uuid::new_v4().simple());
        let mut args: Vec<String> = Vec::new();
        let mut made_session = false;
        let target = match &spec.placement {
            Placement::Detached(session) if !self.has_session(session)? => {
                made_session = true;
                args.extend(strings(&[
                    "new-session",
                    "-d",
                    "-s",
                    session,
                    "-n",
                    &unique,
                ]));
                format!("={session}:={unique}")
            }
            Placement::Detached(session) => {
                args.extend(strings(&[
                    "new-window",
                    "-d",
                    "-t",
                    &format!("={session}:"),
                    "-n",
                    &unique,
                ]));
                format!("={session}:={unique}")
            }
            Placement::Current => {
                args.extend(strings(&["new-window", "-d", "-n", &unique]));
                format!(":={unique}")
            }
        };
        args.extend(strings(&["-P", "-F", &new_window_format(), "-c"]));
        args.push(format_literal(&spec.cwd.to_string_lossy()));
        for (key, value) in spec.env {
            args.push("-e".into());
            args.push(format!("{key}={value}"));
        }
        args.push("--".into());
        args.extend(program_words(spec.argv));
        let mut commands = vec![args];
        for (name, value) in [("remain-on-exit", "on")].iter().chain(options) {
            commands.push(strings(&["set-option", "-w", "-t", &target, name, value]));
        }
        // The name is a format there: `#` doubled stays itself.
        commands.push(strings(&[
            "rename-window",
            "-t",
            &target,
            &format_literal(spec.name),
        ]));
        let out = match self.run_joined(&commands, None) {
            Ok(out) => out,
            Err(e) => {
                // Made but not marked (a refused option): not left behind.
                let _ = self.kill_window(&target);
                return Err(e);
            }
        };
        let fields: Vec<String> = printed::fields(out.trim_end_matches('\n')).collect();
        let [session_name, window, pane, socket_path] = &fields[..] else {
            return Err(TmuxError::Unexpected {
                command: "new-window".into(),
                output: out,
            });
        };
        let unexpected = || TmuxError::Unexpected {
            command: "new-window".into(),
            output: out.clone(),
        };
        Ok(NewWindow {
            session_name: session_name.clone(),
            window: WindowId::parse(window).map_err(|_| unexpected())?,
            pane: PaneId::parse(pane).map_err(|_| unexpected())?,
            socket_path: socket_path.clone(),
            made_session,
        })
    }

    /// Sets the window's state badge and reads one global option, in ONE call.
    pub fn set_badge(
        &self,
        window: &WindowId,
        state: &str,
        read_option: &str,
    ) -> Result<Option<String>, TmuxError> {
        let parts = self.batch(&[
            strings(&[
                "set-option",
                "-w",
                "-t",
                window,
                options::WINDOW_STATE,
                state,
            ]),
            strings(&[
                "display-message",
                "-p",
                "-t",
                window,
                &printed::field(read_option),
            ]),
        ])?;
        let value = printed::decode(parts[1].trim_end_matches('\n'));
        Ok((!value.is_empty()).then_some(value))
    }

    /// The clients looking at `window` right now: attached (not suspended) clients whose
    /// current session shows it as its active window. ONE call.
    pub fn clients_viewing(&self, window: &WindowId) -> Result<Vec<String>, TmuxError> {
        let out = self.run(&strings(&[
            "list-clients",
            "-F",
            "#{window_id}\t#{client_flags}\t#{client_name}",
        ]))?;
        Ok(out
            .lines()
            .filter_map(|line| {
                let mut parts = line.splitn(3, '\t');
                let (shown, flags, name) = (parts.next()?, parts.next()?, parts.next()?);
                let away = flags.split(',').any(|f| f == "suspended");
                (shown == window.as_str() && !away && !name.is_empty()).then(|| name.to_string())
            })
            .collect())
    }

    /// Shows `message` on `client`'s status line, literally. tmux 3.2 cannot name the
    /// client (its `display-message -c` takes no argument): there the message goes to the
    /// client tmux picks, the most recently active one.
    pub fn message_client(&self, client: &str, message: &str) -> Result<(), TmuxError> {
        let mut args = strings(&["display-message"]);
        if self.version().is_none_or(|v| v >= (3, 3)) {
            args.extend(strings(&["-c", client]));
        }
        args.extend(strings(&["-d", "5000", &format_literal(message)]));
        self.run(&args).map(|_| ())
    }

    /// The raw values of global options (session or window scope, user options too), in
    /// ONE call; unset ones are empty.
    pub fn global_values(&self, names: &[&str]) -> Result<Vec<String>, TmuxError> {
        self.format_values(FormatTarget::Server, names)
    }

    /// The values of formats as `client` sees them (its current pane), in ONE call.
    pub fn global_values_for_client(
        &self,
        client: &str,
        names: &[&str],
    ) -> Result<Vec<String>, TmuxError> {
        self.format_values(FormatTarget::Client(client), names)
    }

    /// The values of formats for pane `pane` (its path, the command it started with), in
    /// ONE call.
    pub fn pane_values(&self, pane: &PaneId, names: &[&str]) -> Result<Vec<String>, TmuxError> {
        self.format_values(FormatTarget::Pane(pane), names)
    }

    fn format_values(
        &self,
        target: FormatTarget<'_>,
        names: &[&str],
    ) -> Result<Vec<String>, TmuxError> {
        let format = names
            .iter()
            .map(|n| printed::field(n))
            .collect::<Vec<_>>()
            .join("\t");
        let line = match target {
            FormatTarget::Server => self.run(&strings(&["display-message", "-p", &format]))?,
            FormatTarget::Pane(pane) => self.run(&strings(&[
                "display-message",
                "-p",
                "-t",
                pane.as_str(),
                &format,
            ]))?,
            // `display-message -c` takes no client in 3.2 (restored in 3.3); list-clients
            // expands formats with each client's current pane on every release.
            FormatTarget::Client(client) => {
                let out = self.run(&strings(&[
                    "list-clients",
                    "-F",
                    &format!("{}\t{format}", printed::field("client_name")),
                ]))?;
                out.lines()
                    .find_map(|line| {
                        let (name, values) = line.split_once('\t')?;
                        (printed::decode(name) == client).then(|| values.to_string())
                    })
                    .ok_or_else(|| TmuxError::Failed {
                        command: "list-clients".into(),
                        message: format!("can't find client: {client}"),
                    })?
            }
        };
        let mut values: Vec<String> = printed::fields(line.trim_end_matches('\n')).collect();
        values.resize(names.len(), String::new());
        Ok(values)
    }

    /// Runs tmux commands given as argv lists, in ONE call (no output expected).
    pub fn run_commands(&self, commands: &[Vec<String>]) -> Result<(), TmuxError> {
        self.batch(commands).map(|_| ())
    }

    /// The window `client` shows.
    pub fn window_of_client(&self, client: &str) -> Result<Option<WindowId>, TmuxError> {
        match self.format_values(FormatTarget::Client(client), &["window_id"]) {
            Ok(values) => Ok(WindowId::parse(&values[0]).ok()),
            Err(TmuxError::Failed { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Shows `window` of `session` on `client` (the most recent client when `None`).
    pub fn switch_client_to(
        &self,
        client: Option<&str>,
        session: &str,
        window: &WindowId,
    ) -> Result<(), TmuxError> {
        let mut args = strings(&["switch-client"]);
        if let Some(c) = client {
            args.extend(strings(&["-c", c]));
        }
        args.extend(strings(&["-t", &format!("{session}:{window}")]));
        self.run(&args).map(|_| ())
    }

    /// Shows the window of the agent's pane on `client`, if the pane is still ours (checked
    /// in the same call); [`TmuxError::NotOurs`] if not.
    pub fn switch_client_if_ours(
        &self,
        client: &str,
        owned: &OwnedPane,
        session: &str,
        window: &WindowId,
    ) -> Result<(), TmuxError> {
        let action = format!(
            "switch-client -c {} -t {}",
            command_quote(client),
            command_quote(&format!("{session}:{window}"))
        );
        self.guarded(owned, &[], None, &action, "")
    }

    /// A global option's value; `None` when unset (or no server runs).
    /// Asked as a format, not of `show-options` (which 3.4 prints with `$NAME` as
    /// `\$NAME`: a shell command such as `@orchestra-notify-cmd` would change meaning).
    pub fn global_option(&self, name: &str) -> Result<Option<String>, TmuxError> {
        match self.format_values(FormatTarget::Server, &[name]) {
            Ok(mut values) => Ok(Some(values.remove(0)).filter(|v| !v.is_empty())),
            Err(TmuxError::Failed { message, .. }) if no_server(&message) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The attached client that was active most recently.
    pub fn most_recent_client(&self) -> Result<Option<String>, TmuxError> {
        let out = match self.run(&strings(&[
            "list-clients",
            "-F",
            "#{client_activity} #{client_name}",
        ])) {
            Ok(out) => out,
            Err(TmuxError::Failed { message, .. }) if no_server(&message) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(out
            .lines()
            .filter_map(|l| l.split_once(' '))
            .max_by_key(|(activity, _)| activity.parse::<i64>().unwrap_or(0))
            .map(|(_, name)| name.to_string()))
    }

    /// Opens a popup running the shell command `command` on `client`; it closes when the
    /// command ends (`-E`). tmux expands the folder and the title as formats (`#` doubled
    /// here) but hands the command to the shell as it is. An empty title passes no `-T`
    /// (tmux 3.2 has none).
    pub fn popup(
        &self,
        client: &str,
        cwd: &Path,
        title: &str,
        command: &str,
    ) -> Result<(), TmuxError> {
        let mut args = strings(&[
            "display-popup",
            "-E",
            "-c",
            client,
            "-w",
            "90%",
            "-h",
            "90%",
        ]);
        if !title.is_empty() {
            args.extend(["-T".to_string(), format_literal(title)]);
        }
        args.extend([
            "-d".to_string(),
            format_literal(&cwd.to_string_lossy()),
            command.to_string(),
        ]);
        // The popup is a person's (a question, a draft): the call returns when they close
        // it, however long they take.
        let words: Vec<String> = args.iter().map(|w| argument_word(w)).collect();
        self.transport.tmux_waiting_for_a_person(&words).map(|_| ())
    }

    /// A window option's value as the window sees it (set on it, else inherited); `None`
    /// when the window is gone or the option unset. Asked as a format and decoded
    /// ([`printed`]), not of `show-options`, which 3.4/3.5 print escaped.
    pub fn window_option(
        &self,
        window: &WindowId,
        name: &str,
    ) -> Result<Option<String>, TmuxError> {
        let format = printed::field(name);
        match self.run(&strings(&["display-message", "-p", "-t", window, &format])) {
            Ok(line) => {
                let value = printed::decode(line.strip_suffix('\n').unwrap_or(&line));
                Ok((!value.is_empty()).then_some(value))
            }
            Err(TmuxError::Failed { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Closes `window` only if it carries `@orchestra_id` = `id`: a window we did not
    /// create (or one reusing a recycled id) is never touched. The check and the kill are
    /// ONE tmux call. Returns whether it closed.
    pub fn kill_window_if_ours(&self, window: &WindowId, id: &str) -> Result<bool, TmuxError> {
        let id = checked_session_id(id)?;
        self.if_ours(
            window,
            id,
            &[],
            None,
            &format!("kill-window -t {window}"),
            "",
        )
    }

    /// Marks tmux session `name` as made by orchestra for session `id`, so that only such a
    /// session is ever ended by [`Tmux::kill_session_if_ours`].
    pub fn mark_session(&self, name: &str, id: &str) -> Result<(), TmuxError> {
        // `=name:` names the session exactly; a bare `=name` is no pane target.
        self.run(&strings(&[
            "set-option",
            "-t",
            &format!("={name}:"),
            options::OWNER,
            id,
        ]))
        .map(|_| ())
    }

    /// Ends tmux session `name` only if [`Tmux::mark_session`] marked it for `id`. The
    /// owner is compared inside tmux (a format, never printed and read back) and the
    /// check and the kill are ONE call, so a session renamed or re-marked in between is
    /// left alone. Returns whether it ended.
    pub fn kill_session_if_ours(&self, name: &str, id: &str) -> Result<bool, TmuxError> {
        let id = checked_session_id(id)?;
        let target = format!("={name}");
        let marker = format!("orchestra-not-ours-{}", uuid::Uuid::new_v4().simple());
        let check = strings(&[
            "if-shell",
            "-F",
            "-t",
            &format!("{target}:"),
            &format!("#{{==:#{{@orchestra_owner}},{id}}}"),
            &format!("kill-session -t {}", command_quote(&target)),
            &format!("display-message -p {marker}"),
        ]);
        match self.run(&check) {
            Ok(out) => Ok(!out.lines().any(|l| l == marker)),
            Err(TmuxError::Failed { message, .. })
                if message.contains("can't find") || no_server(&message) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    fn kill_window(&self, window: &str) -> Result<(), TmuxError> {
        self.run(&strings(&["kill-window", "-t", window]))
            .map(|_| ())
    }

    /// Every pane on the server with what orchestra needs to know of it, in one call.
    /// No server running means no panes.
    pub fn list_panes(&self) -> Result<Vec<Pane>, TmuxError> {
        match self.run(&strings(&["list-panes", "-a", "-F", &pane_format(None)])) {
            Ok(out) => Ok(parse_panes(&out)),
            Err(TmuxError::Failed { message, .. }) if no_server(&message) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// ONE tmux call: the panes carrying `@orchestra_id`, the server's socket path, the
    /// values of the global `options` asked for, and the screens of the `recapture` panes
    /// that showed output at or after the given second (tmux decides, with `if-shell -F`,
    /// so no extra round trip). `None` when no server runs.
    pub fn snapshot(
        &self,
        options: &[&str],
        recapture: &[(PaneId, i64)],
    ) -> Result<Option<Snapshot>, TmuxError> {
        self.snapshot_since(options, recapture, None)
    }

    /// [`Tmux::snapshot`], with each pane's `current_command` asked only of windows that
    /// showed output at or after `commands_since` (empty for the others); `None` asks all.
    pub fn snapshot_since(
        &self,
        options: &[&str],
        recapture: &[(PaneId, i64)],
        commands_since: Option<i64>,
    ) -> Result<Option<Snapshot>, TmuxError> {
        let pane_format = pane_format(commands_since);
        let mut format = printed::field("socket_path");
        for name in options {
            format.push('\t');
            format.push_str(&printed::field(name));
        }
        let captured_marker = format!("orchestra-captured-{}", uuid::Uuid::new_v4().simple());
        let mut commands = vec![
            strings(&[
                "list-panes",
                "-a",
                "-f",
                // True for any id (never "0"): cheaper for tmux than a comparison.
                "#{@orchestra_id}",
                "-F",
                &pane_format,
            ]),
            strings(&["display-message", "-p", &format]),
        ];
        for (pane, since) in recapture {
            commands.push(strings(&[
                "if-shell",
                "-F",
                "-t",
                pane,
                &format!("#{{e|>=:#{{window_activity}},{since}}}"),
                &format!("capture-pane -p -J -t {pane} ; display-message -p {captured_marker}"),
            ]));
        }
        let parts = match self.batch(&commands) {
            Ok(parts) => parts,
            Err(TmuxError::Failed { message, .. }) if no_server(&message) => return Ok(None),
            // A pane to recapture vanished since the last tick: ask again without them.
            Err(TmuxError::Failed { .. }) if !recapture.is_empty() => {
                return self.snapshot_since(options, &[], commands_since);
            }
            Err(e) => return Err(e),
        };
        let mut values = printed::fields(parts[1].trim_end_matches('\n'));
        let socket_path = values.next().unwrap_or_default();
        let options = options
            .iter()
            .map(|name| (name.to_string(), values.next().unwrap_or_default()))
            .collect();
        let marker_line = format!("{captured_marker}\n");
        let screens = recapture
            .iter()
            .zip(&parts[2..])
            .filter_map(|((pane, _), out)| {
                out.strip_suffix(&marker_line)
                    .map(|screen| (pane.clone(), screen.to_string()))
            })
            .collect();
        Ok(Some(Snapshot {
            socket_path,
            options,
            panes: parse_panes(&parts[0]),
            screens,
        }))
    }

    /// ONE tmux call: every window carrying `@orchestra_id` with the value of its window
    /// option `option`, and the values of the global `options`. `None` when no server runs.
    pub fn windows_with_option(
        &self,
        option: &str,
        options: &[&str],
    ) -> Result<Option<WindowsSeen>, TmuxError> {
        let values = options
            .iter()
            .map(|n| printed::field(n))
            .collect::<Vec<_>>()
            .join("\t");
        let parts = match self.batch(&[
            strings(&[
                "list-windows",
                "-a",
                "-F",
                &format!(
                    "#{{window_id}}\t{}\t{}",
                    printed::field(options::WINDOW_ID),
                    printed::field(option)
                ),
            ]),
            strings(&["display-message", "-p", &values]),
        ]) {
            Ok(parts) => parts,
            Err(TmuxError::Failed { message, .. }) if no_server(&message) => return Ok(None),
            Err(e) => return Err(e),
        };
        let windows = parts[0]
            .lines()
            .filter_map(|line| {
                let mut f = printed::fields(line);
                let (window, id, value) = (f.next()?, f.next()?, f.next().unwrap_or_default());
                let window = WindowId::parse(&window).ok()?;
                (!id.is_empty()).then_some((window, id, value))
            })
            .collect();
        let mut values: Vec<String> = printed::fields(parts[1].trim_end_matches('\n')).collect();
        values.resize(options.len(), String::new());
        Ok(Some(WindowsSeen { windows, values }))
    }

    /// Sets the window option `option` on each (window, session id, value) — unsets it for
    /// an empty value — only where the window still carries `@orchestra_id` = that id,
    /// checked inside the same call. ONE tmux call; a window gone since is skipped.
    pub fn set_window_option_if_ours(
        &self,
        option: &str,
        sets: &[(WindowId, String, String)],
    ) -> Result<(), TmuxError> {
        let mut commands = Vec::new();
        for (window, id, value) in sets {
            let id = checked_session_id(id)?;
            let action = if value.is_empty() {
                format!("set-option -wu -t {window} {}", command_quote(option))
            } else {
                format!(
                    "set-option -w -t {window} {} {}",
                    command_quote(option),
                    command_quote(value)
                )
            };
            commands.push(vec![
                "if-shell".to_string(),
                "-F".into(),
                "-t".into(),
                window.to_string(),
                format!("#{{==:#{{@orchestra_id}},{id}}}"),
                action,
            ]);
        }
        match self.batch(&commands) {
            Ok(_) => Ok(()),
            // A window closed since it was listed stops the batch: the others one by one.
            Err(TmuxError::Failed { .. }) if commands.len() > 1 => {
                for command in commands {
                    let _ = self.batch(&[command]);
                }
                Ok(())
            }
            Err(TmuxError::Failed { message, .. })
                if message.contains("can't find") || no_server(&message) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The visible screens of `panes`, in ONE tmux call.
    pub fn capture_many(&self, panes: &[PaneId]) -> Result<Vec<String>, TmuxError> {
        let commands: Vec<Vec<String>> = panes
            .iter()
            .map(|p| strings(&["capture-pane", "-p", "-J", "-t", p]))
            .collect();
        self.batch(&commands)
    }

    /// Sets several window options in ONE tmux call: (window, option, value).
    pub fn set_window_options(&self, sets: &[(WindowId, String, String)]) -> Result<(), TmuxError> {
        let commands: Vec<Vec<String>> = sets
            .iter()
            .map(|(w, name, value)| strings(&["set-option", "-w", "-t", w, name, value]))
            .collect();
        self.batch(&commands).map(|_| ())
    }

    /// The visible screen of `pane` (plus `history` lines above it), as plain text.
    pub fn capture_pane(&self, pane: &PaneId, history: usize) -> Result<String, TmuxError> {
        self.capture_from(pane, &format!("-{history}"))
    }

    /// The visible screen of `pane` with its colours kept as escape sequences: a menu
    /// that marks its cursor only by colour (opencode's permission dialog) is read here.
    pub fn capture_pane_styled(&self, pane: &PaneId) -> Result<String, TmuxError> {
        self.run(&strings(&["capture-pane", "-p", "-e", "-J", "-t", pane]))
    }

    /// The whole scrollback of `pane` and its screen, as plain text.
    pub fn capture_history(&self, pane: &PaneId) -> Result<String, TmuxError> {
        self.capture_from(pane, "-")
    }

    fn capture_from(&self, pane: &PaneId, start: &str) -> Result<String, TmuxError> {
        self.run(&strings(&[
            "capture-pane",
            "-p",
            "-J",
            "-t",
            pane,
            "-S",
            start,
        ]))
    }

    /// Replaces this process with an interactive `tmux attach` to `target` (through ssh
    /// for a remote server). Returns only on failure.
    pub fn exec_attach(&self, target: &str) -> TmuxError {
        use std::os::unix::process::CommandExt;
        let argv = self.attach_argv(target);
        // No deadline: this process becomes the person's tmux client.
        let err = crate::process::command(&argv[0]).args(&argv[1..]).exec();
        TmuxError::Spawn(err)
    }

    /// The argv of an interactive attach to `target`.
    pub fn attach_argv(&self, target: &str) -> Vec<String> {
        self.transport
            .interactive_argv(&strings(&["attach-session", "-t", target]))
    }

    /// Types `text` into the agent's pane as ONE message, the way `typing` says (see
    /// [`Typing`]). The text travels on tmux's standard input into a named buffer, so no
    /// byte of it is ever read as a key name or parsed as a command; the buffer is pasted
    /// only if the pane is still ours (checked in the same call).
    pub fn type_text(
        &self,
        owned: &OwnedPane,
        text: &str,
        typing: Typing,
    ) -> Result<(), TmuxError> {
        typable(text)?;
        let bracketed = match typing {
            Typing::Paste => true,
            Typing::Natural => text.contains(['\n', '\r']) || text.len() > PASTE_OVER,
        };
        let buffer = format!("orchestra-{}", uuid::Uuid::new_v4().simple());
        let load = strings(&["load-buffer", "-b", &buffer, "-"]);
        let paste = format!(
            "paste-buffer -d{} -b {buffer} -t {}",
            if bracketed { " -p" } else { "" },
            owned.pane
        );
        let result = self.guarded(
            owned,
            &load,
            Some(text.as_bytes()),
            &paste,
            &format!("delete-buffer -b {buffer}"),
        );
        if result.is_err() {
            // The load ran before a check that failed: take the buffer back.
            let _ = self.run(&strings(&["delete-buffer", "-b", &buffer]));
        }
        result
    }

    /// Replaces whatever runs in the agent's pane (alive or dead) with `argv`, started in
    /// `cwd` with `env` added, if the pane is still ours. The pane keeps its id.
    pub fn respawn(
        &self,
        owned: &OwnedPane,
        cwd: &Path,
        env: &[(String, String)],
        argv: &[String],
    ) -> Result<(), TmuxError> {
        let mut words = strings(&["respawn-pane", "-k", "-t", &owned.pane, "-c"]);
        words.push(format_literal(&cwd.to_string_lossy()));
        for (key, value) in env {
            words.push("-e".into());
            words.push(format!("{key}={value}"));
        }
        words.push("--".into());
        words.extend(program_words(argv));
        let action = words
            .iter()
            .map(|w| command_quote(w))
            .collect::<Vec<_>>()
            .join(" ");
        self.guarded(owned, &[], None, &action, "")
    }

    /// Presses the named keys (e.g. `Enter`) in the agent's pane, if it is still ours.
    pub fn press(&self, owned: &OwnedPane, keys: &[Key]) -> Result<(), TmuxError> {
        let names: Vec<&str> = keys.iter().map(|k| k.name()).collect();
        let action = format!("send-keys -t {} {}", owned.pane, names.join(" "));
        self.guarded(owned, &[], None, &action, "")
    }

    /// Runs `action` on the agent's pane if it is still ours; [`TmuxError::NotOurs`] if not.
    fn guarded(
        &self,
        owned: &OwnedPane,
        before: &[String],
        input: Option<&[u8]>,
        action: &str,
        otherwise: &str,
    ) -> Result<(), TmuxError> {
        match self.if_ours(&owned.pane, &owned.id, before, input, action, otherwise)? {
            true => Ok(()),
            false => Err(TmuxError::NotOurs {
                pane: owned.pane.clone(),
            }),
        }
    }

    /// Runs `before` (argv; e.g. a buffer load with `input` on stdin), then `action` (a
    /// tmux command string) only if `target`'s window carries `@orchestra_id` = `id`, else
    /// `otherwise` — all in ONE tmux call, so nothing can take the target in between.
    /// Returns whether `action` ran; a target that does not exist (or no server) is not ours.
    fn if_ours(
        &self,
        target: &str,
        id: &str,
        before: &[String],
        input: Option<&[u8]>,
        action: &str,
        otherwise: &str,
    ) -> Result<bool, TmuxError> {
        let marker = format!("orchestra-not-ours-{}", uuid::Uuid::new_v4().simple());
        let mut commands = Vec::new();
        if !before.is_empty() {
            commands.push(before.to_vec());
        }
        let refuse = if otherwise.is_empty() {
            format!("display-message -p {marker}")
        } else {
            format!("{otherwise} ; display-message -p {marker}")
        };
        commands.push(vec![
            "if-shell".to_string(),
            "-F".into(),
            "-t".into(),
            target.to_string(),
            format!("#{{==:#{{@orchestra_id}},{id}}}"),
            action.to_string(),
            refuse,
        ]);
        match self.run_joined(&commands, input) {
            Ok(out) => Ok(!out.lines().any(|l| l == marker)),
            Err(TmuxError::Failed { message, .. })
                if message.contains("can't find") || no_server(&message) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the agent's pane exists and its window still carries the session's id.
    pub fn is_ours(&self, owned: &OwnedPane) -> Result<bool, TmuxError> {
        let format = format!("#{{==:#{{@orchestra_id}},{}}}", owned.id);
        match self.run(&strings(&[
            "display-message",
            "-p",
            "-t",
            &owned.pane,
            &format,
        ])) {
            Ok(out) => Ok(out.trim() == "1"),
            Err(TmuxError::Failed { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether the agent's pane exists, is still ours, and its program still runs.
    pub fn pane_alive(&self, owned: &OwnedPane) -> Result<bool, TmuxError> {
        let format = format!(
            "#{{?#{{==:#{{@orchestra_id}},{}}},#{{pane_dead}},gone}}",
            owned.id
        );
        match self.run(&strings(&[
            "display-message",
            "-p",
            "-t",
            &owned.pane,
            &format,
        ])) {
            Ok(out) => Ok(out.trim() == "0"),
            Err(TmuxError::Failed { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Keys orchestra presses in an agent's pane: names tmux knows, never free text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Enter,
    Escape,
    Up,
    Down,
    Left,
    Right,
    CtrlC,
}

impl Key {
    fn name(self) -> &'static str {
        match self {
            Key::Enter => "Enter",
            Key::Escape => "Escape",
            Key::Up => "Up",
            Key::Down => "Down",
            Key::Left => "Left",
            Key::Right => "Right",
            Key::CtrlC => "C-c",
        }
    }
}

/// The most one tmux invocation's command may carry, in bytes of its words each with a
/// NUL (how the client packs them into its one message to the server). Measured on tmux
/// 3.3a (a `display-message -p` of growing words): 16364 passes, one byte more fails with
/// "failed to send command", and more than that with "command too long". It is the
/// message size limit (MAX_IMSGSIZE, 16384) less the imsg header (16) and the word
/// count (4); `tmux::` tests/it/health.rs checks the bound against the real server.
pub const COMMAND_MAX: usize = 16_364;

/// The most words one tmux invocation may carry. From 3.7 the server refuses a command
/// message of more than 1000 words, whatever their size, with "command too long" (tmux
/// commit "Limit argc to between 0 and 1000 to prevent fatal from MSG_COMMAND", in
/// `cmd_unpack_argv`): a refresh of 256 windows is short in bytes but long in words.
/// Older releases take more; the batch keeps to this on every release.
pub const WORDS_MAX: usize = 1000;

/// `commands` as the words of one tmux invocation: escaped ([`argument_word`]) and
/// joined by `;`.
fn joined_words(commands: &[Vec<String>]) -> Vec<String> {
    let mut words = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        if i > 0 {
            words.push(";".to_string());
        }
        words.extend(command.iter().map(|w| argument_word(w)));
    }
    words
}

/// What `words` cost in tmux's message: each word and its NUL.
pub fn packed_len(words: &[String]) -> usize {
    words.iter().map(|w| w.len() + 1).sum()
}

/// `commands` cut, in order, into runs that each fit in one invocation with `split` after
/// every command (the batch's marker): under [`COMMAND_MAX`] bytes and [`WORDS_MAX`]
/// words. A command too long on its own goes alone, for tmux to refuse with its own
/// message.
fn chunks_under_limit<'a>(commands: &'a [Vec<String>], split: &[String]) -> Vec<&'a [Vec<String>]> {
    // `;` and its NUL between two commands: one word of two bytes.
    const SEPARATOR: usize = 2;
    let split_cost = SEPARATOR + packed_len(&joined_words(&[split.to_vec()]));
    let split_words = 1 + split.len();
    let mut chunks = Vec::new();
    let (mut start, mut used, mut words) = (0, 0, 0);
    for (i, command) in commands.iter().enumerate() {
        let cost = packed_len(&joined_words(std::slice::from_ref(command))) + split_cost;
        let count = command.len() + split_words;
        let (cost, count) = if i > start {
            (cost + SEPARATOR, count + 1)
        } else {
            (cost, count)
        };
        if i > start && (used + cost > COMMAND_MAX || words + count > WORDS_MAX) {
            chunks.push(&commands[start..i]);
            start = i;
            used = cost - SEPARATOR;
            words = count - 1;
        } else {
            used += cost;
            words += count;
        }
    }
    if start < commands.len() {
        chunks.push(&commands[start..]);
    }
    chunks
}

/// One argument as tmux's command line must see it to read it back whole: a word ending
/// in `;` would end the command there, so its last `;` is escaped (`\;` reads as `;`).
pub fn argument_word(word: &str) -> String {
    match word.strip_suffix(';') {
        Some(head) => format!("{head}\\;"),
        None => word.to_string(),
    }
}

pub use orchestra_model::Typing;

/// Longer texts than this go as one bracketed paste under [`Typing::Natural`].
const PASTE_OVER: usize = 200;

/// `id` if it is a plain session id (letters, digits, `-`, `_`): it goes into formats.
fn checked_session_id(id: &str) -> Result<&str, TmuxError> {
    let plain = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if plain {
        Ok(id)
    } else {
        Err(TmuxError::BadTarget {
            what: "session id",
            value: id.to_string(),
        })
    }
}

/// One word of a tmux command string that tmux's parser reads back exactly: single
/// quotes take everything literally (`$`, `~`, `;`, `#`, newlines), and a quote inside is
/// closed, escaped and reopened.
pub fn command_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// A value for an argument tmux expands as a format (`-c`, `-n`, `-d`, `-T`, messages):
/// `#` doubled, so `#(…)` and `#{…}` stay text.
pub fn format_literal(text: &str) -> String {
    text.replace('#', "##")
}

/// How a program's argv follows `--` in new-window/respawn-pane: tmux hands a single
/// argument to the shell, so a lone program is shell-quoted; several are executed directly.
fn program_words(argv: &[String]) -> Vec<String> {
    if argv.len() == 1 {
        vec![shell_words::quote(&argv[0]).into_owned()]
    } else {
        argv.to_vec()
    }
}

/// Shows `message` on the attached clients of the server at `socket`; false when there is
/// no such server or no client to show it on.
pub fn display_message(socket: Option<&str>, message: &str) -> bool {
    let server = Server::at(socket);
    let tmux = Tmux::new(&server);
    // A message is a format: `#` must be doubled to stay itself.
    let literal = message.replace('#', "##");
    tmux.run(&strings(&["display-message", "-d", "5000", &literal]))
        .is_ok()
}

/// What the tmux client says of a command its message cannot hold.
fn too_long_for_tmux(message: &str) -> bool {
    message.contains("command too long") || message.contains("failed to send command")
}

fn no_server(message: &str) -> bool {
    message.contains("no server running") || message.contains("error connecting to")
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(std::string::ToString::to_string).collect()
}

/// "tmux 3.3a" → (3, 3); "tmux next-3.4" → (3, 4); unparsable (e.g. "master") → None.
pub fn parse_version(text: &str) -> Option<(u32, u32)> {
    let digits = text.trim_start_matches(|c: char| !c.is_ascii_digit());
    let mut parts = digits.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// A tmux session name derived from free text: tmux itself rewrites `.` and `:`.
pub fn session_name_for(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(parse_version("tmux 3.3a"), Some((3, 3)));
        assert_eq!(parse_version("tmux 3.2"), Some((3, 2)));
        assert_eq!(parse_version("tmux next-3.4"), Some((3, 4)));
        assert_eq!(parse_version("tmux 2.9a"), Some((2, 9)));
        assert_eq!(parse_version("tmux master"), None);
    }

    #[test]
    fn batches_are_cut_in_order_into_calls_under_the_command_limit() {
        let split = strings(&[
            "display-message",
            "-p",
            &format!("orchestra-split-{}", "0".repeat(32)),
        ]);
        // A recapture-sized command each (an if-shell with its nested commands), some
        // ending in `;`, which the escaping makes a byte longer.
        let commands: Vec<Vec<String>> = (0..600)
            .map(|n| {
                strings(&[
                    "if-shell",
                    "-F",
                    "-t",
                    &format!("%{n}"),
                    &format!("#{{e|>=:#{{window_activity}},{n}}}"),
                    &format!("capture-pane -p -J -t %{n} ; display-message -p marker{n};"),
                ])
            })
            .collect();
        let chunks = chunks_under_limit(&commands, &split);
        assert!(chunks.len() > 1);
        for (i, chunk) in chunks.iter().enumerate() {
            let mut joined = Vec::new();
            for c in *chunk {
                joined.push(c.clone());
                joined.push(split.clone());
            }
            let len = packed_len(&joined_words(&joined));
            assert!(len <= COMMAND_MAX, "{len}");
            assert!(joined_words(&joined).len() <= WORDS_MAX);
            // Full, but for the last: the next command would not have fitted.
            assert!(i + 1 == chunks.len() || len > COMMAND_MAX - 300, "{len}");
        }
        let rejoined: Vec<&Vec<String>> = chunks.iter().flat_map(|c| c.iter()).collect();
        assert_eq!(rejoined, commands.iter().collect::<Vec<_>>());
        // A command too long alone goes alone; none at all makes no call.
        let huge = vec![
            strings(&["a"]),
            vec!["x".repeat(COMMAND_MAX)],
            strings(&["b"]),
        ];
        assert_eq!(chunks_under_limit(&huge, &split).len(), 3);
        assert!(chunks_under_limit(&[], &split).is_empty());
    }

    /// Short commands fill tmux's 1000 words (3.7's limit) long before its bytes: a
    /// 256-window refresh of `set-option`s is such a batch.
    #[test]
    fn batches_of_short_commands_are_cut_under_the_word_limit() {
        let split = strings(&["display-message", "-p", "orchestra-split-0"]);
        let commands: Vec<Vec<String>> = (0..600)
            .map(|n| strings(&["set-option", "-w", "-t", &format!("@{n}"), "@o", "x"]))
            .collect();
        let chunks = chunks_under_limit(&commands, &split);
        let mut words_of = Vec::new();
        for chunk in &chunks {
            let mut joined = Vec::new();
            for c in *chunk {
                joined.push(c.clone());
                joined.push(split.clone());
            }
            let words = joined_words(&joined).len();
            assert!(words <= WORDS_MAX, "{words} words");
            assert!(packed_len(&joined_words(&joined)) < COMMAND_MAX / 2);
            words_of.push(words);
        }
        // Full but for the last: one more command (11 words) would not have fitted.
        assert!(words_of[..words_of.len() - 1]
            .iter()
            .all(|w| *w > WORDS_MAX - 11));
        assert_eq!(chunks.iter().map(|c| c.len()).sum::<usize>(), 600);
    }

    #[test]
    fn a_word_ending_in_a_semicolon_is_escaped_once() {
        assert_eq!(argument_word("a;"), "a\\;");
        assert_eq!(argument_word(";"), "\\;");
        assert_eq!(argument_word("c\\;"), "c\\\\;");
        assert_eq!(argument_word("plain"), "plain");
        assert_eq!(argument_word("a;b"), "a;b");
    }

    #[test]
    fn session_names() {
        assert_eq!(session_name_for("orchestra-my.repo"), "orchestra-my_repo");
    }
}
