//! insights, dream, sync: the real claude CLI in print mode against the fake API, in each
//! manifest session's folder (one over a real sshd); reports saved per run, synthesized
//! into CONTEXT.md; failures reported while the rest finish.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::harness::{free_port, ClaudeWorld, Env, Sshd};

struct World {
    env: Env,
    world: ClaudeWorld,
}

/// A repo whose manifest runs the real claude, with the scripted user prompts
/// `prompts` (name, text) in `$ORCHESTRA_HOME/prompts/`.
fn world(folders: &[&str], prompts: &[(&str, &str)]) -> Option<World> {
    let mut env = Env::new();
    let paths: Vec<PathBuf> = folders.iter().map(|f| folder(&env, f)).collect();
    let trust: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let world = ClaudeWorld::start(&env, &trust)?;
    env.env = world.env.clone();
    let dir = env.home.join("prompts");
    std::fs::create_dir_all(&dir).expect("prompts dir");
    for (name, text) in prompts {
        std::fs::write(dir.join(format!("{name}.md")), text).expect("prompt");
    }
    Some(World { env, world })
}

fn folder(env: &Env, name: &str) -> PathBuf {
    let p = env.root.join(name);
    std::fs::create_dir_all(&p).expect("session folder");
    p
}

/// The scripted answers: each session says who it is; each synthesis says which it is.
const SCRIPT: &[(&str, &str)] = &[
    ("insight", "[[say: insight-of-{{SESSION}}]]"),
    ("dream", "[[say: dream-of-{{SESSION}}]]"),
    (
        "synthesize_insights",
        "[[say: SUMMARY-OF-INSIGHTS]]\n\n{{REPORTS}}",
    ),
    (
        "synthesize_dream",
        "[[say: SUMMARY-OF-DREAMS]]\n\n{{REPORTS}}",
    ),
];

impl World {
    /// orchestra.toml with the real claude as the agent, then `sessions` (TOML text).
    fn manifest(&self, extra_orchestrator: &str, sessions: &str) {
        let text = format!(
            "[orchestrator]\nagent = '{}'\n{extra_orchestrator}\n{sessions}",
            self.world.claude.display()
        );
        std::fs::write(self.env.repo.join("orchestra.toml"), text).expect("manifest");
    }

    fn session(&self, name: &str, path: &Path, extra: &str) -> String {
        format!("[sessions.{name}]\npath = '{}'\n{extra}\n", path.display())
    }

    /// The one run folder under `$ORCHESTRA_HOME/runs/`.
    fn run_dir(&self) -> PathBuf {
        let runs: Vec<PathBuf> = std::fs::read_dir(self.env.home.join("runs"))
            .expect("runs/")
            .map(|e| e.expect("entry").path())
            .collect();
        assert_eq!(runs.len(), 1, "{runs:?}");
        runs[0].clone()
    }

    /// The request bodies (JSON lines) whose prompt carries `marker`.
    fn requests_with(&self, marker: &str) -> Vec<String> {
        self.world
            .api
            .requests()
            .lines()
            .filter(|l| l.contains(marker))
            .map(str::to_string)
            .collect()
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn sync_asks_every_session_and_merges_both_reports_into_context_md() {
    let Some(w) = world(&["alpha", "beta"], SCRIPT) else {
        return;
    };
    let (alpha, beta) = (w.env.root.join("alpha"), w.env.root.join("beta"));
    w.manifest(
        "",
        &(w.session("alpha", &alpha, "role = 'frontend'") + &w.session("beta", &beta, "")),
    );
    // Each agent run is bounded by --timeout (a_slow_session_is_killed_at_the_timeout holds that);
    // how long the real CLI takes on a loaded machine is not this test's to say.
    let run = w
        .env
        .orchestra(&["sync", "--jobs", "2", "--timeout", "90s"])
        .ok();
    // Within sync_interval (default 6h) a --if-due run does nothing.
    let due = w.env.orchestra(&["sync", "--if-due"]).ok();
    assert!(due.stdout.contains("sync: not due"), "{}", due.stdout);

    let dir = w.run_dir();
    for (file, text) in [
        ("alpha.insights.md", "insight-of-alpha"),
        ("beta.insights.md", "insight-of-beta"),
        ("alpha.dream.md", "dream-of-alpha"),
        ("beta.dream.md", "dream-of-beta"),
        ("summary/insights.md", "SUMMARY-OF-INSIGHTS"),
        ("summary/dream.md", "SUMMARY-OF-DREAMS"),
    ] {
        assert_eq!(read(&dir.join(file)).trim(), text, "{file}");
        assert!(
            run.stdout.contains(&dir.join(file).display().to_string()),
            "{file} not listed:\n{}",
            run.stdout
        );
    }
    // Both sessions' reports reached each synthesis, each headed by its session.
    for (marker, reports) in [
        (
            "[[say: SUMMARY-OF-INSIGHTS]]",
            ["insight-of-alpha", "insight-of-beta"],
        ),
        (
            "[[say: SUMMARY-OF-DREAMS]]",
            ["dream-of-alpha", "dream-of-beta"],
        ),
    ] {
        let requests = w.requests_with(marker);
        assert!(
            requests
                .iter()
                .any(|r| reports.iter().all(|t| r.contains(t))
                    && r.contains("Session alpha")
                    && r.contains("Session beta")),
            "no synthesis request for {marker} held both reports: {requests:#?}"
        );
    }
    let context = w.env.repo.join("CONTEXT.md");
    let text = read(&context);
    let insights = text.find("## Insights").expect("insights heading");
    let dream = text.find("## Dream").expect("dream heading");
    assert!(insights < dream, "{text}");
    assert!(
        text[insights..dream].contains("SUMMARY-OF-INSIGHTS"),
        "{text}"
    );
    assert!(text[dream..].contains("SUMMARY-OF-DREAMS"), "{text}");
    assert!(run
        .stdout
        .lines()
        .any(|l| l == context.display().to_string()));
    assert!(run.stderr.contains("[4/4]"), "{}", run.stderr);

    // A later `insights` replaces its own section and keeps the dream one.
    std::fs::write(
        w.env.home.join("prompts/synthesize_insights.md"),
        "[[say: NEWER-INSIGHTS]]\n{{REPORTS}}",
    )
    .unwrap();
    w.env
        .orchestra(&["insights", "alpha", "--timeout", "90s"])
        .ok();
    let text = read(&context);
    assert!(text.contains("NEWER-INSIGHTS") && !text.contains("SUMMARY-OF-INSIGHTS"));
    assert!(text.contains("SUMMARY-OF-DREAMS"), "{text}");
}

#[test]
fn a_failing_session_is_reported_and_the_others_still_finish() {
    let Some(w) = world(&["alpha"], SCRIPT) else {
        return;
    };
    let alpha = w.env.root.join("alpha");
    let shared = folder(&w.env, "shared");
    w.manifest(
        &format!("shared_fs = '{}'", shared.display()),
        &(w.session("alpha", &alpha, "")
            + &w.session("broken", &alpha, "agent_args = '--no-such-flag'")
            + &w.session("gone", &w.env.root.join("no-such-folder"), "")),
    );

    // All of them failing: nothing to synthesize, no CONTEXT.md.
    let run = w.env.orchestra(&["insights", "broken"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!shared.join("CONTEXT.md").exists());
    assert!(
        run.stderr.contains("no session gave a report"),
        "{}",
        run.stderr
    );
    std::fs::remove_dir_all(w.env.home.join("runs")).unwrap();

    let run = w.env.orchestra(&["insights", "--timeout", "90s"]);
    assert_eq!(
        run.code, 1,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let line = |what: &str| {
        run.stderr
            .lines()
            .find(|l| l.contains(what) && l.contains("failed"))
            .unwrap_or_else(|| panic!("no failure line for {what}:\n{}", run.stderr))
            .to_string()
    };
    assert!(line("insights broken").contains("no-such-flag"));
    assert!(line("insights gone").contains("does not exist"));
    assert!(
        run.stderr.lines().last().unwrap().contains("2 of 4 failed"),
        "{}",
        run.stderr
    );
    let dir = w.run_dir();
    assert_eq!(
        read(&dir.join("alpha.insights.md")).trim(),
        "insight-of-alpha"
    );
    assert!(!dir.join("broken.insights.md").exists());
    assert!(read(&dir.join("broken.insights.failed.txt")).contains("no-such-flag"));
    // The shared folder gets CONTEXT.md; the repo root does not.
    let context = read(&shared.join("CONTEXT.md"));
    assert!(context.contains("SUMMARY-OF-INSIGHTS"), "{context}");
    assert!(!w.env.repo.join("CONTEXT.md").exists());
    let synthesis = w.requests_with("[[say: SUMMARY-OF-INSIGHTS]]");
    assert!(synthesis.iter().any(|r| r.contains("insight-of-alpha")));
    assert!(!synthesis.iter().any(|r| r.contains("Session broken")));
}

#[test]
fn bad_input_changes_nothing() {
    let env = Env::new();
    let folder = folder(&env, "alpha");
    let manifest = |agent: &str| {
        std::fs::write(
            env.repo.join("orchestra.toml"),
            format!(
                "[orchestrator]\nagent = '{agent}'\n[sessions.alpha]\npath = '{}'\n",
                folder.display()
            ),
        )
        .unwrap();
    };
    let default = env.repo.join("orchestra.toml");
    // No manifest at all.
    env.cli(&["sync"])
        .status(2)
        .stderr_line(format!(
            "orchestra: no manifest at {} (write one, or pass --config FILE)",
            default.display()
        ))
        .run();
    manifest("cat");
    let not_a_duration = |flag: &str| {
        format!("orchestra: --timeout {flag:?} is not a duration such as \"90s\" or \"10m\"")
    };
    for (args, line) in [
        (
            &["insights", "nobody"][..],
            // Names what exists.
            format!(
                "orchestra: no session \"nobody\" in {} (it has: alpha)",
                default.display()
            ),
        ),
        (&["dream", "--timeout", "soon"], not_a_duration("soon")),
        (&["sync", "--timeout", "0s"], not_a_duration("0s")),
        (
            &["sync", "--jobs", "0"],
            "orchestra: --jobs must be at least 1".into(),
        ),
        (
            &["sync", "--config", "/no/such/orchestra.toml"],
            "orchestra: no manifest at /no/such/orchestra.toml (write one, or pass --config FILE)"
                .into(),
        ),
    ] {
        env.cli(args).status(2).stderr_line(line).run();
    }
    manifest("no-such-agent-program");
    env.cli(&["sync"])
        .status(2)
        .stderr_line(format!(
            "orchestra: agent \"no-such-agent-program\" not found \
             (set [orchestrator] agent in {})",
            default.display()
        ))
        .run();

    assert!(!env.home.join("runs").exists());
    assert!(!env.repo.join("CONTEXT.md").exists());
}

#[test]
fn a_slow_session_is_killed_at_the_timeout() {
    let Some(w) = world(&["slow"], &[("insight", "[[slow: 20]]")]) else {
        return;
    };
    let slow = w.env.root.join("slow");
    w.manifest("", &w.session("slow", &slow, ""));
    let start = Instant::now();
    let run = w.env.orchestra(&["insights", "--timeout", "2s"]);
    let took = start.elapsed();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert!(
        run.stderr
            .contains("insights slow: failed: timed out after 2s"),
        "{}",
        run.stderr
    );
    assert!(!w.env.repo.join("CONTEXT.md").exists());
}

#[test]
fn a_remote_session_answers_over_ssh_and_an_unreachable_host_is_skipped() {
    let Some(mut w) = world(&["local", "remote"], SCRIPT) else {
        return;
    };
    let Some(sshd) = Sshd::start(&w.env) else {
        return;
    };
    // orchestra and the local claude share the sandboxed HOME: its known_hosts trusts sshd.
    let home = PathBuf::from(
        &w.env
            .env
            .iter()
            .find(|(k, _)| k == "HOME")
            .expect("claude's HOME")
            .1,
    );
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/known_hosts"), sshd.known_hosts_line()).unwrap();
    w.env.env.push(("SSH_AUTH_SOCK".into(), String::new()));
    // The remote side gets claude's environment from the session's env snippet.
    let snippet: Vec<String> = w
        .world
        .env
        .iter()
        .map(|(k, v)| format!("{k}={}", shell_words::quote(v)))
        .collect();
    let snippet = format!("export {}", snippet.join(" "));
    w.manifest(
        "",
        &format!(
            "[hosts.gpu]\naddress = '{}'\nidentity = '{}'\n\n\
             [hosts.down]\naddress = 'me@127.0.0.1:{}'\nconnect_timeout = '1s'\n\n{}{}{}",
            sshd.address(),
            sshd.user_key.display(),
            free_port(),
            w.session("local", &w.env.root.join("local"), ""),
            w.session(
                "remote",
                &w.env.root.join("remote"),
                &format!("host = 'gpu'\nenv = {snippet:?}")
            ),
            w.session("lost", &w.env.root.join("remote"), "host = 'down'"),
        ),
    );
    let run = w.env.orchestra(&["insights", "--timeout", "90s"]);
    assert_eq!(
        run.code, 1,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(
        run.stderr
            .lines()
            .any(|l| l.contains("insights lost: failed") && l.contains("unreachable")),
        "{}",
        run.stderr
    );
    for name in ["local", "remote"] {
        assert!(
            run.stderr.contains(&format!("insights {name}: done")),
            "{}",
            run.stderr
        );
    }
    let dir = w.run_dir();
    assert_eq!(
        read(&dir.join("remote.insights.md")).trim(),
        "insight-of-remote"
    );
    assert_eq!(
        read(&dir.join("local.insights.md")).trim(),
        "insight-of-local"
    );
    let synthesis = w.requests_with("[[say: SUMMARY-OF-INSIGHTS]]");
    assert!(
        synthesis
            .iter()
            .any(|r| r.contains("insight-of-remote") && r.contains("insight-of-local")),
        "{synthesis:#?}"
    );
    assert!(read(&w.env.repo.join("CONTEXT.md")).contains("SUMMARY-OF-INSIGHTS"));
}

/// CONTEXT.md without orchestra's sections: what lies between a start marker and its end
/// marker is cut out, everything else is kept as it is.
fn outside_sections(text: &str) -> String {
    let mut rest = text.to_string();
    for part in ["insights", "dream"] {
        let start = format!("<!-- orchestra:{part} ");
        let end = format!("<!-- /orchestra:{part} -->");
        if let (Some(a), Some(b)) = (rest.find(&start), rest.find(&end)) {
            rest.replace_range(a..b + end.len(), "");
        }
    }
    rest
}

#[test]
fn sync_keeps_a_hand_written_context_md_byte_for_byte() {
    let Some(w) = world(&["alpha"], SCRIPT) else {
        return;
    };
    let alpha = w.env.root.join("alpha");
    w.manifest("", &w.session("alpha", &alpha, ""));
    let context = w.env.repo.join("CONTEXT.md");
    // The person's own file: no markers, no newline at the end.
    let mine =
        "# Team notes\n\nHand-written: the deploy key lives in vault, ask Ana.\n\n  indented  \t";
    std::fs::write(&context, mine).unwrap();

    w.env
        .orchestra(&["sync", "--jobs", "2", "--timeout", "90s"])
        .ok();
    let text = read(&context);
    assert!(text.starts_with(mine), "{text}");
    assert!(text.contains("SUMMARY-OF-INSIGHTS") && text.contains("SUMMARY-OF-DREAMS"));

    // The person writes before, between and after orchestra's sections; the next run
    // changes the summaries and nothing else.
    let dream = text.find("<!-- orchestra:dream").expect("dream section");
    let edited = format!(
        "Before, by hand.\n{}\nBetween, by hand.\n\n{}\nAfter, by hand <!-- a comment -->\n",
        &text[..dream],
        &text[dream..]
    );
    std::fs::write(&context, &edited).unwrap();
    for (name, text) in [
        (
            "synthesize_insights",
            "[[say: NEWER-INSIGHTS]]\n{{REPORTS}}",
        ),
        ("synthesize_dream", "[[say: NEWER-DREAMS]]\n{{REPORTS}}"),
    ] {
        std::fs::write(w.env.home.join(format!("prompts/{name}.md")), text).unwrap();
    }
    std::fs::remove_dir_all(w.env.home.join("runs")).unwrap();
    w.env
        .orchestra(&["sync", "--jobs", "2", "--timeout", "90s"])
        .ok();
    let after = read(&context);
    assert!(
        after.contains("NEWER-INSIGHTS") && after.contains("NEWER-DREAMS"),
        "{after}"
    );
    assert!(
        !after.contains("SUMMARY-OF-INSIGHTS") && !after.contains("SUMMARY-OF-DREAMS"),
        "{after}"
    );
    assert_eq!(outside_sections(&after), outside_sections(&edited));
    assert!(outside_sections(&after).contains("Between, by hand."));
}
