//! Questions asked on a terminal (the menu's popups): orchestra reads what a person types
//! itself, byte for byte, so no tmux prompt or shell ever parses free text.
//!
//! The terminal runs in raw mode (set with `stty`) and [`Editor`] does the little line
//! editing a prompt needs; bracketed paste keeps a pasted text whole, newlines included.

use std::io::{Read, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

/// After an Esc byte, how long to wait for the rest of a key's escape sequence before
/// taking it for the Esc key itself (tmux writes a sequence in one go).
const ESC_WAIT: Duration = Duration::from_millis(80);
/// How long `stty` may take.
const STTY_DEADLINE: Duration = Duration::from_secs(5);
/// A longer escape sequence is no key we know: it is dropped.
const SEQUENCE_MAX: usize = 32;

/// What one byte (or a quiet moment after Esc) did to the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Keep reading.
    More,
    /// An Esc byte came last: if nothing follows soon, it was the Esc key.
    EscPending,
    /// Enter: the text is complete.
    Submit,
    /// Esc, Ctrl-C, or Ctrl-D on an empty text.
    Cancel,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Parse {
    Text,
    Esc,
    /// `ESC [` and the bytes after it, up to the final byte.
    Csi(Vec<u8>),
    Ss3,
    /// Inside a bracketed paste; `after_cr`: the byte before was a CR (of a CR LF).
    Paste {
        after_cr: bool,
    },
    /// An escape sequence inside a paste: its end (`ESC [201~`) or something to drop.
    PasteEsc(Vec<u8>),
}

/// A one-field line editor, fed the raw bytes a terminal sends. Pure: no I/O.
#[derive(Debug, Clone)]
pub struct Editor {
    text: Vec<u8>,
    /// Whether the text may hold line breaks (typed with Ctrl-J or Alt-Enter, or pasted).
    lines: bool,
    parse: Parse,
}

impl Editor {
    pub fn new(lines: bool) -> Editor {
        Editor {
            text: Vec::new(),
            lines,
            parse: Parse::Text,
        }
    }

    /// The text so far (invalid UTF-8 shown as U+FFFD).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.text).into_owned()
    }

    /// The finished text, exactly as typed.
    pub fn into_text(self) -> Result<String, std::string::FromUtf8Error> {
        String::from_utf8(self.text)
    }

    /// Nothing more came after an Esc byte: it was the Esc key.
    pub fn quiet(&mut self) -> Step {
        if self.parse == Parse::Esc {
            self.parse = Parse::Text;
            return Step::Cancel;
        }
        Step::More
    }

    /// Feeds `bytes` up to the first that ends the question; the last step.
    pub fn feed_all(&mut self, bytes: &[u8]) -> Step {
        let mut step = Step::More;
        for &byte in bytes {
            step = self.feed(byte);
            if matches!(step, Step::Submit | Step::Cancel) {
                break;
            }
        }
        step
    }

    pub fn feed(&mut self, byte: u8) -> Step {
        match std::mem::replace(&mut self.parse, Parse::Text) {
            Parse::Text => self.key(byte),
            Parse::Esc => match byte {
                b'[' => {
                    self.parse = Parse::Csi(Vec::new());
                    Step::More
                }
                b'O' => {
                    self.parse = Parse::Ss3;
                    Step::More
                }
                // Alt-Enter: a line break where the field takes them.
                b'\r' | b'\n' => {
                    if self.lines {
                        self.text.push(b'\n');
                    }
                    Step::More
                }
                // Esc pressed twice.
                0x1b => Step::Cancel,
                // Alt with some key: not text.
                _ => Step::More,
            },
            Parse::Csi(mut seq) => {
                seq.push(byte);
                if (0x40..=0x7e).contains(&byte) {
                    if seq == b"200~" {
                        self.parse = Parse::Paste { after_cr: false };
                    }
                    // Arrows, function keys and the like move nothing here.
                } else if seq.len() < SEQUENCE_MAX {
                    self.parse = Parse::Csi(seq);
                }
                Step::More
            }
            Parse::Ss3 => Step::More,
            Parse::Paste { after_cr } => {
                self.pasted(byte, after_cr);
                Step::More
            }
            Parse::PasteEsc(mut seq) => {
                seq.push(byte);
                let complete = seq[0] != b'['
                    || seq.len() > 1 && (0x40..=0x7e).contains(&byte)
                    || seq.len() >= SEQUENCE_MAX;
                self.parse = if seq == b"[201~" {
                    Parse::Text
                } else if complete {
                    // Colours or cursor moves inside a paste are no text.
                    Parse::Paste { after_cr: false }
                } else {
                    Parse::PasteEsc(seq)
                };
                Step::More
            }
        }
    }

    /// A byte typed outside a paste.
    fn key(&mut self, byte: u8) -> Step {
        match byte {
            0x1b => {
                self.parse = Parse::Esc;
                return Step::EscPending;
            }
            b'\r' => return Step::Submit,
            // Ctrl-J: a line break where the field takes them, else Enter.
            b'\n' if self.lines => self.text.push(b'\n'),
            b'\n' => return Step::Submit,
            0x03 => return Step::Cancel,
            0x04 if self.text.is_empty() => return Step::Cancel,
            0x7f | 0x08 => self.erase_char(),
            // Ctrl-U: the current line; Ctrl-W: the word before the cursor.
            0x15 => {
                while self.text.last().is_some_and(|b| *b != b'\n') {
                    self.text.pop();
                }
            }
            0x17 => {
                while self.text.last().is_some_and(|b| *b == b' ') {
                    self.text.pop();
                }
                while self.text.last().is_some_and(|b| *b != b' ' && *b != b'\n') {
                    self.text.pop();
                }
            }
            b'\t' => self.text.push(byte),
            // Other control keys are no text.
            0x00..=0x1f => {}
            _ => self.text.push(byte),
        }
        Step::More
    }

    fn pasted(&mut self, byte: u8, after_cr: bool) {
        self.parse = Parse::Paste {
            after_cr: byte == b'\r',
        };
        // Terminals paste a line break as CR (or CR LF); a one-line field gets a space.
        let line_break = if self.lines { b'\n' } else { b' ' };
        match byte {
            0x1b => self.parse = Parse::PasteEsc(Vec::new()),
            b'\n' if after_cr => {}
            b'\r' | b'\n' => self.text.push(line_break),
            b'\t' => self.text.push(byte),
            0x00..=0x1f | 0x7f => {}
            _ => self.text.push(byte),
        }
    }

    /// Removes the last character (all the bytes of a UTF-8 sequence).
    fn erase_char(&mut self) {
        while let Some(b) = self.text.pop() {
            if b & 0xc0 != 0x80 {
                break;
            }
        }
    }
}

/// The terminal of this process (a popup's), in raw mode until dropped.
pub struct Terminal {
    saved: String,
    input: Receiver<std::io::Result<Vec<u8>>>,
    /// Lines shown above the question on every redraw: what was asked and answered.
    header: Vec<String>,
}

impl Terminal {
    /// Raw mode and bracketed paste on standard input/output, which must be a terminal.
    pub fn open() -> std::io::Result<Terminal> {
        let saved = stty(&["-g"])?.trim().to_string();
        stty(&["raw", "-echo"])?;
        let (send, input) = mpsc::channel();
        // A blocking reader of its own, so a lone Esc can be told from a key's sequence
        // by waiting a moment; it ends with the process.
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin();
            let mut buf = [0u8; 4096];
            loop {
                let read = stdin.read(&mut buf).map(|n| buf[..n].to_vec());
                let stop = !matches!(&read, Ok(bytes) if !bytes.is_empty());
                if send.send(read).is_err() || stop {
                    return;
                }
            }
        });
        let terminal = Terminal {
            saved,
            input,
            header: Vec::new(),
        };
        write_out(b"\x1b[?2004h")?;
        Ok(terminal)
    }

    /// A line shown above every question from now on.
    pub fn say(&mut self, line: impl Into<String>) {
        self.header.push(line.into());
    }

    /// Asks `question` and returns the text typed (empty if Enter came first), or `None`
    /// when the person cancelled. `lines`: the answer may hold line breaks.
    pub fn ask(
        &mut self,
        question: &str,
        hint: &str,
        lines: bool,
    ) -> std::io::Result<Option<String>> {
        let mut editor = Editor::new(lines);
        self.draw(question, hint, &editor)?;
        loop {
            let chunk = match self.input.recv() {
                Ok(Ok(bytes)) if !bytes.is_empty() => bytes,
                // End of input: nobody is there to answer.
                Ok(Ok(_)) | Err(_) => return Ok(None),
                Ok(Err(e)) => return Err(e),
            };
            let mut step = editor.feed_all(&chunk);
            if step == Step::EscPending {
                step = match self.input.recv_timeout(ESC_WAIT) {
                    Err(RecvTimeoutError::Timeout) => editor.quiet(),
                    Ok(Ok(bytes)) => editor.feed_all(&bytes),
                    Ok(Err(e)) => return Err(e),
                    Err(RecvTimeoutError::Disconnected) => return Ok(None),
                };
            }
            match step {
                Step::Cancel => return Ok(None),
                Step::Submit => {
                    let shown = editor.text();
                    let text = editor.into_text().map_err(|_| {
                        std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            "the text typed is not UTF-8",
                        )
                    })?;
                    self.say(format!("{question}{shown}"));
                    self.draw_header()?;
                    return Ok(Some(text));
                }
                Step::More | Step::EscPending => self.draw(question, hint, &editor)?,
            }
        }
    }

    /// Shows `line` below what is on the screen now.
    pub fn show(&mut self, line: &str) -> std::io::Result<()> {
        self.say(line);
        self.draw_header()
    }

    fn draw_header(&self) -> std::io::Result<()> {
        let mut screen = String::from("\x1b[H\x1b[2J");
        for line in &self.header {
            screen.push_str(&line.replace('\n', "\r\n"));
            screen.push_str("\r\n");
        }
        write_out(screen.as_bytes())
    }

    fn draw(&self, question: &str, hint: &str, editor: &Editor) -> std::io::Result<()> {
        let mut screen = String::from("\x1b[H\x1b[2J");
        for line in &self.header {
            screen.push_str(&line.replace('\n', "\r\n"));
            screen.push_str("\r\n");
        }
        screen.push_str(&format!("\x1b[2m{hint}\x1b[0m\r\n"));
        screen.push_str(question);
        screen.push_str(&editor.text().replace('\n', "\r\n"));
        write_out(screen.as_bytes())
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = write_out(b"\x1b[?2004l");
        let _ = stty(&[&self.saved]);
    }
}

fn write_out(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// Runs `stty` on standard input (the terminal) and returns what it printed.
fn stty(args: &[&str]) -> std::io::Result<String> {
    let output = crate::process::Run::new("stty", STTY_DEADLINE)
        .args(args)
        .stdin_inherit()
        .output()
        .map_err(|e| match e {
            crate::process::ProcessError::Spawn { source, .. } => source,
            crate::process::ProcessError::TimedOut { .. } => {
                std::io::Error::new(std::io::ErrorKind::TimedOut, "stty did not answer")
            }
            e => std::io::Error::other(e.to_string()),
        })?;
    if !output.success() {
        return Err(std::io::Error::other(format!(
            "stty {}: {} (is this a terminal?)",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes`; returns the first Submit/Cancel (or the last step) and the text.
    fn run(lines: bool, bytes: &[u8]) -> (Step, String) {
        let mut editor = Editor::new(lines);
        let step = editor.feed_all(bytes);
        (step, editor.text())
    }

    #[test]
    fn typed_text_arrives_byte_for_byte() {
        let hostile = "a %% b \" ; run-shell \"touch X\" ; \" '$HOME' #(x) `y` \\ é";
        let mut bytes = hostile.as_bytes().to_vec();
        bytes.push(b'\r');
        assert_eq!(run(false, &bytes), (Step::Submit, hostile.to_string()));
    }

    #[test]
    fn editing_keys() {
        assert_eq!(run(false, b"abc\x7f\x7fd\r"), (Step::Submit, "ad".into()));
        // Backspace removes a whole UTF-8 character.
        assert_eq!(
            run(false, "xé\x7f\r".as_bytes()),
            (Step::Submit, "x".into())
        );
        assert_eq!(run(false, b"one two\x17\r"), (Step::Submit, "one ".into()));
        assert_eq!(run(false, b"one two\x15x\r"), (Step::Submit, "x".into()));
        // Arrow keys and other sequences are no text.
        assert_eq!(
            run(false, b"a\x1b[A\x1b[1;5Cb\x1bOPc\r"),
            (Step::Submit, "abc".into())
        );
    }

    #[test]
    fn esc_ctrl_c_and_ctrl_d_cancel() {
        let mut editor = Editor::new(false);
        for &b in b"abc" {
            editor.feed(b);
        }
        assert_eq!(editor.feed(0x1b), Step::EscPending);
        assert_eq!(editor.quiet(), Step::Cancel);
        assert_eq!(run(false, b"abc\x03").0, Step::Cancel);
        assert_eq!(run(false, b"\x04").0, Step::Cancel);
        assert_eq!(run(false, b"a\x04\r"), (Step::Submit, "a".into()));
        assert_eq!(run(false, b"\x1b\x1b").0, Step::Cancel);
    }

    #[test]
    fn line_breaks_only_where_the_field_takes_them() {
        assert_eq!(run(true, b"one\ntwo\r"), (Step::Submit, "one\ntwo".into()));
        assert_eq!(
            run(true, b"one\x1b\rtwo\r"),
            (Step::Submit, "one\ntwo".into())
        );
        assert_eq!(run(false, b"one\ntwo\r"), (Step::Submit, "one".into()));
        assert_eq!(
            run(false, b"one\x1b\rtwo\r"),
            (Step::Submit, "onetwo".into())
        );
    }

    #[test]
    fn a_paste_stays_whole() {
        let paste = b"\x1b[200~line 1\r\rline 3\r\nend \x1b[31mred\x1b[201~!\r";
        assert_eq!(
            run(true, paste),
            (Step::Submit, "line 1\n\nline 3\nend red!".into())
        );
        assert_eq!(
            run(false, paste),
            (Step::Submit, "line 1  line 3 end red!".into())
        );
        // A paste ending in a line break keeps it.
        assert_eq!(
            run(true, b"\x1b[200~x\r\x1b[201~\r"),
            (Step::Submit, "x\n".into())
        );
    }
}
