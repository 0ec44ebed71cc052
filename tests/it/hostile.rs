//! A corpus of hostile texts through every way text enters orchestra: dispatch prompts
//! (`--prompt`, `--prompt-file`), labels, `brief` (text and @FILE) and orchestra.toml
//! (session names, tmux names, paths, agent arguments, the brief a dependency sends).
//! Each text arrives exactly as given, or is refused with exit 2, one line on stderr and
//! nothing made. What arrives is read by a recording agent: a real program in a real pane
//! that puts its terminal in raw mode, turns bracketed paste on (as interactive agents
//! do), and writes every byte it reads to a file.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::{bin, git_in, wait_until, Env, Run};

const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

/// Texts that mean something to tmux, shells, terminals or naive quoting.
fn corpus(root: &Path) -> Vec<(&'static str, String)> {
    let pwned = |what: &str| root.join(format!("pwned-{what}")).display().to_string();
    vec![
        (
            "quotes",
            r#"it's "quoted" and 'single' and `back`"#.to_string(),
        ),
        ("separators", "a ; kill-server ; b \\; c".to_string()),
        ("trailing semicolon", "ends with a semicolon;".to_string()),
        (
            "trailing escaped semicolon",
            "ends with an escaped one\\;".to_string(),
        ),
        (
            "tmux formats",
            format!("#(touch {}) #{{pane_id}} #[fg=red] ##", pwned("format")),
        ),
        ("percent", "100%% done %1 %%% %".to_string()),
        (
            "shell expansions",
            format!("$(touch {}) $HOME ${{HOME}} `id` ~ * ?", pwned("shell")),
        ),
        ("backslashes", r"back\slash \n \t \\ \".to_string()),
        ("key names", "C-c".to_string()),
        ("option-like", "--help -x".to_string()),
        ("unicode", "日本語 ❯ café \u{202e}rtl\u{feff}".to_string()),
        ("tab and del", "tab\there del\u{7f}".to_string()),
    ]
}

/// Multi-line texts.
fn multiline_corpus() -> Vec<(&'static str, String)> {
    vec![
        ("newlines", "line one\nline two\n\nline four".to_string()),
        ("crlf", "windows\r\nline".to_string()),
    ]
}

/// A text holding the end marker of a bracketed paste: pasted as is, it would end the
/// paste early and the rest would be typed as keys (its newline pressing Enter).
const PASTE_ESCAPE: &str = "before\u{1b}[201~after\nstill the same message";

/// Everything orchestra could have made or touched, to compare before and after.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct World {
    branches: Vec<String>,
    worktrees: String,
    windows: Vec<String>,
    tmux_sessions: Vec<String>,
    rows: Vec<(String, String, String)>,
    session_dirs: Vec<String>,
}

pub(crate) fn world(env: &Env) -> World {
    let mut rows: Vec<(String, String, String)> = env
        .list_json()
        .into_iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap_or_default().to_string(),
                s["label"].as_str().unwrap_or_default().to_string(),
                s["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    rows.sort();
    let mut session_dirs: Vec<String> = std::fs::read_dir(env.home.join("sessions"))
        .map(|d| {
            d.filter_map(std::result::Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    session_dirs.sort();
    World {
        branches: env.branches(),
        worktrees: env.git(&["worktree", "list", "--porcelain"]),
        windows: env.windows(),
        tmux_sessions: env
            .tmux_try(&["list-sessions", "-F", "#{session_name}"])
            .stdout
            .lines()
            .map(str::to_string)
            .collect(),
        rows,
        session_dirs,
    }
}

/// A refusal as the standard wants it: exit 2, one line on stderr, nothing changed.
#[track_caller]
pub(crate) fn refused_cleanly(
    env: &Env,
    run: &Run,
    before: &World,
    what: &str,
) -> Result<(), String> {
    if run.code != 2 {
        return Err(format!(
            "{what}: exit {} (want 0 with the text intact, or 2); stderr: {}",
            run.code, run.stderr
        ));
    }
    if run.stderr.lines().count() != 1 {
        return Err(format!(
            "{what}: refused with {} lines on stderr: {:?}",
            run.stderr.lines().count(),
            cut(&run.stderr)
        ));
    }
    let after = world(env);
    if &after != before {
        return Err(format!(
            "{what}: refused but something changed:\nbefore {before:?}\nafter  {after:?}"
        ));
    }
    Ok(())
}

fn cut(text: &str) -> String {
    if text.len() > 300 {
        let mut end = 300;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}… ({} bytes)", &text[..end], text.len())
    } else {
        text.to_string()
    }
}

fn cut_bytes(bytes: &[u8]) -> String {
    cut(&String::from_utf8_lossy(bytes))
}

/// The recording agent: argv (NUL-separated) to `OUT.argv`, then every byte its terminal
/// gives to `OUT`.
fn recorder(env: &Env) -> PathBuf {
    let script = env.root.join("recorder.sh");
    if !script.exists() {
        std::fs::write(
            &script,
            "out=$1; shift\n\
             for a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$out.argv\"\n\
             stty raw -echo\n\
             printf '\\033[?2004hrecorder ready\\r\\n'\n\
             exec cat > \"$out\"\n",
        )
        .expect("write the recorder");
    }
    script
}

/// The `--agent` command line of a recorder writing to `out`.
fn recorder_agent(env: &Env, out: &Path) -> String {
    shell_words::join([
        "bash",
        "--norc",
        "--noprofile",
        &recorder(env).to_string_lossy(),
        &out.to_string_lossy(),
    ])
}

/// The messages an interactive agent would take from `raw`: Enter (CR or LF) outside a
/// bracketed paste submits; inside one a CR is a newline (tmux pastes LF as CR). Returns
/// the submitted messages and what is left unsubmitted.
fn messages(raw: &[u8]) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut done = Vec::new();
    let mut current = Vec::new();
    let mut in_paste = false;
    let mut i = 0;
    while i < raw.len() {
        if !in_paste && raw[i..].starts_with(PASTE_START) {
            in_paste = true;
            i += PASTE_START.len();
            continue;
        }
        if in_paste && raw[i..].starts_with(PASTE_END) {
            in_paste = false;
            i += PASTE_END.len();
            continue;
        }
        let b = raw[i];
        i += 1;
        if in_paste {
            current.push(if b == b'\r' { b'\n' } else { b });
        } else if b == b'\r' || b == b'\n' {
            done.push(std::mem::take(&mut current));
        } else {
            current.push(b);
        }
    }
    (done, current)
}

/// What a text looks like once it went through a terminal: a CR can only arrive as the
/// newline a paste makes of it.
fn as_received(text: &[u8]) -> Vec<u8> {
    text.iter()
        .map(|b| if *b == b'\r' { b'\n' } else { *b })
        .collect()
}

/// Waits until `out` holds `count` submitted messages and stays quiet a moment.
fn wait_for_messages(out: &Path, count: usize, timeout: Duration) -> (Vec<Vec<u8>>, Vec<u8>) {
    let read = || std::fs::read(out).unwrap_or_default();
    wait_until(timeout, || messages(&read()).0.len() >= count);
    // Anything after the message (a second half, a stray key) arrives right behind it.
    let mut last = read().len();
    loop {
        std::thread::sleep(Duration::from_millis(400));
        let now = read().len();
        if now == last {
            break;
        }
        last = now;
    }
    messages(&read())
}

fn check_arrival(out: &Path, expected: &[u8], what: &str, timeout: Duration) -> Result<(), String> {
    let (done, rest) = wait_for_messages(out, 1, timeout);
    let want = as_received(expected);
    if done.len() == 1 && done[0] == want && rest.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{what}: the agent received {} message(s) {:?} and unsubmitted {:?}; want one: {:?}",
        done.len(),
        done.iter().map(|m| cut_bytes(m)).collect::<Vec<_>>(),
        cut_bytes(&rest),
        cut_bytes(&want)
    ))
}

/// How a prompt is handed to dispatch.
#[derive(Clone, Copy, Debug)]
enum Via {
    Flag,
    File,
}

/// Dispatches a recorder with `prompt` and checks it arrived, or that dispatch refused it
/// cleanly. Returns the failures.
fn dispatch_prompt(env: &Env, n: usize, what: &str, prompt: &[u8], via: Via) -> Result<(), String> {
    let label = format!("h{n}");
    let out = env.root.join(format!("received-{n}"));
    let agent = recorder_agent(env, &out);
    let before = world(env);
    let mut cmd = env.orchestra_command(
        &env.repo,
        &["dispatch", &label, "--kind", "generic", "--agent", &agent],
    );
    match via {
        Via::Flag => {
            let mut flag = b"--prompt=".to_vec();
            flag.extend_from_slice(prompt);
            cmd.arg(OsStr::from_bytes(&flag));
        }
        Via::File => {
            let file = env.root.join(format!("prompt-{n}.txt"));
            std::fs::write(&file, prompt).expect("write the prompt file");
            cmd.arg("--prompt-file").arg(&file);
        }
    }
    let what = format!("{what} via {via:?}");
    let run = Run::from(cmd.output().expect("run orchestra"));
    if run.code != 0 {
        return refused_cleanly(env, &run, &before, &what);
    }
    let timeout = Duration::from_secs(10 + (prompt.len() / 50_000) as u64);
    check_arrival(&out, prompt, &what, timeout)
}

#[track_caller]
fn all_ok(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn nothing_ran(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .map(|d| {
            d.filter_map(std::result::Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("pwned"))
                .map(|n| format!("something ran a command from the text: {n} exists"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn dispatch_prompts_of_hostile_text_arrive_literally() {
    let env = Env::new();
    env.start_server(&[]);
    let mut failures = Vec::new();
    let mut n = 0;
    for (what, text) in corpus(&env.root) {
        for via in [Via::Flag, Via::File] {
            n += 1;
            failures.extend(dispatch_prompt(&env, n, what, text.as_bytes(), via).err());
        }
    }
    failures.extend(nothing_ran(&env.root));
    all_ok(failures);
}

#[test]
fn dispatch_multiline_prompts_arrive_as_one_message() {
    let env = Env::new();
    env.start_server(&[]);
    let mut failures = Vec::new();
    let mut n = 0;
    for (what, text) in multiline_corpus() {
        for via in [Via::Flag, Via::File] {
            n += 1;
            failures.extend(dispatch_prompt(&env, n, what, text.as_bytes(), via).err());
        }
    }
    all_ok(failures);
}

#[test]
fn a_paste_end_marker_in_the_text_cannot_end_the_paste_early() {
    let env = Env::new();
    env.start_server(&[]);
    let mut failures = Vec::new();
    for (n, via) in [Via::Flag, Via::File].into_iter().enumerate() {
        failures.extend(
            dispatch_prompt(&env, n, "paste end marker", PASTE_ESCAPE.as_bytes(), via).err(),
        );
    }
    let out = recorder_session(&env, "listener");
    let file = env.root.join("paste-escape.txt");
    std::fs::write(&file, PASTE_ESCAPE).expect("write");
    let mut received = 0;
    for text in [PASTE_ESCAPE.to_string(), format!("@{}", file.display())] {
        let before = world(&env);
        let run = env.orchestra(&["brief", "listener", &text]);
        if run.code != 0 {
            failures.extend(refused_cleanly(&env, &run, &before, "brief").err());
            continue;
        }
        received += 1;
        let (done, rest) = wait_for_messages(&out, received, Duration::from_secs(10));
        if done.len() != received
            || done.last().map(Vec::as_slice) != Some(PASTE_ESCAPE.as_bytes())
            || !rest.is_empty()
        {
            failures.push(format!(
                "brief {:?}: the agent's messages are {:?}, unsubmitted {:?}",
                cut(&text),
                done.iter().map(|m| cut_bytes(m)).collect::<Vec<_>>(),
                cut_bytes(&rest)
            ));
            received = done.len();
        }
    }
    all_ok(failures);
}

#[test]
fn dispatch_prompts_with_nul_or_invalid_utf8_arrive_or_are_refused() {
    let env = Env::new();
    env.start_server(&[]);
    let mut failures = Vec::new();
    // No argument can hold a NUL: only a file can.
    failures.extend(dispatch_prompt(&env, 1, "NUL", b"a\0b", Via::File).err());
    failures.extend(dispatch_prompt(&env, 2, "invalid UTF-8", b"caf\xe9 \xff", Via::File).err());
    failures.extend(dispatch_prompt(&env, 3, "invalid UTF-8", b"caf\xe9 \xff", Via::Flag).err());
    all_ok(failures);
}

#[test]
fn dispatch_long_prompts_arrive_or_are_refused() {
    let env = Env::new();
    env.start_server(&[]);
    let mut failures = Vec::new();
    // Over tmux's command size limit (about 20 KB), under the kernel's limit for one
    // argument (128 KB): the flag can carry it.
    let long = "x".repeat(30 * 1024);
    failures.extend(dispatch_prompt(&env, 1, "30 KB line", long.as_bytes(), Via::Flag).err());
    failures.extend(dispatch_prompt(&env, 2, "30 KB line", long.as_bytes(), Via::File).err());
    let huge = "y".repeat(1 << 20);
    failures.extend(dispatch_prompt(&env, 3, "1 MB line", huge.as_bytes(), Via::File).err());
    all_ok(failures);
}

/// Labels from the corpus and beyond: each refused by every command that takes a label.
#[test]
fn hostile_labels_are_refused_everywhere_and_nothing_changes() {
    let env = Env::new();
    env.start_server(&[]);
    // A session to aim at, so "no such session" is not why a command refuses.
    env.dispatch_shell("target").ok();
    let before = world(&env);
    let mut labels: Vec<Vec<u8>> = corpus(&env.root)
        .into_iter()
        .chain(multiline_corpus())
        .map(|(_, t)| t.into_bytes())
        .collect();
    labels.extend([
        b"target;".to_vec(),
        b"target\n".to_vec(),
        b"target ".to_vec(),
        b"tar\0get".to_vec(),
        b"caf\xe9".to_vec(),
        b"-target".to_vec(),
        b"../target".to_vec(),
        "t".repeat(100 * 1024).into_bytes(),
    ]);
    let agent = "bash --norc --noprofile";
    let mut failures = Vec::new();
    for label in &labels {
        let label = OsStr::from_bytes(label);
        let commands: Vec<Vec<&OsStr>> = vec![
            ["dispatch", "--kind", "generic", "--agent", agent, "--"]
                .into_iter()
                .map(OsStr::new)
                .chain([label])
                .collect(),
            vec![OsStr::new("kill"), OsStr::new("--"), label],
            vec![
                OsStr::new("brief"),
                OsStr::new("--"),
                label,
                OsStr::new("hello"),
            ],
            vec![
                OsStr::new("merge"),
                OsStr::new("--yes"),
                OsStr::new("--"),
                label,
            ],
            vec![OsStr::new("restart"), OsStr::new("--"), label],
            vec![OsStr::new("review"), OsStr::new("--"), label],
            vec![OsStr::new("approve"), OsStr::new("--"), label],
        ];
        for args in commands {
            // A label with a NUL cannot be an argument at all.
            if label.as_bytes().contains(&0) {
                continue;
            }
            let mut cmd = env.orchestra_command(&env.repo, &[]);
            cmd.args(&args);
            let run = Run::from(cmd.output().expect("run orchestra"));
            let what = format!("{:?} {}", args[0], cut(&label.to_string_lossy()));
            failures.extend(refused_cleanly(&env, &run, &before, &what).err());
        }
    }
    failures.extend(nothing_ran(&env.root));
    all_ok(failures);
}

/// Words for an agent's argv: the corpus, plus words tmux's command parser would take as
/// the end of a command (and what would follow as a command of its own).
fn hostile_words(root: &Path) -> Vec<String> {
    let mut words: Vec<String> = corpus(root)
        .into_iter()
        .chain(multiline_corpus())
        .map(|(_, t)| t)
        .collect();
    words.extend(
        [
            ";",
            "x;",
            "x\\;",
            "set-option",
            "-g",
            "@orchestra_pwned",
            "yes",
            "",
            " ",
        ]
        .map(String::from),
    );
    words
}

fn tmux_command_ran(env: &Env) -> Option<String> {
    let pwned = env.tmux_try(&["show-options", "-gv", "@orchestra_pwned"]);
    (pwned.stdout.trim() == "yes")
        .then(|| "a word of the agent's argv ran as a tmux command".into())
}

/// Waits for the recorder's argv file and compares it with `words`.
fn check_argv(file: &Path, words: &[String], what: &str) -> Result<(), String> {
    if !wait_until(Duration::from_secs(10), || file.exists()) {
        return Err(format!("{what}: the agent never started"));
    }
    std::thread::sleep(Duration::from_millis(300));
    let got = std::fs::read(file).unwrap_or_default();
    let mut want = Vec::new();
    for w in words {
        want.extend_from_slice(w.as_bytes());
        want.push(0);
    }
    if got == want {
        return Ok(());
    }
    Err(format!(
        "{what}: the agent's argv is {:?}, want {words:?}",
        got.split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
    ))
}

/// The words of `--agent` reach the agent as its argv, one for one, at dispatch and at
/// restart; tmux reads none of them as a command.
#[test]
fn agent_words_arrive_as_argv_at_dispatch_and_restart() {
    let env = Env::new();
    env.start_server(&[]);
    let out = env.root.join("received-words");
    let words = hostile_words(&env.root);
    let mut agent = vec![
        "bash".to_string(),
        recorder(&env).to_string_lossy().into_owned(),
        out.to_string_lossy().into_owned(),
    ];
    agent.extend(words.iter().cloned());
    let run = env.orchestra(&[
        "dispatch",
        "words",
        "--kind",
        "generic",
        "--agent",
        &shell_words::join(&agent),
    ]);
    let mut failures = Vec::new();
    let argv_file = out.with_extension("argv");
    if run.code != 0 {
        failures.push(format!("dispatch failed: {}", run.stderr));
    } else {
        failures.extend(check_argv(&argv_file, &words, "at dispatch").err());
        // The agent ends; restart starts it again in its pane.
        let pane = env.session("words")["pane"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let pid = env.tmux(&["display-message", "-p", "-t", &pane, "#{pane_pid}"]);
        std::fs::remove_file(&argv_file).expect("remove");
        std::process::Command::new("kill")
            .arg(pid.trim())
            .status()
            .expect("kill");
        assert!(wait_until(Duration::from_secs(5), || env
            .tmux(&["display-message", "-p", "-t", &pane, "#{pane_dead}"])
            .trim()
            == "1"));
        let run = env.orchestra(&["restart", "words"]);
        if run.code != 0 {
            failures.push(format!("restart failed: {}", run.stderr));
        } else {
            failures.extend(check_argv(&argv_file, &words, "at restart").err());
        }
    }
    failures.extend(tmux_command_ran(&env));
    failures.extend(nothing_ran(&env.root));
    all_ok(failures);
}

/// A live recorder session to brief; returns the file it records to.
fn recorder_session(env: &Env, label: &str) -> PathBuf {
    let out = env.root.join(format!("received-{label}"));
    env.orchestra(&[
        "dispatch",
        label,
        "--kind",
        "generic",
        "--agent",
        &recorder_agent(env, &out),
    ])
    .ok();
    assert!(
        wait_until(Duration::from_secs(10), || env
            .tmux(&["capture-pane", "-p", "-t", label])
            .contains("recorder ready")),
        "the recorder did not start"
    );
    out
}

#[test]
fn brief_of_hostile_text_arrives_literally() {
    let env = Env::new();
    env.start_server(&[]);
    let out = recorder_session(&env, "listener");
    let mut cases: Vec<(String, Vec<u8>)> = corpus(&env.root)
        .into_iter()
        .chain(multiline_corpus())
        .map(|(w, t)| (w.to_string(), t.into_bytes()))
        .collect();
    cases.push(("30 KB line".into(), "z".repeat(30 * 1024).into_bytes()));
    cases.push(("1 MB line".into(), "w".repeat(1 << 20).into_bytes()));
    cases.push(("NUL".into(), b"nul\0inside".to_vec()));
    cases.push(("invalid UTF-8".into(), b"caf\xe9 \xff".to_vec()));
    let mut failures = Vec::new();
    let mut received = 0;
    for (i, (what, text)) in cases.iter().enumerate() {
        for as_file in [false, true] {
            // The kernel takes at most 128 KB in one argument, and none with a NUL.
            if !as_file && (text.len() > 100 * 1024 || text.contains(&0)) {
                continue;
            }
            let what = format!("{what} as {}", if as_file { "@FILE" } else { "text" });
            let before = world(&env);
            let mut cmd = env.orchestra_command(&env.repo, &["brief", "listener"]);
            if as_file {
                let file = env.root.join(format!("brief-{i}.txt"));
                std::fs::write(&file, text).expect("write");
                let mut arg = b"@".to_vec();
                arg.extend_from_slice(file.as_os_str().as_bytes());
                cmd.arg(OsStr::from_bytes(&arg));
            } else {
                cmd.arg(OsStr::from_bytes(text));
            }
            let run = Run::from(cmd.output().expect("run orchestra"));
            if run.code != 0 {
                failures.extend(refused_cleanly(&env, &run, &before, &what).err());
                let (done, _) = messages(&std::fs::read(&out).unwrap_or_default());
                if done.len() != received {
                    failures.push(format!("{what}: refused, yet the agent got something"));
                    received = done.len();
                }
                continue;
            }
            received += 1;
            let timeout = Duration::from_secs(10 + (text.len() / 50_000) as u64);
            let (done, rest) = wait_for_messages(&out, received, timeout);
            let want = as_received(text);
            let last = done.get(received - 1);
            if done.len() != received || last != Some(&want) || !rest.is_empty() {
                failures.push(format!(
                    "{what}: the agent's messages now {:?} (want {received}, the last {:?}), unsubmitted {:?}",
                    done.iter().skip(received.saturating_sub(1)).map(|m| cut_bytes(m)).collect::<Vec<_>>(),
                    cut_bytes(&want),
                    cut_bytes(&rest)
                ));
                // Resynchronise: count what is there now.
                received = done.len();
            }
        }
    }
    // Blank text is refused: it would only press Enter.
    for blank in ["", "   ", "\n\n"] {
        let before = world(&env);
        let run = env.orchestra(&["brief", "listener", blank]);
        failures.extend(refused_cleanly(&env, &run, &before, &format!("blank {blank:?}")).err());
    }
    failures.extend(nothing_ran(&env.root));
    all_ok(failures);
}

/// orchestra.toml with `body` (after an [orchestrator] using bash) in the repo.
fn write_manifest(env: &Env, body: &str) {
    std::fs::write(
        env.repo.join("orchestra.toml"),
        format!("[orchestrator]\nagent = \"bash\"\n\n{body}"),
    )
    .expect("write orchestra.toml");
}

fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[test]
fn manifest_hostile_session_names_are_refused_before_anything_starts() {
    let env = Env::new();
    env.start_server(&[]);
    let folder = env.root.join("plain");
    std::fs::create_dir_all(&folder).expect("folder");
    let before = world(&env);
    let mut failures = Vec::new();
    for (what, name) in corpus(&env.root).into_iter().chain(multiline_corpus()) {
        write_manifest(
            &env,
            &format!(
                "[sessions.good]\npath = {p}\n\n[sessions.{}]\npath = {p}\n",
                q(&name),
                p = q(&folder.to_string_lossy())
            ),
        );
        let run = env.orchestra(&["up", "all"]);
        failures.extend(refused_cleanly(&env, &run, &before, what).err());
        if run.code == 2 && !run.stderr.contains("orchestra.toml:") {
            failures.push(format!(
                "{what}: the refusal names no place: {}",
                run.stderr
            ));
        }
    }
    failures.extend(nothing_ran(&env.root));
    all_ok(failures);
}

/// Words of `agent_args` arrive as the agent's argv, one for one, whatever they hold;
/// a `then` brief's text arrives in the downstream agent as written.
#[test]
fn manifest_agent_args_and_dependency_briefs_arrive_literally() {
    let env = Env::new();
    env.start_server(&[]);
    let folder = env.root.join("plain");
    std::fs::create_dir_all(&folder).expect("folder");
    let words = hostile_words(&env.root);
    let upstream_out = env.root.join("received-up");
    let downstream_out = env.root.join("received-down");
    let args_of = |out: &Path, extra: &[String]| {
        let mut all = vec![
            recorder(&env).to_string_lossy().into_owned(),
            out.to_string_lossy().into_owned(),
        ];
        all.extend(extra.iter().cloned());
        shell_words::join(all)
    };
    let (_, brief_text) = corpus(&env.root)
        .into_iter()
        .find(|(w, _)| *w == "shell expansions")
        .expect("in the corpus");
    let brief_text = format!("{brief_text} ; kill-server ; \\;x");
    write_manifest(
        &env,
        &format!(
            "[sessions.up1]\npath = {p}\nagent_args = {}\n\n\
             [sessions.down1]\npath = {p}\nagent_args = {}\n\n\
             [[dependencies]]\nwhen = \"up1 has ready.txt\"\nthen = {}\n",
            q(&args_of(&upstream_out, &words)),
            q(&args_of(&downstream_out, &[])),
            q(&shell_words::join(["brief", "down1", brief_text.as_str()])),
            p = q(&folder.to_string_lossy())
        ),
    );
    env.orchestra(&["up", "all"]).ok();
    let mut failures = Vec::new();
    let argv_file = upstream_out.with_extension("argv");
    if wait_until(Duration::from_secs(10), || argv_file.exists()) {
        failures.extend(check_argv(&argv_file, &words, "agent_args").err());
    } else {
        failures.push("the upstream agent never started".to_string());
    }
    failures.extend(tmux_command_ran(&env));
    // The dependency: the artifact appears, a status tick runs the brief.
    let down_pane = env.session("down1")["pane"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(wait_until(Duration::from_secs(10), || env
        .tmux(&["capture-pane", "-p", "-t", &down_pane])
        .contains("recorder ready")));
    std::fs::write(folder.join("ready.txt"), "").expect("artifact");
    env.orchestra(&["status"]);
    failures.extend(
        check_arrival(
            &downstream_out,
            brief_text.as_bytes(),
            "the brief of a dependency",
            Duration::from_secs(15),
        )
        .err(),
    );
    failures.extend(nothing_ran(&env.root));
    all_ok(failures);
}

/// A tmux session name holding tmux or shell syntax: refused, or used as the literal name
/// it is. Nothing in it runs.
#[test]
fn manifest_hostile_tmux_names_run_nothing() {
    let env = Env::new();
    env.start_server(&[]);
    let mut failures = Vec::new();
    let hostile = format!(
        "x #(touch {}) $HOME %%",
        env.root.join("pwned-name").display()
    );
    let plain = env.root.join("plain");
    std::fs::create_dir_all(&plain).expect("folder");
    // The name.
    write_manifest(
        &env,
        &format!(
            "[sessions.named]\npath = {}\ntmux = {}\nagent_args = \"-c 'sleep 60'\"\n",
            q(&plain.to_string_lossy()),
            q(&hostile)
        ),
    );
    let before = world(&env);
    let run = env.orchestra(&["up", "named"]);
    if run.code == 0 {
        let sessions = world(&env).tmux_sessions;
        if !sessions.contains(&hostile) {
            failures.push(format!(
                "tmux name {hostile:?} became {sessions:?}: not the name as written"
            ));
        }
        env.orchestra(&["down", "named"]);
    } else {
        failures.extend(refused_cleanly(&env, &run, &before, "a hostile tmux name").err());
    }
    failures.extend(nothing_ran(&env.root));
    all_ok(failures);
}

/// A folder whose name holds tmux and shell syntax: the agent starts in it, nothing in
/// its name runs.
#[test]
fn manifest_hostile_folders_run_nothing() {
    let env = Env::new();
    env.start_server(&[]);
    let mut failures = Vec::new();
    let folder = env.root.join(format!(
        "dir #(touch {}) $HOME",
        env.root.join("pwned-path").display()
    ));
    std::fs::create_dir_all(&folder).expect("hostile folder");
    write_manifest(
        &env,
        &format!(
            "[sessions.folder]\npath = {}\nagent_args = \"-c 'sleep 60'\"\n",
            q(&folder.to_string_lossy())
        ),
    );
    let before = world(&env);
    let run = env.orchestra(&["up", "folder"]);
    if run.code == 0 {
        let pane = env.session("folder")["pane"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let cwd = env.tmux(&["display-message", "-p", "-t", &pane, "#{pane_current_path}"]);
        if Path::new(cwd.trim()) != folder {
            failures.push(format!(
                "the agent runs in {:?}, not {}",
                cwd.trim(),
                folder.display()
            ));
        }
    } else {
        failures.extend(refused_cleanly(&env, &run, &before, "a hostile folder").err());
    }
    failures.extend(nothing_ran(&env.root));
    all_ok(failures);
}

/// A repo whose folder name holds tmux and shell syntax: dispatch works in it (the
/// worktree folder carries the same name) and runs nothing from it.
#[test]
fn dispatch_in_a_repo_folder_named_like_a_command_runs_nothing() {
    let env = Env::new();
    env.start_server(&[]);
    let repo = env.root.join(format!(
        "proj #(touch {}) $HOME",
        env.root.join("pwned-repo").display()
    ));
    std::fs::create_dir_all(&repo).expect("repo folder");
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["config", "user.name", "Test"],
        &["config", "user.email", "test@example.com"],
        &["commit", "-q", "--allow-empty", "-m", "initial"],
    ] {
        crate::harness::git_in(&repo, args);
    }
    let out = env.root.join("received-repo");
    let run = env.orchestra_in(
        &repo,
        &[
            "dispatch",
            "inside",
            "--kind",
            "generic",
            "--agent",
            &recorder_agent(&env, &out),
            "--prompt",
            "hello",
        ],
    );
    let mut failures = Vec::new();
    if run.code == 0 {
        let session = env.orchestra_in(&repo, &["list", "--json"]).ok().stdout;
        let rows: Vec<serde_json::Value> = serde_json::from_str(&session).expect("JSON");
        let pane = rows[0]["pane"].as_str().unwrap_or_default().to_string();
        let worktree = rows[0]["worktree"].as_str().unwrap_or_default().to_string();
        let cwd = env.tmux(&["display-message", "-p", "-t", &pane, "#{pane_current_path}"]);
        if cwd.trim() != worktree {
            failures.push(format!(
                "the agent runs in {:?}, not {worktree:?}",
                cwd.trim()
            ));
        }
        failures.extend(check_arrival(&out, b"hello", "prompt", Duration::from_secs(10)).err());
    } else {
        failures.push(format!(
            "dispatch refused a repo for its folder name: {}",
            run.stderr
        ));
    }
    failures.extend(nothing_ran(&env.root));
    all_ok(failures);
}

/// Texts a terminal acts on: what a hostile session puts in its commit subjects, its file
/// names and its files, so that a person reads less than the branch holds. (No NUL: git
/// refuses one in a commit message, and the kernel in a file name.)
fn escape_corpus() -> Vec<(&'static str, String)> {
    vec![
        ("cursor up, erase line", "\u{1b}[1A\u{1b}[2K".to_string()),
        (
            "erase two lines",
            "\u{1b}[1A\u{1b}[2K\u{1b}[1A\u{1b}[2K".to_string(),
        ),
        ("clear screen", "\u{1b}[2J\u{1b}[H".to_string()),
        (
            "OSC 52 clipboard",
            "\u{1b}]52;c;cm0gLXJmIH4K\u{7}".to_string(),
        ),
        ("carriage return", "shown\rhidden".to_string()),
        ("backspace", "abc\u{8}\u{8}\u{8}xyz".to_string()),
        ("bidi override", "\u{202e}gnp.exe".to_string()),
        ("C1 CSI", "\u{9b}2J".to_string()),
        ("DEL and BEL", "a\u{7f}\u{7}b".to_string()),
        ("newline", "one\n  0000000000 two".to_string()),
    ]
}

/// The characters in `text` a terminal would act on (a line break aside); in a `diff`,
/// tabs and colour codes (`ESC[…m`) are allowed.
fn raw_controls(text: &str, diff: bool) -> Vec<String> {
    let mut found = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\u{1b}' && diff && chars.get(i + 1) == Some(&'[') {
            let mut j = i + 2;
            while chars
                .get(j)
                .is_some_and(|d| d.is_ascii_digit() || *d == ';')
            {
                j += 1;
            }
            if chars.get(j) == Some(&'m') {
                i = j + 1;
                continue;
            }
        }
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if (c.is_control() && c != '\n' && !(diff && c == '\t')) || bidi {
            let around: String = chars[i.saturating_sub(10)..(i + 10).min(chars.len())]
                .iter()
                .collect();
            found.push(format!("{c:?} in {around:?}"));
        }
        i += 1;
    }
    found
}

/// A session `label` that commits the escape corpus: a file named by each text (holding
/// it, and `content`) in a commit whose subject holds it; a subject of 3,000 characters;
/// one that is not UTF-8. Returns the commit ids and the file names' visible markers.
fn hostile_commits(env: &Env, label: &str, content: &str) -> (Vec<String>, Vec<String>) {
    env.dispatch_shell(label).ok();
    let wt = env.worktree_path(label);
    let mut markers = Vec::new();
    for (i, (_, text)) in escape_corpus().iter().enumerate() {
        let name = format!("f{i}-{text}");
        std::fs::write(wt.join(&name), format!("{content} {text}\n")).expect("write");
        git_in(&wt, &["add", "--", &name]);
        git_in(&wt, &["commit", "-q", "-m", &format!("c{i}-{text}")]);
        markers.push(format!("f{i}-"));
    }
    std::fs::write(wt.join("f-long"), format!("{content}\n")).expect("write");
    git_in(&wt, &["add", "f-long"]);
    git_in(&wt, &["commit", "-q", "-m", &"L".repeat(3000)]);
    markers.push("f-long".into());
    let message = env.root.join(format!("message-{label}"));
    std::fs::write(&message, b"c-bad \xff\xfe subject\n").expect("write");
    std::fs::write(wt.join("f-bad"), format!("{content}\n")).expect("write");
    git_in(&wt, &["add", "f-bad"]);
    git_in(&wt, &["commit", "-q", "-F", &message.to_string_lossy()]);
    markers.push("f-bad".into());
    let ids = git_in(&wt, &["rev-list", "main..HEAD"])
        .lines()
        .map(str::to_string)
        .collect();
    (ids, markers)
}

/// What `merge` says before its question: the counts true, then every commit and every
/// file on a line of its own, nothing a terminal acts on.
fn check_merge_listing(text: &str, ids: &[String], markers: &[String]) -> Vec<String> {
    let mut failures: Vec<String> = raw_controls(text, false)
        .into_iter()
        .map(|c| format!("merge printed {c}"))
        .collect();
    let counts = format!("{} commit(s), {} file(s)", ids.len(), markers.len());
    if !text.contains(&counts) {
        failures.push(format!("merge did not say {counts:?}: {}", cut(text)));
    }
    let listed = text.lines().filter(|l| l.starts_with("  ")).count();
    if listed != ids.len() + markers.len() {
        failures.push(format!(
            "merge listed {listed} lines, want {} commits and {} files: {}",
            ids.len(),
            markers.len(),
            cut(text)
        ));
    }
    for id in ids {
        if !text
            .lines()
            .any(|l| l.starts_with(&format!("  {}", &id[..10])))
        {
            failures.push(format!("merge did not list commit {id}"));
        }
    }
    for marker in markers {
        if !text.lines().any(|l| l.starts_with(&format!("  {marker}"))) {
            failures.push(format!("merge did not list file {marker}…"));
        }
    }
    failures
}

#[test]
fn a_hostile_branch_is_counted_and_listed_in_full_before_the_merge_question() {
    let env = Env::new();
    env.start_server(&[]);
    let (ids, markers) = hostile_commits(&env, "hostile", "hostile");
    let mut failures = Vec::new();

    // Asked with no terminal: the listing comes out, then the refusal.
    let run = env.orchestra(&["merge", "hostile"]);
    if run.code != 1 {
        failures.push(format!("merge without a terminal exited {}", run.code));
    }
    failures.extend(check_merge_listing(&run.stdout, &ids, &markers));
    failures.extend(
        raw_controls(&run.stderr, false)
            .into_iter()
            .map(|c| format!("merge's stderr holds {c}")),
    );

    // On a real terminal, as the person reads it at [y/N].
    let pane = env.run_in_window(&format!(
        "{} merge hostile; echo \"exit=$?\"; sleep 60",
        bin()
    ));
    let screen = || env.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", &pane]);
    assert!(
        wait_until(Duration::from_secs(10), || screen().contains("[y/N]")),
        "{}",
        screen()
    );
    let shown = screen();
    failures.extend(
        check_merge_listing(&shown, &ids, &markers)
            .into_iter()
            .map(|f| format!("on screen: {f}")),
    );
    env.tmux(&["send-keys", "-t", &pane, "n", "Enter"]);
    assert!(wait_until(Duration::from_secs(10), || screen().contains("exit=1")));
    assert_eq!(env.session("hostile")["status"], "running");
    all_ok(failures);
}

#[test]
fn a_hostile_branch_is_reviewed_inert_in_a_pipe_and_on_a_terminal() {
    let env = Env::new();
    env.start_server(&[]);
    let (ids, markers) = hostile_commits(&env, "hostile", "hostile");
    let mut failures = Vec::new();

    let run = env.orchestra(&["review", "hostile"]);
    if run.code != 0 {
        failures.push(format!("review exited {}: {}", run.code, run.stderr));
    }
    failures.extend(
        raw_controls(&run.stdout, true)
            .into_iter()
            .map(|c| format!("review printed {c}")),
    );
    if run.stdout.contains('\u{1b}') {
        failures.push("review in a pipe is coloured".into());
    }
    for id in &ids {
        if !run.stdout.contains(&id[..7]) {
            failures.push(format!("review did not show commit {id}"));
        }
    }
    for marker in &markers {
        if !run.stdout.contains(&format!("+++ b/{marker}"))
            && !run.stdout.contains(&format!("+++ \"b/{marker}"))
        {
            failures.push(format!("review's diff did not show file {marker}…"));
        }
    }

    // On a terminal the diff is coloured: by orchestra, with nothing else in it. The
    // pager is `tee`, so what the terminal got is also kept.
    let kept = env.root.join("reviewed.txt");
    let pane = env.run_in_window(&format!(
        "PAGER='tee {}' {} review hostile; echo \"exit=$?\"; sleep 60",
        kept.display(),
        bin()
    ));
    let screen = || env.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", &pane]);
    assert!(
        wait_until(Duration::from_secs(10), || screen().contains("exit=")),
        "{}",
        screen()
    );
    let coloured = String::from_utf8_lossy(&std::fs::read(&kept).unwrap_or_default()).into_owned();
    if !coloured.contains("\u{1b}[32m+") {
        failures.push(format!(
            "review on a terminal is not coloured: {}",
            cut(&coloured)
        ));
    }
    failures.extend(
        raw_controls(&coloured, true)
            .into_iter()
            .map(|c| format!("review on a terminal printed {c}")),
    );
    if !screen().contains("exit=0") {
        failures.push(format!("review on a terminal failed: {}", cut(&screen())));
    }
    all_ok(failures);
}

#[test]
fn hostile_paths_are_shown_inert_in_list_health_watch_status_and_conflicts() {
    let env = Env::new();
    env.start_server(&[]);
    // Two sessions changing the same hostile files differently: the radar's pairs name
    // every one of them.
    let (_, markers) = hostile_commits(&env, "hostile", "hostile");
    hostile_commits(&env, "other", "other");
    let mut failures = Vec::new();
    let pairs = env.orchestra(&["conflicts"]);
    if !pairs.stdout.contains("hostile") || !pairs.stdout.contains(&markers[0]) {
        failures.push(format!("conflicts shows no pair: {}", cut(&pairs.stdout)));
    }
    // JSON stays JSON, and says the names exactly as they are.
    let json: serde_json::Value =
        serde_json::from_str(&env.orchestra(&["conflicts", "--json"]).ok().stdout)
            .expect("conflicts --json is JSON");
    let paths: Vec<String> = json
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|pair| pair["paths"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p.as_str().map(str::to_string))
        .collect();
    for (i, (what, text)) in escape_corpus().iter().enumerate() {
        if !paths.contains(&format!("f{i}-{text}")) {
            failures.push(format!(
                "conflicts --json lacks the file named by {what}: {paths:?}"
            ));
        }
    }
    for args in [vec!["list", "--json"], vec!["status", "--json"]] {
        let run = env.orchestra(&args);
        if serde_json::from_str::<serde_json::Value>(&run.stdout).is_err() {
            failures.push(format!("{args:?} is not JSON: {}", cut(&run.stdout)));
        }
    }
    for (what, args) in [
        ("conflicts", vec!["conflicts"]),
        ("list", vec!["list"]),
        ("list --all", vec!["list", "--all"]),
        ("health", vec!["health"]),
        ("status", vec!["status"]),
        ("watch", vec!["watch", "--count", "1"]),
    ] {
        let run = env.orchestra(&args);
        if run.code != 0 {
            failures.push(format!("{what} exited {}: {}", run.code, run.stderr));
        }
        // The dashboard's own cursor moves and clears are its only escapes.
        let stdout = if what == "watch" {
            run.stdout
                .replace("\u{1b}[H", "")
                .replace("\u{1b}[2K", "")
                .replace("\u{1b}[J", "")
        } else {
            run.stdout.clone()
        };
        for (stream, text) in [("stdout", &stdout), ("stderr", &run.stderr)] {
            failures.extend(
                raw_controls(text, false)
                    .into_iter()
                    .map(|c| format!("{what} printed on {stream} {c}")),
            );
        }
    }
    all_ok(failures);
}
