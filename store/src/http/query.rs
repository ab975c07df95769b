//! The Prometheus HTTP query API (`/api/v1/query`, `query_range`, `series`, `labels`,
//! `label/{name}/values`) and `/api/v1/events`, with Prometheus' response and error envelope.

use super::State;
use super::params::{Params, parse_duration, parse_selector, parse_time};
use crate::db::now_ms;
use crate::query::{self, QueryError, Value};
use argus_model::{Labels, Matcher};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State as S};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value as J, json};
use std::sync::Arc;

/// Prometheus' smallest and largest times, used when `start`/`end` are absent.
const MIN_TIME: i64 = -9_223_372_036_854_775 / 1000 * 1000;
const MAX_TIME: i64 = 9_223_372_036_854_775 / 1000 * 1000;

fn ok(data: J) -> Response {
    Json(json!({ "status": "success", "data": data })).into_response()
}

fn err(status: StatusCode, kind: &str, msg: String) -> Response {
    (status, Json(json!({ "status": "error", "errorType": kind, "error": msg }))).into_response()
}

fn bad(msg: String) -> Response {
    err(StatusCode::BAD_REQUEST, "bad_data", msg)
}

fn query_error(e: QueryError) -> Response {
    match e {
        QueryError::BadData(m) => bad(m),
        QueryError::Execution(m) => err(StatusCode::UNPROCESSABLE_ENTITY, "execution", m),
        e @ QueryError::Timeout(_) => err(StatusCode::SERVICE_UNAVAILABLE, "timeout", e.to_string()),
        QueryError::Storage(e) => err(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    }
}

fn metric(l: &Labels) -> J {
    let mut m = Map::new();
    for x in l {
        m.insert(x.name.clone(), J::String(x.value.clone()));
    }
    J::Object(m)
}

fn time_param(p: &Params, name: &str, default: i64) -> Result<i64, Response> {
    match p.get(name) {
        None | Some("") => Ok(default),
        Some(s) => parse_time(s).map_err(|e| bad(format!("invalid parameter \"{name}\": {e}"))),
    }
}

fn matchers(p: &Params) -> Result<Vec<Vec<Matcher>>, Response> {
    p.all("match[]").map(|s| parse_selector(s).map_err(bad)).collect()
}

fn value_response(v: &Value) -> Response {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], super::json::query_result(v)).into_response()
}

/// Runs a query off the async threads and reports its server-side time in a `Server-Timing` header
/// (W3C), so clients can tell evaluation time from transfer time.
async fn blocking<F: FnOnce() -> Response + Send + 'static>(f: F) -> Response {
    tokio::task::spawn_blocking(move || {
        let t = std::time::Instant::now();
        let mut r = f();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        if let Ok(v) = axum::http::HeaderValue::from_str(&format!("query;dur={ms:.3}")) {
            r.headers_mut().insert("server-timing", v);
        }
        r
    })
    .await
    .unwrap_or_else(|e| err(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("query task failed: {e}")))
}

pub async fn instant(S(state): S<Arc<State>>, RawQuery(q): RawQuery, body: Bytes) -> Response {
    let p = Params::parse(q.as_deref(), &body);
    let Some(query) = p.get("query").map(str::to_string) else {
        return bad("invalid parameter \"query\": query must not be empty".into());
    };
    let t = match time_param(&p, "time", now_ms()) {
        Ok(t) => t,
        Err(r) => return r,
    };
    blocking(move || match query::instant(&state.db, &query, t, &state.limits.query) {
        Ok(v) => value_response(&v),
        Err(e) => query_error(e),
    })
    .await
}

pub async fn range(S(state): S<Arc<State>>, RawQuery(q): RawQuery, body: Bytes) -> Response {
    let p = Params::parse(q.as_deref(), &body);
    let Some(query) = p.get("query").map(str::to_string) else {
        return bad("invalid parameter \"query\": query must not be empty".into());
    };
    let (start, end) = match (p.get("start"), p.get("end")) {
        (Some(s), Some(e)) => match (parse_time(s), parse_time(e)) {
            (Ok(s), Ok(e)) => (s, e),
            (Err(m), _) => return bad(format!("invalid parameter \"start\": {m}")),
            (_, Err(m)) => return bad(format!("invalid parameter \"end\": {m}")),
        },
        (None, _) => return bad("invalid parameter \"start\": missing".into()),
        (_, None) => return bad("invalid parameter \"end\": missing".into()),
    };
    let step = match p.get("step").map(parse_duration) {
        Some(Ok(s)) => s,
        Some(Err(m)) => return bad(format!("invalid parameter \"step\": {m}")),
        None => return bad("invalid parameter \"step\": missing".into()),
    };
    if let Err(e) = query::check_range(start, end, step) {
        return query_error(e);
    }
    blocking(move || match query::range(&state.db, &query, start, end, step, &state.limits.query) {
        Ok(v) => value_response(&v),
        Err(e) => query_error(e),
    })
    .await
}

pub async fn series(S(state): S<Arc<State>>, RawQuery(q): RawQuery, body: Bytes) -> Response {
    let p = Params::parse(q.as_deref(), &body);
    let sets = match matchers(&p) {
        Ok(m) if !m.is_empty() => m,
        Ok(_) => return bad("no match[] parameter provided".into()),
        Err(r) => return r,
    };
    let (start, end) = match (time_param(&p, "start", MIN_TIME), time_param(&p, "end", MAX_TIME)) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    blocking(move || {
        let mut all = std::collections::BTreeSet::new();
        for ms in &sets {
            all.extend(state.db.series(ms, start, end));
        }
        ok(J::Array(all.iter().map(|l| metric(l)).collect()))
    })
    .await
}

pub async fn labels(S(state): S<Arc<State>>, RawQuery(q): RawQuery, body: Bytes) -> Response {
    let p = Params::parse(q.as_deref(), &body);
    label_query(state, p, None).await
}

pub async fn label_values(S(state): S<Arc<State>>, Path(name): Path<String>, RawQuery(q): RawQuery) -> Response {
    let p = Params::parse(q.as_deref(), &[]);
    label_query(state, p, Some(name)).await
}

async fn label_query(state: Arc<State>, p: Params, name: Option<String>) -> Response {
    let sets = match matchers(&p) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let (start, end) = match (time_param(&p, "start", MIN_TIME), time_param(&p, "end", MAX_TIME)) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    blocking(move || {
        let sets = if sets.is_empty() { vec![Vec::new()] } else { sets };
        let mut out = std::collections::BTreeSet::new();
        for ms in &sets {
            match &name {
                None => out.extend(state.db.label_names(ms, start, end)),
                Some(n) => out.extend(state.db.label_values(n, ms, start, end)),
            }
        }
        ok(J::Array(out.into_iter().map(J::String).collect()))
    })
    .await
}

/// Events (string fields) whose labels match, in the time range: `[{metric, events: [[t, text]…]}]`.
pub async fn events(S(state): S<Arc<State>>, RawQuery(q): RawQuery, body: Bytes) -> Response {
    let p = Params::parse(q.as_deref(), &body);
    let sets = match matchers(&p) {
        Ok(m) if !m.is_empty() => m,
        Ok(_) => return bad("no match[] parameter provided".into()),
        Err(r) => return r,
    };
    let now = now_ms();
    let (start, end) = match (time_param(&p, "start", now - 3_600_000), time_param(&p, "end", now)) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    blocking(move || {
        let mut grouped: std::collections::BTreeMap<Labels, Vec<J>> = Default::default();
        for ms in &sets {
            match state.db.events(ms, start, end) {
                Ok(evs) => {
                    for e in evs {
                        grouped.entry(e.labels).or_default().push(json!([e.t as f64 / 1000.0, e.text]));
                    }
                }
                Err(e) => return err(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
            }
        }
        ok(J::Array(grouped.iter().map(|(l, e)| json!({ "metric": metric(l), "events": e })).collect()))
    })
    .await
}
