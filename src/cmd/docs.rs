//! `orchestra completions` and `orchestra man`: generated from the clap definitions.

use clap::CommandFactory;

use crate::cli::Cli;
use crate::cmd::Output;
use crate::error::Error;

pub fn completions(shell: &str, out: &mut Output<'_>) -> Result<(), Error> {
    let shell = match shell {
        "bash" => clap_complete::Shell::Bash,
        "zsh" => clap_complete::Shell::Zsh,
        "fish" => clap_complete::Shell::Fish,
        other => return Err(Error::BadInput(format!("no completions for {other:?}"))),
    };
    // clap_complete panics on a write error: it writes to memory, and a closed stdout
    // (`| head -1`) ends the command quietly as everywhere else.
    let mut text = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "orchestra", &mut text);
    let _ = out.out.write_all(&text);
    Ok(())
}

pub fn man(out: &mut Output<'_>) -> Result<(), Error> {
    let mut text = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut text)
        .map_err(Error::io("writing the manual page"))?;
    let _ = out.out.write_all(&text);
    Ok(())
}
