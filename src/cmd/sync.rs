//! insights, dream, sync: ask each manifest session's agent what it knows (`claude -p` in
//! its folder, over SSH for a remote one), save the reports under
//! `$ORCHESTRA_HOME/runs/<time>/`, and synthesize them into CONTEXT.md.
//!
//! A session that fails (exit status, timeout, unreachable host) is reported and left out;
//! the others still finish, and the command exits 1 at the end.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli::SyncArgs;
use crate::cmd::{Context, Output};
use crate::error::Error;
use crate::manifest::Manifest;
use crate::prompts;
use crate::remote::{HostSpec, RemoteError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Insights,
    Dream,
    Both,
}

impl Kind {
    fn parts(self) -> &'static [Part] {
        match self {
            Kind::Insights => &[Part::Insights],
            Kind::Dream => &[Part::Dream],
            Kind::Both => &[Part::Insights, Part::Dream],
        }
    }

    fn command(self) -> &'static str {
        match self {
            Kind::Insights => "insights",
            Kind::Dream => "dream",
            Kind::Both => "sync",
        }
    }
}

/// One question asked of every session, with its own synthesis and CONTEXT.md section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Insights,
    Dream,
}

impl Part {
    const ALL: [Part; 2] = [Part::Insights, Part::Dream];

    fn name(self) -> &'static str {
        match self {
            Part::Insights => "insights",
            Part::Dream => "dream",
        }
    }

    fn prompt(self) -> &'static str {
        match self {
            Part::Insights => prompts::INSIGHT,
            Part::Dream => prompts::DREAM,
        }
    }

    fn synthesis_prompt(self) -> &'static str {
        match self {
            Part::Insights => prompts::SYNTHESIZE_INSIGHTS,
            Part::Dream => prompts::SYNTHESIZE_DREAM,
        }
    }

    fn heading(self) -> &'static str {
        match self {
            Part::Insights => "Insights",
            Part::Dream => "Dream",
        }
    }
}

/// Where one session's agent runs.
enum Place {
    Local(PathBuf),
    Remote { spec: HostSpec, path: String },
}

/// A manifest session, ready to be asked.
struct Target {
    name: String,
    role: String,
    place: Place,
    env: Option<String>,
    argv: Vec<String>,
}

impl Target {
    /// The folder as the agent sees it (on its own host).
    fn folder(&self) -> String {
        match &self.place {
            Place::Local(p) => p.display().to_string(),
            Place::Remote { path, .. } => path.clone(),
        }
    }

    /// The folder as the person sees it: `host:path` for a remote one.
    fn path_text(&self) -> String {
        match &self.place {
            Place::Local(p) => p.display().to_string(),
            Place::Remote { spec, path } => format!("{}:{path}", spec.name),
        }
    }
}

/// Everything checked before anything runs or is written.
struct Plan {
    targets: Vec<Target>,
    /// The agent for the local synthesis runs (print mode).
    synth_argv: Vec<String>,
    root: PathBuf,
    context_dir: PathBuf,
    timeout: Duration,
    jobs: usize,
    /// orchestra.toml's sync_interval, in seconds (for --if-due).
    interval_secs: i64,
    /// Per part: the session prompt template and the synthesis template.
    templates: Vec<(Part, String, String)>,
}

/// One agent run: a session asked one part.
struct Job<'a> {
    target: &'a Target,
    part: Part,
    prompt: String,
}

pub fn run(ctx: &Context, args: &SyncArgs, kind: Kind, out: &mut Output<'_>) -> Result<(), Error> {
    let plan = plan(ctx, args, kind)?;
    // --if-due: no daemon keeps the interval; cron or a tmux hook may call this often.
    let stamp = ctx
        .home
        .join("cache")
        .join(format!("last-{}", kind.command()));
    if args.if_due {
        let age = std::fs::metadata(&stamp)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .map(|d| d.as_secs() as i64);
        if let Some(age) = age.filter(|a| *a < plan.interval_secs) {
            out.line(format!(
                "{}: not due (last run {} ago; sync_interval {})",
                kind.command(),
                crate::duration::age(age),
                crate::duration::age(plan.interval_secs)
            ));
            return Ok(());
        }
    }
    let run_dir = make_run_dir(&ctx.home.join("runs"))?;
    crate::paths::write_private(&stamp, b"")
        .map_err(Error::io(format!("writing {}", stamp.display())))?;
    out.note(format!(
        "{}: asking {} session(s), {} at a time, each at most {}; reports in {}",
        kind.command(),
        plan.targets.len(),
        plan.jobs,
        args.timeout.trim(),
        run_dir.display()
    ));

    let mut jobs = Vec::new();
    for (part, template, _) in &plan.templates {
        for target in &plan.targets {
            let prompt = fill(
                template,
                &[
                    ("SESSION", &target.name),
                    ("ROLE", &target.role),
                    ("PATH", &target.folder()),
                ],
            );
            jobs.push(Job {
                target,
                part: *part,
                prompt,
            });
        }
    }

    let mut written: Vec<PathBuf> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    // (job index, report): sorted later so the synthesis sees sessions in manifest order.
    let mut reports: Vec<(usize, String)> = Vec::new();
    let mut finished = 0;
    let total = jobs.len();
    let timeout = plan.timeout;
    pool(
        &jobs,
        plan.jobs,
        |job| ask(job.target, &job.prompt, timeout),
        |event| match event {
            Event::Started(i) => out.note(format!(
                "{} {}: running in {}",
                jobs[i].part.name(),
                jobs[i].target.name,
                jobs[i].target.path_text()
            )),
            Event::Finished(i, elapsed, outcome) => {
                finished += 1;
                let job = &jobs[i];
                let what = format!("{} {}", job.part.name(), job.target.name);
                let stem = format!("{}.{}", job.target.name, job.part.name());
                let progress = format!("[{finished}/{total}] {what}");
                match outcome {
                    Ok(report) => {
                        let path = run_dir.join(format!("{stem}.md"));
                        match write_text(&path, &report) {
                            Ok(()) => {
                                out.note(format!(
                                    "{progress}: done in {}",
                                    crate::duration::spell(elapsed)
                                ));
                                written.push(path);
                                reports.push((i, report));
                            }
                            Err(e) => {
                                out.note(format!("{progress}: failed: {e}"));
                                failed.push(what);
                            }
                        }
                    }
                    Err(failure) => {
                        out.note(format!("{progress}: failed: {}", failure.reason));
                        if let Some(path) = save_failure(&run_dir, &stem, &failure) {
                            written.push(path);
                        }
                        failed.push(what);
                    }
                }
            }
        },
    );
    reports.sort_by_key(|(i, _)| *i);

    let mut syntheses = Vec::new();
    for (part, _, template) in &plan.templates {
        let mine: Vec<(&str, &str)> = reports
            .iter()
            .filter(|(i, _)| jobs[*i].part == *part)
            .map(|(i, r)| (jobs[*i].target.name.as_str(), r.as_str()))
            .collect();
        if mine.is_empty() {
            out.note(format!(
                "{}: no session gave a report; nothing to synthesize",
                part.name()
            ));
            continue;
        }
        syntheses.push((*part, mine.len(), synthesis_prompt(template, &mine)));
    }
    let mut summaries: Vec<(Part, String)> = Vec::new();
    let summary_dir = run_dir.join("summary");
    pool(
        &syntheses,
        syntheses.len().max(1),
        |(_, _, prompt)| run_local(&plan.synth_argv, None, &plan.root, prompt, timeout),
        |event| match event {
            Event::Started(i) => out.note(format!(
                "{}: synthesizing {} report(s) in {}",
                syntheses[i].0.name(),
                syntheses[i].1,
                plan.root.display()
            )),
            Event::Finished(i, elapsed, outcome) => {
                let part = syntheses[i].0;
                let what = format!("synthesis of {}", part.name());
                let stem = format!("summary.{}", part.name());
                let saved = outcome.and_then(|summary| {
                    let path = summary_dir.join(format!("{}.md", part.name()));
                    crate::paths::private_dir(&summary_dir)
                        .and_then(|()| write_text(&path, &summary))
                        .map(|()| (path, summary))
                        .map_err(|e| Failure::new(e.to_string()))
                });
                match saved {
                    Ok((path, summary)) => {
                        out.note(format!(
                            "{what}: done in {}",
                            crate::duration::spell(elapsed)
                        ));
                        written.push(path);
                        summaries.push((part, summary));
                    }
                    Err(failure) => {
                        out.note(format!("{what}: failed: {}", failure.reason));
                        if let Some(path) = save_failure(&run_dir, &stem, &failure) {
                            written.push(path);
                        }
                        failed.push(what);
                    }
                }
            }
        },
    );

    if !summaries.is_empty() {
        let path = plan.context_dir.join("CONTEXT.md");
        match update_context(&path, &summaries, kind, &run_dir) {
            Ok(()) => written.push(path),
            Err(e) => {
                out.note(format!("could not write {}: {e}", path.display()));
                failed.push("CONTEXT.md".into());
            }
        }
    }

    for path in &written {
        out.line(path.display().to_string());
    }
    if failed.is_empty() {
        return Ok(());
    }
    Err(Error::Refused(format!(
        "{} of {} failed: {}",
        failed.len(),
        total + syntheses.len(),
        crate::cmd::short_list(&failed)
    )))
}

/// Checks the request against the manifest: nothing runs and nothing is written before
/// this has passed.
fn plan(ctx: &Context, args: &SyncArgs, kind: Kind) -> Result<Plan, Error> {
    let timeout = crate::duration::parse_timeout(&args.timeout).ok_or_else(|| {
        Error::BadInput(format!(
            "--timeout {:?} is not a duration such as \"90s\" or \"10m\"",
            args.timeout
        ))
    })?;
    if args.jobs == 0 {
        return Err(Error::BadInput("--jobs must be at least 1".into()));
    }
    let repo = crate::cmd::open_repo(args.manifest.repo.as_deref())?;
    let root = repo.main_worktree().to_path_buf();
    let (manifest_path, manifest) =
        crate::cmd::load_manifest(&repo, args.manifest.config.as_deref(), true)?.ok_or_else(
            || Error::BadInput("no manifest (write orchestra.toml, or pass --config FILE)".into()),
        )?;
    let base = manifest_path.parent().unwrap_or(&root).to_path_buf();
    let names = chosen_sessions(&manifest, args.name.as_deref(), &manifest_path)?;

    let agent = shell_words::split(&manifest.orchestrator.agent)
        .ok()
        .filter(|w| !w.is_empty())
        .ok_or_else(|| {
            Error::BadInput(format!(
                "[orchestrator] agent {:?} in {} is not a command",
                manifest.orchestrator.agent,
                manifest_path.display()
            ))
        })?;
    // The synthesis always runs here, so the agent must exist here.
    let found = crate::paths::find_program(&agent[0]).ok_or_else(|| {
        Error::BadInput(format!(
            "agent {:?} not found (set [orchestrator] agent in {})",
            agent[0],
            manifest_path.display()
        ))
    })?;
    let mut local_agent = agent.clone();
    // A relative path would resolve against each session's folder, not against ours.
    if agent[0].contains('/') {
        local_agent[0] = std::path::absolute(&found)
            .unwrap_or(found)
            .to_string_lossy()
            .into_owned();
    }

    let home = PathBuf::from(crate::paths::non_empty_env("HOME").unwrap_or_else(|| "/".into()));
    let mut targets = Vec::new();
    for name in names {
        let session = &manifest.sessions[&name];
        let extra = match &session.agent_args {
            Some(a) => shell_words::split(a)
                .map_err(|e| Error::BadInput(format!("sessions.{name}.agent_args: {e}")))?,
            None => Vec::new(),
        };
        let (place, mut argv) = match &session.host {
            Some(host) => (
                Place::Remote {
                    spec: crate::cmd::host_spec(&manifest, host)?,
                    path: session.path.clone(),
                },
                agent.clone(),
            ),
            None => {
                let path = crate::remote::config::expand_home(&session.path, &home);
                (Place::Local(base.join(path)), local_agent.clone())
            }
        };
        argv.extend(extra);
        argv.push("-p".into());
        targets.push(Target {
            role: session.role.clone().unwrap_or_else(|| "not set".into()),
            name,
            place,
            env: session.env.clone().filter(|e| !e.trim().is_empty()),
            argv,
        });
    }

    let context_dir = match manifest.orchestrator.shared_fs.trim() {
        "" => root.clone(),
        shared => {
            let dir = base.join(crate::remote::config::expand_home(shared, &home));
            if !dir.is_dir() {
                return Err(Error::BadInput(format!(
                    "[orchestrator] shared_fs {} is not a folder",
                    dir.display()
                )));
            }
            dir
        }
    };

    let load = |name: &str| {
        prompts::load(&ctx.home, name)
            .ok_or_else(|| Error::Refused(format!("the prompt {name:?} is missing")))
    };
    let mut templates = Vec::new();
    for part in kind.parts() {
        templates.push((*part, load(part.prompt())?, load(part.synthesis_prompt())?));
    }
    let mut synth_argv = local_agent;
    synth_argv.push("-p".into());
    Ok(Plan {
        targets,
        synth_argv,
        root,
        context_dir,
        timeout,
        jobs: args.jobs,
        // Validated with the manifest.
        interval_secs: crate::duration::parse_secs(&manifest.orchestrator.sync_interval)
            .unwrap_or(6 * 3600),
        templates,
    })
}

fn chosen_sessions(
    manifest: &Manifest,
    name: Option<&str>,
    manifest_path: &Path,
) -> Result<Vec<String>, Error> {
    let all: Vec<String> = manifest.sessions.keys().cloned().collect();
    match name {
        Some(n) if manifest.sessions.contains_key(n) => Ok(vec![n.to_string()]),
        Some(n) => Err(Error::BadInput(format!(
            "no session {n:?} in {} (it has: {})",
            manifest_path.display(),
            if all.is_empty() {
                "none".into()
            } else {
                crate::cmd::short_list(&all)
            }
        ))),
        None if all.is_empty() => Err(Error::BadInput(format!(
            "{} names no [sessions.*]",
            manifest_path.display()
        ))),
        None => Ok(all),
    }
}

/// `runs/<YYYYmmdd-HHMMSS>`, made now; a second run within the same second gets `-2`.
fn make_run_dir(runs: &Path) -> Result<PathBuf, Error> {
    crate::paths::private_dir(runs).map_err(Error::io(format!("creating {}", runs.display())))?;
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S").to_string();
    let mut n = 1;
    loop {
        let dir = match n {
            1 => runs.join(&stamp),
            _ => runs.join(format!("{stamp}-{n}")),
        };
        match crate::paths::new_private_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
            Err(e) => return Err(Error::io(format!("creating {}", dir.display()))(e)),
        }
    }
}

/// Replaces each `{{KEY}}` of `values` in one pass, so a value that itself contains
/// `{{…}}` (a report quoting a template) is left as it is.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let found = after.find("}}").and_then(|end| {
            let key = &after[..end];
            values
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (*v, end))
        });
        match found {
            Some((value, end)) => {
                out.push_str(value);
                rest = &after[end + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The synthesis prompt: the reports, each headed by its session, in `{{REPORTS}}` (or
/// after the text, for a user's template that forgot the placeholder).
fn synthesis_prompt(template: &str, reports: &[(&str, &str)]) -> String {
    let mut text = String::new();
    for (session, report) in reports {
        text.push_str(&format!(
            "## Session {session}\n\n<report session=\"{session}\">\n{}\n</report>\n\n",
            report.trim()
        ));
    }
    let text = text.trim_end();
    if template.contains("{{REPORTS}}") {
        fill(template, &[("REPORTS", text)])
    } else {
        format!("{}\n\n{text}\n", template.trim_end())
    }
}

/// The first line of each CONTEXT.md section; the run folder after it says where the
/// section came from.
fn section_start(part: Part) -> String {
    format!("<!-- orchestra:{}", part.name())
}

fn section_end(part: Part) -> String {
    format!("<!-- /orchestra:{} -->", part.name())
}

/// Where the section of `part` lies in an earlier CONTEXT.md, markers included: an end
/// marker and the last start marker before it. A stray marker (a section cut by hand) is
/// left where it is, as the person's text.
fn section_span(old: &[u8], part: Part) -> Option<std::ops::Range<usize>> {
    let (start, end) = (section_start(part), section_end(part));
    let mut from = 0;
    while let Some(at) = find(&old[from..], end.as_bytes()) {
        let end_at = from + at;
        if let Some(begin) = rfind(&old[from..end_at], start.as_bytes()) {
            return Some(from + begin..end_at + end.len());
        }
        from = end_at + end.len();
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

/// One section: its markers (the run folder after the start says where it came from),
/// heading and summary. A summary that quotes a marker would cut the section short on the
/// next run: the quote is defused.
fn section_text(part: Part, summary: &str, kind: Kind, run_dir: &Path) -> String {
    let summary = summary
        .trim()
        .replace("<!-- orchestra:", "<!-- (orchestra):")
        .replace("<!-- /orchestra:", "<!-- (/orchestra):");
    format!(
        "{} from `orchestra {}`, reports in {} -->\n## {}\n\n{summary}\n{}",
        section_start(part),
        kind.command(),
        run_dir.display(),
        part.heading(),
        section_end(part)
    )
}

/// CONTEXT.md with this run's summaries in orchestra's marked sections. Everything outside
/// those sections (a person's own text, before, between or after them) stays byte for
/// byte: a section already there is replaced where it stands, a missing one is appended at
/// the end, and a part this run did not produce keeps its section as it was. A new file
/// starts with a header saying so.
fn context_document(
    old: Option<&[u8]>,
    summaries: &[(Part, String)],
    kind: Kind,
    run_dir: &Path,
) -> Vec<u8> {
    let mut doc: Vec<u8> = match old {
        Some(old) => old.to_vec(),
        None => b"# Project context\n\n\
             What the sessions of this project have learned, merged by orchestra \
             (`orchestra sync`, `insights`, `dream`). Each run rewrites only what lies \
             between its `<!-- orchestra:... -->` markers; the rest of this file is yours.\n"
            .to_vec(),
    };
    for (i, part) in Part::ALL.into_iter().enumerate() {
        let Some((_, summary)) = summaries.iter().find(|(p, _)| *p == part) else {
            continue;
        };
        let section = section_text(part, summary, kind, run_dir);
        // A missing section goes before the next one there is, to keep their order.
        let next = Part::ALL[i + 1..]
            .iter()
            .find_map(|later| section_span(&doc, *later));
        match section_span(&doc, part) {
            Some(span) => {
                doc.splice(span, section.into_bytes());
            }
            None if next.is_some() => {
                let at = next.map(|span| span.start).unwrap_or_default();
                doc.splice(at..at, format!("{section}\n\n").into_bytes());
            }
            None => {
                if !doc.is_empty() && !doc.ends_with(b"\n") {
                    doc.push(b'\n');
                }
                doc.push(b'\n');
                doc.extend_from_slice(section.as_bytes());
                doc.push(b'\n');
            }
        }
    }
    doc
}

/// Reads CONTEXT.md (bytes: a person's file need not be UTF-8), puts this run's sections
/// in, and writes it back in one step. An existing file that cannot be read is not
/// replaced.
fn update_context(
    path: &Path,
    summaries: &[(Part, String)],
    kind: Kind,
    run_dir: &Path,
) -> std::io::Result<()> {
    // A symlinked CONTEXT.md (shared between checkouts) is updated where it points.
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let old = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let doc = context_document(old.as_deref(), summaries, kind, run_dir);
    write_atomically(&path, &doc)
}

fn write_text(path: &Path, text: &str) -> std::io::Result<()> {
    let mut text = text.trim_end().to_string();
    text.push('\n');
    crate::paths::write_private(path, text)
}

/// Readers of a shared CONTEXT.md (agents on other hosts) never see half a file. The file
/// keeps its permissions.
fn write_atomically(path: &Path, text: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".CONTEXT.md.orchestra-{}", std::process::id()));
    let result = std::fs::write(&tmp, text)
        .and_then(|()| match std::fs::metadata(path) {
            Ok(meta) => std::fs::set_permissions(&tmp, meta.permissions()),
            Err(_) => Ok(()),
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Keeps what a failed agent said next to the reports; the progress line shows only its
/// last line.
fn save_failure(run_dir: &Path, stem: &str, failure: &Failure) -> Option<PathBuf> {
    if failure.detail.trim().is_empty() {
        return None;
    }
    let path = run_dir.join(format!("{stem}.failed.txt"));
    let text = format!("{}\n\n{}", failure.reason, failure.detail);
    write_text(&path, &text).ok().map(|()| path)
}

/// Why an agent run gave no report, and what it printed.
#[derive(Debug)]
struct Failure {
    reason: String,
    detail: String,
}

impl Failure {
    fn new(reason: String) -> Failure {
        Failure {
            reason,
            detail: String::new(),
        }
    }
}

type Outcome = Result<String, Failure>;

/// Asks one session's agent: `prompt` on its stdin, its report on stdout.
fn ask(target: &Target, prompt: &str, timeout: Duration) -> Outcome {
    match &target.place {
        Place::Local(dir) => {
            if !dir.is_dir() {
                return Err(Failure::new(format!(
                    "folder {} does not exist",
                    dir.display()
                )));
            }
            run_local(&target.argv, target.env.as_deref(), dir, prompt, timeout)
        }
        Place::Remote { spec, path } => run_remote(
            spec,
            path,
            target.env.as_deref(),
            &target.argv,
            prompt,
            timeout,
        ),
    }
}

/// A report when the agent exited 0 with something to say; otherwise why not.
fn judge(code: Option<i32>, stdout: String, stderr: String) -> Outcome {
    if code == Some(0) && !stdout.trim().is_empty() {
        return Ok(stdout);
    }
    let last = |text: &str| {
        text.lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| l.chars().take(200).collect::<String>())
    };
    // claude -p prints API errors on stdout, usage errors on stderr.
    let said = last(&stderr).or_else(|| last(&stdout));
    let reason = match (code, said) {
        (Some(0), _) => "the agent printed no report".to_string(),
        (Some(c), Some(said)) => format!("exit {c}: {said}"),
        (Some(c), None) => format!("exit {c}"),
        (None, Some(said)) => format!("killed by a signal: {said}"),
        (None, None) => "killed by a signal".to_string(),
    };
    let mut detail = String::new();
    for (name, text) in [("stderr", &stderr), ("stdout", &stdout)] {
        if !text.trim().is_empty() {
            detail.push_str(&format!("--- {name} ---\n{}\n", text.trim_end()));
        }
    }
    Err(Failure { reason, detail })
}

/// The remote command line: every word quoted; a failed `cd` stops it before the agent
/// starts in the wrong folder. Where the host has coreutils' `timeout`, the agent is
/// bounded there too: closing the channel on our side would not stop it.
fn remote_command(path: &str, env: Option<&str>, argv: &[String], limit: Duration) -> String {
    // A leading ~ must stay outside the quotes for the remote shell to expand it.
    let dir = match path.strip_prefix("~/") {
        Some(rest) => format!("~/{}", shell_words::quote(rest)),
        None if path == "~" => "~".to_string(),
        None => shell_words::quote(path).into_owned(),
    };
    let mut line = format!("cd {dir} || exit 1\n");
    if let Some(env) = env {
        line.push_str(env);
        line.push('\n');
    }
    let argv = shell_words::join(argv);
    let secs = limit.as_secs().max(1);
    line.push_str(&format!(
        "if command -v timeout >/dev/null 2>&1; then exec timeout -k 5 {secs} {argv}; else exec {argv}; fi"
    ));
    line
}

fn run_remote(
    spec: &HostSpec,
    path: &str,
    env: Option<&str>,
    argv: &[String],
    prompt: &str,
    timeout: Duration,
) -> Outcome {
    let conn = crate::remote::connect(spec).map_err(|e| Failure::new(e.to_string()))?;
    // The exec's deadline is the whole run (the host's `timeout` too, when it has one).
    match conn.exec(
        &remote_command(path, env, argv, timeout),
        Some(prompt.as_bytes()),
        Some(timeout),
    ) {
        Ok(o) => judge(Some(o.status), o.stdout, o.stderr),
        Err(RemoteError::Timeout { .. }) => Err(Failure::new(format!(
            "timed out after {} on host {}",
            crate::duration::spell(timeout),
            spec.name
        ))),
        Err(e) => Err(Failure::new(e.to_string())),
    }
}

/// How long to wait for the last output after the agent exits: a grandchild that kept
/// the pipe open must not hold the whole command.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Runs `argv` in `dir` (after the `env` snippet, through `sh`, when there is one), with
/// `prompt` on stdin; kills it when `timeout` passes.
fn run_local(
    argv: &[String],
    env: Option<&str>,
    dir: &Path,
    prompt: &str,
    timeout: Duration,
) -> Outcome {
    let Some(program) = argv.first() else {
        return Err(Failure::new("no agent command".into()));
    };
    let mut cmd = match env {
        Some(env) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(format!("{env}\nexec \"$@\"")).arg("sh");
            c.args(argv);
            c
        }
        None => {
            let mut c = Command::new(program);
            c.args(&argv[1..]);
            c
        }
    };
    // No process group of its own: a Ctrl-C in the terminal must stop the agents too.
    cmd.current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| Failure::new(format!("cannot start {program}: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        let input = prompt.as_bytes().to_vec();
        // A thread of its own: a prompt larger than the pipe buffer would otherwise block
        // us while the agent blocks writing output we are not reading yet.
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&input);
        });
    }
    let stdout = Drain::start(child.stdout.take());
    let stderr = Drain::start(child.stderr.take());
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                stop(&mut child);
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                stop(&mut child);
                return Err(Failure::new(format!("waiting for {program}: {e}")));
            }
        }
    };
    let (stdout, stderr) = (stdout.finish(), stderr.finish());
    match status {
        Some(status) => judge(status.code(), stdout, stderr),
        None => Err(Failure {
            reason: format!("timed out after {}", crate::duration::spell(timeout)),
            detail: stderr,
        }),
    }
}

fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A pipe read to its end on a thread of its own.
struct Drain {
    text: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
}

impl Drain {
    fn start(pipe: Option<impl Read + Send + 'static>) -> Drain {
        let text = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        if let Some(mut pipe) = pipe {
            let text = Arc::clone(&text);
            std::thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                loop {
                    match pipe.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(n) => text
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .extend_from_slice(&chunk[..n]),
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                let _ = tx.send(());
            });
        }
        Drain { text, done }
    }

    /// What was read: all of it, or what came within the grace time.
    fn finish(self) -> String {
        let _ = self.done.recv_timeout(DRAIN_GRACE);
        let text = self.text.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&text).into_owned()
    }
}

enum Event<R> {
    Started(usize),
    Finished(usize, Duration, R),
}

/// Runs `work` on every item, at most `jobs` at once, and hands each start and result to
/// `seen` on the calling thread (which owns the output).
fn pool<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    work: impl Fn(&T) -> R + Sync,
    mut seen: impl FnMut(Event<R>),
) {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            let tx = tx.clone();
            let (next, work) = (&next, &work);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(item) = items.get(i) else { break };
                let _ = tx.send(Event::Started(i));
                let start = Instant::now();
                let result = work(item);
                let _ = tx.send(Event::Finished(i, start.elapsed(), result));
            });
        }
        drop(tx);
        for event in rx {
            seen(event);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_replaces_known_keys_once_and_leaves_the_rest() {
        assert_eq!(
            fill(
                "{{SESSION}} at {{PATH}} {{UNKNOWN}} {{ {{SESSION}}",
                &[("SESSION", "a{{PATH}}"), ("PATH", "/x")]
            ),
            "a{{PATH}} at /x {{UNKNOWN}} {{ a{{PATH}}"
        );
        assert_eq!(fill("no keys }}", &[("A", "b")]), "no keys }}");
    }

    #[test]
    fn the_synthesis_prompt_heads_each_report_with_its_session() {
        let text = synthesis_prompt("Merge:\n{{REPORTS}}\nEnd", &[("a", "one\n"), ("b", "two")]);
        assert!(text.starts_with("Merge:\n## Session a\n"), "{text}");
        assert!(
            text.contains("<report session=\"b\">\ntwo\n</report>\nEnd"),
            "{text}"
        );
        let text = synthesis_prompt("No placeholder", &[("a", "one")]);
        assert!(text.starts_with("No placeholder\n\n## Session a"), "{text}");
    }

    #[test]
    fn the_remote_command_quotes_every_word_and_stops_on_a_bad_folder() {
        let argv: Vec<String> = ["claude", "--model", "it's", "-p"]
            .map(String::from)
            .to_vec();
        let bounded = |a: &str| {
            format!("if command -v timeout >/dev/null 2>&1; then exec timeout -k 5 90 {a}; else exec {a}; fi")
        };
        let limit = Duration::from_secs(90);
        assert_eq!(
            remote_command("~/my project", Some("export A=1"), &argv, limit),
            format!(
                "cd ~/'my project' || exit 1\nexport A=1\n{}",
                bounded("claude --model 'it'\\''s' -p")
            )
        );
        assert_eq!(
            remote_command("/srv/x;rm -rf /", None, &argv[..1], limit),
            format!("cd '/srv/x;rm -rf /' || exit 1\n{}", bounded("claude"))
        );
    }

    fn text(doc: Vec<u8>) -> String {
        String::from_utf8(doc).expect("utf-8")
    }

    #[test]
    fn context_md_keeps_the_section_this_run_did_not_make() {
        let run = Path::new("/runs/1");
        let both = text(context_document(
            None,
            &[(Part::Insights, "I1".into()), (Part::Dream, "D1".into())],
            Kind::Both,
            run,
        ));
        assert!(both.contains("## Insights\n\nI1\n"), "{both}");
        assert!(both.contains("## Dream\n\nD1\n"), "{both}");
        let later = text(context_document(
            Some(both.as_bytes()),
            &[(Part::Insights, "I2".into())],
            Kind::Insights,
            Path::new("/runs/2"),
        ));
        assert!(later.contains("I2") && !later.contains("I1"), "{later}");
        assert!(later.contains("## Dream\n\nD1\n"), "{later}");
        assert_eq!(later.matches("## Dream").count(), 1, "{later}");
        assert!(later.find("## Insights") < later.find("## Dream"));
    }

    #[test]
    fn context_md_keeps_a_persons_text_byte_for_byte() {
        let run = Path::new("/runs/1");
        // Hand-written, no newline at the end, not even UTF-8.
        let mine: &[u8] = b"# Our notes\n\nKeep \xff this.";
        let first = context_document(Some(mine), &[(Part::Dream, "D1".into())], Kind::Dream, run);
        assert!(
            first.starts_with(mine),
            "{:?}",
            String::from_utf8_lossy(&first)
        );
        // The person writes between and after; a later run adds insights before dream.
        let mut edited = first.clone();
        let dream = section_span(&edited, Part::Dream).expect("dream section");
        edited.splice(dream.start..dream.start, b"between\n\n".to_vec());
        edited.extend_from_slice(b"\nafter <!-- orchestra:insights stray -->\n");
        let both = context_document(
            Some(&edited),
            &[
                (
                    Part::Insights,
                    "I1 quoting <!-- /orchestra:insights -->".into(),
                ),
                (Part::Dream, "D2".into()),
            ],
            Kind::Both,
            Path::new("/runs/2"),
        );
        let shown = String::from_utf8_lossy(&both).into_owned();
        let outside = |doc: &[u8]| {
            let mut rest = doc.to_vec();
            for part in Part::ALL {
                if let Some(span) = section_span(&rest, part) {
                    rest.splice(span, Vec::new());
                }
            }
            rest
        };
        // Outside the sections only the separator of the new insights section was added,
        // just before the dream section.
        let mut expected = edited.clone();
        let at = section_span(&edited, Part::Dream).expect("dream").start;
        expected.splice(at..at, b"\n\n".to_vec());
        let expected = outside(&expected);
        assert_eq!(
            String::from_utf8_lossy(&outside(&both)),
            String::from_utf8_lossy(&expected)
        );
        assert!(shown.contains("D2") && !shown.contains("D1"), "{shown}");
        assert!(
            shown.find("## Insights") < shown.find("## Dream"),
            "{shown}"
        );
        // The quoted marker does not end the section on the next run.
        let again = text(
            context_document(
                Some(&both),
                &[(Part::Insights, "I2".into())],
                Kind::Insights,
                Path::new("/runs/3"),
            )
            .into_iter()
            .filter(|b| *b != 0xff)
            .collect(),
        );
        assert!(again.contains("I2") && !again.contains("I1"), "{again}");
        assert!(
            again.contains("after <!-- orchestra:insights stray -->"),
            "{again}"
        );
    }

    #[test]
    fn the_pool_runs_at_most_n_at_once_and_sees_every_result() {
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let items: Vec<usize> = (0..9).collect();
        let mut results = Vec::new();
        pool(
            &items,
            3,
            |n| {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(30));
                running.fetch_sub(1, Ordering::SeqCst);
                n * 2
            },
            |e| {
                if let Event::Finished(i, _, r) = e {
                    results.push((i, r));
                }
            },
        );
        results.sort();
        assert_eq!(results, (0..9).map(|i| (i, i * 2)).collect::<Vec<_>>());
        assert_eq!(peak.load(Ordering::SeqCst), 3);
    }

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_local_run_gets_the_prompt_on_stdin_and_the_env_snippet() {
        let dir = tempfile::tempdir().unwrap();
        let report = run_local(
            &words(&["sh", "-c", "printf '%s|%s|' \"$GREETING\" \"$(pwd)\"; cat"]),
            Some("GREETING='hello there'; export GREETING"),
            dir.path(),
            "the prompt",
            Duration::from_secs(10),
        )
        .unwrap();
        let here = dir.path().canonicalize().unwrap();
        assert_eq!(report, format!("hello there|{}|the prompt", here.display()));
    }

    #[test]
    fn a_local_run_that_fails_or_hangs_is_a_failure_with_its_reason() {
        let dir = tempfile::tempdir().unwrap();
        let failed = run_local(
            &words(&["sh", "-c", "echo partial; echo 'bad flag' >&2; exit 3"]),
            None,
            dir.path(),
            "",
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert_eq!(failed.reason, "exit 3: bad flag");
        assert!(failed.detail.contains("partial"), "{}", failed.detail);

        let start = Instant::now();
        let hung = run_local(
            &words(&["sleep", "30"]),
            None,
            dir.path(),
            "",
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(hung.reason.starts_with("timed out"), "{}", hung.reason);
        assert!(start.elapsed() < Duration::from_secs(5));

        let silent = run_local(
            &words(&["true"]),
            None,
            dir.path(),
            "",
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert_eq!(silent.reason, "the agent printed no report");

        let missing = run_local(
            &words(&["/no/such/agent"]),
            None,
            dir.path(),
            "",
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert!(missing.reason.starts_with("cannot start /no/such/agent"));
    }

    #[test]
    fn a_large_prompt_does_not_deadlock() {
        let dir = tempfile::tempdir().unwrap();
        let prompt = "x".repeat(1 << 20);
        let report = run_local(
            &words(&["cat"]),
            None,
            dir.path(),
            &prompt,
            Duration::from_secs(20),
        )
        .unwrap();
        assert_eq!(report.len(), prompt.len());
    }
}
