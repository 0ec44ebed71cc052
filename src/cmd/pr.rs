//! `orchestra pr`: a session's branch pushed and its pull request opened or updated
//! (crate::pr), the draft first edited by the person in $EDITOR unless --yes.

use std::io::IsTerminal;

use crate::cli::PrArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::pr::{self, Draft, Opened, Options};

pub fn run(ctx: &Context, args: &PrArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let Some(label) = args.label.as_deref().filter(|_| !args.background) else {
        return background(ctx, args.json, out);
    };
    // Refused before anything is read or sent: nobody could review the draft.
    if !args.yes && !std::io::stdin().is_terminal() {
        return Err(Error::BadInput(
            "no terminal to edit the pull request's title and body in: pass --yes to open it without review"
                .into(),
        ));
    }
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    let options = Options {
        title: args.title.clone(),
        base: args.base.clone(),
        ready: args.ready,
        closes: crate::tasks::work::pull_request_line(&store, &repo, label)?,
    };
    let home = ctx.home.clone();
    let yes = args.yes;
    let mut review = move |session_id: &str, draft: Draft| -> Result<Option<Draft>, Error> {
        if yes {
            return Ok(Some(draft));
        }
        edit(&home, session_id, &draft)
    };
    let Some(opened) = pr::open(&store, &repo, label, &options, &mut review, out)? else {
        return Ok(());
    };
    let pull = opened.pull();
    let kind = if pull.draft {
        "draft pull request"
    } else {
        "pull request"
    };
    out.line(match &opened {
        Opened::Created(_) => format!("opened {kind} #{}: {}", pull.number, pull.url),
        Opened::Updated(_) => format!("updated {kind} #{}: {}", pull.number, pull.url),
        Opened::Unchanged(_) => format!("{kind} #{} is up to date: {}", pull.number, pull.url),
    });
    Ok(())
}

/// `pr --background`: one read of every recorded pull request's state. Quiet: what
/// starts it is the status line, which nobody reads the output of.
fn background(ctx: &Context, json: bool, out: &mut Output<'_>) -> Result<(), Error> {
    let store = ctx.store()?;
    let pass = pr::refresh::background(ctx, &store)?;
    if json {
        out.line(serde_json::to_string_pretty(&pass).unwrap_or_default());
    }
    Ok(())
}

/// The draft in `$VISUAL`/`$EDITOR` (default vi), on a file of the session's own under
/// the home, removed after: what the person saved, or `None` when they emptied the
/// title or the editor failed.
fn edit(home: &std::path::Path, session_id: &str, draft: &Draft) -> Result<Option<Draft>, Error> {
    let file = crate::paths::session_dir(home, session_id).join("PULL_REQUEST_EDITMSG.md");
    crate::paths::write_private(&file, pr::as_text(draft))
        .map_err(Error::io(format!("writing {}", file.display())))?;
    let editor = ["VISUAL", "EDITOR"]
        .into_iter()
        .find_map(crate::paths::non_empty_env)
        .unwrap_or_else(|| "vi".into());
    let argv = shell_words::split(&editor)
        .map_err(|e| Error::BadInput(format!("cannot split $EDITOR {editor:?}: {e}")))?;
    let Some((program, rest)) = argv.split_first() else {
        return Err(Error::BadInput("$EDITOR is empty".into()));
    };
    let edited = crate::process::Run::new(program, crate::process::A_PERSON)
        .args(rest)
        .arg(&file)
        .stdin_inherit()
        .inherit_output()
        .status();
    let text = std::fs::read_to_string(&file);
    let _ = std::fs::remove_file(&file);
    match edited {
        Ok(status) if status.success() => Ok(text.ok().as_deref().and_then(pr::from_text)),
        Ok(_) => Ok(None),
        Err(e) => Err(Error::BadInput(format!(
            "cannot run $EDITOR {program:?}: {e}"
        ))),
    }
}
