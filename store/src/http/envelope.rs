//! Prometheus' JSON envelope: `{"status":"success","data":…,"warnings":[…]}` and
//! `{"status":"error","errorType":…,"error":…}`, with the status codes Prometheus gives each error type
//! (400 `bad_data`, 422 `execution`, 503 `timeout`, 500 `internal`). Unknown paths and wrong methods
//! under `/api/v1/` get the same envelope, so a client parsing it never meets a bare text body.

use super::body::influx_error;
use crate::query::memory::{Reservation, SAMPLE_BYTES, SERIES_BYTES};
use crate::query::{QueryError, Value};
use axum::Json;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value as J, json};

/// The warning Prometheus adds when `limit` cut a list short.
pub const TRUNCATED: &str = "results truncated due to limit";

pub fn ok(data: J) -> Response {
    Json(json!({ "status": "success", "data": data })).into_response()
}

/// A success with warnings; without any it is the plain envelope, as Prometheus omits an empty list.
pub fn ok_warn(data: J, warnings: &[&str]) -> Response {
    if warnings.is_empty() {
        return ok(data);
    }
    Json(json!({ "status": "success", "data": data, "warnings": warnings })).into_response()
}

pub fn err(status: StatusCode, kind: &str, msg: String) -> Response {
    (status, Json(json!({ "status": "error", "errorType": kind, "error": msg }))).into_response()
}

pub fn bad(msg: String) -> Response {
    err(StatusCode::BAD_REQUEST, "bad_data", msg)
}

pub fn query_error(e: QueryError) -> Response {
    match e {
        QueryError::BadData(m) => bad(m),
        QueryError::Execution(m) => err(StatusCode::UNPROCESSABLE_ENTITY, "execution", m),
        e @ QueryError::Timeout(_) => err(StatusCode::SERVICE_UNAVAILABLE, "timeout", e.to_string()),
        QueryError::Storage(e) => err(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    }
}

/// A query result, written straight to bytes (see `json.rs`).
pub fn value(v: &Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], super::json::query_result_bytes(v)).into_response()
}

/// Estimated bytes of answer (see `json::estimated_len`) above which it is sent as it is written.
const STREAM_BYTES: usize = 1 << 20;
/// Bytes of answer handed to the connection at a time.
const STREAM_PART: usize = 1 << 20;
/// Parts written ahead of a slow client.
const STREAM_AHEAD: usize = 4;

/// [`value`], taking the result and the query's share of `max_query_memory`, which is held until
/// the result is let go. An answer of more than 1 MiB (a vector or matrix) is written a series at a
/// time on a blocking thread and sent in parts of 1 MiB as they fill, each series let go once
/// written and its share given back, so the answer is never held whole beside its result: the
/// encoding needs at most the parts in flight (`STREAM_AHEAD` waiting, one being filled, one
/// being sent), about 7 MiB, whatever the answer's size (a 1-hour panel over 37,736 GPUs is 102 MiB
/// of JSON). Called only once the query has succeeded, so the status is known before the first
/// byte; a client that goes away stops the writing.
pub fn value_owned(v: Value, memory: Reservation) -> Response {
    if super::json::estimated_len(&v) <= STREAM_BYTES {
        let r = value(&v);
        drop((v, memory));
        return r;
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(STREAM_AHEAD);
    tokio::task::spawn_blocking(move || {
        super::json::answer_parts(v, STREAM_PART, |part, gone| {
            memory.shrink(gone.series * SERIES_BYTES + gone.points * SAMPLE_BYTES);
            tx.blocking_send(part).is_ok()
        });
        drop(memory);
    });
    let parts = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|part| (Ok::<_, std::convert::Infallible>(bytes::Bytes::from(part)), rx))
    });
    ([(header::CONTENT_TYPE, "application/json")], axum::body::Body::from_stream(parts)).into_response()
}

/// Where no route matches: the envelope under `/api/v1/`, Go's plain text elsewhere.
pub async fn not_found(uri: Uri) -> Response {
    let path = uri.path();
    if path.starts_with("/api/v1/") {
        return err(StatusCode::NOT_FOUND, "not_found", format!("unknown api endpoint {path:?}"));
    }
    (StatusCode::NOT_FOUND, "404 page not found\n").into_response()
}

/// Where the path exists but not for this method: each API answers in its own error shape (the write
/// endpoints, remote write included, answer all their errors in InfluxDB's). axum adds `Allow` with the
/// route's methods.
pub async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    let path = uri.path();
    let msg = format!("method {method} not allowed for {path}");
    if matches!(path, "/write" | "/api/v2/write" | "/api/v1/write") {
        influx_error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed", msg, None)
    } else if path.starts_with("/api/v1/") {
        err(StatusCode::METHOD_NOT_ALLOWED, "bad_data", msg)
    } else {
        (StatusCode::METHOD_NOT_ALLOWED, msg).into_response()
    }
}
