//! `orchestra mcp`: the orchestrator's tools over MCP on stdio. The protocol is
//! `crate::mcp`'s; here each call becomes the command line its tool names, run through
//! the router as the CLI would run it, its output kept and handed back: the same checks,
//! the same one-line refusal, and nothing made when refused.

use serde_json::{json, Map, Value};

use crate::cli::{Cli, McpArgs};
use crate::cmd::{open_repo, Context, Output};
use crate::command_error::CommandError;
use crate::error::Error;
use crate::git::Repo;
use crate::mcp::schema::{flag, text};
use crate::mcp::tools::{Caller, Shape, Tool, DIFF_DEFAULT};
use crate::mcp::{Outcome, Tools};

pub fn run(ctx: &Context, args: &McpArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.repo.repo.as_deref())?;
    let session = args
        .session
        .clone()
        .or_else(|| crate::paths::non_empty_env("ORCHESTRA_SESSION"));
    if let Some(who) = &session {
        if who.is_empty() || who.len() > 200 || crate::inert::line(who) != *who {
            return Err(Error::BadInput(
                "--session: one line of at most 200 printable characters".into(),
            ));
        }
    }
    let mut server = Server {
        ctx,
        path: repo.main_worktree().to_string_lossy().into_owned(),
        repo,
        session,
    };
    let mut stdin = std::io::stdin().lock();
    crate::mcp::serve(&mut stdin, out.out, out.err, &mut server);
    Ok(())
}

struct Server<'a> {
    ctx: &'a Context,
    repo: Repo,
    path: String,
    session: Option<String>,
}

impl Tools for Server<'_> {
    fn call(&mut self, tool: &Tool, args: &Map<String, Value>) -> Outcome {
        if let Some(agent) = text(args, "agent") {
            if let Some(word) = crate::mcp::tools::persons_flag(agent) {
                return Outcome::error(format!(
                    "{}: argument `agent`: {word} is the person's to give (dispatch it yourself with `orchestra dispatch`)",
                    tool.name
                ));
            }
        }
        let caller = Caller {
            repo: &self.path,
            session: self.session.as_deref(),
        };
        let mut argv = vec!["orchestra".to_string()];
        argv.extend((tool.argv)(args, &caller));
        // A briefing goes through a file: on the command line a text starting with `@`
        // would name one.
        let briefing = match tool.name {
            "brief" => match self.briefing_file(text(args, "text").unwrap_or_default()) {
                Ok(file) => {
                    argv.push(format!("@{}", file.0.display()));
                    Some(file)
                }
                Err(e) => return Outcome::error(format!("brief: {e}")),
            },
            _ => None,
        };
        let (result, stdout, stderr) = self.run(&argv);
        drop(briefing);
        if let Err(line) = result {
            return Outcome::error(line);
        }
        let mut outcome = shaped(tool.shape, &stdout, &stderr);
        if tool.name == "review_summary" && flag(args, "diff") {
            let cap = args
                .get("max_diff_bytes")
                .and_then(Value::as_i64)
                .unwrap_or(DIFF_DEFAULT);
            match self.diff(args, usize::try_from(cap).unwrap_or(0)) {
                Ok(diff) => {
                    outcome.text.push_str("\n\n");
                    outcome.text.push_str(&diff);
                    if let Some(Value::Object(s)) = &mut outcome.structured {
                        s.insert("diff".into(), json!(diff));
                    }
                }
                Err(e) => return Outcome::error(CommandError::from(&e).line().unwrap_or_default()),
            }
        }
        outcome
    }
}

impl Server<'_> {
    /// Runs `argv` as the command line would, its output kept: Err is the CLI's one line.
    fn run(&self, argv: &[String]) -> (Result<(), String>, String, String) {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let result = match <Cli as clap::Parser>::try_parse_from(argv) {
            Err(e) => Err(CommandError::usage(&e)
                .line()
                .unwrap_or_else(|| e.to_string())),
            Ok(cli) => {
                let mut out = Output {
                    out: &mut stdout,
                    err: &mut stderr,
                };
                crate::cmd::run(self.ctx, &cli.command, &mut out)
                    .map_err(|e| CommandError::from(&e).line().unwrap_or_default())
            }
        };
        (
            result,
            String::from_utf8_lossy(&stdout).into_owned(),
            String::from_utf8_lossy(&stderr).into_owned(),
        )
    }

    fn briefing_file(&self, text: &str) -> std::io::Result<Briefing> {
        let dir = self.ctx.home.join("mcp");
        crate::paths::private_dir(&dir)?;
        let path = dir.join(format!("brief-{}.txt", uuid::Uuid::new_v4()));
        crate::paths::write_private(&path, text)?;
        Ok(Briefing(path))
    }

    /// The session's full diff as `review` shows it, inert, cut at `cap` bytes.
    fn diff(&self, args: &Map<String, Value>, cap: usize) -> Result<String, Error> {
        let label = text(args, "label").unwrap_or_default();
        let store = self.ctx.store()?;
        let session = crate::session::find_branch_session(&store, &self.repo, label, "review")?;
        let target = crate::session::target_branch(&self.repo, &session, text(args, "into"))?;
        let review = self.repo.review(&session.branch, &target)?;
        let text = self
            .repo
            .review_text(&review.merge_base, &session.branch, false)?;
        if text.len() <= cap {
            return Ok(text);
        }
        let mut end = cap;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Ok(format!(
            "{}\n[diff cut at {cap} of {} bytes: `orchestra review {label}` shows it all]",
            &text[..end],
            text.len()
        ))
    }
}

/// A briefing's text in a private file, removed once sent.
struct Briefing(std::path::PathBuf);

impl Drop for Briefing {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A command's output as a tool's result: its JSON as the structured part (an array
/// under `key`), else its lines; the notes it gave on stderr kept beside them.
fn shaped(shape: Shape, stdout: &str, stderr: &str) -> Outcome {
    let notes: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let structured = match shape {
        Shape::Json(key) => match serde_json::from_str::<Value>(stdout) {
            Ok(Value::Object(o)) => Value::Object(o),
            Ok(other) => json!({ key: other }),
            Err(_) => json!({ "lines": stdout.lines().collect::<Vec<_>>() }),
        },
        Shape::Lines => json!({ "lines": stdout.lines().collect::<Vec<_>>() }),
    };
    let mut text = match shape {
        Shape::Json(_) => serde_json::to_string(&structured).unwrap_or_default(),
        Shape::Lines => stdout.trim_end().to_string(),
    };
    let mut structured = structured;
    if !notes.is_empty() {
        structured["notes"] = json!(notes);
        text.push('\n');
        text.push_str(&notes.join("\n"));
    }
    Outcome {
        text,
        structured: Some(structured),
        is_error: false,
    }
}
