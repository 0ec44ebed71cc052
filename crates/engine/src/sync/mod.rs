//! The sync engine behind `insights`, `dream` and `sync`: ask each manifest session's agent
//! what it knows (`claude -p` in its folder, over SSH for a remote one), save the reports
//! under `$ORCHESTRA_HOME/runs/<time>/`, and synthesize them into CONTEXT.md.
//!
//! [`plan`] checks everything before anything runs or is written; [`run`] asks the
//! sessions (a bounded pool of agent runs), synthesizes each part and merges CONTEXT.md,
//! telling its caller what happens as [`Progress`] values and returning a [`Summary`].
//! A session that fails (exit status, timeout, unreachable host) is reported and left out;
//! the others still finish.

mod agent;
mod context;
mod plan;
mod pool;
mod runs;
mod template;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use plan::{plan, Plan, Request, Target};
pub use runs::{last_run_age, start_run};

use agent::{ask, Failure};
use pool::{pool, Event};

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

    /// The command that runs this kind (also the name of its --if-due stamp).
    pub fn command(self) -> &'static str {
        match self {
            Kind::Insights => "insights",
            Kind::Dream => "dream",
            Kind::Both => "sync",
        }
    }
}

/// One question asked of every session, with its own synthesis and CONTEXT.md section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Insights,
    Dream,
}

impl Part {
    const ALL: [Part; 2] = [Part::Insights, Part::Dream];

    pub fn name(self) -> &'static str {
        match self {
            Part::Insights => "insights",
            Part::Dream => "dream",
        }
    }

    fn prompt(self) -> &'static str {
        match self {
            Part::Insights => crate::prompts::INSIGHT,
            Part::Dream => crate::prompts::DREAM,
        }
    }

    fn synthesis_prompt(self) -> &'static str {
        match self {
            Part::Insights => crate::prompts::SYNTHESIZE_INSIGHTS,
            Part::Dream => crate::prompts::SYNTHESIZE_DREAM,
        }
    }

    fn heading(self) -> &'static str {
        match self {
            Part::Insights => "Insights",
            Part::Dream => "Dream",
        }
    }
}

/// Why a sync cannot start. `Request` is the request's fault (exit 2); the rest are
/// refusals or failures on the way.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("{0}")]
    Request(String),
    #[error("the prompt {0:?} is missing")]
    PromptMissing(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

/// What a run tells its caller as it goes, in the order it happens.
pub enum Progress<'a> {
    /// A session's agent was started for one part.
    Asking { part: Part, target: &'a Target },
    /// A session's run ended: `done` of `total` runs have ended so far.
    Asked {
        done: usize,
        total: usize,
        part: Part,
        target: &'a Target,
        elapsed: Duration,
        result: Result<(), String>,
    },
    /// No session of this part gave a report.
    NothingToSynthesize(Part),
    /// The synthesis of this part started, over `reports` reports, in `dir`.
    Synthesizing {
        part: Part,
        reports: usize,
        dir: &'a Path,
    },
    Synthesized {
        part: Part,
        elapsed: Duration,
        result: Result<(), String>,
    },
    /// CONTEXT.md could not be written.
    ContextFailed { path: &'a Path, error: String },
}

/// What a run made and what failed.
#[derive(Debug)]
pub struct Summary {
    /// Every file written, in the order written: reports, saved failures, summaries, and
    /// CONTEXT.md last.
    pub written: Vec<PathBuf>,
    /// What failed: "<part> <session>", "synthesis of <part>", "CONTEXT.md".
    pub failed: Vec<String>,
    /// How many agent runs there were (sessions and syntheses).
    pub runs: usize,
}

/// One agent run: a session asked one part.
struct Job<'a> {
    target: &'a Target,
    part: Part,
    prompt: String,
}

/// Asks every target of `plan` each part of its kind, synthesizes each part from the
/// reports, and merges the summaries into CONTEXT.md; everything is saved in `run_dir`.
pub fn run(plan: &Plan, run_dir: &Path, mut seen: impl FnMut(Progress<'_>)) -> Summary {
    let mut jobs = Vec::new();
    for (part, template, _) in &plan.templates {
        for target in &plan.targets {
            let prompt = template::fill(
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
    let deadline = &plan.deadline;
    pool(
        &jobs,
        plan.jobs,
        |job| ask(job.target, &job.prompt, deadline),
        |event| match event {
            Event::Started(i) => seen(Progress::Asking {
                part: jobs[i].part,
                target: jobs[i].target,
            }),
            Event::Finished(i, elapsed, outcome) => {
                finished += 1;
                let job = &jobs[i];
                let what = format!("{} {}", job.part.name(), job.target.name);
                let stem = format!("{}.{}", job.target.name, job.part.name());
                let result = match outcome {
                    Ok(report) => {
                        let path = run_dir.join(format!("{stem}.md"));
                        match runs::write_text(&path, &report) {
                            Ok(()) => {
                                written.push(path);
                                reports.push((i, report));
                                Ok(())
                            }
                            Err(e) => Err(e.to_string()),
                        }
                    }
                    Err(failure) => {
                        if let Some(path) = runs::save_failure(run_dir, &stem, &failure) {
                            written.push(path);
                        }
                        Err(failure.reason)
                    }
                };
                if result.is_err() {
                    failed.push(what);
                }
                seen(Progress::Asked {
                    done: finished,
                    total,
                    part: job.part,
                    target: job.target,
                    elapsed,
                    result,
                });
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
            seen(Progress::NothingToSynthesize(*part));
            continue;
        }
        syntheses.push((
            *part,
            mine.len(),
            template::synthesis_prompt(template, &mine),
        ));
    }
    let mut summaries: Vec<(Part, String)> = Vec::new();
    let summary_dir = run_dir.join("summary");
    pool(
        &syntheses,
        syntheses.len().max(1),
        |(_, _, prompt)| agent::run_local(&plan.synth_argv, None, &plan.root, prompt, deadline),
        |event| match event {
            Event::Started(i) => seen(Progress::Synthesizing {
                part: syntheses[i].0,
                reports: syntheses[i].1,
                dir: &plan.root,
            }),
            Event::Finished(i, elapsed, outcome) => {
                let part = syntheses[i].0;
                let stem = format!("summary.{}", part.name());
                let saved = outcome.and_then(|summary| {
                    let path = summary_dir.join(format!("{}.md", part.name()));
                    crate::paths::private_dir(&summary_dir)
                        .and_then(|()| runs::write_text(&path, &summary))
                        .map(|()| (path, summary))
                        .map_err(|e| Failure::new(e.to_string()))
                });
                let result = match saved {
                    Ok((path, summary)) => {
                        written.push(path);
                        summaries.push((part, summary));
                        Ok(())
                    }
                    Err(failure) => {
                        if let Some(path) = runs::save_failure(run_dir, &stem, &failure) {
                            written.push(path);
                        }
                        failed.push(format!("synthesis of {}", part.name()));
                        Err(failure.reason)
                    }
                };
                seen(Progress::Synthesized {
                    part,
                    elapsed,
                    result,
                });
            }
        },
    );

    if !summaries.is_empty() {
        let path = plan.context_dir.join("CONTEXT.md");
        match context::update_context(&path, &summaries, plan.kind, run_dir) {
            Ok(()) => written.push(path),
            Err(e) => {
                seen(Progress::ContextFailed {
                    path: &path,
                    error: e.to_string(),
                });
                failed.push("CONTEXT.md".into());
            }
        }
    }
    Summary {
        written,
        failed,
        runs: total + syntheses.len(),
    }
}

/// How long each agent run may take, and that limit as the person reads it (in a
/// timeout's reason).
#[derive(Debug, Clone)]
pub struct Deadline {
    pub limit: Duration,
    pub shown: String,
}

#[cfg(test)]
mod tests {
    use super::plan::Place;
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn a_run_tells_each_step_and_returns_what_it_wrote_and_what_failed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir(root.join("a")).unwrap();
        let run_dir = root.join("run");
        std::fs::create_dir(&run_dir).unwrap();
        // `cat` answers with its prompt: the report is what it was asked.
        let target = |name: &str| Target {
            name: name.into(),
            role: "not set".into(),
            place: Place::Local(root.join(name)),
            env: None,
            argv: words(&["cat"]),
        };
        let plan = Plan {
            kind: Kind::Insights,
            targets: vec![target("a"), target("missing")],
            synth_argv: words(&["cat"]),
            root: root.clone(),
            context_dir: root.clone(),
            deadline: Deadline {
                limit: Duration::from_secs(10),
                shown: "10s".into(),
            },
            jobs: 2,
            interval_secs: 0,
            templates: vec![(
                Part::Insights,
                "ask {{SESSION}} at {{PATH}}".into(),
                "merge {{REPORTS}}".into(),
            )],
        };
        let mut told = Vec::new();
        let summary = run(&plan, &run_dir, |p| {
            told.push(match p {
                Progress::Asking { target, .. } => format!("asking {}", target.name),
                Progress::Asked { target, result, .. } => {
                    format!("asked {}: {result:?}", target.name)
                }
                Progress::NothingToSynthesize(part) => format!("nothing {}", part.name()),
                Progress::Synthesizing { reports, .. } => format!("synthesizing {reports}"),
                Progress::Synthesized { result, .. } => format!("synthesized: {result:?}"),
                Progress::ContextFailed { error, .. } => format!("context: {error}"),
            });
        });
        // The sessions run at once, so their steps interleave; the synthesis comes after.
        assert_eq!(told.len(), 6, "{told:?}");
        let mut asks = told[..4].to_vec();
        asks.sort();
        assert_eq!(
            asks,
            [
                "asked a: Ok(())".to_string(),
                format!(
                    "asked missing: Err(\"folder {} does not exist\")",
                    root.join("missing").display()
                ),
                "asking a".to_string(),
                "asking missing".to_string(),
            ]
        );
        assert_eq!(told[4..], ["synthesizing 1", "synthesized: Ok(())"]);
        assert_eq!(summary.failed, ["insights missing"]);
        assert_eq!(summary.runs, 3);
        let context = root.join("CONTEXT.md");
        assert_eq!(
            summary.written,
            [
                run_dir.join("a.insights.md"),
                run_dir.join("summary/insights.md"),
                context.clone()
            ]
        );
        let text = std::fs::read_to_string(&context).unwrap();
        let asked = format!("ask a at {}", root.join("a").display());
        assert!(text.contains("## Insights"), "{text}");
        assert!(text.contains("merge ## Session a"), "{text}");
        assert!(text.contains(&asked), "{text}");
    }
}
