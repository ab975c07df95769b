//! `GET /api/v1/anomalies`: the findings of every rule's last evaluation, most anomalous first, in
//! Prometheus' success envelope. Parameters: `rule` (one rule), `min_score` (default 1: only
//! anomalies; 0 lists every series), `limit` (default 100).

use super::{Board, Finding};
use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize)]
struct Params {
    rule: Option<String>,
    min_score: Option<String>,
    limit: Option<String>,
}

/// The analyzer's part of `/api/openapi.json`. Adding an endpoint: annotate its handler with
/// `#[utoipa::path]` and name it in `paths(...)`.
pub fn document() -> utoipa::openapi::OpenApi {
    #[derive(utoipa::OpenApi)]
    #[openapi(
        paths(anomalies, super::forecasts::api::forecasts, super::forecasts::api::capacity, super::forecasts::api::keda),
        tags((name = TAG, description = "The analyzer: anomaly scores, forecasts and capacity recommendations")),
    )]
    struct AnalyzerApi;
    <AnalyzerApi as utoipa::OpenApi>::openapi()
}

const TAG: &str = "analyzer";

/// `data` of `/api/v1/anomalies`.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // For its schema: the answer is built with `json!`.
struct Anomalies {
    /// `success`.
    status: String,
    /// Most anomalous first.
    data: Vec<Finding>,
}

pub fn router(board: Arc<Board>) -> axum::Router {
    axum::Router::new().route("/api/v1/anomalies", get(anomalies)).with_state(board)
}

fn bad(msg: String) -> Response {
    let body = serde_json::json!({"status": "error", "errorType": "bad_data", "error": msg});
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

/// The findings of every rule's last evaluation, most anomalous first.
#[utoipa::path(get, path = "/api/v1/anomalies", tag = TAG,
    params(("rule" = Option<String>, Query, description = "Only this rule's findings"),
        ("min_score" = Option<String>, Query, description = "Only scores above this (default 1: anomalies; 0 lists every series)", example = "1"),
        ("limit" = Option<String>, Query, description = "At most this many rows (default 100)", example = "100")),
    responses((status = 200, description = "Findings", body = Anomalies),
        (status = 400, description = "A malformed parameter, or an unknown rule (`bad_data`)", body = argus_store_api::openapi::PromError)))]
async fn anomalies(State(board): State<Arc<Board>>, Query(p): Query<Params>) -> Response {
    let min_score = match p.min_score.as_deref().map(str::parse::<f64>) {
        None => 1.0,
        Some(Ok(v)) if v.is_finite() => v,
        Some(_) => return bad(format!("min_score: {:?} is not a number", p.min_score.unwrap_or_default())),
    };
    let limit = match p.limit.as_deref().map(str::parse::<usize>) {
        None => 100,
        Some(Ok(v)) => v,
        Some(Err(_)) => return bad(format!("limit: {:?} is not a count", p.limit.unwrap_or_default())),
    };
    let by_rule = board.by_rule.read();
    if let Some(r) = &p.rule
        && !by_rule.contains_key(r)
    {
        return bad(format!("rule: no rule named {r:?} has been evaluated"));
    }
    let mut rows: Vec<&Finding> = by_rule
        .iter()
        .filter(|(name, _)| p.rule.as_ref().is_none_or(|r| r == *name))
        .flat_map(|(_, f)| f.iter())
        .filter(|f| f.score > min_score || (min_score <= 0.0 && f.score >= min_score))
        .collect();
    rows.sort_by(|a, b| b.score.total_cmp(&a.score));
    rows.truncate(limit);
    Json(serde_json::json!({"status": "success", "data": rows})).into_response()
}
