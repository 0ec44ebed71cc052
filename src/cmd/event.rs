//! `orchestra event`: hooks report state at once. Called by Claude Code and the Gemini CLI
//! for their hook events, by codex's `notify` and aider's notifications command at the end
//! of each turn (each kind's events mapped by its own function), and by tmux when a pane
//! dies; must return in milliseconds and, as an agent's hook, must never fail (a failing
//! hook would block the agent).

use std::io::{IsTerminal, Read, Write};

use crate::agent::AIDER_NOTIFICATION;
use crate::cli::EventArgs;
use crate::cmd::{Context, Output};
use crate::error::Error;
use crate::health::now_micros;
use crate::notify::{self};
use crate::paths::non_empty_env;

/// Hook JSON larger than this is not read further: only a few fields matter.
const MAX_HOOK_JSON: u64 = 1024 * 1024;

pub fn run(ctx: &Context, args: &EventArgs, out: &mut Output<'_>) -> Result<(), Error> {
    // The moment the event happened, as near as this process knows: it orders words.
    let at = now_micros();
    if args.from_hook {
        // An agent waits for its hook (Claude gives up after 10 s, and the word with it):
        // a busy record keeps the word in the spool instead of keeping the agent waiting.
        crate::state::answer_quickly();
    }
    // A tmux hook fires for every pane; one without @orchestra_id is not ours.
    if args.from_hook && args.session.as_deref() == Some("") {
        return Ok(());
    }
    let result = record(ctx, args, at);
    if args.from_hook {
        if let Err(e) = result {
            log_hook_problem(ctx, args, &e);
        }
        return Ok(());
    }
    let _ = out;
    result
}

fn record(ctx: &Context, args: &EventArgs, at: i64) -> Result<(), Error> {
    if args.payload.is_some() && args.event != crate::agent::CODEX_NOTIFY_EVENT {
        return Err(Error::BadInput(format!(
            "event {:?} takes no payload argument (only codex-notify does)",
            args.event
        )));
    }
    let id = args
        .session
        .clone()
        .or_else(|| non_empty_env("ORCHESTRA_SESSION"))
        .ok_or_else(|| {
            Error::BadInput("no session: pass --session ID or set ORCHESTRA_SESSION".into())
        })?;
    if args.event == AIDER_NOTIFICATION {
        return aider_notification(ctx, args, &id);
    }
    // Only the agents' hook events (capitalized: Claude Code's, the Gemini CLI's; opencode's
    // plugin's `opencode-…`) come with JSON on stdin; another caller's stdin may be an
    // agent's terminal (aider's).
    let hook = if let Some(payload) = &args.payload {
        serde_json::from_str(payload).unwrap_or(serde_json::Value::Null)
    } else if is_claude_hook(&args.event) && (args.from_hook || !std::io::stdin().is_terminal()) {
        read_hook_json()
    } else {
        serde_json::Value::Null
    };
    if args.remote {
        return crate::hooks::receive_remote(&ctx.home, &id, &args.event, &hook, at);
    }
    crate::hooks::receive(ctx, &id, &args.event, &hook, at)
}

/// aider ran its notifications command: its turn ended and it waits for the person, at its
/// prompt or with a question — which one, the command is not told, and aider draws it only
/// once the command has returned. So the hook returns at once, and a detached `--settle`
/// half (`hooks::settle_aider`) reads the screen until it shows which and records
/// that, as the hook's word.
fn aider_notification(ctx: &Context, args: &EventArgs, id: &str) -> Result<(), Error> {
    if !args.settle {
        let words = [
            "event",
            "--from-hook",
            "--settle",
            "--session",
            id,
            AIDER_NOTIFICATION,
        ];
        notify::spawn_self_detached(&words.map(String::from), &[]);
        return Ok(());
    }
    crate::hooks::settle_aider(ctx, id)
}

fn is_claude_hook(event: &str) -> bool {
    event.chars().next().is_some_and(|c| c.is_ascii_uppercase()) || event.starts_with("opencode-")
}

fn read_hook_json() -> serde_json::Value {
    let mut text = String::new();
    let _ = std::io::stdin()
        .take(MAX_HOOK_JSON)
        .read_to_string(&mut text);
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

fn log_hook_problem(ctx: &Context, args: &EventArgs, e: &Error) {
    if let Ok(mut f) = crate::paths::open_log(&ctx.home.join("logs").join("hooks.log")) {
        let _ = writeln!(
            f,
            "{} event {} session {}: {e}",
            chrono::Local::now().format("%Y-%m-%d %H:%M:%S"),
            args.event,
            args.session
                .clone()
                .or_else(|| non_empty_env("ORCHESTRA_SESSION"))
                .unwrap_or_default()
        );
    }
}
