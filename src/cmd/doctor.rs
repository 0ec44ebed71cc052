//! `orchestra doctor`: check the tools and the store, reconcile the record with what tmux
//! and git hold, and with `--fix` settle what a command killed part-way left behind
//! (`crate::doctor`). Shows each finding in a column of its verdict.

use crate::cli::DoctorArgs;
use crate::cmd::{Context, Output};
use crate::doctor::{Findings, Verdict};
use crate::error::Error;

pub fn run(ctx: &Context, args: &DoctorArgs, out: &mut Output<'_>) -> Result<(), Error> {
    crate::doctor::check(ctx, args.fix, out)
}

impl Findings for Output<'_> {
    fn finding(&mut self, verdict: Verdict, text: String) {
        let word = match verdict {
            Verdict::Ok => "ok",
            Verdict::Problem => "PROBLEM",
            Verdict::Fixed => "fixed",
        };
        self.line(format!("{word:<8} {text}"));
    }
}
