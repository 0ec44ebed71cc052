//! What each session costs: its agent's own logs read incrementally by its kind's reader
//! (`agent/<kind>/cost.rs`: claude's conversation logs, codex's rollouts, the Gemini CLI's
//! chat records into `usage::Piece`; opencode's database from the last message counted),
//! summed per model and day into the record, priced by the table in force (prices.rs),
//! and rolled up by what became of the work (merged, archived, killed, live).
//!
//! Only claude, codex, gemini and opencode sessions on this machine have a cost: the logs
//! of a remote session lie on its host, and aider writes no usage this reads.

pub mod prices;

// Each kind's reader is its own (`agent/<kind>/cost.rs`), named here as before.
pub use crate::agent::claude::cost as log;
pub use crate::agent::codex::cost as codex;
pub use crate::agent::gemini::cost as gemini;
pub use crate::agent::opencode::cost as opencode;
pub use crate::usage::Piece;

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::agent::AgentKind;
use crate::state::{LogMark, LogRead, Session, StateError, Status, Store, Tokens};

/// `read` of `bytes` from the mark stored as JSON text (a mark that does not parse is a
/// read from nothing counted), its own mark given back as JSON text.
fn read_from_mark<M>(bytes: &[u8], mark: &str, read: fn(&[u8], &M) -> Piece<M>) -> Piece<String>
where
    M: Default + serde::de::DeserializeOwned + Serialize,
{
    let last = serde_json::from_str::<M>(mark).unwrap_or_default();
    let piece = read(bytes, &last);
    Piece {
        consumed: piece.consumed,
        usage: piece.usage,
        last: serde_json::to_string(&piece.last).unwrap_or_default(),
    }
}
pub use prices::{Prices, PricesError};

/// The outcome a killed session's cost is filed under when its branch kept unmerged work
/// (renamed archive/…), and when it had none to keep.
pub const ARCHIVED: &str = "archived";
pub const KILLED: &str = "killed";
/// A manifest session `down` ended (its folder is the person's: no branch of ours).
pub const DOWN: &str = "down";

/// Claude Code's config folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn claude_config_dir() -> Option<PathBuf> {
    match crate::paths::non_empty_env("CLAUDE_CONFIG_DIR") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => crate::paths::user_home().ok().map(|h| h.join(".claude")),
    }
}

/// Whether orchestra can read this session's usage: a claude, codex, gemini or opencode
/// agent on this machine (aider's usage is written nowhere this reads).
pub fn has_logs(s: &Session) -> bool {
    s.host.is_none() && crate::agent::of(s.agent_kind).has_cost_logs()
}

/// What kind of log a file is, so it is read by the right reader.
#[derive(Clone, Copy)]
enum Format {
    Claude,
    Codex,
    Gemini,
}

/// Remembers the conversation an agent's hook names, so its log can be found: codex's
/// thread (its `notify` payload's `thread-id`, at the end of each of the person's turns)
/// and the Gemini CLI's session (`session_id`, at its start and at each prompt). Claude's
/// is its recorded uuid, remembered by [`refresh`].
pub fn note_conversation(
    store: &Store,
    s: &Session,
    event: &str,
    hook: &serde_json::Value,
) -> Result<(), StateError> {
    match crate::agent::of(s.agent_kind).log_named(event, hook) {
        // Only an id of the usual form: it is matched against file names.
        Some(id) if crate::agent::is_conversation_id(id) => store.add_conversation(&s.id, id),
        _ => Ok(()),
    }
}

/// Reads what was added to the logs of `sessions` since the last read and records it
/// (the record read once and written once, whatever the number of sessions: a status
/// tick may do this). A log that is missing, unreadable or cut short counts nothing and
/// is no error.
pub fn refresh(store: &Store, sessions: &[Session]) -> Result<(), StateError> {
    let sessions: Vec<&Session> = sessions.iter().filter(|s| has_logs(s)).collect();
    if sessions.is_empty() {
        return Ok(());
    }
    let claude = claude_config_dir();
    let codex = codex::codex_home();
    let opencode_db = orchestra_sys::opencode_db::opencode_db();
    let home = store.home_dir();
    let mut conversations = store.all_conversations()?;
    let marks = store.log_marks()?;
    let mut reads = Vec::new();
    for s in sessions {
        if s.agent_kind == AgentKind::Opencode {
            // Its session, as its plugin named it.
            let named = s
                .agent_uuid
                .as_deref()
                .filter(|u| crate::agent::opencode::is_session_id(u));
            if let (Some(db), Some(named)) = (&opencode_db, named) {
                let key = format!("{}#{named}", db.display());
                let mark = marks.get(&key).cloned().unwrap_or_default();
                reads.extend(read_opencode(&s.id, db, named, key, &mark));
            }
            continue;
        }
        let known = conversations.entry(s.id.clone()).or_default();
        if s.agent_kind == AgentKind::Claude {
            if let Some(uuid) = s.agent_uuid.as_deref().filter(|u| !u.is_empty()) {
                if !known.iter().any(|k| k == uuid) {
                    store.add_conversation(&s.id, uuid)?;
                    known.push(uuid.to_string());
                }
            }
        }
        if known.is_empty() {
            continue;
        }
        let files: Vec<(PathBuf, Format)> = match s.agent_kind {
            AgentKind::Claude => {
                match sandboxed_config(home, s, ".claude").or_else(|| claude.clone()) {
                    Some(config) => known
                        .iter()
                        .flat_map(|uuid| log::log_files(&config, &s.worktree, uuid))
                        .map(|f| (f, Format::Claude))
                        .collect(),
                    None => Vec::new(),
                }
            }
            AgentKind::Codex => match sandboxed_config(home, s, ".codex").or_else(|| codex.clone())
            {
                Some(codex) => known
                    .iter()
                    .filter_map(|thread| {
                        // Found once, the rollout's mark names it: no search again.
                        let suffix = format!("-{thread}.jsonl");
                        marks
                            .keys()
                            .find(|k| k.ends_with(&suffix))
                            .map(PathBuf::from)
                            .or_else(|| codex::rollout(&codex, thread))
                    })
                    .map(|f| (f, Format::Codex))
                    .collect(),
                None => Vec::new(),
            },
            AgentKind::Gemini => match home {
                // Its home is the session's own (the one its hooks are in).
                Some(home) => gemini::chat_files(
                    &crate::paths::session_dir(home, &s.id).join(crate::agent::gemini::HOME_DIR),
                    &s.worktree,
                    known,
                )
                .into_iter()
                .map(|f| (f, Format::Gemini))
                .collect(),
                None => Vec::new(),
            },
            _ => Vec::new(),
        };
        for (file, format) in files {
            let key = file.to_string_lossy().into_owned();
            let mark = marks.get(&key).cloned().unwrap_or_default();
            if let Some(read) = read_log(&s.id, &file, format, key, &mark, s.sandbox.is_some()) {
                reads.push(read);
            }
        }
    }
    store.record_log_reads(&reads)
}

/// A sandboxed agent's config folder `place` (claude's `.claude`, codex's `.codex`): in
/// the home of its own its box gave it (the session's `home` folder, engine's
/// `session::sandbox::HOME_DIR`), where it writes its conversation logs.
fn sandboxed_config(home: Option<&Path>, s: &Session, place: &str) -> Option<PathBuf> {
    s.sandbox.as_ref()?;
    Some(
        crate::paths::session_dir(home?, &s.id)
            .join("home")
            .join(place),
    )
}

/// What one read of a sandboxed agent's log takes at most: the agent writes that folder,
/// and a log it made endless must not stall `cost` (the rest is read the next time).
const BOXED_READ_MAX: u64 = 64 * 1024 * 1024;

fn read_log(
    id: &str,
    file: &Path,
    format: Format,
    key: String,
    mark: &LogMark,
    boxed: bool,
) -> Option<LogRead> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    if boxed {
        // Its own home is the agent's to write: no link followed, no pipe waited on.
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let f = options.open(file).ok()?;
    let meta = f.metadata().ok()?;
    if boxed && !meta.is_file() {
        return None;
    }
    let len = meta.len();
    // The agents only append: a log shorter than the mark was replaced, and what was
    // counted from it stays counted.
    if len <= mark.offset {
        return None;
    }
    let mut f = f;
    f.seek(SeekFrom::Start(mark.offset)).ok()?;
    let mut bytes = Vec::new();
    let cap = if boxed { BOXED_READ_MAX } else { u64::MAX };
    f.take(cap).read_to_end(&mut bytes).ok()?;
    let Piece {
        consumed,
        usage,
        last,
    } = match format {
        Format::Claude => read_from_mark(&bytes, &mark.last, log::read),
        Format::Codex => read_from_mark(&bytes, &mark.last, codex::read),
        Format::Gemini => read_from_mark(&bytes, &mark.last, gemini::read),
    };
    if consumed == 0 {
        return None;
    }
    Some(LogRead {
        session_id: id.to_string(),
        path: key,
        mark: LogMark {
            offset: mark.offset + consumed as u64,
            last,
        },
        usage,
    })
}

/// What opencode's database holds of its session `named` after the message the mark
/// names (`last`; `offset` counts the messages passed). A database that cannot be read
/// counts nothing and is no error.
fn read_opencode(id: &str, db: &Path, named: &str, key: String, mark: &LogMark) -> Option<LogRead> {
    let messages = orchestra_sys::opencode_db::messages_after(db, named, &mark.last).ok()?;
    let (usage, last) = opencode::read(&messages);
    let last = last?;
    let passed = messages.iter().position(|(m, _)| *m == last)? + 1;
    Some(LogRead {
        session_id: id.to_string(),
        path: key,
        mark: LogMark {
            offset: mark.offset + passed as u64,
            last,
        },
        usage,
    })
}

/// Reads the session's logs a last time and files its cost under `outcome`: for a kill,
/// just before its row goes.
pub fn close(store: &Store, s: &Session, outcome: &str) -> Result<(), StateError> {
    if !has_logs(s) {
        return Ok(());
    }
    refresh(store, std::slice::from_ref(s))?;
    store.record_cost_outcome(&s.id, &s.repo, &s.label, outcome)
}

/// One model's share of a cost.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ModelCost {
    pub model: String,
    pub tokens: Tokens,
    /// None: the model has no price (tokens only, never a guess).
    pub cost_usd: Option<f64>,
}

/// Tokens and cost of a group (a session, an outcome, a day).
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Cost {
    pub tokens: Tokens,
    /// None when some of the tokens are of a model with no price.
    pub cost_usd: Option<f64>,
    pub models: Vec<ModelCost>,
}

impl Cost {
    fn add(&mut self, model: &str, t: &Tokens, prices: &Prices) {
        self.tokens.add(t);
        match self.models.iter_mut().find(|m| m.model == model) {
            Some(m) => m.tokens.add(t),
            None => self.models.push(ModelCost {
                model: model.to_string(),
                tokens: *t,
                cost_usd: None,
            }),
        }
        for m in &mut self.models {
            m.cost_usd = prices.get(&m.model).map(|p| p.cost(&m.tokens));
        }
        self.cost_usd = self
            .models
            .iter()
            .map(|m| m.cost_usd)
            .try_fold(0.0, |sum, c| c.map(|c| sum + c));
    }
}

/// `cost` with `t` of `model` added.
pub fn with(mut cost: Cost, model: &str, t: &Tokens, prices: &Prices) -> Cost {
    cost.add(model, t, prices);
    cost
}

/// A session's cost and what became of it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SessionCost {
    pub id: String,
    pub label: String,
    pub repo: String,
    /// merged, archived (killed, its unmerged work kept on archive/…), killed (nothing to
    /// keep), down (a manifest session `down` ended), live.
    pub outcome: String,
    #[serde(flatten)]
    pub cost: Cost,
    /// Usage per UTC day, for the roll-up by day.
    #[serde(skip)]
    pub days: BTreeMap<String, Vec<(String, Tokens)>>,
}

/// The outcome of a session still recorded: merged or live.
pub fn outcome_of(s: &Session) -> &'static str {
    if s.status == Status::Merged {
        "merged"
    } else {
        "live"
    }
}

/// The cost of every session with a cost: `sessions` (the recorded ones, merged
/// included) and those a kill removed, of `repo` (every repo with None).
pub fn costs(
    store: &Store,
    prices: &Prices,
    sessions: &[Session],
    repo: Option<&str>,
) -> Result<Vec<SessionCost>, StateError> {
    let mut out: Vec<SessionCost> = Vec::new();
    let session = |id: &str, label: &str, repo: &str, outcome: &str| SessionCost {
        id: id.to_string(),
        label: label.to_string(),
        repo: repo.to_string(),
        outcome: outcome.to_string(),
        cost: Cost::default(),
        days: BTreeMap::new(),
    };
    for s in sessions.iter().filter(|s| has_logs(s)) {
        out.push(session(&s.id, &s.label, &s.repo, outcome_of(s)));
    }
    for e in store.ended_sessions()? {
        if repo.is_none_or(|r| r == e.repo) && !out.iter().any(|c| c.id == e.session_id) {
            out.push(session(&e.session_id, &e.label, &e.repo, &e.outcome));
        }
    }
    let index: BTreeMap<String, usize> = out
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.clone(), i))
        .collect();
    for row in store.usage_rows()? {
        let Some(&i) = index.get(&row.session_id) else {
            continue;
        };
        let c = &mut out[i];
        c.cost.add(&row.model, &row.tokens, prices);
        c.days
            .entry(row.day)
            .or_default()
            .push((row.model, row.tokens));
    }
    Ok(out)
}

/// Each of `sessions`' cost by session id, their logs read first (sessions without
/// logs are absent).
pub fn session_costs(
    store: &Store,
    prices: &Prices,
    sessions: &[Session],
) -> Result<std::collections::HashMap<String, Cost>, StateError> {
    refresh(store, sessions)?;
    let ids: std::collections::HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    Ok(costs(store, prices, sessions, None)?
        .into_iter()
        .filter(|c| ids.contains(c.id.as_str()))
        .map(|c| (c.id, c.cost))
        .collect())
}

/// A cost as a person reads it: four places under a dollar (cents too small to see
/// otherwise), two above; `-` where a model has no price.
pub fn usd_text(usd: Option<f64>) -> String {
    match usd {
        Some(d) if d < 1.0 => format!("${d:.4}"),
        Some(d) => format!("${d:.2}"),
        None => "-".into(),
    }
}

/// `@orchestra-budget`: dollars per session (`2.5`, `$2.5`); anything else is no budget.
pub fn parse_budget(text: &str) -> Option<f64> {
    text.trim()
        .trim_start_matches('$')
        .parse::<f64>()
        .ok()
        .filter(|b| b.is_finite() && *b > 0.0)
}

/// What a refresh does with costs when asked to (`@orchestra-status-cost`,
/// `@orchestra-budget`): the live total for the status line and the budget marks newly
/// crossed, each to notify once.
#[derive(Debug, Default)]
pub struct Watch {
    pub total: Cost,
    pub crossed: Vec<Crossed>,
    /// Each priced session's mark now (session id → 0, 80 or 100 % of the budget).
    pub levels: std::collections::HashMap<String, u8>,
}

/// A session whose cost crossed 80 % or 100 % of its budget.
#[derive(Debug, Clone)]
pub struct Crossed {
    pub session: Session,
    pub percent: u8,
    pub cost_usd: f64,
    pub budget: f64,
}

/// Reads the logs of `sessions` and sums them; with a budget, the marks each priced
/// session crossed since the last time (each mark once per budget).
pub fn watch(
    store: &Store,
    prices: &Prices,
    sessions: &[Session],
    budget: Option<f64>,
) -> Result<Watch, StateError> {
    let costs = session_costs(store, prices, sessions)?;
    let mut w = Watch::default();
    for s in sessions {
        let Some(c) = costs.get(&s.id) else {
            continue;
        };
        for m in &c.models {
            w.total.add(&m.model, &m.tokens, prices);
        }
        let (Some(budget), Some(usd)) = (budget, c.cost_usd) else {
            continue;
        };
        let level = if usd >= budget {
            100
        } else if usd >= budget * 0.8 {
            80
        } else {
            0
        };
        w.levels.insert(s.id.clone(), level);
        if level > store.budget_level(&s.id, budget)? {
            store.set_budget_level(&s.id, budget, level)?;
            w.crossed.push(Crossed {
                session: s.clone(),
                percent: level,
                cost_usd: usd,
                budget,
            });
        }
    }
    Ok(w)
}

/// The status line's cost part: the live total, or its tokens where a model has no price.
pub fn status_text(total: &Cost) -> String {
    match total.cost_usd {
        Some(_) => usd_text(total.cost_usd),
        None => format!("{} tok", total.tokens.total()),
    }
}

/// A roll-up line: a group's name, how many sessions it holds and their cost.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Group {
    pub name: String,
    pub sessions: usize,
    #[serde(flatten)]
    pub cost: Cost,
}

/// The costs summed by outcome (merged, archived, killed, down, live; those with
/// sessions).
pub fn by_outcome(costs: &[SessionCost], prices: &Prices) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for name in ["merged", ARCHIVED, KILLED, DOWN, "live"] {
        let mut g = Group {
            name: name.to_string(),
            sessions: 0,
            cost: Cost::default(),
        };
        for c in costs.iter().filter(|c| c.outcome == name) {
            g.sessions += 1;
            for m in &c.cost.models {
                g.cost.add(&m.model, &m.tokens, prices);
            }
        }
        if g.sessions > 0 {
            groups.push(g);
        }
    }
    groups
}

/// The costs summed by UTC day, oldest first.
pub fn by_day(costs: &[SessionCost], prices: &Prices) -> Vec<Group> {
    let mut days: BTreeMap<&str, Group> = BTreeMap::new();
    for c in costs {
        for (day, usage) in &c.days {
            let g = days.entry(day.as_str()).or_insert_with(|| Group {
                name: day.clone(),
                sessions: 0,
                cost: Cost::default(),
            });
            g.sessions += 1;
            for (model, t) in usage {
                g.cost.add(model, t, prices);
            }
        }
    }
    days.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cost_is_none_while_any_model_has_no_price() {
        let prices = Prices::built_in();
        let t = Tokens {
            input: 1_000_000,
            ..Tokens::default()
        };
        let mut c = Cost::default();
        c.add("claude-sonnet-4-5", &t, &prices);
        assert_eq!(c.cost_usd, Some(3.0));
        c.add("claude-unknown", &t, &prices);
        assert_eq!(c.cost_usd, None);
        assert_eq!(c.models[0].cost_usd, Some(3.0));
        assert_eq!(c.models[1].cost_usd, None);
        assert_eq!(c.tokens.input, 2_000_000);
    }
}
