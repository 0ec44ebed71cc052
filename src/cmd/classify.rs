//! `orchestra classify`: what a captured screen says its agent is doing.

use std::io::Read;

use crate::agent::rules::screen_text;
use crate::cli::ClassifyArgs;
use crate::cmd::{Context, Output};
use crate::error::Error;

/// Only the bottom of a screen decides; a huge capture is read but not decoded whole.
const TAIL_BYTES: usize = 64 * 1024;

pub fn run(ctx: &Context, args: &ClassifyArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let rules = ctx.rules()?;
    if !rules.knows(&args.kind) {
        return Err(Error::BadInput(format!(
            "no screen rules for agent kind {:?} (built in: claude, codex, gemini, aider, generic)",
            args.kind
        )));
    }
    let mut bytes = Vec::new();
    match &args.file {
        Some(path) => {
            bytes = std::fs::read(path)
                .map_err(|e| Error::BadInput(format!("cannot read {}: {e}", path.display())))?
        }
        None => {
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(Error::io("reading the screen from standard input"))?;
        }
    }
    let verdict = rules
        .classify(&args.kind, &screen_text(&bytes, TAIL_BYTES))
        .map_err(|e| Error::BadInput(e.to_string()))?;
    if args.json {
        out.line(
            serde_json::json!({
                "state": verdict.state.as_str(),
                "rule": verdict.rule,
                "kind": args.kind,
            })
            .to_string(),
        );
    } else {
        out.line(verdict.state.as_str());
    }
    Ok(())
}
