//! `argus.toml`: parsed (serde, unknown fields refused), then validated into options that cannot be
//! invalid. No file at all gives a working default.

mod locate;
use crate::auth::Scope;
use anyhow::{Context, Result, anyhow, bail};
use argus_store::WalSync;
use argus_store::backend::{InfluxSpec, RemoteOptions, RemoteSpec};
use locate::{line_col, locate};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub server: Server,
    #[serde(default)]
    pub store: Store,
    #[serde(default)]
    pub auth: Auth,
    #[serde(default)]
    pub alertd: Alertd,
    /// `[collector]`: the node collector, run by `argus collect` and inside `argus serve`.
    #[serde(default)]
    pub collector: argus_collector::Config,
    /// `[analyzer]`: anomaly detection inside `argus serve`.
    #[serde(default)]
    pub analyzer: argus_analyzer::runtime::Config,
    /// `[self_monitoring]`: `argus serve` storing its own `/metrics`.
    #[serde(default)]
    pub self_monitoring: SelfMonitoring,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    #[serde(default = "default_listen")]
    pub listen: String,
    /// PEM certificate chain (leaf first): with `tls_key`, the listener speaks HTTPS only.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// Requests served at once; more get 503 with Retry-After (health checks excepted).
    #[serde(default = "default_max_concurrent_requests")]
    pub max_concurrent_requests: usize,
    /// The alertd servers (base URLs, e.g. `http://alertd-0:9700`) that the rules and the analyzer of
    /// this process post their alerts to when alertd does not run in it; every one gets every alert,
    /// so each replica of an alertd cluster hears them all.
    #[serde(default)]
    pub alert_urls: Vec<String>,
    /// A file holding the token sent to every `alert_urls` server (`Authorization: Bearer`), with the
    /// `write` scope there; read at start and for every post. One token for all: the servers are the
    /// replicas of one alertd cluster, which share one configuration.
    pub alert_token_file: Option<PathBuf>,
}

fn default_max_concurrent_requests() -> usize {
    1024
}

impl Default for Server {
    fn default() -> Self {
        Server {
            listen: default_listen(),
            tls_cert: None,
            tls_key: None,
            max_concurrent_requests: default_max_concurrent_requests(),
            alert_urls: Vec::new(),
            alert_token_file: None,
        }
    }
}

impl Server {
    /// The certificate and key files when TLS is on.
    pub fn tls(&self) -> Result<Option<(&Path, &Path)>> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(c), Some(k)) => Ok(Some((c, k))),
            (None, None) => Ok(None),
            (Some(_), None) => bail!("server.tls_cert: set together with server.tls_key"),
            (None, Some(_)) => bail!("server.tls_key: set together with server.tls_cert"),
        }
    }
}

impl Config {
    /// `[server] alert_urls`, checked; `[analyzer] alert_url`, the older single-URL key, is taken as
    /// a list of one when `alert_urls` is empty.
    pub fn alert_urls(&self) -> Result<Vec<String>> {
        let http = |u: &str| (u.starts_with("http://") || u.starts_with("https://")) && u.len() > "https://".len();
        if let Some(old) = self.analyzer.alert_url.as_ref().filter(|u| !u.is_empty()) {
            if !self.server.alert_urls.is_empty() {
                bail!("analyzer.alert_url: replaced by server.alert_urls; set only server.alert_urls");
            }
            if !http(old) {
                bail!("analyzer.alert_url: {old:?} is not an http(s) URL");
            }
            return Ok(vec![old.clone()]);
        }
        for (i, u) in self.server.alert_urls.iter().enumerate() {
            if !http(u) {
                bail!("server.alert_urls[{i}]: {u:?} is not an http(s) URL");
            }
        }
        Ok(self.server.alert_urls.clone())
    }

    /// `[server] alert_token_file`, read now so that an unreadable or empty file stops the start.
    pub fn alert_token(&self) -> Result<Option<argus_store_api::SecretFile>> {
        let Some(path) = &self.server.alert_token_file else { return Ok(None) };
        if self.alert_urls()?.is_empty() {
            bail!("server.alert_token_file: only sent to server.alert_urls, which is empty");
        }
        let token = argus_store_api::SecretFile::open("alert_token_file", path).map_err(|e| anyhow!("server.{e}"))?;
        Ok(Some(token))
    }
}

fn default_listen() -> String {
    "127.0.0.1:9700".into()
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Store {
    pub data_dir: Option<PathBuf>,
    /// e.g. "35d"
    pub retention: Option<String>,
    /// e.g. "500GiB": past it the oldest blocks are deleted, whatever their age.
    pub max_disk_size: Option<String>,
    /// e.g. "10m"
    pub max_future: Option<String>,
    /// "always" (default), "never", or an interval such as "1s"
    pub wal_sync: Option<String>,
    /// e.g. "4GiB"; default half of the machine's memory
    pub memory_limit: Option<String>,
    pub max_body_bytes: Option<usize>,
    pub max_line_bytes: Option<usize>,
    pub max_labels_per_series: Option<usize>,
    /// Line-protocol lines, and remote-write series, in one request: more get a 413.
    pub max_lines_per_request: Option<usize>,
    pub max_series_per_request: Option<usize>,
    /// Live series in the head, and per metric name: batches that would pass them get a 400.
    pub max_series: Option<usize>,
    pub max_series_per_metric: Option<usize>,
    pub max_query_samples: Option<usize>,
    /// e.g. "1GiB": the memory all queries running at once may hold together (a quarter of it kept
    /// for rule evaluation); "0" turns the shared budget off. Default a quarter of `memory_limit`
    pub max_query_memory: Option<String>,
    /// e.g. "64MiB": decoded chunks kept for repeated reads; "0" turns the cache off
    pub chunk_cache_size: Option<String>,
    /// e.g. "2m": a query running longer is stopped with 503
    pub query_timeout: Option<String>,
    /// Where the data lives: the embedded store (default) or a remote one. The keys above are the
    /// embedded store's; a remote backend ignores them.
    #[serde(default)]
    pub backend: BackendKind,
    /// `[store.remote]`, for `backend = "prometheus"`.
    pub remote: Option<RemoteSpec>,
    /// `[store.influxdb2]`, for `backend = "influxdb2"`.
    pub influxdb2: Option<InfluxSpec>,
}

/// `store.backend`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    #[default]
    Embedded,
    /// A Prometheus-compatible remote: VictoriaMetrics, Prometheus, Mimir, Thanos.
    Prometheus,
    Influxdb2,
}

/// `[auth]`: who may call the API. docs/auth.md has the endpoint-to-scope map.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    /// `[[auth.tokens]]`: accepted as `Authorization: Bearer …`, `Token …` or Basic with the token as
    /// password.
    #[serde(default)]
    pub tokens: Vec<AuthToken>,
    /// What requests without a token may do. Default: everything on a loopback listener without
    /// tokens, nothing otherwise (and a server on another address without tokens refuses to start).
    pub anonymous: Option<Vec<Scope>>,
}

/// One API token: only its SHA-256 is kept (`argus token new` prints a token and its entry).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthToken {
    /// Who holds it, for logs and 403 messages.
    pub name: String,
    pub scopes: Vec<Scope>,
    /// Label matchers (`cluster="a"`) that confine the token to a share of the series: it reads and
    /// writes only series they all select (docs/auth.md, "Tenancy"). Empty: every series.
    #[serde(default)]
    pub matchers: Vec<String>,
    /// Lowercase hex SHA-256 of the token's text.
    pub sha256: String,
}

impl Auth {
    fn validate(&self) -> Result<()> {
        let mut names = std::collections::HashSet::new();
        for (i, t) in self.tokens.iter().enumerate() {
            if t.name.is_empty() {
                bail!("auth.tokens: entry {} has an empty name", i + 1);
            }
            if !names.insert(t.name.as_str()) {
                bail!("auth.tokens: name {:?} is used twice", t.name);
            }
            if t.scopes.is_empty() {
                bail!("auth.tokens: token {:?} has no scopes (use read, write, silence or admin)", t.name);
            }
            if !t.matchers.is_empty()
                && let Err(e) = argus_store_api::LabelScope::parse(&t.matchers)
            {
                bail!("auth.tokens: token {:?}: matchers: {e}", t.name);
            }
            if crate::auth::parse_digest(&t.sha256).is_none() {
                bail!(
                    "auth.tokens: token {:?}: sha256 must be 64 hex digits (the SHA-256 of the token, as \
                     `argus token hash` prints it), not the token itself",
                    t.name
                );
            }
        }
        Ok(())
    }
}

// === [self_monitoring] ===

/// `[self_monitoring]`: `argus serve` stores its own metrics under `job="argus"`, as a Prometheus
/// scraping it would, in whatever store the process writes to.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelfMonitoring {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// How often, e.g. `15s` (Prometheus' usual scrape interval).
    #[serde(default = "default_self_interval")]
    pub interval: String,
}

fn default_self_interval() -> String {
    "15s".into()
}

impl Default for SelfMonitoring {
    fn default() -> Self {
        SelfMonitoring { enabled: true, interval: default_self_interval() }
    }
}

impl SelfMonitoring {
    /// How often to store the metrics; `None` when self-monitoring is off.
    pub fn every(&self) -> Result<Option<Duration>> {
        let d = duration("self_monitoring.interval", &self.interval)?;
        if d < Duration::from_secs(1) {
            bail!("self_monitoring.interval: at least 1s, not {:?}", self.interval);
        }
        Ok(self.enabled.then_some(d))
    }
}

// === [alertd] ===

/// `[alertd]`: the notification pipeline and its API inside `argus serve`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Alertd {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Alertmanager-style YAML; default `config/alertd.yml` when that file exists, else the same
    /// recommended configuration built in.
    pub config_file: Option<PathBuf>,
    /// Where `alertd.db` lives; default the server's data directory.
    pub data_dir: Option<PathBuf>,
    /// Largest request body the alertd API reads; default 4 MiB.
    pub max_body_bytes: Option<usize>,
    /// Alerts one `POST /api/v2/alerts` may carry; default 10,000.
    pub max_alerts_per_request: Option<usize>,
    /// Labels one posted alert may carry; default 64.
    pub max_labels_per_alert: Option<usize>,
    /// `[alertd.cluster]`: run alertd as one replica of a cluster (docs/alerting.md, "High
    /// availability"). Absent: alertd runs alone.
    pub cluster: Option<AlertdCluster>,
}

/// `[alertd.cluster]`, as written; `Config::cluster_settings` resolves it.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertdCluster {
    /// Gossip address (UDP), e.g. `0.0.0.0:9094`.
    pub listen: Option<String>,
    /// The address peers reach this replica at; default `listen` (which must then not be 0.0.0.0).
    pub advertise: Option<String>,
    /// The other replicas: `ip:port` or `dns-name:port` (re-resolved every minute; a Kubernetes
    /// headless service lists every pod of a StatefulSet).
    #[serde(default)]
    pub peers: Vec<String>,
    /// This replica's name; default the advertised address. Replicas notify in name order.
    pub name: Option<String>,
    /// Default `argus-alertd`; replicas of another cluster name are not gossiped with.
    pub cluster_name: Option<String>,
    /// How long each replica waits per position before notifying; default 15s.
    pub peer_timeout: Option<String>,
    /// How long a starting replica waits to merge its peers' state before it answers ready anyway;
    /// default 30s.
    pub settle_timeout: Option<String>,
    /// How often replicas gossip; default 200ms.
    pub gossip_interval: Option<String>,
    /// The shared secret that encrypts and authenticates cluster traffic, or a file holding it.
    pub secret: Option<String>,
    pub secret_file: Option<PathBuf>,
}

impl AlertdCluster {
    /// The settings, with `[alertd.cluster]` field names in errors.
    pub fn resolve(&self) -> Result<argus_alertd::cluster::Settings> {
        self.settings(true)
    }

    /// Checks everything but the secret file, which may exist only where the server runs.
    pub fn check(&self) -> Result<()> {
        self.settings(false).map(|_| ())
    }

    /// Checks the fields that are present: a file may leave the listen and advertise addresses to
    /// `--cluster.*` flags (a Kubernetes pod knows its own address only there).
    pub fn check_present(&self) -> Result<()> {
        let mut full = self.clone();
        let placeholder = "127.0.0.1:9094".to_string();
        if full.listen.is_none() {
            full.listen = Some(placeholder.clone());
        }
        if full.advertise.is_none() {
            full.advertise = Some(placeholder);
        }
        full.check()
    }

    fn settings(&self, read_secret: bool) -> Result<argus_alertd::cluster::Settings> {
        use argus_alertd::cluster::Settings;
        let listen: SocketAddr = self
            .listen
            .as_deref()
            .context("alertd.cluster.listen: required (the gossip address, e.g. 0.0.0.0:9094)")?
            .parse()
            .context("alertd.cluster.listen: not an ip:port address")?;
        let advertise: SocketAddr = match &self.advertise {
            Some(a) => {
                a.parse().with_context(|| format!("alertd.cluster.advertise: {a:?} is not an ip:port address"))?
            }
            None if listen.ip().is_unspecified() => bail!(
                "alertd.cluster.advertise: required when listen is {listen} (peers need an address they can reach)"
            ),
            None => listen,
        };
        for (i, p) in self.peers.iter().enumerate() {
            let ok = p.rsplit_once(':').is_some_and(|(h, port)| !h.is_empty() && port.parse::<u16>().is_ok());
            if !ok {
                bail!("alertd.cluster.peers[{i}]: {p:?} is not host:port");
            }
        }
        let secret = match (&self.secret, &self.secret_file) {
            (Some(_), Some(_)) => bail!("alertd.cluster: give secret or secret_file, not both"),
            (Some(s), None) => s.clone(),
            (None, Some(_)) if !read_secret => "unread secret file.".to_string(),
            (None, Some(f)) => std::fs::read_to_string(f)
                .with_context(|| format!("alertd.cluster.secret_file: cannot read {}", f.display()))?
                .trim()
                .to_string(),
            (None, None) => bail!(
                "alertd.cluster.secret: required (cluster traffic is encrypted and authenticated with it; every replica has the same)"
            ),
        };
        if secret.len() < 16 {
            bail!("alertd.cluster.secret: at least 16 characters");
        }
        let dur = |field: &str, v: &Option<String>, default| match v {
            Some(t) => duration(&format!("alertd.cluster.{field}"), t),
            None => Ok(default),
        };
        Ok(Settings {
            name: self.name.clone().unwrap_or_else(|| advertise.to_string()),
            cluster: self.cluster_name.clone().unwrap_or_else(|| Settings::DEFAULT_CLUSTER.to_string()),
            listen,
            advertise,
            peers: self.peers.clone(),
            peer_timeout: dur("peer_timeout", &self.peer_timeout, Settings::DEFAULT_PEER_TIMEOUT)?,
            settle_timeout: dur("settle_timeout", &self.settle_timeout, Settings::DEFAULT_SETTLE_TIMEOUT)?,
            gossip_interval: dur("gossip_interval", &self.gossip_interval, Settings::DEFAULT_GOSSIP_INTERVAL)?,
            secret,
        })
    }
}

impl Default for Alertd {
    fn default() -> Self {
        Alertd {
            enabled: true,
            config_file: None,
            data_dir: None,
            max_body_bytes: None,
            max_alerts_per_request: None,
            max_labels_per_alert: None,
            cluster: None,
        }
    }
}

fn yes() -> bool {
    true
}

impl Config {
    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
        Self::parse(&text).map_err(|e| anyhow::anyhow!("{}:{e}", path.display()))
    }

    /// Parses and validates; errors read `line:column: reason`.
    pub fn parse(text: &str) -> Result<Config, String> {
        let c: Config = toml::from_str(text).map_err(|e| {
            let (line, col) = e.span().map_or((1, 1), |s| line_col(text, s.start));
            format!("{line}:{col}: {}", e.message())
        })?;
        c.validate().map_err(|e| {
            let e = e.to_string();
            let (line, col) = locate(text, &e);
            format!("{line}:{col}: {e}")
        })?;
        Ok(c)
    }

    fn validate(&self) -> Result<()> {
        self.server
            .listen
            .parse::<std::net::SocketAddr>()
            .with_context(|| format!("server.listen {:?} is not an address", self.server.listen))?;
        self.store_options(Path::new("data"))?;
        self.limits()?;
        self.auth.validate()?;
        self.server.tls()?;
        if self.server.max_concurrent_requests == 0 {
            bail!("server.max_concurrent_requests: must be at least 1");
        }
        self.remote_backend()?;
        if self.alertd.enabled {
            crate::alertd::load_config(&self.alertd).map_err(|e| anyhow!("alertd.config_file: {e:#}"))?;
        }
        if let Some(c) = &self.alertd.cluster {
            c.check_present()?;
        }
        self.analyzer.validate().map_err(|e| anyhow!("analyzer.{e}"))?;
        self.alert_urls()?;
        self.alert_token()?;
        self.self_monitoring.every()?;
        // [collector]: its own validation; errors name the field (`collector.…`) for `locate`.
        self.collector.validate("").map_err(|e| anyhow!("{}", e.to_string().trim_start_matches(": ")))?;
        Ok(())
    }

    /// The remote store backend configured, validated; `None` for the embedded store.
    pub fn remote_backend(&self) -> Result<Option<RemoteOptions>> {
        let s = &self.store;
        match (s.backend, &s.remote, &s.influxdb2) {
            (BackendKind::Embedded, None, None) => Ok(None),
            (BackendKind::Prometheus, Some(r), None) => {
                Ok(Some(RemoteOptions::Prometheus(r.validate().map_err(|e| anyhow!("store.remote.{e}"))?)))
            }
            (BackendKind::Influxdb2, None, Some(i)) => {
                Ok(Some(RemoteOptions::Influxdb2(i.validate().map_err(|e| anyhow!("store.influxdb2.{e}"))?)))
            }
            (BackendKind::Prometheus, None, _) => bail!("store.backend: \"prometheus\" needs a [store.remote] section"),
            (BackendKind::Influxdb2, _, None) => {
                bail!("store.backend: \"influxdb2\" needs a [store.influxdb2] section")
            }
            (kind, Some(_), _) => bail!("store.remote: only read with backend = \"prometheus\", not {kind:?}"),
            (kind, _, Some(_)) => bail!("store.influxdb2: only read with backend = \"influxdb2\", not {kind:?}"),
        }
    }

    pub fn store_options(&self, default_dir: &Path) -> Result<argus_store::Options> {
        let s = &self.store;
        let mut o = argus_store::Options::new(s.data_dir.clone().unwrap_or_else(|| default_dir.to_path_buf()));
        if let Some(r) = &s.retention {
            o.retention = duration("store.retention", r)?;
        }
        if let Some(r) = &s.max_future {
            o.max_future = duration("store.max_future", r)?;
        }
        if let Some(w) = &s.wal_sync {
            o.wal_sync = match w.as_str() {
                "always" => WalSync::Always,
                "never" => WalSync::Never,
                other => WalSync::Interval(duration("store.wal_sync", other)?),
            };
        }
        if let Some(m) = &s.max_disk_size {
            o.max_disk_size = Some(bytes("store.max_disk_size", m)?).filter(|&b| b > 0);
        }
        if let Some(m) = &s.memory_limit {
            o.memory_limit = bytes("store.memory_limit", m)?;
        }
        o.max_series = s.max_series.unwrap_or(o.max_series);
        o.max_series_per_metric = s.max_series_per_metric.unwrap_or(o.max_series_per_metric);
        if let Some(c) = &s.chunk_cache_size {
            o.chunk_cache = Some(bytes("store.chunk_cache_size", c)? as usize);
        }
        Ok(o)
    }

    pub fn limits(&self) -> Result<argus_store::http::Limits> {
        let mut l = argus_store::http::Limits::default();
        let s = &self.store;
        l.max_body_bytes = s.max_body_bytes.unwrap_or(l.max_body_bytes);
        l.max_line_bytes = s.max_line_bytes.unwrap_or(l.max_line_bytes);
        l.max_labels_per_series = s.max_labels_per_series.unwrap_or(l.max_labels_per_series);
        l.max_lines_per_request = s.max_lines_per_request.unwrap_or(l.max_lines_per_request);
        l.max_series_per_request = s.max_series_per_request.unwrap_or(l.max_series_per_request);
        l.query.max_samples = s.max_query_samples.unwrap_or(l.query.max_samples);
        if let Some(t) = &s.query_timeout {
            l.query.timeout = duration("store.query_timeout", t)?;
        }
        let budget = match &s.max_query_memory {
            Some(m) => bytes("store.max_query_memory", m)?,
            None => self.store_memory_limit()? / 4,
        };
        if budget > 0 {
            use argus_store::query::memory::{Caller, MemoryBudget, QueryMemory};
            l.query.memory = QueryMemory::new(MemoryBudget::new(budget), Caller::Http);
        }
        Ok(l)
    }

    /// `store.memory_limit`, or its default (half of the machine's or the cgroup's memory).
    fn store_memory_limit(&self) -> Result<u64> {
        match &self.store.memory_limit {
            Some(m) => bytes("store.memory_limit", m),
            None => Ok(argus_store::Options::new(PathBuf::new()).memory_limit),
        }
    }
}

pub fn duration(field: &str, s: &str) -> Result<Duration> {
    argus_model::units::duration(s).map_err(|e| anyhow!("{field}: {e}"))
}

/// "512MiB", "4GiB", "1000000" (bytes).
pub fn bytes(field: &str, s: &str) -> Result<u64> {
    argus_model::units::bytes(s).map_err(|e| anyhow!("{field}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_line_and_field() {
        let e = Config::parse("[store]\nretention = \"35d\"\nbogus = 1\n").unwrap_err();
        assert!(e.starts_with("3:1: unknown field `bogus`"), "{e}");
        let e = Config::parse("[store]\nretention = \"soon\"\n").unwrap_err();
        assert!(e.contains("store.retention: \"soon\" is not a duration"), "{e}");
        let e = Config::parse("[store]\nmemory_limit = \"4 parsecs\"\n").unwrap_err();
        assert!(e.contains("store.memory_limit"), "{e}");
        let e = Config::parse("[store]\nchunk_cache_size = \"lots\"\n").unwrap_err();
        assert!(e.contains("store.chunk_cache_size"), "{e}");
        let e = Config::parse("[server]\nalert_urls = [\"alertd:9700\"]\n").unwrap_err();
        assert!(e.contains("server.alert_urls[0]: \"alertd:9700\" is not an http(s) URL"), "{e}");
        let e = Config::parse("[server]\nalert_token_file = \"/nonexistent\"\n").unwrap_err();
        assert_eq!(e, "2:1: server.alert_token_file: only sent to server.alert_urls, which is empty");
        let urls = "[server]\nalert_urls = [\"http://alertd:9700\"]\n";
        let e = Config::parse(&format!("{urls}alert_token_file = \"/nonexistent\"\n")).unwrap_err();
        assert_eq!(e, "3:1: server.alert_token_file /nonexistent: No such file or directory (os error 2)");
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "argus_0123\n").unwrap();
        let c = Config::parse(&format!("{urls}alert_token_file = {:?}\n", token)).unwrap();
        assert_eq!(c.alert_token().unwrap().unwrap().read().unwrap().expose(), "argus_0123");
        let e = Config::parse("[analyzer]\nalert_url = \"alertd:9700\"\n").unwrap_err();
        assert!(e.contains("analyzer.alert_url: \"alertd:9700\" is not an http(s) URL"), "{e}");
        assert!(Config::parse("").is_ok());
    }

    #[test]
    fn query_memory_is_shared_by_default_and_can_be_set_or_turned_off() {
        let budget = |text: &str| {
            let l = Config::parse(text).unwrap().limits().unwrap();
            l.query.memory.budget().map(|b| b.limit())
        };
        assert_eq!(budget("[store]\nmemory_limit = \"8GiB\"\n"), Some(2 << 30), "a quarter of memory_limit");
        assert_eq!(budget("[store]\nmax_query_memory = \"1GiB\"\n"), Some(1 << 30));
        assert_eq!(budget("[store]\nmax_query_memory = \"0\"\n"), None);
        let machine = argus_store::Options::new(PathBuf::new()).memory_limit;
        assert_eq!(budget(""), Some(machine / 4));
        let e = Config::parse("[store]\nmax_query_memory = \"1 lot\"\n").unwrap_err();
        assert!(e.starts_with("2:1: store.max_query_memory: unknown unit"), "{e}");
    }

    #[test]
    fn self_monitoring_is_on_every_15s_by_default() {
        let c = Config::parse("").unwrap();
        assert_eq!(c.self_monitoring.every().unwrap(), Some(Duration::from_secs(15)));
        let c = Config::parse("[self_monitoring]\nenabled = false\n").unwrap();
        assert_eq!(c.self_monitoring.every().unwrap(), None);
        let c = Config::parse("[self_monitoring]\ninterval = \"1m\"\n").unwrap();
        assert_eq!(c.self_monitoring.every().unwrap(), Some(Duration::from_secs(60)));
        let e = Config::parse("[self_monitoring]\ninterval = \"100ms\"\n").unwrap_err();
        assert!(e.starts_with("2:1: self_monitoring.interval: at least 1s"), "{e}");
        let e = Config::parse("[self_monitoring]\ninterval = \"often\"\n").unwrap_err();
        assert!(e.contains("self_monitoring.interval: \"often\" is not a duration"), "{e}");
    }

    #[test]
    fn alertd_section_is_validated() {
        assert!(Config::parse("[alertd]\nenabled = false\nconfig_file = \"/nonexistent.yml\"\n").is_ok());
        let e = Config::parse("[alertd]\nconfig_file = \"/nonexistent.yml\"\n").unwrap_err();
        assert!(e.starts_with("2:1: alertd.config_file: /nonexistent.yml: cannot read"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("alertd.yml");
        std::fs::write(&bad, "route:\n  receiver: nobody\n").unwrap();
        let e = Config::parse(&format!("[alertd]\nconfig_file = {:?}\n", bad)).unwrap_err();
        assert!(e.contains("alertd.yml:2: route.receiver"), "{e}");
        let e = Config::parse("[alertd]\nbogus = 1\n").unwrap_err();
        assert!(e.starts_with("2:1: unknown field `bogus`"), "{e}");
    }

    #[test]
    fn backend_errors_name_line_and_field() {
        let check = |text: &str, want: &str| {
            let e = Config::parse(text).unwrap_err();
            assert!(e.starts_with(want), "{e}");
        };
        check("[store]\nbackend = \"cassandra\"\n", "2:11: unknown variant `cassandra`");
        check("[store]\nbackend = \"prometheus\"\n", "2:1: store.backend: \"prometheus\" needs a [store.remote]");
        check(
            "[store.remote]\nurl = \"http://vm:8428\"\n",
            "1:1: store.remote: only read with backend = \"prometheus\"",
        );
        check(
            "[store]\nbackend = \"prometheus\"\n\n[store.remote]\nflavour = \"victoriametrics\"\nurl = \"vm:8428\"\n",
            "6:1: store.remote.url: \"vm:8428\" is not an http or https URL",
        );
        check(
            "[store]\nbackend = \"prometheus\"\n[store.remote]\nurl = \"http://vm\"\n  tenant = \"0\"\n",
            "5:3: store.remote.tenant: not used by flavour \"victoriametrics\"",
        );
        check(
            "[store]\nbackend = \"prometheus\"\n[store.remote]\nurl = \"http://vm\"\nbogus = 1\n",
            "5:1: unknown field `bogus`",
        );
        check(
            "[store]\nbackend = \"influxdb2\"\n[store.influxdb2]\nurl = \"http://i:8086\"\norg = \"o\"\nbucket = \"\"\ntoken = \"t\"\n",
            "6:1: store.influxdb2.bucket: must not be empty",
        );
        check(
            "[store]\nbackend = \"influxdb2\"\n[store.influxdb2]\nurl = \"http://i:8086\"\n",
            "3:1: missing field `org`",
        );
    }

    #[test]
    fn embedded_is_the_default_backend() {
        assert!(Config::parse("").unwrap().remote_backend().unwrap().is_none());
        let c = Config::parse("[store]\nbackend = \"embedded\"\n").unwrap();
        assert!(c.remote_backend().unwrap().is_none());
    }

    #[test]
    fn tokens_never_show_in_debug() {
        let c = Config::parse(
            "[store]\nbackend = \"influxdb2\"\n[store.influxdb2]\nurl = \"http://i:8086\"\norg = \"o\"\nbucket = \"b\"\ntoken = \"tok-123\"\n",
        )
        .unwrap();
        let shown = format!("{c:?} {:?}", c.remote_backend().unwrap());
        assert!(!shown.contains("tok-123"), "{shown}");
    }

    #[test]
    fn shipped_remote_example_loads() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/argus-victoriametrics-cluster.toml");
        let c = Config::load(&p).unwrap();
        let Some(RemoteOptions::Prometheus(o)) = c.remote_backend().unwrap() else {
            panic!("not a prometheus backend")
        };
        assert_eq!(o.write_url.as_str(), "http://vminsert:8480/insert/0/prometheus/api/v1/write");
        assert_eq!(o.query_url.as_str(), "http://vmselect:8481/select/0/prometheus/api/v1/query");
    }

    #[test]
    fn collector_section_is_validated_in_place() {
        let c = Config::parse("[collector]\ninterval = \"5s\"\n[collector.host]\nenabled = false\n").unwrap();
        assert!(c.collector.validate("-").unwrap().host.is_none());
        let e =
            Config::parse("[store]\nretention = \"35d\"\n[collector.training]\nlisten = \"nowhere\"\n").unwrap_err();
        assert!(e.starts_with("4:1: collector.training.listen: \"nowhere\" is not an address"), "{e}");
        let e = Config::parse("[collector.gpu]\nbogus = 1\n").unwrap_err();
        assert!(e.starts_with("2:1: unknown field `bogus`"), "{e}");
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/collector.toml");
        assert!(Config::load(&p).is_ok(), "the collector's example is an argus.toml too");
    }

    #[test]
    fn shipped_example_loads() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/argus.toml");
        let c = Config::load(&p).unwrap();
        assert_eq!(c.server.listen, "127.0.0.1:9700");
    }

    /// A property test of the whole `argus.toml` loader, which lives in the binary and so outside the
    /// cargo-fuzz targets (they cover the library crates' sections): the shipped files with bytes
    /// replaced, cut or inserted never panic, and every refusal says something.
    #[test]
    fn mutated_configs_are_refused_or_loaded_never_panic() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut refused = 0;
        for f in ["config/argus.toml", "config/collector.toml", "config/argus-victoriametrics-cluster.toml"] {
            let seed = std::fs::read(root.join(f)).unwrap();
            for _ in 0..150 {
                let mut b = seed.clone();
                for _ in 0..1 + next() % 4 {
                    let r = next();
                    let i = (r as usize / 8) % b.len().max(1);
                    match r % 3 {
                        0 if i < b.len() => b[i] = (r >> 40) as u8,
                        1 => b.truncate(i),
                        _ => b.insert(i.min(b.len()), b"[]=\"\n#.,{}0 "[(r >> 24) as usize % 12]),
                    }
                }
                if let Ok(text) = String::from_utf8(b)
                    && let Err(e) = Config::parse(&text)
                {
                    assert!(!e.trim().is_empty(), "an empty error for:\n{text}");
                    refused += 1;
                }
            }
        }
        assert!(refused > 50, "the mutations reach the validation ({refused} refused)");
    }
}
