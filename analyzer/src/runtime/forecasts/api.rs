//! The forecasting API:
//!
//! - `GET /api/v1/forecasts`: every series' latest forecast with its whole trajectory, in Prometheus'
//!   success envelope. Parameters: `metric` (the forecasts' `metric` label), `target`, `match` (a PromQL
//!   selector such as `{cluster="a",host=~"gpu-.*"}` the series' labels must satisfy), `limit` (default 1000).
//! - `GET /api/v1/capacity`: the latest recommendation of every pool ([`CapacityReport`]).
//! - `GET /api/v1/capacity/keda`: the same for KEDA's `metrics-api` scaler ([`KedaMetrics`]).

use super::{ForecastBoard, ForecastEntry};
use crate::capacity::{CapacityReport, KedaMetrics};
use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use promql_parser::label::Matcher;
use promql_parser::parser::Expr;
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize)]
pub(crate) struct Params {
    metric: Option<String>,
    target: Option<String>,
    #[serde(rename = "match")]
    matcher: Option<String>,
    limit: Option<String>,
}

pub fn router(board: Arc<ForecastBoard>) -> axum::Router {
    axum::Router::new()
        .route("/api/v1/forecasts", get(forecasts))
        .route("/api/v1/capacity", get(capacity))
        .route("/api/v1/capacity/keda", get(keda))
        .with_state(board)
}

fn bad(msg: String) -> Response {
    let body = serde_json::json!({"status": "error", "errorType": "bad_data", "error": msg});
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

/// The label matchers of a selector like `{a="b"}` (a metric name in it matches `metric`).
fn matchers(selector: &str) -> Result<Vec<Matcher>, String> {
    let expr = argus_store_api::promql::parse_expr(selector).map_err(|e| format!("match: not a selector: {e}"))?;
    let Expr::VectorSelector(vs) = expr else {
        return Err(format!("match: {selector:?} is not a series selector"));
    };
    if !vs.matchers.or_matchers.is_empty() {
        return Err("match: `or` in a selector is not supported here".into());
    }
    let mut out = vs.matchers.matchers;
    if let Some(name) = vs.name {
        out.push(Matcher::new(promql_parser::label::MatchOp::Equal, "metric", &name));
    }
    Ok(out)
}

fn selected(e: &ForecastEntry, m: &Matcher) -> bool {
    let value = match m.name.as_str() {
        "metric" | "__name__" => e.metric.as_str(),
        name => e.labels.get(name).map_or("", String::as_str),
    };
    m.is_match(value)
}

/// `data` of `/api/v1/forecasts`.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // For its schema: the answer is built with `json!`.
pub(crate) struct Forecasts {
    /// `success`.
    status: String,
    data: Vec<ForecastEntry>,
}

/// Every series' latest forecast with its whole trajectory.
#[utoipa::path(get, path = "/api/v1/forecasts", tag = "analyzer",
    params(("metric" = Option<String>, Query, description = "Only forecasts with this `metric` label"),
        ("target" = Option<String>, Query, description = "Only this forecast target's series"),
        ("match" = Option<String>, Query, description = "A series selector the forecast's labels must satisfy, e.g. `{cluster=\"a\"}`"),
        ("limit" = Option<String>, Query, description = "At most this many series (default 1000)", example = "1000")),
    responses((status = 200, description = "Forecasts", body = Forecasts),
        (status = 400, description = "A malformed parameter, or an unknown target (`bad_data`)", body = argus_store_api::openapi::PromError)))]
pub(crate) async fn forecasts(State(board): State<Arc<ForecastBoard>>, Query(p): Query<Params>) -> Response {
    let limit = match p.limit.as_deref().map(str::parse::<usize>) {
        None => 1000,
        Some(Ok(v)) => v,
        Some(Err(_)) => return bad(format!("limit: {:?} is not a count", p.limit.unwrap_or_default())),
    };
    let ms = match p.matcher.as_deref().map(matchers).transpose() {
        Ok(ms) => ms.unwrap_or_default(),
        Err(e) => return bad(e),
    };
    let by_target = board.by_target.read();
    if let Some(t) = &p.target
        && !by_target.contains_key(t)
    {
        return bad(format!("target: no forecast target named {t:?} has been forecast"));
    }
    let rows: Vec<&ForecastEntry> = by_target
        .iter()
        .filter(|(name, _)| p.target.as_ref().is_none_or(|t| t == *name))
        .flat_map(|(_, e)| e.iter())
        .filter(|e| p.metric.as_ref().is_none_or(|m| *m == e.metric))
        .filter(|e| ms.iter().all(|m| selected(e, m)))
        .take(limit)
        .collect();
    Json(serde_json::json!({"status": "success", "data": rows})).into_response()
}

/// The latest capacity recommendation of every pool.
#[utoipa::path(get, path = "/api/v1/capacity", tag = "analyzer",
    responses((status = 200, description = "Recommendations", body = CapacityReport)))]
pub(crate) async fn capacity(State(board): State<Arc<ForecastBoard>>) -> Response {
    let data = board.capacity.read().values().cloned().collect();
    Json(CapacityReport::new(data)).into_response()
}

/// The same recommendations for KEDA's `metrics-api` scaler (`valueLocation: pools.POOL.recommended`).
#[utoipa::path(get, path = "/api/v1/capacity/keda", tag = "analyzer",
    responses((status = 200, description = "Per pool: recommended, desired and current capacity", body = KedaMetrics)))]
pub(crate) async fn keda(State(board): State<Arc<ForecastBoard>>) -> Response {
    Json(KedaMetrics::from_recommendations(board.capacity.read().values())).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::{CapacityPlanner, ForecastPeak, Outlook, PlanInput, PlannerConfig};
    use crate::forecast::Forecast;

    async fn json(r: Response) -> serde_json::Value {
        assert_eq!(r.status(), StatusCode::OK);
        serde_json::from_slice(&axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap()).unwrap()
    }

    /// `GET /api/v1/capacity` gives each pool's recommendation with its explanation, the forecast named;
    /// `GET /api/v1/capacity/keda` stays as it was.
    #[tokio::test]
    async fn capacity_entries_carry_their_explanation_and_keda_is_unchanged() {
        let f = Forecast { mean: vec![58.0, 60.0], lower: vec![50.0, 52.5], upper: vec![62.0, 64.4] };
        let mut planner = CapacityPlanner::new("vc1", PlannerConfig::default()).unwrap();
        let t = 1_764_500_040_000;
        let mut rec = planner.plan(&PlanInput {
            timestamp_ms: t,
            current: 80,
            demand: Outlook::from_forecast(60.1, &f),
            low_priority: None,
        });
        rec.explain_forecast(ForecastPeak::from_forecast(&f, t, 60_000, "ets"), None);
        let board = Arc::new(ForecastBoard::default());
        board.capacity.write().insert("vc1".into(), rec);

        let v = json(capacity(State(board.clone())).await.into_response()).await;
        expect_test::expect![[r#"
            {
              "data": [
                {
                  "action": "scale_up",
                  "base": 72,
                  "current": 80,
                  "demand": 60.1,
                  "desired": 90,
                  "explanation": {
                    "arithmetic": "peak = max(now 60.1, forecast upper 64.4) = 64.4; ceil(64.4 / 0.9) = 72 for the peak; no low-priority split, all 64.4 low priority within 1 - 0.2: ceil(64.4 / (0.9 × 0.8)) = 90 → reservation 18; wanted 72 + 18 = 90; 90 > standing 80, no change yet → 90",
                    "clamped": null,
                    "critical_peak": null,
                    "demand_now": 60.1,
                    "forecast": {
                      "at_ms": 1764500160000,
                      "horizon_seconds": 120.0,
                      "lower": 52.5,
                      "mean": 60.0,
                      "model": "ets",
                      "upper": 64.4
                    },
                    "last_change_ms": 1764500040000,
                    "low_priority_capacity": 90,
                    "low_priority_forecast": null,
                    "low_priority_peak": 64.4,
                    "low_priority_split": false,
                    "max_capacity": null,
                    "min_capacity": 0,
                    "next_scale_down_ms": 1764500640000,
                    "next_scale_up_ms": 1764500100000,
                    "peak": 64.4,
                    "previous": 80,
                    "reserve_fraction": 0.2,
                    "rule": "scale_up",
                    "scale_down_below": 72.0,
                    "scale_down_cooldown_seconds": 600.0,
                    "scale_down_margin": 0.1,
                    "scale_up_cooldown_seconds": 60.0,
                    "sentence": "Recommend 90, up from 80: peak demand 64.4 at 90% target utilisation needs 72, and 18 more keep 20% of it free for critical work (no low-priority split: all demand counts as low priority)",
                    "target_utilization": 0.9,
                    "wanted": 90,
                    "window_max": 90
                  },
                  "forecast_upper": 64.4,
                  "pool": "vc1",
                  "recommended": 90,
                  "reservation": 18,
                  "timestamp_ms": 1764500040000
                }
              ],
              "status": "success"
            }"#]]
        .assert_eq(&serde_json::to_string_pretty(&v).unwrap());

        let v = json(keda(State(board)).await.into_response()).await;
        assert_eq!(v, serde_json::json!({"pools": {"vc1": {"recommended": 90, "desired": 90, "current": 80}}}));
    }
}
