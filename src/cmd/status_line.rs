//! `orchestra status-line`: the `#()` job of tmux's status bar. Local sessions from a
//! refresh (or its cache), the radar's and remote hosts' parts from their files only.

use crate::cmd::{Context, Output};
use crate::error::Error;
use crate::health;
use crate::health::tick::refresh_once;

pub fn status_line(ctx: &Context, out: &mut Output<'_>) -> Result<(), Error> {
    // tmux runs this every few seconds and waits for it: a busy record is not waited for.
    crate::state::answer_quickly();
    let key = health::server_key(ctx.server.socket.as_deref());
    let line = health::status_line(&ctx.home, &key, || {
        refresh_once(ctx).map_err(|e| match e {
            Error::Health(h, _) => h,
            Error::State(s, _) => health::HealthError::State(s),
            Error::Tmux(t, _) => health::HealthError::Tmux(t),
            other => health::HealthError::Other(other.to_string()),
        })
    })?;
    // The radar's pairs belong with the local sessions they are about.
    let radar = crate::radar::run::status_part(ctx, line.radar_every);
    let pulls = crate::pr::refresh::status_part(ctx, line.pr_every);
    // A group's candidates counted apart too ("api ⚙2 ✓1"), from the files only.
    let groups = crate::group::load_cache(&ctx.home);
    let mut group_parts = Vec::new();
    if !groups.is_empty() {
        let seen = health::load_cache(&ctx.home, &key);
        for (label, ids) in &groups {
            group_parts.push(health::group_part(
                label,
                seen.sessions.iter().filter(|s| ids.contains(&s.id)),
            ));
        }
    }
    let summary = std::iter::once(line.summary)
        .chain(group_parts)
        .chain([radar, pulls])
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let remote = health::remote::status_part(ctx);
    out.line(match (summary.is_empty(), remote.is_empty()) {
        (_, true) => summary,
        (true, false) => remote,
        (false, false) => format!("{summary} · {remote}"),
    });
    Ok(())
}
