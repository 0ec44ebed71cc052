//! A sandbox's network limited to a list of hosts: the box has a network namespace of
//! its own (its own loopback, nothing else), and two small servers, both this program,
//! join it to the listed hosts and nothing more.
//!
//! - The **proxy** runs outside the box, next to bwrap, listening only on a Unix socket
//!   in the session's folder (bound into the box read-only). It reads one HTTP request
//!   head: `CONNECT host:port` (a tunnel, for HTTPS and anything else) or an absolute-form
//!   plain HTTP request (`GET http://host:port/path`), lets it through when the host is
//!   listed, and answers 403 with a line saying why otherwise.
//! - The **bridge** runs inside the box, listening on the box's own `127.0.0.1:PORT`
//!   (what `HTTPS_PROXY` names there), and forwards each connection to that socket.
//!
//! Each watches the process it was started by (its parent: bwrap outside, the agent
//! inside, both by exec of the starter) and ends, the proxy removing its socket, the
//! moment that parent is gone, however it went (kill -9 too). Every connection has
//! deadlines (its request head, its connect, its idleness) and the proxy takes at most
//! [`MAX_CONNECTIONS`] at once, each head at most [`MAX_HEAD`] bytes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestra_model::sandbox::{allowed, split_host_port, Allowed};

/// The port the bridge listens on in the box's own loopback.
pub const BRIDGE_PORT: u16 = 3128;
/// The proxy's socket, in the session's folder.
pub const SOCKET: &str = "net.sock";
/// What the proxy says of what it refused, in the session's folder.
pub const LOG: &str = "network.log";

/// Connections the proxy (and the bridge) serve at once; past it one is answered 503.
pub const MAX_CONNECTIONS: usize = 64;
/// The longest request head the proxy reads.
pub const MAX_HEAD: usize = 16 * 1024;
/// How long a request head may take to arrive.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a host's name may take to resolve and a connection to it to be made.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// A connection with nothing through it either way for this long is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// How often a copy looks up from a read that waits, and a server at its parent.
const TICK: Duration = Duration::from_millis(100);
/// How long a starter waits for its server to say it listens.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// What went wrong making a limited network.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("its {0} did not start: {1}")]
    NotStarted(&'static str, String),
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> NetError {
    let context = context.into();
    move |source| NetError::Io { context, source }
}

/// Starts `exe args…` (this program's hidden server) as a child, its own process group
/// (a Ctrl-C to the agent's terminal is not its), and waits for its first line, `ready`:
/// then what it serves is there. No deadline on the child: it ends with its parent.
pub fn start(
    exe: &Path,
    args: &[String],
    what: &'static str,
    log: Option<&Path>,
) -> Result<(), NetError> {
    use std::os::unix::process::CommandExt;
    let stderr = log
        .and_then(|l| crate::paths::open_log(l).ok())
        .map_or_else(Stdio::null, Stdio::from);
    let mut child = crate::process::command(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .process_group(0)
        .spawn()
        .map_err(io(format!("starting {}", exe.display())))?;
    let stdout = child.stdout.take();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        if let Some(out) = stdout {
            let _ = BufReader::new(out).read_line(&mut line);
        }
        let _ = tx.send(line);
    });
    match rx.recv_timeout(READY_TIMEOUT) {
        Ok(line) if line.trim() == "ready" => Ok(()),
        Ok(line) => {
            let _ = child.wait();
            Err(NetError::NotStarted(what, line.trim().to_string()))
        }
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(NetError::NotStarted(what, "it did not answer".into()))
        }
    }
}

/// Ends this process (removing `socket` first, if any) once its parent is no longer
/// `parent`: the process that started it is gone and this one was handed to another.
fn watch_parent(parent: u32, socket: Option<PathBuf>) {
    use std::os::unix::fs::MetadataExt;
    let ours = |path: &Path| {
        std::fs::symlink_metadata(path)
            .map(|m| (m.dev(), m.ino()))
            .ok()
    };
    let mine = socket.as_deref().and_then(ours);
    std::thread::spawn(move || loop {
        if std::os::unix::process::parent_id() != parent {
            // Only the socket this one made: the next box's proxy (the agent's after the
            // setup's) may have made its own there already.
            if let Some(s) = socket
                .as_deref()
                .filter(|s| mine.is_some() && ours(s) == mine)
            {
                let _ = std::fs::remove_file(s);
            }
            std::process::exit(0);
        }
        std::thread::sleep(TICK);
    });
}

fn say_ready() -> Result<(), NetError> {
    let mut out = std::io::stdout();
    writeln!(out, "ready")
        .and_then(|()| out.flush())
        .map_err(io("saying it listens"))
}

/// The proxy: serves `socket` for as long as `parent` lives, letting through to `list`
/// only. Returns only when it cannot listen.
pub fn serve_proxy(socket: &Path, list: Vec<Allowed>, parent: u32) -> Result<(), NetError> {
    // A socket left by a proxy killed itself is not in the way of this one.
    let _ = std::fs::remove_file(socket);
    let listener =
        UnixListener::bind(socket).map_err(io(format!("listening on {}", socket.display())))?;
    watch_parent(parent, Some(socket.to_path_buf()));
    say_ready()?;
    let list = Arc::new(list);
    let active = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::SeqCst);
            let _ = conn.set_write_timeout(Some(HEAD_TIMEOUT));
            let _ = conn.write_all(&answer(
                503,
                "too many connections through the sandbox's proxy at once",
            ));
            continue;
        }
        let (list, active) = (Arc::clone(&list), Arc::clone(&active));
        std::thread::spawn(move || {
            if let Err(said) = proxy_one(conn, &list) {
                eprintln!("{said}");
            }
            active.fetch_sub(1, Ordering::SeqCst);
        });
    }
    Ok(())
}

/// The bridge: serves `127.0.0.1:port` of the box's loopback for as long as `parent`
/// lives, each connection carried to the proxy's `socket`.
pub fn serve_bridge(socket: &Path, port: u16, parent: u32) -> Result<(), NetError> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .map_err(io(format!("listening on 127.0.0.1:{port} in the sandbox")))?;
    watch_parent(parent, None);
    say_ready()?;
    let active = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        let socket = socket.to_path_buf();
        let active = Arc::clone(&active);
        std::thread::spawn(move || {
            if let Ok(proxy) = UnixStream::connect(&socket) {
                splice(conn, proxy);
            }
            active.fetch_sub(1, Ordering::SeqCst);
        });
    }
    Ok(())
}

/// An HTTP answer of the proxy's own: `status` and a one-line body.
fn answer(status: u16, body: &str) -> Vec<u8> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    };
    let body = format!("orchestra sandbox: {body}\n");
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A request head, and what came after it in the same reads.
struct Head {
    text: String,
    rest: Vec<u8>,
}

/// Reads up to the blank line that ends a request head: `Err` with the status to answer.
fn read_head(conn: &mut impl Read) -> Result<Head, u16> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let started = Instant::now();
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            // A head that ends past the bound is too long, however it arrived.
            if end + 4 > MAX_HEAD {
                return Err(431);
            }
            let rest = buf.split_off(end + 4);
            let text = String::from_utf8(buf).map_err(|_| 400u16)?;
            return Ok(Head { text, rest });
        }
        if buf.len() > MAX_HEAD {
            return Err(431);
        }
        if started.elapsed() > HEAD_TIMEOUT {
            return Err(400);
        }
        match conn.read(&mut chunk) {
            Ok(0) => return Err(400),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(400),
        }
    }
}

/// Where a request wants to go, and what to send there first.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    host: String,
    port: u16,
    /// `None` for a tunnel (CONNECT); else the request head rewritten for the host.
    head: Option<String>,
}

/// What a request head asks for: `Err` is the status and the line to answer with.
fn target(head: &str) -> Result<Target, (u16, String)> {
    let bad = |why: &str| (400, why.to_string());
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut words = first.split(' ');
    let (Some(method), Some(uri), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(bad("a request line is METHOD TARGET VERSION"));
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_host_port(uri).map_err(|e| bad(&e))?;
        let port = port
            .and_then(|p| p.parse::<u16>().ok())
            .ok_or_else(|| bad("CONNECT names host:port"))?;
        return Ok(Target {
            host: host.to_string(),
            port,
            head: None,
        });
    }
    let Some(rest) = uri
        .get(..7)
        .filter(|s| s.eq_ignore_ascii_case("http://"))
        .map(|_| &uri[7..])
    else {
        return Err(bad(
            "only CONNECT and plain http:// requests in absolute form go through this proxy",
        ));
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) if rest[at..].starts_with('/') => (&rest[..at], rest[at..].to_string()),
        Some(at) => (&rest[..at], format!("/{}", &rest[at..])),
        None => (rest, "/".to_string()),
    };
    if authority.contains('@') {
        return Err(bad("no user or password in the address"));
    }
    let (host, port) = split_host_port(authority).map_err(|e| bad(&e))?;
    let port = match port {
        None => 80,
        Some(p) => p.parse::<u16>().map_err(|_| bad("a port is a number"))?,
    };
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        // Hop-by-hop: this proxy's, not the host's; one request per connection.
        if name
            .get(..6)
            .is_some_and(|p| p.eq_ignore_ascii_case("proxy-"))
            || name.eq_ignore_ascii_case("connection")
            || name.eq_ignore_ascii_case("keep-alive")
        {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Target {
        host: host.to_string(),
        port,
        head: Some(out),
    })
}

/// One connection through the proxy; `Err` is the line its log gets.
fn proxy_one(mut conn: UnixStream, list: &[Allowed]) -> Result<(), String> {
    let _ = conn.set_read_timeout(Some(TICK));
    let _ = conn.set_write_timeout(Some(HEAD_TIMEOUT));
    let head = match read_head(&mut TimedRead(&mut conn, Instant::now())) {
        Ok(h) => h,
        Err(status) => {
            let _ = conn.write_all(&answer(status, "a request head the proxy could not read"));
            return Err(format!(
                "refused: a request head it could not read ({status})"
            ));
        }
    };
    let target = match target(&head.text) {
        Ok(t) => t,
        Err((status, why)) => {
            let _ = conn.write_all(&answer(status, &why));
            return Err(format!("refused: {why}"));
        }
    };
    let shown = format!("{}:{}", target.host, target.port);
    if !allowed(list, &target.host, target.port) {
        let _ = conn.write_all(&answer(
            403,
            &format!("{shown} is not in this session's allowed hosts ([sandbox] network)"),
        ));
        return Err(format!("refused: {shown} is not listed"));
    }
    let mut upstream = match connect(&target.host, target.port) {
        Ok(s) => s,
        Err(e) => {
            let _ = conn.write_all(&answer(502, &format!("{shown}: {e}")));
            return Err(format!("could not reach {shown}: {e}"));
        }
    };
    let sent = match &target.head {
        None => conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n"),
        Some(h) => upstream.write_all(h.as_bytes()),
    };
    if sent.and_then(|()| upstream.write_all(&head.rest)).is_err() {
        return Ok(());
    }
    splice(conn, upstream);
    Ok(())
}

/// Reads with the head's own deadline on a stream whose reads wait a [`TICK`] at most.
struct TimedRead<'a>(&'a mut UnixStream, Instant);

impl Read for TimedRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.0.read(buf) {
                Err(e) if waited(&e) && self.1.elapsed() < HEAD_TIMEOUT => {}
                other => return other,
            }
        }
    }
}

fn waited(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// A TCP connection to `host:port`, its name resolved and each address tried within
/// [`CONNECT_TIMEOUT`] in all.
fn connect(host: &str, port: u16) -> std::io::Result<TcpStream> {
    let bare = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    // The system's resolver has no deadline of its own: it answers to a thread that may
    // be left behind.
    std::thread::spawn(move || {
        let _ = tx.send(
            (bare.as_str(), port)
                .to_socket_addrs()
                .map(Iterator::collect::<Vec<SocketAddr>>),
        );
    });
    let addrs = rx.recv_timeout(CONNECT_TIMEOUT).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "its name did not resolve in time",
        )
    })??;
    let started = Instant::now();
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "its name has no address");
    for addr in addrs {
        let left = CONNECT_TIMEOUT.saturating_sub(started.elapsed());
        if left.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A stream both ends of a splice can be.
trait Duplex: Read + Write + Send + Sized + 'static {
    fn twin(&self) -> std::io::Result<Self>;
    fn end_writes(&self);
    fn end_all(&self);
    fn tick(&self);
}

macro_rules! duplex {
    ($t:ty) => {
        impl Duplex for $t {
            fn twin(&self) -> std::io::Result<Self> {
                self.try_clone()
            }
            fn end_writes(&self) {
                let _ = self.shutdown(std::net::Shutdown::Write);
            }
            fn end_all(&self) {
                let _ = self.shutdown(std::net::Shutdown::Both);
            }
            fn tick(&self) {
                let _ = self.set_read_timeout(Some(TICK * 10));
                let _ = self.set_write_timeout(Some(IDLE_TIMEOUT));
            }
        }
    };
}
duplex!(TcpStream);
duplex!(UnixStream);

/// Carries bytes both ways until both ends are done, or nothing went either way for
/// [`IDLE_TIMEOUT`].
fn splice(a: impl Duplex, b: impl Duplex) {
    let (Ok(a2), Ok(b2)) = (a.twin(), b.twin()) else {
        return;
    };
    a.tick();
    b.tick();
    let born = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&last);
    let there = std::thread::spawn(move || copy(a2, b2, &seen, born));
    copy(b, a, &last, born);
    let _ = there.join();
}

/// One direction: `from` to `to`, then `to`'s writes ended. An idle connection (both
/// ways, `last` the latest activity in ms since `born`) ends both.
fn copy(mut from: impl Duplex, mut to: impl Duplex, last: &AtomicU64, born: Instant) {
    let mut buf = [0u8; 16 * 1024];
    let now = || u64::try_from(born.elapsed().as_millis()).unwrap_or(u64::MAX);
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                last.store(now(), Ordering::Relaxed);
                if to.write_all(&buf[..n]).is_err() {
                    from.end_all();
                    break;
                }
            }
            Err(e) if waited(&e) => {
                let idle = now().saturating_sub(last.load(Ordering::Relaxed));
                if Duration::from_millis(idle) >= IDLE_TIMEOUT {
                    from.end_all();
                    to.end_all();
                    return;
                }
            }
            Err(_) => {
                from.end_all();
                break;
            }
        }
    }
    to.end_writes();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connect_and_an_absolute_request_name_their_host_and_port() {
        let t = target("CONNECT api.example.com:443 HTTP/1.1\r\nHost: x").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.head),
            ("api.example.com", 443, None)
        );
        let t = target("CONNECT [::1]:8443 HTTP/1.1").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("[::1]", 8443));
        let t = target(
            "POST http://127.0.0.1:9/v1/messages?beta=true HTTP/1.1\r\nProxy-Connection: Keep-Alive\r\nConnection: keep-alive\r\nHost: 127.0.0.1:9\r\nContent-Length: 2",
        )
        .unwrap();
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 9));
        assert_eq!(
            t.head.unwrap(),
            "POST /v1/messages?beta=true HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
        );
        let t = target("GET http://Example.com HTTP/1.0").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("Example.com", 80));
        assert!(t.head.unwrap().starts_with("GET / HTTP/1.0\r\n"));
        let t = target("GET http://a.com?q=1 HTTP/1.1").unwrap();
        assert!(t.head.unwrap().starts_with("GET /?q=1 HTTP/1.1\r\n"));
    }

    #[test]
    fn what_is_no_proxy_request_is_refused_with_a_reason() {
        for head in [
            "GET /local HTTP/1.1",
            "GET https://a.com/ HTTP/1.1",
            "CONNECT a.com HTTP/1.1",
            "GET http://user:pw@a.com/ HTTP/1.1",
            "nonsense",
        ] {
            assert_eq!(target(head).unwrap_err().0, 400, "{head}");
        }
    }

    #[test]
    fn a_head_too_long_or_cut_short_is_not_read() {
        let long = format!(
            "GET http://a.com/ HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_HEAD)
        );
        assert_eq!(read_head(&mut long.as_bytes()).err(), Some(431));
        assert_eq!(
            read_head(&mut &b"GET http://a.com/ HTTP/1.1\r\n"[..]).err(),
            Some(400)
        );
        let head = read_head(&mut &b"CONNECT a:1 HTTP/1.1\r\n\r\nhello"[..]).unwrap();
        assert_eq!(head.rest, b"hello");
    }

    #[test]
    fn the_proxy_lets_through_only_what_is_listed_and_ends_with_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join(SOCKET);
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for conn in server.incoming().flatten() {
                let mut conn = conn;
                let mut buf = [0u8; 5];
                if conn.read_exact(&mut buf).is_ok() {
                    let _ = conn.write_all(b"pong!");
                }
            }
        });
        let list = Allowed::list([format!("127.0.0.1:{port}").as_str()]).unwrap();
        let s = socket.clone();
        std::thread::spawn(move || serve_proxy(&s, list, std::os::unix::process::parent_id()));
        while !socket.exists() {
            std::thread::sleep(TICK);
        }
        let mut c = UnixStream::connect(&socket).unwrap();
        write!(c, "CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nping!").unwrap();
        let mut got = vec![0u8; "HTTP/1.1 200 Connection established\r\n\r\npong!".len()];
        c.read_exact(&mut got).unwrap();
        assert!(String::from_utf8_lossy(&got).ends_with("pong!"));
        let mut c = UnixStream::connect(&socket).unwrap();
        write!(
            c,
            "CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\n",
            port.wrapping_add(1)
        )
        .unwrap();
        let mut said = String::new();
        c.read_to_string(&mut said).unwrap();
        assert!(said.starts_with("HTTP/1.1 403"), "{said}");
        assert!(
            said.contains("is not in this session's allowed hosts"),
            "{said}"
        );
    }
}
