//! One agent run: a prompt on the agent's stdin, its report on stdout; here (a child
//! process) or on a session's host (over SSH), bounded by the run's deadline.

use std::path::Path;
use std::time::Duration;

use super::plan::{Place, Target};
use super::Deadline;
use crate::process::{ProcessError, Run, OUTPUT_CAP};
use crate::remote::{HostSpec, RemoteError};

/// Why an agent run gave no report, and what it printed.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) reason: String,
    pub(super) detail: String,
}

impl Failure {
    pub(super) fn new(reason: String) -> Failure {
        Failure {
            reason,
            detail: String::new(),
        }
    }
}

type Outcome = Result<String, Failure>;

/// Asks one session's agent: `prompt` on its stdin, its report on stdout.
pub(super) fn ask(target: &Target, prompt: &str, deadline: &Deadline) -> Outcome {
    match &target.place {
        Place::Local(dir) => {
            if !dir.is_dir() {
                return Err(Failure::new(format!(
                    "folder {} does not exist",
                    dir.display()
                )));
            }
            run_local(&target.argv, target.env.as_deref(), dir, prompt, deadline)
        }
        Place::Remote { spec, path } => run_remote(
            spec,
            path,
            target.env.as_deref(),
            &target.argv,
            prompt,
            deadline,
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
    deadline: &Deadline,
) -> Outcome {
    let timeout = deadline.limit;
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
            deadline.shown, spec.name
        ))),
        Err(e) => Err(Failure::new(e.to_string())),
    }
}

/// Runs `argv` in `dir` (after the `env` snippet, through `sh`, when there is one), with
/// `prompt` on stdin, through process.rs: killed when the deadline passes, stopped past
/// its output cap. No process group of its own: a Ctrl-C in the terminal must stop the
/// agents too (and several run at once, so none can be the terminal's foreground job).
pub(super) fn run_local(
    argv: &[String],
    env: Option<&str>,
    dir: &Path,
    prompt: &str,
    deadline: &Deadline,
) -> Outcome {
    let Some(program) = argv.first() else {
        return Err(Failure::new("no agent command".into()));
    };
    let run = match env {
        Some(env) => Run::new("sh", deadline.limit)
            .arg("-c")
            .arg(format!("{env}\nexec \"$@\""))
            .arg("sh")
            .args(argv),
        None => Run::new(program, deadline.limit).args(&argv[1..]),
    };
    let output = run.cwd(dir).input(prompt).finish().map_err(|e| match e {
        ProcessError::Spawn { source, .. } => {
            Failure::new(format!("cannot start {program}: {source}"))
        }
        other => Failure::new(other.to_string()),
    })?;
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    match output.status {
        None => Err(Failure {
            reason: format!("timed out after {}", deadline.shown),
            detail: stderr,
        }),
        Some(_) if output.truncated => Err(Failure {
            reason: ProcessError::TooMuchOutput {
                program: program.clone(),
                cap: OUTPUT_CAP,
            }
            .to_string(),
            detail: stderr,
        }),
        Some(status) => judge(status.code(), stdout, stderr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

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

    fn within(limit: Duration) -> Deadline {
        Deadline {
            limit,
            shown: format!("{limit:?}"),
        }
    }

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn a_local_run_gets_the_prompt_on_stdin_and_the_env_snippet() {
        let dir = tempfile::tempdir().unwrap();
        let report = run_local(
            &words(&["sh", "-c", "printf '%s|%s|' \"$GREETING\" \"$(pwd)\"; cat"]),
            Some("GREETING='hello there'; export GREETING"),
            dir.path(),
            "the prompt",
            &within(Duration::from_secs(10)),
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
            &within(Duration::from_secs(10)),
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
            &within(Duration::from_millis(300)),
        )
        .unwrap_err();
        assert!(hung.reason.starts_with("timed out"), "{}", hung.reason);
        assert!(start.elapsed() < Duration::from_secs(5));

        let silent = run_local(
            &words(&["true"]),
            None,
            dir.path(),
            "",
            &within(Duration::from_secs(10)),
        )
        .unwrap_err();
        assert_eq!(silent.reason, "the agent printed no report");

        let missing = run_local(
            &words(&["/no/such/agent"]),
            None,
            dir.path(),
            "",
            &within(Duration::from_secs(10)),
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
            &within(Duration::from_secs(20)),
        )
        .unwrap();
        assert_eq!(report.len(), prompt.len());
    }
}
