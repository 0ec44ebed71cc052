//! The `orchestra` binary: parse, dispatch to `cmd::*`, map errors to exit codes. The only
//! place that prints an error and chooses the exit status.

use std::process::ExitCode;

use clap::Parser;

use orchestra::cli::{Cli, Command};
use orchestra::cmd::{self, Context, Output};

fn main() -> ExitCode {
    orchestra::plugin::take_popup_word();
    let cli = match parse_args() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    let mut out = Output {
        out: &mut stdout,
        err: &mut stderr,
    };
    let ctx = match (Context::from_env(cli.socket()), &cli.command) {
        (Ok(ctx), _) => ctx,
        // Neither needs a home: they work in a build with no HOME (a package build).
        (Err(_), Command::Completions { shell }) => {
            return finish(cmd::docs::completions(shell, &mut out))
        }
        (Err(_), Command::Man) => return finish(cmd::docs::man(&mut out)),
        // A hook never fails the agent, even with nowhere to record.
        (Err(_), Command::Event(args)) if args.from_hook => return ExitCode::SUCCESS,
        (Err(e), _) => return finish(Err(e)),
    };
    let result = cmd::run(&ctx, &cli.command, &mut out);
    finish(result)
}

/// The exit status: 0, or the error's message and its class's status.
fn finish(result: Result<(), orchestra::error::Error>) -> ExitCode {
    // Reentrant: this thread may hold the lock already.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let (code, message) = match &result {
        Ok(()) => (0, String::new()),
        Err(e) if e.is_silent() => (e.exit_code(), String::new()),
        // One line, whatever path or name it quotes.
        Err(e) => (e.exit_code(), orchestra::inert::line(&e.to_string())),
    };
    // In a popup this stderr closes with it: the orchestra that opened it says it instead.
    orchestra::plugin::leave_popup_word(code, &message);
    if !message.is_empty() {
        eprintln!("orchestra: {message}");
    }
    ExitCode::from(code)
}

/// The command line, or ONE line on stderr and exit 2: clap's own errors run to several
/// lines (the message, tips, usage, a hint), folded here into one. Help and version print
/// as clap prints them.
fn parse_args() -> Result<Cli, ExitCode> {
    use clap::error::ErrorKind;
    let e = match Cli::try_parse() {
        Ok(cli) => return Ok(cli),
        Err(e) => e,
    };
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        // Help on stdout with 0; help for a missing subcommand on stderr with clap's usage status.
        let _ = e.print();
        return Err(ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)));
    }
    let text = e.to_string();
    // Paragraphs: the message (its indented lines name what is missing), tips, usage.
    let mut paragraphs = text
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty());
    let first = paragraphs.next().unwrap_or_default();
    let message = first.strip_prefix("error: ").unwrap_or(&first);
    let mut parts = vec![message.to_string()];
    parts.extend(paragraphs.filter(|p| p.starts_with("tip:") || p.starts_with("Usage:")));
    eprintln!("orchestra: {} (see --help)", parts.join("; "));
    Err(ExitCode::from(
        orchestra::error::Class::BadInput.exit_code(),
    ))
}
