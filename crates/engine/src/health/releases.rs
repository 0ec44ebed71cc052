//! Which agent releases the screen rules were proven on, and the release each session's
//! agent runs: learnt once per session (`--version`, cached per program file) and
//! recorded in the session's folder, never on the status line's path.

use std::path::{Path, PathBuf};

use crate::agent::AgentKind;
use crate::state::{AgentState, Session};

/// The releases whose screens are captured under tests/fixtures/screens/<agent>/ and read
/// right there (a test checks this list is those folders).
pub const PROVEN: &[(&str, &[&str])] = &[
    ("aider", &["0.86.2"]),
    (
        "claude",
        &["2.0.77", "2.1.20", "2.1.100", "2.1.220", "2.1.332"],
    ),
    ("codex", &["0.110.0", "0.171.0"]),
    ("gemini", &["0.20.0", "0.61.0"]),
    ("opencode", &["1.18.33"]),
];

/// Whether the screen rules were proven on `release` of `agent`.
pub fn proven(agent: &str, release: &str) -> bool {
    PROVEN
        .iter()
        .any(|(a, releases)| *a == agent && releases.contains(&release))
}

fn recorded_path(home: &Path, id: &str) -> PathBuf {
    crate::paths::session_dir(home, id).join("agent-release")
}

/// The release session `id`'s agent was recorded to run, if it was.
pub fn recorded(home: &Path, id: &str) -> Option<String> {
    let text = std::fs::read_to_string(recorded_path(home, id)).ok()?;
    let text = text.trim();
    crate::agent::parse_version(text).map(|_| text.to_string())
}

/// The release `s`'s agent runs: as recorded, else asked once (`--version`, cached per
/// program file in the home) and recorded. `None` for agents without screen rules or a
/// release to tell, and for remote sessions (their program is on the host).
pub fn learn(home: &Path, s: &Session) -> Option<String> {
    if s.host.is_some() {
        return None;
    }
    learn_by(home, s, || {
        crate::agent::agent_version(&s.agent_argv, &home.join("agent-versions.json")).map(Some)
    })
}

/// The release remote session `s`'s agent runs: as recorded, else asked once on its host
/// through `ask` (which runs a command line there within the host's deadline and gives
/// its output, `None` when it could not run) and recorded. An answer that names no
/// release is recorded as it came and not asked again; a host that could not be asked is
/// asked on a later refresh.
pub fn learn_remote(
    home: &Path,
    s: &Session,
    ask: impl FnOnce(&str) -> Option<String>,
) -> Option<String> {
    // A local session's program is asked here, by `learn`.
    s.host.as_ref()?;
    let program = s.agent_argv.first()?;
    learn_by(home, s, || {
        ask(&shell_words::join([program.as_str(), "--version"]))
            .map(|answer| crate::agent::parse_version(&answer))
    })
}

/// The recording both ways share. `ask`: `None` when the program could not be asked (asked
/// again later), else the release its answer names, if any. An answer is recorded once and
/// final: one naming no release as `?`, which reads as no release.
fn learn_by(
    home: &Path,
    s: &Session,
    ask: impl FnOnce() -> Option<Option<(u32, u32, u32)>>,
) -> Option<String> {
    if !has_proven_list(s.agent_kind) {
        return None;
    }
    let path = recorded_path(home, &s.id);
    if path.exists() {
        return recorded(home, &s.id);
    }
    let release = ask()?.map(|(a, b, c)| format!("{a}.{b}.{c}"));
    let _ = crate::paths::write_private(&path, release.as_deref().unwrap_or("?"));
    release
}

fn has_proven_list(kind: AgentKind) -> bool {
    PROVEN.iter().any(|(a, _)| *a == kind.as_str())
}

/// What a person should know of `release` of `kind`, when the screen rules were not
/// proven on it: "claude 2.1.400: screen rules unproven, hooks exact".
pub fn unproven_note(kind: AgentKind, release: &str) -> Option<String> {
    if proven(kind.as_str(), release) {
        return None;
    }
    let exact = crate::agent::of(kind).hook_exact();
    let hooks = match exact {
        [] => "no hook tells its state: the screen alone".to_string(),
        [AgentState::Idle] => "only a turn's end is hook-exact".to_string(),
        _ => "hooks exact".to_string(),
    };
    Some(format!(
        "{} {release}: screen rules unproven, {hooks}",
        kind.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{StateSource, Status};

    fn remote_session(kind: AgentKind) -> Session {
        Session {
            id: "id-1".into(),
            repo: "/work/repo".into(),
            label: "s1".into(),
            branch: "orchestra/s1".into(),
            base_commit: "0".repeat(40),
            base_branch: Some("main".into()),
            worktree: "/work/wt/s1".into(),
            host: Some("box".into()),
            tmux_socket: None,
            tmux_session: None,
            window: None,
            pane: None,
            agent_kind: kind,
            agent_argv: vec![kind.as_str().into(), "--model".into()],
            agent_uuid: None,
            port: None,
            prompt: None,
            status: Status::Running,
            state: AgentState::Idle,
            retry_count: 0,
            created_at: 0,
            updated_at: 0,
            state_at: 0,
            state_source: StateSource::Screen,
            manifest: None,
            owns_tmux_session: false,
            sandbox: None,
            yolo: false,
        }
    }

    #[test]
    fn a_hosts_answer_is_recorded_once_and_a_host_not_reached_is_asked_again() {
        let home = tempfile::tempdir().unwrap();
        let s = remote_session(AgentKind::Claude);
        let asked = std::cell::RefCell::new(Vec::new());
        let ask = |answer: Option<&'static str>| {
            let asked = &asked;
            move |line: &str| {
                asked.borrow_mut().push(line.to_string());
                answer.map(str::to_string)
            }
        };
        // Not reached: nothing recorded, asked again on the next refresh.
        assert_eq!(learn_remote(home.path(), &s, ask(None)), None);
        assert_eq!(
            learn_remote(home.path(), &s, ask(Some("2.1.332 (Claude Code)"))).as_deref(),
            Some("2.1.332")
        );
        // Recorded: the host is not asked again, whatever it would say now.
        assert_eq!(
            learn_remote(home.path(), &s, ask(Some("9.9.9"))).as_deref(),
            Some("2.1.332")
        );
        assert_eq!(
            *asked.borrow(),
            vec!["claude --version", "claude --version"]
        );
        // A local session is never asked through a host.
        let local = Session {
            host: None,
            ..s.clone()
        };
        assert_eq!(learn_remote(home.path(), &local, ask(Some("1.0.0"))), None);
        assert_eq!(asked.borrow().len(), 2);
    }

    #[test]
    fn an_answer_naming_no_release_is_recorded_as_none_and_not_asked_again() {
        let home = tempfile::tempdir().unwrap();
        let s = remote_session(AgentKind::Codex);
        let mut asked = 0;
        for _ in 0..2 {
            let release = learn_remote(home.path(), &s, |_| {
                asked += 1;
                Some("command not found".into())
            });
            assert_eq!(release, None);
        }
        assert_eq!(asked, 1);
        // An agent with no proven list has no release to tell: not asked at all.
        let generic = Session {
            id: "id-2".into(),
            ..remote_session(AgentKind::Generic)
        };
        assert_eq!(
            learn_remote(home.path(), &generic, |_| panic!("asked")),
            None
        );
    }

    #[test]
    fn the_proven_releases_are_the_captured_ones() {
        let root =
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/screens");
        let mut captured: Vec<(String, Vec<String>)> = Vec::new();
        for agent in std::fs::read_dir(&root).unwrap() {
            let agent = agent.unwrap().path();
            if !agent.is_dir() {
                continue;
            }
            let mut releases: Vec<String> = std::fs::read_dir(&agent)
                .unwrap()
                .map(|r| r.unwrap().path())
                .filter(|r| r.is_dir())
                .filter_map(|r| Some(r.file_name()?.to_str()?.to_string()))
                .filter(|r| crate::agent::parse_version(r).is_some())
                .collect();
            releases.sort();
            let name = agent.file_name().unwrap().to_string_lossy().into_owned();
            captured.push((name, releases));
        }
        captured.sort();
        let mut listed: Vec<(String, Vec<String>)> = PROVEN
            .iter()
            .map(|(a, r)| {
                let mut r: Vec<String> = r.iter().map(std::string::ToString::to_string).collect();
                r.sort();
                (a.to_string(), r)
            })
            .collect();
        listed.sort();
        assert_eq!(
            listed, captured,
            "health::releases::PROVEN must name every captured release folder"
        );
    }

    #[test]
    fn an_unproven_release_says_what_still_holds() {
        assert_eq!(unproven_note(AgentKind::Claude, "2.1.332"), None);
        assert_eq!(
            unproven_note(AgentKind::Claude, "2.1.400").as_deref(),
            Some("claude 2.1.400: screen rules unproven, hooks exact")
        );
        assert_eq!(
            unproven_note(AgentKind::Codex, "0.200.0").as_deref(),
            Some("codex 0.200.0: screen rules unproven, only a turn's end is hook-exact")
        );
        assert_eq!(
            unproven_note(AgentKind::Aider, "0.90.0").as_deref(),
            Some("aider 0.90.0: screen rules unproven, no hook tells its state: the screen alone")
        );
    }
}
