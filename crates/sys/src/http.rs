//! The one way orchestra speaks HTTP(S): a request with a deadline on its whole exchange,
//! answers read to a cap, no redirect followed (a token must never reach another host),
//! and a refusal as a typed error carrying what the caller needs to name the fix — the
//! status, the `retry-after` wait, and an excerpt of the body. A secret (a token) goes in
//! as a [`Secret`], which has no `Display` and whose `Debug` shows nothing, so no error or
//! log line can carry it. Conditional requests: an ETag sent as `If-None-Match` and a 304
//! reported as [`Response::not_modified`].

use std::time::Duration;

/// What an answer's body may grow to before it is refused.
const BODY_CAP: u64 = 32 * 1024 * 1024;
/// How much of a refusal's body an error keeps (the service's message is near its start).
const EXCERPT: usize = 8 * 1024;

/// A header value that must never be shown: `Authorization: Bearer …`.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{host} did not answer within {}", crate::duration::spell(*after))]
    TimedOut { host: String, after: Duration },
    #[error("cannot reach {host}: {reason}")]
    Unreachable { host: String, reason: String },
    /// Any status but 2xx and 304 (a redirect too: none is followed).
    #[error("{host} answered {status}")]
    Status {
        host: String,
        status: u16,
        /// The wait the service asked for (`retry-after`, in seconds).
        retry_after: Option<Duration>,
        /// The start of the body, for the service's own message.
        excerpt: String,
        /// A redirect's `location` (never followed here: the caller decides whether the
        /// other address may be asked, and without which headers).
        location: Option<String>,
    },
}

/// An answer of 2xx or 304.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: String,
    pub etag: Option<String>,
    /// The `link` header (paginated answers name their next page there).
    pub link: Option<String>,
}

impl Response {
    /// A conditional request's "nothing changed since that ETag" (the body is empty).
    pub fn not_modified(&self) -> bool {
        self.status == 304
    }

    /// The body as JSON (`Null` when it is none).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The URL a `link` header names as `rel="next"`, if any.
    pub fn next_page(&self) -> Option<String> {
        next_link(self.link.as_deref()?)
    }
}

/// A connection pool whose requests each have `deadline` for their whole exchange.
pub struct Client {
    agent: ureq::Agent,
    deadline: Duration,
}

/// One request being built.
pub struct Request<'a> {
    client: &'a Client,
    method: &'static str,
    url: String,
    headers: Vec<(String, String)>,
    secret: Option<(String, Secret)>,
    body: Option<Vec<u8>>,
}

impl Client {
    pub fn new(deadline: Duration) -> Client {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(deadline))
            // Statuses are read here, into HttpError::Status.
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(format!("orchestra/{}", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Client { agent, deadline }
    }

    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    pub fn request(&self, method: &'static str, url: impl Into<String>) -> Request<'_> {
        Request {
            client: self,
            method,
            url: url.into(),
            headers: Vec::new(),
            secret: None,
            body: None,
        }
    }
}

impl Request<'_> {
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_string(), value.into()));
        self
    }

    /// A header whose value is a secret (never in an error or a log).
    pub fn secret_header(mut self, name: &str, value: &Secret) -> Self {
        self.secret = Some((name.to_string(), value.clone()));
        self
    }

    /// Asks for the answer only if it changed since `etag` (else a 304).
    pub fn if_none_match(self, etag: &str) -> Self {
        self.header("If-None-Match", etag)
    }

    /// A JSON body (and its content type).
    pub fn json(mut self, body: &serde_json::Value) -> Self {
        self.body = Some(serde_json::to_vec(body).unwrap_or_default());
        self.header("Content-Type", "application/json")
    }

    pub fn send(self) -> Result<Response, HttpError> {
        let host = host_of(&self.url);
        let client = self.client;
        let mut builder = ureq::http::Request::builder()
            .method(self.method)
            .uri(&self.url);
        for (name, value) in &self.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        if let Some((name, secret)) = &self.secret {
            builder = builder.header(name.as_str(), secret.0.as_str());
        }
        let unreachable = |e: ureq::Error| match e {
            ureq::Error::Timeout(_) => HttpError::TimedOut {
                host: host.clone(),
                after: client.deadline,
            },
            other => HttpError::Unreachable {
                host: host.clone(),
                reason: other.to_string(),
            },
        };
        let malformed = |e: ureq::http::Error| HttpError::Unreachable {
            host: host.clone(),
            reason: format!("not a request: {e}"),
        };
        // A request without a body sends none (a GET with an empty one is refused).
        let sent = match self.body {
            Some(bytes) => client.agent.run(builder.body(bytes).map_err(malformed)?),
            None => client.agent.run(builder.body(()).map_err(malformed)?),
        };
        let mut response = sent.map_err(unreachable)?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let retry_after = header("retry-after").and_then(|v| seconds(&v));
        let etag = header("etag");
        let link = header("link");
        let location = header("location");
        let body = if status == 304 {
            String::new()
        } else {
            response
                .body_mut()
                .with_config()
                .limit(BODY_CAP)
                .read_to_string()
                .map_err(unreachable)?
        };
        if (200..300).contains(&status) || status == 304 {
            return Ok(Response {
                status,
                body,
                etag,
                link,
            });
        }
        Err(HttpError::Status {
            host,
            status,
            retry_after,
            excerpt: excerpt(&body),
            location,
        })
    }
}

/// `retry-after` as seconds (the HTTP-date form is not used by the services we speak to).
fn seconds(value: &str) -> Option<Duration> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

fn excerpt(body: &str) -> String {
    let mut end = body.len().min(EXCERPT);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    body[..end].to_string()
}

/// The host (and port) of a URL, for messages: never its path or query.
pub fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // user:password@ never goes into a message.
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
        .to_string()
}

/// The `rel="next"` URL of a `link` header (`<url>; rel="next", <url>; rel="last"`).
fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        let next = params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"");
        next.then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A one-shot server answering `answer` to the first request, returning what it heard.
    fn serve_once(answer: &'static str) -> (String, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let heard = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut buf = vec![0u8; 8192];
            let n = stream.read(&mut buf).unwrap_or(0);
            stream.write_all(answer.as_bytes()).unwrap();
            String::from_utf8_lossy(&buf[..n]).into_owned()
        });
        (url, heard)
    }

    #[test]
    fn a_refusal_carries_status_wait_and_excerpt_but_never_the_secret() {
        let (url, heard) = serve_once(
            "HTTP/1.1 403 Forbidden\r\nretry-after: 7\r\ncontent-length: 22\r\nconnection: close\r\n\r\n{\"message\":\"slow down\"}",
        );
        let client = Client::new(Duration::from_secs(5));
        let secret = Secret::new("Bearer s3cr3t-t0ken");
        let e = client
            .request("GET", format!("{url}/repos/o/r"))
            .secret_header("Authorization", &secret)
            .send()
            .unwrap_err();
        assert!(heard
            .join()
            .unwrap()
            .contains("authorization: Bearer s3cr3t-t0ken"));
        match &e {
            HttpError::Status {
                status,
                retry_after,
                excerpt,
                ..
            } => {
                assert_eq!(*status, 403);
                assert_eq!(*retry_after, Some(Duration::from_secs(7)));
                assert!(excerpt.contains("slow down"), "{excerpt}");
            }
            other => panic!("{other:?}"),
        }
        let shown = format!("{e} {e:?} {secret:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
    }

    #[test]
    fn a_304_is_not_modified_and_the_etag_was_sent() {
        let (url, heard) =
            serve_once("HTTP/1.1 304 Not Modified\r\netag: \"abc\"\r\nconnection: close\r\n\r\n");
        let response = Client::new(Duration::from_secs(5))
            .request("GET", url)
            .if_none_match("\"abc\"")
            .send()
            .unwrap();
        assert!(response.not_modified());
        assert_eq!(response.etag.as_deref(), Some("\"abc\""));
        assert!(heard
            .join()
            .unwrap()
            .to_ascii_lowercase()
            .contains("if-none-match: \"abc\""));
    }

    #[test]
    fn a_silent_server_is_a_timeout_at_the_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/x", listener.local_addr().unwrap());
        let started = std::time::Instant::now();
        let e = Client::new(Duration::from_millis(300))
            .request("GET", url)
            .send()
            .unwrap_err();
        assert!(matches!(e, HttpError::TimedOut { .. }), "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(listener);
    }

    #[test]
    fn links_and_hosts_read() {
        assert_eq!(
            next_link("<https://h/x?page=2>; rel=\"next\", <https://h/x?page=5>; rel=\"last\"")
                .as_deref(),
            Some("https://h/x?page=2")
        );
        assert_eq!(next_link("<https://h/x?page=1>; rel=\"prev\""), None);
        assert_eq!(host_of("https://me:pw@api.h:8443/a?b"), "api.h:8443");
        assert_eq!(host_of("http://127.0.0.1:9/v1"), "127.0.0.1:9");
    }
}
