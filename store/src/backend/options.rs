//! Remote backend configuration: the `[store.remote]` and `[store.influxdb2]` sections as parsed
//! (`*Spec`, serde), and as validated (`*Options`, which cannot be invalid). Validation is pure; reading
//! the CA file and the secret files waits for [`super::connect`].

use reqwest::Url;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// How long a remote call may take, connection included, unless `timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

pub use argus_model::Secret;
pub use argus_store_api::secret_file::{SecretFile, SecretSource};

/// The remote engine behind a Prometheus-compatible backend; it decides the URL layout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum Flavour {
    /// VictoriaMetrics single-node: `/api/v1/write`, `/api/v2/write`, `/api/v1/query…`.
    #[default]
    #[serde(rename = "victoriametrics")]
    VictoriaMetrics,
    /// VictoriaMetrics cluster: `/insert/<tenant>/…` on vminsert, `/select/<tenant>/prometheus/…` on vmselect.
    #[serde(rename = "victoriametrics-cluster")]
    VictoriaMetricsCluster,
    /// Prometheus with `--web.enable-remote-write-receiver`.
    #[serde(rename = "prometheus")]
    Prometheus,
    /// Grafana Mimir: `/api/v1/push`, `/prometheus/api/v1/query…`; the tenant in `X-Scope-OrgID`.
    #[serde(rename = "mimir")]
    Mimir,
    /// Thanos: Receive's `/api/v1/receive`, Query's `/api/v1/query…`; the tenant in `THANOS-TENANT`.
    #[serde(rename = "thanos")]
    Thanos,
}

impl Flavour {
    /// The configuration spelling, also the backend's name in logs.
    pub fn name(self) -> &'static str {
        match self {
            Flavour::VictoriaMetrics => "victoriametrics",
            Flavour::VictoriaMetricsCluster => "victoriametrics-cluster",
            Flavour::Prometheus => "prometheus",
            Flavour::Mimir => "mimir",
            Flavour::Thanos => "thanos",
        }
    }
}

/// How samples travel to a Prometheus-compatible backend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteProtocol {
    /// Prometheus remote write 1.0 (snappy protobuf): names and labels kept exactly.
    #[default]
    RemoteWrite,
    /// InfluxDB line protocol (gzip), VictoriaMetrics only; names map as [`super::split_name`] says.
    LineProtocol,
}

/// HTTP basic authentication: `password` or `password_file`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    pub username: String,
    pub password: Option<Secret>,
    pub password_file: Option<PathBuf>,
}

/// Credentials sent with every request.
#[derive(Debug, Clone, Default)]
pub enum Auth {
    #[default]
    None,
    /// `Authorization: Bearer <token>`.
    Bearer(SecretSource),
    /// `Authorization: Basic …`.
    Basic { username: String, password: SecretSource },
}

impl Auth {
    /// The file its secret is read from, if any, to read once when the client is built.
    pub fn file(&self) -> Option<&SecretFile> {
        match self {
            Auth::Bearer(SecretSource::File(f)) | Auth::Basic { password: SecretSource::File(f), .. } => Some(f),
            _ => None,
        }
    }
}

/// What every remote HTTP client is built with.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Per request, connection and body included.
    pub timeout: Duration,
    /// PEM certificates trusted in addition to the system's roots (a private CA).
    pub ca_file: Option<PathBuf>,
    pub auth: Auth,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions { timeout: DEFAULT_TIMEOUT, ca_file: None, auth: Auth::None }
    }
}

// === impl RemoteSpec ===

/// `[store.remote]` as written: a Prometheus-compatible backend.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteSpec {
    #[serde(default)]
    pub flavour: Flavour,
    /// Base URL for writes and reads, e.g. `http://vm:8428` (a path prefix is kept).
    pub url: Option<String>,
    /// Base URL for writes when they go elsewhere (vminsert, Mimir's distributor, Thanos Receive).
    pub write_url: Option<String>,
    /// Base URL for reads when they go elsewhere (vmselect, Mimir's query frontend, Thanos Query).
    pub read_url: Option<String>,
    /// Base URLs of stores holding the same data (the other store of a pair), tried in order when the
    /// one in use does not answer; with `url` only.
    #[serde(default)]
    pub failover_urls: Vec<String>,
    /// victoriametrics-cluster: `accountID` or `accountID:projectID` (default `0`); mimir and thanos:
    /// the tenant header's value.
    pub tenant: Option<String>,
    #[serde(default)]
    pub write: WriteProtocol,
    /// e.g. `30s` (the default).
    pub timeout: Option<String>,
    pub bearer_token: Option<Secret>,
    /// A file holding the bearer token (a mounted Kubernetes Secret), read at start and for every request.
    pub bearer_token_file: Option<PathBuf>,
    pub basic_auth: Option<BasicAuth>,
    pub ca_file: Option<PathBuf>,
}

/// A validated Prometheus-compatible backend: every endpoint laid out.
#[derive(Debug, Clone)]
pub struct PrometheusOptions {
    pub flavour: Flavour,
    pub write: WriteProtocol,
    /// The endpoint writes are POSTed to.
    pub write_url: Url,
    /// The engine's line-protocol endpoint, where it has one (VictoriaMetrics): where text fields
    /// (events) can go, whichever protocol `write_url` speaks.
    pub line_protocol_url: Option<Url>,
    /// `…/api/v1/query`.
    pub query_url: Url,
    /// `…/api/v1/query_range`.
    pub range_url: Url,
    /// A tenant header sent with every request (Mimir, Thanos).
    pub tenant_header: Option<(&'static str, String)>,
    pub http: HttpOptions,
    /// The same store's stand-ins (`failover_urls`), laid out alike, in the order they are tried.
    pub failover: Vec<PrometheusOptions>,
}

impl RemoteSpec {
    /// Checks the section and lays out the endpoints of its flavour, and of each failover URL. Errors
    /// start with the field.
    pub fn validate(&self) -> Result<PrometheusOptions, String> {
        let mut main = self.validate_one()?;
        if !self.failover_urls.is_empty() && (self.write_url.is_some() || self.read_url.is_some()) {
            return Err("failover_urls: only with `url` (each failover URL serves writes and reads alike)".into());
        }
        for (i, u) in self.failover_urls.iter().enumerate() {
            let other = RemoteSpec { url: Some(u.clone()), failover_urls: Vec::new(), ..self.clone() };
            let o = other.validate_one().map_err(|e| format!("failover_urls[{i}]: {e}"))?;
            main.failover.push(o);
        }
        Ok(main)
    }

    fn validate_one(&self) -> Result<PrometheusOptions, String> {
        let f = self.flavour;
        let base = |field: &str, own: &Option<String>| -> Result<String, String> {
            match (own, &self.url) {
                (Some(u), _) => base_url(field, u),
                (None, Some(u)) => base_url("url", u),
                (None, None) => Err("url: required (or both write_url and read_url)".into()),
            }
        };
        let (w, r) = (base("write_url", &self.write_url)?, base("read_url", &self.read_url)?);
        let tenant = match (f, &self.tenant) {
            (Flavour::VictoriaMetrics | Flavour::Prometheus, Some(_)) => {
                return Err(format!("tenant: not used by flavour \"{}\"", f.name()));
            }
            (Flavour::VictoriaMetricsCluster, t) => {
                let t = t.as_deref().unwrap_or("0");
                if !is_vm_tenant(t) {
                    return Err(format!(
                        "tenant: {t:?} is not a VictoriaMetrics tenant (accountID or accountID:projectID)"
                    ));
                }
                Some(t.to_string())
            }
            (_, t) => t.clone(),
        };
        let t = tenant.as_deref().unwrap_or("");
        // Remote write, line protocol (VictoriaMetrics only) and the reads' prefix of each flavour.
        let (remote_write_path, lp_path, read_prefix) = match f {
            Flavour::VictoriaMetrics => ("/api/v1/write".to_string(), Some("/api/v2/write".to_string()), String::new()),
            Flavour::VictoriaMetricsCluster => (
                format!("/insert/{t}/prometheus/api/v1/write"),
                Some(format!("/insert/{t}/influx/api/v2/write")),
                format!("/select/{t}/prometheus"),
            ),
            Flavour::Prometheus => ("/api/v1/write".to_string(), None, String::new()),
            Flavour::Mimir => ("/api/v1/push".to_string(), None, "/prometheus".to_string()),
            Flavour::Thanos => ("/api/v1/receive".to_string(), None, String::new()),
        };
        let write_path = match (self.write, &lp_path) {
            (WriteProtocol::RemoteWrite, _) => remote_write_path,
            (WriteProtocol::LineProtocol, Some(p)) => p.clone(),
            (WriteProtocol::LineProtocol, None) => {
                return Err(format!(
                    "write: line_protocol is not accepted by flavour \"{}\"; use remote_write",
                    f.name()
                ));
            }
        };
        let tenant_header = match (f, tenant) {
            (Flavour::Mimir, Some(t)) => Some(("X-Scope-OrgID", t)),
            (Flavour::Thanos, Some(t)) => Some(("THANOS-TENANT", t)),
            _ => None,
        };
        let bearer = secret("bearer_token", &self.bearer_token, "bearer_token_file", &self.bearer_token_file)?;
        let auth = match (bearer, &self.basic_auth) {
            (Some(_), Some(_)) => return Err("basic_auth: set either a bearer token or basic_auth, not both".into()),
            (Some(t), None) => Auth::Bearer(t),
            (None, Some(b)) => {
                let password =
                    secret("basic_auth.password", &b.password, "basic_auth.password_file", &b.password_file)?
                        .ok_or("basic_auth.password: required (or basic_auth.password_file)")?;
                Auth::Basic { username: b.username.clone(), password }
            }
            (None, None) => Auth::None,
        };
        Ok(PrometheusOptions {
            flavour: f,
            write: self.write,
            write_url: join(&w, &write_path)?,
            line_protocol_url: lp_path.map(|p| join(&w, &p)).transpose()?,
            query_url: join(&r, &format!("{read_prefix}/api/v1/query"))?,
            range_url: join(&r, &format!("{read_prefix}/api/v1/query_range"))?,
            tenant_header,
            http: HttpOptions { timeout: timeout(&self.timeout)?, ca_file: self.ca_file.clone(), auth },
            failover: Vec::new(),
        })
    }
}

// === impl InfluxSpec ===

/// `[store.influxdb2]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InfluxSpec {
    /// The server's root URL, e.g. `http://influxdb:8086`.
    pub url: String,
    pub org: String,
    pub bucket: String,
    /// An API token with write (and, for reads, read) access to the bucket.
    pub token: Secret,
    /// e.g. `30s` (the default).
    pub timeout: Option<String>,
    pub ca_file: Option<PathBuf>,
}

/// A validated InfluxDB 2 backend.
#[derive(Debug, Clone)]
pub struct Influxdb2Options {
    /// The server's root: the `influxdb2` client replaces any path, so none is allowed.
    pub url: Url,
    pub org: String,
    pub bucket: String,
    pub token: Secret,
    pub timeout: Duration,
    pub ca_file: Option<PathBuf>,
}

impl InfluxSpec {
    /// Checks the section. Errors start with the field.
    pub fn validate(&self) -> Result<Influxdb2Options, String> {
        let url = parse_url("url", &self.url)?;
        if url.path() != "/" {
            return Err(format!(
                "url: {:?} has a path; InfluxDB 2 is reached at the server's root (the client replaces the path)",
                self.url
            ));
        }
        for (field, v) in [("org", &self.org), ("bucket", &self.bucket)] {
            if v.is_empty() {
                return Err(format!("{field}: must not be empty"));
            }
        }
        if self.token.expose().is_empty() {
            return Err("token: must not be empty".into());
        }
        Ok(Influxdb2Options {
            url,
            org: self.org.clone(),
            bucket: self.bucket.clone(),
            token: self.token.clone(),
            timeout: timeout(&self.timeout)?,
            ca_file: self.ca_file.clone(),
        })
    }
}

// === helpers ===

/// An http(s) URL without credentials, query or fragment.
fn parse_url(field: &str, s: &str) -> Result<Url, String> {
    let url = Url::parse(s).map_err(|e| format!("{field}: {s:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{field}: {s:?} is not an http or https URL"));
    }
    // Logs and errors show URLs; credentials belong in fields that are never shown.
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("{field}: credentials go in basic_auth, bearer_token or token, not in the URL"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!("{field}: {s:?} must not have a query or fragment"));
    }
    Ok(url)
}

/// A base URL as text without a trailing slash, so paths can be appended.
fn base_url(field: &str, s: &str) -> Result<String, String> {
    let url = parse_url(field, s)?;
    Ok(url.as_str().trim_end_matches('/').to_string())
}

fn join(base: &str, path: &str) -> Result<Url, String> {
    Url::parse(&format!("{base}{path}")).map_err(|e| format!("url: {base}{path} is not a URL: {e}"))
}

/// `key` written in place or `file_key`, the file it is read from; not both, neither empty.
fn secret(
    key: &str,
    inline: &Option<Secret>,
    file_key: &'static str,
    file: &Option<PathBuf>,
) -> Result<Option<SecretSource>, String> {
    match (inline, file) {
        (Some(_), Some(_)) => Err(format!("{file_key}: set either {key} or {file_key}, not both")),
        (Some(s), None) if s.expose().is_empty() => Err(format!("{key}: must not be empty")),
        (Some(s), None) => Ok(Some(SecretSource::Inline(s.clone()))),
        (None, Some(p)) if p.as_os_str().is_empty() => Err(format!("{file_key}: must not be empty")),
        (None, Some(p)) => Ok(Some(SecretSource::File(SecretFile::new(file_key, p.clone())))),
        (None, None) => Ok(None),
    }
}

fn timeout(s: &Option<String>) -> Result<Duration, String> {
    let Some(s) = s else { return Ok(DEFAULT_TIMEOUT) };
    argus_model::units::duration(s).map_err(|e| format!("timeout: {e}"))
}

/// `accountID` or `accountID:projectID`, both 32-bit unsigned numbers.
fn is_vm_tenant(t: &str) -> bool {
    let mut parts = t.split(':');
    let ok = |p: Option<&str>| p.is_some_and(|p| p.parse::<u32>().is_ok());
    ok(parts.next()) && parts.next().is_none_or(|p| ok(Some(p))) && parts.next().is_none()
}

#[cfg(test)]
mod tests;
