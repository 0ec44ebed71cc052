use super::*;
use crate::state::{StateSource, TransitionKind};

fn session(label: &str) -> Session {
    Session {
        id: format!("id-{label}"),
        repo: "/work/shop".into(),
        label: label.into(),
        branch: format!("orchestra/{label}"),
        base_commit: "0".repeat(40),
        base_branch: Some("main".into()),
        worktree: format!("/work/wt/{label}"),
        host: None,
        tmux_socket: Some("/tmp/tmux-test/default".into()),
        tmux_session: Some("work".into()),
        window: None,
        pane: None,
        agent_kind: crate::agent::AgentKind::parse("claude").unwrap(),
        agent_argv: vec!["claude".into()],
        agent_uuid: None,
        port: None,
        prompt: None,
        status: Status::Running,
        state: AgentState::Busy,
        retry_count: 0,
        created_at: 0,
        updated_at: 0,
        state_at: 0,
        state_source: StateSource::Hook,
        manifest: None,
        owns_tmux_session: false,
        sandbox: None,
        yolo: false,
    }
}

fn change(kind: TransitionKind, old: &str, new: &str) -> Transition {
    Transition {
        session: session("api"),
        kind,
        old: old.into(),
        new: new.into(),
        event: 42,
    }
}

fn fallback() -> Fallback {
    Fallback {
        command: Some("my-notify --urgent".into()),
        tmux_socket: Some("/tmp/tmux-test/default".into()),
    }
}

/// Every kind of transition told goes out through this module with its note and way;
/// every other is told to nobody.
#[test]
fn each_transition_that_needs_a_person_is_told_with_its_note_and_the_others_are_not() {
    use TransitionKind::{State, Status};
    let waiting = |asks: Option<&str>| Way::Waiting {
        asks: asks.map(str::to_string),
        session: "id-api".into(),
        event: 42,
    };
    let told = [
        (
            State,
            "waiting",
            Some("run: npm test"),
            "orchestra: api is waiting for you",
            "api wants to run: npm test (in shop)",
            waiting(Some("run: npm test")),
        ),
        (
            State,
            "waiting",
            None,
            "orchestra: api is waiting for you",
            "session api in shop is waiting for you",
            waiting(None),
        ),
        (
            State,
            "error",
            Some("run: npm test"),
            "orchestra: api stopped on an error",
            "session api in shop stopped on an error",
            Way::Plain,
        ),
        (
            State,
            "exited",
            None,
            "orchestra: api exited",
            "session api in shop exited",
            Way::Plain,
        ),
        (
            Status,
            "stalled",
            None,
            "orchestra: api has stalled (busy, no output)",
            "session api in shop has stalled (busy, no output)",
            Way::Plain,
        ),
        (
            Status,
            "done",
            None,
            "orchestra: api is done",
            "session api in shop is done",
            Way::Plain,
        ),
        (
            Status,
            "setup-failed",
            None,
            "orchestra: api could not finish its setup",
            "session api in shop could not finish its setup",
            Way::Plain,
        ),
    ];
    for (kind, new, ask, title, body, way) in told {
        transition(&change(kind, "busy", new), ask, None, &fallback());
        let sent = sent();
        assert_eq!(sent.len(), 1, "{kind:?} {new}: {sent:?}");
        assert_eq!(sent[0].note.title, title, "{kind:?} {new}");
        assert_eq!(sent[0].note.body, body, "{kind:?} {new}");
        assert_eq!(sent[0].way, way, "{kind:?} {new}");
        assert_eq!(sent[0].fallback.command, fallback().command);
        assert_eq!(sent[0].fallback.tmux_socket, fallback().tmux_socket);
    }
    for (kind, new) in [
        (State, "busy"),
        (State, "idle"),
        (State, "unknown"),
        (Status, "running"),
        (Status, "merged"),
        (Status, "blocked"),
        // A status named like a state that is told is not that state.
        (Status, "waiting"),
    ] {
        transition(&change(kind, "x", new), Some("run: ls"), None, &fallback());
        assert!(sent().is_empty(), "{kind:?} {new} told someone");
    }
}

/// A waiting agent's ask as a host may say it: bounded and inert before anyone sees it,
/// and the actions check the screen against that same phrase.
#[test]
fn an_ask_is_told_as_one_short_inert_line() {
    let hostile = format!("run: echo hi\n\u{1b}]0;x\u{7} {}", "y".repeat(500));
    transition(
        &change(TransitionKind::State, "busy", "waiting"),
        Some(&hostile),
        None,
        &fallback(),
    );
    let sent = sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let Way::Waiting {
        asks: Some(asks), ..
    } = &sent[0].way
    else {
        panic!("{:?}", sent[0].way);
    };
    assert!(asks.starts_with("run: echo hi"), "{asks:?}");
    assert!(!asks.chars().any(char::is_control), "{asks:?}");
    assert!(asks.chars().count() < 100, "{asks:?}");
    assert_eq!(sent[0].note.body, format!("api wants to {asks} (in shop)"));
}

#[test]
fn a_budget_crossing_is_told_once_with_what_it_cost() {
    let crossed = Crossed {
        session: session("api"),
        percent: 80,
        cost_usd: 1.5,
        budget: 1.8,
    };
    budget_crossed(&crossed, &fallback());
    let sent = sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].note.title, "orchestra: api at 80% of its budget");
    assert_eq!(
        sent[0].note.body,
        "session api in shop has cost $1.50 of $1.80 (@orchestra-budget); it keeps running"
    );
    assert_eq!(sent[0].way, Way::Plain);
    assert_eq!(sent[0].fallback.command, fallback().command);
}

#[test]
fn a_conflict_dependents_and_a_failed_setup_are_told_in_their_words() {
    let api = session("api");
    let auth = session("auth");
    let by_id: HashMap<&str, &Session> = [(api.id.as_str(), &api), (auth.id.as_str(), &auth)]
        .into_iter()
        .collect();
    let pair = Conflict {
        repo: "/work/shop".into(),
        session: api.id.clone(),
        other: auth.id.clone(),
        target: false,
        paths: vec!["src/login.rs".into()],
        uncommitted: true,
        since: 0,
    };
    conflict(&pair, &by_id, &fallback());
    started(&auth, &["report.json (from api)".to_string()]);
    stays_blocked(&auth, "auth waits for api: report.json, but api was killed");
    // No window: no badge to set, so no tmux server is asked for the notify command.
    setup_failed(&api, "the setup exited with 1").unwrap();
    let sent: Vec<(String, String)> = sent()
        .into_iter()
        .map(|s| (s.note.title, s.note.body))
        .collect();
    let told = |title: &str, body: &str| (title.to_string(), body.to_string());
    assert_eq!(
        sent,
        [
            told(
                "orchestra: api and auth conflict",
                "api and auth both change src/login.rs in shop (uncommitted work)"
            ),
            told("orchestra: auth started", "report.json (from api) ready"),
            told(
                "orchestra: auth stays blocked",
                "auth waits for api: report.json, but api was killed"
            ),
            told(
                "orchestra: api setup failed",
                "the setup exited with 1: `orchestra restart api` runs it again"
            ),
        ]
    );
}
