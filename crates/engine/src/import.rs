//! `orchestra import`: the config.yaml of the multi-host orchestrator orchestra replaces,
//! turned into an orchestra.toml. Pure: YAML text in, TOML text out, plus what could not be
//! carried over (kept in the TOML as comments, for the command to list).
//!
//! Every value is read with its line and column, so a wrong shape is reported where it is
//! written; every string is written as a one-line TOML basic string, so quotes, newlines
//! and TOML syntax in names or values come out meaning what they meant.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::manifest::{Condition, Dependency, ManifestError};

/// The converted manifest and what the conversion has to tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// The orchestra.toml text; `manifest::parse` accepts it.
    pub toml: String,
    /// What could not be mapped, each `FILE:LINE:COLUMN: what and why`; each is kept in
    /// the TOML as a comment.
    pub not_mapped: Vec<String>,
    /// What was mapped under another name (a session name orchestra cannot take as a label).
    pub renamed: Vec<String>,
}

/// A YAML value, whatever its shape, with where it is written.
type Node = Spanned<Yaml>;

#[derive(Debug, Clone)]
enum Yaml {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Spanned<String>, Node)>),
}

impl<'de> Deserialize<'de> for Yaml {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Yaml, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Yaml;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Yaml, E> {
                Ok(Yaml::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Yaml, E> {
                Ok(Yaml::Int(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Yaml, E> {
                Ok(Yaml::Int(v.into()))
            }
            fn visit_i128<E>(self, v: i128) -> Result<Yaml, E> {
                Ok(Yaml::Int(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Yaml, E> {
                Ok(Yaml::Float(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Yaml, E> {
                Ok(Yaml::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Yaml, E> {
                Ok(Yaml::Str(v))
            }
            fn visit_unit<E>(self) -> Result<Yaml, E> {
                Ok(Yaml::Null)
            }
            fn visit_none<E>(self) -> Result<Yaml, E> {
                Ok(Yaml::Null)
            }
            fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Yaml, D::Error> {
                Yaml::deserialize(d)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Yaml, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Node>()? {
                    items.push(item);
                }
                Ok(Yaml::Seq(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Yaml, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    let value = map.next_value::<Node>()?;
                    entries.push((key, value));
                }
                Ok(Yaml::Map(entries))
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl Yaml {
    fn kind(&self) -> &'static str {
        match self {
            Yaml::Null => "nothing",
            Yaml::Bool(_) => "a boolean",
            Yaml::Int(_) | Yaml::Float(_) => "a number",
            Yaml::Str(_) => "a string",
            Yaml::Seq(_) => "a list",
            Yaml::Map(_) => "a mapping",
        }
    }

    /// A scalar as the text it says; `None` for null, lists and mappings.
    fn text(&self) -> Option<String> {
        match self {
            Yaml::Str(s) => Some(s.clone()),
            Yaml::Int(n) => Some(n.to_string()),
            Yaml::Float(f) => Some(f.to_string()),
            Yaml::Bool(b) => Some(b.to_string()),
            Yaml::Null | Yaml::Seq(_) | Yaml::Map(_) => None,
        }
    }

    /// The value on one line, TOML-like, for a comment.
    fn show(&self) -> String {
        match self {
            Yaml::Null => "null".into(),
            Yaml::Str(s) => toml_string(s),
            Yaml::Seq(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(|i| i.value.show())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Yaml::Map(entries) => format!(
                "{{ {} }}",
                entries
                    .iter()
                    .map(|(k, v)| format!("{} = {}", toml_key(&k.value), v.value.show()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => other.text().unwrap_or_default(),
        }
    }
}

/// `text` as a TOML basic string on one line: quotes, backslashes and every control
/// character escaped (a comment holding it stays one comment line).
pub fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML key: bare when TOML allows it, else quoted.
fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        key.to_string()
    } else {
        toml_string(key)
    }
}

/// Every line of `text` as a TOML comment line.
fn comment(text: &str) -> String {
    text.lines().map(|l| format!("# {l}\n")).collect()
}

struct Converter<'a> {
    file: &'a str,
    not_mapped: Vec<String>,
    renamed: Vec<String>,
}

/// One `key = value` line of a table, or a comment in its place.
enum Line {
    Key(String, String),
    Comment(String),
}

impl Converter<'_> {
    fn error(&self, at: &Node, message: String) -> ManifestError {
        self.error_at(at.referenced, message)
    }

    fn key_error(&self, at: &Spanned<String>, message: String) -> ManifestError {
        self.error_at(at.referenced, message)
    }

    fn error_at(&self, at: serde_saphyr::Location, message: String) -> ManifestError {
        ManifestError {
            file: self.file.to_string(),
            line: at.line() as usize,
            column: at.column() as usize,
            message,
        }
    }

    /// Records `what` as not mapped (listed with its place) and returns the comment that
    /// keeps it in the TOML.
    fn skip(&mut self, at: &Node, what: &str, why: &str) -> Line {
        self.not_mapped.push(format!(
            "{}:{}:{}: {what}: {why}",
            self.file,
            at.referenced.line(),
            at.referenced.column()
        ));
        Line::Comment(format!("not imported ({why}): {what}"))
    }

    /// A scalar's text, or an error naming `what` and the shape it has.
    fn text(&self, at: &Node, what: &str) -> Result<String, ManifestError> {
        at.value.text().ok_or_else(|| {
            self.error(
                at,
                format!("{what} must be a string, not {}", at.value.kind()),
            )
        })
    }

    fn mapping<'n>(
        &self,
        at: &'n Node,
        what: &str,
    ) -> Result<&'n [(Spanned<String>, Node)], ManifestError> {
        match &at.value {
            Yaml::Map(entries) => Ok(entries),
            other => Err(self.error(
                at,
                format!("{what} must be a mapping, not {}", other.kind()),
            )),
        }
    }
}

/// A session's name in the TOML, and the names it had in the YAML.
struct Names {
    /// YAML name → orchestra label.
    label: BTreeMap<String, String>,
}

impl Names {
    /// The label for a YAML name, or the word itself when it names no session.
    fn rename<'a>(&'a self, word: &'a str) -> &'a str {
        self.label.get(word).map_or(word, String::as_str)
    }
}

/// Hosts by address, named after their server.
#[derive(Default)]
struct Hosts {
    by_address: BTreeMap<String, String>,
}

impl Hosts {
    fn name_for(&mut self, address: &str, server: &str) -> String {
        if let Some(name) = self.by_address.get(address) {
            return name.clone();
        }
        let first = server.split('.').next().unwrap_or(server);
        let base = crate::label::slug(first).unwrap_or_else(|_| "host".into());
        let taken: BTreeSet<&String> = self.by_address.values().collect();
        let name = if taken.contains(&base) {
            crate::label::first_free(&base, |n| taken.iter().any(|t| *t == n))
        } else {
            base
        };
        self.by_address.insert(address.to_string(), name.clone());
        name
    }
}

/// Converts config.yaml `text` (named `file` in messages). Bad YAML, a wrong shape, a host
/// string that is not `user@server` or a `blocked_by` naming no session is an error at its
/// line and column; what orchestra has no place for is kept as a comment and listed.
pub fn convert(text: &str, file: &str) -> Result<Imported, ManifestError> {
    let root: Node = serde_saphyr::from_str(text).map_err(|e| {
        let (line, column) = e
            .location()
            .map_or((1, 1), |l| (l.line() as usize, l.column() as usize));
        ManifestError {
            file: file.to_string(),
            line: line.max(1),
            column: column.max(1),
            message: without_place(&crate::error::one_line(
                &e.without_snippet().to_string(),
                "not valid YAML",
            )),
        }
    })?;
    let mut c = Converter {
        file,
        not_mapped: Vec::new(),
        renamed: Vec::new(),
    };
    if matches!(root.value, Yaml::Null) {
        return Err(c.error(&root, "holds no configuration (it is empty)".into()));
    }
    let top = c.mapping(&root, "the file")?;
    let section = |name: &str| top.iter().find(|(k, _)| k.value == name).map(|(_, v)| v);

    let mut head = Vec::new();
    for (key, value) in top {
        if !["orchestrator", "sessions", "dependencies"].contains(&key.value.as_str()) {
            let line = c.skip(
                value,
                &format!("{} = {}", toml_key(&key.value), value.value.show()),
                "orchestra has no such setting",
            );
            head.push(line);
        }
    }

    let orchestrator = match section("orchestrator") {
        Some(node) if !matches!(node.value, Yaml::Null) => orchestrator(&mut c, node)?,
        _ => Vec::new(),
    };

    // Names first: blocked_by and dependencies may name a session written after them.
    let empty = Vec::new();
    let sessions_node = section("sessions").filter(|n| !matches!(n.value, Yaml::Null));
    let entries = match sessions_node {
        Some(node) => c.mapping(node, "sessions")?,
        None => &empty[..],
    };
    let mut names = Names {
        label: BTreeMap::new(),
    };
    for (key, _) in entries {
        let name = &key.value;
        if names.label.contains_key(name) {
            return Err(c.key_error(key, format!("session {name:?} is written twice")));
        }
        let label = if crate::label::validate(name).is_ok() {
            name.clone()
        } else {
            let slug = crate::label::slug(name).map_err(|_| {
                c.key_error(
                    key,
                    format!("session name {name:?} has no letter or digit to make a label from"),
                )
            })?;
            let taken = |n: &str| {
                names.label.values().any(|l| l == n) || entries.iter().any(|(k, _)| k.value == n)
            };
            let label = if taken(&slug) {
                crate::label::first_free(&slug, taken)
            } else {
                slug
            };
            c.renamed.push(format!(
                "{}:{}:{}: session {name:?} is {label:?} (a label is a-z, 0-9 and '-'); blocked_by and dependencies follow",
                file,
                key.referenced.line(),
                key.referenced.column()
            ));
            label
        };
        names.label.insert(name.clone(), label);
    }

    let mut hosts = Hosts::default();
    let mut sessions = Vec::new();
    for (key, value) in entries {
        let label = names.rename(&key.value).to_string();
        let lines = session(&mut c, &names, &mut hosts, &key.value, value)?;
        sessions.push((key.value.clone(), label, lines));
    }

    let mut deps = Vec::new();
    if let Some(node) = section("dependencies").filter(|n| !matches!(n.value, Yaml::Null)) {
        let Yaml::Seq(items) = &node.value else {
            return Err(c.error(
                node,
                format!("dependencies must be a list, not {}", node.value.kind()),
            ));
        };
        for (i, item) in items.iter().enumerate() {
            deps.push(dependency(&mut c, &names, i, item)?);
        }
    }

    let mut out = comment(&format!("Imported from {file} by `orchestra import`."));
    write_lines(&mut out, &head);
    if !orchestrator.is_empty() {
        out.push_str("\n[orchestrator]\n");
        write_lines(&mut out, &orchestrator);
    }
    let mut by_name: Vec<(&String, &String)> =
        hosts.by_address.iter().map(|(a, n)| (n, a)).collect();
    by_name.sort();
    for (name, address) in by_name {
        out.push_str(&format!(
            "\n[hosts.{}]\naddress = {}\n",
            toml_key(name),
            toml_string(address)
        ));
    }
    for (yaml_name, label, lines) in &sessions {
        out.push_str(&format!("\n[sessions.{}]\n", toml_key(label)));
        if yaml_name != label {
            out.push_str(&comment(&format!(
                "config.yaml name: {}",
                toml_string(yaml_name)
            )));
        }
        write_lines(&mut out, lines);
    }
    for dep in &deps {
        out.push('\n');
        out.push_str(dep);
    }

    // What orchestra would refuse (a blocked_by cycle) is refused here, before anything
    // is written: the result always loads.
    crate::manifest::parse(&out, "orchestra.toml").map_err(|e| ManifestError {
        file: file.to_string(),
        line: 1,
        column: 1,
        message: format!("cannot be converted: {}", e.message),
    })?;
    Ok(Imported {
        toml: out,
        not_mapped: c.not_mapped,
        renamed: c.renamed,
    })
}

/// The parser's message without its own " at line L, column C" (the error leads with it).
fn without_place(message: &str) -> String {
    // The parser's advice on its own options is for programmers, not for the person.
    let message = message
        .split(", set DuplicateKeyPolicy")
        .next()
        .unwrap_or(message);
    match message.rfind(" at line ") {
        Some(at) if message[at..].contains("column") => message[..at].to_string(),
        _ => message.to_string(),
    }
}

fn write_lines(out: &mut String, lines: &[Line]) {
    for line in lines {
        match line {
            Line::Key(key, value) => out.push_str(&format!("{} = {value}\n", toml_key(key))),
            Line::Comment(text) => out.push_str(&comment(text)),
        }
    }
}

fn orchestrator(c: &mut Converter<'_>, node: &Node) -> Result<Vec<Line>, ManifestError> {
    let mut lines = Vec::new();
    for (key, value) in c.mapping(node, "orchestrator")? {
        let k = key.value.as_str();
        let what = format!("orchestrator.{}", key.value);
        if matches!(value.value, Yaml::Null) {
            continue;
        }
        let line = match k {
            "shared_fs" | "worktree_dir" | "wrap_up_cmd" | "agent" => {
                Line::Key(k.into(), toml_string(&c.text(value, &what)?))
            }
            "sync_interval" => {
                let text = c.text(value, &what)?;
                if crate::duration::parse_secs(&text).is_some() {
                    Line::Key(k.into(), toml_string(&text))
                } else {
                    c.skip(
                        value,
                        &format!("{k} = {}", toml_string(&text)),
                        "not a duration orchestra reads (\"6h\", \"30m\")",
                    )
                }
            }
            "poll_interval" | "capture_lines" => {
                let text = c.text(value, &what)?;
                match text.trim().parse::<u32>() {
                    Ok(n) if n > 0 => Line::Key(k.into(), n.to_string()),
                    _ => c.skip(
                        value,
                        &format!("{k} = {}", value.value.show()),
                        "not a whole number of 1 or more",
                    ),
                }
            }
            _ => c.skip(
                value,
                &format!("{} = {}", toml_key(k), value.value.show()),
                "orchestra has no such orchestrator setting",
            ),
        };
        lines.push(line);
    }
    Ok(lines)
}

/// Words of a command: a string as written, or a list of words joined for a shell.
fn words_text(c: &Converter<'_>, value: &Node, what: &str) -> Result<String, ManifestError> {
    match &value.value {
        Yaml::Seq(items) => {
            let words = items
                .iter()
                .map(|i| c.text(i, what))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(shell_words::join(words))
        }
        _ => c.text(value, what),
    }
}

fn session(
    c: &mut Converter<'_>,
    names: &Names,
    hosts: &mut Hosts,
    name: &str,
    node: &Node,
) -> Result<Vec<Line>, ManifestError> {
    let entries = c.mapping(node, &format!("session {name:?}"))?;
    if !entries.iter().any(|(k, _)| k.value == "path") {
        return Err(c.error(node, format!("session {name:?} has no path")));
    }
    let mut lines = Vec::new();
    for (key, value) in entries {
        let k = key.value.as_str();
        let what = format!("sessions.{name}.{k}");
        if matches!(value.value, Yaml::Null) && k != "path" {
            continue;
        }
        let line = match k {
            "host" => {
                let text = c.text(value, &what)?;
                let text = text.trim();
                if text.is_empty() || text == "local" || text == "localhost" {
                    continue;
                }
                let (_, server, _) = crate::remote::config::parse_address(text).map_err(|e| {
                    c.error(
                        value,
                        format!("{what} {text:?} is not user@server (user and port optional): {e}"),
                    )
                })?;
                Line::Key("host".into(), toml_string(&hosts.name_for(text, &server)))
            }
            "path" => {
                let text = c.text(value, &what)?;
                if text.trim().is_empty() {
                    return Err(c.error(value, format!("{what} is empty")));
                }
                Line::Key("path".into(), toml_string(&text))
            }
            "tmux" => {
                let text = c.text(value, &what)?;
                match crate::manifest::check_tmux_name(&text) {
                    Ok(()) => Line::Key("tmux".into(), toml_string(&text)),
                    Err(why) => c.skip(value, &format!("tmux = {}", toml_string(&text)), why),
                }
            }
            "role" => Line::Key("role".into(), toml_string(&c.text(value, &what)?)),
            "env" => {
                let text = match &value.value {
                    // A mapping of variables becomes the shell lines that export them.
                    Yaml::Map(vars) => {
                        let mut exports = Vec::new();
                        for (var, v) in vars {
                            let ok = !var.value.is_empty()
                                && !var.value.starts_with(|ch: char| ch.is_ascii_digit())
                                && var
                                    .value
                                    .chars()
                                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
                            if !ok {
                                return Err(c.key_error(
                                    var,
                                    format!("{what}: {:?} is not a variable name", var.value),
                                ));
                            }
                            let v = c.text(v, &format!("{what}.{}", var.value))?;
                            exports.push(format!(
                                "export {}={}",
                                var.value,
                                shell_words::quote(&v)
                            ));
                        }
                        exports.join("; ")
                    }
                    _ => c.text(value, &what)?,
                };
                splittable(c, value, "env", text)
            }
            "claude_args" | "agent_args" => {
                let text = words_text(c, value, &what)?;
                splittable(c, value, "agent_args", text)
            }
            "blocked_by" => {
                let items: Vec<&Node> = match &value.value {
                    Yaml::Seq(items) => items.iter().collect(),
                    _ => vec![value],
                };
                let mut upstreams = Vec::new();
                for item in items {
                    let up = c.text(item, &what)?;
                    let Some(label) = names.label.get(&up) else {
                        return Err(
                            c.error(item, format!("{what} names {up:?}, which is not a session"))
                        );
                    };
                    upstreams.push(toml_string(label));
                }
                if upstreams.is_empty() {
                    continue;
                }
                Line::Key("blocked_by".into(), format!("[{}]", upstreams.join(", ")))
            }
            _ => c.skip(
                value,
                &format!("{} = {}", toml_key(k), value.value.show()),
                "orchestra has no such session setting",
            ),
        };
        lines.push(line);
    }
    Ok(lines)
}

/// `text` as `key`, when a shell could split it as orchestra will; else a comment.
fn splittable(c: &mut Converter<'_>, at: &Node, key: &str, text: String) -> Line {
    if shell_words::split(&text).is_ok() {
        Line::Key(key.into(), toml_string(&text))
    } else {
        c.skip(
            at,
            &format!("{key} = {}", toml_string(&text)),
            "cannot be split like a shell would (an open quote?)",
        )
    }
}

/// One `[[dependencies]]` table, or the comment that keeps one orchestra cannot run.
fn dependency(
    c: &mut Converter<'_>,
    names: &Names,
    i: usize,
    node: &Node,
) -> Result<String, ManifestError> {
    let what = format!("dependencies[{i}]");
    let entries = c.mapping(node, &what)?;
    let field = |name: &str| {
        entries
            .iter()
            .find(|(k, _)| k.value == name)
            .map(|(_, v)| v)
    };
    let (Some(when_node), Some(then_node)) = (field("when"), field("then")) else {
        return Err(c.error(node, format!("{what} needs both `when` and `then`")));
    };
    let when = c.text(when_node, &format!("{what}.when"))?;
    let then = words_text(c, then_node, &format!("{what}.then"))?;
    let mut extra = Vec::new();
    for (key, value) in entries {
        if key.value != "when" && key.value != "then" {
            extra.push(c.skip(
                value,
                &format!("{what}.{} = {}", toml_key(&key.value), value.value.show()),
                "orchestra has no such dependency setting",
            ));
        }
    }
    // Session names follow their renaming, in the condition and in the command.
    let when_words: Vec<&str> = when.split_whitespace().collect();
    let new_when = match when_words.split_first() {
        Some((first, rest)) if names.label.contains_key(*first) => {
            std::iter::once(names.rename(first))
                .chain(rest.iter().copied())
                .collect::<Vec<_>>()
                .join(" ")
        }
        _ => when.clone(),
    };
    let new_then = match shell_words::split(&then) {
        Ok(words) if words.iter().any(|w| names.rename(w) != w) => {
            shell_words::join(words.iter().map(|w| names.rename(w)))
        }
        _ => then.clone(),
    };
    let dep = Dependency {
        when: new_when.clone(),
        then: new_then.clone(),
    };
    let why_when = match dep.condition() {
        Some(Condition::Done { upstream }) if names.label.values().any(|l| l == upstream) => None,
        Some(Condition::Has { upstream, artifact })
            if names.label.values().any(|l| l == upstream) =>
        {
            match crate::artifact::parse(&artifact) {
                Ok(a) if a.kind.is_none_or(|k| k == crate::git::ArtifactKind::File) => None,
                Ok(_) => Some("a manifest session has no branch: `has` names a file".to_string()),
                Err(e) => Some(e.to_string()),
            }
        }
        _ => Some(
            "a `when` orchestra reads is \"NAME done\" or \"NAME has FILE\", NAME a session"
                .to_string(),
        ),
    };
    let why_then = shell_words::split(&new_then)
        .map_or(true, |w| w.is_empty())
        .then(|| "`then` is not a command".to_string());
    let why = why_when
        .map(|w| (w, when_node))
        .or_else(|| why_then.map(|w| (w, then_node)));
    let mut out = String::new();
    if let Some((why, at)) = why {
        c.not_mapped.push(format!(
            "{}:{}:{}: {what}: when = {}: {why}",
            c.file,
            at.referenced.line(),
            at.referenced.column(),
            toml_string(&when)
        ));
        out.push_str(&comment(&format!(
            "not imported ({why}):\n[[dependencies]]\nwhen = {}\nthen = {}",
            toml_string(&when),
            toml_string(&then)
        )));
        write_lines(&mut out, &extra);
        return Ok(out);
    }
    out.push_str(&format!(
        "[[dependencies]]\nwhen = {}\nthen = {}\n",
        toml_string(&new_when),
        toml_string(&new_then)
    ));
    write_lines(&mut out, &extra);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = include_str!("../../../tests/fixtures/import/config.yaml");
    const HOSTILE: &str = include_str!("../../../tests/fixtures/import/hostile.yaml");

    fn manifest(i: &Imported) -> crate::manifest::Manifest {
        crate::manifest::parse(&i.toml, "orchestra.toml")
            .unwrap_or_else(|e| panic!("{e}\n{}", i.toml))
    }

    #[test]
    fn the_seed_example_maps_hosts_sessions_and_dependencies() {
        let i = convert(CONFIG, "config.yaml").expect("converts");
        let m = manifest(&i);
        assert_eq!(m.orchestrator.shared_fs, "/share/orchestra");
        assert_eq!(m.orchestrator.capture_lines, 80);
        assert_eq!(m.orchestrator.wrap_up_cmd, "/wrap-up");
        assert_eq!(m.hosts.len(), 2, "one entry per address: {:?}", m.hosts);
        assert_eq!(
            m.hosts["gpu-server"].address,
            "alice@gpu-server.lab.example"
        );
        assert_eq!(m.hosts["cpu-box"].address, "bob@cpu-box:2222");
        let pipeline = &m.sessions["my-pipeline"];
        assert_eq!(pipeline.host.as_deref(), Some("gpu-server"));
        assert_eq!(pipeline.tmux.as_deref(), Some("claude_pipeline"));
        assert_eq!(pipeline.role.as_deref(), Some("pipeline"));
        assert_eq!(
            pipeline.agent_args.as_deref(),
            Some("--allowedTools Edit,Write,Bash")
        );
        let analysis = &m.sessions["my-analysis"];
        assert_eq!(analysis.blocked_by, ["my-pipeline"]);
        assert_eq!(analysis.agent_args.as_deref(), Some("--model opus"));
        assert_eq!(
            shell_words::split(analysis.env.as_deref().unwrap()).unwrap(),
            [
                "export",
                "CUDA_VISIBLE_DEVICES=1;",
                "export",
                "DATA_DIR=/share/data dir"
            ]
        );
        assert_eq!(m.sessions["writer"].host.as_deref(), Some("cpu-box"));
        assert_eq!(m.sessions["local"].host, None, "localhost is this machine");
        assert_eq!(m.dependencies.len(), 2);
        assert_eq!(m.dependencies[0].when, "my-pipeline done");
        assert_eq!(
            shell_words::split(&m.dependencies[0].then).unwrap(),
            ["brief", "my-analysis", "Data ready at /share/output"]
        );
        assert_eq!(
            m.dependencies[1].when,
            "my-analysis has results/summary.csv"
        );
        assert_eq!(
            m.start_order(&["writer".into(), "my-analysis".into(), "my-pipeline".into()]),
            ["my-pipeline", "my-analysis", "writer"]
        );
        // The free-text `when` and the unknown setting: kept as comments, listed with
        // their place.
        assert_eq!(i.not_mapped.len(), 2, "{:#?}", i.not_mapped);
        assert!(i.not_mapped[0].starts_with("config.yaml:9:17: notify_slack"));
        assert!(
            i.not_mapped[1].starts_with(
                r#"config.yaml:45:11: dependencies[2]: when = "pipeline completes step 7""#
            ),
            "{}",
            i.not_mapped[1]
        );
        assert!(i.toml.contains(
            "# when = \"pipeline completes step 7\"\n# then = \"brief my_analysis \\\"Step 7 is done\\\"\"\n"
        ));
        assert!(i
            .toml
            .contains("# not imported (orchestra has no such orchestrator setting): notify_slack"));
        assert_eq!(i.renamed.len(), 2, "{:?}", i.renamed);
        assert!(i.renamed[0].contains(r#""my_pipeline" is "my-pipeline""#));
    }

    #[test]
    fn hostile_names_and_values_mean_the_same_in_toml() {
        let i = convert(HOSTILE, "hostile.yaml").expect("converts");
        let m = manifest(&i);
        assert_eq!(
            m.sessions.keys().collect::<Vec<_>>(),
            ["sessions-evil", "we-ird-name"],
            "nothing injected a table: {}",
            i.toml
        );
        let weird = &m.sessions["we-ird-name"];
        assert_eq!(weird.path, "/tmp/a \"quoted\" ] [x] = 'dir'\nsecond line");
        assert_eq!(
            weird.role.as_deref(),
            Some("role with \"quotes\" and \\backslash and # hash")
        );
        assert_eq!(
            shell_words::split(weird.env.as_deref().unwrap()).unwrap(),
            [
                "export",
                "TOKEN=a'b\"c $(id) `x` \n newline;",
                "export",
                "EMPTY="
            ]
        );
        assert_eq!(
            shell_words::split(weird.agent_args.as_deref().unwrap()).unwrap(),
            [
                "--append-system-prompt",
                "say \"hi\"\nthen ]]]",
                "--x=[sessions.evil]"
            ]
        );
        let evil = &m.sessions["sessions-evil"];
        assert_eq!(evil.path, "= \"\"\"\n[orchestrator]\nagent = \"rm -rf /\"");
        assert_eq!(evil.blocked_by, ["we-ird-name"]);
        assert_eq!(m.orchestrator.agent, "claude", "no [orchestrator] injected");
        // A comment holding a newline stays comment lines.
        for line in i.toml.lines() {
            assert!(
                line.is_empty()
                    || line.starts_with('#')
                    || line.starts_with('[')
                    || line.contains(" = "),
                "{line:?} in\n{}",
                i.toml
            );
        }
        assert_eq!(i.not_mapped.len(), 1, "{:?}", i.not_mapped);
    }

    #[test]
    fn bad_input_is_one_error_at_its_place() {
        let cases: &[(&str, &str, usize, usize, &str)] = &[
            (
                "broken indentation",
                include_str!("../../../tests/fixtures/import/broken.yaml"),
                6,
                10,
                "mapping values are not allowed",
            ),
            ("not a mapping", "- a\n- b\n", 1, 1, "the file must be a mapping"),
            ("empty", "", 1, 1, "is empty"),
            ("sessions as a list", "sessions:\n  - a\n", 2, 3, "sessions must be a mapping"),
            ("session without a path", "sessions:\n  a:\n    role: x\n", 3, 5, "has no path"),
            ("path as a list", "sessions:\n  a:\n    path: [1, 2]\n", 3, 11, "must be a string, not a list"),
            ("unknown host string", "sessions:\n  a:\n    path: /x\n    host: \"me@box:ssh\"\n", 4, 11, "is not user@server"),
            ("host with an option", "sessions:\n  a:\n    path: /x\n    host: -oProxyCommand=x\n", 4, 11, "is not user@server"),
            ("unknown upstream", "sessions:\n  a:\n    path: /x\n    blocked_by: [ghost]\n", 4, 18, "not a session"),
            ("dependencies as a mapping", "dependencies:\n  a: b\n", 2, 3, "must be a list"),
            ("a session twice", "sessions:\n  a:\n    path: /x\n  a:\n    path: /y\n", 4, 3, "duplicate mapping key: a"),
            ("dependency without then", "sessions:\n  a:\n    path: /x\ndependencies:\n  - when: a done\n", 5, 5, "needs both"),
            (
                "blocked_by cycle",
                "sessions:\n  a:\n    path: /x\n    blocked_by: [b]\n  b:\n    path: /y\n    blocked_by: [a]\n",
                1,
                1,
                "goes round in a circle",
            ),
        ];
        for (what, text, line, column, message) in cases {
            let e = convert(text, "c.yaml").expect_err(what);
            assert_eq!(e.file, "c.yaml", "{what}");
            assert_eq!((e.line, e.column), (*line, *column), "{what}: {e}");
            assert!(e.message.contains(message), "{what}: {e}");
            assert!(!e.to_string().contains('\n'), "{what}: one line: {e}");
            assert!(
                !e.message.contains("at line"),
                "{what}: the place once: {e}"
            );
        }
    }

    #[test]
    fn what_orchestra_cannot_read_is_kept_as_a_comment() {
        let i = convert(
            "orchestrator:\n  sync_interval: often\n  poll_interval: 0\nextra: [1, {a: b}]\n\
             sessions:\n  a:\n    path: /x\n    tmux: a.b\n    claude_args: \"--x 'open\"\n    colour: red\n",
            "c.yaml",
        )
        .expect("converts");
        let m = manifest(&i);
        assert_eq!(m.orchestrator.sync_interval, "6h", "the default stays");
        assert_eq!(m.sessions["a"].tmux, None);
        assert_eq!(m.sessions["a"].agent_args, None);
        assert_eq!(i.not_mapped.len(), 6, "{:#?}", i.not_mapped);
        for expected in [
            r#"# not imported (not a duration orchestra reads ("6h", "30m")): sync_interval = "often""#,
            "# not imported (not a whole number of 1 or more): poll_interval = 0",
            r#"# not imported (orchestra has no such setting): extra = [1, { a = "b" }]"#,
            r#"tmux = "a.b""#,
            r#"agent_args = "--x 'open""#,
            r#"colour = "red""#,
        ] {
            assert!(i.toml.contains(expected), "{expected} in\n{}", i.toml);
        }
    }

    #[test]
    fn a_toml_string_is_one_line_and_reads_back() {
        for s in [
            "",
            "plain",
            "a\"b",
            "back\\slash",
            "new\nline",
            "tab\t",
            "\u{7}\u{7f}\u{1b}[31m",
            "'''\"\"\"",
            "é😀",
        ] {
            let text = format!("v = {}", toml_string(s));
            assert!(!text.contains('\n'));
            let back: BTreeMap<String, String> = toml::from_str(&text).unwrap();
            assert_eq!(back["v"], s);
        }
    }
}
