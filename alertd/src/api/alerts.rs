//! `/api/v2/alerts`, `/api/v2/alerts/groups`, `/api/v2/status`, `/api/v2/receivers`.

use super::openapi::{AM_TAG, AmErrors};
use super::{ApiError, Params, State, filters, flag};
use crate::alert::{Alert, PostableAlert};
use crate::engine::Engine;
use crate::silence::Silence;
use crate::time::Timestamp;
use argus_model::{Labels, Matcher};
use argus_store_api::LabelScope;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State as Ext};
use axum::{Extension, Json};
use regex::Regex;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

type Kv = BTreeMap<String, String>;

/// The label scope of a token confined to a share of the series (set by the server's authentication
/// in front of alertd); absent for every other caller.
pub(super) type Scope = Option<Extension<Arc<LabelScope>>>;

fn kv(l: &Labels) -> Kv {
    l.iter().map(|x| (x.name.clone(), x.value.clone())).collect()
}

/// `receiver` in openapi.yaml.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Receiver {
    pub name: String,
}

/// `alertStatus`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AlertStatus {
    /// `active` or `suppressed` (alertd has no `unprocessed` alerts: it processes one as it is posted).
    #[schema(value_type = String)]
    pub state: &'static str,
    #[serde(rename = "silencedBy")]
    pub silenced_by: Vec<String>,
    #[serde(rename = "inhibitedBy")]
    pub inhibited_by: Vec<String>,
}

/// `gettableAlert`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GettableAlert {
    pub annotations: Kv,
    #[serde(rename = "endsAt")]
    pub ends_at: Timestamp,
    pub fingerprint: String,
    pub receivers: Vec<Receiver>,
    #[serde(rename = "startsAt")]
    pub starts_at: Timestamp,
    pub status: AlertStatus,
    #[serde(rename = "updatedAt")]
    pub updated_at: Timestamp,
    #[serde(rename = "generatorURL")]
    pub generator_url: String,
    pub labels: Kv,
}

/// `alertGroup`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AlertGroup {
    pub labels: Kv,
    pub receiver: Receiver,
    pub alerts: Vec<GettableAlert>,
}

/// The filters of `GET /api/v2/alerts` and `/alerts/groups`, as Alertmanager applies them.
struct AlertFilter {
    active: bool,
    silenced: bool,
    inhibited: bool,
    matchers: Vec<Matcher>,
    receiver: Option<Regex>,
}

impl AlertFilter {
    /// The request's filters; a token confined to a label scope adds the scope's matchers.
    fn parse(p: &Params, scope: Scope) -> Result<AlertFilter, ApiError> {
        let receiver = match p.iter().rev().find(|(k, _)| k == "receiver") {
            Some((_, r)) => Some(
                Regex::new(&format!("^(?:{r})$"))
                    .map_err(|e| ApiError::BadRequest(format!("receiver: invalid regex {r:?}: {e}")))?,
            ),
            None => None,
        };
        // `unprocessed` is accepted and has nothing to select: alertd processes an alert as it is posted.
        flag(p, "unprocessed", true)?;
        Ok(AlertFilter {
            active: flag(p, "active", true)?,
            silenced: flag(p, "silenced", true)?,
            inhibited: flag(p, "inhibited", true)?,
            matchers: filters(p)?
                .into_iter()
                .chain(scope.iter().flat_map(|s| s.0.matchers().iter().cloned()))
                .collect(),
            receiver,
        })
    }

    fn receiver_ok(&self, name: &str) -> bool {
        self.receiver.as_ref().is_none_or(|re| re.is_match(name))
    }

    /// The alert as the API shows it, or None when a filter drops it (resolved alerts are never
    /// shown, as in Alertmanager).
    fn show(&self, e: &Engine, a: &Alert, silences: &[Silence], now: Timestamp) -> Option<GettableAlert> {
        if a.resolved_at(now) || !self.matchers.iter().all(|m| m.matches(a.labels.get(&m.name).unwrap_or(""))) {
            return None;
        }
        let receivers = e.receivers_for(&a.labels);
        if self.receiver.is_some() && !receivers.iter().any(|r| self.receiver_ok(r)) {
            return None;
        }
        let silenced_by: Vec<String> =
            silences.iter().filter(|s| s.active_at(now) && s.matches(&a.labels)).map(|s| s.id.clone()).collect();
        let inhibited_by: Vec<String> = e.inhibited_by(&a.labels, now).iter().map(|f| f.to_string()).collect();
        let suppressed = !silenced_by.is_empty() || !inhibited_by.is_empty();
        if (!self.active && !suppressed)
            || (!self.silenced && !silenced_by.is_empty())
            || (!self.inhibited && !inhibited_by.is_empty())
        {
            return None;
        }
        Some(GettableAlert {
            annotations: kv(&a.annotations),
            ends_at: a.ends_at,
            fingerprint: a.fingerprint().to_string(),
            receivers: receivers.into_iter().map(|name| Receiver { name }).collect(),
            starts_at: a.starts_at,
            status: AlertStatus { state: if suppressed { "suppressed" } else { "active" }, silenced_by, inhibited_by },
            updated_at: a.updated_at,
            generator_url: a.generator_url.clone(),
            labels: kv(&a.labels),
        })
    }
}

/// `GET /api/v2/alerts`: the alerts that are not resolved, by fingerprint.
#[utoipa::path(get, path = "/api/v2/alerts", tag = AM_TAG, operation_id = "getAlerts",
    params(("active" = Option<bool>, Query, description = "Show active alerts (default true)"),
        ("silenced" = Option<bool>, Query, description = "Show silenced alerts (default true)"),
        ("inhibited" = Option<bool>, Query, description = "Show inhibited alerts (default true)"),
        ("unprocessed" = Option<bool>, Query, description = "Accepted; alertd has no unprocessed alerts"),
        ("filter" = Option<Vec<String>>, Query, description = "Matchers such as `alertname=\"GpuDown\"`, each in one parameter", example = json!(["severity=\"critical\""])),
        ("receiver" = Option<String>, Query, description = "A regular expression the receiver's name must match in full")),
    responses((status = 200, description = "The alerts", body = Vec<GettableAlert>), AmErrors))]
pub async fn get_alerts(
    Ext(s): Ext<State>,
    scope: Scope,
    Query(p): Query<Params>,
) -> Result<Json<Vec<GettableAlert>>, ApiError> {
    let f = AlertFilter::parse(&p, scope)?;
    let silences = s.silences.list();
    let now = s.engine.now();
    let e = s.engine.lock();
    let mut out: Vec<GettableAlert> = e.alerts().filter_map(|a| f.show(&e, a, &silences, now)).collect();
    out.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
    Ok(Json(out))
}

/// `GET /api/v2/alerts/groups`: the aggregation groups and their shown alerts; groups left with
/// none are left out.
#[utoipa::path(get, path = "/api/v2/alerts/groups", tag = AM_TAG, operation_id = "getAlertGroups",
    params(("active" = Option<bool>, Query, description = "Show active alerts (default true)"),
        ("silenced" = Option<bool>, Query, description = "Show silenced alerts (default true)"),
        ("inhibited" = Option<bool>, Query, description = "Show inhibited alerts (default true)"),
        ("unprocessed" = Option<bool>, Query, description = "Accepted; alertd has no unprocessed alerts"),
        ("filter" = Option<Vec<String>>, Query, description = "Matchers such as `alertname=\"GpuDown\"`, each in one parameter", example = json!(["severity=\"critical\""])),
        ("receiver" = Option<String>, Query, description = "A regular expression the receiver's name must match in full")),
    responses((status = 200, description = "The groups", body = Vec<AlertGroup>), AmErrors))]
pub async fn get_groups(
    Ext(s): Ext<State>,
    scope: Scope,
    Query(p): Query<Params>,
) -> Result<Json<Vec<AlertGroup>>, ApiError> {
    let f = AlertFilter::parse(&p, scope)?;
    let silences = s.silences.list();
    let now = s.engine.now();
    let e = s.engine.lock();
    let mut out: Vec<(String, AlertGroup)> = Vec::new();
    for g in e.groups() {
        if !f.receiver_ok(&g.opts.receiver) {
            continue;
        }
        let alerts: Vec<GettableAlert> =
            g.sorted_alerts().iter().filter_map(|a| f.show(&e, a, &silences, now)).collect();
        if !alerts.is_empty() {
            let group =
                AlertGroup { labels: kv(&g.labels), receiver: Receiver { name: g.opts.receiver.clone() }, alerts };
            out.push((g.id.clone(), group));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Json(out.into_iter().map(|(_, g)| g).collect()))
}

/// `POST /api/v2/alerts`: every alert is checked before any is taken in; one bad alert refuses
/// the whole request, naming it by its position.
#[utoipa::path(post, path = "/api/v2/alerts", tag = AM_TAG, operation_id = "postAlerts",
    request_body(content = Vec<PostableAlert>, description = "Alerts, as Prometheus and vmalert send them"),
    responses((status = 200, description = "Every alert taken in"), AmErrors))]
pub async fn post_alerts(
    Ext(s): Ext<State>,
    scope: Scope,
    body: Result<Bytes, BytesRejection>,
) -> Result<(), ApiError> {
    let body = body.map_err(|r| ApiError::from_body(r, s.max_body_bytes))?;
    let posted = parse_alerts(&body, s.max_alerts_per_request)?;
    for (i, a) in posted.iter().enumerate() {
        if a.labels.len() > s.max_labels_per_alert {
            return Err(ApiError::BadRequest(format!(
                "alert {i}: {} labels exceed the limit of {} per alert (alertd.max_labels_per_alert)",
                a.labels.len(),
                s.max_labels_per_alert
            )));
        }
        if let Some(Extension(scope)) = &scope
            && let Some(m) = scope.first_outside(|k| a.labels.get(k).map(String::as_str))
        {
            return Err(ApiError::Forbidden(format!(
                "alert {i} is outside this token's scope {scope} (it fails {m}); no alert of this request was taken in"
            )));
        }
    }
    let now = s.engine.now();
    // Validated outside the engine's lock; a reload in between changes only the resolve timeout of
    // alerts received at that very moment.
    let rt = s.engine.lock().config().resolve_timeout;
    let mut alerts = Vec::with_capacity(posted.len());
    for (i, p) in posted.into_iter().enumerate() {
        alerts.push(p.into_alert(now, rt).map_err(|err| ApiError::BadRequest(format!("alert {i}: {err}")))?);
    }
    let fps: Vec<_> = alerts.iter().map(Alert::fingerprint).collect();
    let stored = {
        let mut e = s.engine.lock();
        e.advance(now);
        e.ingest(now, alerts);
        e.advance(now);
        fps.iter().filter_map(|fp| e.alert(*fp).cloned()).collect::<Vec<_>>()
    };
    s.engine.changed();
    tracing::debug!(alerts = stored.len(), "Alerts received");
    if let Err(error) = s.db.record_alerts(&stored) {
        // The alerts are in the pipeline; only their history row is missing.
        tracing::error!(%error, "Alert history write failed");
    }
    Ok(())
}

/// The posted alerts, at most `max` of them. A valid body is read in one pass; only a refused one is
/// read again, alert by alert, for an error that names the alert at fault by its position.
fn parse_alerts(body: &[u8], max: usize) -> Result<Vec<PostableAlert>, ApiError> {
    let over = |n: usize| {
        ApiError::OverLimit(format!(
            "{n} alerts exceed the limit of {max} per request (alertd.max_alerts_per_request); send them in smaller batches"
        ))
    };
    if let Ok(posted) = serde_json::from_slice::<Vec<PostableAlert>>(body) {
        return if posted.len() > max { Err(over(posted.len())) } else { Ok(posted) };
    }
    let items: Vec<serde_json::Value> = serde_json::from_slice(body)
        .map_err(|e| ApiError::BadRequest(format!("body is not a JSON array of alerts: {e}")))?;
    if items.len() > max {
        return Err(over(items.len()));
    }
    let mut posted = Vec::with_capacity(items.len());
    for (i, v) in items.into_iter().enumerate() {
        posted.push(serde_json::from_value(v).map_err(|e| ApiError::BadRequest(format!("alert {i}: {e}")))?);
    }
    Ok(posted)
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Status {
    cluster: ClusterStatus,
    #[serde(rename = "versionInfo")]
    #[schema(value_type = BTreeMap<String, String>)]
    version_info: BTreeMap<&'static str, String>,
    config: ConfigText,
    uptime: Timestamp,
}

#[derive(Serialize, utoipa::ToSchema)]
struct ClusterStatus {
    /// This replica's name in the cluster (empty when alertd runs alone).
    name: String,
    /// `ready` once this replica merged its peers' state, `settling` before, `disabled` when alertd
    /// runs alone.
    #[schema(value_type = String)]
    status: &'static str,
    /// The other live replicas: `name` and `address`.
    #[schema(value_type = Vec<Object>)]
    peers: Vec<crate::cluster::Peer>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct ConfigText {
    original: String,
}

/// `GET /api/v2/status`: the cluster as Alertmanager shows it (`disabled` when alertd runs alone), and
/// the configuration with its secrets masked.
#[utoipa::path(get, path = "/api/v2/status", tag = AM_TAG, operation_id = "getStatus",
    responses((status = 200, description = "alertd's status and configuration text", body = Status)))]
pub async fn get_status(Ext(s): Ext<State>) -> Json<Status> {
    let version: BTreeMap<&'static str, String> = [
        ("version", env!("CARGO_PKG_VERSION").to_string()),
        ("revision", String::new()),
        ("branch", String::new()),
        ("buildUser", String::new()),
        ("buildDate", String::new()),
        ("goVersion", String::new()),
    ]
    .into_iter()
    .collect();
    Json(Status {
        cluster: match &s.cluster {
            Some(view) => {
                let v = view.snapshot();
                let status = if v.readiness.is_ready() { "ready" } else { "settling" };
                ClusterStatus { name: v.name, status, peers: v.peers }
            }
            None => ClusterStatus { name: String::new(), status: "disabled", peers: Vec::new() },
        },
        version_info: version,
        config: ConfigText {
            original: crate::config::mask::masked(&s.config_text.read().unwrap_or_else(|e| e.into_inner())),
        },
        uptime: s.started,
    })
}

/// `GET /api/v2/receivers`.
#[utoipa::path(get, path = "/api/v2/receivers", tag = AM_TAG, operation_id = "getReceivers",
    responses((status = 200, description = "The configured receivers", body = Vec<Receiver>)))]
pub async fn get_receivers(Ext(s): Ext<State>) -> Json<Vec<Receiver>> {
    let e = s.engine.lock();
    Json(e.config().receivers.keys().map(|name| Receiver { name: name.clone() }).collect())
}
