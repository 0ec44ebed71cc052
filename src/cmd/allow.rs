//! `orchestra allow`: the person allows what the repo's files would have orchestra run on
//! its own and the addresses they would have it send the person's tokens to
//! (`crate::trust`), or takes it back (`--revoke`), or reads it (`--show`).

use crate::cli::AllowArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::trust::Asked;

pub fn run(ctx: &Context, args: &AllowArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.repo.repo.as_deref())?;
    let main = repo.main_worktree();
    if args.revoke {
        let revoked = crate::trust::revoke(&ctx.home, main)
            .map_err(Error::io("removing what was allowed"))?;
        out.line(if revoked {
            format!(
                "revoked: {}'s commands, API addresses, .mcp.json and agent settings are not allowed any more",
                main.display()
            )
        } else {
            format!("nothing was allowed for {}", main.display())
        });
        return Ok(());
    }
    let asked = Asked::of(main)?;
    let listing = asked.listing();
    if listing.is_empty() {
        out.line(format!(
            "nothing to allow: {} has no orchestra.toml command that runs on its own, no API address, no .mcp.json and no agent settings",
            main.display()
        ));
        return Ok(());
    }
    if args.show {
        let allowed = |yes: bool| if yes { "allowed" } else { "not allowed" };
        out.line(format!(
            "{} asks (commands {}{}{}):",
            main.display(),
            allowed(asked.commands_allowed(&ctx.home)),
            if asked.apis.is_empty() {
                String::new()
            } else {
                format!(", API addresses {}", allowed(asked.apis_allowed(&ctx.home)))
            },
            if asked.has_mcp() {
                format!(", .mcp.json {}", allowed(asked.mcp_allowed(&ctx.home)))
            } else {
                String::new()
            }
        ));
    } else {
        asked
            .allow(&ctx.home)
            .map_err(Error::io("recording what is allowed"))?;
        out.line(format!("allowed for {}:", main.display()));
    }
    for line in listing {
        out.line(format!("  {line}"));
    }
    Ok(())
}
