//! Request bodies: decompression under a size cap, admission against the in-flight budget, and the
//! JSON error envelopes both APIs use.

use super::State;
use axum::Json;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::io::Read;
use std::sync::atomic::Ordering;

/// An error answer in InfluxDB's shape (`code`, `message`), plus `errors` for per-line detail.
pub fn influx_error(status: StatusCode, code: &str, message: String, errors: Option<serde_json::Value>) -> Response {
    let mut body = serde_json::json!({ "code": code, "message": message });
    if let Some(e) = errors {
        body["errors"] = e;
    }
    let mut r = (status, Json(body)).into_response();
    if status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

/// Holds part of the in-flight budget until dropped.
pub struct Admission<'a> {
    state: &'a State,
    bytes: usize,
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        self.state.inflight.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

/// Admits a body of `len` bytes (decoded size unknown yet, so it is charged at `len` times the expected
/// expansion), or answers 429/503 with Retry-After.
pub fn admit(state: &State, len: usize) -> Result<Admission<'_>, Response> {
    if let Some(pressure) = state.db.write_pressure() {
        state.db.metrics().rejected(pressure.reason());
        return Err(influx_error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", pressure.message().into(), None));
    }
    // Parsing a body builds its lines, keys, samples and the labels of new series: a 640 KB batch of
    // 10,000 lines of new series peaks near 10 MB, so a body is charged 16 times its size.
    let cost = len.saturating_mul(16).max(1);
    let prev = state.inflight.fetch_add(cost, Ordering::SeqCst);
    if prev > 0 && prev + cost > state.limits.max_inflight_bytes {
        state.inflight.fetch_sub(cost, Ordering::SeqCst);
        state.db.metrics().rejected("inflight");
        return Err(influx_error(
            StatusCode::TOO_MANY_REQUESTS,
            "too many requests",
            "too many write bytes in flight; retry later".into(),
            None,
        ));
    }
    Ok(Admission { state, bytes: cost })
}

/// The body, decompressed per `Content-Encoding` (gzip, snappy is left to the caller), capped at
/// `max` bytes.
pub fn decode(headers: &HeaderMap, body: &[u8], max: usize) -> Result<Vec<u8>, Response> {
    let enc = headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok()).unwrap_or("identity");
    match enc.trim().to_ascii_lowercase().as_str() {
        "gzip" | "x-gzip" => {
            let mut out = Vec::new();
            let mut r = flate2::read::GzDecoder::new(body).take(max as u64 + 1);
            if let Err(e) = r.read_to_end(&mut out) {
                return Err(influx_error(StatusCode::BAD_REQUEST, "invalid", format!("invalid gzip body: {e}"), None));
            }
            if out.len() > max {
                return Err(influx_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "request too large",
                    format!("decompressed body exceeds the limit of {max} bytes"),
                    None,
                ));
            }
            Ok(out)
        }
        "identity" | "" => Ok(body.to_vec()),
        other => Err(influx_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid",
            format!("unsupported Content-Encoding {other:?}; use gzip or none"),
            None,
        )),
    }
}
