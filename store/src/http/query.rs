//! The Prometheus HTTP query API (`/api/v1/query`, `query_range`, `series`, `labels`,
//! `label/{name}/values`) and `/api/v1/events`, with Prometheus' response and error envelope.

use super::State;
use super::envelope::{TRUNCATED, bad, err, ok, ok_warn, query_error, value_owned};
use super::openapi::{EventsAnswer, NamesAnswer, QUERY_TAG, QueryAnswer, QueryErrors, ReadErrors, SeriesAnswer};
use super::params::{Params, parse_duration, parse_limit, parse_selector, parse_time, unescape_label_name};
use crate::db::now_ms;
use crate::query::{self, QueryLimits};
use argus_model::{Labels, Matcher};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State as S};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value as J, json};
use std::sync::Arc;
use std::time::Duration;

/// Prometheus' smallest and largest times, used when `start`/`end` are absent.
const MIN_TIME: i64 = -9_223_372_036_854_775 / 1000 * 1000;
const MAX_TIME: i64 = 9_223_372_036_854_775 / 1000 * 1000;

fn metric(l: &Labels) -> J {
    let mut m = Map::new();
    for x in l {
        m.insert(x.name.clone(), J::String(x.value.clone()));
    }
    J::Object(m)
}

pub(super) fn time_param(p: &Params, name: &str, default: i64) -> Result<i64, Response> {
    match p.get(name) {
        None | Some("") => Ok(default),
        Some(s) => parse_time(s).map_err(|e| bad(format!("invalid parameter \"{name}\": {e}"))),
    }
}

fn matchers(p: &Params) -> Result<Vec<Vec<Matcher>>, Response> {
    p.all("match[]").map(|s| parse_selector(s).map_err(bad)).collect()
}

fn limit(p: &Params) -> Result<Option<usize>, Response> {
    parse_limit(p.get("limit")).map_err(|e| bad(format!("invalid parameter \"limit\": {e}")))
}

/// A list cut to `limit`, with Prometheus' warning when something was cut.
fn limited(mut items: Vec<J>, limit: Option<usize>) -> Response {
    match limit {
        Some(n) if items.len() > n => {
            items.truncate(n);
            ok_warn(J::Array(items), &[TRUNCATED])
        }
        _ => ok(J::Array(items)),
    }
}

/// The server's query limits, with the time limit lowered to the request's `timeout` if that is shorter
/// (Grafana sends `timeout=2m` with every query); a longer one does not raise it.
fn query_limits(state: &State, p: &Params) -> Result<QueryLimits, Response> {
    let mut limits = state.limits.query.clone();
    if let Some(s) = p.get("timeout").filter(|s| !s.is_empty()) {
        let ms = parse_duration(s).map_err(|e| bad(format!("invalid parameter \"timeout\": {e}")))?;
        limits.timeout = limits.timeout.min(Duration::from_millis(ms.max(0) as u64));
    }
    Ok(limits)
}

/// The share of a range query's series the caller wants: Argus' `argus_shard=I/N` and
/// `argus_shard_by=l1,l2` (the labels whose values are hashed, as `--shard` splits the analyzer's work).
/// Absent: every series.
fn shard_param(p: &Params) -> Result<Option<(argus_model::Shard, Vec<String>)>, Response> {
    let Some(s) = p.get("argus_shard").filter(|s| !s.is_empty()) else {
        return match p.get("argus_shard_by").filter(|s| !s.is_empty()) {
            Some(_) => Err(bad("invalid parameter \"argus_shard_by\": given without argus_shard".into())),
            None => Ok(None),
        };
    };
    let shard = argus_model::Shard::parse(s).map_err(|e| bad(format!("invalid parameter \"argus_shard\": {e}")))?;
    let by: Vec<String> =
        p.get("argus_shard_by").unwrap_or("").split(',').filter(|l| !l.is_empty()).map(String::from).collect();
    if let Some(l) = by.iter().find(|l| !argus_model::valid_label_name(l)) {
        return Err(bad(format!("invalid parameter \"argus_shard_by\": {l:?} is not a label name")));
    }
    Ok(Some((shard, by)))
}

fn query_text(p: &Params) -> Result<String, Response> {
    match p.get("query") {
        Some(q) => Ok(q.to_string()),
        None => Err(bad("invalid parameter \"query\": query must not be empty".into())),
    }
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

/// `/api/v1/query`: `query`, `time` (default now), `timeout`.
#[utoipa::path(method(get, post), path = "/api/v1/query", tag = QUERY_TAG,
    params(("query" = String, Query, description = "A PromQL expression", example = "up"), ("time" = Option<String>, Query, description = "Evaluation time: Unix seconds (with an optional fraction) or RFC 3339; default now", example = "1700000000"), ("timeout" = Option<String>, Query, description = "Lowers the server's query timeout for this query: seconds or a Prometheus duration", example = "30s")),
    responses((status = 200, description = "The query's value", body = QueryAnswer), QueryErrors))]
pub async fn instant(S(state): S<Arc<State>>, p: Params) -> Response {
    let (query, t, limits) = match (query_text(&p), time_param(&p, "time", now_ms()), query_limits(&state, &p)) {
        (Ok(q), Ok(t), Ok(l)) => (q, t, l),
        (Err(r), _, _) | (_, Err(r), _) | (_, _, Err(r)) => return r,
    };
    blocking(move || match query::instant_held(&state.db, &query, t, &limits) {
        Ok((v, memory)) => value_owned(v, memory),
        Err(e) => query_error(e),
    })
    .await
}

/// `/api/v1/query_range`: `query`, `start`, `end`, `step` (all required), `timeout`.
#[utoipa::path(method(get, post), path = "/api/v1/query_range", tag = QUERY_TAG,
    params(("query" = String, Query, description = "A PromQL expression", example = "up"),
        ("start" = String, Query, description = "Start: Unix seconds or RFC 3339", example = "1700000000"),
        ("end" = String, Query, description = "End: Unix seconds or RFC 3339", example = "1700000600"),
        ("step" = String, Query, description = "Resolution: seconds or a Prometheus duration; at most 11,000 steps", example = "15s"),
        ("timeout" = Option<String>, Query, description = "Lowers the server's query timeout for this query: seconds or a Prometheus duration", example = "30s"),
        ("argus_shard" = Option<String>, Query, description = "Argus' extension: answer only the series share I of N owns (`I/N`, 0-based), as `--shard I/N` splits the analyzer's work", example = "0/2"),
        ("argus_shard_by" = Option<String>, Query, description = "With argus_shard: the labels whose values decide the share, comma-separated (absent labels count as empty)", example = "cluster,host")),
    responses((status = 200, description = "A matrix", body = QueryAnswer), QueryErrors))]
pub async fn range(S(state): S<Arc<State>>, p: Params) -> Response {
    let (query, limits, shard) = match (query_text(&p), query_limits(&state, &p), shard_param(&p)) {
        (Ok(q), Ok(l), Ok(s)) => (q, l, s),
        (Err(r), _, _) | (_, Err(r), _) | (_, _, Err(r)) => return r,
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
    blocking(move || match query::range_held(&state.db, &query, start, end, step, &limits) {
        Ok((mut v, memory)) => {
            if let (Some((shard, by)), query::Value::Matrix(m)) = (&shard, &mut v) {
                m.retain(|(labels, _)| shard.owns_series(labels, by));
            }
            value_owned(v, memory)
        }
        Err(e) => query_error(e),
    })
    .await
}

/// `/api/v1/series`: `match[]` (at least one), `start`, `end`, `limit`.
#[utoipa::path(method(get, post), path = "/api/v1/series", tag = QUERY_TAG,
    params(("match[]" = Vec<String>, Query, description = "Series selector; repeat for several", example = json!(["up"])), ("start" = Option<String>, Query, description = "Start (default: all stored time): Unix seconds or RFC 3339", example = "1700000000"), ("end" = Option<String>, Query, description = "End (default: all stored time): Unix seconds or RFC 3339", example = "1700000000"), ("limit" = Option<String>, Query, description = "At most this many entries; absent or 0: no limit", example = "100")),
    responses((status = 200, description = "Matching series", body = SeriesAnswer), ReadErrors))]
pub async fn series(S(state): S<Arc<State>>, p: Params) -> Response {
    let sets = match matchers(&p) {
        Ok(m) if !m.is_empty() => m,
        Ok(_) => return bad("no match[] parameter provided".into()),
        Err(r) => return r,
    };
    let (start, end, limit) = match (time_param(&p, "start", MIN_TIME), time_param(&p, "end", MAX_TIME), limit(&p)) {
        (Ok(s), Ok(e), Ok(l)) => (s, e, l),
        (Err(r), _, _) | (_, Err(r), _) | (_, _, Err(r)) => return r,
    };
    blocking(move || {
        let mut all = std::collections::BTreeSet::new();
        for ms in &sets {
            match state.db.series(ms, start, end) {
                Ok(s) => all.extend(s),
                Err(e) => return err(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
            }
        }
        limited(all.iter().map(|l| metric(l)).collect(), limit)
    })
    .await
}

/// `/api/v1/labels`: `match[]` (optional), `start`, `end`, `limit`.
#[utoipa::path(method(get, post), path = "/api/v1/labels", tag = QUERY_TAG,
    params(("match[]" = Option<Vec<String>>, Query, description = "Series selector; repeat for several (optional)", example = json!(["up"])), ("start" = Option<String>, Query, description = "Start (default: all stored time): Unix seconds or RFC 3339", example = "1700000000"), ("end" = Option<String>, Query, description = "End (default: all stored time): Unix seconds or RFC 3339", example = "1700000000"), ("limit" = Option<String>, Query, description = "At most this many entries; absent or 0: no limit", example = "100")),
    responses((status = 200, description = "Label names, sorted", body = NamesAnswer), ReadErrors))]
pub async fn labels(S(state): S<Arc<State>>, p: Params) -> Response {
    label_query(state, p, None).await
}

/// `/api/v1/label/{name}/values`, GET or form POST, with the parameters of `labels`.
#[utoipa::path(method(get, post), path = "/api/v1/label/{name}/values", tag = QUERY_TAG,
    params(("name" = String, Path, description = "Label name, or its `U__` escape", example = "job"),
        ("match[]" = Option<Vec<String>>, Query, description = "Series selector; repeat for several (optional)", example = json!(["up"])), ("start" = Option<String>, Query, description = "Start (default: all stored time): Unix seconds or RFC 3339", example = "1700000000"), ("end" = Option<String>, Query, description = "End (default: all stored time): Unix seconds or RFC 3339", example = "1700000000"), ("limit" = Option<String>, Query, description = "At most this many entries; absent or 0: no limit", example = "100")),
    responses((status = 200, description = "The label's values, sorted", body = NamesAnswer), ReadErrors))]
pub async fn label_values(S(state): S<Arc<State>>, name: Result<Path<String>, PathRejection>, p: Params) -> Response {
    match name {
        Ok(Path(name)) => label_query(state, p, Some(unescape_label_name(&name))).await,
        Err(e) => bad(format!("invalid label name: {}", e.body_text())),
    }
}

async fn label_query(state: Arc<State>, p: Params, name: Option<String>) -> Response {
    let sets = match matchers(&p) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let (start, end, limit) = match (time_param(&p, "start", MIN_TIME), time_param(&p, "end", MAX_TIME), limit(&p)) {
        (Ok(s), Ok(e), Ok(l)) => (s, e, l),
        (Err(r), _, _) | (_, Err(r), _) | (_, _, Err(r)) => return r,
    };
    blocking(move || {
        let sets = if sets.is_empty() { vec![Vec::new()] } else { sets };
        let mut out = std::collections::BTreeSet::new();
        for ms in &sets {
            let found = match &name {
                None => state.db.label_names(ms, start, end),
                Some(n) => state.db.label_values(n, ms, start, end),
            };
            match found {
                Ok(f) => out.extend(f),
                Err(e) => return err(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
            }
        }
        limited(out.into_iter().map(J::String).collect(), limit)
    })
    .await
}

/// Events (string fields) whose labels match, in the time range: `[{metric, events: [[t, text]…]}]`.
#[utoipa::path(method(get, post), path = "/api/v1/events", tag = QUERY_TAG,
    params(("match[]" = Vec<String>, Query, description = "Series selector; repeat for several", example = json!(["up"])), ("start" = Option<String>, Query, description = "Start (default: an hour ago): Unix seconds or RFC 3339", example = "1700000000"), ("end" = Option<String>, Query, description = "End (default: now): Unix seconds or RFC 3339", example = "1700000000")),
    responses((status = 200, description = "Events by series", body = EventsAnswer), ReadErrors))]
pub async fn events(S(state): S<Arc<State>>, p: Params) -> Response {
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
