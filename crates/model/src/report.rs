//! What domain code has to tell the person while it works (a wrap-up it waits for, a
//! teardown that runs for minutes), said as it happens. Commands decide how it shows
//! (`cmd::Output`: results on stdout, notes on stderr); domain code never writes to a
//! stream itself.

/// Where a long step says what it did, in order.
pub trait Report {
    /// A result: what was done.
    fn line(&mut self, text: String);
    /// A note or warning about the work, not its result.
    fn note(&mut self, text: String);
    /// A line of another program's output, shown under the note before it.
    fn detail(&mut self, text: String);
}

/// Says nothing: work done on someone else's behalf (a hook, a status tick).
pub struct Silent;

impl Report for Silent {
    fn line(&mut self, _: String) {}
    fn note(&mut self, _: String) {}
    fn detail(&mut self, _: String) {}
}
