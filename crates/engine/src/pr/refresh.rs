//! The background read of the sessions' pull requests (`orchestra pr --background`,
//! started by the status line every `@orchestra-pr-interval`): per repository one
//! conditional list request, sorted by update; only for a pull request whose entry changed
//! (or whose checks are not final) its own page, reviews and head's check runs, each with
//! its ETag kept, so a quiet poll is all 304s and costs nothing against GitHub's rate
//! limit. What it read goes into the record, onto the windows' badges and into the status
//! line's file; a turn to failing checks or requested changes is told once. A missing
//! token is silence: no state, no error.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
use crate::state::{PullRequest, Session, Store};

use super::github::{self, Api};

/// Seconds between reads unless `@orchestra-pr-interval` says.
pub const DEFAULT_EVERY_SECS: i64 = 60;
/// The window mark of a session's pull request.
pub const BADGE_OPTION: &str = crate::tmux::options::WINDOW_PR;

pub fn lock_path(home: &Path) -> PathBuf {
    home.join("cache").join("pr.lock")
}

fn status_path(home: &Path) -> PathBuf {
    home.join("cache").join("pr-status.json")
}

/// What the status line shows of the last read.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct StatusFile {
    pub computed_ms: i64,
    /// Open pull requests whose checks fail.
    pub failing: usize,
    /// Open pull requests with changes requested.
    pub changes_requested: usize,
}

impl StatusFile {
    /// `✗ci2` (failing checks), `±1` (changes requested); nothing when all is well.
    pub fn segment(&self) -> String {
        let mut parts = Vec::new();
        if self.failing > 0 {
            parts.push(format!("✗ci{}", self.failing));
        }
        if self.changes_requested > 0 {
            parts.push(format!("±{}", self.changes_requested));
        }
        parts.join(" ")
    }
}

pub fn load_status(home: &Path) -> Option<StatusFile> {
    let text = std::fs::read_to_string(status_path(home)).ok()?;
    serde_json::from_str(&text).ok()
}

fn save_status(home: &Path, status: &StatusFile) {
    if let Ok(text) = serde_json::to_string(status) {
        let _ = crate::paths::write_private(&status_path(home), text);
    }
}

/// The pull requests' part of the status line, from the last read's file; a read that is
/// due starts detached unless one runs. Nothing when off (`every_secs` 0).
pub fn status_part(ctx: &Context, every_secs: i64) -> String {
    if every_secs <= 0 {
        return String::new();
    }
    let status = load_status(&ctx.home);
    let now_ms = crate::state::now_micros() / 1000;
    let due = status
        .as_ref()
        .is_none_or(|s| now_ms - s.computed_ms >= every_secs * 1000);
    if due && !crate::lock::is_held(&lock_path(&ctx.home)) {
        // Written first, so the next status line a second later does not start another.
        let mut marked = status.clone().unwrap_or_default();
        marked.computed_ms = now_ms;
        save_status(&ctx.home, &marked);
        crate::notify::spawn_self_detached(
            &["pr".to_string(), "--background".to_string()],
            &[("ORCHESTRA_HOME", &ctx.home)],
        );
    }
    status.map(|s| s.segment()).unwrap_or_default()
}

/// What one read did.
#[derive(Debug, Default, Serialize)]
pub struct Pass {
    /// Repositories read (with a token and a GitHub remote).
    pub repos: usize,
    /// Requests sent, and how many were answered 304.
    pub requests: usize,
    pub not_modified: usize,
    /// Sessions whose pull request's state changed.
    pub changed: Vec<String>,
    /// Repositories not read, each with why (no remote, no token, a refusal).
    pub skipped: Vec<String>,
    /// What to tell, once the servers' notification commands are read: session id, what.
    #[serde(skip)]
    turns: Vec<(String, String)>,
}

/// One read of every repository that has recorded pull requests; `None` when another
/// read holds the lock.
pub fn background(ctx: &Context, store: &Store) -> Result<Option<Pass>, Error> {
    let Ok(Some(_lock)) = crate::lock::try_exclusive(&lock_path(&ctx.home)) else {
        return Ok(None);
    };
    let sessions = store.sessions(None, true)?;
    let pulls = store.pull_requests(None)?;
    let mut by_repo: BTreeMap<&str, Vec<(&Session, &PullRequest)>> = BTreeMap::new();
    for s in &sessions {
        if let Some(p) = pulls.get(&s.id) {
            if s.host.is_none() {
                by_repo.entry(s.repo.as_str()).or_default().push((s, p));
            }
        }
    }
    let mut pass = Pass::default();
    for (repo_path, sessions) in &by_repo {
        match read_repo(store, repo_path, sessions, &mut pass) {
            Ok(()) => pass.repos += 1,
            Err(e) => pass.skipped.push(format!("{repo_path}: {e}")),
        }
    }
    let pulls = store.pull_requests(None)?;
    let commands = show_badges(&sessions, &pulls);
    for (id, what) in std::mem::take(&mut pass.turns) {
        if let Some(session) = sessions.iter().find(|s| s.id == id) {
            let command = commands
                .get(&session.tmux_socket.clone())
                .cloned()
                .flatten();
            crate::tell::pull_request_turned(session, &what, command);
        }
    }
    let open = |p: &&PullRequest| matches!(p.state.as_deref(), Some("open" | "draft"));
    save_status(
        &ctx.home,
        &StatusFile {
            computed_ms: crate::state::now_micros() / 1000,
            failing: pulls
                .values()
                .filter(open)
                .filter(|p| p.checks.as_deref() == Some("failing"))
                .count(),
            changes_requested: pulls
                .values()
                .filter(open)
                .filter(|p| p.review.as_deref() == Some("changes_requested"))
                .count(),
        },
    );
    Ok(Some(pass))
}

/// The forge client of the repository at `path`, from its push remote (as `pr` finds it).
pub fn api_of(repo: &Repo, branch: &str) -> Result<Api, Error> {
    crate::forge::rest_of(repo, branch, github::REQUEST_DEADLINE).map(Api::from_rest)
}

fn read_repo(
    store: &Store,
    repo_path: &str,
    sessions: &[(&Session, &PullRequest)],
    pass: &mut Pass,
) -> Result<(), Error> {
    let repo = Repo::discover(Path::new(repo_path))?;
    let api = api_of(&repo, &sessions[0].0.branch)?;
    let list_url = api.url("/pulls?state=all&sort=updated&direction=desc&per_page=100");
    // A pull request never read has no entry to compare: the whole list is asked for.
    let etag = if sessions.iter().any(|(_, p)| p.updated.is_none()) {
        None
    } else {
        store.forge_etag(&list_url)?
    };
    let listed = get(store, &api, &list_url, etag.as_deref(), pass)?;
    let entries: Option<HashMap<u64, Value>> = listed.map(|v| {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some((p.get("number")?.as_u64()?, p.clone())))
            .collect()
    });
    for (session, kept) in sessions {
        let mut next = (*kept).clone();
        let mut entry = entries.as_ref().and_then(|e| e.get(&kept.number)).cloned();
        // Never read and not among the most recently updated the list holds: its own
        // page once (after that its ETag keeps it free), so the list's ETag can be sent.
        if entry.is_none() && kept.updated.is_none() {
            let one = api.url(&format!("/pulls/{}", kept.number));
            entry = get_kept(store, &api, &one, pass)?;
        }
        let entry = entry.as_ref();
        let changed = entry.is_some_and(|e| {
            e.get("updated_at").and_then(Value::as_str) != kept.updated.as_deref()
        });
        if let Some(entry) = entry.filter(|_| changed) {
            read_entry(entry, &mut next);
            // A pull request's own page has the comment counts the list lacks.
            let page = if entry.get("comments").is_some() {
                Some(entry.clone())
            } else {
                get_kept(
                    store,
                    &api,
                    &api.url(&format!("/pulls/{}", kept.number)),
                    pass,
                )?
            };
            if let Some(pull) = page {
                let count = |k: &str| pull.get(k).and_then(Value::as_u64).unwrap_or(0);
                next.comments = Some(count("comments") + count("review_comments"));
            }
            let reviews = api.url(&format!("/pulls/{}/reviews", kept.number));
            if let Some(reviews) = get_kept(store, &api, &reviews, pass)? {
                next.review = decision(&reviews);
            }
        }
        let live = matches!(next.state.as_deref(), Some("open" | "draft"));
        let final_checks = matches!(next.checks.as_deref(), Some("passing" | "failing"));
        let moved = next.head_sha != kept.head_sha;
        if live && (changed || moved || !final_checks) {
            if let Some(sha) = next.head_sha.clone() {
                let url = api.url(&format!("/commits/{sha}/check-runs?per_page=100"));
                // A new head's runs are its own: an ETag of the old head's says nothing.
                if let Some(runs) = get_kept(store, &api, &url, pass)? {
                    (next.checks, next.failing_check, next.failing_check_id) = checks(&runs);
                }
            }
        }
        if next != **kept {
            store.set_pull_state(&session.id, &next)?;
            pass.changed.push(session.label.clone());
            pass.turns.extend(
                turns(kept, &next)
                    .into_iter()
                    .map(|what| (session.id.clone(), what)),
            );
        }
    }
    Ok(())
}

/// A conditional GET: the answer when it changed (its ETag kept), `None` on a 304.
fn get(
    store: &Store,
    api: &Api,
    url: &str,
    etag: Option<&str>,
    pass: &mut Pass,
) -> Result<Option<Value>, Error> {
    pass.requests += 1;
    let answer = api.get_if_changed(url, etag)?;
    if answer.not_modified() {
        pass.not_modified += 1;
        return Ok(None);
    }
    if let Some(etag) = &answer.etag {
        store.set_forge_etag(url, etag)?;
    }
    Ok(Some(answer.json()))
}

fn get_kept(store: &Store, api: &Api, url: &str, pass: &mut Pass) -> Result<Option<Value>, Error> {
    let etag = store.forge_etag(url)?;
    get(store, api, url, etag.as_deref(), pass)
}

/// The list entry's state, head and update time into `pull`.
fn read_entry(entry: &Value, pull: &mut PullRequest) {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    pull.state = Some(
        if entry.get("merged_at").is_some_and(|m| !m.is_null()) {
            "merged"
        } else if entry.get("state").and_then(Value::as_str) == Some("closed") {
            "closed"
        } else if entry.get("draft").and_then(Value::as_bool) == Some(true) {
            "draft"
        } else {
            "open"
        }
        .to_string(),
    );
    pull.updated = text(entry.get("updated_at"));
    if let Some(sha) = text(entry.get("head").and_then(|h| h.get("sha"))) {
        pull.head_sha = Some(sha);
    }
}

/// The checks of a head from its check runs: failing (the first failed one named) over
/// pending over passing; `none` when there are no runs.
fn checks(runs: &Value) -> (Option<String>, Option<String>, Option<u64>) {
    let runs: Vec<&Value> = runs
        .get("check_runs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let failed = runs.iter().find(|r| {
        matches!(
            r.get("conclusion").and_then(Value::as_str),
            Some("failure" | "timed_out" | "cancelled" | "action_required" | "startup_failure")
        )
    });
    if let Some(run) = failed {
        let name = run
            .get("name")
            .and_then(Value::as_str)
            .map(|n| crate::inert::cut(n, 60));
        return (
            Some("failing".into()),
            name,
            run.get("id").and_then(Value::as_u64),
        );
    }
    let state = if runs.is_empty() {
        "none"
    } else if runs
        .iter()
        .any(|r| r.get("status").and_then(Value::as_str) != Some("completed"))
    {
        "pending"
    } else {
        "passing"
    };
    (Some(state.into()), None, None)
}

/// The review decision: each reviewer's latest approving or change-requesting review
/// counts (a dismissal clears theirs); any change request outranks approvals.
fn decision(reviews: &Value) -> Option<String> {
    let mut latest: HashMap<&str, &str> = HashMap::new();
    for review in reviews.as_array().into_iter().flatten() {
        let who = review
            .get("user")
            .and_then(|u| u.get("login"))
            .and_then(Value::as_str)
            .unwrap_or("");
        match review.get("state").and_then(Value::as_str) {
            Some(state @ ("APPROVED" | "CHANGES_REQUESTED")) => {
                latest.insert(who, state);
            }
            Some("DISMISSED") => {
                latest.remove(who);
            }
            _ => {}
        }
    }
    if latest.values().any(|s| *s == "CHANGES_REQUESTED") {
        Some("changes_requested".into())
    } else if latest.values().any(|s| *s == "APPROVED") {
        Some("approved".into())
    } else {
        None
    }
}

/// What to tell of each turn to failing checks or requested changes (once: `kept` was
/// not there yet).
fn turns(kept: &PullRequest, next: &PullRequest) -> Vec<String> {
    let mut said = Vec::new();
    let failing = |p: &PullRequest| p.checks.as_deref() == Some("failing");
    if failing(next) && (!failing(kept) || kept.failing_check != next.failing_check) {
        said.push(format!(
            "{} failed on #{}",
            next.failing_check.as_deref().unwrap_or("a check"),
            next.number
        ));
    }
    let asked = |p: &PullRequest| p.review.as_deref() == Some("changes_requested");
    if asked(next) && !asked(kept) {
        said.push(format!("changes requested on #{}", next.number));
    }
    said
}

/// The most of a failing check's log sent to its agent: its last lines, then its last
/// bytes.
const LOG_LINES: usize = 60;
const LOG_BYTES: usize = 4096;

/// What `brief LABEL --ci` types: the failing check's name and the end of its log, inert
/// (escapes written visibly). Refused in one line when the session's pull request has no
/// failing check as last read.
pub fn ci_briefing(store: &Store, repo: &Repo, session: &Session) -> Result<String, Error> {
    let pull = store.pull_request(&session.id)?;
    let failing = pull
        .as_ref()
        .filter(|p| p.checks.as_deref() == Some("failing"));
    let (Some(pull), Some(id)) = (failing, failing.and_then(|p| p.failing_check_id)) else {
        return Err(Error::BadInput(format!(
            "{} has no failing check{}: nothing was sent",
            session.label,
            match &pull {
                None => " (no pull request: `orchestra pr LABEL` opens one)".to_string(),
                Some(p) => format!(" on #{} as last read", p.number),
            }
        )));
    };
    let api = api_of(repo, &session.branch)?;
    let log = api.check_log(id)?;
    let name = pull.failing_check.as_deref().unwrap_or("a check");
    Ok(format!(
        "The CI check {name} failed on pull request #{}. The end of its log:\n\n{}\n\nFix what it reports, commit, and tell me when it is pushed.",
        pull.number,
        tail(&log)
    ))
}

/// The last [`LOG_LINES`] lines of `log`, at most [`LOG_BYTES`], inert.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let last = lines[lines.len().saturating_sub(LOG_LINES)..].join("\n");
    let mut start = last.len().saturating_sub(LOG_BYTES);
    while !last.is_char_boundary(start) {
        start += 1;
    }
    let text = crate::inert::lines(&last[start..]);
    if text.trim().is_empty() {
        "(the check left no log)".into()
    } else {
        text
    }
}

/// A pull request as one short phrase: `#12 draft ✗lint`, `merged in #12`, `#12 open ✓ci
/// approved 3 comments`; `#12` when never read.
pub fn phrase(pull: &PullRequest) -> String {
    match pull.state.as_deref() {
        Some("merged") => return format!("merged in #{}", pull.number),
        Some("closed") => return format!("#{} closed", pull.number),
        None => return format!("#{}", pull.number),
        _ => {}
    }
    let mut words = vec![format!(
        "#{} {}",
        pull.number,
        pull.state.as_deref().unwrap_or("open")
    )];
    match pull.checks.as_deref() {
        Some("failing") => words.push(format!(
            "✗{}",
            pull.failing_check.as_deref().unwrap_or("ci")
        )),
        Some("passing") => words.push("✓ci".into()),
        Some("pending") => words.push("…ci".into()),
        _ => {}
    }
    match pull.review.as_deref() {
        Some("approved") => words.push("approved".into()),
        Some("changes_requested") => words.push("changes requested".into()),
        _ => {}
    }
    if let Some(n) = pull.comments.filter(|n| *n > 0) {
        words.push(format!("{n} comment{}", if n == 1 { "" } else { "s" }));
    }
    words.join(" ")
}

/// The window mark: `#12`, `#12✗` (failing checks), `#12±` (changes requested), `#12✓`
/// (merged).
pub fn mark(pull: &PullRequest) -> String {
    let suffix = match (
        pull.state.as_deref(),
        pull.checks.as_deref(),
        pull.review.as_deref(),
    ) {
        (Some("merged"), _, _) => "✓",
        (Some("closed"), _, _) => "⊘",
        (_, Some("failing"), _) => "✗",
        (_, _, Some("changes_requested")) => "±",
        _ => "",
    };
    format!("#{}{suffix}", pull.number)
}

/// Each window's mark where it differs (one listing call per server, one more where a
/// mark changes); a server that fails costs its marks only. Returns each server's
/// `@orchestra-notify-cmd`, read in the same call.
fn show_badges(
    sessions: &[Session],
    pulls: &HashMap<String, PullRequest>,
) -> HashMap<Option<String>, Option<String>> {
    let mut commands = HashMap::new();
    let servers: std::collections::BTreeSet<Option<&str>> = sessions
        .iter()
        .filter(|s| pulls.contains_key(&s.id))
        .map(|s| s.tmux_socket.as_deref())
        .collect();
    for socket in servers {
        let tmux = crate::tmux::Tmux::new(&crate::tmux::Server::at(socket));
        let Ok(Some(seen)) =
            tmux.windows_with_option(BADGE_OPTION, &[crate::tmux::options::NOTIFY_CMD])
        else {
            continue;
        };
        commands.insert(
            socket.map(str::to_string),
            seen.values.first().filter(|v| !v.is_empty()).cloned(),
        );
        let sets: Vec<(crate::tmux::WindowId, String, String)> = seen
            .windows
            .into_iter()
            .filter_map(|(window, id, shown)| {
                let wanted = pulls.get(id.as_str()).map(mark).unwrap_or_default();
                (wanted != shown).then_some((window, id, wanted))
            })
            .collect();
        if !sets.is_empty() {
            let _ = tmux.set_window_option_if_ours(BADGE_OPTION, &sets);
        }
    }
    commands
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn checks_and_reviews_decide_as_github_shows_them() {
        let runs = json!({"check_runs": [
            {"id": 1, "name": "test", "status": "in_progress", "conclusion": null},
            {"id": 2, "name": "lint\u{1b}[31m", "status": "completed", "conclusion": "failure"}]});
        let (state, name, id) = checks(&runs);
        assert_eq!(state.as_deref(), Some("failing"));
        assert_eq!(id, Some(2));
        assert!(!name.unwrap().contains('\u{1b}'));
        let pending = json!({"check_runs": [{"status": "queued"}, {"status": "completed", "conclusion": "success"}]});
        assert_eq!(checks(&pending).0.as_deref(), Some("pending"));
        assert_eq!(
            checks(&json!({"check_runs": []})).0.as_deref(),
            Some("none")
        );
        let reviews = json!([
            {"user": {"login": "ann"}, "state": "CHANGES_REQUESTED"},
            {"user": {"login": "bob"}, "state": "APPROVED"},
            {"user": {"login": "ann"}, "state": "COMMENTED"}]);
        assert_eq!(decision(&reviews).as_deref(), Some("changes_requested"));
        let later = json!([
            {"user": {"login": "ann"}, "state": "CHANGES_REQUESTED"},
            {"user": {"login": "ann"}, "state": "APPROVED"}]);
        assert_eq!(decision(&later).as_deref(), Some("approved"));
    }

    #[test]
    fn a_log_tail_is_bounded_and_inert() {
        let log: String = (0..500).map(|i| format!("line {i}\n")).collect();
        let shown = tail(&log);
        assert!(
            shown.starts_with("line 440") && shown.ends_with("line 499"),
            "{shown}"
        );
        let hostile = format!("{}\u{1b}]52;c;aGk=\u{7}end", "x".repeat(10_000));
        let shown = tail(&hostile);
        assert!(
            shown.len() <= LOG_BYTES + 64 && !shown.contains('\u{1b}'),
            "{shown}"
        );
        assert!(shown.ends_with("end"));
    }

    #[test]
    fn a_pull_request_reads_as_a_phrase_and_a_mark() {
        let mut pull = PullRequest::opened(12, "u".into());
        assert_eq!(phrase(&pull), "#12");
        pull.state = Some("draft".into());
        pull.checks = Some("failing".into());
        pull.failing_check = Some("lint".into());
        assert_eq!(phrase(&pull), "#12 draft ✗lint");
        assert_eq!(mark(&pull), "#12✗");
        pull.state = Some("merged".into());
        assert_eq!(phrase(&pull), "merged in #12");
        assert_eq!(mark(&pull), "#12✓");
    }
}
