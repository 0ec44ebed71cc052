//! The command line: every flag is documented by its `///` line, which is also its `--help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Run several AI coding agents in parallel on one project, each in its own git worktree,
/// branch and tmux window. Nothing merges without your yes; unmerged work is never deleted.
#[derive(Debug, Parser)]
#[command(name = "orchestra", version, propagate_version = true)]
pub struct Cli {
    /// The tmux server's socket [env: ORCHESTRA_TMUX_SOCKET]. Default: the server this
    /// shell runs inside ($TMUX), else tmux's default server.
    // Not clap's `env`: clap counts a value from the environment as given on the command
    // line, and every usage line would then show `--socket <PATH>` as if it were required.
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// `--socket`, else `$ORCHESTRA_TMUX_SOCKET`.
    pub fn socket(&self) -> Option<PathBuf> {
        self.socket.clone().or_else(|| {
            std::env::var_os("ORCHESTRA_TMUX_SOCKET")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Turn a title into a free session label: `orchestra slugify Fix the login bug`.
    Slugify(SlugifyArgs),
    /// Start an agent on a new branch `session/<LABEL>`, in its own worktree and tmux window.
    Dispatch(DispatchArgs),
    /// Run the repo's check (`[worktree] check` in orchestra.toml, e.g. "cargo test") in a
    /// session's worktree, or in each candidate's of a group, as a bounded job; its result
    /// (pass/fail, time, the end of its output) is recorded on the session.
    Check(CheckArgs),
    /// A group's candidates side by side: state, commits, files and lines changed, check,
    /// cost, time, conflicts with the target and each other; `compare GROUP A B` shows what
    /// A changes that B does not; `--pick A` merges A and offers to archive the others.
    Compare(CompareArgs),
    /// A new session from another's current state: `orchestra fork api api-b --prompt
    /// "try a queue instead"`: branch session/NEW at LABEL's HEAD with LABEL's uncommitted
    /// work as one commit (LABEL's worktree untouched), claude's conversation forked, the
    /// two in one group.
    Fork(ForkArgs),
    /// List the sessions of this repo (or of every repo with --all).
    List(ListArgs),
    /// What the claude sessions cost, from their conversation logs: tokens by kind and
    /// dollars per session, or rolled up by outcome (merged, archived, killed, down, live)
    /// or day.
    Cost(CostArgs),
    /// Close a session: its window and worktree go; its branch is deleted if merged, else
    /// renamed archive/<LABEL>-<time>. Unmerged work is never lost.
    Kill(KillArgs),
    /// Allow the commands this repo's orchestra.toml runs on its own (a dispatch's setup,
    /// a kill's or merge's teardown, a merge's wrap_up_cmd), the API addresses it names
    /// for your tokens ([github] api, [tasks] api), its .mcp.json and its agent settings
    /// (.claude/settings.json…): `orchestra allow` in the repo. A change to any needs
    /// allowing again.
    Allow(AllowArgs),
    /// Send a briefing to a session's agent, exactly as given, as one message:
    /// `orchestra brief api "Use the v2 endpoints"` or `orchestra brief --all @notes.md`.
    Brief(BriefArgs),
    /// Answer the permission menu on a session's screen with its "Yes" entry (or, with
    /// --always, the entry that stops asking for this kind of action).
    Approve(ApproveArgs),
    /// Answer the permission menu on a session's screen with "No" (or Esc where there is none).
    Deny(DenyArgs),
    /// Review a session's work: its commits, diffstat and full diff (through $PAGER), and
    /// its uncommitted changes apart.
    Review(ReviewArgs),
    /// Merge a session into its target branch after showing what it brings and asking
    /// `[y/N]`; checks for conflicts in memory first. Nothing merges without a yes.
    Merge(MergeArgs),
    /// Push a session's branch to the repo's remote and open a pull request on GitHub for
    /// it (a draft, unless --ready), or update the open one: title and body drafted from
    /// the session's task, commits and diffstat, and opened in $EDITOR to edit first.
    Pr(PrArgs),
    /// Mark a session done (a worker runs it with ORCHESTRA_SESSION set): its dependents
    /// are checked and a notification says so.
    Done(DoneArgs),
    /// Bring back a dead or exited session in its worktree, its conversation resumed
    /// (`claude --resume <uuid>`), or run a failed setup again: `orchestra restart api` or
    /// `orchestra restart all`.
    Restart(RestartArgs),
    /// Start the orchestrator agent for a repo in a tmux window, with the task-drafting
    /// prompt appended: it turns requests into tasks and dispatches them.
    Launch(LaunchArgs),
    /// Register the pane you are in as this repo's orchestrator, without restarting it.
    Promote(PromoteArgs),
    /// The open tasks of this repo's project in its tracker ([tasks] in orchestra.toml):
    /// `orchestra tasks`; `orchestra tasks pick ID --dispatch` starts a session on one.
    Tasks(TasksArgs),
    /// Dependencies between sessions: `deps add B A out/data.csv` makes B wait for A's file.
    Deps(DepsArgs),
    /// Check tmux, git and the state store, and reconcile the record with what is really
    /// there (exit 1 when a problem remains).
    Doctor(DoctorArgs),
    /// Record an agent event: the endpoint for Claude Code hooks (hook JSON on stdin) and
    /// tmux hooks. `orchestra event --session ID waiting`.
    Event(EventArgs),
    /// Say what a captured screen shows: busy, waiting, idle, error or unknown.
    /// `tmux capture-pane -p -t %3 | orchestra classify`.
    Classify(ClassifyArgs),
    /// Read every orchestra window once (batched), update states, badges and the record.
    Refresh(RefreshArgs),
    /// Print the status-line summary (e.g. `⚙2 ✋1 ✓3`), refreshing at most once a second.
    /// What `#{orchestra_status}` in status-left/right becomes (`orchestra tmux init`).
    StatusLine,
    /// Show every session's state, who said it, and how long its window has been quiet.
    Health(HealthArgs),
    /// A live dashboard: the health table, redrawn in place every second (Ctrl-C ends it).
    /// What the menu's Dashboard opens in a popup.
    Watch {
        /// Seconds between redraws.
        #[arg(long, default_value_t = 1)]
        interval: u64,
        /// Stop after this many redraws (0: until interrupted).
        #[arg(long, default_value_t = 0)]
        count: u64,
    },
    /// Show the newest events (state and status changes) of this repo's sessions.
    Events(EventsArgs),
    /// The conflict radar: the pairs of this repo's live sessions (and of a session and
    /// its target branch) whose work would conflict if merged — found by merging in
    /// memory, uncommitted changes included — with the paths and since when.
    Conflicts(ConflictsArgs),
    /// Run the conflict radar now for every repo with live sessions: window badges,
    /// notifications of new pairs, the status line's segment. The status line starts it
    /// in the background every @orchestra-radar-interval.
    Radar(RadarArgs),
    /// Print a shell completion script: `orchestra completions bash > ~/.local/share/bash-completion/completions/orchestra`.
    Completions {
        #[arg(value_parser = ["bash", "zsh", "fish"])]
        shell: String,
    },
    /// Print the manual page (roff): `orchestra man | man -l -`.
    Man,
    /// The tmux side: `orchestra tmux init` binds the keys, the status segment, the window
    /// badges and the pane hooks (what orchestra.tmux runs when TPM loads the plugin).
    Tmux(TmuxArgs),
    /// Start the sessions of orchestra.toml (NAME, or all): the tmux session named by
    /// `tmux` on its host if missing, and the agent in it; `blocked_by` upstreams first.
    Up(UpDownArgs),
    /// Stop the sessions of orchestra.toml (NAME, or all): the agent's exit command, a
    /// wait, then the tmux session ends if `up` created it. Dependents stop first.
    Down(UpDownArgs),
    /// Every session, local and remote, a line each: label, host, state, status, and
    /// whether its host answers.
    Status(StatusArgs),
    /// The last N lines of a session's screen (local or remote): `orchestra tail api 20`.
    Tail(TailArgs),
    /// Go to a session's window: switch to it inside tmux, attach outside; a remote one
    /// opens `ssh -t HOST tmux attach` (in a new window when inside tmux).
    Attach(AttachArgs),
    /// Save the full screen and scrollback of every live session to DIR (default
    /// $ORCHESTRA_HOME/collect/<time>), one file per session.
    Collect(CollectArgs),
    /// The manifest's SSH hosts: `hosts check` connects to each; `hosts trust NAME` adds
    /// the key a host shows to ~/.ssh/known_hosts (never replaces a changed one).
    Hosts(HostsArgs),
    /// Open an OpenSSH master connection to HOST (a [hosts.*] name, or user@host[:port])
    /// on this terminal: answer its prompts (password, one-time code, passphrase, jump
    /// host) once; hosts with transport = "openssh" ride it, without ever prompting.
    Connect(ConnectArgs),
    /// Convert the config.yaml of the multi-host orchestrator orchestra replaces into an
    /// orchestra.toml: hosts (`user@server`), sessions, dependencies. What has no place in
    /// orchestra is kept as a comment and listed on stderr.
    Import(ImportArgs),
    /// Ask each manifest session's agent (`claude -p` in its folder, remote ones over SSH)
    /// what it has learned (prompts/insight.md), then synthesize the reports into
    /// CONTEXT.md.
    Insights(SyncArgs),
    /// Ask each manifest session's agent to reflect and consolidate (prompts/dream.md),
    /// then synthesize the reports into CONTEXT.md.
    Dream(SyncArgs),
    /// Insights and dream for every manifest session, both synthesized into CONTEXT.md.
    Sync(SyncArgs),
    /// Send a desktop notification the way orchestra does (bus, then @orchestra-notify-cmd,
    /// then tmux display-message). Mostly for orchestra itself and for testing a set-up.
    Notify(NotifyArgs),
    /// An MCP server on stdio for the orchestrator agent (`orchestra launch` wires it in):
    /// tools to draft, dispatch, follow, review and brief sessions. None merges, kills,
    /// approves or denies: those stay the person's.
    Mcp(McpArgs),
    /// What a session's window runs before its agent: the worktree's setup command (and,
    /// for a session unblocked just now, the move of its branch), then the agent itself.
    #[command(hide = true)]
    Prepare(PrepareArgs),
    /// What a sandbox whose network is a list of hosts runs: around bwrap (`outside`,
    /// which starts the proxy) and around its command inside (`inside`, which starts the
    /// bridge to it), and those two servers themselves.
    #[command(hide = true, name = "sandbox-net")]
    SandboxNet(SandboxNetArgs),
}

#[derive(Debug, Args)]
pub struct SandboxNetArgs {
    #[command(subcommand)]
    pub part: SandboxNetPart,
}

#[derive(Debug, Subcommand)]
pub enum SandboxNetPart {
    /// Starts the proxy on SOCKET, then becomes COMMAND (bwrap).
    Outside {
        #[arg(long)]
        socket: PathBuf,
        /// The hosts, separated by commas.
        #[arg(long)]
        allow: String,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Starts the bridge on 127.0.0.1:PORT to SOCKET, then becomes COMMAND (the agent).
    Inside {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long)]
        port: u16,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// The proxy, for as long as process PARENT is its parent.
    Proxy {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long)]
        allow: String,
        #[arg(long)]
        parent: u32,
    },
    /// The bridge, for as long as process PARENT is its parent.
    Bridge {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long)]
        port: u16,
        #[arg(long)]
        parent: u32,
    },
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub repo: RepoArg,
    /// Who asks: recorded as "requested_by" on every session the server dispatches.
    /// Default: $ORCHESTRA_SESSION, else none.
    #[arg(long, value_name = "WHO")]
    pub session: Option<String>,
}

#[derive(Debug, Args)]
pub struct PrepareArgs {
    /// The session's id.
    pub session: String,
    /// The session was blocked until now: move its branch onto the work it waited for.
    #[arg(long)]
    pub unblocked: bool,
    /// Continue the agent's conversation (a restart), with no prompt.
    #[arg(long)]
    pub resume: bool,
    /// Type the prompt and answer the trust dialog of the agent that just started.
    #[arg(long)]
    pub after_start: bool,
}

#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// The repository. Default: the current folder.
    #[arg(long, value_name = "DIR", conflicts_with = "new")]
    pub repo: Option<PathBuf>,
    /// Create a new git repository NAME under $ORCHESTRA_PROJECTS_DIR (default
    /// ~/projects) first.
    #[arg(long, value_name = "NAME")]
    pub new: Option<String>,
    /// Continue the orchestrator's last conversation.
    #[arg(long)]
    pub resume: bool,
    /// The agent command. Default: $ORCHESTRA_AGENT, else `claude`.
    #[arg(long, value_name = "CMD")]
    pub agent: Option<String>,
}

#[derive(Debug, Args)]
pub struct TasksArgs {
    #[command(subcommand)]
    pub command: Option<TasksCommand>,
    #[command(flatten)]
    pub repo: RepoArg,
    /// Print a JSON array of {"id", "title", "status", "url"}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// Move task ID to in progress ([tasks] in_progress, default "In progress"); with
    /// --dispatch, first start a session on it.
    Pick(PickArgs),
}

#[derive(Debug, Args)]
pub struct PickArgs {
    /// The task's id, as `orchestra tasks` prints it (a Notion page's URL, a GitHub
    /// issue's #N or URL, or a Linear issue's identifier such as ENG-12 or its URL, works
    /// too).
    pub id: String,
    /// Dispatch a session whose prompt is the task's title and content, and record the
    /// task on it (`list --json` shows it as "task").
    #[arg(long)]
    pub dispatch: bool,
    /// The session's label with --dispatch. Default: the task's title, slugified (a free
    /// one, as `orchestra slugify` finds it).
    #[arg(long, requires = "dispatch")]
    pub label: Option<String>,
    /// The agent command with --dispatch. Default: $ORCHESTRA_AGENT, else `claude`.
    #[arg(long, value_name = "CMD", requires = "dispatch")]
    pub agent: Option<String>,
    /// Who asked for the session with --dispatch (what `orchestra mcp` passes).
    #[arg(long, value_name = "WHO", requires = "dispatch", hide = true)]
    pub requested_by: Option<String>,
    #[command(flatten)]
    pub repo: RepoArg,
}

#[derive(Debug, Args)]
pub struct PromoteArgs {
    #[command(flatten)]
    pub repo: RepoArg,
}

#[derive(Debug, Args)]
pub struct DoneArgs {
    /// The session's label. Default: the session in $ORCHESTRA_SESSION.
    pub label: Option<String>,
    #[command(flatten)]
    pub repo: RepoArg,
}

#[derive(Debug, Args)]
pub struct RestartArgs {
    /// The session's label, or `all` for every dead or exited session of this repo.
    pub target: String,
    #[command(flatten)]
    pub repo: RepoArg,
}

#[derive(Debug, Args)]
pub struct DepsArgs {
    #[command(subcommand)]
    pub command: DepsCommand,
    #[command(flatten)]
    pub repo: RepoArg,
}

#[derive(Debug, Subcommand)]
pub enum DepsCommand {
    /// DEPENDENT waits for UPSTREAM's ARTIFACT: a file path (in its worktree or committed
    /// on its branch), a branch name, or a commit, tried in that order; `file:`,
    /// `branch:`, `commit:` force the kind. Refused: self edges, duplicates, cycles.
    Add {
        dependent: String,
        upstream: String,
        artifact: String,
    },
    /// Exit 0 if UPSTREAM's ARTIFACT exists, 1 if not; prints nothing.
    Check { upstream: String, artifact: String },
    /// The dependents still waiting on LABEL (not yet told), one per line.
    Pending { label: String },
    /// Record that DEPENDENT was told UPSTREAM's artifacts are ready (idempotent).
    Notified { dependent: String, upstream: String },
    /// The graph: a text list, or --json ({"nodes", "edges"}), or --dot (Graphviz).
    Graph {
        #[arg(long, conflicts_with = "dot")]
        json: bool,
        #[arg(long)]
        dot: bool,
    },
}

#[derive(Debug, Args)]
pub struct BriefArgs {
    /// The session's label (omit with --all), then the text, or @FILE to send a file.
    #[arg(required = true, num_args = 1..=2, value_name = "LABEL TEXT|@FILE")]
    pub words: Vec<String>,
    /// Send to every live session of this repo.
    #[arg(long)]
    pub all: bool,
    /// Send even when a menu or question is open (the text would answer it) or the agent has exited.
    #[arg(long)]
    pub force: bool,
    /// Instead of a text: a note naming the files where the session's work conflicts with
    /// other live sessions (or its target branch), and who they are. Give only LABEL.
    #[arg(long, conflicts_with = "all")]
    pub conflicts: bool,
    /// Instead of a text: the failing CI check of the session's pull request (as the
    /// background read last saw it) and the end of its log. Give only LABEL.
    #[arg(long, conflicts_with_all = ["all", "conflicts"])]
    pub ci: bool,
    #[command(flatten)]
    pub repo: RepoArg,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The session's label.
    pub label: String,
    /// Choose the entry that stops asking for this kind of action ("don't ask again",
    /// "always allow", "allow all edits"), never one that switches to auto mode.
    #[arg(long)]
    pub always: bool,
    /// Approve only this question ("npm test", or "run: npm test" as a notification says
    /// it): refused, nothing sent, when the screen asks something else.
    #[arg(long, value_name = "TEXT")]
    pub expect: Option<String>,
    #[command(flatten)]
    pub repo: RepoArg,
}

#[derive(Debug, Args)]
pub struct DenyArgs {
    /// The session's label.
    pub label: String,
    #[command(flatten)]
    pub repo: RepoArg,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The session's label.
    pub label: String,
    #[command(flatten)]
    pub repo: RepoArg,
    /// The branch to compare against. Default: the branch the session started from.
    #[arg(long, value_name = "BRANCH")]
    pub into: Option<String>,
    /// Print commits, files, insertions, deletions, conflicts and uncommitted paths as JSON.
    #[arg(long)]
    pub json: bool,
    /// Show it in a tmux popup (on --client, else the most recently active client).
    #[arg(long)]
    pub popup: bool,
    /// The tmux client for --popup (key bindings pass #{client_name}).
    #[arg(long, value_name = "NAME")]
    pub client: Option<String>,
}

#[derive(Debug, Args)]
pub struct PrArgs {
    /// The session's label.
    #[arg(required_unless_present = "background")]
    pub label: Option<String>,
    #[command(flatten)]
    pub repo: RepoArg,
    /// Send the drafted title and body without opening them in $EDITOR first (needed
    /// without a terminal).
    #[arg(long)]
    pub yes: bool,
    /// Open it ready for review, not as a draft.
    #[arg(long)]
    pub ready: bool,
    /// The title. Default: the first line of the session's task.
    #[arg(long, value_name = "TITLE")]
    pub title: Option<String>,
    /// The branch to merge into. Default: the branch the session started from.
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,
    /// How the status line starts it: read every recorded pull request's state (one
    /// conditional request per repo, more only for what changed), marks and notifications
    /// after; returns at once while another read runs; silent unless --json.
    #[arg(long, hide = true, conflicts_with_all = ["label", "yes", "ready", "title", "base"])]
    pub background: bool,
    /// With --background: print what the read did as JSON (requests, 304s, changed).
    #[arg(long, requires = "background")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The session's label.
    pub label: String,
    #[command(flatten)]
    pub repo: RepoArg,
    /// Merge without asking (the only way without a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// The branch to merge into. Default: the branch the session started from.
    #[arg(long, value_name = "BRANCH")]
    pub into: Option<String>,
    /// One commit with the target as its only parent instead of a merge commit.
    #[arg(long)]
    pub squash: bool,
    /// Commit the session's uncommitted changes (as a WIP commit) instead of refusing.
    #[arg(long)]
    pub include_uncommitted: bool,
    /// Run the whole flow, question included, in a tmux popup.
    #[arg(long)]
    pub popup: bool,
    /// The tmux client for --popup (key bindings pass #{client_name}).
    #[arg(long, value_name = "NAME")]
    pub client: Option<String>,
}

#[derive(Debug, Args)]
pub struct TmuxArgs {
    #[command(subcommand)]
    pub command: TmuxCommand,
}

#[derive(Debug, Subcommand)]
pub enum TmuxCommand {
    /// Read the @orchestra-* options once, then bind the keys, interpolate
    /// #{orchestra_status}, add the window badge and install the pane hooks. Idempotent.
    Init,
    /// The orchestra menu (what prefix + @orchestra-key opens), on --client.
    Menu {
        #[arg(long)]
        client: Option<String>,
    },
    /// A sub-menu listing the sessions, each running ACTION on the chosen one.
    Pick {
        #[arg(value_parser = ["review", "merge", "compare", "brief", "fork", "pr", "approve", "deny", "kill", "tasks"])]
        action: String,
        #[arg(long)]
        client: Option<String>,
    },
    /// A menu entry's action on --client (run by tmux): a popup, the kill confirmation, or
    /// the command itself with its outcome as a message.
    #[command(hide = true)]
    Act {
        #[arg(value_parser = ["dispatch", "status", "watch", "conflicts", "allow", "review", "merge", "compare", "brief", "fork", "pr", "approve", "deny", "kill", "task"])]
        action: String,
        /// The session, by id (what the sub-menus pass).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// The tracker's task to pick and dispatch, by id (what the Tasks… menu passes).
        #[arg(long, value_name = "ID")]
        task: Option<String>,
        #[arg(long)]
        client: String,
        /// Kill without asking (the confirmation's yes).
        #[arg(long)]
        yes: bool,
    },
    /// Inside a menu's popup: ask on this terminal, every byte as typed, then act
    /// (dispatch: a title and a task; brief: the text; fork: the new label); or show
    /// status or the conflicts until Enter.
    #[command(hide = true)]
    Ask {
        #[arg(value_parser = ["dispatch", "brief", "fork", "pr", "status", "conflicts", "allow"])]
        what: String,
        /// The session to brief, fork or open a pull request of, by id.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        #[arg(long, value_name = "DIR")]
        repo: Option<PathBuf>,
    },
    /// Jump to the next window whose agent waits for a person.
    NextWaiting {
        #[arg(long)]
        client: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct EventArgs {
    /// A Claude Code hook event (UserPromptSubmit, PreToolUse, PostToolUse,
    /// PermissionRequest, Notification, Stop, StopFailure, SessionEnd), a Gemini CLI hook
    /// event (BeforeAgent, BeforeTool, AfterTool, Notification, AfterAgent, SessionStart,
    /// SessionEnd), codex's notify (codex-notify), aider's notification
    /// (aider-notification), an opencode plugin event (opencode-session.status, …), a tmux hook (pane-died, pane-exited), or a state (busy, waiting,
    /// idle, error, exited).
    pub event: String,
    /// The JSON a notify program gets as its last argument (codex's `notify`); hooks that
    /// send theirs on stdin leave it out.
    #[arg(value_name = "PAYLOAD")]
    pub payload: Option<String>,
    /// The session's id. Default: $ORCHESTRA_SESSION.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Called as an agent's hook: read the hook JSON on stdin, never fail (a failing
    /// hook would block the agent); problems go to $ORCHESTRA_HOME/logs/hooks.log.
    #[arg(long)]
    pub from_hook: bool,
    /// Internal: the detached half of an event that says when, not what (aider's
    /// notification): wait for the screen to show what, and record it.
    #[arg(long, hide = true)]
    pub settle: bool,
    /// Called on a remote host for a claude session of another machine's orchestra: keep
    /// the hook's word in $ORCHESTRA_HOME/remote-states/<session>.json, which that
    /// orchestra's remote refresh reads (`orchestra hosts install` sets this up).
    #[arg(long, requires = "from_hook")]
    pub remote: bool,
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Only this session's events.
    pub label: Option<String>,
    #[command(flatten)]
    pub repo: RepoArg,
    /// Events of every repo.
    #[arg(long)]
    pub all: bool,
    /// How many of the newest events.
    #[arg(short = 'n', long, default_value_t = 50)]
    pub limit: usize,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ConflictsArgs {
    #[command(flatten)]
    pub repo: RepoArg,
    /// Print a JSON array of pairs ({"session", "with", "target", "paths", "uncommitted",
    /// "since", …}).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RadarArgs {
    /// Print what the pass did as JSON (per repo: sessions, pairs, merged, conflicts).
    #[arg(long)]
    pub json: bool,
    /// How the status line starts it: only if no other pass runs (else return at once),
    /// reading in full only the worktrees that may have changed since their last read
    /// (branch moved, output in the window, or a minute passed); silent unless --json.
    #[arg(long)]
    pub background: bool,
}

#[derive(Debug, Args)]
pub struct ClassifyArgs {
    /// The captured screen. Default: standard input.
    pub file: Option<PathBuf>,
    /// The agent kind whose rules apply.
    #[arg(long, default_value = "claude")]
    pub kind: String,
    /// Print {"state", "rule", "kind"} instead of the word (with --disagreements: each
    /// kept disagreement as JSON, screen included).
    #[arg(long)]
    pub json: bool,
    /// List the screens kept when the screen disagreed with a hook's word long enough to
    /// win: number, when, session, agent release, the hook's word, the screen's verdict
    /// and rule.
    #[arg(long, conflicts_with = "file")]
    pub disagreements: bool,
    /// With --disagreements: write kept screen N (as listed) to PATH, a new file, to make
    /// a fixture of it.
    #[arg(long, num_args = 2, value_names = ["N", "PATH"], requires = "disagreements")]
    pub save: Option<Vec<String>>,
}

#[derive(Debug, Args)]
pub struct RefreshArgs {
    /// Print what the refresh did as JSON.
    #[arg(long)]
    pub json: bool,
    /// Refresh the sessions on remote hosts instead (one SSH exec per host), saving what
    /// is seen for the status line; what `status-line` starts in the background.
    #[arg(long)]
    pub remote: bool,
}

#[derive(Debug, Args)]
pub struct ManifestArg {
    /// The manifest. Default: orchestra.toml at the root of the repo.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The repository (any folder inside it). Default: the current folder.
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct UpDownArgs {
    /// A session of the manifest, or `all`.
    #[arg(default_value = "all", value_name = "NAME|all")]
    pub target: String,
    #[command(flatten)]
    pub manifest: ManifestArg,
    /// Seconds `down` waits for the agent to exit before closing its window anyway.
    #[arg(long, default_value_t = 20, value_name = "SECONDS")]
    pub wait: u64,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub manifest: ManifestArg,
    /// Print a JSON array of rows.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TailArgs {
    /// The session's label.
    pub label: String,
    /// How many lines. Default: the manifest's capture_lines, else 50.
    pub lines: Option<usize>,
    #[command(flatten)]
    pub manifest: ManifestArg,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The session's label.
    pub label: String,
    #[command(flatten)]
    pub manifest: ManifestArg,
}

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// Where to write. Default: $ORCHESTRA_HOME/collect/<time>.
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub manifest: ManifestArg,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The config.yaml to read.
    #[arg(value_name = "CONFIG.YAML")]
    pub file: PathBuf,
    #[command(flatten)]
    pub manifest: ManifestArg,
    /// Replace the manifest when there is one already.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct HostsArgs {
    #[command(subcommand)]
    pub command: HostsCommand,
    #[command(flatten)]
    pub manifest: ManifestArg,
}

#[derive(Debug, Subcommand)]
pub enum HostsCommand {
    /// Connect to each host (or NAME): host key, login, tmux version, round trip.
    Check { name: Option<String> },
    /// Add the key host NAME shows to ~/.ssh/known_hosts. With --fingerprint, only if it
    /// is that key (copy it from the refusal message); a changed key is never replaced.
    Trust {
        name: String,
        /// The SHA256:… fingerprint you expect.
        #[arg(long, value_name = "SHA256:…")]
        fingerprint: Option<String>,
    },
    /// Copy this orchestra to host NAME (~/.local/bin/orchestra) when its OS and
    /// architecture match (`uname -sm`), and check its --version: from then on its claude
    /// sessions' states come from their hooks ("hook-exact"), not only their screens.
    Install {
        name: String,
        /// Copy even when the host already runs this version.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// A [hosts.*] name of the manifest, or user@host[:port].
    #[arg(value_name = "HOST")]
    pub host: String,
    /// How long the connection stays open after its last use ("4h", "30m").
    #[arg(long, default_value = "4h", value_name = "DURATION")]
    pub persist: String,
    /// Exit 0 if the connection is open, 1 if not; open nothing.
    #[arg(long, conflicts_with = "close")]
    pub check: bool,
    /// Close the connection.
    #[arg(long)]
    pub close: bool,
    #[command(flatten)]
    pub manifest: ManifestArg,
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Only this manifest session. Default: every one.
    pub name: Option<String>,
    #[command(flatten)]
    pub manifest: ManifestArg,
    /// How many agents run at once.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub jobs: usize,
    /// How long each agent may take ("90s", "10m").
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub timeout: String,
    /// Only if the last run of this command is older than orchestra.toml's sync_interval
    /// (for cron or a tmux hook: there is no daemon to keep the interval).
    #[arg(long)]
    pub if_due: bool,
}

#[derive(Debug, Args)]
pub struct HealthArgs {
    /// Print a JSON array of rows.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct NotifyArgs {
    #[arg(long, required_unless_present = "stdin")]
    pub title: Option<String>,
    #[arg(long, default_value = "", conflicts_with = "stdin")]
    pub body: String,
    /// Read the note from stdin instead, as JSON ({"title", "body", "asks"}): how
    /// orchestra starts its own sender, so that no agent's words stand on a command line.
    #[arg(long, conflicts_with = "title")]
    pub stdin: bool,
    /// The command to run when there is no notification bus; title and body are appended.
    #[arg(long, value_name = "CMD")]
    pub fallback_cmd: Option<String>,
    /// The waiting session this tells of: where the bus shows actions, offer Approve, Deny
    /// and Open, and wait (`@orchestra-notify-wait`) to act on the one chosen.
    #[arg(long, value_name = "ID", requires = "event")]
    pub session: Option<String>,
    /// The session's change of state (event seq) the actions are for: an action acts only
    /// while it is still the session's newest.
    #[arg(long, value_name = "SEQ", requires = "session")]
    pub event: Option<i64>,
}

#[derive(Debug, Args)]
pub struct RepoArg {
    /// The repository (any folder inside it). Default: the current folder.
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SlugifyArgs {
    /// The title, as several words or one quoted string.
    #[arg(required = true, value_name = "TITLE")]
    pub title: Vec<String>,
    #[command(flatten)]
    pub repo: RepoArg,
}

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The session to fork.
    pub source: String,
    /// The new session's label (branch session/<NEW>, its worktree folder and window).
    pub label: String,
    #[command(flatten)]
    pub repo: RepoArg,
    /// What to tell the forked agent. Default: nothing (it waits, its conversation before it).
    #[arg(long)]
    pub prompt: Option<String>,
    /// The agent command, split like a shell would. Default: LABEL's own. Another kind than
    /// LABEL's starts a fresh conversation.
    #[arg(long)]
    pub agent: Option<String>,
    /// The agent's kind, when its program name does not tell.
    #[arg(long, value_parser = agent_kind())]
    pub kind: Option<crate::agent::AgentKind>,
}

#[derive(Debug, Args)]
pub struct DispatchArgs {
    /// The session's label: 1-63 characters of a-z, 0-9 and '-'. Names the branch
    /// session/<LABEL>, the worktree folder and the tmux window.
    pub label: String,
    #[command(flatten)]
    pub repo: RepoArg,
    /// The task to give the agent.
    #[arg(long, conflicts_with = "prompt_file")]
    pub prompt: Option<String>,
    /// Read the task from this file.
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// The commit the branch starts from. Default: HEAD of the repo's main worktree.
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// The agent command, split like a shell would (e.g. "claude --model opus").
    /// Default: $ORCHESTRA_AGENT, else `claude`.
    #[arg(long, value_name = "CMD")]
    pub agent: Option<String>,
    /// claude's permission mode for this session (passed as its --permission-mode).
    /// Default: none passed, so the person's own claude settings decide; `health` shows
    /// the mode it runs in.
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<crate::agent::PermissionMode>,
    /// The agent's kind, when its program name does not tell.
    #[arg(long, value_parser = agent_kind())]
    pub kind: Option<crate::agent::AgentKind>,
    /// Do not wire the agent's hooks (Claude Code's hooks, codex's notify): the state then
    /// comes from reading the screen alone.
    #[arg(long)]
    pub no_hooks: bool,
    /// Wait for another session's artifact before starting: UPSTREAM:ARTIFACT (a file,
    /// branch or commit, as in `deps add`). Repeatable. The session is created blocked and
    /// its agent starts, with a line naming the artifacts, once they all exist.
    #[arg(long, value_name = "UPSTREAM:ARTIFACT")]
    pub after: Vec<String>,
    /// With --after: when unblocked, start from the head of the upstream's branch instead
    /// of the head of the base branch (a branch with commits of its own is never moved).
    #[arg(long, requires = "after")]
    pub from_upstream: bool,
    /// Wait until the worktree's setup command (orchestra.toml [worktree] setup) is done
    /// and the agent started; exit 1 if the setup fails.
    #[arg(long, conflicts_with = "after")]
    pub wait_setup: bool,
    /// Who asked for this session (what `orchestra mcp` passes for its orchestrator);
    /// `list --json` shows it as "requested_by".
    #[arg(long, value_name = "WHO", hide = true)]
    pub requested_by: Option<String>,
    /// Fan out: one session per agent, each a kind (claude, codex, gemini…) or a full
    /// command, comma-separated and repeatable, all on the same base, prompt and setup, as
    /// one group LABEL (labelled LABEL-<kind>, or LABEL-1…N when kinds repeat). At most 8
    /// sessions ($ORCHESTRA_FANOUT_MAX). Default: no fan-out.
    #[arg(long, value_name = "AGENTS", conflicts_with = "agent")]
    pub agents: Vec<String>,
    /// Fan out N sessions of each agent (of --agents, else of --agent), labelled LABEL-1…N,
    /// as one group LABEL. Default: 1 of each.
    #[arg(long, value_name = "N")]
    pub count: Option<usize>,
    /// Run the agent, its setup and its check in a bubblewrap sandbox: the system read-only, only
    /// its worktree (and the repo's .git) writable, the home and other worktrees hidden,
    /// the environment by an allow-list. Default: orchestra.toml's `sandbox`, else off.
    #[arg(long, conflicts_with = "no_sandbox")]
    pub sandbox: bool,
    /// No sandbox, whatever orchestra.toml says; with --yolo, the person's say-so that
    /// the agent may run without asking outside one.
    #[arg(long)]
    pub no_sandbox: bool,
    /// The sandbox's network: on (the host's), off (its own loopback only), or hosts
    /// separated by commas (HOST or HOST:PORT; reached through orchestra's proxy only).
    /// Default: orchestra.toml's [sandbox] network, else on.
    #[arg(long, value_name = "on|off|HOST,…")]
    pub network: Option<String>,
    /// The agent runs without asking (claude --dangerously-skip-permissions, codex
    /// --dangerously-bypass-approvals-and-sandbox, gemini --yolo, aider --yes-always):
    /// only inside a sandbox, or with --no-sandbox said outright.
    #[arg(long)]
    pub yolo: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A session's label, or a group's (each of its live members is checked).
    pub target: String,
    #[command(flatten)]
    pub repo: RepoArg,
    /// Print a JSON array of {label, passed, ended, duration_ms, tail, at}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The group (`dispatch LABEL --agents/--count` made it).
    pub group: String,
    /// With B: show what candidate A changes that candidate B does not.
    pub a: Option<String>,
    pub b: Option<String>,
    #[command(flatten)]
    pub repo: RepoArg,
    /// Print the rows as a JSON array (one object per candidate).
    #[arg(long)]
    pub json: bool,
    /// Merge candidate LABEL through `orchestra merge` (its summary and [y/N]), then offer
    /// to archive the others (`kill --force`: each kept on archive/… with its commits).
    #[arg(long, value_name = "LABEL", conflicts_with_all = ["a", "json"])]
    pub pick: Option<String>,
    /// Show the table, then ask which candidate to merge (what the menu's Compare… runs).
    #[arg(long, conflicts_with_all = ["a", "json", "pick"])]
    pub choose: bool,
    /// Run --choose in a tmux popup.
    #[arg(long, requires = "choose")]
    pub popup: bool,
    /// The tmux client for --popup.
    #[arg(long, value_name = "NAME")]
    pub client: Option<String>,
}

#[derive(Debug, Args)]
pub struct CostArgs {
    #[command(flatten)]
    pub repo: RepoArg,
    /// Print JSON: an array of rows (tokens by kind, cost_usd: null where a model has
    /// no price, models).
    #[arg(long)]
    pub json: bool,
    /// One row per session (default), per outcome (merged, archived, killed, down, live)
    /// or per UTC day.
    #[arg(long, value_enum, default_value_t = CostBy::Session)]
    pub by: CostBy,
    /// Sessions of every repo, not only this one.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CostBy {
    Session,
    Outcome,
    Day,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub repo: RepoArg,
    /// Print a JSON array of objects (id, label, status, state, branch, worktree, repo,
    /// host, retry_count, window, pane, age, task, tokens, cost_usd, pull_request,
    /// requested_by, group, check, sandbox, yolo).
    #[arg(long)]
    pub json: bool,
    /// Sessions of every repo, not only this one.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct AllowArgs {
    #[command(flatten)]
    pub repo: RepoArg,
    /// Take back what was allowed for this repo.
    #[arg(long, conflicts_with = "show")]
    pub revoke: bool,
    /// Print what the repo asks and whether it is allowed, allowing nothing.
    #[arg(long)]
    pub show: bool,
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// The session's label.
    pub label: String,
    #[command(flatten)]
    pub repo: RepoArg,
    /// Save uncommitted changes as a WIP commit on the session's branch instead of refusing.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Repair what can be repaired safely: mark sessions whose pane is gone as dead, prune
    /// git's records of worktrees whose folders are gone, and settle what a command killed
    /// part-way left (without losing a commit).
    #[arg(long)]
    pub fix: bool,
}

/// `--kind`: one of the kinds orchestra knows, by name (clap lists them on a bad one).
fn agent_kind() -> impl clap::builder::TypedValueParser<Value = crate::agent::AgentKind> {
    use crate::agent::AgentKind;
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(AgentKind::ALL.map(AgentKind::as_str))
        .map(|name| AgentKind::parse(&name).unwrap_or(AgentKind::Generic))
}
