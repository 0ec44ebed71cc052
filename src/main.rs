//! The `orchestra` binary: parse, dispatch to `cmd::*`, print an error's line and exit
//! with its status. The only place that prints an error and exits; what the line says
//! and which status it is come from `orchestra::command_error`.

use std::process::ExitCode;

use clap::Parser;

use orchestra::cli::{Cli, Command};
use orchestra::cmd::{self, Context, Output};
use orchestra::command_error::CommandError;

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

/// The exit status: 0, or the error's line and its class's status (`command_error`).
fn finish(result: Result<(), orchestra::error::Error>) -> ExitCode {
    // Reentrant: this thread may hold the lock already.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let (code, line) = match &result {
        Ok(()) => (0, None),
        Err(e) => {
            let shown = CommandError::from(e);
            (shown.status(), shown.line())
        }
    };
    // In a popup this stderr closes with it: the orchestra that opened it says it instead.
    orchestra::plugin::leave_popup_word(code, line.as_deref().unwrap_or_default());
    if let Some(line) = line {
        eprintln!("orchestra: {line}");
    }
    ExitCode::from(code)
}

/// The command line, or ONE line on stderr and exit 2 (`CommandError::usage`). Help and
/// version print as clap prints them.
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
    let shown = CommandError::usage(&e);
    if let Some(line) = shown.line() {
        eprintln!("orchestra: {line}");
    }
    Err(ExitCode::from(shown.status()))
}
