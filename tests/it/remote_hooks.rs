//! Hook-exact remote states over a real `sshd` on 127.0.0.1 (the harness's: throwaway
//! keys, the remote side's own HOME and TMUX_TMPDIR): `hosts install` copies this very
//! binary to the "remote" ~/.local/bin, a remote claude (the real CLI against the
//! stand-in API) then says its states through hooks calling that copy, and its screen
//! takes over when the copy is gone or another version.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use crate::harness::{
    remote_folder, trusted_sshd_world as world, wait_until, write_script, Bus, ClaudeWorld, Env,
    Sshd,
};
use crate::remote::{claude_session, write_manifest};

fn remote_bin(sshd: &Sshd) -> PathBuf {
    sshd.remote_home().join(".local/bin/orchestra")
}

/// `label`'s state and who said it, after a live refresh (`status` refreshes each host).
fn said(env: &Env, label: &str) -> (String, String) {
    env.orchestra(&["status", "--json"]).ok();
    let s = env.session(label);
    (
        s["state"].as_str().unwrap_or_default().to_string(),
        s["state_source"].as_str().unwrap_or_default().to_string(),
    )
}

/// Waits until `label` is idle by its hook's word, failing with its screen if it never is.
fn idle_by_its_hook(env: &Env, label: &str) {
    assert!(
        wait_until(Duration::from_secs(30), || said(env, label)
            == ("idle".into(), "hook".into())),
        "never idle by the hook: {:?}\n{}",
        said(env, label),
        env.orchestra(&["tail", label, "40"]).stdout
    );
}

#[test]
fn a_remote_claude_on_an_installed_host_says_its_states_by_hooks_then_by_screen_without_the_binary()
{
    let Some((mut env, sshd)) = world() else {
        return;
    };
    // No bus here: notifications go to the notify command, a script writing them down.
    env.without_bus();
    env.start_server(&[]);
    let notes = env.notes_to_file();
    let waiting_notes = || {
        std::fs::read_to_string(&notes)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("pipeline is waiting"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let project = remote_folder(&env, "remote-project");
    let Some(world) = ClaudeWorld::start(&env, &[project.as_path()]) else {
        return;
    };
    write_manifest(
        &env,
        &sshd,
        &world.claude.to_string_lossy(),
        &claude_session(&world, &project, ""),
    );
    let installed = env.orchestra(&["hosts", "install", "gpu"]).ok();
    assert!(
        installed
            .stdout
            .contains("gpu: installed orchestra 0.1.0 at ~/.local/bin/orchestra"),
        "{}",
        installed.stdout
    );
    let bin = remote_bin(&sshd);
    let mode = std::fs::metadata(&bin)
        .expect("copied")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(
        std::fs::read(&bin).expect("copy"),
        std::fs::read(crate::harness::bin()).expect("this binary"),
        "the copy is this binary, byte for byte"
    );
    // Idempotent: the same version is not copied again.
    let before = std::fs::metadata(&bin).unwrap().modified().unwrap();
    let again = env.orchestra(&["hosts", "install", "gpu"]).ok();
    assert!(again.stdout.contains("already"), "{}", again.stdout);
    assert_eq!(std::fs::metadata(&bin).unwrap().modified().unwrap(), before);

    let up = env.orchestra(&["up"]).ok();
    assert!(up.stderr.is_empty(), "{}", up.stderr);
    let id = env.session("pipeline")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let remote_state_home = sshd.remote_home().join(".local/state/orchestra");
    let settings = remote_state_home.join(format!("sessions/{id}/settings.json"));
    let text = std::fs::read_to_string(&settings).expect("hook settings on the host");
    assert!(
        text.contains(&format!(
            "{} event --from-hook --remote Stop",
            remote_bin(&sshd).display()
        )),
        "{text}"
    );
    let tail = |n: &str| env.orchestra(&["tail", "pipeline", n]).stdout;
    assert!(
        wait_until(Duration::from_secs(30), || tail("40")
            .lines()
            .any(|l| l.trim_end() == "❯" || l.starts_with("❯ "))),
        "claude never drew its prompt:\n{}",
        tail("40")
    );
    env.orchestra(&["brief", "pipeline", "[[bash: touch made-remotely.txt]]"])
        .ok();
    assert!(
        wait_until(Duration::from_secs(30), || said(&env, "pipeline")
            == ("waiting".into(), "hook".into())),
        "never waiting by the hook: {:?}\n{}",
        said(&env, "pipeline"),
        tail("30")
    );
    // The word was left on the host, by the host's orchestra, with what it asks: the
    // notification names the command, as a local session's does.
    let word = remote_state_home.join(format!("remote-states/{id}.json"));
    assert!(word.is_file(), "no word at {}", word.display());
    assert!(
        wait_until(Duration::from_secs(10), || waiting_notes().iter().any(
            |n| n.contains("pipeline wants to run: touch made-remotely.txt")
        )),
        "{:?}",
        waiting_notes()
    );
    assert!(!project.join("made-remotely.txt").exists());
    env.orchestra(&["approve", "pipeline"]).ok();
    assert!(
        wait_until(Duration::from_secs(30), || said(&env, "pipeline")
            == ("idle".into(), "hook".into())),
        "never idle by the hook: {:?}\n{}",
        said(&env, "pipeline"),
        tail("30")
    );
    assert!(project.join("made-remotely.txt").exists());
    // The words and the version came with the panes and screens: a refresh whose badges
    // are unchanged is one exec (sshd says each command it starts).
    let execs = || {
        std::fs::read_to_string(sshd.dir.join("sshd.log"))
            .unwrap_or_default()
            .matches("Starting session: command")
            .count()
    };
    env.orchestra(&["refresh", "--remote"]).ok();
    let before = execs();
    env.orchestra(&["refresh", "--remote"]).ok();
    assert_eq!(execs() - before, 1, "one exec per refresh");
    let health = env.orchestra(&["health"]).ok().stdout;
    let row = health
        .lines()
        .find(|l| l.contains("pipeline"))
        .unwrap_or_else(|| panic!("{health}"));
    assert!(row.contains("hook"), "SAID BY hook: {row}");

    // Without the host's binary the hooks say nothing (and never block claude): the
    // screen tells the states again.
    std::fs::remove_file(remote_bin(&sshd)).expect("remove the remote binary");
    env.orchestra(&["brief", "pipeline", "[[bash: touch second.txt]]"])
        .ok();
    assert!(
        wait_until(Duration::from_secs(30), || said(&env, "pipeline")
            == ("waiting".into(), "screen".into())),
        "never waiting by the screen: {:?}\n{}",
        said(&env, "pipeline"),
        tail("30")
    );
    // Read off the screen, what it asks still names the command.
    assert!(
        wait_until(Duration::from_secs(10), || waiting_notes()
            .iter()
            .any(|n| n.contains("pipeline wants to run: touch second.txt"))),
        "{:?}",
        waiting_notes()
    );
    env.orchestra(&["approve", "pipeline"]).ok();
    assert!(
        wait_until(Duration::from_secs(30), || said(&env, "pipeline")
            == ("idle".into(), "screen".into())),
        "never idle by the screen: {:?}\n{}",
        said(&env, "pipeline"),
        tail("30")
    );
    assert!(project.join("second.txt").exists());
    let screen = tail("40");
    assert!(!screen.contains("hook error"), "{screen}");

    env.orchestra(&["down"]).ok();
    assert!(
        !settings.exists(),
        "down takes the session's settings off the host"
    );
}

/// A remote claude session `pipeline` working in a folder `remote-project` (returned, with
/// its world), on a host with this orchestra installed, brought up; `None` when the
/// claude CLI is not here (and not required).
fn installed_and_up(env: &Env, sshd: &Sshd) -> Option<(PathBuf, ClaudeWorld)> {
    let project = remote_folder(env, "remote-project");
    let world = ClaudeWorld::start(env, &[project.as_path()])?;
    write_manifest(
        env,
        sshd,
        &world.claude.to_string_lossy(),
        &claude_session(&world, &project, ""),
    );
    env.orchestra(&["hosts", "install", "gpu"]).ok();
    let up = env.orchestra(&["up"]).ok();
    assert!(up.stderr.is_empty(), "{}", up.stderr);
    Some((project, world))
}

/// What the process in the remote pane of `label` was started with.
fn remote_cmdline(env: &Env, sshd: &Sshd, label: &str) -> String {
    let pane = env.session(label)["pane"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let pid = sshd
        .remote_tmux(&["display-message", "-p", "-t", &pane, "#{pane_pid}"])
        .stdout;
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", pid.trim())).unwrap_or_default();
    String::from_utf8_lossy(&cmdline).replace('\0', " ")
}

#[test]
fn a_clear_on_a_remote_claude_moves_what_its_restart_resumes() {
    let Some((env, sshd)) = world() else { return };
    let Some((_project, _world)) = installed_and_up(&env, &sshd) else {
        return;
    };
    let conversation = || {
        env.orchestra(&["status", "--json"]).ok();
        env.session("pipeline")["conversation"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let first = conversation();
    assert_eq!(
        first.len(),
        36,
        "up gave claude a conversation id: {first:?}"
    );
    let tail = || env.orchestra(&["tail", "pipeline", "40"]).stdout;
    idle_by_its_hook(&env, "pipeline");
    env.orchestra(&["brief", "pipeline", "/clear"]).ok();
    assert!(
        wait_until(Duration::from_secs(30), || conversation() != first),
        "the remote /clear never moved the conversation from {first}:\n{}",
        tail()
    );
    let second = conversation();
    assert_eq!(second.len(), 36, "{second}");
    // restart (down, then up) resumes the conversation it was in, not the first one.
    env.orchestra(&["restart", "pipeline"]).ok();
    let resumed = format!("--resume {second}");
    assert!(
        wait_until(Duration::from_secs(20), || remote_cmdline(
            &env, &sshd, "pipeline"
        )
        .contains(&resumed)),
        "{}",
        remote_cmdline(&env, &sshd, "pipeline")
    );
    env.orchestra(&["down"]).ok();
}

/// Approve on a remote session's waiting notification (a bus whose server shows actions)
/// answers the menu on the host, through the same code as `approve`; a remote window
/// cannot be opened here, so Open is not offered.
#[test]
fn approve_on_a_remote_waiting_notification_runs_the_tool_on_the_host() {
    let Some((mut env, sshd)) = world() else {
        return;
    };
    let Some(bus) = Bus::with_actions(&env.root) else {
        return;
    };
    env.env
        .push(("DBUS_SESSION_BUS_ADDRESS".into(), bus.address.clone()));
    let Some((project, _world)) = installed_and_up(&env, &sshd) else {
        return;
    };
    let tail = || env.orchestra(&["tail", "pipeline", "40"]).stdout;
    assert!(
        wait_until(Duration::from_secs(30), || said(&env, "pipeline").0
            == "idle"),
        "never idle: {:?}\n{}",
        said(&env, "pipeline"),
        tail()
    );
    env.orchestra(&["brief", "pipeline", "[[bash: touch approved-remotely.txt]]"])
        .ok();
    assert!(
        wait_until(Duration::from_secs(30), || said(&env, "pipeline").0
            == "waiting"),
        "never waiting: {:?}\n{}",
        said(&env, "pipeline"),
        tail()
    );
    let note = bus.wait_note("pipeline is waiting", Duration::from_secs(10));
    assert_eq!(
        note["actions"],
        serde_json::json!(["approve", "Approve", "deny", "Deny"]),
        "{note}"
    );
    assert!(
        note["body"]
            .as_str()
            .unwrap_or_default()
            .contains("pipeline wants to run: touch approved-remotely.txt"),
        "{note}"
    );
    let made = project.join("approved-remotely.txt");
    assert!(!made.exists(), "nothing ran before the person said so");
    bus.press(note["id"].as_u64().expect("id"), "approve");
    assert!(
        wait_until(Duration::from_secs(30), || made.exists()),
        "the approved command did not run on the host:\n{}",
        tail()
    );
    env.orchestra(&["down"]).ok();
}

#[test]
fn a_host_of_another_architecture_is_refused_naming_what_to_build() {
    let Some((env, sshd)) = world() else { return };
    write_manifest(&env, &sshd, "cat", "");
    // A stand-in `uname`, first on the remote PATH: this machine cannot become another
    // architecture, so the host pretends to be one.
    let fake = remote_folder(&env, "fake-uname");
    let other = if std::env::consts::ARCH == "aarch64" {
        "x86_64"
    } else {
        "aarch64"
    };
    write_script(
        &fake.join("uname"),
        &format!("#!/bin/sh\necho 'Linux {other}'\n"),
    );
    sshd.prepend_remote_path(&fake);
    let refused = env.orchestra(&["hosts", "install", "gpu"]).fails_with(1);
    assert!(
        refused.stderr.contains(&format!(
            "gpu is Linux {other}; this orchestra is Linux {}: build one for \
             {other}-unknown-linux-gnu and copy it to ~/.local/bin/orchestra",
            std::env::consts::ARCH
        )),
        "{}",
        refused.stderr
    );
    assert!(
        !sshd.remote_home().join(".local/bin").exists(),
        "nothing copied"
    );
}

#[test]
fn an_unknown_host_name_is_bad_input_and_copies_nothing() {
    let Some((env, sshd)) = world() else { return };
    write_manifest(&env, &sshd, "cat", "");
    let refused = env.orchestra(&["hosts", "install", "nope"]).fails_with(2);
    assert!(
        refused.stderr.contains("\"nope\" is not a [hosts.*] entry"),
        "{}",
        refused.stderr
    );
    assert!(
        !sshd.remote_home().join(".local").exists(),
        "nothing copied"
    );
}

#[test]
fn version_skew_is_reported_and_the_screen_keeps_telling() {
    let Some((env, sshd)) = world() else { return };
    let project = remote_folder(&env, "p");
    // A program named claude (so `up` treats it as claude) that is only `cat`: enough to
    // see which settings it gets, with no CLI to start.
    let claude = project.join("claude");
    write_script(&claude, "#!/bin/sh\nexec cat\n");
    write_manifest(
        &env,
        &sshd,
        &claude.to_string_lossy(),
        &format!(
            "[sessions.pipeline]\nhost = \"gpu\"\npath = '{}'\n",
            project.display()
        ),
    );
    env.orchestra(&["hosts", "install", "gpu"]).ok();
    // The host's binary is replaced by one of another version.
    write_script(&remote_bin(&sshd), "#!/bin/sh\necho 'orchestra 0.0.1'\n");
    let skew = "gpu runs orchestra 0.0.1, this is orchestra 0.1.0: its states come from \
                screens (orchestra hosts install gpu --force)";
    let up = env.orchestra(&["up"]).ok();
    assert!(up.stderr.contains(skew), "{}", up.stderr);
    let start = |sshd: &Sshd| {
        sshd.remote_tmux(&["list-panes", "-a", "-F", "#{pane_start_command}"])
            .ok()
            .stdout
    };
    assert!(!start(&sshd).contains("--settings"), "{}", start(&sshd));
    let status = env.orchestra(&["status"]).ok().stdout;
    assert!(status.contains(&format!("gpu: {skew}")), "{status}");
    let row = status
        .lines()
        .find(|l| l.starts_with("pipeline"))
        .unwrap_or_else(|| panic!("{status}"));
    assert!(
        row.contains("reachable") && row.contains("running"),
        "{row}"
    );
    let health = env.orchestra(&["health"]).ok().stdout;
    assert!(health.contains(skew), "{health}");

    // Installing again (no --force needed: the versions differ) settles it; the next up
    // gets the hooks.
    env.orchestra(&["hosts", "install", "gpu"]).ok();
    let status = env.orchestra(&["status"]).ok().stdout;
    assert!(!status.contains("runs orchestra"), "{status}");
    env.orchestra(&["down"]).ok();
    let up = env.orchestra(&["up"]).ok();
    assert!(up.stderr.is_empty(), "{}", up.stderr);
    assert!(start(&sshd).contains("--settings"), "{}", start(&sshd));
    env.orchestra(&["down"]).ok();
}

/// An upload the host does not receive whole or intact never replaces the working binary
/// there, and neither does one it cannot check: each is refused in one line naming why,
/// the old binary left as it was and no temporary file behind. The host runs its own
/// tools from a folder of links (its whole PATH), where a stand-in `cat` receives the
/// upload as a dropped connection or a garbling link would deliver it; and this side is
/// killed with SIGKILL mid-upload.
#[test]
fn an_upload_cut_short_changed_or_unchecked_never_replaces_a_working_binary() {
    let Some((env, sshd)) = world() else { return };
    write_manifest(&env, &sshd, "cat", "");
    let bin = remote_bin(&sshd);
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    // A working orchestra of another version: install copies over it.
    write_script(&bin, "#!/bin/sh\necho 'orchestra 0.0.1'\n");
    let old = std::fs::read(&bin).unwrap();
    let tools = remote_folder(&env, "host-tools");
    for tool in [
        "sh",
        "uname",
        "head",
        "mkdir",
        "wc",
        "tr",
        "chmod",
        "mv",
        "rm",
        "sha256sum",
    ] {
        let real = crate::harness::which(tool).unwrap_or_else(|| panic!("{tool} on PATH"));
        std::os::unix::fs::symlink(real, tools.join(tool)).unwrap();
    }
    let real_cat = crate::harness::which("cat").expect("cat");
    let real_tr = crate::harness::which("tr").expect("tr");
    std::os::unix::fs::symlink(&real_cat, tools.join("cat")).unwrap();
    sshd.set_remote_path(&tools.to_string_lossy());
    let size = std::fs::metadata(crate::harness::bin()).unwrap().len();
    let dir = bin.parent().unwrap().to_path_buf();
    let temporary = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with(".orchestra."))
            .map(|e| e.path())
    };

    // orchestra killed (-9) while the upload is on its way.
    let mut installing = env
        .orchestra_command(&env.repo, &["hosts", "install", "gpu", "--force"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("hosts install");
    assert!(
        wait_until(Duration::from_secs(60), || temporary()
            .and_then(|t| std::fs::metadata(t).ok())
            .is_some_and(|m| m.len() > 0)),
        "the upload never began"
    );
    installing.kill().expect("kill -9");
    installing.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || temporary().is_none()),
        "the half upload stayed: {:?}",
        temporary()
    );
    assert_eq!(
        std::fs::read(&bin).unwrap(),
        old,
        "killed mid-upload: replaced"
    );
    let cases = [
        // The connection drops after 4 KiB: the host's input just ends.
        (
            format!(
                "#!/bin/sh\nhead -c 4096\nexec {} > /dev/null\n",
                real_cat.display()
            ),
            format!("the upload was cut short (4096 of {size} bytes arrived)"),
        ),
        // Every byte arrives, some of them changed.
        (
            format!("#!/bin/sh\nexec {} '\\000' '\\001'\n", real_tr.display()),
            "the upload arrived changed (its SHA-256 is not the binary's)".to_string(),
        ),
    ];
    let install_refused = |why: &str| {
        let refused = env
            .orchestra(&["hosts", "install", "gpu", "--force"])
            .fails_with(1);
        assert!(
            refused.stderr.contains(&format!(
                "gpu: not installed, ~/.local/bin/orchestra is left as it was: {why}"
            )),
            "{}",
            refused.stderr
        );
        assert_eq!(
            std::fs::read(&bin).unwrap(),
            old,
            "{why}: the old binary was replaced"
        );
        let left: Vec<_> = std::fs::read_dir(bin.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, [std::ffi::OsString::from("orchestra")], "{why}");
    };
    for (cat, why) in &cases {
        std::fs::remove_file(tools.join("cat")).unwrap();
        write_script(&tools.join("cat"), cat);
        install_refused(why);
    }
    // The whole upload, but nothing on the host to check it with.
    std::fs::remove_file(tools.join("cat")).unwrap();
    std::os::unix::fs::symlink(&real_cat, tools.join("cat")).unwrap();
    std::fs::remove_file(tools.join("sha256sum")).unwrap();
    install_refused("the host has no sha256sum, shasum or sha256 to check the upload with");

    // Whole, intact and checked: installed.
    std::os::unix::fs::symlink(
        crate::harness::which("sha256sum").unwrap(),
        tools.join("sha256sum"),
    )
    .unwrap();
    let installed = env.orchestra(&["hosts", "install", "gpu"]).ok();
    assert!(
        installed.stdout.contains("installed orchestra 0.1.0"),
        "{}",
        installed.stdout
    );
    assert_eq!(
        std::fs::read(&bin).unwrap(),
        std::fs::read(crate::harness::bin()).unwrap()
    );
}

/// No time from outside is trusted past now + skew: a word on the host stamped at 9e18
/// µs (a stepped clock, a file written by hand) neither freezes the session here nor
/// makes the host refuse the hooks' later words.
#[test]
fn a_remote_word_from_the_far_future_freezes_nothing() {
    let Some((env, sshd)) = world() else { return };
    let Some((_project, _world)) = installed_and_up(&env, &sshd) else {
        return;
    };
    let tail = || env.orchestra(&["tail", "pipeline", "40"]).stdout;
    idle_by_its_hook(&env, "pipeline");
    let id = env.session("pipeline")["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let word = sshd
        .remote_home()
        .join(format!(".local/state/orchestra/remote-states/{id}.json"));
    std::fs::write(
        &word,
        r#"{"state":"busy","at":9000000000000000000,"event":"UserPromptSubmit"}"#,
    )
    .unwrap();
    assert_eq!(
        said(&env, "pipeline"),
        ("idle".into(), "hook".into()),
        "a word from the future was believed"
    );
    env.orchestra(&["brief", "pipeline", "[[say: after the forged word]]"])
        .ok();
    assert!(
        wait_until(Duration::from_secs(30), || tail()
            .contains("after the forged word")
            && said(&env, "pipeline") == ("idle".into(), "hook".into())
            && std::fs::read_to_string(&word)
                .is_ok_and(|w| w.contains("\"Stop\""))),
        "{:?} {:?}\n{}",
        said(&env, "pipeline"),
        std::fs::read_to_string(&word),
        tail()
    );
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&word).unwrap()).unwrap();
    assert!(
        kept["at"].as_i64().unwrap_or(i64::MAX) < 9_000_000_000_000_000_000,
        "{kept}"
    );
    env.orchestra(&["down"]).ok();
}

/// A host is not trusted with what a person reads: a word left on it (by the host's
/// orchestra or anything else there) asking with an OSC 52 clipboard write, a screen clear,
/// line breaks and 3,000 characters reaches the notify command one line, inert, bounded.
#[test]
fn a_hostile_word_from_a_host_reaches_the_notify_command_one_short_inert_line() {
    let Some((mut env, sshd)) = world() else {
        return;
    };
    env.without_bus();
    env.start_server(&[]);
    let notes = env.notes_to_file();
    let Some((_project, _world)) = installed_and_up(&env, &sshd) else {
        return;
    };
    idle_by_its_hook(&env, "pipeline");
    let id = env.session("pipeline")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64;
    let asks = format!(
        "run: \u{1b}]52;c;cm0gLXJmIH4K\u{7}\u{1b}[2J\u{1b}[Hline one\nline two\r{}",
        "x".repeat(3000)
    );
    let word = serde_json::json!({
        "state": "waiting",
        "at": at,
        "event": "PermissionRequest",
        "asks": asks,
    });
    let words = sshd
        .remote_home()
        .join(".local/state/orchestra/remote-states");
    std::fs::write(words.join(format!("{id}.json")), word.to_string()).expect("write the word");
    env.orchestra(&["refresh", "--remote"]).ok();
    assert!(
        wait_until(Duration::from_secs(15), || std::fs::read_to_string(&notes)
            .unwrap_or_default()
            .contains("pipeline wants to")),
        "no note for the host's word: {:?}",
        std::fs::read_to_string(&notes)
    );
    std::thread::sleep(Duration::from_secs(1));
    let text = std::fs::read_to_string(&notes).unwrap();
    // The command writes `TITLE|BODY` and a line break: one line per note.
    let lines: Vec<&str> = text.lines().collect();
    let note = lines
        .iter()
        .find(|l| l.contains("pipeline wants to"))
        .expect("the note");
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
    assert!(
        note.starts_with("orchestra: pipeline is waiting"),
        "{text:?}"
    );
    assert!(note.contains("\\e]52;c;"), "{note}");
    assert!(note.contains("line one\\nline two"), "{note}");
    assert!(
        note.chars().count() < 600,
        "{} characters",
        note.chars().count()
    );
    assert!(!note.contains(&"x".repeat(500)), "{note}");
    env.orchestra(&["down"]).ok();
}
