//! The HTTP client of the remote backends (reqwest with rustls), and how its failures become
//! [`BackendError`]s.

use super::{Auth, BackendError, HttpOptions};
use reqwest::{RequestBuilder, Response, Url};
use std::error::Error;
use std::time::Duration;

/// Connecting gets its own, shorter deadline, so an unreachable host fails fast even with a long
/// request timeout for big reads.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of an error body goes into a message.
const MAX_MESSAGE: usize = 1000;

/// What a request was for: a refusal of a write or of a query is the caller's fault, not the server's.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Call {
    Write,
    Query,
}

/// A client with the options' timeout and extra trusted roots. Reads the CA file, and the secret file
/// once, so that an unreadable one stops the start.
pub(crate) fn build(http: &HttpOptions) -> Result<reqwest::Client, BackendError> {
    if let Some(f) = http.auth.file() {
        f.read().map_err(BackendError::Config)?;
    }
    let mut b = reqwest::Client::builder()
        .timeout(http.timeout)
        .connect_timeout(CONNECT_TIMEOUT.min(http.timeout))
        .user_agent(concat!("argus/", env!("CARGO_PKG_VERSION")));
    if let Some(path) = &http.ca_file {
        let pem = std::fs::read(path).map_err(|e| BackendError::Config(format!("ca_file {}: {e}", path.display())))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| BackendError::Config(format!("ca_file {}: {}", path.display(), chain(&e))))?;
        if certs.is_empty() {
            return Err(BackendError::Config(format!("ca_file {}: no PEM certificate in it", path.display())));
        }
        b = b.tls_certs_merge(certs);
    }
    b.build().map_err(|e| BackendError::Config(format!("http client: {}", chain(&e))))
}

/// Adds the configured credentials, a secret file's as it reads now.
pub(crate) fn with_auth(req: RequestBuilder, auth: &Auth) -> RequestBuilder {
    match auth {
        Auth::None => req,
        Auth::Bearer(t) => match t.current() {
            Some(t) => req.bearer_auth(t.expose()),
            None => req,
        },
        Auth::Basic { username, password } => {
            req.basic_auth(username, password.current().as_ref().map(|p| p.expose().to_string()))
        }
    }
}

/// Sends a request; a failure to connect, send or receive in time is retryable.
pub(crate) async fn send(url: &Url, req: RequestBuilder) -> Result<Response, BackendError> {
    req.send().await.map_err(|e| unreachable(url, e))
}

/// The whole body of a 2xx answer; any other status becomes the matching error.
pub(crate) async fn body(url: &Url, call: Call, resp: Response) -> Result<bytes::Bytes, BackendError> {
    let status = resp.status().as_u16();
    let body = resp.bytes().await.map_err(|e| unreachable(url, e))?;
    if (200..300).contains(&status) {
        return Ok(body);
    }
    Err(refused(url, call, status, &String::from_utf8_lossy(&body)))
}

/// The error for a non-2xx answer with this body.
pub(crate) fn refused(url: &Url, call: Call, status: u16, body: &str) -> BackendError {
    let message = message(body);
    match (call, status) {
        (Call::Write, 400) => BackendError::InvalidWrite(format!("{}: {message}", strip(url))),
        (Call::Query, 400 | 422) => BackendError::BadQuery(message),
        _ => BackendError::Status { url: strip(url), status, message },
    }
}

fn unreachable(url: &Url, e: reqwest::Error) -> BackendError {
    if e.is_builder() {
        return BackendError::Internal(format!("request to {}: {}", strip(url), chain(&e.without_url())));
    }
    let reason =
        if e.is_timeout() { format!("timed out ({})", chain(&e.without_url())) } else { chain(&e.without_url()) };
    BackendError::Unreachable { url: strip(url), reason }
}

/// The server's own words: Prometheus' `error`, InfluxDB's `message`, or the body's start.
pub(crate) fn message(body: &str) -> String {
    if let Ok(j) = serde_json::from_str::<serde_json::Value>(body) {
        for key in ["error", "message"] {
            if let Some(m) = j.get(key).and_then(|m| m.as_str()) {
                return m.to_string();
            }
        }
    }
    let body = body.trim();
    match body.char_indices().nth(MAX_MESSAGE) {
        Some((i, _)) => format!("{}…", &body[..i]),
        None => body.to_string(),
    }
}

/// An error with its causes, which reqwest keeps apart ("error sending request" says little).
pub(crate) fn chain(e: &dyn Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// The URL without its query string, for messages.
pub(crate) fn strip(url: &Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    u.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::options::{SecretFile, SecretSource};

    #[test]
    fn a_secret_file_is_read_at_build_and_again_for_every_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let file = |key| SecretSource::File(SecretFile::new(key, path.clone()));
        let bearer = HttpOptions { auth: Auth::Bearer(file("bearer_token_file")), ..Default::default() };
        let e = build(&bearer).unwrap_err().to_string().replace(&dir.path().display().to_string(), "DIR");
        assert!(e.contains("bearer_token_file DIR/token: No such file or directory"), "{e}");
        std::fs::write(&path, "t1\n").unwrap();
        let client = build(&bearer).unwrap();
        let sent = |http: &HttpOptions| {
            let req = with_auth(client.get("http://vm:8428/api/v1/query"), &http.auth).build().unwrap();
            req.headers()[reqwest::header::AUTHORIZATION].to_str().unwrap().to_string()
        };
        assert_eq!(sent(&bearer), "Bearer t1");
        std::fs::write(&path, "t2\n").unwrap();
        assert_eq!(sent(&bearer), "Bearer t2", "a rotated token is sent without a rebuild");
        let basic = HttpOptions {
            auth: Auth::Basic { username: "u".into(), password: file("basic_auth.password_file") },
            ..Default::default()
        };
        // base64("u:t2")
        assert_eq!(sent(&basic), "Basic dTp0Mg==");
    }
}
