//! The person at the terminal: a client attached to the server under test, what it shows,
//! and the keys they press.

use std::time::Duration;

use super::{wait_until, Env};

/// The outer terminal a person looks at: a tmux server whose one pane is a client
/// attached to the server under test.
pub(crate) struct Person {
    socket: std::path::PathBuf,
}

impl Person {
    pub(crate) fn attach(env: &Env) -> Person {
        let socket = env.root.join("person.sock");
        let attach = format!(
            "env -u TMUX tmux -S {} attach -t harness",
            env.socket.display()
        );
        let ok = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "person",
                "-x",
                "180",
                "-y",
                "50",
                &attach,
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok);
        assert!(wait_until(Duration::from_secs(10), || !env
            .tmux(&["list-clients"])
            .trim()
            .is_empty()));
        Person { socket }
    }

    pub(crate) fn tmux(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn sees(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "person"])
    }

    /// A popup's text as a person reads it: each line's inside of the box, wrapped lines
    /// joined (where a line wraps depends on the release's popup borders).
    pub(crate) fn reads(&self) -> String {
        self.sees()
            .lines()
            .map(|line| match (line.find('│'), line.rfind('│')) {
                (Some(start), Some(end)) if end > start => &line[start + '│'.len_utf8()..end],
                _ => line,
            })
            .collect()
    }

    #[track_caller]
    pub(crate) fn wait_to_see(&self, text: &str) {
        assert!(
            wait_until(Duration::from_secs(30), || self.sees().contains(text)
                || self.reads().contains(text)),
            "never saw {text:?}:\n{}",
            self.sees()
        );
    }

    /// The status line shows the window's badge: "1:label  waiting".
    #[track_caller]
    pub(crate) fn wait_for_badge(&self, window: &str, state: &str) {
        let shows = || {
            let screen = self.sees();
            let status = screen
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .to_string();
            status
                .split(window)
                .nth(1)
                .is_some_and(|after| after.trim_start().starts_with(state))
        };
        assert!(
            wait_until(Duration::from_secs(30), shows),
            "the badge of {window} never said {state}:\n{}",
            self.sees()
        );
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "person"];
        args.extend_from_slice(keys);
        self.tmux(&args);
        std::thread::sleep(Duration::from_millis(300));
    }

    pub(crate) fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "person", "-l", text]);
        std::thread::sleep(Duration::from_millis(200));
    }
}

impl Drop for Person {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}
