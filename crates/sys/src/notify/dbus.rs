//! Notifications over D-Bus (org.freedesktop.Notifications), where notify-rust speaks it:
//! Linux and the BSDs. The one backend that offers actions: a press is heard only from the
//! server that showed the notification.

use std::future::Future;
use std::sync::Arc;
use std::task::{Poll, Wake, Waker};
use std::time::{Duration, Instant};

use super::{Action, Note, Waited};

/// How [`super::send`] names this way when it went.
pub(super) const NAME: &str = "dbus";

/// No command of its own: without a bus, the person's `@orchestra-notify-cmd` or tmux.
pub(super) const COMMAND: Option<&[&str]> = None;

/// Whether a session bus is there to be found; without one zbus must not go looking.
fn bus_reachable() -> bool {
    let runtime_bus = std::env::var_os("XDG_RUNTIME_DIR")
        .is_some_and(|d| std::path::Path::new(&d).join("bus").exists());
    let address = std::env::var_os("DBUS_SESSION_BUS_ADDRESS").filter(|a| !a.is_empty());
    address.is_some() || runtime_bus
}

/// The bus's notification server's capabilities, asked once per process (empty without a
/// bus, or when the server does not answer).
fn capabilities() -> &'static [String] {
    static CAPABILITIES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    CAPABILITIES.get_or_init(|| {
        if bus_reachable() {
            notify_rust::get_capabilities().unwrap_or_default()
        } else {
            Vec::new()
        }
    })
}

/// `body` as it is sent to a server with `capabilities`: one that reads markup
/// ("body-markup") would take `<b>` or `&amp;` in an agent's command for its own and show
/// something else, or nothing; escaped, the command shows as the agent wrote it.
pub(super) fn body_for(body: &str, capabilities: &[String]) -> String {
    if !capabilities.iter().any(|c| c == "body-markup") {
        return body.to_string();
    }
    let mut escaped = String::with_capacity(body.len());
    for c in body.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// Shows `note` through the bus's notification server; `false` without a bus or when it
/// does not take it.
pub(super) fn show(note: &Note) -> bool {
    if !bus_reachable() {
        return false;
    }
    notify_rust::Notification::new()
        .appname("orchestra")
        .summary(&note.title)
        .body(&body_for(&note.body, capabilities()))
        .timeout(notify_rust::Timeout::from(Duration::from_secs(10)))
        .show()
        .is_ok()
}

/// How often a notification with actions looks whether what it asks is still asked.
const STILL_ASKED_EVERY: Duration = Duration::from_secs(2);

/// Whether the bus's notification server shows actions (its capabilities say "actions").
pub(super) fn offers_actions() -> bool {
    capabilities().iter().any(|c| c == "actions")
}

/// Shows `note` with `actions` and waits up to `bound` for the person to choose one; at
/// the bound, or once `still_asked` says no (asked every few seconds), the notification
/// is closed. `None`: it could not be shown.
pub(super) fn show_and_wait(
    note: &Note,
    actions: &[Action],
    bound: Duration,
    still_asked: &mut dyn FnMut() -> bool,
) -> Option<Waited> {
    let mut notification = notify_rust::Notification::new();
    notification
        .appname("orchestra")
        .summary(&note.title)
        .body(&body_for(&note.body, capabilities()))
        // The server keeps it until the bound, when it is closed here.
        .timeout(notify_rust::Timeout::Never);
    for action in actions {
        notification.action(action.key(), action.label());
    }
    // Listening starts before the notification shows, so no press can come first.
    let mut presses = block_on_until(Presses::listen(), Instant::now() + CLOSE_WAIT)?.ok()?;
    let handle = notification.show().ok()?;
    let id = handle.id();
    let deadline = Instant::now() + bound;
    let waited = drive(
        presses.next(id),
        deadline,
        Some((STILL_ASKED_EVERY, still_asked)),
    );
    let chosen = match &waited {
        Driven::Ready(Some(Pressed::Action(key))) => Action::from_key(key),
        _ => None,
    };
    let outcome = match waited {
        Driven::Ready(_) => chosen.map_or(Waited::Dismissed, Waited::Chose),
        Driven::Deadline => Waited::GaveUp,
        Driven::Stopped => Waited::Outlived,
    };
    if outcome != Waited::Dismissed {
        // Acted on or given up: not to be pressed again (a server may keep a notification
        // after an action). Bounded too: a bus that stopped answering must not keep this
        // process.
        let _ = block_on_until(handle.close_async(), Instant::now() + CLOSE_WAIT);
    }
    Some(outcome)
}

/// How long closing a notification (or starting to listen for its presses) may take.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

const SERVER_NAME: &str = "org.freedesktop.Notifications";
const SERVER_PATH: &str = "/org/freedesktop/Notifications";

/// What the notification server said of a notification.
enum Pressed {
    Action(String),
    Closed,
}

/// The presses of a notification, heard only from the notification server: any
/// connection on the session bus can send an `ActionInvoked` signal naming any id
/// (small, sequential numbers), and notify-rust takes one from anybody. Here a signal
/// counts only when the bus says it came from the connection that owned
/// org.freedesktop.Notifications before the notification was shown (the bus daemon
/// sets a signal's sender; nobody else can claim it).
struct Presses {
    stream: zbus::MessageStream,
    server: zbus::names::OwnedUniqueName,
}

impl Presses {
    async fn listen() -> zbus::Result<Presses> {
        let connection = zbus::Connection::session().await?;
        let bus = zbus::fdo::DBusProxy::new(&connection).await?;
        let server = bus
            .get_name_owner(zbus::names::BusName::try_from(SERVER_NAME)?)
            .await?;
        for member in ["ActionInvoked", "NotificationClosed"] {
            let rule = zbus::MatchRule::builder()
                .msg_type(zbus::message::Type::Signal)
                .sender(server.as_ref())
                .path(SERVER_PATH)
                .interface(SERVER_NAME)
                .member(member)
                .build()?;
            bus.add_match_rule(rule).await?;
        }
        Ok(Presses {
            stream: zbus::MessageStream::from(&connection),
            server,
        })
    }

    /// The server's next word on notification `id`; `None` when the bus went away.
    async fn next(&mut self, id: u32) -> Option<Pressed> {
        use futures_lite::StreamExt;
        while let Some(message) = self.stream.next().await {
            let Ok(message) = message else {
                continue;
            };
            if let Some(pressed) = self.of(&message, id) {
                return Some(pressed);
            }
        }
        None
    }

    fn of(&self, message: &zbus::Message, id: u32) -> Option<Pressed> {
        let header = message.header();
        if header.message_type() != zbus::message::Type::Signal
            || header.sender().map(zbus::names::UniqueName::as_str) != Some(self.server.as_str())
            || header.interface().map(zbus::names::InterfaceName::as_str) != Some(SERVER_NAME)
        {
            return None;
        }
        match header.member()?.as_str() {
            "ActionInvoked" => {
                let (nid, key) = message.body().deserialize::<(u32, String)>().ok()?;
                (nid == id).then_some(Pressed::Action(key))
            }
            "NotificationClosed" => {
                let (nid, _reason) = message.body().deserialize::<(u32, u32)>().ok()?;
                (nid == id).then_some(Pressed::Closed)
            }
            _ => None,
        }
    }
}

/// Drives `future` on this thread until it is ready or `deadline` passes (`None`). The bus
/// connection does its reading on threads of its own, which wake this one.
fn block_on_until<F: Future>(future: F, deadline: Instant) -> Option<F::Output> {
    match drive(future, deadline, None) {
        Driven::Ready(value) => Some(value),
        Driven::Deadline | Driven::Stopped => None,
    }
}

/// How [`drive`] ended.
enum Driven<T> {
    Ready(T),
    Deadline,
    /// `go_on` said no.
    Stopped,
}

/// Drives `future` on this thread until it is ready, `deadline` passes, or `go_on`
/// (asked at each of its intervals) says no.
fn drive<F: Future>(
    future: F,
    deadline: Instant,
    mut go_on: Option<(Duration, &mut dyn FnMut() -> bool)>,
) -> Driven<F::Output> {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    let mut next_look = go_on.as_ref().map(|(every, _)| Instant::now() + *every);
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return Driven::Ready(value);
        }
        let now = Instant::now();
        if now >= deadline {
            return Driven::Deadline;
        }
        if let (Some(at), Some((every, look))) = (next_look, go_on.as_mut()) {
            if now >= at {
                if !look() {
                    return Driven::Stopped;
                }
                next_look = Some(now + *every);
            }
        }
        let until = next_look.map_or(deadline, |at| at.min(deadline));
        std::thread::park_timeout(until.saturating_duration_since(now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_escaped_only_for_a_server_that_reads_markup() {
        let body = "api wants to run: a && b <x> 'q' \"r\" &amp;";
        let plain = ["body".to_string(), "actions".to_string()];
        assert_eq!(body_for(body, &plain), body);
        let markup = ["body".to_string(), "body-markup".to_string()];
        assert_eq!(
            body_for(body, &markup),
            "api wants to run: a &amp;&amp; b &lt;x&gt; 'q' \"r\" &amp;amp;"
        );
    }

    #[test]
    fn a_future_not_ready_by_its_deadline_gives_up_and_a_ready_one_answers() {
        let never = std::future::pending::<()>();
        let started = Instant::now();
        assert_eq!(
            block_on_until(never, Instant::now() + Duration::from_millis(200)),
            None
        );
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert_eq!(
            block_on_until(async { 7 }, Instant::now() + Duration::from_secs(1)),
            Some(7)
        );
        assert_eq!(Action::from_key("deny"), Some(Action::Deny));
        assert_eq!(Action::from_key("default"), None);
    }
}
