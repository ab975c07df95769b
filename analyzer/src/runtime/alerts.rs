//! Anomalies as Alertmanager API v2 alerts. An alert's labels identify the series and the rule, never
//! a changing value, so alertd deduplicates and groups it like any other; the `detector` label is the
//! detector that scored highest when the alert started, kept for the alert's whole life.

use super::config::Rule;
use crate::detect::peer::PeerScore;
use argus_model::Labels;
use argus_store::backend::BoxFuture;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

/// A firing alert is sent again this often, as Prometheus' `--rules.alert.resend-delay`.
pub const RESEND: Duration = Duration::from_secs(60);

/// The alert name of every analyzer alert.
pub const ALERT_NAME: &str = "AnomalyDetected";

/// An alert in Alertmanager's API v2 JSON (`PostableAlert`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    #[serde(rename = "startsAt")]
    pub starts_at: String,
    #[serde(rename = "endsAt")]
    pub ends_at: String,
    #[serde(rename = "generatorURL")]
    pub generator_url: String,
}

/// A series' firing alert.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Firing {
    /// When it started (ms).
    pub since: i64,
    pub detector: String,
    pub last_sent: i64,
}

/// Where alerts go: alertd in this process, or one over HTTP.
pub trait AlertOut: Send + Sync {
    fn send(&self, alerts: Vec<Alert>) -> BoxFuture<'_, Result<(), String>>;
}

/// Posts to an Alertmanager-compatible `/api/v2/alerts` (alertd, or Alertmanager itself).
pub struct HttpAlertOut {
    client: reqwest::Client,
    url: String,
}

impl HttpAlertOut {
    /// `base` is the server's URL, e.g. `http://alertd:9700`.
    pub fn new(base: &str) -> Result<HttpAlertOut, String> {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().map_err(|e| e.to_string())?;
        Ok(HttpAlertOut { client, url: format!("{}/api/v2/alerts", base.trim_end_matches('/')) })
    }
}

impl AlertOut for HttpAlertOut {
    fn send(&self, alerts: Vec<Alert>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let r = self.client.post(&self.url).json(&alerts).send().await.map_err(|e| format!("{}: {e}", self.url))?;
            if r.status().is_success() {
                Ok(())
            } else {
                let status = r.status();
                let body = r.text().await.unwrap_or_default();
                Err(format!("{} answered {status}: {}", self.url, body.chars().take(300).collect::<String>()))
            }
        })
    }
}

/// What an alert says about the series.
pub struct Context<'a> {
    pub rule: &'a Rule,
    pub labels: &'a Labels,
    pub metric: &'a str,
    pub value: f64,
    pub score: f64,
    pub expected: Option<f64>,
    pub band: Option<(f64, f64)>,
    pub peer: Option<PeerScore>,
}

pub(crate) fn rfc3339(ms: i64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)).to_string()
}

fn identity(rule: &Rule, labels: &Labels, metric: &str, detector: &str) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> =
        labels.without_name().iter().map(|l| (l.name.clone(), l.value.clone())).collect();
    out.extend(rule.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    out.insert("alertname".into(), ALERT_NAME.into());
    out.insert("severity".into(), rule.severity.clone());
    out.insert("detector".into(), detector.into());
    out.insert("metric".into(), metric.into());
    out.insert("analyzer_rule".into(), rule.name.clone());
    out
}

fn generator(rule: &Rule) -> String {
    format!("/api/v1/anomalies?rule={}", rule.name)
}

/// A firing alert, valid for four resend periods (or steps) unless sent again.
pub fn firing(c: &Context<'_>, f: &Firing, now: i64, interval: Duration) -> Alert {
    let mut annotations = BTreeMap::new();
    annotations.insert("value".into(), format!("{}", c.value));
    annotations.insert("score".into(), format!("{:.2}", c.score));
    let mut summary = format!("{} = {} on {}", c.metric, short(c.value), c.labels.without_name());
    if let Some((lo, hi)) = c.band {
        annotations.insert("expected_band".into(), format!("{} – {}", short(lo), short(hi)));
        summary.push_str(&format!(", expected {} – {}", short(lo), short(hi)));
    } else if let Some(e) = c.expected {
        annotations.insert("expected".into(), short(e));
        summary.push_str(&format!(", expected about {}", short(e)));
    }
    if let Some(p) = c.peer {
        annotations.insert("peer_median".into(), short(p.group_median));
        summary.push_str(&format!("; its peers' median is {}", short(p.group_median)));
    }
    annotations.insert("summary".into(), summary);
    let valid = RESEND.max(interval).as_millis() as i64 * 4;
    Alert {
        labels: identity(c.rule, c.labels, c.metric, &f.detector),
        annotations,
        starts_at: rfc3339(f.since),
        ends_at: rfc3339(now + valid),
        generator_url: generator(c.rule),
    }
}

/// The same alert, resolved at `now`.
pub fn resolved(rule: &Rule, labels: &Labels, metric: &str, f: &Firing, now: i64) -> Alert {
    Alert {
        labels: identity(rule, labels, metric, &f.detector),
        annotations: BTreeMap::new(),
        starts_at: rfc3339(f.since),
        ends_at: rfc3339(now),
        generator_url: generator(rule),
    }
}

pub(crate) fn short(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.trunc() { format!("{v:.0}") } else { format!("{v:.3}") }
}
