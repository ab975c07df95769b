//! The `[analyzer]` section of `argus.toml`, as written (every key optional) and validated.
//!
//! ```toml
//! [analyzer]
//! interval = "10s"
//! [[analyzer.rule]]
//! name = "gpu_utilization"
//! query = "gpu_utilization_ratio"
//! detectors = ["threshold", "peer"]
//! peer_by = ["cluster", "job"]
//! direction = "below"
//! ```
//!
//! With no rules configured, [`default_rules`] watch the collector's GPU, host, disk and network series.

use crate::detect::Direction;
use crate::detect::peer::PeerParams;
use argus_model::shard::{ENTITY_LABELS, Shard};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// `[analyzer]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Off switch; the analyzer runs inside `argus serve` by default.
    pub enabled: Option<bool>,
    /// Evaluation step of every rule without its own, e.g. "10s".
    pub interval: Option<String>,
    /// History fed to new detectors before they score live data (default 2h: the seasonal threshold
    /// looks for its period after 640 points).
    pub warmup: Option<String>,
    /// The longest gap caught up after a restart or a stall; older steps are skipped.
    pub max_catchup: Option<String>,
    /// How long after a step ends it is evaluated, so that its samples still on their way are in
    /// (default 5s): at least the collectors' flush interval and, on VictoriaMetrics, its
    /// `-search.latencyOffset`. Every rule, multivariate model and forecast target waits it.
    pub eval_delay: Option<String>,
    /// Consecutive anomalous steps before an alert fires, and normal steps before it resolves.
    pub alert_after: Option<u32>,
    pub resolve_after: Option<u32>,
    /// A step whose score reaches this fires at once, without waiting for `alert_after` steps (default
    /// 2: one detector far out of a single-detector rule, or both detectors of a pair well out); 0 turns
    /// it off. A sharp anomaly is often a single step: the record stage scores only its first point high.
    pub alert_at_once: Option<f64>,
    /// The older spelling of `[server] alert_urls` (one alertd base URL), still read when that list is
    /// empty; `argus serve` reads and checks it with the list. Under `argus serve`, anomalies go to the
    /// alertd in the same process unless the list is set.
    pub alert_url: Option<String>,
    /// How often detector state is saved to the data directory.
    pub checkpoint: Option<String>,
    /// Series not seen for this long are forgotten (their alert resolved).
    pub forget_after: Option<String>,
    #[serde(default, rename = "rule")]
    pub rules: Vec<RuleConfig>,
    /// `[[analyzer.forecast]]` targets (default: [`super::forecasts::config::default_targets`]).
    #[serde(default, rename = "forecast")]
    pub forecasts: Vec<super::forecasts::config::TargetConfig>,
    /// `[[analyzer.capacity]]` pools planned from forecast targets.
    #[serde(default)]
    pub capacity: Vec<super::forecasts::config::PoolConfig>,
    /// `[[analyzer.multivariate]]` models: one isolation-forest detector per entity (none by default).
    #[serde(default)]
    pub multivariate: Vec<super::multivariate::config::ModelConfig>,
}

/// One `[[analyzer.rule]]`: a PromQL query whose every series is watched by the named detectors.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    pub name: String,
    pub query: String,
    /// Names from [`super::detectors::UNIVARIATE`] plus `peer`.
    #[serde(default)]
    pub detectors: Vec<String>,
    pub interval: Option<String>,
    /// The `metric` label of the results when the query's series carry no metric name.
    pub metric: Option<String>,
    /// Labels that make a peer group (members are the series that share them). Required for `peer`.
    #[serde(default)]
    pub peer_by: Vec<String>,
    /// The window a member is compared with its peers over, e.g. "5m".
    pub peer_window: Option<String>,
    pub direction: Option<Direction>,
    /// The smallest deviation that may count, in the metric's unit (applies to every detector that has one).
    pub min_deviation: Option<f64>,
    pub severity: Option<String>,
    /// Extra labels on the alerts of this rule.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Parameters of named detectors: `[analyzer.rule.params.threshold]`.
    #[serde(default)]
    pub params: BTreeMap<String, toml::Value>,
}

/// Validated settings: every value usable as is.
#[derive(Debug, Clone)]
pub struct Valid {
    pub enabled: bool,
    pub warmup: Duration,
    pub max_catchup: Duration,
    pub eval_delay: Duration,
    pub alert_after: u32,
    pub resolve_after: u32,
    /// 0 when off, else above 1.
    pub alert_at_once: f64,
    pub checkpoint: Duration,
    pub forget_after: Duration,
    pub rules: Vec<Rule>,
    pub forecasts: Vec<super::forecasts::config::Target>,
    pub pools: Vec<super::forecasts::config::Pool>,
    pub multivariate: Vec<super::multivariate::config::ModelRule>,
    /// The share of the work this process takes (`argus serve --shard`); all of it by default.
    pub shard: Shard,
}

impl Valid {
    /// The settings for share `shard` of the work: series of a rule by their `cluster` and `host`
    /// (a peer rule's by its `peer_by` labels, so a peer group stays whole), a multivariate rule's
    /// entities by their labels, forecast targets by name and capacity pools with their demand target.
    pub fn for_shard(mut self, shard: Shard) -> Valid {
        self.forecasts.retain(|t| shard.owns([t.name.as_str()]));
        self.pools.retain(|p| shard.owns([p.demand.as_str()]));
        self.shard = shard;
        self
    }
}

impl Rule {
    /// The labels whose values place this rule's series on a shard: a peer rule's `peer_by`, so that
    /// a peer group stays whole, else the entity's (`cluster`, `host`).
    pub fn shard_by(&self) -> Vec<String> {
        match &self.peer {
            Some(p) => p.by.clone(),
            None => ENTITY_LABELS.map(String::from).to_vec(),
        }
    }
}

/// A validated rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub name: String,
    pub query: String,
    pub interval: Duration,
    /// The query's longest range window: a new series' values younger than this are not learned
    /// from, as they are computed over a partial window where engines extrapolate differently.
    pub settle: Duration,
    /// Univariate detectors by registry name, in the order given.
    pub univariate: Vec<String>,
    pub params: BTreeMap<String, toml::Value>,
    /// Peer-outlier settings, when `peer` is among the detectors.
    pub peer: Option<PeerRule>,
    pub metric: Option<String>,
    pub direction: Direction,
    pub min_deviation: f64,
    pub severity: String,
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone)]
pub struct PeerRule {
    pub by: Vec<String>,
    pub window: Duration,
    pub params: PeerParams,
}

/// What is wrong with `[analyzer]`: the key under `[analyzer]` (`interval`, `rules[2].metric`) and why.
pub type ConfigError = argus_model::FieldError;

pub(crate) fn err(key: impl Into<String>, reason: impl Into<String>) -> ConfigError {
    ConfigError::new(key, reason)
}

/// Reads a parameters table into `T`, naming the key a bad value sits under (`sustain.points: invalid
/// value: …`): `toml`'s own error from a `Value` says what is wrong but not where. An unknown key is
/// named by its message already, so only the table holding it is.
pub(crate) fn params_table<T: serde::de::DeserializeOwned>(v: toml::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let message = e.inner().message();
        let path = e.path().to_string();
        let path = match message.starts_with("unknown field") {
            true => path.rsplit_once('.').map_or(".", |(table, _)| table),
            false => &path,
        };
        match path {
            "." => message.to_string(),
            path => format!("{path}: {message}"),
        }
    })
}

pub(crate) fn duration(key: &str, s: &Option<String>, default: Duration) -> Result<Duration, ConfigError> {
    s.as_deref().map_or(Ok(default), |s| argus_model::units::duration(s).map_err(|reason| err(key, reason)))
}

impl Config {
    pub fn validate(&self) -> Result<Valid, ConfigError> {
        let interval = duration("interval", &self.interval, Duration::from_secs(10))?;
        if interval < Duration::from_secs(1) {
            return Err(err("interval", "must be at least 1s"));
        }
        let rules = if self.rules.is_empty() { default_rules() } else { self.rules.clone() };
        let alert_at_once = self.alert_at_once.unwrap_or(2.0);
        if !(alert_at_once == 0.0 || alert_at_once.is_finite() && alert_at_once > 1.0) {
            return Err(err("alert_at_once", format!("{alert_at_once} must be 0 (off) or a score above 1")));
        }
        let mut seen = std::collections::HashSet::new();
        let mut valid = Vec::with_capacity(rules.len());
        for (i, r) in rules.iter().enumerate() {
            let at = if r.name.is_empty() { format!("rule[{i}]") } else { format!("rule {:?}", r.name) };
            valid.push(validate_rule(r, &at, interval)?);
            if !seen.insert(r.name.clone()) {
                return Err(err(at, "the name is used by another rule"));
            }
        }
        let v = Valid {
            enabled: self.enabled.unwrap_or(true),
            warmup: duration("warmup", &self.warmup, Duration::from_secs(2 * 3600))?,
            max_catchup: duration("max_catchup", &self.max_catchup, Duration::from_secs(3600))?,
            eval_delay: duration("eval_delay", &self.eval_delay, Duration::from_secs(5))?,
            alert_after: self.alert_after.unwrap_or(3).max(1),
            resolve_after: self.resolve_after.unwrap_or(3).max(1),
            alert_at_once,
            checkpoint: duration("checkpoint", &self.checkpoint, Duration::from_secs(300))?,
            forget_after: duration("forget_after", &self.forget_after, Duration::from_secs(3600))?,
            rules: valid,
            forecasts: Vec::new(),
            pools: Vec::new(),
            multivariate: super::multivariate::config::validate(&self.multivariate, interval)?,
            shard: Shard::ALL,
        };
        let forecasts = super::forecasts::config::validate_targets(&self.forecasts)?;
        let pools = super::forecasts::config::validate_pools(&self.capacity, &forecasts)?;
        let v = Valid { forecasts, pools, ..v };
        Ok(v)
    }
}

fn validate_rule(r: &RuleConfig, at: &str, interval: Duration) -> Result<Rule, ConfigError> {
    if r.name.is_empty() || !r.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(err(at, "name must be non-empty letters, digits, '_' or '-'"));
    }
    if r.query.trim().is_empty() {
        return Err(err(format!("{at}.query"), "is empty"));
    }
    let settle = match argus_store_api::promql::parse_expr(&r.query) {
        Ok(expr) => argus_store_api::promql::longest_range(&expr),
        Err(e) => return Err(err(format!("{at}.query"), format!("not valid PromQL: {e}"))),
    };
    if r.detectors.is_empty() {
        return Err(err(format!("{at}.detectors"), "names no detector"));
    }
    let mut univariate = Vec::new();
    let mut peer = None;
    let direction = r.direction.unwrap_or_default();
    let min_deviation = r.min_deviation.unwrap_or(0.0);
    if min_deviation.is_nan() || min_deviation < 0.0 {
        return Err(err(format!("{at}.min_deviation"), "must be zero or more"));
    }
    for d in &r.detectors {
        if d == "peer" {
            if r.peer_by.is_empty() {
                return Err(err(format!("{at}.peer_by"), "the peer detector needs the labels that make a group"));
            }
            let mut params: PeerParams = match r.params.get("peer") {
                Some(v) => v
                    .clone()
                    .try_into()
                    .map_err(|e: toml::de::Error| err(format!("{at}.params.peer"), e.message().to_string()))?,
                None => PeerParams::default(),
            };
            params.direction = direction;
            params.min_deviation = params.min_deviation.max(min_deviation);
            let window = duration(&format!("{at}.peer_window"), &r.peer_window, Duration::from_secs(300))?;
            peer = Some(PeerRule { by: r.peer_by.clone(), window, params });
        } else if super::detectors::find(d).is_some() {
            if univariate.contains(d) {
                return Err(err(format!("{at}.detectors"), format!("{d:?} named twice")));
            }
            univariate.push(d.clone());
        } else {
            let known: Vec<&str> = super::detectors::names().chain(["peer"]).collect();
            return Err(err(
                format!("{at}.detectors"),
                format!("unknown detector {d:?} (known: {})", known.join(", ")),
            ));
        }
    }
    for name in r.params.keys() {
        if !r.detectors.contains(name) {
            return Err(err(format!("{at}.params.{name}"), "parameters for a detector the rule does not use"));
        }
    }
    // Parameters are checked now, so a typo stops startup rather than the first evaluation.
    for d in &univariate {
        super::detectors::make(d, r.params.get(d), direction, min_deviation)
            .map_err(|e| err(format!("{at}.params.{d}"), e))?;
    }
    let severity = r.severity.clone().unwrap_or_else(|| "warning".into());
    Ok(Rule {
        name: r.name.clone(),
        query: r.query.clone(),
        interval: duration(&format!("{at}.interval"), &r.interval, interval)?,
        settle,
        univariate,
        params: r.params.clone(),
        peer,
        metric: r.metric.clone(),
        direction,
        min_deviation,
        severity,
        labels: r.labels.clone(),
    })
}

/// The rules that apply when `[analyzer]` names none: the collector's own series (docs/metrics.md).
pub fn default_rules() -> Vec<RuleConfig> {
    let rule = |name: &str, query: &str, detectors: &[&str], peer_by: &[&str], direction: Direction| RuleConfig {
        name: name.into(),
        query: query.into(),
        detectors: detectors.iter().map(|s| s.to_string()).collect(),
        peer_by: peer_by.iter().map(|s| s.to_string()).collect(),
        direction: Some(direction),
        ..RuleConfig::default()
    };
    let both = Direction::Both;
    // The seasonal dynamic threshold where it is built in, else the EWMA band.
    let uni = if super::detectors::find("threshold").is_some() { "threshold" } else { "ewma" };
    let threshold_and_peers: &[&str] = &[uni, "peer"];
    let threshold: &[&str] = &[uni];
    let dets = |d: &[&'static str]| -> Vec<&'static str> {
        d.iter().copied().filter(|d| *d == "peer" || super::detectors::find(d).is_some()).collect()
    };
    let all = [
        rule(
            "gpu_utilization",
            "gpu_utilization_ratio",
            &dets(threshold_and_peers),
            &["cluster", "host"],
            Direction::Below,
        ),
        rule(
            "gpu_temperature",
            "gpu_temperature_celsius",
            &dets(threshold_and_peers),
            &["cluster", "host"],
            Direction::Above,
        ),
        rule("gpu_power", "gpu_power_watts", &dets(threshold_and_peers), &["cluster", "host"], both),
        rule("host_cpu", "host_cpu_busy_ratio", &dets(threshold), &[], both),
        rule(
            "disk_latency",
            "rate(disk_read_time_seconds_total[1m]) / rate(disk_reads_completed_total[1m]) > 0",
            &dets(threshold),
            &[],
            Direction::Above,
        ),
        rule("net_throughput", "rate(net_receive_bytes_total[1m])", &dets(threshold), &[], both),
    ];
    all.into_iter()
        .map(|mut r| {
            if r.name == "disk_latency" {
                r.metric = Some("disk_read_latency_seconds".into());
            } else if r.name == "net_throughput" {
                r.metric = Some("net_receive_bytes_per_second".into());
            }
            r
        })
        .filter(|r| !r.detectors.is_empty())
        .collect()
}
