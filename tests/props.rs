//! Generated hostile input for every parser that reads text orchestra does not control:
//! orchestra.toml, known_hosts and ~/.ssh/config, labels and titles, captured screens (and
//! agents.toml rules), menus on screen, the JSON Claude Code hooks send, what a host
//! prints before the remote refresh's probe marker, a git remote's address and a pull
//! request's draft as a person saved it. Each must give
//! a value or a clear error, never a panic. Pure code through the library crate; the hook
//! JSON also through the real binary, since `event --from-hook` reads it from stdin.
//!
//! proptest runs 256 cases per property unless `PROPTEST_CASES` says otherwise.

// Tests and benchmarks start real programs their own way; the rule that every child goes
// through src/process.rs (clippy.toml) is the product's.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};

use orchestra::agent::menu::{self, Answer, Menu};
use orchestra::agent::rules::{screen_text, strip_ansi, Rules};
use orchestra::command_error::CommandError;
use orchestra::hooks::state_for;
use orchestra::label;
use orchestra::manifest::{self, Manifest};
use orchestra::remote::config::{resolve, split_address, valid_host, valid_user};
use orchestra::remote::known_hosts::{self, Verdict};
use orchestra::state::{AgentState, Session, Status, Store};
use proptest::prelude::*;

/// Pieces that break naive quoting, tmux's parsers, shells, terminals and TOML.
const HOSTILE: &[&str] = &[
    "\"",
    "'",
    "`id`",
    ";",
    "\\;",
    "#(touch pwned)",
    "#{pane_id}",
    "##",
    "%%",
    "%1",
    "$(id)",
    "$HOME",
    "${HOME}",
    "\\",
    "\\\\",
    "\\u0000",
    "\n",
    "\r\n",
    "\t",
    "\0",
    "\u{1b}",
    "\u{1b}[201~",
    "\u{1b}]0;title\u{7}",
    "--",
    "-x",
    "~",
    "*",
    "?",
    "!",
    "..",
    "/",
    "@",
    ":",
    ".",
    "[",
    "]",
    "[[",
    "{",
    "}",
    "=",
    ",",
    "é",
    "❯",
    "日本",
    "\u{feff}",
    "\u{202e}",
    "\u{7f}",
];

fn hostile_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(HOSTILE).prop_map(str::to_string),
            3 => "(?s).{0,12}",
            2 => "[a-z0-9 -]{1,12}",
            1 => (0usize..3000).prop_map(|n| "x".repeat(n)),
        ],
        0..12,
    )
    .prop_map(|parts| parts.concat())
}

/// Bytes that may not be UTF-8, read the way orchestra reads a screen.
fn lossy_text() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<u8>(), 0..2000)
        .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![hostile_text(), lossy_text(), "(?s).{0,300}"]
}

/// A TOML string literal (escapes and all) for `s`.
fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

// ---------------------------------------------------------------------------------------
// orchestra.toml

const TOML_BITS: &[&str] = &[
    "[orchestrator]",
    "[hosts.h]",
    "[sessions.a]",
    "[sessions.b]",
    "[sessions.\"a b\"]",
    "[[dependencies]]",
    "[[sessions]]",
    "[sessions",
    "[",
    "]",
    "[[",
    "]]",
    "\n",
    "\n",
    "\n",
    " = ",
    "=",
    " ",
    "\"",
    "'",
    "\"\"\"",
    "'''",
    "#",
    ",",
    "{",
    "}",
    ".",
    "path",
    "host",
    "tmux",
    "role",
    "env",
    "agent_args",
    "claude_args",
    "blocked_by",
    "address",
    "identity",
    "connect_timeout",
    "command_timeout",
    "when",
    "then",
    "shared_fs",
    "sync_interval",
    "poll_interval",
    "capture_lines",
    "worktree_dir",
    "wrap_up_cmd",
    "agent",
    "\"a\"",
    "\"b\"",
    "\"h\"",
    "[\"a\"]",
    "[\"b\", \"a\"]",
    "\"a done\"",
    "\"b has out/x.json\"",
    "\"brief a hi\"",
    "\"brief a 'open\"",
    "0",
    "-1",
    "5",
    "18446744073709551615",
    "99999999999999999999",
    "\"99999999999999999999h\"",
    "\"9999999999999999999m\"",
    "\"999999999999999999m\"",
    "\"6h\"",
    "\"5s\"",
    "\"500ms\"",
    "\"user@host:22\"",
    "\"[::1]:99999\"",
    "true",
    "1e400",
    "nan",
    "inf",
    "1979-05-27T07:32:00Z",
    "\"\\u0000\"",
    "\"\\uD800\"",
    "\\",
];

fn tomlish_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            6 => prop::sample::select(TOML_BITS).prop_map(str::to_string),
            1 => hostile_text(),
            1 => "(?s).{0,8}",
        ],
        0..60,
    )
    .prop_map(|parts| parts.concat())
}

#[track_caller]
fn check_manifest_error(text: &str, e: &manifest::ManifestError) {
    let lines = text.split('\n').count();
    assert!(
        e.line >= 1 && e.line <= lines,
        "line {} of {lines}: {e}",
        e.line
    );
    assert!(e.column >= 1, "{e}");
    assert!(!e.message.trim().is_empty(), "an empty message: {e:?}");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("orchestra.toml:{}:{}: ", e.line, e.column)),
        "{shown}"
    );
    assert!(!shown.contains('\n'), "an error is one line: {shown:?}");
}

/// What `manifest::parse` promises of a manifest it accepts.
#[track_caller]
fn check_accepted(m: &Manifest) {
    assert!(orchestra::duration::parse_timeout("1s").is_some());
    assert!(m.orchestrator.poll_interval >= 1);
    for (name, s) in &m.sessions {
        label::validate(name).expect("a session name is a label");
        assert!(!s.path.trim().is_empty());
        if let Some(h) = &s.host {
            assert!(m.hosts.contains_key(h), "{h}");
        }
        for u in &s.blocked_by {
            assert!(m.sessions.contains_key(u), "{u}");
        }
        // tmux expands `#` in a session name and rewrites `$` and `\`; `:` and `.` are
        // target syntax: such a name could not be found again (or would run a command).
        if let Some(t) = &s.tmux {
            assert!(
                !t.is_empty() && !t.contains(['#', '$', '\\', ':', '.']),
                "tmux name {t:?} accepted"
            );
        }
    }
    for host in m.hosts.values() {
        assert!(split_address(&host.address).is_some(), "{}", host.address);
        // Never a panic on the way to a duration.
        let _ = (host.connect_timeout(), host.command_timeout());
    }
    let all: Vec<String> = m.sessions.keys().cloned().collect();
    let order = m.start_order(&all);
    assert_eq!(
        order.iter().cloned().collect::<BTreeSet<_>>(),
        all.iter().cloned().collect::<BTreeSet<_>>(),
        "start_order is a permutation"
    );
    for (i, name) in order.iter().enumerate() {
        for upstream in &m.sessions[name].blocked_by {
            let at = order.iter().position(|o| o == upstream).expect("present");
            assert!(at < i, "{upstream} starts before {name}: {order:?}");
        }
    }
}

/// One session of a generated manifest.
#[derive(Debug, Clone)]
struct GenSession {
    name: String,
    path: String,
    host: Option<usize>,
    tmux: Option<String>,
    role: Option<String>,
    env: Option<Vec<String>>,
    agent_args: Option<Vec<String>>,
    blocked_by: Vec<usize>,
}

#[derive(Debug, Clone)]
struct GenHost {
    name: String,
    address: String,
    identity: Option<String>,
    connect_timeout: Option<String>,
    command_timeout: Option<String>,
}

#[derive(Debug, Clone)]
struct GenManifest {
    shared_fs: String,
    sync_interval: String,
    poll_interval: i64,
    capture_lines: i64,
    worktree_dir: String,
    wrap_up_cmd: String,
    agent: String,
    hosts: Vec<GenHost>,
    sessions: Vec<GenSession>,
    /// (session index, Some(artifact) for "has", None for "done", the brief text)
    dependencies: Vec<(usize, Option<String>, String)>,
}

fn render(m: &GenManifest) -> String {
    let mut t = String::new();
    t += "[orchestrator]\n";
    t += &format!("shared_fs = {}\n", q(&m.shared_fs));
    t += &format!("sync_interval = {}\n", q(&m.sync_interval));
    t += &format!("poll_interval = {}\n", m.poll_interval);
    t += &format!("capture_lines = {}\n", m.capture_lines);
    t += &format!("worktree_dir = {}\n", q(&m.worktree_dir));
    t += &format!("wrap_up_cmd = {}\n", q(&m.wrap_up_cmd));
    t += &format!("agent = {}\n", q(&m.agent));
    for h in &m.hosts {
        t += &format!("\n[hosts.{}]\naddress = {}\n", q(&h.name), q(&h.address));
        for (key, value) in [
            ("identity", &h.identity),
            ("connect_timeout", &h.connect_timeout),
            ("command_timeout", &h.command_timeout),
        ] {
            if let Some(v) = value {
                t += &format!("{key} = {}\n", q(v));
            }
        }
    }
    for s in &m.sessions {
        t += &format!("\n[sessions.{}]\npath = {}\n", q(&s.name), q(&s.path));
        if let Some(h) = s.host {
            t += &format!("host = {}\n", q(&m.hosts[h].name));
        }
        for (key, value) in [("tmux", &s.tmux), ("role", &s.role)] {
            if let Some(v) = value {
                t += &format!("{key} = {}\n", q(v));
            }
        }
        for (key, words) in [("env", &s.env), ("agent_args", &s.agent_args)] {
            if let Some(w) = words {
                t += &format!("{key} = {}\n", q(&shell_words::join(w)));
            }
        }
        let upstreams: Vec<String> = s
            .blocked_by
            .iter()
            .map(|i| q(&m.sessions[*i].name))
            .collect();
        t += &format!("blocked_by = [{}]\n", upstreams.join(", "));
    }
    for (i, artifact, text) in &m.dependencies {
        let name = &m.sessions[*i].name;
        let when = match artifact {
            Some(a) => format!("{name} has {a}"),
            None => format!("{name} done"),
        };
        let then = shell_words::join(["brief", name.as_str(), text.as_str()]);
        t += &format!(
            "\n[[dependencies]]\nwhen = {}\nthen = {}\n",
            q(&when),
            q(&then)
        );
    }
    t
}

fn good_host() -> impl Strategy<Value = GenHost> {
    (
        "[a-z][a-z0-9_-]{0,8}",
        "([a-z_][a-z0-9_-]{0,8}@)?[a-z0-9][a-z0-9.-]{0,20}(:[1-9][0-9]{0,3})?",
        prop::option::of(hostile_text()),
        prop::option::of("[1-9][0-9]{0,4}(s|ms|m)?"),
        prop::option::of("[1-9][0-9]{0,4}(s|ms|m)?"),
    )
        .prop_map(
            |(name, address, identity, connect_timeout, command_timeout)| GenHost {
                name,
                address,
                identity,
                connect_timeout,
                command_timeout,
            },
        )
}

/// A manifest every field of which is valid, with hostile text wherever free text is
/// allowed (paths, roles, shell words, brief texts).
fn good_manifest() -> impl Strategy<Value = GenManifest> {
    let names = prop::collection::btree_set("[a-z0-9][a-z0-9-]{0,15}", 1..6)
        .prop_map(|s| s.into_iter().collect::<Vec<_>>());
    let hosts = prop::collection::vec(good_host(), 0..3).prop_map(|mut hs| {
        let mut seen = BTreeSet::new();
        hs.retain(|h| seen.insert(h.name.clone()));
        hs
    });
    (
        names,
        hosts,
        (
            hostile_text(),
            "[0-9]{1,6}[smh]?",
            1i64..100_000,
            0i64..100_000,
            hostile_text(),
            hostile_text(),
            hostile_text(),
        ),
    )
        .prop_flat_map(|(names, hosts, orchestrator)| {
            let n = names.len();
            let host_count = hosts.len();
            let session = (
                hostile_text().prop_filter("a path is not blank", |p| !p.trim().is_empty()),
                prop::option::of(0..host_count.max(1)),
                prop::option::of("[A-Za-z0-9_-]{1,20}"),
                prop::option::of(hostile_text()),
                prop::option::of(prop::collection::vec(hostile_text(), 0..4)),
                prop::option::of(prop::collection::vec(hostile_text(), 0..4)),
                prop::collection::vec(0..n, 0..3),
            );
            let sessions = prop::collection::vec(session, n..=n);
            let dependencies = prop::collection::vec(
                (
                    0..n,
                    prop::option::of("[a-z0-9_-]{1,10}(/[a-z0-9_-]{1,10}){0,2}(\\.[a-z]{1,4})?"),
                    hostile_text(),
                ),
                0..3,
            );
            (
                Just(names),
                Just(hosts),
                Just(orchestrator),
                sessions,
                dependencies,
            )
        })
        .prop_map(|(names, hosts, o, sessions, dependencies)| {
            let host_count = hosts.len();
            let sessions = names
                .iter()
                .zip(sessions)
                .enumerate()
                .map(
                    |(i, (name, (path, host, tmux, role, env, agent_args, blocked_by)))| {
                        GenSession {
                            name: name.clone(),
                            path,
                            host: host.filter(|_| host_count > 0),
                            tmux,
                            role,
                            env,
                            agent_args,
                            // Only earlier sessions: no cycle.
                            blocked_by: blocked_by
                                .into_iter()
                                .filter(|u| *u < i)
                                .collect::<BTreeSet<_>>()
                                .into_iter()
                                .collect(),
                        }
                    },
                )
                .collect();
            GenManifest {
                shared_fs: o.0,
                sync_interval: o.1,
                poll_interval: o.2,
                capture_lines: o.3,
                worktree_dir: o.4,
                wrap_up_cmd: o.5,
                agent: o.6,
                hosts,
                sessions,
                dependencies,
            }
        })
}

/// The same structure with anything in any field: names, addresses, durations, numbers.
fn hostile_manifest() -> impl Strategy<Value = GenManifest> {
    (
        good_manifest(),
        prop::collection::vec(any_text(), 12),
        prop::collection::vec(any::<i64>(), 2),
        prop::collection::vec(any::<bool>(), 12),
    )
        .prop_map(|(mut m, texts, numbers, pick)| {
            let mut texts = texts.into_iter();
            let mut next = |keep: bool, old: String| {
                let t = texts.next().unwrap_or_default();
                if keep {
                    old
                } else {
                    t
                }
            };
            m.sync_interval = next(pick[0], m.sync_interval.clone());
            if pick[1] {
                m.poll_interval = numbers[0];
            }
            if pick[2] {
                m.capture_lines = numbers[1];
            }
            if let Some(h) = m.hosts.first_mut() {
                h.address = next(pick[3], h.address.clone());
                h.connect_timeout =
                    Some(next(pick[4], h.connect_timeout.clone().unwrap_or_default()));
                h.command_timeout =
                    Some(next(pick[5], h.command_timeout.clone().unwrap_or_default()));
                h.name = next(pick[6], h.name.clone());
            }
            if let Some(s) = m.sessions.last_mut() {
                s.name = next(pick[7], s.name.clone());
                s.path = next(pick[8], s.path.clone());
                s.tmux = Some(next(pick[9], s.tmux.clone().unwrap_or_default()));
            }
            if let Some(d) = m.dependencies.first_mut() {
                d.1 = Some(next(pick[10], d.1.clone().unwrap_or_default()));
            }
            m
        })
}

proptest! {
    #[test]
    fn manifest_any_text_is_a_manifest_or_one_located_error(text in any_text()) {
        match manifest::parse(&text, "orchestra.toml") {
            Ok(m) => check_accepted(&m),
            Err(e) => check_manifest_error(&text, &e),
        }
    }

    #[test]
    fn manifest_tomlish_text_is_a_manifest_or_one_located_error(text in tomlish_text()) {
        match manifest::parse(&text, "orchestra.toml") {
            Ok(m) => check_accepted(&m),
            Err(e) => check_manifest_error(&text, &e),
        }
    }

    #[test]
    fn manifest_valid_structure_with_hostile_text_parses_exactly(g in good_manifest()) {
        let text = render(&g);
        let m = manifest::parse(&text, "orchestra.toml")
            .unwrap_or_else(|e| panic!("{e}\n--- manifest:\n{text}"));
        check_accepted(&m);
        prop_assert_eq!(&m.orchestrator.worktree_dir, &g.worktree_dir);
        prop_assert_eq!(&m.orchestrator.wrap_up_cmd, &g.wrap_up_cmd);
        prop_assert_eq!(m.sessions.len(), g.sessions.len());
        for s in &g.sessions {
            let got = &m.sessions[&s.name];
            prop_assert_eq!(&got.path, &s.path);
            prop_assert_eq!(&got.role, &s.role);
            prop_assert_eq!(&got.tmux, &s.tmux);
            // Shell words survive the round trip through the file.
            if let Some(words) = &s.agent_args {
                let split = shell_words::split(got.agent_args.as_deref().unwrap_or_default());
                prop_assert_eq!(split.as_ref().ok(), Some(words));
            }
        }
        for h in &g.hosts {
            prop_assert_eq!(&m.hosts[&h.name].identity, &h.identity);
        }
        prop_assert_eq!(m.dependencies.len(), g.dependencies.len());
    }

    #[test]
    fn manifest_hostile_values_give_a_manifest_or_one_located_error(g in hostile_manifest()) {
        let text = render(&g);
        match manifest::parse(&text, "orchestra.toml") {
            Ok(m) => check_accepted(&m),
            Err(e) => check_manifest_error(&text, &e),
        }
    }

    #[test]
    fn manifest_a_hostile_tmux_name_alone_is_refused_or_harmless(
        mut g in good_manifest(),
        name in prop_oneof![hostile_text(), "[ -~]{1,20}"],
    ) {
        if let Some(s) = g.sessions.first_mut() {
            s.tmux = Some(name);
        }
        let text = render(&g);
        match manifest::parse(&text, "orchestra.toml") {
            Ok(m) => check_accepted(&m),
            Err(e) => check_manifest_error(&text, &e),
        }
    }

    #[test]
    fn durations_never_overflow(text in prop_oneof![
        "[0-9]{1,25}(s|ms|m|h)?",
        " *[0-9]{0,25} *(s|ms|m|h|d)? *",
        any_text(),
    ]) {
        if let Some(d) = orchestra::duration::parse_timeout(&text) {
            prop_assert!(d.as_nanos() > 0);
        }
        let _ = orchestra::duration::parse_secs(&text);
    }
}

// ---------------------------------------------------------------------------------------
// known_hosts and ~/.ssh/config

fn key_blob() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec!["ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256"]),
        prop::collection::vec(any::<u8>(), 1..64),
    )
        .prop_map(|(kind, body)| {
            let mut blob = (kind.len() as u32).to_be_bytes().to_vec();
            blob.extend(kind.as_bytes());
            blob.extend(body);
            blob
        })
}

fn known_hosts_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        any_text(),
        (
            prop::option::of(prop::sample::select(vec![
                "@revoked",
                "@cert-authority",
                "@x"
            ])),
            prop_oneof![
                "[a-z0-9.*?!,\\[\\]:-]{0,20}",
                "\\|1\\|[A-Za-z0-9+/=|]{0,40}",
                hostile_text(),
            ],
            prop::sample::select(vec!["ssh-ed25519", "ssh-rsa", "", "x"]),
            "[A-Za-z0-9+/=]{0,60}",
        )
            .prop_map(|(m, names, kind, key)| format!(
                "{} {names} {kind} {key}",
                m.unwrap_or_default()
            )),
    ];
    prop::collection::vec(line, 0..8).prop_map(|l| l.join("\n"))
}

proptest! {
    #[test]
    fn known_hosts_any_text_gives_a_verdict(
        text in known_hosts_text(),
        host in prop_oneof!["[a-z0-9.-]{1,20}", hostile_text()],
        port in any::<u16>(),
        blob in prop_oneof![key_blob(), prop::collection::vec(any::<u8>(), 0..80)],
    ) {
        let lines = text.lines().count();
        match known_hosts::check(&text, &host, port, &blob) {
            Verdict::Changed { line } | Verdict::Revoked { line } => {
                prop_assert!(line >= 1 && line <= lines, "line {line} of {lines}");
            }
            Verdict::Known | Verdict::Unknown { .. } => {}
        }
        let _ = known_hosts::known_types(&text, &host, port);
        let _ = known_hosts::key_type(&blob);
        prop_assert!(known_hosts::fingerprint(&blob).starts_with("SHA256:"));
    }

    #[test]
    fn known_hosts_a_trusted_key_is_known_among_any_other_lines(
        junk in known_hosts_text(),
        host in "[a-z0-9][a-z0-9.-]{0,20}",
        port in any::<u16>(),
        blob in key_blob(),
        other in prop::collection::vec(any::<u8>(), 1..64),
    ) {
        let line = known_hosts::line_for(&host, port, &blob).expect("a typed blob has a line");
        let key = line.split_whitespace().nth(2).expect("three fields").to_string();
        prop_assume!(!junk.contains(&key));
        let text = format!("{junk}\n{line}\n");
        prop_assert_eq!(known_hosts::check(&text, &host, port, &blob), Verdict::Known);
        // Another key of the same type for the same name: a change, on the trusted line.
        let mut changed = blob.clone();
        changed.extend(&other);
        let alone = format!("{line}\n");
        prop_assert_eq!(
            known_hosts::check(&alone, &host, port, &changed),
            Verdict::Changed { line: 1 }
        );
        let revoked = format!("@revoked {line}\n");
        prop_assert_eq!(
            known_hosts::check(&revoked, &host, port, &blob),
            Verdict::Revoked { line: 1 }
        );
    }

    #[test]
    fn ssh_addresses_and_config_never_panic(
        address in prop_oneof![
            "([a-z_-]{0,8}@)?(\\[[0-9a-f:]{0,10}\\]|[a-z0-9.:-]{0,20})(:[0-9]{0,7})?",
            any_text(),
        ],
        config in prop_oneof![
            prop::collection::vec(
                (
                    prop::sample::select(vec!["Host", "HostName", "User", "Port", "IdentityFile", "Match", "host", "#"]),
                    prop::sample::select(vec![" ", "=", " = ", "\t"]),
                    prop_oneof!["[a-z0-9*?! .%~/\"-]{0,20}", hostile_text()],
                ).prop_map(|(k, sep, v)| format!("{k}{sep}{v}")),
                0..10,
            ).prop_map(|l| l.join("\n")),
            any_text(),
        ],
    ) {
        let home = std::path::Path::new("/home/me");
        if let Some((user, host, port)) = split_address(&address) {
            prop_assert!(!host.is_empty() && !host.starts_with('-'));
            prop_assert!(user.is_none_or(|u| !u.is_empty() && !u.starts_with('-')));
            prop_assert!(port != Some(0));
            prop_assert!(resolve(&address, "", home, "me").is_some(), "a valid address resolves");
            // Whatever the config says, what comes out is held to the address's rules.
            if let Some(t) = resolve(&address, &config, home, "me") {
                prop_assert!(valid_user(&t.user) && valid_host(&t.hostname), "{:?}", t);
            }
        } else {
            prop_assert!(resolve(&address, &config, home, "me").is_none());
        }
    }
}

// ---------------------------------------------------------------------------------------
// labels and slugs

fn is_label(s: &str) -> bool {
    (1..=63).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
}

proptest! {
    #[test]
    fn label_validation_agrees_with_its_rule(text in prop_oneof![
        any_text(),
        "[a-z0-9-]{0,70}",
        "[a-z0-9][a-z0-9-]{0,62}\n?",
    ]) {
        match label::validate(&text) {
            Ok(()) => prop_assert!(is_label(&text), "{text:?} accepted"),
            Err(e) => {
                prop_assert!(!is_label(&text), "{text:?} refused");
                prop_assert!(!e.to_string().contains('\n'), "one line: {e}");
            }
        }
    }

    #[test]
    fn a_slug_is_a_label_of_at_most_40_characters(title in any_text()) {
        match label::slug(&title) {
            Ok(slug) => {
                prop_assert!(is_label(&slug), "{slug:?}");
                prop_assert!(slug.len() <= label::SLUG_MAX, "{slug:?}");
                prop_assert_eq!(label::slug(&slug).ok(), Some(slug.clone()), "a slug is its own slug");
            }
            Err(e) => {
                let ascii = deunicode_free(&title);
                prop_assert!(!ascii, "{title:?} has letters or digits: {e}");
                prop_assert!(!e.to_string().contains('\n'), "one line: {e}");
            }
        }
    }

    #[test]
    fn first_free_gives_an_untaken_label(
        title in any_text(),
        taken in prop::collection::btree_set(0u32..12, 0..12),
    ) {
        let Ok(base) = label::slug(&title) else { return Ok(()) };
        // The base and some of its suffixed forms are taken.
        let mut used: BTreeSet<String> = BTreeSet::new();
        for n in &taken {
            let name = if *n < 2 {
                base.clone()
            } else {
                let suffix = format!("-{n}");
                let keep = base.len().min(label::SLUG_MAX - suffix.len());
                format!("{}{suffix}", base[..keep].trim_end_matches('-'))
            };
            used.insert(name);
        }
        let free = label::first_free(&base, |c| used.contains(c));
        prop_assert!(!used.contains(&free), "{free} is taken");
        prop_assert!(is_label(&free), "{free:?}");
        prop_assert!(free.len() <= label::SLUG_MAX, "{free:?}");
    }
}

/// Whether `title` has an ASCII letter or digit once transliterated (as slug does it).
fn deunicode_free(title: &str) -> bool {
    // slug's own transliteration is the reference: a title with an ASCII letter or digit
    // always has a slug, whatever else it holds.
    title.chars().any(|c| c.is_ascii_alphanumeric())
}

// ---------------------------------------------------------------------------------------
// screens, rules and menus

const KINDS: &[&str] = &["claude", "codex", "gemini", "aider", "generic", "nope"];

/// Screens built from the pieces real screens have, mixed with anything.
fn screen() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        3 => any_text(),
        2 => prop::sample::select(vec![
            "❯", "> ", "│ > │", "╭──────╮", "╰──────╯", "esc to interrupt", "Esc to cancel",
            "Enter to confirm", "❯ 1. Yes", "  2. No", "Do you want to proceed?",
            "✻ Thinking… (3s · esc to interrupt)", "API Error: 400", "  ⏵⏵ accept edits on",
            "\u{1b}[31mred\u{1b}[0m", "\u{1b}]0;t\u{7}", "\u{1b}[", "\u{1b}]", "    ",
        ]).prop_map(str::to_string),
        1 => (1usize..5000).prop_map(|n| "=".repeat(n)),
    ];
    prop::collection::vec(line, 0..40).prop_map(|l| l.join("\n"))
}

/// An approval each kind shows, asking to run `command`: the agent's text is anything.
fn approval(kind: &str, command: &str) -> String {
    match kind {
        "claude" => format!(
            "──────────\n Bash command\n   {command}\n   Run a scripted command\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n Esc to cancel"
        ),
        "codex" => format!(
            "  Would you like to run the following command?\n  Reason: x\n  $ {command}\n› 1. Yes, proceed (y)\n  Press enter to confirm or esc to cancel"
        ),
        "gemini" => format!(
            "╭──────╮\n│ ? Shell  {command}   │\n│ Allow execution of [Shell]? │\n│ ● 1. Allow once │\n╰──────╯"
        ),
        _ => format!("{command}\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]: "),
    }
}

proptest! {
    /// Whatever an approval on screen quotes, a notification gets one short line of it:
    /// no control character, no line break, cut as the hook's text is.
    #[test]
    fn what_an_approval_asks_is_one_short_line(
        command in prop_oneof![any_text(), (1usize..100_000).prop_map(|n| "y".repeat(n))],
        kind in prop::sample::select(KINDS),
        wrapped in any::<bool>(),
    ) {
        let screen = approval(kind, &command);
        let screen = if wrapped { format!("{}\n{screen}", "z".repeat(70_000)) } else { screen };
        let asked = Rules::built_in().asked(kind, &screen).expect("built-in rules compile");
        if let Some(phrase) = asked.and_then(|a| a.phrase()) {
            prop_assert!(!phrase.chars().any(char::is_control), "{:?}", phrase);
            prop_assert!(
                phrase.chars().count() <= "write ".len() + orchestra::notify::ASK_CHARS,
                "{} chars", phrase.chars().count()
            );
            prop_assert_eq!(phrase.trim(), phrase.as_str());
        }
    }

    /// A plain command on an approval is named exactly, its spaces as written.
    #[test]
    fn a_plain_command_on_an_approval_is_named_as_shown(
        command in "[a-z0-9][a-z0-9 ;&<>'=./-]{0,60}[a-z0-9]",
        kind in prop::sample::select(&["claude", "codex", "gemini", "aider"][..]),
    ) {
        let asked = Rules::built_in().asked(kind, &approval(kind, &command)).expect("compiles");
        let asked = asked.expect("the command is read");
        let told = format!("run: {command}");
        let longer = format!("{told} && rm -rf ~");
        prop_assert_eq!(asked.phrase(), Some(told.clone()));
        // What a person was told of it names it, and names nothing else.
        prop_assert!(asked.is_named_by(&told));
        prop_assert!(!asked.is_named_by(&longer));
    }
}

proptest! {
    #[test]
    fn classify_any_screen_gives_a_verdict(
        screen in prop_oneof![screen(), lossy_text()],
        kind in prop::sample::select(KINDS),
    ) {
        let rules = Rules::built_in();
        let verdict = rules.classify(kind, &screen).expect("built-in rules compile");
        // Blank lines at the bottom (or trailing spaces) say nothing new.
        let padded = format!("{screen}\n   \n\n");
        prop_assert_eq!(rules.classify(kind, &padded).expect("compiles"), verdict.clone());
        if kind == "nope" {
            prop_assert_eq!(verdict.state, AgentState::Unknown);
        }
    }

    #[test]
    fn classify_raw_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..8000),
        max in any::<usize>(),
        kind in prop::sample::select(KINDS),
    ) {
        let text = screen_text(&bytes, max);
        prop_assert!(!text.contains('\u{1b}'), "escapes are removed");
        Rules::built_in().classify(kind, &text).expect("built-in rules compile");
    }

    #[test]
    fn strip_ansi_removes_every_escape_and_keeps_plain_text(text in any_text()) {
        let stripped = strip_ansi(&text);
        prop_assert!(!stripped.contains('\u{1b}'), "an escape is left: {:?}", stripped);
        let again = strip_ansi(&stripped).into_owned();
        prop_assert_eq!(again.as_str(), stripped.as_ref());
        if !text.contains('\u{1b}') {
            prop_assert_eq!(stripped.as_ref(), text.as_str());
        }
    }

    #[test]
    fn agents_toml_of_anything_loads_or_says_why(
        text in prop_oneof![
            any_text(),
            tomlish_text(),
            (
                prop::sample::select(vec!["claude", "generic", "mine", "\"a b\""]),
                prop::option::of(prop_oneof!["[a-z|()*+?^$\\\\\\[\\]{}.-]{0,12}", hostile_text()]),
                prop::sample::select(vec!["busy", "waiting", "idle", "error", "exited", "unknown", "x"]),
                prop_oneof!["[a-z|()*+?^$\\\\\\[\\]{}.-]{0,12}", hostile_text()],
                prop_oneof![Just("".to_string()), (any::<i64>()).prop_map(|n| format!("tail_lines = {n}\n"))],
                any::<bool>(),
            ).prop_map(|(kind, marker, state, pattern, tail, replace)| {
                let mut t = format!("[{kind}]\nreplace = {replace}\n");
                if let Some(m) = marker {
                    t += &format!("turn_marker = {}\n", q(&m));
                }
                t += &format!("[[{kind}.rules]]\nname = \"r\"\nstate = {}\nlast_line = {}\ntail = {}\nabove_input = {}\nlast_turn = {}\n{tail}",
                    q(state), q(&pattern), q(&pattern), q(&pattern), q(&pattern));
                t
            }),
        ],
        screen in screen(),
    ) {
        let home = tempfile::tempdir().expect("temp dir");
        std::fs::write(home.path().join("agents.toml"), &text).expect("write");
        match Rules::load(home.path()) {
            Ok(rules) => {
                let checked = rules.check_all();
                for kind in ["claude", "generic", "mine", "a b"] {
                    match rules.classify(kind, &screen) {
                        Ok(_) => {}
                        Err(e) => prop_assert!(checked.is_err(), "check_all passed but {kind}: {e}"),
                    }
                }
                if let Err(e) = checked {
                    prop_assert!(!e.to_string().is_empty());
                    prop_assert!(!e.to_string().contains('\n'), "one line: {}", e);
                }
            }
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                prop_assert!(!e.to_string().contains('\n'), "one line: {}", e);
            }
        }
    }

    #[test]
    fn any_screen_is_a_menu_or_none(screen in prop_oneof![screen(), lossy_text()]) {
        if let Some(m) = menu::parse(&screen) {
            check_menu(&m);
        }
    }

    #[test]
    fn a_drawn_menu_reads_back_as_drawn(
        above in prop::collection::vec("[A-Za-z][A-Za-z ,?]{0,40}", 0..6),
        entries in prop::collection::vec(
            "[A-Za-z0-9,;#$%'\"()!?-]([A-Za-z0-9 ,;#$%'\"()!?-]{0,28}[A-Za-z0-9,;#$%'\"()!?-])?",
            2..9,
        ),
        cursor in any::<prop::sample::Index>(),
        numbered in any::<bool>(),
        footer in prop::sample::select(vec!["Esc to cancel", "Enter to confirm · Esc to cancel", "  enter to select"]),
    ) {
        let cursor = cursor.index(entries.len());
        let mut lines: Vec<String> = above.clone();
        for (i, label) in entries.iter().enumerate() {
            lines.push(match (numbered, i == cursor) {
                (true, true) => format!("❯ {}. {label}", i + 1),
                (true, false) => format!("  {}. {label}", i + 1),
                (false, true) => format!("  ❯ {label}"),
                (false, false) => format!("    {label}"),
            });
        }
        lines.push(String::new());
        lines.push(footer.to_string());
        let screen = lines.join("\n");
        let m = menu::parse(&screen).unwrap_or_else(|| panic!("no menu in:\n{screen}"));
        check_menu(&m);
        prop_assert_eq!(m, Menu { entries, cursor, across: false });
    }
}

#[track_caller]
fn check_menu(m: &Menu) {
    assert!(m.entries.len() >= 2, "{m:?}");
    assert!(m.cursor < m.entries.len(), "{m:?}");
    for answer in [Answer::Yes, Answer::Always, Answer::No] {
        if let Some(i) = m.choose(answer) {
            assert!(i < m.entries.len(), "{answer:?} → {i} in {m:?}");
        }
    }
    let _ = m.is_trust_dialog();
}

proptest! {
    // Each case reads a screen of about a megabyte: a few cases say what is needed.
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn classify_a_megabyte_line_quickly(
        head in prop::collection::vec(any::<u8>(), 0..2000),
        fill in any::<u8>(),
        tail in prop::collection::vec(any::<u8>(), 0..200),
        kind in prop::sample::select(KINDS),
    ) {
        let mut raw = head;
        raw.extend(std::iter::repeat_n(fill, 1 << 20));
        raw.extend(b"\n\xff\xfe\x1b[0m\xe2\x9d\n");
        raw.extend(tail);
        let started = std::time::Instant::now();
        let text = screen_text(&raw, usize::MAX);
        prop_assert!(!text.contains('\u{1b}'), "escapes are removed");
        Rules::built_in().classify(kind, &text).expect("built-in rules compile");
        prop_assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
    }
}

// ---------------------------------------------------------------------------------------
// hook JSON

const EVENTS: &[&str] = &[
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Notification",
    "Stop",
    "SubagentStop",
    "SessionStart",
    "StopFailure",
    "SessionEnd",
    "pane-died",
    "pane-exited",
    "busy",
    "waiting",
    "idle",
    "error",
    "exited",
];

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any_text().prop_map(Value::String),
        prop::sample::select(vec![
            "permission_prompt",
            "idle_prompt",
            "elicitation_dialog",
            "SubagentStop",
            "Stop",
            "Claude needs your permission to use Bash",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    prop::sample::select(vec![
                        "notification_type",
                        "message",
                        "agent_id",
                        "hook_event_name",
                        "session_id",
                        "tool_name",
                    ])
                    .prop_map(str::to_string),
                    any_text(),
                ],
                inner,
                0..8,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// What Claude could put on a hook's stdin: JSON (maybe cut short, maybe nested deeper
/// than any parser allows), or any bytes at all.
fn hook_stdin() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        json_value().prop_map(|v| serde_json::to_vec(&v).expect("serializable")),
        (json_value(), any::<prop::sample::Index>()).prop_map(|(v, cut)| {
            let bytes = serde_json::to_vec(&v).expect("serializable");
            let at = cut.index(bytes.len() + 1);
            bytes[..at].to_vec()
        }),
        (1usize..2000)
            .prop_map(|depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()),
        prop::collection::vec(any::<u8>(), 0..600),
    ]
}

/// The JSON `event --from-hook` makes of `stdin` (it reads at most 1 MiB of UTF-8).
fn as_hook_reads_it(stdin: &[u8]) -> serde_json::Value {
    std::str::from_utf8(&stdin[..stdin.len().min(1 << 20)])
        .ok()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(serde_json::Value::Null)
}

fn a_session(id: &str) -> Session {
    let now = orchestra::state::now();
    Session {
        id: id.to_string(),
        repo: "/nonexistent/repo".into(),
        label: "hook-target".into(),
        branch: "session/hook-target".into(),
        base_commit: String::new(),
        base_branch: None,
        worktree: "/nonexistent/repo.worktrees/hook-target".into(),
        host: None,
        tmux_socket: None,
        tmux_session: None,
        window: None,
        pane: None,
        agent_kind: orchestra::agent::AgentKind::Claude,
        agent_argv: vec!["claude".into()],
        agent_uuid: None,
        port: None,
        prompt: None,
        status: Status::Running,
        state: AgentState::Unknown,
        retry_count: 0,
        created_at: now,
        updated_at: now,
        state_at: 0,
        state_source: Default::default(),
        manifest: None,
        owns_tmux_session: false,
        sandbox: None,
        yolo: false,
    }
}

proptest! {
    #[test]
    fn hook_json_of_any_shape_gives_a_state_or_nothing(
        event in prop_oneof![prop::sample::select(EVENTS).prop_map(str::to_string), any_text()],
        hook in json_value(),
    ) {
        match state_for(&event, &hook) {
            Ok(state) => {
                prop_assert!(state != Some(AgentState::Unknown), "{event}: unknown is not a word a hook says");
                prop_assert_eq!(state_for(&event, &serde_json::Value::Null).is_ok(), true);
            }
            Err(e) => {
                prop_assert!(!EVENTS.contains(&event.as_str()), "{event} is known: {e}");
                prop_assert_eq!(CommandError::from(&e).status(), 2);
                prop_assert!(!e.to_string().contains('\n'), "one line: {e}");
            }
        }
    }
}

proptest! {
    // Each case runs the binary (a few milliseconds).
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn event_from_hook_takes_any_stdin_quietly(
        event in prop::sample::select(EVENTS),
        stdin in hook_stdin(),
        known_session in any::<bool>(),
    ) {
        let home = tempfile::tempdir().expect("temp dir");
        let id = "0123456789ab";
        let store = Store::open(home.path()).expect("store");
        if known_session {
            store.insert_session(&a_session(id)).expect("insert");
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_orchestra"))
            .args(["event", "--from-hook", event, "--session", id])
            .env("ORCHESTRA_HOME", home.path())
            .env_remove("ORCHESTRA_SESSION")
            .env_remove("TMUX")
            .env("ORCHESTRA_TMUX_SOCKET", home.path().join("no-tmux-here"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run orchestra");
        // The hook may stop reading early (1 MiB); a broken pipe is then fine.
        let _ = child.stdin.take().expect("stdin").write_all(&stdin);
        let out = child.wait_with_output().expect("wait");
        prop_assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        prop_assert!(out.stdout.is_empty(), "stdout: {:?}", String::from_utf8_lossy(&out.stdout));
        let expected = state_for(event, &as_hook_reads_it(&stdin)).expect("a known event");
        let row = store.session_by_id(id).expect("read");
        match (known_session, row) {
            (false, row) => prop_assert!(row.is_none()),
            (true, Some(row)) => prop_assert_eq!(row.state, expected.unwrap_or(AgentState::Unknown)),
            (true, None) => prop_assert!(false, "the row went away"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// What the properties above found, kept as plain cases.

#[test]
fn found_by_the_properties() {
    // A footer alone: the menu parser subtracted from an empty entry count.
    assert_eq!(menu::parse("Esc to cancel"), None);
    assert_eq!(menu::parse("hello\n  Enter to confirm"), None);
    // Minutes and hours past u64/i64 seconds overflowed instead of being refused.
    assert_eq!(
        orchestra::duration::parse_timeout("400000000000000000m"),
        None
    );
    assert_eq!(orchestra::duration::parse_secs("200000000000000000m"), None);
    assert_eq!(
        orchestra::duration::parse_secs("9000000000000000000h"),
        None
    );
    let e = manifest::parse(
        "[orchestrator]\ncommand_timeout = \"200000000000000000m\"\n",
        "orchestra.toml",
    )
    .expect_err("an unknown key");
    check_manifest_error(
        "[orchestrator]\ncommand_timeout = \"200000000000000000m\"\n",
        &e,
    );
    let text = "[hosts.h]\naddress = \"h\"\ncommand_timeout = \"400000000000000000m\"\n";
    let e = manifest::parse(text, "orchestra.toml").expect_err("an overflowing timeout");
    check_manifest_error(text, &e);
    let text = "[orchestrator]\nsync_interval = \"200000000000000000m\"\n";
    let e = manifest::parse(text, "orchestra.toml").expect_err("an overflowing interval");
    check_manifest_error(text, &e);
    // toml's messages may be empty or span lines; an error is one clear line.
    for text in ["\r ", "[orchestrator][orchestrator]", "[a\n"] {
        let e = manifest::parse(text, "orchestra.toml").expect_err(text);
        check_manifest_error(text, &e);
    }
    // So are agents.toml's, for its TOML and for its patterns (regex errors span lines).
    let home = tempfile::tempdir().expect("temp dir");
    std::fs::write(home.path().join("agents.toml"), "\n%%").expect("write");
    let e = Rules::load(home.path()).expect_err("not TOML").to_string();
    assert!(e.ends_with("agents.toml:2:1: invalid key"), "{e}");
    std::fs::write(
        home.path().join("agents.toml"),
        "[claude]\n[[claude.rules]]\nname = \"bad\"\nstate = \"idle\"\ntail = '(unclosed'\n",
    )
    .expect("write");
    let rules = Rules::load(home.path()).expect("patterns compile on use");
    let e = rules.check_all().expect_err("a bad pattern").to_string();
    assert!(!e.contains('\n') && e.contains("unclosed group"), "{e}");
}

proptest! {
    /// A task id from anywhere (the command line, a URL, Notion's answers) is a dashed
    /// 32-hex id or nothing, and reads back as itself.
    #[test]
    fn a_notion_id_is_32_hex_digits_or_refused(text in prop_oneof![
        any_text(),
        "[0-9a-fA-F]{32}",
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "https://www\\.notion\\.so/[A-Za-z-]{0,20}-[0-9a-f]{32}(\\?[a-z=]{0,8})?",
    ]) {
        if let Some(id) = orchestra::tasks::notion_id(&text) {
            prop_assert_eq!(id.len(), 36);
            prop_assert!(id.chars().all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{id}");
            prop_assert_eq!(orchestra::tasks::notion_id(&id), Some(id.clone()));
            let hex: String = text.chars().filter(char::is_ascii_hexdigit).collect::<String>().to_ascii_lowercase();
            prop_assert!(hex.contains(&id.replace('-', "")), "{text:?} → {id}");
        }
    }

    /// Whatever the tracker's titles hold, the orchestrator's first message lists each
    /// task on a line of its own and stays short enough for a command line.
    #[test]
    fn the_first_message_keeps_one_line_per_task(titles in prop::collection::vec(hostile_text(), 0..60)) {
        let tasks: Vec<orchestra::tasks::Task> = titles
            .iter()
            .enumerate()
            .map(|(n, title)| orchestra::tasks::Task {
                id: format!("id-{n}"),
                title: title.clone(),
                status: String::new(),
                url: String::new(),
            })
            .collect();
        let text = orchestra::tasks::orchestrator_message("app", &tasks);
        prop_assert!(text.len() < 6 * 1024, "{} bytes", text.len());
        for line in text.lines().filter(|l| l.starts_with("- ")) {
            prop_assert!(line.ends_with(')'), "{line:?}");
        }
        prop_assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
    }
}

// ---------------------------------------------------------------------------------------
// config.yaml (`orchestra import`)

/// A YAML double-quoted scalar for `s`: JSON's escapes are a subset of YAML's.
fn yaml_quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string is JSON")
}

fn check_import_error(e: &manifest::ManifestError) -> Result<(), TestCaseError> {
    prop_assert!(e.line >= 1 && e.column >= 1, "{e}");
    prop_assert!(!e.to_string().contains('\n'), "one line: {e:?}");
    Ok(())
}

proptest! {
    #[test]
    fn import_any_text_is_a_loadable_manifest_or_one_located_error(text in any_text()) {
        match orchestra::import::convert(&text, "config.yaml") {
            Ok(i) => {
                let parsed = manifest::parse(&i.toml, "orchestra.toml");
                prop_assert!(parsed.is_ok(), "{parsed:?}\n{}", i.toml);
            }
            Err(e) => check_import_error(&e)?,
        }
    }

    #[test]
    fn import_hostile_names_and_values_mean_the_same_in_toml(
        sessions in prop::collection::vec(
            (
                prop_oneof![hostile_text(), "[a-z][a-z0-9_ .\\[\\]\"]{0,12}"],
                hostile_text().prop_map(|p| format!("/{p}")),
                hostile_text(),
                hostile_text(),
            ),
            1..4,
        ),
    ) {
        let mut yaml = String::from("sessions:\n");
        for (name, path, role, env) in &sessions {
            yaml.push_str(&format!(
                "  {}:\n    path: {}\n    role: {}\n    env: {}\n",
                yaml_quoted(name),
                yaml_quoted(path),
                yaml_quoted(role),
                yaml_quoted(env)
            ));
        }
        match orchestra::import::convert(&yaml, "config.yaml") {
            Ok(i) => {
                let m = manifest::parse(&i.toml, "orchestra.toml");
                prop_assert!(m.is_ok(), "{m:?}\n{}", i.toml);
                let m = m.unwrap();
                // Every session came through (under its label), its values unchanged.
                let mut want: Vec<(&str, Option<&str>)> =
                    sessions.iter().map(|(_, p, r, _)| (p.as_str(), Some(r.as_str()))).collect();
                let mut have: Vec<(&str, Option<&str>)> =
                    m.sessions.values().map(|s| (s.path.as_str(), s.role.as_deref())).collect();
                want.sort();
                have.sort();
                prop_assert_eq!(have, want, "{}", i.toml);
                for s in m.sessions.values() {
                    if let Some(env) = &s.env {
                        prop_assert!(sessions.iter().any(|(_, _, _, e)| e == env));
                    }
                }
            }
            Err(e) => check_import_error(&e)?,
        }
    }
}

/// A claude conversation log line: an assistant message with usage (sometimes the same
/// message again, as claude writes one line per content block), another entry, or junk.
fn log_line() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u8..4, 0u64..1000, 0u64..1000, 0u64..100, 0u64..100).prop_map(|(id, i, o, cc, cr)| {
            serde_json::json!({
                "type": "assistant",
                "timestamp": "2026-11-30T19:02:47.483Z",
                "message": {"id": format!("msg_{id}"), "model": "claude-x", "usage": {
                    "input_tokens": i, "output_tokens": o,
                    "cache_creation_input_tokens": cc, "cache_read_input_tokens": cr}}
            })
            .to_string()
        }),
        Just(r#"{"type":"user","message":{"content":"hi"}}"#.to_string()),
        "[^\n]{0,40}",
    ]
}

proptest! {
    /// The cost reader never panics on any bytes, stops at a line's end, and reading a log
    /// in two pieces (a line cut anywhere, read again from the mark) sums what one read does.
    #[test]
    fn a_conversation_log_read_in_two_pieces_sums_as_one_read(
        lines in proptest::collection::vec(log_line(), 0..12),
        noise in proptest::collection::vec(any::<u8>(), 0..64),
        cut in 0usize..2000,
    ) {
        use orchestra::cost::log::{read, Counted};
        use orchestra::state::Tokens;
        let _ = read(&noise, &Counted::default());
        let log: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let bytes = log.as_bytes();
        let sum = |usage: &[(String, String, Tokens)]| {
            usage.iter().fold(Tokens::default(), |mut t, (_, _, u)| {
                t.add(u);
                t
            })
        };
        let whole = read(bytes, &Counted::default());
        prop_assert_eq!(whole.consumed, bytes.len());
        let cut = cut.min(bytes.len());
        let first = read(&bytes[..cut], &Counted::default());
        prop_assert!(first.consumed == 0 || bytes[first.consumed - 1] == b'\n');
        let second = read(&bytes[first.consumed..], &first.last);
        let mut two = sum(&first.usage);
        two.add(&sum(&second.usage));
        prop_assert_eq!(two, sum(&whole.usage));
    }
}

proptest! {
    /// What a host prints before the marker of the remote refresh's probe never makes the
    /// parse panic, never leaks into tmux's part, and names words by one-word ids;
    /// a platform check of any `uname -sm` text names a target or agrees.
    #[test]
    fn a_hosts_probe_output_splits_at_its_marker_whatever_precedes_it(
        head in any_text(),
        tail in any_text(),
        uname in hostile_text(),
    ) {
        use orchestra::remote_hooks::{parse_probe, platform_mismatch};
        let marker = "orchestra-probe-0123";
        let head = head.replace(marker, "");
        let (_, whole) = parse_probe(&head, marker);
        prop_assert_eq!(whole, head.as_str());
        let text = format!("{head}\n{marker}\n{tail}");
        let (probe, rest) = parse_probe(&text, marker);
        prop_assert_eq!(rest, tail.as_str());
        for id in probe.words.keys() {
            prop_assert!(!id.contains(' ') && !id.contains('\n'));
        }
        if let Some(why) = platform_mismatch("gpu", &uname) {
            prop_assert!(why.starts_with("gpu is ") && why.contains("build one for"));
        }
    }
}

/// A codex rollout line: a running total of tokens (sometimes the same again, sometimes
/// smaller: a thread that counts anew), the turn's model, another entry, or junk.
fn rollout_line() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..1000, 0u64..1000, 0u64..1000).prop_map(|(i, c, o)| {
            serde_json::json!({"timestamp": "2026-11-30T20:53:18.475Z", "type": "event_msg",
                "payload": {"type": "token_count", "info": {"total_token_usage": {
                    "input_tokens": i, "cached_input_tokens": c, "output_tokens": o}}}})
            .to_string()
        }),
        (0u8..3).prop_map(|m| {
            serde_json::json!({"type": "turn_context", "payload": {"model": format!("gpt-{m}")}})
                .to_string()
        }),
        Just(r#"{"type":"response_item","payload":{"type":"message"}}"#.to_string()),
        "[^\n]{0,40}",
    ]
}

/// A Gemini CLI chat record line: a model message with tokens (sometimes the same message
/// again, as the CLI writes it again whole), one without, another entry, or junk.
fn chat_line() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u8..4, 0u64..1000, 0u64..1000, 0u64..100, 0u64..100).prop_map(|(id, i, o, c, t)| {
            serde_json::json!({"id": format!("m{id}"), "timestamp": "2026-11-30T20:53:32.960Z",
                "type": "gemini", "model": "gemini-x",
                "tokens": {"input": i, "output": o, "cached": c, "thoughts": t, "tool": 0}})
            .to_string()
        }),
        Just(r#"{"id":"m9","type":"gemini","content":"x"}"#.to_string()),
        Just(r#"{"$set":{"lastUpdated":"2026-11-30T20:53:32.964Z"}}"#.to_string()),
        "[^\n]{0,40}",
    ]
}

fn usage_sum(usage: &[(String, String, orchestra::state::Tokens)]) -> orchestra::state::Tokens {
    usage
        .iter()
        .fold(orchestra::state::Tokens::default(), |mut t, (_, _, u)| {
            t.add(u);
            t
        })
}

proptest! {
    /// codex's rollout reader never panics on any bytes, stops at a line's end, and reading
    /// a rollout in two pieces (cut anywhere, read again from the mark) sums as one read.
    #[test]
    fn a_codex_rollout_read_in_two_pieces_sums_as_one_read(
        lines in proptest::collection::vec(rollout_line(), 0..12),
        noise in proptest::collection::vec(any::<u8>(), 0..64),
        cut in 0usize..2000,
    ) {
        use orchestra::cost::codex::{read, Seen};
        let _ = read(&noise, &Seen::default());
        let log: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let bytes = log.as_bytes();
        let whole = read(bytes, &Seen::default());
        prop_assert_eq!(whole.consumed, bytes.len());
        let cut = cut.min(bytes.len());
        let first = read(&bytes[..cut], &Seen::default());
        prop_assert!(first.consumed == 0 || bytes[first.consumed - 1] == b'\n');
        let second = read(&bytes[first.consumed..], &first.last);
        let mut two = usage_sum(&first.usage);
        two.add(&usage_sum(&second.usage));
        prop_assert_eq!(two, usage_sum(&whole.usage));
        prop_assert_eq!(second.last, whole.last);
    }

    /// The Gemini CLI's chat record reader: the same, and a message counts once.
    #[test]
    fn a_gemini_chat_record_read_in_two_pieces_sums_as_one_read(
        lines in proptest::collection::vec(chat_line(), 0..12),
        noise in proptest::collection::vec(any::<u8>(), 0..64),
        cut in 0usize..2000,
    ) {
        use orchestra::cost::gemini::{read, Seen};
        let _ = read(&noise, &Seen::default());
        let log: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let bytes = log.as_bytes();
        let whole = read(bytes, &Seen::default());
        prop_assert_eq!(whole.consumed, bytes.len());
        let cut = cut.min(bytes.len());
        let first = read(&bytes[..cut], &Seen::default());
        prop_assert!(first.consumed == 0 || bytes[first.consumed - 1] == b'\n');
        let second = read(&bytes[first.consumed..], &first.last);
        let mut two = usage_sum(&first.usage);
        two.add(&usage_sum(&second.usage));
        prop_assert_eq!(two, usage_sum(&whole.usage));
        // Counted once: reading it all again from the end's mark adds nothing.
        prop_assert!(read(bytes, &whole.last).usage.is_empty());
    }
}

proptest! {
    /// A remote's address (the person's git config, a clone's) gives a forge or one line
    /// naming what to set, never a panic; whatever it gives names an owner and a name that
    /// go into a URL's path as they are.
    #[test]
    fn a_remote_address_gives_a_forge_or_one_line(url in any_text(), api in proptest::option::of(any_text())) {
        match orchestra::pr::Forge::of_remote("origin", &url, api.as_deref(), None) {
            Ok(forge) => {
                let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
                prop_assert!(plain(&forge.owner) && plain(&forge.name), "{:?}", forge);
            }
            Err(e) => prop_assert_eq!(e.to_string().lines().count(), 1),
        }
    }

    /// The draft a person edits reads back as it was written, and any text saved reads
    /// as a draft with a one-line title or as given up.
    #[test]
    fn a_pull_request_draft_reads_back(
        title in "[A-Za-z0-9#`*][A-Za-z0-9 #`*:.-]{0,60}[A-Za-z0-9.]",
        body in "([A-Za-z0-9#`*-][A-Za-z0-9 \n#`*.-]{0,200})?",
        saved in any_text(),
    ) {
        use orchestra::pr::{as_text, from_text, Draft};
        let draft = Draft { title, body };
        prop_assert_eq!(from_text(&as_text(&draft)), Some(draft));
        if let Some(read) = from_text(&saved) {
            prop_assert!(!read.title.is_empty() && !read.title.contains('\n'));
        }
    }
}
