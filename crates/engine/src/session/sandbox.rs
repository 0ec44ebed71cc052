//! A sandboxed session's box (sys's `sandbox` makes the bwrap argv; this says what goes
//! in): the system read-only; the session's worktree and the repository's git folder
//! writable, the other worktrees and the main worktree's files hidden; a private /tmp;
//! the person's home hidden, the agent given a home of its own in the session's folder
//! holding copies of only the configuration its kind needs; of orchestra's home only the
//! session's folder and its drop folder (`inbox`: its hooks' and `orchestra done`'s words,
//! replayed by the next status tick), the record itself not there; the environment by an
//! allow-list; the network on or off.

use std::path::{Path, PathBuf};

use crate::agent::{self, AgentKind};
use crate::error::Error;
use crate::git::Repo;
use crate::manifest::{NetworkSetting, SandboxSetting};
use crate::paths::{find_program, non_empty_env, session_dir};
use crate::sandbox::{Mount, Spec};
use crate::state::Session;

pub use crate::sandbox::probe;
pub use orchestra_model::sandbox::{Allowed, Network};

/// The session's own home inside its box: in its folder, so it goes with the session.
pub const HOME_DIR: &str = "home";

/// The variables of the person's environment every box gets (a terminal's, a locale's);
/// the kind's own are its `Sandboxed::env`.
const PASSED: &[&str] = &[
    "TERM",
    "COLORTERM",
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
];

/// What every box copies of the person's home, whatever the kind: git's identity (and the
/// rest of the person's git settings), which a commit in the worktree needs.
const COPIED: &[&str] = &[".gitconfig", ".config/git/config"];

/// A command wrapped in its box, and the environment it starts with.
pub type Boxed = (Vec<String>, Vec<(String, String)>);

/// What runs in the box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inside {
    /// The agent: its starter clears the environment and gives the returned one (API
    /// keys never go on a command line).
    Agent,
    /// The worktree's setup: the environment on bwrap's command line, no API key in it.
    Setup,
}

/// A repo command of `session`'s (its setup, its check) as it runs: in the session's box
/// when it has one, with its environment on bwrap's command line (no API key); else
/// `command` with orchestra's environment for a session's commands.
pub fn job_command(
    home_dir: &Path,
    session: &Session,
    command: Vec<String>,
) -> Result<Boxed, Error> {
    let env = crate::worktree::command_env(session);
    match &session.sandbox {
        Some(network) => wrap(home_dir, session, network, &command, &env, Inside::Setup),
        None => Ok((command, env)),
    }
}

/// `command` wrapped to run in `session`'s box, and the environment to start it with
/// (all of it: the starter clears its own first); for [`Inside::Setup`] that is empty
/// and the box's is on its command line. `env` is what orchestra gives the session
/// (ORCHESTRA_*, the kind's launch variables).
pub fn wrap(
    home_dir: &Path,
    session: &Session,
    network: &Network,
    command: &[String],
    env: &[(String, String)],
    inside: Inside,
) -> Result<Boxed, Error> {
    // No probe here: dispatch probed, and a bwrap that stopped working since says so in
    // the window (one bwrap run less on the way to the agent).
    let dir = session_dir(home_dir, &session.id);
    let home = dir.join(HOME_DIR);
    crate::paths::private_dir(&home).map_err(Error::io(format!("creating {}", home.display())))?;
    let person = non_empty_env("HOME").map(PathBuf::from);
    let kind = agent::of(session.agent_kind).sandboxed();
    // The kind's folders the person keeps elsewhere (`CODEX_HOME`): copied from there.
    let moved: Vec<(&str, &str, PathBuf)> = match inside {
        Inside::Agent => kind
            .moved_by
            .iter()
            .filter_map(|(var, place)| non_empty_env(var).map(|p| (*var, *place, p.into())))
            .collect(),
        Inside::Setup => Vec::new(),
    };
    let copying = |person: Option<&PathBuf>| -> std::io::Result<()> {
        for (_, place, from) in &moved {
            copy_one(from, &home.join(place))?;
        }
        let Some(person) = person else {
            return Ok(());
        };
        copy_config(person, &home, COPIED)?;
        if inside == Inside::Agent {
            let config: Vec<&str> = kind
                .config
                .iter()
                .copied()
                .filter(|c| !moved.iter().any(|(_, place, _)| place == c))
                .collect();
            copy_config(person, &home, &config)?;
        }
        Ok(())
    };
    copying(person.as_ref()).map_err(Error::io(format!(
        "copying settings into {}",
        home.display()
    )))?;
    let worktree = PathBuf::from(&session.worktree);
    let mut mounts = Vec::new();
    if let Some(person) = &person {
        mounts.push(Mount::Hide(person.clone()));
    }
    if let Ok(repo) = Repo::discover(Path::new(&session.repo)) {
        let main = repo.main_worktree().to_path_buf();
        // The main worktree's files are the person's, not this session's.
        mounts.push(Mount::Hide(main.clone()));
        git_mounts(&repo, &worktree, &session.branch, &mut mounts).map_err(Error::io(
            "making the repository's git folder ready for a box",
        ))?;
    }
    if let Some(root) = worktree.parent() {
        // Where the other sessions' worktrees are.
        mounts.push(Mount::Hide(root.to_path_buf()));
    }
    if let Some(folder) = session
        .tmux_socket
        .as_deref()
        .and_then(|s| Path::new(s).parent())
        .filter(|f| f.components().count() > 2)
        .filter(|f| !worktree.starts_with(f) && !home_dir.starts_with(f))
    {
        // The tmux server would let an agent type into every other window: its socket
        // stays out wherever TMUX_TMPDIR put it (under /tmp it is hidden anyway).
        mounts.push(Mount::Hide(folder.to_path_buf()));
    }
    mounts.push(Mount::Write(worktree.clone()));
    let mut moved_env = Vec::new();
    for (var, place, from) in &moved {
        let copy = home.join(place);
        if from.is_dir() && copy.is_dir() {
            // Where the person's folder lies: the paths its settings spell lead to the copy.
            mounts.push(Mount::WriteAt {
                from: copy,
                at: from.clone(),
            });
            moved_env.push((var.to_string(), from.to_string_lossy().into_owned()));
        } else {
            moved_env.push((var.to_string(), copy.to_string_lossy().into_owned()));
        }
    }
    // Of orchestra's home only the session's own folder and its drop folder: the record
    // (state.db), the other sessions' folders and the rest are not there at all; the
    // hooks and `orchestra done` inside leave their words in the drop folder (`inbox`).
    let inbox = crate::inbox::dir(home_dir, &session.id);
    crate::paths::private_dir(&inbox)
        .map_err(Error::io(format!("creating {}", inbox.display())))?;
    mounts.push(Mount::Hide(home_dir.to_path_buf()));
    mounts.push(Mount::Write(dir.clone()));
    mounts.push(Mount::Write(inbox));
    if let Ok(exe) = std::env::current_exe() {
        mounts.push(Mount::Read(exe));
    }
    if inside == Inside::Agent {
        if let Some(program) = command.first().and_then(|p| find_program(p)) {
            mounts.push(Mount::Read(installed_with(&program)));
        }
        if let Some(program) = session.agent_argv.first().and_then(|p| find_program(p)) {
            mounts.push(Mount::Read(installed_with(&program)));
        }
    }
    let mut inner: Vec<(String, String)> = Vec::new();
    for (name, value) in std::env::vars() {
        let passes = PASSED.contains(&name.as_str())
            || name.starts_with("ORCHESTRA_")
            || (inside == Inside::Agent && kind.passes(&name));
        if passes {
            inner.push((name, value));
        }
    }
    for (name, value) in moved_env.iter().chain(env) {
        inner.retain(|(n, _)| n != name);
        inner.push((name.clone(), value.clone()));
    }
    inner.retain(|(n, _)| n != "HOME" && n != "IS_SANDBOX" && n != crate::inbox::SANDBOXED_ENV);
    inner.push((crate::inbox::SANDBOXED_ENV.into(), session.id.clone()));
    inner.push(("HOME".into(), home.to_string_lossy().into_owned()));
    // What a CLI asks before it runs without asking as root (claude's
    // --dangerously-skip-permissions): this is a sandbox.
    inner.push(("IS_SANDBOX".into(), "1".into()));
    let mut command = command.to_vec();
    let mut outside = Vec::new();
    if let Some(hosts) = network.hosts() {
        // The box's own network namespace reaches nothing; the proxy outside, on a socket
        // in the session's folder (read-only inside: the agent cannot take its place),
        // lets through to the listed hosts, and the bridge inside is the box's proxy.
        let exe = std::env::current_exe()
            .and_then(|e| e.canonicalize())
            .map_err(Error::io(
                "finding this program, the sandbox's network proxy",
            ))?;
        let exe = exe.to_string_lossy().into_owned();
        let socket = dir.join(crate::sandbox_net::SOCKET);
        let socket_word = socket.to_string_lossy().into_owned();
        mounts.push(Mount::Read(socket));
        let port = crate::sandbox_net::BRIDGE_PORT;
        let proxy = format!("http://127.0.0.1:{port}");
        let p = proxy.as_str();
        let proxied = [
            ("HTTPS_PROXY", p),
            ("HTTP_PROXY", p),
            ("ALL_PROXY", p),
            ("https_proxy", p),
            ("http_proxy", p),
            ("all_proxy", p),
            // Nothing bypasses it: the box's loopback holds only the bridge.
            ("NO_PROXY", ""),
            ("no_proxy", ""),
        ];
        inner.retain(|(n, _)| !proxied.iter().any(|(p, _)| n == *p));
        inner.extend(
            proxied
                .iter()
                .map(|(n, v)| ((*n).to_string(), (*v).to_string())),
        );
        let bridge = [
            exe.clone(),
            "sandbox-net".into(),
            "inside".into(),
            "--socket".into(),
            socket_word.clone(),
            "--port".into(),
            port.to_string(),
            "--".into(),
        ];
        command = bridge.into_iter().chain(command).collect();
        let hosts: Vec<String> = hosts.iter().map(ToString::to_string).collect();
        outside = vec![
            exe,
            "sandbox-net".into(),
            "outside".into(),
            "--socket".into(),
            socket_word,
            "--allow".into(),
            hosts.join(","),
            "--".into(),
        ];
    }
    let spec = Spec {
        mounts,
        network: network.clone(),
        env: (inside == Inside::Setup).then(|| inner.clone()),
        cwd: worktree,
    };
    let argv: Vec<String> = outside
        .into_iter()
        .chain(crate::sandbox::argv(&spec, &command))
        .collect();
    Ok(match inside {
        Inside::Agent => (argv, inner),
        Inside::Setup => (argv, Vec::new()),
    })
}

/// What of the repository's git folder the box sees: all of it read-only (its config,
/// hooks, info, packed-refs, the other branches and worktrees: what runs or merges out
/// here), writable only what a commit on the session's own branch writes: the objects
/// (their packs and alternates not), the folder of its branch's ref and reflog (git makes
/// `<ref>.lock` beside the ref; the others there stay read-only, each bound over), and
/// its own worktree's git folder (but what leads out of it: `commondir`, `gitdir`,
/// `config.worktree`). Folders and files git may lack are made first, empty, so that
/// each can be bound (a box cannot make a read-only file where none is).
fn git_mounts(
    repo: &Repo,
    worktree: &Path,
    branch: &str,
    mounts: &mut Vec<Mount>,
) -> std::io::Result<()> {
    let git = repo.git_dir().to_path_buf();
    mounts.push(Mount::Read(git.clone()));
    let objects = git.join("objects");
    mounts.push(Mount::Write(objects.clone()));
    for fixed in ["info", "pack"] {
        std::fs::create_dir_all(objects.join(fixed))?;
        mounts.push(Mount::Read(objects.join(fixed)));
    }
    // A branch name is checked by git (no `..`, no leading `/`) before it is recorded.
    for at in [git.join("refs/heads"), git.join("logs/refs/heads")] {
        let own = at.join(branch);
        let Some(folder) = own.parent() else { continue };
        std::fs::create_dir_all(folder)?;
        mounts.push(Mount::Write(folder.to_path_buf()));
        for entry in std::fs::read_dir(folder)?.flatten() {
            let path = entry.path();
            if path != own {
                mounts.push(Mount::Read(path));
            }
        }
    }
    if let Some(admin) = repo.worktree_admin(worktree) {
        mounts.push(Mount::Write(admin.clone()));
        let own_config = admin.join("config.worktree");
        if !own_config.exists() {
            std::fs::write(&own_config, "")?;
        }
        for leads_out in ["commondir", "gitdir", "config.worktree"] {
            if admin.join(leads_out).exists() {
                mounts.push(Mount::Read(admin.join(leads_out)));
            }
        }
    }
    Ok(())
}

/// What must be readable for `program` to run: the package it came in when it is a node
/// package's (its `node_modules`'s parent), else the file alone (its folder may be the
/// person's home).
fn installed_with(program: &Path) -> PathBuf {
    let real = program
        .canonicalize()
        .unwrap_or_else(|_| program.to_path_buf());
    let package = real
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .and_then(Path::parent);
    match package {
        Some(p) => p.to_path_buf(),
        None => real,
    }
}

/// Copies `config` (paths relative to the person's home `from`) into the session's home
/// `to`, each once: a file as it is, a folder's top-level files (its conversation logs
/// and caches stay the person's). What the agent changes later are its copies.
fn copy_config(from: &Path, to: &Path, config: &[&str]) -> std::io::Result<()> {
    for entry in config {
        copy_one(&from.join(entry), &to.join(entry))?;
    }
    Ok(())
}

/// [`copy_config`]'s copy of one file or folder `source` as `target`, unless made already.
fn copy_one(source: &Path, target: &Path) -> std::io::Result<()> {
    if target.exists() {
        return Ok(());
    }
    let Ok(meta) = std::fs::metadata(source) else {
        return Ok(());
    };
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if meta.is_file() {
        std::fs::copy(source, target)?;
    } else if meta.is_dir() {
        std::fs::create_dir_all(target)?;
        for file in std::fs::read_dir(source)?.flatten() {
            if file.file_type().is_ok_and(|t| t.is_file()) {
                std::fs::copy(file.path(), target.join(file.file_name()))?;
            }
        }
    }
    Ok(())
}

/// What a dispatch asked of the box: its flags, read against the repo's orchestra.toml.
pub struct Asked<'a> {
    pub sandbox: bool,
    pub no_sandbox: bool,
    pub network: Option<&'a str>,
    pub yolo: bool,
}

/// The sandbox a dispatch in the repo whose main worktree is `main` runs in (its network),
/// or none: `--sandbox`, else orchestra.toml's `sandbox`, `--no-sandbox` over both.
/// Refused (bad input, nothing made): a network that is not on or off, `--network`
/// without a sandbox, `--yolo` outside one unless `--no-sandbox` says so, and a sandbox
/// bubblewrap cannot make here.
pub fn chosen(main: &Path, asked: &Asked<'_>) -> Result<Option<Network>, Error> {
    let file = crate::manifest::default_path(main);
    let setting = if file.exists() {
        crate::manifest::load(&file)?.sandbox
    } else {
        None
    };
    let on =
        !asked.no_sandbox && (asked.sandbox || setting.as_ref().is_some_and(SandboxSetting::on));
    if asked.yolo && !on && !asked.no_sandbox {
        return Err(Error::BadInput(
            "--yolo lets the agent run anything without asking: only in a sandbox (--sandbox), or say --yolo --no-sandbox to run it so as yourself".into(),
        ));
    }
    if !on {
        if asked.network.is_some() {
            return Err(Error::BadInput(
                "--network is the sandbox's: add --sandbox".into(),
            ));
        }
        return Ok(None);
    }
    let network = match (asked.network, setting.as_ref().and_then(|s| s.network())) {
        (Some(word), _) => network_word(word, "--network")?,
        (None, Some(NetworkSetting::Word(word))) => {
            network_word(word, "[sandbox] network").map_err(|e| in_file(&file, e))?
        }
        (None, Some(NetworkSetting::Hosts(hosts))) => {
            Allowed::list(hosts.iter().map(String::as_str))
                .map(Network::Hosts)
                .map_err(|e| {
                    Error::BadInput(format!("{}: [sandbox] network: {e}", file.display()))
                })?
        }
        (None, None) => Network::On,
    };
    probe().map_err(|e| Error::BadInput(e.to_string()))?;
    Ok(Some(network))
}

/// The network of a manifest session's box (`setting` on), `file` its orchestra.toml;
/// refused (bad input) as a dispatch's would be, bubblewrap missing too.
pub fn network_of(setting: &SandboxSetting, file: &Path) -> Result<Network, Error> {
    let network = match setting.network() {
        Some(NetworkSetting::Word(word)) => network_word(word, "sandbox network")?,
        Some(NetworkSetting::Hosts(_)) => {
            return Err(Error::BadInput(format!(
                "{}: a session's sandbox network as a list of hosts is not supported yet: write \"on\" or \"off\"",
                file.display()
            )))
        }
        None => Network::On,
    };
    probe().map_err(|e| Error::BadInput(e.to_string()))?;
    Ok(network)
}

fn network_word(word: &str, what: &str) -> Result<Network, Error> {
    Network::read(word).map_err(|e| {
        Error::BadInput(format!(
            "{what} {word:?}: {e} (on, off, or hosts separated by commas)"
        ))
    })
}

fn in_file(file: &Path, e: Error) -> Error {
    match e {
        Error::BadInput(line) => Error::BadInput(format!("{}: {line}", file.display())),
        other => other,
    }
}

/// The words `--yolo` adds to a `kind` agent's command, refused for a kind that has no
/// no-ask mode and not added twice.
pub fn add_no_ask(kind: AgentKind, command: &mut Vec<String>) -> Result<(), Error> {
    let words = agent::of(kind).sandboxed().no_ask;
    if words.is_empty() {
        return Err(Error::BadInput(format!(
            "--yolo: a {} agent has no mode that runs without asking",
            kind.as_str()
        )));
    }
    if !command.iter().any(|w| w == words[0]) {
        command.extend(words.iter().map(ToString::to_string));
    }
    Ok(())
}

/// What a session's badge and `health` say of its box: "sandboxed" (with its network
/// off), "yolo" for its no-ask mode; empty for neither.
pub fn mode(session: &Session) -> String {
    let mut words = Vec::new();
    match &session.sandbox {
        Some(Network::On) => words.push("sandboxed"),
        Some(Network::Off) => words.push("sandboxed,net-off"),
        Some(Network::Hosts(_)) => words.push("sandboxed,net-hosts"),
        None => {}
    }
    if session.yolo {
        words.push("yolo");
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_config_is_copied_once_files_only_and_never_written_back() {
        let person = tempfile::tempdir().unwrap();
        let own = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(person.path().join(".claude/projects/x")).unwrap();
        std::fs::write(person.path().join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(person.path().join(".claude/projects/x/log.jsonl"), "big").unwrap();
        std::fs::write(person.path().join(".claude.json"), "{\"a\":1}").unwrap();
        let config = [".claude", ".claude.json", ".absent"];
        copy_config(person.path(), own.path(), &config).unwrap();
        assert_eq!(
            std::fs::read_to_string(own.path().join(".claude/settings.json")).unwrap(),
            "{}"
        );
        assert!(!own.path().join(".claude/projects").exists());
        // The agent's own changes stay: a second start does not copy over them.
        std::fs::write(own.path().join(".claude.json"), "{\"a\":2}").unwrap();
        copy_config(person.path(), own.path(), &config).unwrap();
        assert_eq!(
            std::fs::read_to_string(own.path().join(".claude.json")).unwrap(),
            "{\"a\":2}"
        );
        assert_eq!(
            std::fs::read_to_string(person.path().join(".claude.json")).unwrap(),
            "{\"a\":1}"
        );
    }

    #[test]
    fn of_the_git_folder_only_what_a_commit_on_its_own_branch_writes_is_writable() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("r");
        let repo = crate::git::init_repository(&main).unwrap();
        let base = repo.resolve_commit(None).unwrap();
        let own = dir.path().join("w/a");
        let theirs = dir.path().join("w/b");
        repo.add_worktree(&own, "session/a", base, "ida").unwrap();
        repo.add_worktree(&theirs, "session/b", base, "idb")
            .unwrap();
        let mut mounts = Vec::new();
        git_mounts(&repo, &own, "session/a", &mut mounts).unwrap();
        let git = repo.git_dir().canonicalize().unwrap();
        let admin = repo.worktree_admin(&own).unwrap();
        let mine = admin.file_name().unwrap().to_owned();
        let has = |m: Mount| mounts.contains(&m);
        assert!(has(Mount::Read(repo.git_dir().to_path_buf())), "{mounts:?}");
        for writable in [
            repo.git_dir().join("objects"),
            repo.git_dir().join("refs/heads/session"),
            repo.git_dir().join("logs/refs/heads/session"),
            admin.clone(),
        ] {
            assert!(
                has(Mount::Write(writable.clone())),
                "{writable:?} {mounts:?}"
            );
        }
        for read_only in [
            repo.git_dir().join("objects/pack"),
            repo.git_dir().join("objects/info"),
            repo.git_dir().join("refs/heads/session/b"),
            admin.join("commondir"),
            admin.join("gitdir"),
            admin.join("config.worktree"),
        ] {
            assert!(
                has(Mount::Read(read_only.clone())),
                "{read_only:?} {mounts:?}"
            );
        }
        // Nothing else of it is writable: not its own ref's neighbours, not the other
        // worktree's folder, not the config.
        for m in &mounts {
            if let Mount::Write(p) = m {
                let p = p.canonicalize().unwrap();
                assert!(p.starts_with(&git), "{p:?}");
                assert!(
                    !p.starts_with(git.join("worktrees")) || p.ends_with(&mine),
                    "{p:?}"
                );
            }
        }
        assert!(!has(Mount::Read(
            repo.git_dir().join("refs/heads/session/a")
        )));
    }

    #[test]
    fn yolo_is_each_kinds_own_flag_or_refused() {
        let mut c = vec!["claude".to_string()];
        add_no_ask(AgentKind::Claude, &mut c).unwrap();
        add_no_ask(AgentKind::Claude, &mut c).unwrap();
        assert_eq!(c, ["claude", "--dangerously-skip-permissions"]);
        let mut g = vec!["gemini".to_string()];
        add_no_ask(AgentKind::Gemini, &mut g).unwrap();
        assert_eq!(g, ["gemini", "--yolo"]);
        let mut x = vec!["codex".to_string()];
        add_no_ask(AgentKind::Codex, &mut x).unwrap();
        assert_eq!(x, ["codex", "--dangerously-bypass-approvals-and-sandbox"]);
        let mut a = vec!["aider".to_string()];
        add_no_ask(AgentKind::Aider, &mut a).unwrap();
        assert_eq!(a, ["aider", "--yes-always"]);
        assert!(add_no_ask(AgentKind::Generic, &mut vec!["sh".into()]).is_err());
        // opencode's permissions live in its config, not on its command line.
        let mut o = vec!["opencode".to_string()];
        assert!(add_no_ask(AgentKind::Opencode, &mut o).is_err());
        assert_eq!(o, ["opencode"]);
    }

    #[test]
    fn a_node_package_is_readable_whole() {
        assert_eq!(
            installed_with(Path::new("/nowhere/pkg/node_modules/@a/b/cli.js")),
            Path::new("/nowhere/pkg")
        );
        assert_eq!(
            installed_with(Path::new("/nowhere/bin/tool")),
            Path::new("/nowhere/bin/tool")
        );
    }
}
