//! Write endpoints. A batch is stored whole or not at all: any malformed line rejects it with 400 and
//! a list of the bad lines (the first 100); nothing of it is kept.

use super::State;
use super::body::{admit, decode, influx_error};
use super::openapi::{SnappyProtobuf, WRITE_TAG, WriteErrors};
use crate::db::WriteError;
use crate::remote_write;
use argus_model::METRIC_NAME;
use argus_model::lineprotocol::{LineError, Precision, parse_numbered, series_name};
use argus_store_api::LabelScope;
use axum::Extension;
use axum::body::Bytes;
use axum::extract::{RawQuery, State as S};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// Which line-protocol endpoint a write came through.
#[derive(Clone, Copy)]
enum Api {
    V1,
    V2,
}

/// InfluxDB v2 write: line protocol; `org` and `bucket` are accepted and not stored.
#[utoipa::path(post, path = "/api/v2/write", tag = WRITE_TAG,
    params(("org" = Option<String>, Query, description = "Accepted, not stored"),
        ("bucket" = Option<String>, Query, description = "Accepted, not stored"),
        ("precision" = Option<String>, Query, description = "`ns` (default), `us`, `ms` or `s`", example = "ns")),
    request_body(content = String, content_type = "text/plain", description = "InfluxDB line protocol, one point a line; `Content-Encoding: gzip` allowed", example = "gpu_util,host=a,gpu=0 value=0.93 1700000000000000000"),
    responses((status = 204, description = "Stored, every line"), WriteErrors))]
pub async fn write_v2(s: S<Arc<State>>, scope: Scope, q: RawQuery, headers: HeaderMap, body: Bytes) -> Response {
    write_lp(s.0, scope, q.0, headers, body, Api::V2).await
}

/// InfluxDB v1 write: line protocol; `db` becomes a label on every series.
#[utoipa::path(post, path = "/write", tag = WRITE_TAG,
    params(("db" = Option<String>, Query, description = "Added to every series as label `db`", example = "telegraf"),
        ("precision" = Option<String>, Query, description = "`n` (default), `u`, `ms`, `s`, `m` or `h`", example = "s")),
    request_body(content = String, content_type = "text/plain", description = "InfluxDB line protocol, one point a line; `Content-Encoding: gzip` allowed", example = "gpu_util,host=a,gpu=0 value=0.93 1700000000000000000"),
    responses((status = 204, description = "Stored, every line"), WriteErrors))]
pub async fn write_v1(s: S<Arc<State>>, scope: Scope, q: RawQuery, headers: HeaderMap, body: Bytes) -> Response {
    write_lp(s.0, scope, q.0, headers, body, Api::V1).await
}

/// The label scope of a token confined to a share of the series (set by the server's authentication);
/// absent for every other writer.
type Scope = Option<Extension<Arc<LabelScope>>>;

async fn write_lp(
    state: Arc<State>,
    scope: Scope,
    query: Option<String>,
    headers: HeaderMap,
    body: Bytes,
    api: Api,
) -> Response {
    let params = super::params::Params::parse(query.as_deref(), &[]);
    let precision = match (api, params.get("precision")) {
        (_, None) | (_, Some("")) => Ok(Precision::Nanoseconds),
        (Api::V2, Some(p)) => Precision::parse_v2(p),
        (Api::V1, Some(p)) => Precision::parse_v1(p),
    };
    let precision = match precision {
        Ok(p) => p,
        Err(e) => return influx_error(StatusCode::BAD_REQUEST, "invalid", format!("invalid precision: {e}"), None),
    };
    // v1 `db` becomes a label on every series, as VictoriaMetrics does; v2's org and bucket do not.
    let db_label =
        if matches!(api, Api::V1) { params.get("db").filter(|d| !d.is_empty()).map(str::to_string) } else { None };
    let _admission = match admit(&state, body.len()) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let st = state.clone();
    let res = tokio::task::spawn_blocking(move || {
        let data = decode(&headers, &body, st.limits.max_decoded_bytes)?;
        store_lines(&st, &data, precision, db_label.as_deref(), scope.as_ref().map(|s| &*s.0))
    })
    .await;
    answer(res)
}

fn store_lines(
    state: &State,
    data: &[u8],
    precision: Precision,
    db: Option<&str>,
    scope: Option<&LabelScope>,
) -> Result<(), Response> {
    let text = std::str::from_utf8(data).map_err(|e| {
        let at = e.valid_up_to();
        let line = data[..at].iter().filter(|b| **b == b'\n').count() + 1;
        let col = at - data[..at].iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1) + 1;
        invalid(vec![LineError { line, column: col, reason: format!("invalid utf-8 at byte {at}") }])
    })?;
    let max_lines = state.limits.max_lines_per_request;
    let lines = text.split('\n').filter(|l| !l.trim().is_empty()).count();
    if lines > max_lines {
        return Err(influx_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request too large",
            format!(
                "{lines} lines exceed the limit of {max_lines} per request (store.max_lines_per_request); nothing stored"
            ),
            None,
        ));
    }
    let max_line = state.limits.max_line_bytes;
    let long: Vec<LineError> = text
        .split('\n')
        .enumerate()
        .filter(|(_, l)| l.len() > max_line)
        .map(|(i, l)| LineError {
            line: i + 1,
            column: max_line + 1,
            reason: format!("line of {} bytes exceeds the limit of {max_line} bytes", l.len()),
        })
        .collect();
    if !long.is_empty() {
        return Err(invalid(long));
    }
    let numbered = parse_numbered(text).map_err(invalid)?;
    let max_labels = state.limits.max_labels_per_series;
    let extra = usize::from(db.is_some());
    let too_many: Vec<LineError> = numbered
        .iter()
        .filter(|(_, l)| l.tags.len() + 1 + extra > max_labels)
        .map(|(n, l)| LineError {
            line: *n,
            column: 1,
            reason: format!("{} labels exceed the limit of {max_labels} per series", l.tags.len() + 1 + extra),
        })
        .collect();
    if !too_many.is_empty() {
        return Err(invalid(too_many));
    }
    if let Some(scope) = scope {
        for (n, l) in &numbered {
            let tag = |k: &str| l.tags.iter().find(|(t, _)| t == k).map(|(_, v)| v.as_ref());
            for (field, _) in &l.fields {
                let mut name = String::new();
                series_name(&l.measurement, field, &mut name);
                let get = |k: &str| match k {
                    METRIC_NAME => Some(name.as_str()),
                    "db" if db.is_some() => db,
                    _ => tag(k),
                };
                if let Some(m) = scope.first_outside(get) {
                    return Err(outside(scope, &format!("line {n}: series {name}"), m));
                }
            }
        }
    }
    let (numbers, lines): (Vec<usize>, Vec<_>) = numbered.into_iter().unzip();
    let extra_labels: Vec<(&str, &str)> = db.map(|d| ("db", d)).into_iter().collect();
    state.db.write_lines(&lines, &numbers, precision, &extra_labels).map(|_| ()).map_err(write_error)
}

/// 403 for a write holding a series outside the writer's scope: nothing of the request is stored.
fn outside(scope: &LabelScope, what: &str, failed: &argus_model::Matcher) -> Response {
    influx_error(
        StatusCode::FORBIDDEN,
        "forbidden",
        format!("{what} is outside this token's scope {scope} (it fails {failed}); nothing stored"),
        None,
    )
}

/// `204` for a stored write, else the error it produced.
fn answer(res: Result<Result<(), Response>, tokio::task::JoinError>) -> Response {
    match res {
        Ok(Ok(())) => StatusCode::NO_CONTENT.into_response(),
        Ok(Err(r)) => r,
        Err(e) => {
            influx_error(StatusCode::INTERNAL_SERVER_ERROR, "internal error", format!("write task failed: {e}"), None)
        }
    }
}

fn invalid(errors: Vec<LineError>) -> Response {
    let n = errors.len();
    let first = errors.first().map(ToString::to_string).unwrap_or_default();
    let list: Vec<serde_json::Value> = errors
        .iter()
        .take(100)
        .map(|e| serde_json::json!({ "line": e.line, "column": e.column, "reason": e.reason }))
        .collect();
    influx_error(
        StatusCode::BAD_REQUEST,
        "invalid",
        format!("{n} malformed line(s), nothing stored; first: {first}"),
        Some(serde_json::Value::Array(list)),
    )
}

fn write_error(e: WriteError) -> Response {
    match e {
        WriteError::Invalid(errors) => invalid(errors),
        WriteError::Storage(msg) => {
            // ENOSPC: say so in words; the OS's text is kept for the path.
            let cause = if msg.contains("os error 28") { "the data directory's disk is full; " } else { "" };
            let msg = format!("write failed: {cause}{msg}; nothing of this request was stored, retry later");
            influx_error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", msg, None)
        }
        WriteError::Db(e) => influx_error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", e.to_string(), None),
        e @ WriteError::OverBudget { .. } => {
            influx_error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", e.to_string(), None)
        }
        // The sender's data is at fault: retrying the same batch cannot succeed.
        e @ (WriteError::TooManySeries { .. } | WriteError::TooManySeriesForMetric { .. }) => {
            influx_error(StatusCode::BAD_REQUEST, "invalid", e.to_string(), None)
        }
    }
}

/// Prometheus remote write 1.0: snappy-compressed protobuf.
#[utoipa::path(post, path = "/api/v1/write", tag = WRITE_TAG,
    request_body(content = SnappyProtobuf, content_type = "application/x-protobuf",
        description = "A snappy-compressed protobuf `WriteRequest` (Prometheus remote write 1.0)"),
    responses((status = 204, description = "Stored, every series"), WriteErrors))]
pub async fn remote_write(S(state): S<Arc<State>>, scope: Scope, body: Bytes) -> Response {
    let _admission = match admit(&state, body.len()) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let st = state.clone();
    let res = tokio::task::spawn_blocking(move || -> Result<(), Response> {
        let decoded = remote_write::decode_with_limit(&body, st.limits.max_decoded_bytes).map_err(|e| {
            let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
            influx_error(status, "invalid", e.to_string(), None)
        })?;
        let max_series = st.limits.max_series_per_request;
        if decoded.series.len() > max_series {
            return Err(influx_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request too large",
                format!(
                    "{} series exceed the limit of {max_series} per request (store.max_series_per_request); nothing stored",
                    decoded.series.len()
                ),
                None,
            ));
        }
        let max_labels = st.limits.max_labels_per_series;
        let mut series = Vec::with_capacity(decoded.series.len());
        for (i, s) in decoded.series.into_iter().enumerate() {
            if s.labels.len() > max_labels {
                return Err(influx_error(
                    StatusCode::BAD_REQUEST,
                    "invalid",
                    format!(
                        "series {} ({}): {} labels exceed the limit of {max_labels}",
                        i + 1,
                        s.labels,
                        s.labels.len()
                    ),
                    None,
                ));
            }
            if let Some(Extension(scope)) = &scope
                && let Some(m) = scope.first_outside(|k| s.labels.get(k))
            {
                return Err(outside(scope, &format!("series {} ({})", i + 1, s.labels), m));
            }
            series.push((s.labels, s.samples));
        }
        st.db.write_series(&series).map(|_| ()).map_err(write_error)
    })
    .await;
    answer(res)
}

/// Returns once the head is in compressed blocks and the WAL truncated.
#[utoipa::path(method(get, post), path = "/internal/force_flush", tag = super::openapi::OPS_TAG,
    responses((status = 200, description = "The head is flushed into blocks", body = String, content_type = "text/plain; charset=utf-8"),
        (status = 500, description = "The flush failed", body = super::openapi::InfluxError)))]
pub async fn force_flush(S(state): S<Arc<State>>) -> Response {
    let db = state.db.clone();
    match tokio::task::spawn_blocking(move || db.flush()).await {
        Ok(Ok(())) => (StatusCode::OK, "flushed\n").into_response(),
        Ok(Err(e)) => {
            influx_error(StatusCode::INTERNAL_SERVER_ERROR, "internal error", format!("flush failed: {e}"), None)
        }
        Err(e) => {
            influx_error(StatusCode::INTERNAL_SERVER_ERROR, "internal error", format!("flush task failed: {e}"), None)
        }
    }
}
