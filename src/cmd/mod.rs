//! One file per subcommand: each validates its input, calls the modules that do the work,
//! and renders the result to the writers it is given.

pub mod allow;
pub mod approve;
pub mod brief;
pub mod check;
pub mod classify;
pub mod compare;
pub mod conflicts;
pub mod connect;
pub mod cost;
pub mod deps;
pub mod dispatch;
pub mod docs;
pub mod doctor;
pub mod done;
pub mod event;
pub mod events;
pub mod fork;
pub mod health;
pub mod hosts;
pub mod import;
pub mod kill;
pub mod launch;
pub mod list;
pub mod mcp;
pub mod merge;
pub mod notify;
pub mod pr;
pub mod prepare;
pub mod refresh;
pub mod restart;
pub mod review;
pub mod sandbox_net;
pub mod slugify;
pub mod status;
pub mod status_line;
pub mod sync;
pub mod tasks;
pub mod tmux_cmd;
pub mod up;
pub mod watch;

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use crate::cli::Command;
pub use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
pub use crate::paths::short_list;

/// Runs one parsed command. The one way in: `main.rs` calls it, and so does the tmux
/// menu, which runs a command by its arguments as the command line would.
pub fn run(ctx: &Context, command: &Command, out: &mut Output<'_>) -> Result<(), Error> {
    match command {
        Command::Slugify(args) => slugify::run(ctx, args, out),
        Command::Dispatch(args) => dispatch::run(ctx, args, out),
        Command::Check(args) => check::run(ctx, args, out),
        Command::Compare(args) => compare::run(ctx, args, out),
        Command::Fork(args) => fork::run(ctx, args, out),
        Command::List(args) => list::run(ctx, args, out),
        Command::Cost(args) => cost::run(ctx, args, out),
        Command::Kill(args) => kill::run(ctx, args, out),
        Command::Allow(args) => allow::run(ctx, args, out),
        Command::Brief(args) => brief::run(ctx, args, out),
        Command::Approve(args) => approve::approve(ctx, args, out),
        Command::Deny(args) => approve::deny(ctx, args, out),
        Command::Review(args) => review::run(ctx, args, out),
        Command::Merge(args) => merge::run(ctx, args, out),
        Command::Mcp(args) => mcp::run(ctx, args, out),
        Command::Pr(args) => pr::run(ctx, args, out),
        Command::Done(args) => done::run(ctx, args, out),
        Command::Restart(args) => restart::run(ctx, args, out),
        Command::Launch(args) => launch::launch(ctx, args, out),
        Command::Promote(args) => launch::promote(ctx, args, out),
        Command::Tasks(args) => tasks::run(ctx, args, out),
        Command::Deps(args) => deps::run(ctx, args, out),
        Command::Doctor(args) => doctor::run(ctx, args, out),
        Command::Event(args) => event::run(ctx, args, out),
        Command::Classify(args) => classify::run(ctx, args, out),
        Command::Refresh(args) => refresh::run(ctx, args, out),
        Command::StatusLine => status_line::status_line(ctx, out),
        Command::Health(args) => health::health(ctx, args, out),
        Command::Watch { interval, count } => watch::watch(ctx, *interval, *count, out),
        Command::Events(args) => events::run(ctx, args, out),
        Command::Conflicts(args) => conflicts::run(ctx, args, out),
        Command::Radar(args) => conflicts::radar(ctx, args, out),
        Command::Completions { shell } => docs::completions(shell, out),
        Command::Man => docs::man(out),
        Command::Tmux(args) => tmux_cmd::run(ctx, args, out),
        Command::Notify(args) => notify::notify(ctx, args, out),
        Command::Prepare(args) => prepare::run(ctx, args, out),
        Command::SandboxNet(args) => sandbox_net::run(args),
        Command::Up(args) => up::up(ctx, args, out),
        Command::Down(args) => up::down(ctx, args, out),
        Command::Status(args) => status::status(ctx, args, out),
        Command::Tail(args) => status::tail(ctx, args, out),
        Command::Attach(args) => status::attach(ctx, args, out),
        Command::Collect(args) => status::collect(ctx, args, out),
        Command::Hosts(args) => hosts::run(ctx, args, out),
        Command::Connect(args) => connect::run(ctx, args, out),
        Command::Import(args) => import::run(args, out),
        Command::Insights(args) => sync::run(ctx, args, sync::Kind::Insights, out),
        Command::Dream(args) => sync::run(ctx, args, sync::Kind::Dream, out),
        Command::Sync(args) => sync::run(ctx, args, sync::Kind::Both, out),
    }
}

/// `tasks pick` (the command's and the menu's): the task moved to in progress, with
/// `--dispatch` after a session was dispatched on it as `orchestra dispatch` would.
/// Returns the line that says what was done.
pub fn pick_task(
    ctx: &Context,
    repo: &Repo,
    args: &crate::cli::PickArgs,
    out: &mut Output<'_>,
) -> Result<String, Error> {
    let wanted = crate::tasks::work::Pick {
        id: &args.id,
        label: args.label.as_deref(),
        agent: args.agent.as_deref(),
        dispatch: args.dispatch,
    };
    crate::tasks::work::pick(ctx, repo, &wanted, |label, prompt| {
        let mut dispatch = dispatch_command(label, repo, Some(prompt), args.agent.clone());
        if let Command::Dispatch(d) = &mut dispatch {
            d.requested_by.clone_from(&args.requested_by);
        }
        run(ctx, &dispatch, out)
    })
}

/// `orchestra dispatch LABEL --repo REPO` with `prompt` and `--agent`, as a person would
/// type it (what the menu and `tasks pick --dispatch` run).
pub fn dispatch_command(
    label: &str,
    repo: &Repo,
    prompt: Option<String>,
    agent: Option<String>,
) -> Command {
    Command::Dispatch(crate::cli::DispatchArgs {
        label: label.to_string(),
        repo: crate::cli::RepoArg {
            repo: Some(repo.main_worktree().to_path_buf()),
        },
        prompt,
        prompt_file: None,
        base: None,
        agent,
        permission_mode: None,
        kind: None,
        no_hooks: false,
        after: Vec::new(),
        from_upstream: false,
        wait_setup: false,
        requested_by: None,
        agents: Vec::new(),
        count: None,
        sandbox: false,
        no_sandbox: false,
        network: None,
        yolo: false,
    })
}

/// Where a command writes: results to `out`, notes and warnings to `err`.
pub struct Output<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
}

/// Runs `f` with an Output that discards everything: work done on someone else's behalf
/// (a hook, a status tick, a tmux `run-shell` whose output would open in the pane).
pub fn quietly<T>(f: impl FnOnce(&mut Output<'_>) -> T) -> T {
    let (mut out, mut err) = (std::io::sink(), std::io::sink());
    f(&mut Output {
        out: &mut out,
        err: &mut err,
    })
}

impl Output<'_> {
    /// A line of results. A closed stdout (e.g. `| head`) is not the command's failure.
    /// Whatever it quotes is shown inert ([`crate::inert::lines`]): a field a command did
    /// not render itself still cannot reach the terminal as an escape.
    pub fn line(&mut self, text: impl AsRef<str>) {
        let _ = writeln!(self.out, "{}", crate::inert::lines(text.as_ref()));
    }

    pub fn note(&mut self, text: impl AsRef<str>) {
        let _ = writeln!(
            self.err,
            "orchestra: {}",
            crate::inert::lines(text.as_ref())
        );
    }
}

/// What domain code says while it works, shown as the command's own lines and notes.
impl crate::report::Report for Output<'_> {
    fn line(&mut self, text: String) {
        Output::line(self, text);
    }

    fn note(&mut self, text: String) {
        Output::note(self, text);
    }

    fn detail(&mut self, text: String) {
        let _ = writeln!(self.err, "    {}", crate::inert::lines(&text));
    }
}

/// The repository named by `--repo`, else the one containing the current folder.
pub fn open_repo(dir: Option<&Path>) -> Result<Repo, Error> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().map_err(Error::io("reading the current folder"))?,
    };
    Ok(Repo::discover(&dir)?)
}

/// Left-aligned columns separated by two spaces; every cell one line, shown inert (a
/// path or a screen's text holding a line break cannot pass for another row).
pub fn render_table(header: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|cell| crate::inert::line(cell)).collect())
        .collect();
    let rows = rows.as_slice();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<w$}  "));
            }
        }
        text.trim_end().to_string()
    };
    let mut out = vec![line(header.to_vec())];
    out.extend(
        rows.iter()
            .map(|r| line(r.iter().map(String::as_str).collect())),
    );
    out
}

/// Re-runs this very command in a tmux popup on `client` (else the most recently active
/// client): the same arguments minus `--popup`, the same ORCHESTRA_HOME and tmux server.
pub fn run_in_popup(
    ctx: &Context,
    client: Option<&str>,
    cwd: &Path,
    title: &str,
) -> Result<(), Error> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--popup")
        .collect();
    crate::plugin::popup_orchestra(ctx, client, cwd, title, &args)
}

/// The radar's pairs: SESSION WITH PATHS SINCE.
pub fn conflict_table(rows: &[crate::radar::run::Row], out: &mut Output<'_>) {
    let now = crate::state::now();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.session.clone(),
                if r.target {
                    format!("{} (target)", r.with)
                } else {
                    r.with.clone()
                },
                format!(
                    "{}{}",
                    crate::paths::short_list(&r.paths),
                    if r.uncommitted { " (uncommitted)" } else { "" }
                ),
                crate::duration::age(now - r.since),
            ]
        })
        .collect();
    for line in render_table(&["SESSION", "WITH", "PATHS", "SINCE"], &cells) {
        out.line(line);
    }
}

/// Each recorded session's cost as the health table shows it, by session id: dollars,
/// or tokens where a model has no price; sessions without logs are absent.
pub fn cost_cells(ctx: &Context) -> Result<HashMap<String, String>, Error> {
    let prices =
        crate::cost::Prices::load(&ctx.home).map_err(|e| Error::BadInput(e.to_string()))?;
    let store = ctx.store()?;
    let sessions = store.sessions(None, false)?;
    Ok(crate::cost::session_costs(&store, &prices, &sessions)?
        .into_iter()
        .map(|(id, c)| {
            let cell = match c.cost_usd {
                Some(_) => dollars(c.cost_usd),
                None => format!("{} tok", c.tokens.total()),
            };
            (id, cell)
        })
        .collect())
}

/// Session id → its pull request as one phrase (`#12 draft ✗lint`), for the tables.
pub fn pull_cells(ctx: &Context) -> Result<HashMap<String, String>, Error> {
    Ok(ctx
        .store()?
        .pull_requests(None)?
        .into_iter()
        .map(|(id, p)| (id, crate::pr::refresh::phrase(&p)))
        .collect())
}

/// The MODE cell: claude's permission mode, then the session's box and no-ask mode.
fn mode_cell(r: &crate::health::HealthRow) -> String {
    let words: Vec<&str> = [
        r.permission_mode.as_deref().unwrap_or(""),
        r.sandbox.as_str(),
    ]
    .into_iter()
    .filter(|w| !w.is_empty())
    .collect();
    if words.is_empty() {
        "-".into()
    } else {
        words.join(" ")
    }
}

/// A cost as a person reads it ([`crate::cost::usd_text`]).
pub fn dollars(usd: Option<f64>) -> String {
    crate::cost::usd_text(usd)
}

pub fn health_table(
    outcome: &crate::health::Outcome,
    costs: &HashMap<String, String>,
    out: &mut Output<'_>,
) {
    if outcome.rows.is_empty() {
        out.line("no orchestra windows on this tmux server");
        return;
    }
    let rows: Vec<Vec<String>> = outcome
        .rows
        .iter()
        .map(|r| {
            vec![
                r.label.clone(),
                r.state.clone(),
                r.status.clone(),
                if r.source.is_empty() {
                    "-".into()
                } else {
                    r.source.clone()
                },
                crate::duration::age(r.state_age),
                crate::duration::age(r.idle_for),
                match (&r.screen, &r.rule) {
                    (Some(s), Some(rule)) => format!("{s} ({rule})"),
                    (Some(s), None) => s.clone(),
                    _ => "-".into(),
                },
                r.window.clone(),
                r.pane.clone(),
                mode_cell(r),
                r.host.clone().unwrap_or_else(|| "local".into()),
                r.pull_request.clone().unwrap_or_else(|| "-".into()),
                costs.get(&r.id).cloned().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    for line in render_table(
        &[
            "LABEL", "STATE", "STATUS", "SAID BY", "SINCE", "QUIET", "SCREEN", "WINDOW", "PANE",
            "MODE", "HOST", "PR", "COST",
        ],
        &rows,
    ) {
        out.line(line);
    }
}
