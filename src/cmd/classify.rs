//! `orchestra classify`: what a captured screen says its agent is doing.

use std::io::Read;

use crate::agent::rules::screen_text;
use crate::cli::ClassifyArgs;
use crate::cmd::{render_table, Context, Output};
use crate::error::Error;
use crate::health::disagreements;

/// Only the bottom of a screen decides; a huge capture is read but not decoded whole.
const TAIL_BYTES: usize = 64 * 1024;

pub fn run(ctx: &Context, args: &ClassifyArgs, out: &mut Output<'_>) -> Result<(), Error> {
    if args.disagreements {
        return disagreements(ctx, args, out);
    }
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
                .map_err(|e| Error::BadInput(format!("cannot read {}: {e}", path.display())))?;
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

/// `--disagreements`: the kept screens listed, or one saved as a fixture (`--save N PATH`).
fn disagreements(ctx: &Context, args: &ClassifyArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let kept = disagreements::list(&ctx.home);
    if let Some([n, path]) = args.save.as_deref() {
        let chosen = n
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| kept.get(i))
            .ok_or_else(|| {
                Error::BadInput(format!(
                    "no disagreement {n:?}: {} kept (orchestra classify --disagreements lists them)",
                    kept.len()
                ))
            })?;
        let path = std::path::Path::new(path);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::BadInput(format!("cannot write {}: {e}", path.display())))?;
        use std::io::Write;
        file.write_all(chosen.screen.as_bytes())
            .map_err(Error::io(format!("writing {}", path.display())))?;
        out.line(format!(
            "wrote {} ({} {}, read {} by {})",
            path.display(),
            chosen.agent,
            chosen.release.as_deref().unwrap_or("release unknown"),
            chosen.screen_state,
            chosen.rule.as_deref().unwrap_or("no rule"),
        ));
        return Ok(());
    }
    if args.json {
        out.line(serde_json::to_string_pretty(&kept).unwrap_or_else(|_| "[]".into()));
        return Ok(());
    }
    if kept.is_empty() {
        out.line("no disagreements kept");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = kept
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let when = crate::duration::local_time(d.at);
            vec![
                (i + 1).to_string(),
                when,
                d.label.clone(),
                format!(
                    "{} {}",
                    d.agent,
                    d.release.as_deref().unwrap_or("release unknown")
                ),
                d.hook_state.clone(),
                format!(
                    "{} ({})",
                    d.screen_state,
                    d.rule.as_deref().unwrap_or("no rule")
                ),
            ]
        })
        .collect();
    for line in render_table(&["N", "WHEN", "SESSION", "AGENT", "HOOK", "SCREEN"], &rows) {
        out.line(line);
    }
    Ok(())
}
