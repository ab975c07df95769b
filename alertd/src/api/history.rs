//! alertd's history API, in the Prometheus API's envelope (`{"status": "success", "data": …}`):
//! `GET /api/v1/incidents`, `GET /api/v1/notifications`, `POST /api/v1/incidents/{id}/ack`,
//! `POST /api/v1/incidents/{id}/silence`.

use super::openapi::{HISTORY_TAG, HistoryErrors};
use super::{ApiError, Params, State};
use crate::db::{Ack, IncidentRow, NotificationRow, Range};
use crate::time::Timestamp;
use argus_store_api::openapi::PromError;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State as Ext};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

/// Rows answered when `limit` is not given, and the most answered at all.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 10_000;

#[derive(Serialize, utoipa::ToSchema)]
pub struct Success<T> {
    /// `success`.
    #[schema(value_type = String)]
    status: &'static str,
    data: T,
}

pub(super) fn ok<T>(data: T) -> Json<Success<T>> {
    Json(Success { status: "success", data })
}

/// One incident as `GET /api/v1/incidents` shows it: its history row and, when it recurs an earlier
/// incident, how.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct IncidentEntry {
    #[serde(flatten)]
    row: IncidentRow,
    /// Present when the incident recurs an earlier one (`argus.correlation.recurrence_window`).
    #[serde(skip_serializing_if = "Option::is_none")]
    recurrence: Option<IncidentRecurrence>,
}

/// How an incident recurs an earlier one, as its first notification said (`argus_occurrence`,
/// `argus_recurrence_of`, `argus_recurrences_held`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct IncidentRecurrence {
    /// Which occurrence of the problem it is: 2 for the first recurrence.
    occurrence: u32,
    /// The engine number (`engineId`) of the occurrence it recurs.
    recurrence_of: u64,
    /// Earlier occurrences, since the last one notified, that were held back and never notified.
    recurrences_held: u32,
}

impl IncidentEntry {
    fn of(db: &crate::db::Db, row: IncidentRow) -> Result<IncidentEntry, crate::db::DbError> {
        let recurrence = db.incident_recurrence(row.id, row.first_notified_at)?.map(|r| IncidentRecurrence {
            occurrence: r.occurrence,
            recurrence_of: r.of,
            recurrences_held: r.held,
        });
        Ok(IncidentEntry { row, recurrence })
    }
}

/// An error in the Prometheus API's envelope.
pub struct V1Error(ApiError);

impl From<ApiError> for V1Error {
    fn from(e: ApiError) -> Self {
        V1Error(e)
    }
}

impl From<crate::db::DbError> for V1Error {
    fn from(e: crate::db::DbError) -> Self {
        V1Error(e.into())
    }
}

impl IntoResponse for V1Error {
    fn into_response(self) -> Response {
        let status = self.0.status();
        let kind = match status {
            StatusCode::NOT_FOUND => "not_found",
            s if s.is_server_error() => "internal",
            _ => "bad_data",
        };
        if status.is_server_error() {
            tracing::error!(error = %self.0, "History API request failed");
        }
        let body = serde_json::json!({"status": "error", "errorType": kind, "error": self.0.to_string()});
        (status, Json(body)).into_response()
    }
}

/// A time parameter: Unix seconds (with a fraction) or RFC 3339.
pub(super) fn time(p: &Params, name: &str) -> Result<Option<Timestamp>, ApiError> {
    let Some((_, v)) = p.iter().rev().find(|(k, _)| k == name) else { return Ok(None) };
    if let Ok(secs) = v.parse::<f64>()
        && secs.is_finite()
    {
        return Ok(Some(Timestamp((secs * 1000.0).round() as i64)));
    }
    Timestamp::parse_rfc3339(v).map(Some).map_err(|e| ApiError::BadRequest(format!("parameter {name}: {e}")))
}

/// The `start` and `end` parameters, open-ended where absent; `end` before `start` is refused.
pub(super) fn span(p: &Params) -> Result<(Timestamp, Timestamp), ApiError> {
    let start = time(p, "start")?.unwrap_or(Timestamp(i64::MIN));
    let end = time(p, "end")?.unwrap_or(Timestamp(i64::MAX));
    if end < start {
        return Err(ApiError::BadRequest("end is before start".into()));
    }
    Ok((start, end))
}

fn range(p: &Params) -> Result<Range, ApiError> {
    let (start, end) = span(p)?;
    let limit = match p.iter().rev().find(|(k, _)| k == "limit") {
        None => DEFAULT_LIMIT,
        Some((_, v)) => match v.parse::<usize>() {
            Ok(0) => DEFAULT_LIMIT,
            Ok(n) => n.min(MAX_LIMIT),
            Err(_) => return Err(ApiError::BadRequest(format!("parameter limit: {v:?} is not a count"))),
        },
    };
    Ok(Range { start, end, limit })
}

/// `GET /api/v1/incidents?start=&end=&limit=`: incidents opened in the range, newest first.
#[utoipa::path(get, path = "/api/v1/incidents", tag = HISTORY_TAG,
    params(("start" = Option<String>, Query, description = "Start: Unix seconds or RFC 3339", example = "1700000000"),
        ("end" = Option<String>, Query, description = "End: Unix seconds or RFC 3339", example = "1800000000"),
        ("limit" = Option<String>, Query, description = "At most this many rows (default 100, at most 10,000)", example = "100")),
    responses((status = 200, description = "Incidents, newest first", body = Success<Vec<IncidentEntry>>), HistoryErrors))]
pub async fn get_incidents(
    Ext(s): Ext<State>,
    Query(p): Query<Params>,
) -> Result<Json<Success<Vec<IncidentEntry>>>, V1Error> {
    let rows = s.db.incidents(range(&p)?)?;
    let list = rows.into_iter().map(|row| IncidentEntry::of(&s.db, row)).collect::<Result<_, _>>()?;
    Ok(ok(list))
}

/// `GET /api/v1/notifications?start=&end=&limit=&receiver=`: notifications sent in the range,
/// newest first.
#[utoipa::path(get, path = "/api/v1/notifications", tag = HISTORY_TAG,
    params(("start" = Option<String>, Query, description = "Start: Unix seconds or RFC 3339", example = "1700000000"),
        ("end" = Option<String>, Query, description = "End: Unix seconds or RFC 3339", example = "1800000000"),
        ("limit" = Option<String>, Query, description = "At most this many rows (default 100, at most 10,000)", example = "100"),
        ("receiver" = Option<String>, Query, description = "Only this receiver's notifications")),
    responses((status = 200, description = "Notifications, newest first", body = Success<Vec<NotificationRow>>), HistoryErrors))]
pub async fn get_notifications(
    Ext(s): Ext<State>,
    Query(p): Query<Params>,
) -> Result<Json<Success<Vec<NotificationRow>>>, V1Error> {
    let receiver = p.iter().rev().find(|(k, _)| k == "receiver").map(|(_, v)| v.as_str());
    Ok(ok(s.db.notifications(range(&p)?, receiver)?))
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct AckBody {
    #[serde(default)]
    by: String,
    #[serde(default)]
    comment: String,
}

/// An incident id from the path, or a 400 naming it.
fn incident_id(id: &str) -> Result<i64, ApiError> {
    id.parse().map_err(|_| ApiError::BadRequest(format!("incident id {id:?} is not a number")))
}

/// `POST /api/v1/incidents/{id}/ack` with an optional body `{"by": …, "comment": …}`: records the
/// acknowledgement (the first one stands), stops the incident's escalations, and answers the incident.
#[utoipa::path(post, path = "/api/v1/incidents/{id}/ack", tag = HISTORY_TAG,
    params(("id" = i64, Path, description = "The incident's `id`")),
    request_body(content = Option<AckBody>, description = "Who acknowledges and why (optional)"),
    responses((status = 200, description = "The incident, acknowledged", body = Success<IncidentEntry>),
        (status = 404, description = "No incident has this id (`not_found`)", body = PromError),
        (status = 413, description = "A body larger than `alertd.max_body_bytes` (`bad_data`)", body = PromError),
        HistoryErrors))]
pub async fn ack_incident(
    Ext(s): Ext<State>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Success<IncidentEntry>>, V1Error> {
    let id = incident_id(&id)?;
    let body = body.map_err(|r| ApiError::from_body(r, s.max_body_bytes))?;
    let b: AckBody = if body.iter().all(u8::is_ascii_whitespace) {
        AckBody::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::BadRequest(format!("acknowledgement: {e}")))?
    };
    let ack = Ack { at: s.engine.now(), by: b.by, comment: b.comment };
    match s.db.ack_incident(id, &ack)? {
        Some(row) => {
            // Escalations still due for it stop (the engine holds incidents of this process only),
            // and the acknowledgement that stands goes to the engine's memory, for the cluster.
            let stands = row.acknowledged.clone().unwrap_or_else(|| ack.clone());
            if let Ok(engine_id) = u64::try_from(row.engine_id)
                && s.engine.lock().acknowledge(engine_id, row.opened_at, stands.into())
            {
                s.engine.changed();
            }
            tracing::info!(incident = id, by = %ack.by, "Incident acknowledged");
            Ok(ok(IncidentEntry::of(&s.db, row)?))
        }
        None => Err(ApiError::NotFound(format!("incident {id} not found")).into()),
    }
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct SilenceBody {
    /// `resolved`: the only kind, a silence that ends when the incident's alerts have resolved.
    until: String,
    comment: String,
    #[serde(rename = "createdBy")]
    created_by: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct IncidentSilence {
    #[serde(rename = "silenceID")]
    silence_id: String,
    /// The matchers chosen for the incident's alerts, as Alertmanager's API writes them.
    matchers: Vec<crate::silence::WireMatcher>,
    #[serde(rename = "endsAt")]
    ends_at: Timestamp,
}

/// `POST /api/v1/incidents/{id}/silence` with `{"until": "resolved", "comment": …, "createdBy": …}`:
/// silences the incident's alerts until they have all resolved (and any alert the silence matches
/// since), at most `argus.silence_until_resolved_max`. The silence is an ordinary one in
/// `/api/v2/silences` (with `untilResolved: true`), so it can be expired early there.
#[utoipa::path(post, path = "/api/v1/incidents/{id}/silence", tag = HISTORY_TAG,
    params(("id" = i64, Path, description = "The incident's `id`")),
    request_body(content = SilenceBody, description = "Until what, who, and why"),
    responses((status = 200, description = "The silence made", body = Success<IncidentSilence>),
        (status = 404, description = "No incident has this id, or it is over (`not_found`)", body = PromError),
        (status = 413, description = "A body larger than `alertd.max_body_bytes` (`bad_data`)", body = PromError),
        HistoryErrors))]
pub async fn silence_incident(
    Ext(s): Ext<State>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Success<IncidentSilence>>, V1Error> {
    let id = incident_id(&id)?;
    let body = body.map_err(|r| ApiError::from_body(r, s.max_body_bytes))?;
    let b: SilenceBody = serde_json::from_slice(&body).map_err(|e| ApiError::BadRequest(format!("silence: {e}")))?;
    if b.until != "resolved" {
        return Err(ApiError::BadRequest(format!(
            "silence: until: {:?} is not supported (only \"resolved\")",
            b.until
        ))
        .into());
    }
    if b.created_by.is_empty() || b.comment.is_empty() {
        return Err(ApiError::BadRequest("silence: createdBy and comment are required".into()).into());
    }
    let Some(row) = s.db.incident(id)? else {
        return Err(ApiError::NotFound(format!("incident {id} not found")).into());
    };
    let now = s.engine.now();
    let (matchers, max) = {
        let e = s.engine.lock();
        let matchers = u64::try_from(row.engine_id).ok().and_then(|n| e.incident_matchers(n, row.opened_at, now));
        (matchers, e.config().silence_until_resolved_max)
    };
    let Some(matchers) = matchers else {
        return Err(ApiError::NotFound(format!("incident {id} has no firing alerts held by this alertd")).into());
    };
    let comment = format!("{} (incident {id}, until resolved)", b.comment);
    let silence = crate::silence::Silence::until_resolved(matchers, b.created_by, comment, now, max);
    let out = IncidentSilence {
        silence_id: silence.id.clone(),
        matchers: silence.matchers.iter().map(crate::silence::WireMatcher::from_matcher).collect(),
        ends_at: silence.ends_at,
    };
    s.silences.set(silence).map_err(ApiError::from)?;
    tracing::info!(incident = id, silence = %out.silence_id, "Incident silenced until resolved");
    s.engine.changed();
    Ok(ok(out))
}
