//! The tools: each one's name, description and fields, and the `orchestra` command line
//! it comes to. None of them merges, kills, approves, denies or passes --yolo: those
//! decisions stay the person's, and every description says so.

use serde_json::{Map, Value};

use super::schema::{flag, text, texts, Field, Kind};

/// What every description ends with, and what `initialize` tells the client.
pub const DECISIONS: &str = "Merging, killing, approving and denying stay the person's \
    decisions: no tool here does them; tell the person the command to run (e.g. \
    `orchestra merge LABEL`).";

pub const INSTRUCTIONS: &str = "orchestra's tools: draft a task, dispatch it as a session \
    (its own worktree, branch and tmux window), follow sessions (list, status, health, \
    conflicts, cost), review what one brings, brief it, and wire dependencies. Merging, \
    killing, approving and denying stay the person's decisions: no tool here does them; \
    tell the person the command to run (e.g. `orchestra merge LABEL`).";

/// Who is calling and where: what each command line is completed with.
pub struct Caller<'a> {
    /// The repository the server serves (`--repo`).
    pub repo: &'a str,
    /// Who asks (the orchestrator), recorded on what it dispatches.
    pub session: Option<&'a str>,
}

/// How a command's output becomes the structured result.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Its stdout is JSON: an object as it is, an array under this key.
    Json(&'static str),
    /// Its stdout is lines of text: `{"lines": [...]}`.
    Lines,
}

pub struct Tool {
    pub name: &'static str,
    pub about: &'static str,
    pub fields: &'static [Field],
    pub shape: Shape,
    /// The command line (after `orchestra`) for these arguments.
    pub argv: fn(&Map<String, Value>, &Caller<'_>) -> Vec<String>,
}

impl Tool {
    /// This tool as `tools/list` shows it.
    pub fn listed(&self) -> Value {
        serde_json::json!({
            "name": self.name,
            "description": format!("{} {DECISIONS}", self.about),
            "inputSchema": super::schema::json_schema(self.fields),
            "outputSchema": self.output_schema(),
        })
    }

    /// What its `structuredContent` holds, as `shaped` in the command makes it: the
    /// command's `--json` (an object as it is, an array under its key), or its lines;
    /// the notes it gave on stderr beside either. Objects stay open: a command's `--json`
    /// may gain fields, and a client must not break on one.
    pub fn output_schema(&self) -> Value {
        let strings = serde_json::json!({"type": "array", "items": {"type": "string"}});
        let mut properties = Map::new();
        properties.insert("notes".into(), strings.clone());
        properties.insert("lines".into(), strings);
        let required: Vec<&str> = match self.shape {
            Shape::Json(key) => {
                properties.insert(
                    key.into(),
                    serde_json::json!({"type": "array", "items": {"type": "object"}}),
                );
                Vec::new()
            }
            Shape::Lines => vec!["lines"],
        };
        serde_json::json!({
            "type": "object",
            "properties": properties,
            "required": required,
        })
    }
}

/// The word of an agent command that would take a decision of the person's away (run
/// without asking), if it has one: such a dispatch is the person's to make.
pub fn persons_flag(agent: &str) -> Option<String> {
    const PERSONS: [&str; 8] = [
        "--yolo",
        "-y",
        "--dangerously-skip-permissions",
        "--dangerously-bypass-approvals-and-sandbox",
        "--full-auto",
        "--yes-always",
        "bypassPermissions",
        "--approval-mode",
    ];
    let words = shell_words::split(agent).unwrap_or_else(|_| vec![agent.to_string()]);
    words.into_iter().find(|w| {
        PERSONS
            .iter()
            .any(|p| w == p || w.starts_with(&format!("{p}=")) || w.ends_with("=bypassPermissions"))
    })
}

pub fn find(name: &str) -> Option<&'static Tool> {
    ALL.iter().find(|t| t.name == name)
}

const LABEL: Field = Field {
    name: "label",
    kind: Kind::Text { max: 63 },
    required: true,
    about: "The session's label: 1-63 characters of a-z, 0-9 and '-'.",
};

const ALL_REPOS: Field = Field {
    name: "all",
    kind: Kind::Flag,
    required: false,
    about: "Every repo's sessions, not only this one's.",
};

/// The largest prompt or briefing taken (a message is bounded at 1 MiB anyway).
const TEXT: usize = 256 * 1024;

/// The default and the largest diff review_summary shows.
pub const DIFF_DEFAULT: i64 = 64 * 1024;
pub const DIFF_MAX: i64 = 512 * 1024;

fn words(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| (*s).to_string()).collect()
}

/// `--repo=REPO`: the `=` form throughout, so no value is read as an option.
fn repo(c: &Caller<'_>) -> String {
    format!("--repo={}", c.repo)
}

fn option(argv: &mut Vec<String>, name: &str, value: Option<&str>) {
    if let Some(v) = value {
        argv.push(format!("--{name}={v}"));
    }
}

pub static ALL: &[Tool] = &[
    Tool {
        name: "slugify",
        about: "Turn a task's title into a free session label (as `orchestra slugify`).",
        fields: &[Field {
            name: "title",
            kind: Kind::Text { max: 4096 },
            required: true,
            about: "The title, e.g. \"Fix the login bug\".",
        }],
        shape: Shape::Lines,
        argv: |a, c| {
            let mut v = words(&["slugify"]);
            v.push(repo(c));
            v.push("--".into());
            v.push(text(a, "title").unwrap_or_default().to_string());
            v
        },
    },
    Tool {
        name: "dispatch",
        about: "Start an agent on a drafted task: a new branch session/<label>, its own \
            worktree and tmux window (as `orchestra dispatch`). Refused with the CLI's \
            one-line reason, nothing made, on a taken label, a bad base, a cycle.",
        fields: &[
            LABEL,
            Field {
                name: "prompt",
                kind: Kind::Text { max: TEXT },
                required: true,
                about: "The task, as the agent should read it.",
            },
            Field {
                name: "agent",
                kind: Kind::Text { max: 4096 },
                required: false,
                about: "The agent command (e.g. \"claude --model opus\"). Default: the person's ($ORCHESTRA_AGENT, else claude).",
            },
            Field {
                name: "base",
                kind: Kind::Text { max: 1024 },
                required: false,
                about: "The commit the branch starts from. Default: HEAD of the main worktree.",
            },
            Field {
                name: "after",
                kind: Kind::Texts,
                required: false,
                about: "Wait for other sessions' artifacts first: each UPSTREAM:ARTIFACT (a file, branch or commit).",
            },
            Field {
                name: "from_upstream",
                kind: Kind::Flag,
                required: false,
                about: "With after: start from the upstream's branch head once unblocked.",
            },
            Field {
                name: "wait_setup",
                kind: Kind::Flag,
                required: false,
                about: "Wait until the worktree's setup is done and the agent started.",
            },
        ],
        shape: Shape::Lines,
        argv: |a, c| {
            let mut v = words(&["dispatch"]);
            v.push(repo(c));
            option(&mut v, "prompt", text(a, "prompt"));
            option(&mut v, "agent", text(a, "agent"));
            option(&mut v, "base", text(a, "base"));
            for after in texts(a, "after") {
                v.push(format!("--after={after}"));
            }
            if flag(a, "from_upstream") {
                v.push("--from-upstream".into());
            }
            if flag(a, "wait_setup") {
                v.push("--wait-setup".into());
            }
            option(&mut v, "requested-by", c.session);
            v.push("--".into());
            v.push(text(a, "label").unwrap_or_default().to_string());
            v
        },
    },
    Tool {
        name: "list",
        about: "The sessions of this repo (as `orchestra list --json`): status, state, \
            branch, window, conflicts, task, cost, pull request, who asked for each.",
        fields: &[ALL_REPOS],
        shape: Shape::Json("sessions"),
        argv: |a, c| {
            let mut v = words(&["list", "--json"]);
            v.push(repo(c));
            if flag(a, "all") {
                v.push("--all".into());
            }
            v
        },
    },
    Tool {
        name: "status",
        about: "Every session, local and remote, a row each: label, host, state, status, \
            whether its host answers (as `orchestra status --json`).",
        fields: &[],
        shape: Shape::Json("sessions"),
        argv: |_, _| words(&["status", "--json"]),
    },
    Tool {
        name: "health",
        about: "Each session's state, who said it and how long its window has been quiet \
            (as `orchestra health --json`); a waiting one needs the person.",
        fields: &[],
        shape: Shape::Json("rows"),
        argv: |_, _| words(&["health", "--json"]),
    },
    Tool {
        name: "review_summary",
        about: "What a session would bring into its target: commits, files, insertions, \
            deletions, conflicts, uncommitted paths (as `orchestra review --json`); the \
            full diff only with diff: true, cut at max_diff_bytes.",
        fields: &[
            LABEL,
            Field {
                name: "into",
                kind: Kind::Text { max: 1024 },
                required: false,
                about: "The branch to compare against. Default: the one it started from.",
            },
            Field {
                name: "diff",
                kind: Kind::Flag,
                required: false,
                about: "Also the full diff, shown inert and bounded.",
            },
            Field {
                name: "max_diff_bytes",
                kind: Kind::Count { min: 1024, max: DIFF_MAX },
                required: false,
                about: "How much of the diff at most (default 65536).",
            },
        ],
        shape: Shape::Json("review"),
        argv: |a, c| {
            let mut v = words(&["review", "--json"]);
            v.push(repo(c));
            option(&mut v, "into", text(a, "into"));
            v.push("--".into());
            v.push(text(a, "label").unwrap_or_default().to_string());
            v
        },
    },
    Tool {
        name: "brief",
        about: "Send text to a session's agent, exactly as given, as one message (as \
            `orchestra brief`); refused while a menu or question is open on its screen.",
        fields: &[
            Field {
                name: "label",
                kind: Kind::Text { max: 63 },
                required: false,
                about: "The session's label; omit with all.",
            },
            Field {
                name: "text",
                kind: Kind::Text { max: TEXT },
                required: true,
                about: "The briefing, sent exactly as given.",
            },
            Field {
                name: "all",
                kind: Kind::Flag,
                required: false,
                about: "Send to every live session of this repo.",
            },
        ],
        shape: Shape::Lines,
        // The text itself goes through a file (`@FILE`): the command line would read a
        // text starting with `@` as a file's name.
        argv: |a, c| {
            let mut v = words(&["brief"]);
            v.push(repo(c));
            if flag(a, "all") {
                v.push("--all".into());
            }
            v.push("--".into());
            if let Some(label) = text(a, "label") {
                v.push(label.to_string());
            }
            v
        },
    },
    Tool {
        name: "deps_add",
        about: "Make a session wait for another's artifact (as `orchestra deps add`): a file \
            path, a branch or a commit. Refused: self edges, duplicates, cycles.",
        fields: &[
            Field {
                name: "dependent",
                kind: Kind::Text { max: 63 },
                required: true,
                about: "The label of the session that waits.",
            },
            Field {
                name: "upstream",
                kind: Kind::Text { max: 63 },
                required: true,
                about: "The label of the session it waits for.",
            },
            Field {
                name: "artifact",
                kind: Kind::Text { max: 4096 },
                required: true,
                about: "A file path, branch or commit (file:, branch:, commit: force the kind).",
            },
        ],
        shape: Shape::Lines,
        argv: |a, c| {
            let mut v = words(&["deps"]);
            v.push(repo(c));
            v.extend(words(&["add", "--"]));
            for f in ["dependent", "upstream", "artifact"] {
                v.push(text(a, f).unwrap_or_default().to_string());
            }
            v
        },
    },
    Tool {
        name: "deps_graph",
        about: "The dependencies between this repo's sessions (as `orchestra deps graph --json`).",
        fields: &[],
        shape: Shape::Json("graph"),
        argv: |_, c| {
            let mut v = words(&["deps"]);
            v.push(repo(c));
            v.extend(words(&["graph", "--json"]));
            v
        },
    },
    Tool {
        name: "conflicts",
        about: "The pairs of live sessions (and a session and its target) whose work would \
            conflict if merged, with the paths (as `orchestra conflicts --json`).",
        fields: &[],
        shape: Shape::Json("pairs"),
        argv: |_, c| {
            let mut v = words(&["conflicts", "--json"]);
            v.push(repo(c));
            v
        },
    },
    Tool {
        name: "tasks_list",
        about: "The open tasks of this repo's tracker ([tasks] in orchestra.toml), as \
            `orchestra tasks --json`.",
        fields: &[],
        shape: Shape::Json("tasks"),
        argv: |_, c| {
            let mut v = words(&["tasks", "--json"]);
            v.push(repo(c));
            v
        },
    },
    Tool {
        name: "tasks_pick",
        about: "Move a tracker task to in progress; with dispatch, first start a session on \
            it (as `orchestra tasks pick --dispatch`).",
        fields: &[
            Field {
                name: "id",
                kind: Kind::Text { max: 1024 },
                required: true,
                about: "The task's id, as tasks_list gives it.",
            },
            Field {
                name: "dispatch",
                kind: Kind::Flag,
                required: false,
                about: "Start a session on it: its title and content the prompt.",
            },
            Field {
                name: "label",
                kind: Kind::Text { max: 63 },
                required: false,
                about: "The session's label with dispatch. Default: the title, slugified.",
            },
            Field {
                name: "agent",
                kind: Kind::Text { max: 4096 },
                required: false,
                about: "The agent command with dispatch.",
            },
        ],
        shape: Shape::Lines,
        argv: |a, c| {
            let mut v = words(&["tasks"]);
            v.push(repo(c));
            v.push("pick".into());
            v.push(repo(c));
            if flag(a, "dispatch") {
                v.push("--dispatch".into());
                option(&mut v, "requested-by", c.session);
            }
            option(&mut v, "label", text(a, "label"));
            option(&mut v, "agent", text(a, "agent"));
            v.push("--".into());
            v.push(text(a, "id").unwrap_or_default().to_string());
            v
        },
    },
    Tool {
        name: "cost",
        about: "What the sessions cost: tokens by kind and dollars, per session, outcome or \
            day (as `orchestra cost --json`).",
        fields: &[
            Field {
                name: "by",
                kind: Kind::Choice(&["session", "outcome", "day"]),
                required: false,
                about: "One row per session (default), outcome or UTC day.",
            },
            ALL_REPOS,
        ],
        shape: Shape::Json("rows"),
        argv: |a, c| {
            let mut v = words(&["cost", "--json"]);
            v.push(repo(c));
            option(&mut v, "by", text(a, "by"));
            if flag(a, "all") {
                v.push("--all".into());
            }
            v
        },
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The person's decisions have no tool: none is named for them, none's command line
    /// reaches their commands or --yolo, and every description says so.
    #[test]
    fn no_tool_reaches_the_persons_decisions() {
        let caller = Caller {
            repo: "/r",
            session: Some("o"),
        };
        let mut every = Map::new();
        for t in ALL {
            for f in t.fields {
                let v = match f.kind {
                    Kind::Flag => Value::Bool(true),
                    Kind::Texts => serde_json::json!(["a:b"]),
                    Kind::Count { min, .. } => serde_json::json!(min),
                    Kind::Choice(c) => serde_json::json!(c[0]),
                    Kind::Text { .. } => serde_json::json!("x"),
                };
                every.insert(f.name.to_string(), v);
            }
        }
        for t in ALL {
            assert!(!["merge", "kill", "approve", "deny"]
                .iter()
                .any(|d| t.name.contains(d)));
            assert!(t.listed()["description"]
                .as_str()
                .unwrap()
                .contains(DECISIONS));
            let argv = (t.argv)(&every, &caller);
            let command = &argv[0];
            assert!(
                !["merge", "kill", "approve", "deny", "pr", "restart", "down"]
                    .contains(&command.as_str()),
                "{}: {argv:?}",
                t.name
            );
            assert!(
                !argv
                    .iter()
                    .any(|a| a.contains("yolo") || a.contains("dangerously")),
                "{argv:?}"
            );
        }
    }
}
