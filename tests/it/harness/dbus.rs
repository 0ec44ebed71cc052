//! A private D-Bus session bus (`dbus-daemon`), with a small python3-dbus stand-in owning
//! org.freedesktop.Notifications that logs every Notify and CloseNotification call and,
//! when it advertises "actions", lets a test press a notification's button.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{require, wait_until};

/// A private session bus and a notification daemon logging every Notify call.
pub(crate) struct Bus {
    daemon: Child,
    listener: Child,
    /// DBUS_SESSION_BUS_ADDRESS for a program that should talk to this bus.
    pub address: String,
    log: PathBuf,
}

impl Bus {
    /// `None` (a reported skip) without dbus-daemon or python3-dbus, except on CI.
    pub(crate) fn start(root: &Path) -> Option<Bus> {
        Bus::start_with(root, &["body"])
    }

    /// A bus whose notification server shows actions (its capabilities say "actions").
    pub(crate) fn with_actions(root: &Path) -> Option<Bus> {
        Bus::start_with(root, &["body", "actions"])
    }

    /// A bus whose notification server says it has `capabilities` ("body-markup": it
    /// reads the body as markup).
    pub(crate) fn start_with(root: &Path, capabilities: &[&str]) -> Option<Bus> {
        let have = Path::new("/usr/bin/dbus-daemon").exists()
            && Path::new("/usr/bin/dbus-send").exists()
            && Command::new("/usr/bin/python3")
                .args(["-c", "import dbus, gi"])
                .status()
                .is_ok_and(|s| s.success());
        if !require("dbus-daemon and python3-dbus/python3-gi", have) {
            return None;
        }
        let mut daemon = Command::new("/usr/bin/dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("dbus-daemon");
        let mut address = String::new();
        {
            use std::io::BufRead;
            let stdout = daemon.stdout.take().unwrap();
            std::io::BufReader::new(stdout)
                .read_line(&mut address)
                .unwrap();
        }
        let address = address.trim().to_string();
        let log = root.join("notifications.jsonl");
        let ready = root.join("listener.ready");
        let listener = Command::new("/usr/bin/python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/notify-listener.py"))
            .arg(&log)
            .arg(&ready)
            .arg(capabilities.join(","))
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .spawn()
            .expect("listener");
        assert!(
            wait_until(Duration::from_secs(10), || ready.exists()),
            "the notification listener did not start"
        );
        Some(Bus {
            daemon,
            listener,
            address,
            log,
        })
    }

    /// Every Notify call so far, as the daemon logged it.
    pub(crate) fn notes(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The first notification whose summary says `summary`, once it reached the bus (within
    /// `limit`); fails naming every notification there is.
    #[track_caller]
    pub(crate) fn wait_note(&self, summary: &str, limit: Duration) -> serde_json::Value {
        let found = || {
            self.notes()
                .into_iter()
                .find(|n| n["summary"].as_str().unwrap_or("").contains(summary))
        };
        assert!(
            wait_until(limit, || found().is_some()),
            "no notification says {summary:?}: {:?}",
            self.notes()
        );
        found().expect("found above")
    }
}

impl Bus {
    /// The ids of the notifications closed so far (CloseNotification calls).
    pub(crate) fn closed(&self) -> Vec<u64> {
        let mut path = self.log.clone().into_os_string();
        path.push(".closed");
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    }

    /// The person presses the button `key` of notification `id`. The sender hears it only
    /// once it listens, which it starts just after the notification shows (a person is
    /// never that quick; a test is): pressed again until the sender closes the notification,
    /// as it does on hearing an action.
    #[track_caller]
    pub(crate) fn press(&self, id: u64, key: &str) {
        let heard = wait_until(Duration::from_secs(20), || {
            let ok = Command::new("/usr/bin/dbus-send")
                .args([
                    "--session",
                    "--type=method_call",
                    "--print-reply",
                    "--dest=org.freedesktop.Notifications",
                    "/org/freedesktop/Notifications",
                    "org.orchestra.Test.Invoke",
                    &format!("uint32:{id}"),
                    &format!("string:{key}"),
                ])
                .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "dbus-send could not reach the stand-in");
            std::thread::sleep(Duration::from_millis(200));
            self.closed().contains(&id)
        });
        assert!(
            heard,
            "the notification's sender never heard {key:?} on {id}"
        );
    }
}

impl Bus {
    /// An `ActionInvoked` signal for notification `id` with `key`, sent by another
    /// connection on the bus than the notification server (any program of the session
    /// can send one).
    pub(crate) fn forge_press(&self, id: u64, key: &str) {
        let ok = Command::new("/usr/bin/dbus-send")
            .args([
                "--session",
                "--type=signal",
                "/org/freedesktop/Notifications",
                "org.freedesktop.Notifications.ActionInvoked",
                &format!("uint32:{id}"),
                &format!("string:{key}"),
            ])
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "dbus-send could not send the signal");
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = self.listener.kill();
        let _ = self.listener.wait();
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}
