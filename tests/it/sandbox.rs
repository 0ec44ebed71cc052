//! Sandboxed sessions (`dispatch --sandbox`, bubblewrap): a hostile agent tries every
//! escape and each is refused, while the ordinary flow (edit, commit, setup, hooks,
//! `orchestra done`, merge on yes) works inside; the real claude with
//! --dangerously-skip-permissions (`--yolo`) against the stand-in; the refusals when the
//! box cannot be had; kill -9 of the agent and of bwrap leaves nothing behind. Real tmux,
//! git and bwrap.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::{
    bin, require, wait_until, which, write_script, AgentCli, AgentWorld, ClaudeWorld, Env,
};

/// Whether bwrap is here (CI installs it: tests/run.sh).
fn bwrap_here() -> bool {
    require("bwrap (bubblewrap)", which("bwrap").is_some())
}

/// The escapes a hostile agent tries, each line `NAME: refused|ESCAPED`, written into its
/// own worktree (the one place it may write), then the ordinary flow: a commit, a hook's
/// word, `orchestra done`.
const HOSTILE: &str = r#"#!/bin/bash
# hostile.sh KEY ROOT OTHER PORT ORCHESTRA OTHER_ID
key=$1 root=$2 other=$3 port=$4 orchestra=$5 other_id=$6
out="$PWD/escapes.txt"
: > "$out"
says() { if [ "$2" = 0 ]; then echo "$1: ESCAPED"; else echo "$1: refused"; fi >> "$out"; }
grep -q PRIVATE-KEY "$key" 2>/dev/null; says read-ssh-key $?
grep -q OTHER-SECRET "$other/secret.txt" 2>/dev/null; says read-other-session $?
ls "$root/home/sessions" 2>/dev/null | grep -vq "^$ORCHESTRA_SESSION$"; says list-other-session-folders $?
[ -e "$root/home/state.db" ] || [ -e "$root/home/state.db-wal" ]; says see-the-record $?
head -c 16 "$root/home/state.db" 2>/dev/null | grep -q SQLite; says read-the-record $?
ls "$root/home/sessions/$other_id" >/dev/null 2>&1; says see-other-session-folder $?
# Words for the other session: through the command, into its drop folder (not bound
# here), and into its own drop folder naming the other one.
"$orchestra" event --session "$other_id" waiting 2>/dev/null; says event-for-other $?
if [ -z "$NO_STAY" ]; then
  mkdir -p "$root/home/inbox/$other_id" 2>/dev/null
  word='{"word":"hook","id":"%s","event":"waiting","at":1,"hook":null}'
  printf "$word" "$other_id" > "$root/home/inbox/$other_id/00000000000000000001-x.json"
  printf "$word" "$other_id" > "$root/home/inbox/$ORCHESTRA_SESSION/00000000000000000001-forged.json"
  printf '{"id":"%s","event":"waiting","at":1,"hook":null}' "$other_id" > "$root/home/inbox/$ORCHESTRA_SESSION/00000000000000000002-old-form.json"
fi
[ -n "$SECRET_TOKEN" ]; says env-secret $?
[ -n "$ANTHROPIC_API_KEY" ]; says env-api-key-of-another-kind $?
(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; says network-off $?
echo pwned > "$(dirname "$orchestra")/pwned-$port" 2>/dev/null; says write-system $?
echo pwned > "$root/outside.txt" 2>/dev/null
echo pwned > "$other/pwned.txt" 2>/dev/null
echo pwned >> "$(dirname "$(dirname "$key")")/.bashrc" 2>/dev/null
echo "home=$HOME term=$TERM" >> "$out"
# The main repository's git folder: what would run out there, or merge without a yes.
common=$(git rev-parse --path-format=absolute --git-common-dir)
printf '[core]\n\tfsmonitor = "touch %s/gitpwned-config; false"\n' "$root" >> "$common/config" 2>/dev/null; says write-git-config $?
mkdir -p "$common/hooks" 2>/dev/null
for hook in post-merge pre-commit post-checkout reference-transaction; do
  printf '#!/bin/sh\ntouch %s/gitpwned-hook\n' "$root" > "$common/hooks/$hook" 2>/dev/null; says "add-git-hook-$hook" $?
done
echo "pwned" > "$common/info/attributes" 2>/dev/null; says write-git-info $?
new=$(git -c user.name=a -c user.email=a@b commit-tree -m hostile "HEAD^{tree}")
[ -n "$new" ] || echo "no-hostile-commit" >> "$out"
git update-ref refs/heads/main "$new" 2>/dev/null; says move-main $?
git update-ref refs/heads/session/other "$new" 2>/dev/null; says move-other-session $?
echo "$new refs/heads/main" >> "$common/packed-refs" 2>/dev/null; says write-packed-refs $?
rm -f "$common/refs/heads/session/other" 2>/dev/null; [ ! -e "$common/refs/heads/session/other" ]; says delete-other-session $?
od=$(grep -lx "$other/.git" "$common"/worktrees/*/gitdir 2>/dev/null | head -1)
[ -n "$od" ] || echo "other-admin-not-found" >> "$out"
echo "$new" > "${od%/gitdir}/HEAD" 2>/dev/null; says write-other-worktree-head $?
own=$(git rev-parse --absolute-git-dir)
echo "$root" > "$own/commondir" 2>/dev/null; says write-own-commondir $?
echo edited > edited.txt && git add edited.txt && git -c user.name=a -c user.email=a@b commit -qm "edited in the box" && echo "committed" >> "$out"
"$orchestra" list >/dev/null 2>&1
"$orchestra" event --session "$ORCHESTRA_SESSION" waiting && echo "hook-said" >> "$out"
[ -n "$NO_STAY" ] || while [ ! -e go-done ]; do sleep 0.2; done
"$orchestra" done >> "$out" 2>&1 && echo "done-said" >> "$out"
# Its worktree's .git file is its own to write: led to a git folder of its making, whose
# config and hooks would run whatever orchestra's git did there next.
if [ -z "$NO_STAY" ]; then
  git init -q crafted && cp .git .git.real
  git config -f crafted/.git/config core.fsmonitor "touch $root/gitpwned-crafted; false"
  git config -f crafted/.git/config core.hooksPath "$PWD/crafted-hooks"
  git config -f crafted/.git/config core.worktree "$PWD"
  mkdir -p crafted-hooks
  for hook in post-merge post-checkout pre-commit reference-transaction; do
    printf '#!/bin/sh\ntouch %s/gitpwned-crafted\n' "$root" > "crafted-hooks/$hook"; chmod +x "crafted-hooks/$hook"
  done
  echo "gitdir: $PWD/crafted/.git" > .git && echo "crafted-git-file" >> "$out"
fi
echo finished >> "$out"
[ -n "$NO_STAY" ] || exec sleep 600
"#;

#[test]
fn a_hostile_agent_in_the_sandbox_reaches_nothing_it_was_not_given_and_still_works() {
    if !bwrap_here() {
        return;
    }
    let env = Env::new();
    let person = env.root.join("person");
    std::fs::create_dir_all(person.join(".ssh")).unwrap();
    let key = person.join(".ssh/id_ed25519");
    std::fs::write(&key, "-----BEGIN OPENSSH PRIVATE-KEY-----\n").unwrap();
    std::fs::write(person.join(".bashrc"), "# mine\n").unwrap();
    env.start_server(&[
        ("HOME".into(), person.to_string_lossy().into_owned()),
        ("SECRET_TOKEN".into(), "do-not-leak".into()),
        ("ANTHROPIC_API_KEY".into(), "sk-not-for-a-shell".into()),
    ]);
    // The host's loopback: what "network off" must not reach.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    // The setup runs in the box too: it sees the box's home, not the person's key.
    std::fs::write(
        env.repo.join("orchestra.toml"),
        format!(
            "[worktree]\nsetup = [\"sh\", \"-c\", {}]\n",
            toml::Value::String(format!(
                "echo \"setup home=$HOME\" > setup.txt; cat {} >> setup.txt 2>&1 || echo setup-refused-key >> setup.txt",
                key.display()
            ))
        ),
    )
    .unwrap();
    env.git(&["add", "orchestra.toml"]);
    env.git(&["commit", "-q", "-m", "orchestra.toml"]);
    env.orchestra(&["allow"]).ok();

    env.dispatch_shell("other").ok();
    let other = env.worktree_path("other");
    std::fs::write(other.join("secret.txt"), "OTHER-SECRET").unwrap();

    let tools = env.root.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let script = tools.join("hostile.sh");
    write_script(&script, HOSTILE);
    let args = [
        key.to_string_lossy().into_owned(),
        env.root.to_string_lossy().into_owned(),
        other.to_string_lossy().into_owned(),
        port.clone(),
        bin().to_string(),
        env.session("other")["id"].as_str().unwrap().to_string(),
    ];
    // The same script outside a box escapes: what it tries is real.
    let scratch = env.root.join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    crate::harness::git_in(&scratch, &["init", "-q"]);
    let _ = std::process::Command::new("timeout")
        .arg("20")
        .arg(&script)
        .args(&args)
        .current_dir(&scratch)
        .env("SECRET_TOKEN", "x")
        .env("ORCHESTRA_HOME", env.root.join("scratch-home"))
        .env("ORCHESTRA_SESSION", "nosuch")
        .env("NO_STAY", "1")
        .output();
    let outside = std::fs::read_to_string(scratch.join("escapes.txt")).unwrap();
    for escape in [
        "read-ssh-key",
        "read-other-session",
        "env-secret",
        "network-off",
        "write-system",
        "write-git-config",
        "add-git-hook-post-merge",
        "write-git-info",
    ] {
        assert!(
            outside.contains(&format!("{escape}: ESCAPED")),
            "{escape}:\n{outside}"
        );
    }
    let system = Path::new(bin()).with_file_name(format!("pwned-{port}"));
    std::fs::remove_file(&system).unwrap();
    std::fs::remove_file(env.root.join("outside.txt")).unwrap();
    std::fs::remove_file(other.join("pwned.txt")).unwrap();
    std::fs::write(person.join(".bashrc"), "# mine\n").unwrap();
    // The outside run's own git ran the config it wrote (its scratch repository's).
    let pwned = |root: &Path| -> Vec<String> {
        std::fs::read_dir(root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("gitpwned"))
            .collect()
    };
    for marker in pwned(&env.root) {
        std::fs::remove_file(env.root.join(marker)).unwrap();
    }
    let main_tip = env.git(&["rev-parse", "main"]);
    let other_tip = env.git(&["rev-parse", "session/other"]);

    let agent = args
        .iter()
        .map(|a| shell_words::quote(a).into_owned())
        .fold(
            shell_words::quote(&script.to_string_lossy()).into_owned(),
            |line, a| format!("{line} {a}"),
        );
    env.orchestra(&[
        "dispatch",
        "boxed",
        "--sandbox",
        "--network",
        "off",
        "--agent",
        &agent,
        "--kind",
        "generic",
        "--wait-setup",
    ])
    .ok();
    let wt = env.worktree_path("boxed");
    let escapes = wt.join("escapes.txt");
    let other_before = env.session("other");
    assert_ne!(other_before["state"], "waiting", "{other_before}");
    assert!(
        wait_until(Duration::from_secs(30), || std::fs::read_to_string(
            &escapes
        )
        .is_ok_and(|t| t.contains("hook-said"))),
        "the hostile agent's hook never said: {:?}\n{}",
        std::fs::read_to_string(&escapes),
        env.screen("boxed")
    );
    // Its hook's word reached the record through its drop folder, on the next tick; the
    // words it wrote naming the other session changed nothing of it.
    let id = env.session("boxed")["id"].as_str().unwrap().to_string();
    let inbox = env.home.join("inbox").join(&id);
    env.reaches("boxed", "waiting", Duration::from_secs(20));
    let window = env.session("boxed")["window"].as_str().unwrap().to_string();
    let badge = env.tmux(&["show-options", "-wv", "-t", &window, "@orchestra_state"]);
    assert_eq!(badge.trim(), "waiting");
    assert_eq!(
        std::fs::read_dir(&inbox).unwrap().count(),
        0,
        "the tick read it"
    );
    let other_after = env.session("other");
    assert_ne!(other_after["state"], "waiting", "{other_after}");
    assert!(!env
        .home
        .join("inbox")
        .join(other_before["id"].as_str().unwrap())
        .exists());
    assert!(!env.home.join("sessions").join("state.db").exists());
    std::fs::write(wt.join("go-done"), "").unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || std::fs::read_to_string(
            &escapes
        )
        .is_ok_and(|t| t.contains("finished"))),
        "the hostile agent never finished: {:?}\n{}",
        std::fs::read_to_string(&escapes),
        env.screen("boxed")
    );
    let said = std::fs::read_to_string(&escapes).unwrap();
    assert!(!said.contains("ESCAPED"), "{said}");
    assert!(
        !said.contains("not-found") && !said.contains("no-hostile-commit"),
        "{said}"
    );
    for escape in [
        "read-ssh-key",
        "read-other-session",
        "list-other-session-folders",
        "see-the-record",
        "read-the-record",
        "see-other-session-folder",
        "event-for-other",
        "env-secret",
        "env-api-key-of-another-kind",
        "network-off",
        "write-system",
        "write-git-config",
        "add-git-hook-post-merge",
        "add-git-hook-pre-commit",
        "add-git-hook-post-checkout",
        "add-git-hook-reference-transaction",
        "write-git-info",
        "move-main",
        "move-other-session",
        "write-packed-refs",
        "delete-other-session",
        "write-other-worktree-head",
        "write-own-commondir",
    ] {
        assert!(
            said.contains(&format!("{escape}: refused")),
            "{escape}:\n{said}"
        );
    }
    // Writes that seemed to land inside reached nothing outside.
    assert!(!env.root.join("outside.txt").exists());
    assert!(!other.join("pwned.txt").exists());
    assert_eq!(
        std::fs::read_to_string(person.join(".bashrc")).unwrap(),
        "# mine\n"
    );
    assert!(!system.exists());
    // Its home is its own, in its session folder; the setup ran there too.
    let own_home = env.home.join("sessions").join(&id).join("home");
    assert!(
        said.contains(&format!("home={}", own_home.display())),
        "{said}"
    );
    let setup = std::fs::read_to_string(wt.join("setup.txt")).unwrap();
    assert!(
        setup.contains(&format!("setup home={}", own_home.display())),
        "{setup}"
    );
    assert!(
        setup.contains("setup-refused-key") && !setup.contains("PRIVATE-KEY"),
        "{setup}"
    );
    // The ordinary flow: a commit on its branch, a hook's word, done, then merge on yes.
    assert!(
        said.contains("committed") && said.contains("hook-said") && said.contains("done-said"),
        "{said}"
    );
    let log = env.git(&["log", "--format=%s", "session/boxed"]);
    assert!(log.contains("edited in the box"), "{log}");
    // `done` inside left its word; the record hears it on the next tick.
    env.orchestra(&["refresh"]).ok();
    let row = env.session("boxed");
    assert_eq!(row["status"], "done", "{row}");
    assert_eq!(env.session("other")["status"], other_before["status"]);
    assert_eq!(row["sandbox"], "off", "{row}");
    assert_eq!(row["yolo"], false, "{row}");
    let window = row["window"].as_str().unwrap().to_string();
    let mark = env.tmux(&["show-options", "-wv", "-t", &window, "@orchestra_sandbox"]);
    assert_eq!(mark.trim(), "sandboxed,net-off");
    let health = env.orchestra(&["health"]).ok().stdout;
    let line = health
        .lines()
        .find(|l| l.starts_with("boxed"))
        .unwrap_or_default();
    assert!(line.contains("sandboxed,net-off"), "{health}");
    std::fs::remove_file(&escapes).unwrap();
    std::fs::remove_file(wt.join("setup.txt")).unwrap();
    std::fs::remove_file(wt.join("go-done")).unwrap();
    // Nothing of the repository it could not have moved moved, nothing it wrote ran.
    assert_eq!(env.git(&["rev-parse", "main"]), main_tip);
    assert_eq!(env.git(&["rev-parse", "session/other"]), other_tip);
    let config = std::fs::read_to_string(env.repo.join(".git/config")).unwrap();
    assert!(!config.contains("gitpwned"), "{config}");
    assert!(!env.repo.join(".git/hooks/post-merge").exists());
    // Its worktree's .git file leads to its own git folder: orchestra's review and merge
    // on the person's yes run nothing of it (the merge refuses a worktree that is not
    // the repository's), and once the person puts the file back, the merge goes through.
    assert!(said.contains("crafted-git-file"), "{said}");
    env.orchestra(&["review", "boxed"]).ok();
    let refused = env.orchestra(&["merge", "boxed", "--yes"]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert_eq!(pwned(&env.root), Vec::<String>::new());
    std::fs::rename(wt.join(".git.real"), wt.join(".git")).unwrap();
    for made in ["crafted", "crafted-hooks"] {
        std::fs::remove_dir_all(wt.join(made)).unwrap();
    }
    env.orchestra(&["merge", "boxed", "--yes"]).ok();
    assert!(env.repo.join("edited.txt").exists());
    assert_eq!(pwned(&env.root), Vec::<String>::new());
    drop(listener);
}

#[test]
fn the_real_claude_without_asking_in_the_sandbox_edits_commits_and_never_sees_the_key() {
    if !bwrap_here() {
        return;
    }
    let env = Env::new();
    let wt = env.worktree_path("boxed");
    let Some(world) = ClaudeWorld::start(&env, &[&wt]) else {
        return;
    };
    let home = world.home();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE-KEY-MATERIAL\n").unwrap();
    // The person accepted claude's bypass mode once (its warning is theirs to read).
    let config = home.join(".claude.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    json["bypassPermissionsModeAccepted"] = true.into();
    std::fs::write(&config, serde_json::to_string(&json).unwrap()).unwrap();
    let before = std::fs::read(&config).unwrap();
    env.start_server(&world.env);
    let agent = shell_words::quote(&world.claude.to_string_lossy()).into_owned();
    let prompt = format!(
        "[[bash: cat {key} || echo no-key\'\'-here; echo edited > edited.txt && git add edited.txt && git -c user.name=a -c user.email=a@b commit -qm boxed-commit && echo COMM\'\'ITTED]] go",
        key = home.join(".ssh/id_ed25519").display()
    );
    env.orchestra(&[
        "dispatch",
        "boxed",
        "--sandbox",
        "--yolo",
        "--agent",
        &agent,
        "--prompt",
        &prompt,
    ])
    .ok();
    assert!(
        wait_until(Duration::from_secs(90), || world
            .api
            .requests()
            .contains("COMMITTED")),
        "the tool never ran:\n{}",
        env.screen("boxed")
    );
    let requests = world.api.requests();
    assert!(
        requests.contains("no-key-here"),
        "the key's read failed visibly"
    );
    assert!(
        !requests.contains("PRIVATE-KEY-MATERIAL"),
        "the key reached the model"
    );
    let log = env.git(&["log", "--format=%s", "session/boxed"]);
    assert!(log.contains("boxed-commit"), "{log}");
    // Its hooks reach the record through its drop folder: the turn's end on a tick.
    env.reaches("boxed", "idle", Duration::from_secs(60));
    // Its conversation log is in its own home: `cost` reads it there.
    assert!(
        wait_until(Duration::from_secs(20), || {
            env.orchestra(&["cost"]).ok();
            env.session("boxed")["tokens"]["output"]
                .as_u64()
                .unwrap_or(0)
                > 0
        }),
        "cost never read the sandboxed claude's log: {}",
        env.session("boxed")
    );
    let window = env.session("boxed")["window"].as_str().unwrap().to_string();
    let badge = env.tmux(&["show-options", "-wv", "-t", &window, "@orchestra_state"]);
    assert_eq!(badge.trim(), "idle");
    let row = env.session("boxed");
    assert_eq!(row["sandbox"], "on", "{row}");
    assert_eq!(row["yolo"], true, "{row}");
    let window = row["window"].as_str().unwrap().to_string();
    let mark = env.tmux(&["show-options", "-wv", "-t", &window, "@orchestra_sandbox"]);
    assert_eq!(mark.trim(), "sandboxed yolo");
    // The person's own settings were never written: the agent wrote its copy.
    assert_eq!(std::fs::read(&config).unwrap(), before);
    let id = row["id"].as_str().unwrap().to_string();
    assert!(env
        .home
        .join("sessions")
        .join(&id)
        .join("home/.claude.json")
        .is_file());
}

#[test]
fn a_sandbox_that_cannot_be_had_and_yolo_outside_one_are_refused_with_nothing_made() {
    let env = Env::new();
    env.start_server(&[]);
    // A PATH with what dispatch needs but no bwrap.
    let path_dir = env.root.join("bin");
    std::fs::create_dir_all(&path_dir).unwrap();
    for program in ["tmux", "git", "bash", "sh"] {
        if let Some(found) = which(program) {
            std::os::unix::fs::symlink(found, path_dir.join(program)).unwrap();
        }
    }
    let before = (env.branches(), env.windows());
    let refused = |args: &[&str], path: Option<&PathBuf>, line: &str| {
        let mut cli = env.cli(args).status(2).stderr_line(line);
        if let Some(p) = path {
            cli = cli.env("PATH", p);
        }
        cli.run();
        assert_eq!((env.branches(), env.windows()), before, "{args:?}");
        assert!(!env.worktree_path("x").exists(), "{args:?}");
        assert_eq!(
            std::fs::read_dir(env.home.join("sessions")).map_or(0, std::iter::Iterator::count),
            0
        );
    };
    let shell = ["dispatch", "x", "--agent", "bash", "--kind", "generic"];
    let with = |more: &[&'static str]| -> Vec<&str> {
        shell.iter().copied().chain(more.iter().copied()).collect()
    };
    refused(
        &with(&["--sandbox"]),
        Some(&path_dir),
        "orchestra: bubblewrap (bwrap) is not installed: install it (apt install bubblewrap, dnf install bubblewrap) or dispatch without --sandbox",
    );
    refused(
        &with(&["--yolo"]),
        None,
        "orchestra: --yolo lets the agent run anything without asking: only in a sandbox (--sandbox), or say --yolo --no-sandbox to run it so as yourself",
    );
    refused(
        &with(&["--network", "off"]),
        None,
        "orchestra: --network is the sandbox's: add --sandbox",
    );
    refused(
        &with(&["--sandbox", "--network", "api.example:0"]),
        None,
        "orchestra: --network \"api.example:0\": \"api.example:0\": the port is a number from 1 to 65535 (on, off, or hosts separated by commas)",
    );
    refused(
        &with(&["--sandbox", "--yolo"]),
        None,
        "orchestra: --yolo: a generic agent has no mode that runs without asking",
    );
    std::fs::write(
        env.repo.join("orchestra.toml"),
        "[sandbox]\nnetwork = [\"api.example\", \"*.example.com\"]\n",
    )
    .unwrap();
    let file = env.repo.join("orchestra.toml");
    refused(
        &with(&[]),
        None,
        &format!(
            "orchestra: {}: [sandbox] network: \"*.example.com\": a host is a name or an address (no patterns, schemes or paths)",
            file.display()
        ),
    );
}

/// The pids of `pid`'s descendants, deepest last.
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", found[i]))
            .unwrap_or_default();
        found.extend(
            children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok()),
        );
        i += 1;
    }
    found
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

#[test]
fn kill_9_of_the_agent_or_of_bwrap_leaves_no_process_mount_or_file_behind() {
    if !bwrap_here() {
        return;
    }
    let env = Env::new();
    env.start_server(&[]);
    for (label, victim) in [("agent", "deepest"), ("bwrap", "bwrap")] {
        env.orchestra(&[
            "dispatch",
            label,
            "--sandbox",
            "--agent",
            "sleep 600",
            "--kind",
            "generic",
        ])
        .ok();
        let pane = env.session(label)["pane"].as_str().unwrap().to_string();
        let mut tree = Vec::new();
        assert!(
            wait_until(Duration::from_secs(20), || {
                let pid: u32 = env
                    .tmux(&["display-message", "-p", "-t", &pane, "#{pane_pid}"])
                    .trim()
                    .parse()
                    .unwrap_or(0);
                tree = descendants(pid);
                std::fs::read_to_string(format!("/proc/{}/cmdline", tree.last().unwrap()))
                    .is_ok_and(|c| c.starts_with("sleep"))
            }),
            "the agent never ran in its box: {tree:?}\n{}",
            env.screen(label)
        );
        let first = std::fs::read_to_string(format!("/proc/{}/cmdline", tree[0])).unwrap();
        assert!(first.starts_with("bwrap"), "the pane runs bwrap: {first:?}");
        let target = if victim == "bwrap" {
            tree[0]
        } else {
            *tree.last().unwrap()
        };
        std::process::Command::new("kill")
            .args(["-9", &target.to_string()])
            .status()
            .unwrap();
        assert!(
            wait_until(Duration::from_secs(10), || tree.iter().all(|p| !alive(*p))),
            "kill -9 of {victim} left {:?}",
            tree.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
        );
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&*env.root.to_string_lossy()), "{mounts}");
    // Like any agent killed: its gone pane is what doctor --fix settles, then all is clean.
    env.orchestra(&["doctor", "--fix"]);
    let doctor = env.orchestra(&["doctor"]);
    assert_eq!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);
    // A restart brings it back in its box.
    env.orchestra(&["restart", "agent"]).ok();
    let pane = env.session("agent")["pane"].as_str().unwrap().to_string();
    assert!(
        wait_until(Duration::from_secs(20), || {
            let pid: u32 = env
                .tmux(&["display-message", "-p", "-t", &pane, "#{pane_pid}"])
                .trim()
                .parse()
                .unwrap_or(0);
            let tree = descendants(pid);
            std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.starts_with("bwrap"))
                && std::fs::read_to_string(format!("/proc/{}/cmdline", tree.last().unwrap()))
                    .is_ok_and(|c| c.starts_with("sleep"))
        }),
        "the restarted agent is not in its box:\n{}",
        env.screen("agent")
    );
    let window = env.session("agent")["window"].as_str().unwrap().to_string();
    let mark = env.tmux(&["show-options", "-wv", "-t", &window, "@orchestra_sandbox"]);
    assert_eq!(mark.trim(), "sandboxed");
    // The box's mount points were made inside it: nothing new outside the session folders.
    assert!(!env.root.join("home/sessions/home").exists());
}

/// An agent that fills its drop folder: thousands of words, a pipe, a link to an endless
/// file, a huge file, all named to be read first.
const FLOODER: &str = r#"#!/bin/bash
d="$ORCHESTRA_HOME/inbox/$ORCHESTRA_SESSION"
mkfifo "$d/00000000000000000000-pipe.json"
ln -s /dev/zero "$d/00000000000000000000-zero.json"
head -c 300000 /dev/zero | tr '\0' ' ' > "$d/00000000000000000000-big.json"
now=$(date +%s%6N)
for i in $(seq 1 1000); do
  at=$((now + i))
  printf '{"word":"hook","event":"waiting","at":%d,"hook":null}' "$at" > "$d/$(printf %020d "$at")-w.json"
done
touch "$PWD/flooded"
exec sleep 600
"#;

#[test]
fn a_flooded_drop_folder_is_read_only_so_far_and_keeps_the_status_line_quick() {
    if !bwrap_here() {
        return;
    }
    let env = Env::new();
    env.start_server(&[]);
    let script = env.root.join("flood.sh");
    write_script(&script, FLOODER);
    env.orchestra(&[
        "dispatch",
        "flood",
        "--sandbox",
        "--agent",
        &shell_words::quote(&script.to_string_lossy()),
        "--kind",
        "generic",
    ])
    .ok();
    let wt = env.worktree_path("flood");
    assert!(
        wait_until(Duration::from_secs(60), || wt.join("flooded").exists()),
        "the agent never flooded its folder:\n{}",
        env.screen("flood")
    );
    let id = env.session("flood")["id"].as_str().unwrap().to_string();
    let inbox = env.home.join("inbox").join(&id);
    let count = || std::fs::read_dir(&inbox).unwrap().count();
    assert_eq!(count(), 1003);
    // The status line refreshes at most once a second: past that, this run ticks.
    std::thread::sleep(Duration::from_millis(1100));
    let started = std::time::Instant::now();
    env.orchestra(&["status-line"]).ok();
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "a status-line run took {took:?}"
    );
    // One tick's worth read, oldest first (the pipe, the link, the huge file among them,
    // dropped unread), the rest left for the next ticks.
    let left = count();
    assert_eq!(left, 1003 - 32);
    for name in ["pipe", "zero", "big"] {
        let file = inbox.join(format!("00000000000000000000-{name}.json"));
        assert!(
            std::fs::symlink_metadata(&file).is_err(),
            "{name} left, {left} left"
        );
    }
    // The words read were recorded (the screen may say otherwise since).
    let events = env.orchestra(&["events", "flood", "--json"]).ok().stdout;
    assert!(events.contains("waiting"), "{events}");
}

/// The tool call a real agent is scripted to make in its box: the person's key read (it
/// must fail), a file edited and committed, then `orchestra done`, each saying so.
fn boxed_tool_call(key: &Path) -> String {
    format!(
        "[[bash: cat {key} || echo no-key''-here; echo edited > edited.txt && git add edited.txt && git -c user.name=a -c user.email=a@b commit -qm boxed-commit && echo COMM''ITTED; {orchestra} done && echo DO''NE-SAID]]",
        key = key.display(),
        orchestra = bin()
    )
}

/// What every real kind in a box must show after [`boxed_tool_call`]: the key never
/// read, the edit committed on its branch, its own hook or notify (`hook`) saying idle
/// through its drop folder, `done` heard on a tick, the person's `config` unchanged.
#[track_caller]
fn worked_in_its_box(
    env: &Env,
    api: &crate::harness::StandIn,
    label: &str,
    hook: &str,
    config: &Path,
    before: &[u8],
) {
    assert!(
        wait_until(Duration::from_secs(120), || api
            .requests()
            .contains("DONE-SAID")),
        "the tool never ran to its end:\n{}\n{}",
        env.screen(label),
        api.requests()
    );
    let requests = api.requests();
    assert!(
        requests.contains("no-key-here"),
        "the key's read failed visibly"
    );
    assert!(requests.contains("COMMITTED"), "{requests}");
    assert!(
        !requests.contains("PRIVATE-KEY-MATERIAL"),
        "the key reached the model"
    );
    let log = env.git(&["log", "--format=%s", &format!("session/{label}")]);
    assert!(log.contains("boxed-commit"), "{log}");
    env.reaches(label, "idle", Duration::from_secs(60));
    let changes = env.state_changes(label);
    assert!(
        changes
            .iter()
            .any(|c| c.new == "idle" && c.detail.contains(hook)),
        "idle never came from {hook}: {changes:?}"
    );
    env.orchestra(&["refresh"]).ok();
    let row = env.session(label);
    assert_eq!(row["status"], "done", "{row}");
    assert_eq!(row["sandbox"], "on", "{row}");
    assert_eq!(row["yolo"], true, "{row}");
    assert_eq!(
        std::fs::read(config).unwrap(),
        before,
        "{}",
        config.display()
    );
}

/// The person's key, where a hostile tool call would look for it.
fn persons_key(home: &Path) -> PathBuf {
    let key = home.join(".ssh/id_ed25519");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    std::fs::write(&key, "PRIVATE-KEY-MATERIAL\n").unwrap();
    key
}

#[test]
fn the_real_codex_in_the_sandbox_edits_is_idle_by_its_notify_and_done_with_its_own_codex_home() {
    if !bwrap_here() {
        return;
    }
    let Some(mut c) = AgentWorld::start(
        AgentCli::codex(),
        |env| vec![env.worktree_path("boxed")],
        None,
    ) else {
        return;
    };
    // orchestra reads codex's rollouts where the person's CLI keeps them (CODEX_HOME).
    c.share("CODEX_HOME");
    let key = persons_key(&c.home);
    let codex_home = c.home.join(".codex");
    let config = codex_home.join("config.toml");
    let before = std::fs::read(&config).unwrap();
    let agent = format!(
        "{} --no-daemon",
        shell_words::quote(&c.cli.to_string_lossy())
    );
    c.env
        .orchestra(&[
            "dispatch",
            "boxed",
            "--sandbox",
            "--yolo",
            "--agent",
            &agent,
            "--prompt",
            &boxed_tool_call(&key),
        ])
        .ok();
    worked_in_its_box(&c.env, &c.api, "boxed", "codex-notify", &config, &before);
    // Its CODEX_HOME in the box is its own copy, shown where the person's lies: its
    // rollout is in the copy, the person's folder got none.
    let id = c.env.session("boxed")["id"].as_str().unwrap().to_string();
    let copy = c.env.home.join("sessions").join(&id).join("home/.codex");
    assert!(copy.join("sessions").is_dir(), "{}", copy.display());
    assert!(!codex_home.join("sessions").exists());
    // `cost` reads it there.
    assert!(
        wait_until(Duration::from_secs(20), || {
            c.env.orchestra(&["cost"]).ok();
            c.env.session("boxed")["tokens"]["output"]
                .as_u64()
                .unwrap_or(0)
                > 0
        }),
        "cost never read the sandboxed codex's rollout: {}",
        c.env.session("boxed")
    );
}

#[test]
fn the_real_gemini_in_the_sandbox_edits_is_idle_by_its_hooks_and_done_with_copies_not_links() {
    if !bwrap_here() {
        return;
    }
    let Some(mut g) = AgentWorld::start(AgentCli::gemini(), |_| Vec::new(), None) else {
        return;
    };
    g.patience = Duration::from_secs(60);
    // orchestra builds each session's Gemini home from the person's.
    g.share("HOME");
    let key = persons_key(&g.home);
    // The person's own Gemini files: a memory the CLI reads (a link to it would lead
    // nowhere in the box), a folder of their chats it must not see.
    std::fs::write(
        g.home.join(".gemini/GEMINI.md"),
        "Remember the word PERSONAL-MEMORY-7.\n",
    )
    .unwrap();
    std::fs::create_dir_all(g.home.join(".gemini/tmp")).unwrap();
    let config = g.home.join(".gemini/settings.json");
    let before = std::fs::read(&config).unwrap();
    g.env
        .orchestra(&[
            "dispatch",
            "boxed",
            "--sandbox",
            "--yolo",
            "--agent",
            &g.agent,
            "--prompt",
            &boxed_tool_call(&key),
        ])
        .ok();
    worked_in_its_box(&g.env, &g.api, "boxed", "AfterAgent", &config, &before);
    assert!(g.api.requests().contains("PERSONAL-MEMORY-7"));
    // Its chats are in its own Gemini home; the person's folder got none.
    let id = g.env.session("boxed")["id"].as_str().unwrap().to_string();
    let own = g
        .env
        .home
        .join("sessions")
        .join(&id)
        .join("gemini-home/.gemini");
    let memory = std::fs::symlink_metadata(own.join("GEMINI.md")).unwrap();
    assert!(memory.is_file(), "a copy, not a link");
    assert!(own.join("tmp").is_dir(), "{}", own.display());
    assert_eq!(
        std::fs::read_dir(g.home.join(".gemini/tmp"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn a_restarted_sandboxed_claude_resumes_its_conversation_from_its_own_home() {
    if !bwrap_here() {
        return;
    }
    let env = Env::new();
    let wt = env.worktree_path("again");
    let Some(world) = ClaudeWorld::start(&env, &[&wt]) else {
        return;
    };
    env.start_server(&world.env);
    let agent = shell_words::quote(&world.claude.to_string_lossy()).into_owned();
    env.orchestra(&[
        "dispatch",
        "again",
        "--sandbox",
        "--agent",
        &agent,
        "--prompt",
        "[[say: first answer 4471]]",
    ])
    .ok();
    // Its first turn reaches the model (its idle may be seen before the turn's start).
    assert!(
        wait_until(Duration::from_secs(90), || world
            .api
            .requests()
            .contains("first answer 4471")),
        "the first turn never reached the model:\n{}",
        env.screen("again")
    );
    env.reaches("again", "idle", Duration::from_secs(90));
    env.orchestra(&["brief", "again", "/exit"]).ok();
    env.reaches("again", "exited", Duration::from_secs(30));
    let run = env.orchestra(&["restart", "again"]).ok();
    assert!(
        run.stdout.contains("conversation resumed"),
        "{}",
        run.stdout
    );
    // In its box again (bwrap's words hold the agent's), with --resume.
    // The pane runs `orchestra prepare … --resume` first, which then execs bwrap.
    let argv = env.pane_process_once("again", "cmdline", |c| {
        c.starts_with("bwrap") && c.contains("--resume")
    });
    assert!(argv.starts_with("bwrap"), "{argv}");
    assert!(argv.contains("--resume"), "{argv}");
    env.reaches("again", "idle", Duration::from_secs(90));
    let before = world.api.requests_json().len();
    env.orchestra(&["brief", "again", "[[say: second answer]] go on"])
        .ok();
    assert!(
        wait_until(Duration::from_secs(60), || world
            .api
            .heard_since(before, "first answer 4471")),
        "the resumed conversation did not reach the model:\n{}",
        env.screen("again")
    );
}

#[test]
fn a_dependent_of_a_sandboxed_session_starts_once_its_done_is_replayed() {
    if !bwrap_here() {
        return;
    }
    let env = Env::new();
    env.start_server(&[]);
    // The upstream's agent makes its artifact, then says done from inside its box.
    let agent = format!(
        "sh -c {}",
        shell_words::quote(&format!(
            "while [ ! -e go ]; do sleep 0.2; done; echo made > out.txt; {} done && touch said; exec sleep 600",
            bin()
        ))
    );
    env.orchestra(&[
        "dispatch",
        "up",
        "--sandbox",
        "--agent",
        &agent,
        "--kind",
        "generic",
    ])
    .ok();
    let mut waiting = crate::harness::shell_dispatch("down").to_vec();
    waiting.extend(["--after", "up:out.txt", "--sandbox"]);
    env.orchestra(&waiting).ok();
    assert_eq!(env.session("down")["status"], "blocked");
    let wt = env.worktree_path("up");
    std::fs::write(wt.join("go"), "").unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || wt.join("said").exists()),
        "the boxed upstream never said done:\n{}",
        env.screen("up")
    );
    // Its word waits in its drop folder: nothing has heard it yet.
    let id = env.session("up")["id"].as_str().unwrap().to_string();
    let inbox = env.home.join("inbox").join(&id);
    assert_eq!(std::fs::read_dir(&inbox).unwrap().count(), 1);
    assert_ne!(env.session("up")["status"], "done");
    assert_eq!(env.session("down")["status"], "blocked");
    // One tick replays it: the upstream is done and its dependent starts, in its box.
    env.orchestra(&["refresh"]).ok();
    assert_eq!(env.session("up")["status"], "done", "{}", env.session("up"));
    assert!(
        wait_until(Duration::from_secs(20), || env.session("down")["status"]
            == "running"),
        "{}",
        env.session("down")
    );
    let argv = env.pane_process_once("down", "cmdline", |c| c.starts_with("bwrap"));
    assert!(
        argv.starts_with("bwrap"),
        "the dependent runs in its box: {argv}"
    );
}

#[test]
fn a_sandboxed_manifest_session_is_allowed_like_a_setup_and_comes_up_in_its_box() {
    if !bwrap_here() {
        return;
    }
    let env = Env::new();
    let person = env.root.join("person");
    let key = persons_key(&person);
    env.start_server(&[("HOME".into(), person.to_string_lossy().into_owned())]);
    let folder = env.root.join("notes");
    std::fs::create_dir_all(&folder).unwrap();
    let agent = format!(
        "sh -c {}",
        shell_words::quote(&format!(
            "cat {} > seen.txt 2>&1 || echo refused-key >> seen.txt; echo home=$HOME >> seen.txt; exec sleep 600",
            key.display()
        ))
    );
    std::fs::write(
        env.repo.join("orchestra.toml"),
        format!(
            "[orchestrator]\nagent = {}\n\n[sessions.notes]\npath = {}\n\n[sessions.notes.sandbox]\nnetwork = \"off\"\n",
            toml::Value::String(agent),
            toml::Value::String(folder.to_string_lossy().into_owned())
        ),
    )
    .unwrap();
    env.git(&["add", "orchestra.toml"]);
    env.git(&["commit", "-q", "-m", "orchestra.toml"]);
    // Not allowed yet: refused, nothing up.
    let run = env.orchestra(&["up", "notes"]).fails_with(2);
    assert!(
        run.stderr
            .contains("sessions.sandbox `notes (network off)`")
            && run.stderr.contains("orchestra allow"),
        "{}",
        run.stderr
    );
    assert_eq!(env.list_json().len(), 0);
    env.orchestra(&["allow"]).ok();
    let up = env.orchestra(&["up", "notes"]).ok();
    assert!(up.stdout.contains("notes: up here"), "{}", up.stdout);
    let seen = folder.join("seen.txt");
    assert!(
        wait_until(Duration::from_secs(30), || std::fs::read_to_string(&seen)
            .is_ok_and(|t| t.contains("home="))),
        "the boxed agent never ran:\n{}",
        env.screen("notes")
    );
    let said = std::fs::read_to_string(&seen).unwrap();
    assert!(
        said.contains("refused-key") && !said.contains("PRIVATE-KEY"),
        "{said}"
    );
    let id = env.session("notes")["id"].as_str().unwrap().to_string();
    let own = env.home.join("sessions").join(&id).join("home");
    assert!(said.contains(&format!("home={}", own.display())), "{said}");
    let argv = env.pane_process_once("notes", "cmdline", |c| c.starts_with("bwrap"));
    assert!(argv.starts_with("bwrap"), "{argv}");
    let row = env.session("notes");
    assert_eq!(row["sandbox"], "off", "{row}");
    let window = row["window"].as_str().unwrap().to_string();
    let mark = env.tmux(&["show-options", "-wv", "-t", &window, "@orchestra_sandbox"]);
    assert_eq!(mark.trim(), "sandboxed,net-off");
    env.orchestra(&["down", "notes"]).ok();
    assert_eq!(env.list_json().len(), 0);
}

/// An agent in a box whose network is one listed host: through the bridge and the proxy
/// (curl honours `http_proxy`, and `-p` tunnels with CONNECT) it reaches that host, not
/// another loopback address standing in for an unlisted one, and nothing directly.
const LIMITED: &str = r#"#!/bin/bash
# limited.sh ALLOWED_PORT OTHER_PORT
a=$1 b=$2 out="$PWD/net.txt"
: > "$out"
says() { if [ "$2" = 0 ]; then echo "$1: reached"; else echo "$1: refused"; fi >> "$out"; }
curl -sf -m 10 "http://127.0.0.1:$a/x" | grep -q allowed-body; says proxied-allowed $?
curl -sf -m 10 -p "http://127.0.0.1:$a/x" | grep -q allowed-body; says tunnel-allowed $?
code=$(curl -s -m 10 -o "$PWD/other.txt" -w '%{http_code}' "http://127.0.0.2:$b/x"); [ "$code" = 200 ]; says proxied-other $?
echo "other-code=$code" >> "$out"
curl -sf -m 10 -p "http://127.0.0.2:$b/x" >/dev/null; says tunnel-other $?
curl -sf -m 5 --noproxy '*' "http://127.0.0.1:$a/x" >/dev/null; says direct-allowed $?
(exec 3<>"/dev/tcp/127.0.0.2/$b") 2>/dev/null; says direct-other $?
echo finished >> "$out"
exec sleep 600
"#;

/// A server on `ip` answering every request with `body`; the count of requests it saw.
fn serve(ip: &str, body: &'static str) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = conn.read(&mut buf);
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

/// The pids whose command line names `needle`.
fn running_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
                && alive(*pid)
        })
        .collect()
}

#[test]
fn a_box_limited_to_a_host_reaches_it_through_the_proxy_only_and_kill_9_leaves_nothing() {
    if !bwrap_here() || !require("curl", which("curl").is_some()) {
        return;
    }
    let env = Env::new();
    env.start_server(&[]);
    let (allowed, _) = serve("127.0.0.1", "allowed-body");
    let (other, other_seen) = serve("127.0.0.2", "other-body");
    let script = env.root.join("limited.sh");
    write_script(&script, LIMITED);
    let agent = format!(
        "{} {allowed} {other}",
        shell_words::quote(&script.to_string_lossy())
    );
    let hosts = format!("127.0.0.1:{allowed}");
    for (label, victim) in [("limited", "agent"), ("limited2", "bwrap")] {
        env.orchestra(&[
            "dispatch",
            label,
            "--sandbox",
            "--network",
            &hosts,
            "--agent",
            &agent,
            "--kind",
            "generic",
        ])
        .ok();
        let wt = env.worktree_path(label);
        let said = wt.join("net.txt");
        assert!(
            wait_until(Duration::from_secs(60), || std::fs::read_to_string(&said)
                .is_ok_and(|t| t.contains("finished"))),
            "the agent never finished: {:?}\n{}",
            std::fs::read_to_string(&said),
            env.screen(label)
        );
        let text = std::fs::read_to_string(&said).unwrap();
        for (what, how) in [
            ("proxied-allowed", "reached"),
            ("tunnel-allowed", "reached"),
            ("proxied-other", "refused"),
            ("tunnel-other", "refused"),
            ("direct-allowed", "refused"),
            ("direct-other", "refused"),
        ] {
            assert!(text.contains(&format!("{what}: {how}")), "{what}:\n{text}");
        }
        assert!(text.contains("other-code=403"), "{text}");
        let body = std::fs::read_to_string(wt.join("other.txt")).unwrap();
        assert!(
            body.contains("is not in this session's allowed hosts"),
            "{body}"
        );
        assert_eq!(other_seen.load(std::sync::atomic::Ordering::SeqCst), 0);
        let row = env.session(label);
        assert_eq!(row["sandbox"], hosts.as_str(), "{row}");
        let id = row["id"].as_str().unwrap().to_string();
        let socket = env.home.join("sessions").join(&id).join("net.sock");
        assert!(socket.exists());
        let socket_word = socket.to_string_lossy().into_owned();
        for server in ["sandbox-net\0proxy", "sandbox-net\0bridge"] {
            assert_eq!(running_with(server).len(), 1, "{server}");
        }
        let pane = row["pane"].as_str().unwrap().to_string();
        let pid: u32 = env
            .tmux(&["display-message", "-p", "-t", &pane, "#{pane_pid}"])
            .trim()
            .parse()
            .unwrap();
        let tree = descendants(pid);
        let target = if victim == "bwrap" {
            pid
        } else {
            *tree
                .iter()
                .find(|p| {
                    std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                        .is_ok_and(|c| c.starts_with("sleep"))
                })
                .unwrap()
        };
        std::process::Command::new("kill")
            .args(["-9", &target.to_string()])
            .status()
            .unwrap();
        assert!(
            wait_until(Duration::from_secs(10), || running_with(&socket_word)
                .is_empty()
                && running_with("sandbox-net\0").is_empty()
                && !socket.exists()),
            "kill -9 of the {victim} left {:?}, socket there: {}",
            running_with(&socket_word),
            socket.exists()
        );
    }
}

#[test]
fn a_sandboxed_sessions_check_runs_in_its_box_and_an_unboxed_ones_outside() {
    if !bwrap_here() {
        return;
    }
    let env = Env::new();
    let person = env.root.join("person");
    let key = persons_key(&person);
    let outside = env.root.join("outside.txt");
    env.start_server(&[("HOME".into(), person.to_string_lossy().into_owned())]);
    // The check tries what an agent would: the key, a file outside its worktree.
    let check = format!(
        "echo \"check home=$HOME\"; cat {key} || echo check-refused-key; (echo x > {out}) 2>/dev/null || echo check-refused-write",
        key = key.display(),
        out = outside.display()
    );
    std::fs::write(
        env.repo.join("orchestra.toml"),
        format!(
            "[worktree]\ncheck = [\"sh\", \"-c\", {}]\n",
            toml::Value::String(check)
        ),
    )
    .unwrap();
    env.git(&["add", "orchestra.toml"]);
    env.git(&["commit", "-q", "-m", "orchestra.toml"]);
    env.orchestra(&["allow"]).ok();
    env.orchestra(&[
        "dispatch",
        "boxed",
        "--sandbox",
        "--agent",
        "bash --norc --noprofile",
        "--kind",
        "generic",
    ])
    .ok();
    env.dispatch_shell("plain").ok();

    env.orchestra(&["check", "boxed"]).ok();
    let boxed = env.session("boxed");
    let tail = boxed["check"]["tail"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let id = boxed["id"].as_str().unwrap();
    let own_home = env.home.join("sessions").join(id).join("home");
    assert!(
        tail.contains(&format!("check home={}", own_home.display())),
        "{tail}"
    );
    assert!(
        tail.contains("check-refused-key") && !tail.contains("PRIVATE-KEY-MATERIAL"),
        "{tail}"
    );
    // Its write outside went to the box's private /tmp, gone with the box.
    assert!(!outside.exists());
    assert_eq!(boxed["check"]["passed"], true, "{boxed}");

    // The same check of a session without a box reaches both: what the box stops is real.
    env.orchestra(&["check", "plain"]).ok();
    let plain = env.session("plain");
    let tail = plain["check"]["tail"].as_str().unwrap_or_default();
    assert!(tail.contains("PRIVATE-KEY-MATERIAL"), "{tail}");
    assert!(outside.exists());
}
