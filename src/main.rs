//! The `orchestra` binary: parse, dispatch to `cmd::*`, map errors to exit codes. The only
//! place that prints an error and chooses the exit status.

use std::process::ExitCode;

use clap::Parser;

use orchestra::cli::{Cli, Command};
use orchestra::cmd::{self, Context, Output};

fn main() -> ExitCode {
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
    let result = match &cli.command {
        Command::Slugify(args) => cmd::slugify::run(&ctx, args, &mut out),
        Command::Dispatch(args) => cmd::dispatch::run(&ctx, args, &mut out),
        Command::List(args) => cmd::list::run(&ctx, args, &mut out),
        Command::Kill(args) => cmd::kill::run(&ctx, args, &mut out),
        Command::Brief(args) => cmd::brief::run(&ctx, args, &mut out),
        Command::Approve(args) => cmd::approve::approve(&ctx, args, &mut out),
        Command::Deny(args) => cmd::approve::deny(&ctx, args, &mut out),
        Command::Review(args) => cmd::review::run(&ctx, args, &mut out),
        Command::Merge(args) => cmd::merge::run(&ctx, args, &mut out),
        Command::Done(args) => cmd::done::run(&ctx, args, &mut out),
        Command::Restart(args) => cmd::restart::run(&ctx, args, &mut out),
        Command::Launch(args) => cmd::launch::launch(&ctx, args, &mut out),
        Command::Promote(args) => cmd::launch::promote(&ctx, args, &mut out),
        Command::Tasks(args) => cmd::tasks::run(&ctx, args, &mut out),
        Command::Deps(args) => cmd::deps::run(&ctx, args, &mut out),
        Command::Doctor(args) => cmd::doctor::run(&ctx, args, &mut out),
        Command::Event(args) => cmd::event::run(&ctx, args, &mut out),
        Command::Classify(args) => cmd::classify::run(&ctx, args, &mut out),
        Command::Refresh(args) => cmd::refresh::run(&ctx, args, &mut out),
        Command::StatusLine => cmd::refresh::status_line(&ctx, &mut out),
        Command::Health(args) => cmd::refresh::health(&ctx, args, &mut out),
        Command::Watch { interval, count } => {
            cmd::refresh::watch(&ctx, *interval, *count, &mut out)
        }
        Command::Events(args) => cmd::events::run(&ctx, args, &mut out),
        Command::Conflicts(args) => cmd::conflicts::run(&ctx, args, &mut out),
        Command::Radar(args) => cmd::conflicts::radar(&ctx, args, &mut out),
        Command::Completions { shell } => cmd::docs::completions(shell, &mut out),
        Command::Man => cmd::docs::man(&mut out),
        Command::Tmux(args) => cmd::tmux_cmd::run(&ctx, args, &mut out),
        Command::Notify(args) => cmd::event::notify(&ctx, args, &mut out),
        Command::Prepare(args) => cmd::prepare::run(&ctx, args, &mut out),
        Command::Up(args) => cmd::up::up(&ctx, args, &mut out),
        Command::Down(args) => cmd::up::down(&ctx, args, &mut out),
        Command::Status(args) => cmd::status::status(&ctx, args, &mut out),
        Command::Tail(args) => cmd::status::tail(&ctx, args, &mut out),
        Command::Attach(args) => cmd::status::attach(&ctx, args, &mut out),
        Command::Collect(args) => cmd::status::collect(&ctx, args, &mut out),
        Command::Hosts(args) => cmd::hosts::run(&ctx, args, &mut out),
        Command::Insights(args) => cmd::sync::run(&ctx, args, cmd::sync::Kind::Insights, &mut out),
        Command::Dream(args) => cmd::sync::run(&ctx, args, cmd::sync::Kind::Dream, &mut out),
        Command::Sync(args) => cmd::sync::run(&ctx, args, cmd::sync::Kind::Both, &mut out),
    };
    finish(result)
}

/// The exit status: 0, or the error's message and its class's status.
fn finish(result: Result<(), orchestra::error::Error>) -> ExitCode {
    // Reentrant: this thread may hold the lock already.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if !e.is_silent() {
                eprintln!("orchestra: {e}");
            }
            ExitCode::from(e.exit_code())
        }
    }
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
