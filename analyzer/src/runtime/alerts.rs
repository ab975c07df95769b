//! Anomalies as Alertmanager API v2 alerts. An alert's labels identify the series and the rule, never
//! a changing value, so alertd deduplicates and groups it like any other; the `detector` label is the
//! detector that scored highest when the alert started, kept for the alert's whole life.

use super::config::Rule;
use crate::detect::peer::PeerScore;
use argus_model::Labels;
use argus_store_api::SecretFile;
use argus_store_api::backend::BoxFuture;
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

/// Posts to the Alertmanager-compatible `/api/v2/alerts` of every server in `alert_urls` (alertd
/// replicas, or Alertmanager itself), all at once, as Prometheus does with its Alertmanagers: each
/// replica must hear every alert, so none is skipped because another answered.
pub struct HttpAlertOut {
    client: reqwest::Client,
    urls: Vec<String>,
    token: Option<SecretFile>,
}

impl HttpAlertOut {
    /// `bases` are the servers' URLs, e.g. `http://alertd-0:9700`.
    pub fn new(bases: &[String]) -> Result<HttpAlertOut, String> {
        if bases.is_empty() {
            return Err("no alert URL".into());
        }
        let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().map_err(|e| e.to_string())?;
        let urls = bases.iter().map(|b| format!("{}/api/v2/alerts", b.trim_end_matches('/'))).collect();
        Ok(HttpAlertOut { client, urls, token: None })
    }

    /// Sends every post with `Authorization: Bearer` and the token in `token` (`[server]
    /// alert_token_file`), read again for every post, so that a rotated token is sent without a
    /// restart; a post whose file cannot be read fails like one no alertd answered, and its alerts go
    /// again at the next resend.
    pub fn with_token(self, token: Option<SecretFile>) -> HttpAlertOut {
        HttpAlertOut { token, ..self }
    }

    /// Posts `alerts` (any Alertmanager v2 JSON) to every server. Succeeds when at least one accepted
    /// them; the error names every server that did not. A server that missed a post hears the alerts
    /// again with the next resend (every [`RESEND`] while they fire).
    pub async fn post<T: Serialize + Sync>(&self, alerts: &[T]) -> Result<(), String> {
        let body = serde_json::to_vec(alerts).map_err(|e| e.to_string())?;
        let token = self.token.as_ref().map(SecretFile::read).transpose()?;
        let sends = self.urls.iter().map(|url| {
            let req = self.client.post(url).header("content-type", "application/json").body(body.clone());
            let req = match &token {
                Some(t) => req.bearer_auth(t.expose()),
                None => req,
            };
            async move {
                let r = req.send().await.map_err(|e| format!("{url}: {e}"))?;
                if r.status().is_success() {
                    return Ok(());
                }
                let status = r.status();
                let text = r.text().await.unwrap_or_default();
                Err(format!("{url} answered {status}: {}", text.chars().take(300).collect::<String>()))
            }
        });
        let results = futures_util::future::join_all(sends).await;
        let failed: Vec<String> = results.into_iter().filter_map(Result::err).collect();
        if failed.len() == self.urls.len() {
            return Err(failed.join("; "));
        }
        for error in failed {
            tracing::warn!(%error, "An alert receiver missed a post; it hears the alerts at the next resend");
        }
        Ok(())
    }
}

impl AlertOut for HttpAlertOut {
    fn send(&self, alerts: Vec<Alert>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move { self.post(&alerts).await })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::forecasts::push::{CapacityOut, HttpCapacityOut};
    use std::sync::{Arc, Mutex};

    /// A server on loopback that answers 200 when the token is `want`'s current value and 401
    /// otherwise, as alertd's `[auth]` does, and records each request's path and Authorization.
    async fn alertd(want: &'static str) -> (String, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let log = log.clone();
            async move {
                let auth = req.headers().get("authorization").map(|v| v.to_str().unwrap_or("?").to_string());
                log.lock().unwrap().push(format!("{} {}", req.uri().path(), auth.as_deref().unwrap_or("-")));
                match auth.as_deref() == Some(&format!("Bearer {want}")) {
                    true => axum::http::StatusCode::OK,
                    false => axum::http::StatusCode::UNAUTHORIZED,
                }
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (base, seen)
    }

    #[tokio::test]
    async fn alerts_and_capacity_plans_carry_the_token_of_the_file_as_it_reads_now() {
        let (base, seen) = alertd("t2").await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let e =
            SecretFile::open("alert_token_file", &path).unwrap_err().replace(&dir.path().display().to_string(), "DIR");
        assert_eq!(e, "alert_token_file DIR/token: No such file or directory (os error 2)");
        std::fs::write(&path, "\n").unwrap();
        let e =
            SecretFile::open("alert_token_file", &path).unwrap_err().replace(&dir.path().display().to_string(), "DIR");
        assert_eq!(e, "alert_token_file DIR/token: empty");

        std::fs::write(&path, "t1\n").unwrap();
        let token = Some(SecretFile::open("alert_token_file", &path).unwrap());
        let out = HttpAlertOut::new(std::slice::from_ref(&base)).unwrap().with_token(token.clone());
        let capacity = HttpCapacityOut::new(std::slice::from_ref(&base)).unwrap().with_token(token);
        let e = out.post::<Alert>(&[]).await.unwrap_err();
        assert!(e.contains("answered 401"), "the old token is refused: {e}");
        std::fs::write(&path, "t2\n").unwrap();
        out.post::<Alert>(&[]).await.expect("the rotated token is sent without a restart");
        capacity.push(Vec::new()).await.expect("capacity plans carry the token too");
        std::fs::remove_file(&path).unwrap();
        let e = out.post::<Alert>(&[]).await.unwrap_err();
        assert!(e.starts_with("alert_token_file ") && e.contains("No such file"), "{e}");
        let unsent = HttpAlertOut::new(std::slice::from_ref(&base)).unwrap();
        assert!(unsent.post::<Alert>(&[]).await.unwrap_err().contains("answered 401"));
        assert_eq!(
            *seen.lock().unwrap(),
            [
                "/api/v2/alerts Bearer t1",
                "/api/v2/alerts Bearer t2",
                "/api/v1/scheduler/capacity Bearer t2",
                "/api/v2/alerts -"
            ]
        );
    }
}
