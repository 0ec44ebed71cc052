//! The rules of ARCHITECTURE.md that Cargo cannot see, checked on the sources. Which crate
//! may use which is the workspace's dependency graph (a cycle does not build); what is left
//! is inside crates: no command module names another (they share only what `cmd/mod.rs`
//! offers: the router, rendering and argument helpers), nothing outside `cmd/` and
//! `main.rs` names `cmd` at all, no crate but `orchestra-sys` starts a process (every
//! child goes through `process::command`, which gives it a deadline), and only the
//! engine's `tell` sends a notification (`notify::spawn`, `spawn_waiting`), and no tmux
//! option of ours is spelled outside the registry `tmux::options`. It lives
//! outside `cmd/` so that its own examples of a broken rule are not read as commands.

use std::path::{Path, PathBuf};

/// The command modules: every `src/cmd/*.rs` but `mod.rs`.
fn command_modules(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let stem = path.file_stem()?.to_str()?.to_string();
            (path.extension()? == "rs" && stem != "mod").then_some(stem)
        })
        .collect();
    names.sort();
    names
}

/// The code of `text`, comment lines left out (docs may name a command).
fn code(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l))
}

/// The command modules other than `own` that `text` names through `cmd::` or
/// `super::`, single or in a `{…}` group: "line: name".
fn other_commands(text: &str, own: &str, modules: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in code(text) {
        for prefix in ["cmd::", "super::"] {
            for (at, _) in line.match_indices(prefix) {
                // `orchestra::cmd::` and `crate::cmd::` alike; not `foo_cmd::`.
                let before = line[..at].chars().last();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let rest = &line[at + prefix.len()..];
                let names: Vec<&str> = match rest.strip_prefix('{') {
                    Some(group) => group
                        .split('}')
                        .next()
                        .unwrap_or_default()
                        .split(',')
                        .map(|item| item.trim().split("::").next().unwrap_or_default())
                        .collect(),
                    None => vec![rest
                        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or_default()],
                };
                for name in names {
                    if name != own && modules.iter().any(|m| m == name) {
                        found.push(format!("{n}: {name}"));
                    }
                }
            }
        }
    }
    found
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

#[test]
fn the_check_sees_a_command_naming_another() {
    let modules = ["dispatch".to_string(), "deps".to_string()];
    let text = "use crate::cmd::{open_repo, deps, Context};\n\
                // crate::cmd::deps::run in a comment is fine\n\
                let x = super::dispatch::run(ctx);\n\
                let y = orchestra::cmd::deps::wake();\n\
                use crate::cmd::{human_age, Output};\n\
                let z = tmux_cmd::run();";
    assert_eq!(
        other_commands(text, "kill", &modules),
        ["1: deps", "3: dispatch", "4: deps"]
    );
    assert_eq!(other_commands(text, "deps", &modules), ["3: dispatch"]);
}

#[test]
fn no_command_module_names_another() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
    let modules = command_modules(&dir);
    assert!(modules.iter().any(|m| m == "dispatch"), "{modules:?}");
    let mut broken = Vec::new();
    for own in &modules {
        let text = std::fs::read_to_string(dir.join(format!("{own}.rs"))).unwrap();
        for hit in other_commands(&text, own, &modules) {
            broken.push(format!("src/cmd/{own}.rs:{hit}"));
        }
    }
    assert!(
        broken.is_empty(),
        "command modules naming another (move the shared part to a domain module): {broken:#?}"
    );
}

#[test]
fn nothing_outside_cmd_and_main_names_cmd() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut broken = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        // This file names `cmd` in its examples of a broken rule.
        if relative.starts_with("cmd")
            || relative == Path::new("main.rs")
            || relative == Path::new("layering.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in code(&text) {
            if line.contains("crate::cmd") || line.contains("orchestra::cmd") {
                broken.push(format!("src/{}:{n}", relative.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "domain code naming cmd (commands call modules, never the other way): {broken:#?}"
    );
}

/// Code lines of `text` that start a process without `process::command`.
fn process_starts(text: &str) -> Vec<usize> {
    code(text)
        .filter(|(_, l)| {
            // `process::CommandExt` (exec) is a trait on a command already made, not a start.
            let names_command = l.match_indices("process::Command").any(|(at, m)| {
                !l[at + m.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
            });
            names_command || l.contains("Command::new(")
        })
        .map(|(n, _)| n)
        .collect()
}

#[test]
fn the_check_sees_a_process_started_outside_sys() {
    let text = "let c = std::process::Command::new(\"git\");\n\
                // Command::new( in a comment is fine\n\
                let d = crate::process::command(\"git\");\n\
                use std::process::Command;\n\
                use std::os::unix::process::CommandExt;";
    assert_eq!(process_starts(text), [1, 4]);
}

/// "path:line" of each line `lines` finds in the Rust files of the binary and of every
/// crate above orchestra-sys, but in `exempt` (paths from the workspace root) and in
/// this file, whose examples break the rules.
fn broken_above_sys(exempt: &[&str], lines: fn(&str) -> Vec<usize>) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "src",
        "crates/model/src",
        "crates/agents/src",
        "crates/engine/src",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "{} files", files.len());
    for path in exempt {
        assert!(root.join(path).is_file(), "{path} is gone");
    }
    let mut broken = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root).unwrap();
        if relative == Path::new("src/layering.rs")
            || exempt.iter().any(|path| relative == Path::new(path))
        {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for n in lines(&text) {
            broken.push(format!("{}:{n}", relative.display()));
        }
    }
    broken
}

#[test]
fn only_sys_starts_processes() {
    let broken = broken_above_sys(&[], process_starts);
    assert!(
        broken.is_empty(),
        "a process started outside orchestra-sys (use process::command, which has a deadline): {broken:#?}"
    );
}

/// Code lines of `text` that call one of `notify`'s senders (`notify::spawn`,
/// `spawn_waiting`), by path or through a `use` of them. Its detached self-spawns
/// (`spawn_self_detached`, `spawn_self_logged`) tell nobody and are not senders.
fn notify_sends(text: &str) -> Vec<usize> {
    let whole = |l: &str, at: usize, m: &str| {
        !l[at + m.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
    };
    code(text)
        .filter(|(_, l)| {
            let by_path = l
                .match_indices("notify::spawn")
                .any(|(at, m)| whole(l, at, m));
            let imported = l.split_once("notify::{").is_some_and(|(_, group)| {
                group
                    .split('}')
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .any(|item| item.trim() == "spawn")
            });
            by_path || imported || l.contains("spawn_waiting")
        })
        .map(|(n, _)| n)
        .collect()
}

#[test]
fn the_check_sees_a_person_told_outside_tell() {
    let text = "crate::notify::spawn(&note, &fallback);\n\
                // notify::spawn( in a comment is fine\n\
                notify::spawn_self_detached(&args, &[]);\n\
                crate::notify::spawn_waiting(&note, None, &fallback, id, 1);\n\
                use crate::notify::{Fallback, spawn};\n\
                let _ = std::thread::spawn(work);\n\
                crate::notify::spawn_self_logged(&args, &[], None, None);";
    assert_eq!(notify_sends(text), [1, 4, 5]);
}

#[test]
fn only_tell_tells_a_person() {
    let broken = broken_above_sys(&["crates/engine/src/tell.rs"], notify_sends);
    assert!(
        broken.is_empty(),
        "a person told outside the engine's tell module (call tell, which decides what and how): {broken:#?}"
    );
}

/// Code lines of `text` (before its test module) that spell a tmux option of ours.
fn option_names_spelled(text: &str) -> Vec<usize> {
    let tests_at = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    code(&text[..tests_at])
        .filter(|(_, l)| l.contains("\"@orchestra"))
        .map(|(n, _)| n)
        .collect()
}

#[test]
fn the_check_sees_an_option_spelled_outside_the_registry() {
    let text = "tmux.global_option(\"@orchestra-notify-cmd\");\n\
                // \"@orchestra-key\" in a comment is fine\n\
                tmux.global_option(options::NOTIFY_CMD);\n\
                #[cfg(test)]\nmod tests {\n    \"@orchestra_state\"\n}";
    assert_eq!(option_names_spelled(text), [1]);
}

#[test]
fn every_tmux_option_is_named_in_one_registry() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "src",
        "crates/model/src",
        "crates/sys/src",
        "crates/agents/src",
        "crates/engine/src",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    let registry = Path::new("crates/sys/src/tmux/options.rs");
    assert!(root.join(registry).is_file(), "the registry moved");
    let mut broken = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root).unwrap();
        let test_file = relative.file_name().is_some_and(|n| n == "tests.rs")
            || relative.components().any(|c| c.as_os_str() == "tests");
        if relative == registry || relative == Path::new("src/layering.rs") || test_file {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for n in option_names_spelled(&text) {
            broken.push(format!("{}:{n}", relative.display()));
        }
    }
    assert!(
        broken.is_empty(),
        "a tmux option spelled outside tmux::options (name it there, once): {broken:#?}"
    );
}
