//! The agents: the real CLIs (claude, codex, gemini, aider), each against its scripted
//! API stand-in (tests/fake-api) in a sandboxed HOME, and a test's world with one in it.

use std::ffi::OsStr;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{require, wait_until, which, Bus, Env};

pub(crate) const CLAUDE_VERSION: &str = "2.1.332";

/// The cache of pinned agent releases that tests/run.sh fills: `$ORCHESTRA_TEST_CACHE`,
/// else ~/.cache/orchestra-test.
pub(crate) fn test_cache() -> PathBuf {
    std::env::var("ORCHESTRA_TEST_CACHE").map_or_else(
        |_| PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/orchestra-test"),
        PathBuf::from,
    )
}

/// An agent CLI: the file `$<var>` names (to try another build), else `in_cache` under
/// [`test_cache`]; None when that file is not there.
pub(crate) fn agent_cli(var: &str, in_cache: &str) -> Option<PathBuf> {
    if let Ok(p) = std::env::var(var) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let p = test_cache().join(in_cache);
    p.is_file().then_some(p)
}

/// The real `claude` CLI: `$ORCHESTRA_TEST_CLAUDE`, else the pinned release in the test
/// cache.
pub(crate) fn claude_bin() -> Option<PathBuf> {
    agent_cli(
        "ORCHESTRA_TEST_CLAUDE",
        &format!("claude-{CLAUDE_VERSION}/node_modules/@anthropic-ai/claude-code-linux-x64/claude"),
    )
}

/// The folder of the API stand-ins: `$ORCHESTRA_FAKE_API` (to try another version of
/// them), else the repository's own tests/fake-api.
pub(crate) fn fake_api_dir() -> PathBuf {
    std::env::var_os("ORCHESTRA_FAKE_API").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-api"),
        PathBuf::from,
    )
}

/// An API stand-in of tests/fake-api (`anthropic.py` for claude, `gemini.py`, `openai.py`
/// for codex, `openai_chat.py` for aider) on a free loopback port; each request lands in
/// its log, one JSON line each, before its reply.
pub(crate) struct StandIn {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

/// The scripted stand-in for the Anthropic API.
pub(crate) type FakeApi = StandIn;

impl StandIn {
    /// Starts `script` with its port file and log in `dir` (named after the script, so
    /// several stand-ins can share a folder).
    pub(crate) fn start(dir: &Path, script: &str) -> StandIn {
        StandIn::start_with(dir, script, &[])
    }

    /// [`StandIn::start`] with `args` after the stand-in's own.
    pub(crate) fn start_with(dir: &Path, script: &str, args: &[&OsStr]) -> StandIn {
        let stem = script.trim_end_matches(".py");
        let port_file = dir.join(format!("{stem}.port"));
        let log = dir.join(format!("{stem}-requests.jsonl"));
        let mut child = Command::new("python3")
            .arg(fake_api_dir().join(script))
            .args(["--port", "0", "--port-file"])
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start the API stand-in {script} (python3): {e}"));
        let mut exited = None;
        let listening = wait_until(Duration::from_secs(10), || {
            exited = child.try_wait().ok().flatten();
            port_file.exists() || exited.is_some()
        });
        assert!(
            listening && exited.is_none(),
            "the API stand-in {script} did not start ({exited:?})"
        );
        let port = std::fs::read_to_string(&port_file)
            .expect("port file")
            .trim()
            .parse()
            .expect("port number");
        StandIn { child, port, log }
    }

    /// Where it listens.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request the stand-in received, one JSON line each (`{"path", "turn",
    /// "request"}` for claude's). A line still being written is left out.
    pub(crate) fn requests(&self) -> String {
        let mut log = std::fs::read_to_string(&self.log).unwrap_or_default();
        log.truncate(log.rfind('\n').map_or(0, |end| end + 1));
        log
    }

    /// [`StandIn::requests`], parsed.
    pub(crate) fn requests_json(&self) -> Vec<serde_json::Value> {
        self.requests()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Whether a request after the first `before` carried `text` (a conversation taken
    /// up again sends its earlier turns along).
    pub(crate) fn heard_since(&self, before: usize, text: &str) -> bool {
        self.requests_json()
            .iter()
            .skip(before)
            .any(|r| r.to_string().contains(text))
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An agent CLI the suite runs for real, against its API stand-in in a sandboxed HOME.
pub(crate) struct AgentCli {
    /// What a missing CLI is called where a test skips (or, on CI, fails) for it.
    pub what: String,
    /// The CLI, where it is installed.
    pub path: Option<PathBuf>,
    /// Its API stand-in: a script of tests/fake-api.
    pub api: &'static str,
    /// The script of tests/fake-api that makes its sandboxed HOME.
    pub home_script: &'static str,
    /// That HOME's folder in the test's root.
    pub home: &'static str,
    /// What follows the CLI on the command line orchestra runs it by.
    pub args: &'static str,
    /// What it needs on the PATH besides python3 (the stand-ins' language).
    pub needs: &'static [&'static str],
}

pub(crate) const CODEX_VERSION: &str = "0.171.0";
pub(crate) const GEMINI_VERSION: &str = "0.61.0";
pub(crate) const AIDER_VERSION: &str = "0.86.2";
pub(crate) const OPENCODE_VERSION: &str = "1.18.33";

impl AgentCli {
    /// The real claude, `args` after it on its command line.
    pub(crate) fn claude(args: &'static str) -> AgentCli {
        AgentCli {
            what: format!("the claude CLI {CLAUDE_VERSION}"),
            path: claude_bin(),
            api: "anthropic.py",
            home_script: "claude_home.py",
            home: "claude-home",
            args,
            needs: &[],
        }
    }

    /// The real codex (`$ORCHESTRA_TEST_CODEX`, else the pinned release), run with
    /// `--no-daemon` (the shared background server copies the whole 300 MB CLI into
    /// CODEX_HOME) and manual approvals.
    pub(crate) fn codex() -> AgentCli {
        AgentCli {
            what: format!("the codex CLI {CODEX_VERSION}"),
            path: agent_cli("ORCHESTRA_TEST_CODEX", &format!(
                "codex-{CODEX_VERSION}/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
            )),
            api: "openai.py",
            home_script: "codex_home.py",
            home: "codex-home",
            args: "--no-daemon --ask-for-approval on-request --sandbox read-only",
            needs: &[],
        }
    }

    /// The real Gemini CLI (`$ORCHESTRA_TEST_GEMINI`, else the pinned release's `gemini`
    /// link: the name tells orchestra the kind).
    pub(crate) fn gemini() -> AgentCli {
        AgentCli {
            what: format!("the gemini CLI {GEMINI_VERSION}"),
            path: agent_cli(
                "ORCHESTRA_TEST_GEMINI",
                &format!("gemini-{GEMINI_VERSION}/node_modules/.bin/gemini"),
            ),
            api: "gemini.py",
            home_script: "gemini_home.py",
            home: "gemini-home",
            args: "",
            needs: &["node"],
        }
    }

    /// The real opencode (`$ORCHESTRA_TEST_OPENCODE`, else the pinned release's native
    /// binary, `opencode.exe`: its name tells orchestra the kind).
    pub(crate) fn opencode() -> AgentCli {
        AgentCli {
            what: format!("opencode {OPENCODE_VERSION}"),
            path: agent_cli(
                "ORCHESTRA_TEST_OPENCODE",
                &format!("opencode-{OPENCODE_VERSION}/node_modules/opencode-ai/bin/opencode.exe"),
            ),
            api: "anthropic.py",
            home_script: "opencode_home.py",
            home: "opencode-home",
            args: "",
            needs: &[],
        }
    }

    /// The real aider (`$ORCHESTRA_TEST_AIDER`, else the pinned release in the venv that
    /// tests/run.sh makes).
    pub(crate) fn aider() -> AgentCli {
        AgentCli {
            what: format!("aider {AIDER_VERSION} (aider-chat from PyPI, in a venv)"),
            path: agent_cli(
                "ORCHESTRA_TEST_AIDER",
                &format!("aider-{AIDER_VERSION}/bin/aider"),
            ),
            api: "openai_chat.py",
            home_script: "aider_home.py",
            home: "aider-home",
            args: "",
            needs: &[],
        }
    }

    /// The CLI, when it and all it needs are here; `None` (a reported skip) when not,
    /// except on CI where that fails.
    pub(crate) fn present(&self) -> Option<PathBuf> {
        if !require(&self.what, self.path.is_some()) {
            return None;
        }
        for program in std::iter::once(&"python3").chain(self.needs) {
            if !require(program, which(program).is_some()) {
                return None;
            }
        }
        self.path.clone()
    }

    /// The command line orchestra runs it by: the CLI, quoted, then its arguments.
    pub(crate) fn command(&self, cli: &Path) -> String {
        let quoted = shell_words::quote(&cli.to_string_lossy()).into_owned();
        match self.args {
            "" => quoted,
            args => format!("{quoted} {args}"),
        }
    }

    /// Starts its stand-in in `env` and makes its sandboxed HOME (`trust`: folders it
    /// trusts without asking); returns the stand-in and the environment a tmux server
    /// must start with for the CLI to use them.
    pub(crate) fn serve(&self, env: &Env, trust: &[&Path]) -> (StandIn, Vec<(String, String)>) {
        let api = StandIn::start(&env.root, self.api);
        let vars = agent_home(
            env,
            self.home_script,
            &env.root.join(self.home),
            api.port,
            trust,
        );
        (api, vars)
    }
}

/// The real claude CLI, a fake API and a sandboxed HOME: what a test needs to run the agent.
pub(crate) struct ClaudeWorld {
    pub claude: PathBuf,
    pub api: FakeApi,
    /// The environment a tmux server must start with for claude to reach the fake API.
    pub env: Vec<(String, String)>,
}

impl ClaudeWorld {
    /// `None` (a reported skip) when the CLI is not installed, except on CI where that fails.
    pub(crate) fn start(env: &Env, trust: &[&Path]) -> Option<ClaudeWorld> {
        let cli = AgentCli::claude("");
        let claude = cli.present()?;
        let (api, vars) = cli.serve(env, trust);
        Some(ClaudeWorld {
            claude,
            api,
            env: vars,
        })
    }

    /// The sandboxed HOME claude runs with.
    pub(crate) fn home(&self) -> PathBuf {
        self.env
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| PathBuf::from(v))
            .expect("the sandboxed HOME")
    }

    /// `export NAME=value` lines of its environment, but for TMUX_TMPDIR (the tmux of
    /// where it runs decides that): for a manifest's `env` snippet.
    pub(crate) fn exports(&self) -> Vec<String> {
        self.env
            .iter()
            .filter(|(k, _)| k != "TMUX_TMPDIR")
            .map(|(k, v)| format!("export {k}={}", shell_words::quote(v)))
            .collect()
    }
}

/// A test's world with an agent CLI in it: the CLI, its stand-in, a sandboxed HOME and a
/// tmux server whose environment reaches them (and a notification bus, where a test asked
/// for one). It reads sessions as its [`Env`] does.
pub(crate) struct AgentWorld {
    pub env: Env,
    pub api: StandIn,
    pub cli: PathBuf,
    /// The command line orchestra runs the CLI by.
    pub agent: String,
    /// The sandboxed HOME.
    pub home: PathBuf,
    /// The environment its tmux server started with.
    pub vars: Vec<(String, String)>,
    /// A notification bus its tmux server and orchestra reach, where a test asked for one.
    pub bus: Option<Bus>,
    /// How long its screens may take to show something.
    pub patience: Duration,
}

impl AgentWorld {
    /// `cli`'s world, the folders `trust` names trusted in its settings, on a bus whose
    /// server says it has `bus_capabilities` where they are given. `None` (a reported
    /// skip) when a part is missing, except on CI where that fails.
    pub(crate) fn start(
        cli: AgentCli,
        trust: impl FnOnce(&Env) -> Vec<PathBuf>,
        bus_capabilities: Option<&[&str]>,
    ) -> Option<AgentWorld> {
        let path = cli.present()?;
        let mut env = Env::new();
        let bus = match bus_capabilities {
            Some(capabilities) => Some(Bus::start_with(&env.root, capabilities)?),
            None => None,
        };
        let trust = trust(&env);
        let trust: Vec<&Path> = trust.iter().map(PathBuf::as_path).collect();
        let (api, mut vars) = cli.serve(&env, &trust);
        if let Some(bus) = &bus {
            let on_bus = ("DBUS_SESSION_BUS_ADDRESS".to_string(), bus.address.clone());
            vars.push(on_bus.clone());
            env.env.push(on_bus);
        }
        env.start_server(&vars);
        Some(AgentWorld {
            home: env.root.join(cli.home),
            agent: cli.command(&path),
            cli: path,
            env,
            api,
            vars,
            bus,
            patience: Duration::from_secs(30),
        })
    }

    /// orchestra runs with the CLI's `name` as its tmux server has it (where orchestra
    /// looks for what the CLI writes, as a person's shell would tell it).
    pub(crate) fn share(&mut self, name: &str) {
        let shared: Vec<_> = self
            .vars
            .iter()
            .filter(|(k, _)| k == name)
            .cloned()
            .collect();
        assert!(!shared.is_empty(), "no {name} in the CLI's environment");
        self.env.env.extend(shared);
    }

    /// Dispatches `label` running the CLI with `prompt`.
    pub(crate) fn dispatch(&self, label: &str, prompt: &str) {
        self.env
            .orchestra(&[
                "dispatch",
                label,
                "--agent",
                &self.agent,
                "--prompt",
                prompt,
            ])
            .ok();
    }

    /// The body of the notification that says `label` is waiting, once it reached this
    /// world's bus (within 10 s).
    #[track_caller]
    pub(crate) fn waiting_note(&self, label: &str) -> String {
        let bus = self.bus.as_ref().expect("a world started with a bus");
        let note = bus.wait_note(&format!("{label} is waiting"), Duration::from_secs(10));
        note["body"].as_str().unwrap_or_default().to_string()
    }

    /// [`Env::wait_screen`] for as long as this CLI may take.
    #[track_caller]
    pub(crate) fn wait_screen(&self, label: &str, text: &str) {
        self.env.wait_screen(label, text, self.patience);
    }
}

impl std::ops::Deref for AgentWorld {
    type Target = Env;

    fn deref(&self) -> &Env {
        &self.env
    }
}

/// Several agent CLIs in one test's world, for a fan-out of several kinds: each against its
/// own stand-in, all in one sandboxed HOME (each keeps its settings in files of its own
/// there: `.claude.json`, `.codex/`, `.gemini/`), on one tmux server whose environment
/// holds what each needs. orchestra runs with that HOME too, as in the person's shell
/// (it builds a gemini session's home from it).
pub(crate) struct MixedWorld {
    pub env: Env,
    /// The stand-ins, in the order the CLIs were given.
    pub apis: Vec<StandIn>,
    /// The command line orchestra runs each CLI by, in that order.
    pub agents: Vec<String>,
    /// The sandboxed HOME they share.
    pub home: PathBuf,
    /// How long their screens may take to show something (the slowest's).
    pub patience: Duration,
}

impl MixedWorld {
    /// The world of `clis`, each with the folders its settings trust (`trust` of the
    /// world's [`Env`], one list per CLI; gemini's home takes none: orchestra trusts the
    /// worktrees it makes). `None` (a reported skip) when a part is missing, except on CI
    /// where that fails.
    pub(crate) fn start(
        clis: Vec<AgentCli>,
        trust: impl FnOnce(&Env) -> Vec<Vec<PathBuf>>,
    ) -> Option<MixedWorld> {
        let mut paths = Vec::new();
        for cli in &clis {
            paths.push(cli.present()?);
        }
        let mut env = Env::new();
        let trusted = trust(&env);
        assert_eq!(trusted.len(), clis.len(), "one trust list per CLI");
        let home = env.root.join("agents-home");
        std::fs::create_dir_all(&home).expect("the shared HOME");
        // Each home script names HOME by its real path: the same one for all.
        let home = home.canonicalize().expect("the shared HOME");
        let mut vars: Vec<(String, String)> = Vec::new();
        let mut apis = Vec::new();
        for (cli, trust) in clis.iter().zip(&trusted) {
            let api = StandIn::start(&env.root, cli.api);
            let trust: Vec<&Path> = trust.iter().map(PathBuf::as_path).collect();
            for (name, value) in agent_home(&env, cli.home_script, &home, api.port, &trust) {
                match vars.iter().find(|(n, _)| *n == name) {
                    Some((_, was)) => assert_eq!(
                        *was, value,
                        "{} wants {name} other than another CLI of the world",
                        cli.what
                    ),
                    None => vars.push((name, value)),
                }
            }
            apis.push(api);
        }
        env.start_server(&vars);
        env.env
            .push(("HOME".into(), home.to_string_lossy().into_owned()));
        Some(MixedWorld {
            agents: clis
                .iter()
                .zip(&paths)
                .map(|(cli, path)| cli.command(path))
                .collect(),
            env,
            apis,
            home,
            patience: Duration::from_secs(60),
        })
    }

    /// [`Env::wait_screen`] for as long as the slowest CLI may take.
    #[track_caller]
    pub(crate) fn wait_screen(&self, label: &str, text: &str) {
        self.env.wait_screen(label, text, self.patience);
    }
}

impl std::ops::Deref for MixedWorld {
    type Target = Env;

    fn deref(&self) -> &Env {
        &self.env
    }
}

/// Runs a stand-in's own tests (`script` of tests/fake-api: recorded shapes, the wire on
/// a live server) and fails with their report unless they pass within 120 s.
pub(crate) fn stand_in_passes_its_own_tests(script: &str) {
    if !require("python3", which("python3").is_some()) {
        return;
    }
    // A file, not a pipe: a full pipe would stall the child past its deadline.
    let mut report = tempfile::tempfile().expect("temp file");
    let mut child = Command::new("python3")
        .arg(fake_api_dir().join(script))
        .stdout(report.try_clone().expect("temp file"))
        .stderr(report.try_clone().expect("temp file"))
        .spawn()
        .expect("run python3");
    let mut status = None;
    let finished = wait_until(Duration::from_secs(120), || {
        status = child.try_wait().expect("wait for python3");
        status.is_some()
    });
    if !finished {
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut text = String::new();
    report.rewind().expect("rewind");
    report.read_to_string(&mut text).expect("read the report");
    assert!(
        status.is_some_and(|s| s.success()),
        "tests/fake-api/{script} failed (or ran past 120 s):\n{text}"
    );
}

/// Makes a sandboxed HOME for an agent CLI with `script` of tests/fake-api (its settings
/// point at the stand-in on `port`; `trust`: folders it trusts without asking) and returns
/// the environment a tmux server must start with for the CLI to use it.
pub(crate) fn agent_home(
    env: &Env,
    script: &str,
    home: &Path,
    port: u16,
    trust: &[&Path],
) -> Vec<(String, String)> {
    let mut cmd = Command::new("python3");
    cmd.arg(fake_api_dir().join(script))
        .arg(home)
        .arg("--print-env")
        .arg("--port")
        .arg(port.to_string());
    for t in trust {
        cmd.arg("--trust").arg(t);
    }
    let out = cmd.output().expect(script);
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut vars = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(assignment) = line.strip_prefix("export ") else {
            continue;
        };
        let words = shell_words::split(assignment).expect("shell words");
        let (k, v) = words[0].split_once('=').expect("NAME=value");
        vars.push((k.to_string(), v.to_string()));
    }
    vars.push((
        "TMUX_TMPDIR".into(),
        env.tmux_tmpdir.to_string_lossy().into_owned(),
    ));
    vars
}

/// The screens captured from `kind`'s CLI at `version` (tests/fixtures/screens), each file
/// named for the state it shows, sorted; the catalogue captures left out.
pub(crate) fn screen_fixtures(kind: &str, version: &str) -> Vec<PathBuf> {
    let dir = screens_dir(kind, version);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a fixture").path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("txt" | "ansi")))
        // The catalogue's captures (`<state>-<entry>@<size>`) are read by
        // classify::every_real_screen_is_classified_as_its_name_says, unknown counted apart.
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains('@'))
        })
        .collect();
    files.sort();
    files
}

/// The captured screen `name` of `kind`'s CLI at `version`.
pub(crate) fn screen_fixture(kind: &str, version: &str, name: &str) -> String {
    let file = screens_dir(kind, version).join(name);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn screens_dir(kind: &str, version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/screens")
        .join(kind)
        .join(version)
}
