//! Starting a session's agent: its argv and environment, the settings its hooks need,
//! the window that prepares it, its typed prompt and the trust dialog it may ask first.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::agent::{self, AgentKind, HookWiring, LaunchContext, Trust};
use crate::context::Context;
use crate::error::Error;
use crate::paths::{find_program, non_empty_env, session_dir};
use crate::report::Report;
use crate::state::{AgentState, Session};
use crate::tmux::{Key, OwnedPane, Tmux};

/// How long a generic agent gets to draw something before its prompt is typed anyway.
const TYPE_PROMPT_AFTER: Duration = Duration::from_secs(1);

/// How long an agent whose screens the rules read (aider) gets to show its prompt; its
/// start may take seconds on a busy machine.
const PROMPT_READY_WAIT: Duration = Duration::from_secs(120);

/// How long dispatch watches a new claude for its trust dialog.
const TRUST_DIALOG_WAIT: Duration = Duration::from_secs(6);

/// An agent command line longer than this does not go through tmux as it is: tmux
/// refuses a command over its message size (about 16 KB, "command too long").
const ARGV_IN_TMUX_MAX: usize = 8 * 1024;

/// The argv and environment that start `session`'s agent with `prompt` (or continue its
/// conversation with `resume`), as dispatch, unblocking and restart all need them. A
/// command line too long for tmux (a long prompt) has its last argument — the prompt —
/// read from a file in the session's folder by the shell that execs the agent.
pub fn agent_launch(
    ctx: &Context,
    session: &Session,
    prompt: Option<&str>,
    resume: bool,
) -> Result<(agent::Launch, Vec<(String, String)>), Error> {
    agent_launch_forked(ctx, session, prompt, resume, None)
}

/// [`agent_launch`], the conversation started from a copy of `fork_from`'s (`orchestra
/// fork`, for an agent that can).
pub fn agent_launch_forked(
    ctx: &Context,
    session: &Session,
    prompt: Option<&str>,
    resume: bool,
    fork_from: Option<&str>,
) -> Result<(agent::Launch, Vec<(String, String)>), Error> {
    let agent = agent::of(session.agent_kind);
    let wiring = agent.hook_wiring();
    let dir = session_dir(&ctx.home, &session.id);
    let settings_file = dir.join("settings.json");
    // A manifest session is no worker on a branch, and works in the person's own folder,
    // not a worktree orchestra made: the hooks are all it shares with a dispatched one.
    let manifest = session.manifest.is_some();
    let worker_prompt = (!manifest)
        .then(|| crate::prompts::load(&ctx.home, crate::prompts::WORKER))
        .flatten();
    let orchestra = std::env::current_exe().map_err(Error::io(
        "finding the orchestra binary for the agent's hooks",
    ))?;
    let gemini_home = dir.join(agent::gemini::HOME_DIR);
    // Made by dispatch (unless --no-hooks); brought up to date on every start, as the
    // person's settings may have changed. If they cannot be read now, last time's stay.
    let gemini_home = (wiring == HookWiring::GeminiHome && gemini_home.is_dir()).then(|| {
        let _ = prepare_gemini_home(ctx, &dir, &session.id, session.sandbox.is_some());
        gemini_home
    });
    let trust_worktree = agent.trust() == Trust::AtLaunch
        && !manifest
        && trusts_worktrees(&ctx.tmux())
        && agent_settings_allowed(ctx, session);
    // Made by dispatch unless --no-hooks.
    let opencode_config = dir.join(agent::opencode::CONFIG_DIR);
    let opencode_config = (wiring == HookWiring::OpencodePlugin
        && opencode_config.join(agent::opencode::PLUGIN_FILE).is_file())
    .then_some(opencode_config);
    let notify = match wiring {
        HookWiring::CodexNotify => codex_notify_from(&settings_file),
        _ => None,
    };
    let mut launch = agent.launch(
        &session.agent_argv,
        prompt,
        &LaunchContext {
            agent_uuid: session.agent_uuid.as_deref().unwrap_or_default(),
            settings_file: &settings_file,
            session_dir: &dir,
            orchestra: &orchestra,
            system_prompt: worker_prompt.as_deref(),
            resume,
            gemini_home: gemini_home.as_deref(),
            trust_worktree,
            notify: notify.as_deref(),
            opencode_config: opencode_config.as_deref(),
            fork_from,
        },
    );
    let length: usize = launch.argv.iter().map(|a| a.len() + 1).sum();
    if length > ARGV_IN_TMUX_MAX {
        let file = session_dir(&ctx.home, &session.id).join("last-argument.txt");
        launch.argv = last_argument_from_file(&launch.argv, &file)?;
    }
    let mut env = agent_env(ctx, session);
    env.append(&mut launch.env);
    if let Some(network) = &session.sandbox {
        // The whole environment it starts with: its starter clears its own first.
        let inside = crate::session::sandbox::Inside::Agent;
        let (argv, boxed) =
            crate::session::sandbox::wrap(&ctx.home, session, network, &launch.argv, &env, inside)?;
        launch.argv = argv;
        env = boxed;
    }
    Ok((launch, env))
}

/// The environment a session's window runs with: its id, orchestra's home, its port.
pub fn agent_env(ctx: &Context, session: &Session) -> Vec<(String, String)> {
    let mut env = vec![
        ("ORCHESTRA_SESSION".to_string(), session.id.clone()),
        (
            "ORCHESTRA_HOME".to_string(),
            ctx.home.to_string_lossy().into_owned(),
        ),
    ];
    if let Some(port) = session.port {
        env.push(("ORCHESTRA_PORT".to_string(), port.to_string()));
    }
    env
}

/// `argv` with its last argument written to `file` and read back by `sh` just before it
/// execs the program: exactly (the `x` keeps trailing newlines from `$(…)`), with the
/// file's path, not its text, on the command line tmux sees.
fn last_argument_from_file(argv: &[String], file: &Path) -> Result<Vec<String>, Error> {
    let Some((last, head)) = argv.split_last() else {
        return Ok(argv.to_vec());
    };
    crate::paths::write_private(file, last)
        .map_err(Error::io(format!("writing {}", file.display())))?;
    let mut words: Vec<String> = [
        "sh",
        "-c",
        "last=$(cat -- \"$1\"; printf x) && shift && exec \"$@\" \"${last%x}\"",
        "orchestra-launch",
    ]
    .map(String::from)
    .to_vec();
    words.push(file.to_string_lossy().into_owned());
    words.extend(head.iter().cloned());
    Ok(words)
}

/// Writes what session `id`'s agent of `kind` reads its hooks from, in the session's folder
/// `dir` (made): claude's and codex's settings, gemini's home. `hooks` false writes settings
/// without them. Dispatch and `up` both start here; [`agent_launch`] reads it back.
pub fn write_hook_settings(
    ctx: &Context,
    dir: &Path,
    id: &str,
    kind: AgentKind,
    command: &[String],
    hooks: bool,
    out: &mut dyn Report,
) -> Result<(), Error> {
    match agent::of(kind).hook_wiring() {
        HookWiring::ClaudeSettings => write_claude_settings(ctx, dir, command, hooks),
        HookWiring::CodexNotify => write_codex_settings(dir, id, hooks),
        HookWiring::GeminiHome if hooks => write_gemini_home(ctx, dir, id, out),
        HookWiring::OpencodePlugin if hooks => write_opencode_plugin(ctx, dir, id),
        // aider's notifications command is on its command line (`Agent::launch`).
        _ => Ok(()),
    }
}

/// Writes `dir/settings.json` for `claude --settings`: hooks calling `orchestra event`
/// for the events the installed release knows (none when `hooks` is false).
fn write_claude_settings(
    ctx: &Context,
    dir: &Path,
    command: &[String],
    hooks: bool,
) -> Result<(), Error> {
    let settings_file = dir.join("settings.json");
    let settings = if hooks {
        let version = agent::agent_version(command, &ctx.home.join("agent-versions.json"));
        let exe = std::env::current_exe()
            .map_err(Error::io("finding the orchestra binary for the hooks"))?;
        agent::claude_settings(&exe, version)
    } else {
        serde_json::json!({})
    };
    let settings = serde_json::to_string_pretty(&settings).unwrap_or_default();
    crate::paths::write_private(&settings_file, settings)
        .map_err(Error::io(format!("writing {}", settings_file.display())))
}

/// Makes the session's Gemini home (`agent::gemini`): the person's settings with hooks
/// calling `orchestra event`. Settings the CLI could not read either leave the agent
/// without hooks (its screen still tells its state), with a note saying so.
fn write_gemini_home(
    ctx: &Context,
    dir: &Path,
    id: &str,
    out: &mut dyn Report,
) -> Result<(), Error> {
    match prepare_gemini_home(ctx, dir, id, false) {
        Ok(()) => Ok(()),
        Err(e @ agent::gemini::GeminiHomeError::Settings { .. }) => {
            // A half-made home must not be taken for a good one by later starts.
            let _ = std::fs::remove_dir_all(dir.join(agent::gemini::HOME_DIR));
            out.note(e.to_string());
            Ok(())
        }
        Err(agent::gemini::GeminiHomeError::Io { path, source }) => Err(Error::Io {
            context: format!("making the Gemini home {}", path.display()),
            source,
        }),
    }
}

/// `boxed`: for a sandboxed session, whose box hides the person's home (copies, no
/// links: `agent::gemini::prepare_boxed_home`).
fn prepare_gemini_home(
    ctx: &Context,
    dir: &Path,
    id: &str,
    boxed: bool,
) -> Result<(), agent::gemini::GeminiHomeError> {
    let exe = std::env::current_exe().map_err(|source| agent::gemini::GeminiHomeError::Io {
        path: PathBuf::from("the orchestra binary"),
        source,
    })?;
    let hooks = agent::gemini::hooks(&exe, &ctx.home, id);
    let prepare = if boxed {
        agent::gemini::prepare_boxed_home
    } else {
        agent::gemini::prepare_home
    };
    prepare(
        &dir.join(agent::gemini::HOME_DIR),
        &agent::gemini::person_home(),
        &hooks,
    )
}

/// Writes the session's opencode config folder (`agent::opencode`): the plugin calling
/// `orchestra event`, and the plugin package opencode installed in the person's own config
/// folder, copied, so that it loads the plugin without an install of its own first.
fn write_opencode_plugin(ctx: &Context, dir: &Path, id: &str) -> Result<(), Error> {
    let exe =
        std::env::current_exe().map_err(Error::io("finding the orchestra binary for the hooks"))?;
    let config = dir.join(agent::opencode::CONFIG_DIR);
    let file = config.join(agent::opencode::PLUGIN_FILE);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)
            .map_err(Error::io(format!("making {}", parent.display())))?;
    }
    crate::paths::write_private(&file, agent::opencode::plugin(&exe, &ctx.home, id))
        .map_err(Error::io(format!("writing {}", file.display())))?;
    if let Some(person) = person_opencode_config() {
        // Without it opencode installs the package itself first: slower, not wrong.
        let _ = copy_installed(&person, &config);
    }
    Ok(())
}

/// The person's opencode config folder, as opencode finds it.
fn person_opencode_config() -> Option<PathBuf> {
    non_empty_env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty_env("HOME").map(|h| Path::new(&h).join(".config")))
        .map(|c| c.join("opencode"))
}

/// Copies the plugin package opencode installed into `from` (all of
/// [`agent::opencode::INSTALLED`], or nothing) into `to`, a new session's folder.
fn copy_installed(from: &Path, to: &Path) -> std::io::Result<()> {
    if !agent::opencode::INSTALLED
        .iter()
        .all(|name| from.join(name).exists())
    {
        return Ok(());
    }
    for name in agent::opencode::INSTALLED {
        crate::worktree::copy_tree(&from.join(name), &to.join(name))?;
    }
    Ok(())
}

/// `@orchestra-trust-worktrees` (default on): agents may trust the worktrees orchestra made.
fn trusts_worktrees(tmux: &Tmux) -> bool {
    tmux.global_option(crate::tmux::options::TRUST_WORKTREES)
        .ok()
        .flatten()
        .as_deref()
        != Some("off")
}

/// Whether the agent settings in `session`'s worktree (hooks and MCP servers an agent runs
/// once it trusts the folder) are none, or allowed by `orchestra allow`: orchestra tells
/// an agent to trust a worktree only then, never for the repo's author.
fn agent_settings_allowed(ctx: &Context, session: &Session) -> bool {
    crate::trust::Asked::of(Path::new(&session.repo))
        .is_ok_and(|asked| asked.agent_settings_allowed_in(&ctx.home, Path::new(&session.worktree)))
}

/// Writes `dir/settings.json` for a codex session: the `notify` program that reports the
/// end of each turn to `orchestra event` (none when `hooks` is false). Read back at each
/// launch, so a restart keeps what dispatch chose.
fn write_codex_settings(dir: &Path, id: &str, hooks: bool) -> Result<(), Error> {
    let settings_file = dir.join("settings.json");
    let settings = if hooks {
        let exe = std::env::current_exe()
            .map_err(Error::io("finding the orchestra binary for the hooks"))?;
        serde_json::json!({ "notify": agent::codex_notify(&exe, id) })
    } else {
        serde_json::json!({})
    };
    let settings = serde_json::to_string_pretty(&settings).unwrap_or_default();
    crate::paths::write_private(&settings_file, settings)
        .map_err(Error::io(format!("writing {}", settings_file.display())))
}

/// The `notify` program a codex session's settings name; none for a missing or unreadable
/// file (the screen still tells its state).
fn codex_notify_from(settings_file: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(settings_file).ok()?;
    let settings: serde_json::Value = serde_json::from_str(&text).ok()?;
    let words: Vec<String> = settings
        .get("notify")?
        .as_array()?
        .iter()
        .map(|w| w.as_str().map(str::to_string))
        .collect::<Option<_>>()?;
    (!words.is_empty()).then_some(words)
}

/// What a blocked session's window runs until its agent starts: the message, then nothing.
/// The message is an argument, never part of a shell string.
pub fn waiting_placeholder(message: &str) -> Vec<String> {
    [
        "sh",
        "-c",
        "printf '%s\\n' \"$1\"; exec tail -f /dev/null",
        "orchestra-blocked",
        message,
    ]
    .map(String::from)
    .to_vec()
}

/// Runs a session's agent in its pane (replacing whatever is there, if the pane is still
/// the session's), then gives it what it needs to get going: a typed prompt, an answer to
/// the trust dialog. A pane that is gone or not ours records the session dead.
pub fn start_agent_in_pane(
    ctx: &Context,
    session: &Session,
    prompt: Option<&str>,
    resume: bool,
    out: &mut dyn Report,
) -> Result<(), Error> {
    if session.sandbox.is_some() {
        // A box starts only from `prepare`, which clears the environment tmux gives the
        // pane and gives the agent its allowed one; it types the prompt itself after.
        let result = (|| {
            let (tmux, pane) = crate::session::agent_pane(session)?;
            let argv = boxed_window_argv(&session.id, resume)?;
            let env = agent_env(ctx, session);
            Ok(tmux.respawn(&pane, Path::new(&session.worktree), &env, &argv)?)
        })();
        return crate::session::record_if_gone(ctx, session, result);
    }
    let result = (|| {
        let (tmux, pane) = crate::session::agent_pane(session)?;
        let (launch, env) = agent_launch(ctx, session, prompt, resume)?;
        tmux.respawn(&pane, Path::new(&session.worktree), &env, &launch.argv)?;
        Ok(launch.typed_prompt)
    })();
    let typed = crate::session::record_if_gone(ctx, session, result)?;
    after_start(ctx, session, typed.as_deref(), out)
}

/// What an agent just started in the session's pane needs to get going: its prompt typed
/// (for agents that take none on their command line), the trust dialog answered.
pub fn after_start(
    ctx: &Context,
    session: &Session,
    typed_prompt: Option<&str>,
    out: &mut dyn Report,
) -> Result<(), Error> {
    let result = (|| {
        let (tmux, pane) = crate::session::agent_pane(session)?;
        if let Some(text) = typed_prompt {
            type_prompt_when_ready(ctx, &tmux, &pane, session, text, out)?;
        }
        Ok(tmux)
    })();
    let tmux = crate::session::record_if_gone(ctx, session, result)?;
    if asks_to_trust(session.agent_kind) {
        trust_our_worktree(ctx, &tmux, session, out);
    }
    Ok(())
}

/// `--agent`, else `$ORCHESTRA_AGENT`, else `claude`, split like a shell would; the program
/// must exist.
pub fn agent_command(flag: Option<&str>) -> Result<Vec<String>, Error> {
    chosen_agent_command(flag, "pass --agent")
}

/// [`agent_command`] for a caller whose agent is chosen otherwise (the menu's option):
/// a missing program says `how_to_choose` as the way to name another.
pub fn chosen_agent_command(flag: Option<&str>, how_to_choose: &str) -> Result<Vec<String>, Error> {
    let text = flag
        .map(str::to_string)
        .or_else(|| non_empty_env("ORCHESTRA_AGENT"))
        .unwrap_or_else(|| "claude".into());
    let words = shell_words::split(&text)
        .map_err(|e| Error::BadInput(format!("cannot split the agent command {text:?}: {e}")))?;
    let Some(program) = words.first() else {
        return Err(Error::BadInput("the agent command is empty".into()));
    };
    if find_program(program).is_none() {
        return Err(Error::BadInput(format!(
            "agent program {program:?} not found (not on PATH or not executable): install it or {how_to_choose}"
        )));
    }
    Ok(words)
}

/// Whether an agent of `kind` asks whether to trust a folder it has not seen.
pub fn asks_to_trust(kind: AgentKind) -> bool {
    agent::of(kind).trust() == Trust::Dialog
}

/// Answers the CLI's "trust this folder?" dialog for the worktree dispatch just made (the
/// person already works in this repo), unless `@orchestra-trust-worktrees` is off or the
/// worktree holds agent settings the person has not allowed. Waits only until the agent
/// has drawn its first screen.
pub fn trust_our_worktree(ctx: &Context, tmux: &Tmux, session: &Session, out: &mut dyn Report) {
    if !trusts_worktrees(tmux) {
        return;
    }
    if !agent_settings_allowed(ctx, session) {
        out.note(format!(
            "{}: orchestra does not answer the agent's \"trust this folder?\" for you: its worktree has agent settings (hooks, MCP servers) not allowed (`orchestra allow` in the repo allows them)",
            session.label
        ));
        return;
    }
    let Some(pane) = session.pane.as_ref() else {
        return;
    };
    let agent = agent::of(session.agent_kind);
    let started = Instant::now();
    while started.elapsed() < TRUST_DIALOG_WAIT {
        let screen = tmux.capture_pane(pane, 0).unwrap_or_default();
        if let Some(menu) = crate::agent::menu::parse(&screen) {
            if menu.is_trust_dialog() {
                match crate::session::answer::answer_session(
                    ctx,
                    session,
                    crate::agent::menu::Answer::Yes,
                ) {
                    Ok(_) => out.line(format!("trusted {} for the agent", session.worktree)),
                    Err(e) => out.note(format!("could not answer the trust dialog: {e}")),
                }
            }
            return;
        }
        if agent.started_without_asking(&screen) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Types the prompt once the agent is ready for it, as one message (a bracketed paste),
/// then submits it. An agent whose screens the rules read (aider) is ready when its screen
/// says idle: text typed before it reads its terminal is echoed there and each line goes
/// as a message of its own. If it asks a question first, or its prompt does not show
/// within [`PROMPT_READY_WAIT`], nothing is typed and the output says so. Any other
/// program is ready once it has drawn something (or after a second).
pub fn type_prompt_when_ready(
    ctx: &Context,
    tmux: &Tmux,
    pane: &OwnedPane,
    session: &Session,
    text: &str,
    out: &mut dyn Report,
) -> Result<(), Error> {
    let rules =
        crate::agent::rules::Rules::load(&ctx.home).map_err(crate::health::HealthError::from)?;
    let kind = session.agent_kind.as_str();
    let started = Instant::now();
    if rules.has_rules(kind) {
        loop {
            let screen = tmux.capture_pane(pane.pane(), 0).unwrap_or_default();
            let state = rules
                .classify(kind, &screen)
                .map_err(crate::health::HealthError::from)?
                .state;
            let not_typed = match state {
                AgentState::Idle => break,
                AgentState::Waiting => "it asks a question first: answer it",
                AgentState::Exited => "it has exited",
                _ if started.elapsed() > PROMPT_READY_WAIT => "its prompt did not show",
                _ => {
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            };
            out.note(format!(
                "the task was not typed into {}: {not_typed}, then `orchestra brief {} @FILE`",
                session.label, session.label
            ));
            return Ok(());
        }
    } else {
        while started.elapsed() < TYPE_PROMPT_AFTER {
            if tmux
                .capture_pane(pane.pane(), 0)
                .is_ok_and(|screen| drawn(&screen))
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // Typed prompts go to programs that take no prompt argument (aider, generic ones).
    tmux.type_text(pane, text, crate::tmux::Typing::Natural)?;
    tmux.press(pane, &[Key::Enter])?;
    Ok(())
}

/// Whether the program drew something: a line that is not orchestra's own (`prepare`
/// may leave one on the screen it hands over).
fn drawn(screen: &str) -> bool {
    screen
        .lines()
        .any(|l| !l.trim().is_empty() && !l.starts_with("orchestra: "))
}

/// The prompt a session's agent starts with when it is not the one it was dispatched with
/// (an unblocked session's names the artifacts that are ready): in its folder.
pub const START_PROMPT: &str = "start-prompt.txt";

/// The prompt `--after-start` types, for agents that take none on their command line.
pub const TYPED_PROMPT: &str = "typed-prompt.txt";

/// `dispatch --from-upstream`: the id of the upstream whose branch head the session
/// starts from when it is unblocked.
pub const FROM_UPSTREAM: &str = "from-upstream";

/// The argv of a window that prepares session `id` (its setup, a move of its branch) and
/// then runs its agent.
pub fn window_argv(id: &str, unblocked: bool) -> Result<Vec<String>, Error> {
    let exe = std::env::current_exe().map_err(Error::io("finding the orchestra binary"))?;
    let mut argv = vec![
        exe.to_string_lossy().into_owned(),
        "prepare".to_string(),
        id.to_string(),
    ];
    if unblocked {
        argv.push("--unblocked".into());
    }
    Ok(argv)
}

/// [`window_argv`] for a sandboxed session's restart: `resume`, its `prepare` continues
/// the conversation (in the box's home of its own) instead of starting one.
pub fn boxed_window_argv(id: &str, resume: bool) -> Result<Vec<String>, Error> {
    let mut argv = window_argv(id, false)?;
    if resume {
        argv.push("--resume".into());
    }
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_settings_say_its_notify_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        write_codex_settings(dir.path(), "abc123", true).unwrap();
        let notify = codex_notify_from(&dir.path().join("settings.json")).unwrap();
        assert_eq!(
            notify[1..],
            [
                "event",
                "--from-hook",
                "--session",
                "abc123",
                "codex-notify"
            ]
        );
        write_codex_settings(dir.path(), "abc123", false).unwrap();
        assert_eq!(codex_notify_from(&dir.path().join("settings.json")), None);
        assert_eq!(codex_notify_from(&dir.path().join("missing.json")), None);
        std::fs::write(dir.path().join("bad.json"), "{\"notify\": [1]}").unwrap();
        assert_eq!(codex_notify_from(&dir.path().join("bad.json")), None);
    }

    #[test]
    fn opencodes_installed_plugin_package_is_copied_whole_links_as_links_or_not_at_all() {
        let person = tempfile::tempdir().unwrap();
        let from = person.path();
        std::fs::write(from.join("package.json"), "{\"dependencies\":{}}").unwrap();
        std::fs::write(from.join("package-lock.json"), "{}").unwrap();
        std::fs::create_dir_all(from.join("node_modules/@opencode-ai/plugin")).unwrap();
        std::fs::write(from.join("node_modules/@opencode-ai/plugin/index.js"), "x").unwrap();
        std::fs::create_dir(from.join("node_modules/.bin")).unwrap();
        std::os::unix::fs::symlink(
            "../@opencode-ai/plugin/index.js",
            from.join("node_modules/.bin/p"),
        )
        .unwrap();
        // A link out of the folder is copied as the link, never as what it points at.
        let secret = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(secret.path(), "secret").unwrap();
        std::os::unix::fs::symlink(secret.path(), from.join("node_modules/out")).unwrap();

        let session = tempfile::tempdir().unwrap();
        let to = session.path().join("config");
        std::fs::create_dir(&to).unwrap();
        copy_installed(from, &to).unwrap();
        assert_eq!(
            std::fs::read_to_string(to.join("node_modules/@opencode-ai/plugin/index.js")).unwrap(),
            "x"
        );
        assert_eq!(
            std::fs::read_to_string(to.join("package-lock.json")).unwrap(),
            "{}"
        );
        assert_eq!(
            std::fs::read_link(to.join("node_modules/.bin/p")).unwrap(),
            Path::new("../@opencode-ai/plugin/index.js")
        );
        assert_eq!(
            std::fs::read_link(to.join("node_modules/out")).unwrap(),
            secret.path()
        );

        // Half an install (no lock file) is not copied at all: opencode installs it itself.
        let half = tempfile::tempdir().unwrap();
        std::fs::write(half.path().join("package.json"), "{}").unwrap();
        std::fs::create_dir(half.path().join("node_modules")).unwrap();
        let to = session.path().join("other");
        std::fs::create_dir(&to).unwrap();
        copy_installed(half.path(), &to).unwrap();
        assert_eq!(std::fs::read_dir(&to).unwrap().count(), 0);
    }
}
