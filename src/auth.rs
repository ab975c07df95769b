//! Who may call what on `argus serve`'s listener: API tokens with scopes, checked by one middleware in
//! front of every route (the store's and alertd's alike), before a request body is read.
//!
//! `required` is the one map from endpoint to scope; docs/auth.md prints it and a test holds the two
//! together. Tokens are kept as SHA-256 digests only: they are 32 random bytes, so a fast hash is as
//! good as a slow one (nothing to brute-force), and checking one costs a microsecond per request.

use crate::config;
use anyhow::{Result, bail};
use argus_store_api::LabelScope;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::Arc;

/// What a token may do. `admin` implies the others; `read`, `write` and `silence` are independent, so
/// a collector's token cannot read the fleet's data, a dashboard's cannot write, and on-call can
/// silence and acknowledge without admin rights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Read,
    Write,
    Silence,
    Admin,
}

impl Scope {
    fn bit(self) -> u8 {
        match self {
            Scope::Read => 1,
            Scope::Write => 2,
            Scope::Silence => 4,
            Scope::Admin => 15,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Silence => "silence",
            Scope::Admin => "admin",
        }
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes(u8);

impl Scopes {
    pub const ALL: Scopes = Scopes(15);

    pub fn of(scopes: &[Scope]) -> Scopes {
        Scopes(scopes.iter().fold(0, |acc, s| acc | s.bit()))
    }

    pub fn allows(self, s: Scope) -> bool {
        self.0 & s.bit() == s.bit()
    }
}

// === the endpoint map ===

/// The scope an endpoint needs; `None` for the open ones (health). Paths are matched as routed, with
/// `*` standing for one path segment; the first row whose method and path match wins.
const MAP: &[(Option<Method>, &str, Option<Scope>)] = &[
    (None, "/-/healthy", None),
    (None, "/-/ready", None),
    // The status page and its assets hold no data; the APIs it calls keep their scopes.
    (Some(Method::GET), "/", None),
    (Some(Method::GET), "/status", None),
    (Some(Method::GET), "/status/*", None),
    // The API's description: no data, and tools fetch it before they hold a token.
    (Some(Method::GET), "/api/openapi.json", None),
    (None, "/api/v2/write", Some(Scope::Write)),
    (None, "/write", Some(Scope::Write)),
    (None, "/api/v1/write", Some(Scope::Write)),
    (Some(Method::POST), "/api/v2/alerts", Some(Scope::Write)),
    // Capacity plans from an analyzer, sent on to schedulers: pushed like alerts.
    (Some(Method::POST), "/api/v1/scheduler/capacity", Some(Scope::Write)),
    (Some(Method::POST), "/api/v2/silences", Some(Scope::Silence)),
    (Some(Method::DELETE), "/api/v2/silence/*", Some(Scope::Silence)),
    (Some(Method::POST), "/api/v1/incidents/*/ack", Some(Scope::Silence)),
    (Some(Method::POST), "/api/v1/incidents/*/silence", Some(Scope::Silence)),
    (None, "/internal/force_flush", Some(Scope::Admin)),
    (None, "/api/v1/admin/tsdb/snapshot", Some(Scope::Admin)),
    // Queries take form-encoded POST as well as GET.
    (Some(Method::POST), "/api/v1/*", Some(Scope::Read)),
    (Some(Method::POST), "/api/v1/label/*/values", Some(Scope::Read)),
    (Some(Method::POST), "/api/v1/status/*", Some(Scope::Read)),
    (Some(Method::GET), "/api/v1/forecasts", Some(Scope::Read)),
    (Some(Method::GET), "/api/v1/capacity", Some(Scope::Read)),
    (Some(Method::GET), "/api/v1/capacity/keda", Some(Scope::Read)),
    (Some(Method::GET), "*", Some(Scope::Read)),
    (Some(Method::HEAD), "*", Some(Scope::Read)),
];

/// The scope `method path` needs. Anything the map does not name needs `admin`, so a route added
/// without a thought for its scope is closed rather than open.
pub fn required(method: &Method, path: &str) -> Option<Scope> {
    MAP.iter()
        .find(|(m, p, _)| m.as_ref().is_none_or(|m| m == method) && path_matches(p, path))
        .map_or(Some(Scope::Admin), |(_, _, s)| *s)
}

/// `*` alone matches any path; inside a pattern it matches one non-empty segment.
fn path_matches(pattern: &str, path: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    let mut p = pattern.split('/');
    let mut q = path.split('/');
    loop {
        match (p.next(), q.next()) {
            (None, None) => return true,
            (Some("*"), Some(seg)) if !seg.is_empty() => {}
            (Some(a), Some(b)) if a == b => {}
            _ => return false,
        }
    }
}

// === tokens ===

/// A token as accepted: its name (for logs) and scopes, the share of the series it is confined to
/// (`None`: all of them), and the SHA-256 of its text.
#[derive(Clone)]
struct Token {
    name: String,
    scopes: Scopes,
    labels: Option<Arc<LabelScope>>,
    digest: [u8; 32],
}

/// A fresh token: `argus_` and 64 hex digits from the operating system's random source (256 bits).
pub fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no random source: {e}"))?;
    Ok(format!("argus_{}", hex(&bytes)))
}

/// The digest `[[auth.tokens]] sha256` holds: lowercase hex of SHA-256 of the token's text.
pub fn hash_token(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses the 64 hex digits of a SHA-256 digest.
pub fn parse_digest(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

// === the resolved policy ===

/// The access policy of one listener.
pub struct Auth {
    tokens: Vec<Token>,
    /// What a request without credentials may do.
    anonymous: Scopes,
    /// `argus_http_auth_refusals_total`.
    refusals: Family<Refusal, Counter>,
}

/// Why a request was refused: no credentials (`missing`), credentials matching no token or unreadable
/// (`invalid`), a token without the scope the endpoint needs (`scope`), or a token confined to a share
/// of the series calling an endpoint that cannot be confined (`labels`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Refusal {
    reason: &'static str,
}

impl Auth {
    /// The policy of `[auth]` for a server listening on `listen`. Without tokens, on loopback,
    /// everything is open (as Prometheus is); on any other address the server refuses to start unless
    /// `anonymous` says what the unauthenticated may do.
    pub fn resolve(cfg: &config::Auth, listen: SocketAddr) -> Result<Auth> {
        let tokens: Vec<Token> = cfg
            .tokens
            .iter()
            .map(|t| {
                Ok(Token {
                    name: t.name.clone(),
                    scopes: Scopes::of(&t.scopes),
                    labels: (!t.matchers.is_empty())
                        .then(|| LabelScope::parse(&t.matchers).map(Arc::new))
                        .transpose()
                        .map_err(|e| anyhow::anyhow!("auth.tokens: token {:?}: matchers: {e}", t.name))?,
                    // Validated with the configuration.
                    digest: parse_digest(&t.sha256).unwrap_or([0; 32]),
                })
            })
            .collect::<Result<_>>()?;
        let anonymous = match (&cfg.anonymous, tokens.is_empty()) {
            (Some(a), _) => Scopes::of(a),
            (None, false) => Scopes::default(),
            (None, true) if listen.ip().is_loopback() => Scopes::ALL,
            (None, true) => bail!(
                "refusing to listen on {listen} without authentication: anyone who can reach it could \
                 write, read and silence alerts. Either add a token (`argus token new` prints one and the \
                 [[auth.tokens]] entry to paste into argus.toml), or allow unauthenticated access \
                 explicitly with `[auth] anonymous = [\"read\"]` (or [\"read\", \"write\"], or [\"admin\"]), \
                 or listen on 127.0.0.1"
            ),
        };
        Ok(Auth { tokens, anonymous, refusals: Family::default() })
    }

    /// Registers `argus_http_auth_refusals_total` (docs/metrics.md).
    pub fn register(&self, registry: &mut prometheus_client::registry::Registry) {
        registry.sub_registry_with_prefix("argus_http").register(
            "auth_refusals",
            "Requests refused for their credentials: missing, invalid, or lacking the scope",
            self.refusals.clone(),
        );
    }

    pub(crate) fn refused(&self, reason: &'static str) {
        self.refusals.get_or_create(&Refusal { reason }).inc();
    }

    /// Whether anything at all is checked (false when everything is open).
    pub fn is_open(&self) -> bool {
        self.anonymous == Scopes::ALL
    }

    /// Adds a token that lives only in this process (for the embedded collector writing over
    /// loopback) and returns its text.
    pub fn add_internal(&mut self, name: &str, scopes: &[Scope]) -> Result<String> {
        let token = new_token()?;
        let digest = Sha256::digest(token.as_bytes()).into();
        self.tokens.push(Token { name: name.into(), scopes: Scopes::of(scopes), labels: None, digest });
        Ok(token)
    }

    /// The scopes of the credential in `headers`: `Ok(None)` when none is given, `Err` when one is
    /// given and matches no token.
    fn authenticate(&self, headers: &HeaderMap) -> Result<Option<&Token>, &'static str> {
        let Some(v) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
        let given = credential(v).ok_or(
            "unreadable Authorization header; use \"Bearer <token>\", \"Token <token>\" or Basic with the token \
             as password",
        )?;
        let digest: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        // Every token is compared, each in constant time, so timing reveals neither which nor how much.
        let mut found = None;
        for t in &self.tokens {
            if constant_time_eq(&t.digest, &digest) {
                found = Some(t);
            }
        }
        found.map(Some).ok_or("invalid token")
    }
}

/// The token in an `Authorization` value: `Bearer t`, `Token t` (InfluxDB clients), or `Basic` with
/// the token as password (or as user name with an empty password), as Grafana and Prometheus send it.
fn credential(v: &HeaderValue) -> Option<String> {
    let v = v.to_str().ok()?.trim();
    let (scheme, rest) = v.split_once(' ')?;
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token") {
        return (!rest.is_empty()).then(|| rest.to_string());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let raw = base64::engine::general_purpose::STANDARD.decode(rest).ok()?;
        let pair = String::from_utf8(raw).ok()?;
        let (user, pass) = pair.split_once(':')?;
        let t = if pass.is_empty() { user } else { pass };
        return (!t.is_empty()).then(|| t.to_string());
    }
    None
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

// === the middleware ===

/// Checks every request against `required`: 401 with `WWW-Authenticate` when credentials are missing
/// or wrong, 403 when they lack the scope; each in the error shape of the API the path belongs to.
pub async fn guard(axum::extract::State(auth): axum::extract::State<Arc<Auth>>, req: Request, next: Next) -> Response {
    let Some(need) = required(req.method(), req.uri().path()) else { return next.run(req).await };
    if auth.is_open() {
        return next.run(req).await;
    }
    let path = req.uri().path().to_string();
    match auth.authenticate(req.headers()) {
        Ok(None) if auth.anonymous.allows(need) => next.run(req).await,
        Ok(None) => {
            auth.refused("missing");
            deny(
                StatusCode::UNAUTHORIZED,
                &path,
                format!(
                    "this endpoint needs a token with the {} scope: send \"Authorization: Bearer <token>\"",
                    need.name()
                ),
            )
        }
        Ok(Some(t)) if t.scopes.allows(need) => match &t.labels {
            None => next.run(req).await,
            Some(scope) => tenancy::confine(&auth, &t.name, scope, req, next).await,
        },
        Ok(Some(t)) => {
            tracing::debug!(token = %t.name, %path, scope = need.name(), "Request refused: missing scope");
            auth.refused("scope");
            deny(StatusCode::FORBIDDEN, &path, format!("token {:?} lacks the {} scope", t.name, need.name()))
        }
        Err(why) => {
            auth.refused("invalid");
            deny(StatusCode::UNAUTHORIZED, &path, why.to_string())
        }
    }
}

fn deny(status: StatusCode, path: &str, msg: String) -> Response {
    let kind = if status == StatusCode::FORBIDDEN { "forbidden" } else { "unauthorized" };
    api_error(status, path, kind, msg)
}

/// An error in the shape of the API `path` belongs to: InfluxDB's for the write endpoints,
/// Prometheus' envelope under /api/v1, Alertmanager's JSON string under /api/v2, text elsewhere.
pub fn api_error(status: StatusCode, path: &str, kind: &str, msg: String) -> Response {
    let json = |v: serde_json::Value| {
        ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], v.to_string()).into_response()
    };
    let mut r = if matches!(path, "/write" | "/api/v2/write" | "/api/v1/write") {
        json(serde_json::json!({ "code": kind, "message": msg }))
    } else if path.starts_with("/api/v1/") {
        json(serde_json::json!({ "status": "error", "errorType": kind, "error": msg }))
    } else if path.starts_with("/api/v2/") {
        json(serde_json::Value::String(msg))
    } else {
        format!("{msg}\n").into_response()
    };
    *r.status_mut() = status;
    if status == StatusCode::UNAUTHORIZED {
        let h = r.headers_mut();
        h.append(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"argus\""));
        h.append(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"argus\", charset=\"UTF-8\""));
    }
    r
}

mod tenancy;

#[cfg(test)]
mod tests;
