//! `orchestra launch` and `promote`: the orchestrator agent of a repo.

use std::path::PathBuf;

use crate::agent::AgentKind;
use crate::cli::{LaunchArgs, PromoteArgs};
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::paths::non_empty_env;
use crate::session::launch::agent_command;
use crate::state::Orchestrator;
use crate::tmux::{PaneId, WindowSpec};

pub fn launch(ctx: &Context, args: &LaunchArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let command = agent_command(args.agent.as_deref())?;
    let repo = match &args.new {
        Some(name) => {
            crate::label::validate(name)?;
            let dir = projects_dir()?.join(name);
            if dir.exists() {
                return Err(Error::BadInput(format!("{} already exists", dir.display())));
            }
            let repo = crate::git::init_repository(&dir)?;
            out.line(format!("created repository {}", dir.display()));
            repo
        }
        None => open_repo(args.repo.as_deref())?,
    };
    let store = ctx.store()?;
    let previous = store.orchestrator(&repo.id())?;
    let kind = AgentKind::from_program(&command[0]);
    let mut argv = command.clone();
    let mut agent_uuid = None;
    if kind == AgentKind::Codex {
        // Its `-c` options, before the first message's `--`.
        let (server, env) = orchestrator_server(ctx, &repo)?;
        argv.extend(crate::agent::codex::mcp_overrides(
            MCP_SERVER,
            &server,
            &env,
            &mcp_tools(),
        ));
        if let Some(prompt) = crate::prompts::load(&ctx.home, crate::prompts::TASK_DRAFTING) {
            argv.extend(crate::agent::codex::instructions_override(&prompt));
        }
    }
    let mut env = vec![(
        "ORCHESTRA_HOME".to_string(),
        ctx.home.to_string_lossy().into_owned(),
    )];
    if kind == AgentKind::Gemini {
        env.extend(gemini_home(ctx, &repo, out)?);
    }
    if kind == AgentKind::Claude {
        // Before the options below: they end the lists these two options take.
        argv.extend(orchestrator_tools(ctx, &repo)?);
        match (
            args.resume,
            previous.as_ref().and_then(|o| o.agent_uuid.clone()),
        ) {
            (true, Some(uuid)) => argv.extend(["--resume".to_string(), uuid.clone()]),
            (true, None) => argv.push("--continue".to_string()),
            (false, _) => {
                let uuid = uuid::Uuid::new_v4().to_string();
                argv.extend(["--session-id".to_string(), uuid.clone()]);
                agent_uuid = Some(uuid);
            }
        }
        if let Some(prompt) = crate::prompts::load(&ctx.home, crate::prompts::TASK_DRAFTING) {
            argv.extend(["--append-system-prompt".to_string(), prompt]);
        }
    }
    // The tracker's open tasks, as the first message; no [tasks]: nothing is read.
    argv.extend(crate::tasks::work::orchestrator_words(&repo, kind, out)?);
    let tmux = ctx.tmux();
    let window = tmux.new_window(
        &WindowSpec {
            name: "orchestrator",
            cwd: repo.main_worktree(),
            argv: &argv,
            env: &env,
            placement: tmux.placement_for_repo(&repo.name()),
        },
        &[(crate::tmux::options::WINDOW_ROLE, "orchestrator")],
    )?;
    store.set_orchestrator(&Orchestrator {
        repo: repo.id(),
        tmux_socket: Some(window.socket_path.clone()),
        window: Some(window.window.clone()),
        pane: window.pane.clone(),
        agent_uuid,
        launched: true,
    })?;
    out.line(format!(
        "orchestrator for {} in window {} (tmux session {})",
        repo.main_worktree().display(),
        window.window,
        window.session_name
    ));
    Ok(())
}

pub fn promote(ctx: &Context, args: &PromoteArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let pane = non_empty_env("TMUX_PANE")
        .filter(|_| ctx.server.inside)
        .ok_or_else(|| {
            Error::BadInput("promote registers the pane you are in: run it inside tmux".into())
        })?;
    let pane = PaneId::parse(&pane).map_err(|e| Error::BadInput(format!("$TMUX_PANE: {e}")))?;
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    store.set_orchestrator(&Orchestrator {
        repo: repo.id(),
        tmux_socket: ctx
            .server
            .socket
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
        window: None,
        pane: pane.clone(),
        agent_uuid: None,
        launched: false,
    })?;
    out.line(format!(
        "pane {pane} is now the orchestrator of {}",
        repo.main_worktree().display()
    ));
    out.line(
        "note: the task-drafting prompt is not applied to an agent already running \
         (`orchestra launch` starts one with it)",
    );
    Ok(())
}

/// The orchestrator's tools: `orchestra mcp` for this repo, named in a config file of this
/// session's own (claude's `--mcp-config`; the person's MCP settings stay theirs), its
/// tools allowed so that a dispatch does not stop to ask.
fn orchestrator_tools(ctx: &Context, repo: &crate::git::Repo) -> Result<Vec<String>, Error> {
    let (server, env) = orchestrator_server(ctx, repo)?;
    let dir = ctx.home.join("mcp");
    crate::paths::private_dir(&dir).map_err(Error::io("making the mcp folder"))?;
    let config = dir.join(format!("{}.json", crate::paths::stable_hash(&repo.id())));
    let text =
        serde_json::to_string_pretty(&crate::agent::claude::mcp_config(MCP_SERVER, &server, &env))
            .unwrap_or_default();
    crate::paths::replace_private(&config, text).map_err(Error::io("writing the mcp config"))?;
    Ok(crate::agent::claude::mcp_args(
        &config,
        MCP_SERVER,
        &mcp_tools(),
    ))
}

/// The orchestrator's Gemini home (`agent::gemini`): the person's settings with the server
/// as `mcpServers.orchestra`, its tools trusted, in a folder of this repo's orchestrator
/// (the person's `~/.gemini` and the repo's `.gemini` stay theirs). Its environment
/// (`GEMINI_CLI_HOME`); none, said so, when the person's settings cannot be read.
fn gemini_home(
    ctx: &Context,
    repo: &crate::git::Repo,
    out: &mut Output<'_>,
) -> Result<Vec<(String, String)>, Error> {
    use crate::agent::gemini;
    let (server, env) = orchestrator_server(ctx, repo)?;
    let dir = ctx.home.join("mcp");
    crate::paths::private_dir(&dir).map_err(Error::io("making the mcp folder"))?;
    let home = dir.join(format!(
        "{}-gemini-home",
        crate::paths::stable_hash(&repo.id())
    ));
    let entry = gemini::mcp_server(&server, &env, &mcp_tools());
    match gemini::prepare_home_with(&home, &gemini::person_home(), "tools", |text| {
        gemini::with_mcp_server(text, MCP_SERVER, &entry)
    }) {
        Ok(()) => Ok(vec![(
            "GEMINI_CLI_HOME".to_string(),
            home.to_string_lossy().into_owned(),
        )]),
        Err(e @ gemini::GeminiHomeError::Settings { .. }) => {
            out.note(e.to_string());
            Ok(Vec::new())
        }
        Err(gemini::GeminiHomeError::Io { path, source }) => Err(Error::Io {
            context: format!("making the Gemini home {}", path.display()),
            source,
        }),
    }
}

/// The server's command line and environment: this very binary, on this tmux server and
/// home, recording the orchestrator as who asked for what it dispatches.
fn orchestrator_server(ctx: &Context, repo: &crate::git::Repo) -> Result<ServerLine, Error> {
    let exe = std::env::current_exe().map_err(Error::io("finding the orchestra binary"))?;
    let mut server = vec![exe.to_string_lossy().into_owned()];
    if let Some(socket) = &ctx.server.socket {
        server.push(format!("--socket={}", socket.display()));
    }
    server.extend([
        "mcp".to_string(),
        format!("--repo={}", repo.main_worktree().display()),
        format!("--session={ORCHESTRATOR}"),
    ]);
    let env = vec![(
        "ORCHESTRA_HOME".to_string(),
        ctx.home.to_string_lossy().into_owned(),
    )];
    Ok((server, env))
}

/// A server's command line (program first) and its environment.
type ServerLine = (Vec<String>, Vec<(String, String)>);

fn mcp_tools() -> Vec<&'static str> {
    crate::mcp::tools::ALL.iter().map(|t| t.name).collect()
}

/// The name the agent knows the server by (claude's tools are `mcp__orchestra__…`,
/// gemini's `mcp_orchestra_…`).
const MCP_SERVER: &str = "orchestra";

/// Who a session the orchestrator's tools dispatch was requested by.
const ORCHESTRATOR: &str = "orchestrator";

/// `$ORCHESTRA_PROJECTS_DIR`, else `~/projects`.
fn projects_dir() -> Result<PathBuf, Error> {
    match non_empty_env("ORCHESTRA_PROJECTS_DIR") {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => Ok(crate::paths::user_home()
            .map_err(|_| {
                Error::BadInput(
                    "HOME is not set: set HOME or ORCHESTRA_PROJECTS_DIR for --new".into(),
                )
            })?
            .join("projects")),
    }
}
