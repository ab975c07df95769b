//! The endpoints Grafana's Prometheus data source calls besides queries and label lookups:
//! `status/buildinfo`, `metadata`, `query_exemplars`, `rules` and `alerts`. Argus keeps no metric
//! metadata, exemplars, rules or alerts, so those answer what Prometheus answers when it has none:
//! empty successes, never errors, after checking the parameters Prometheus checks. docs/api.md says why
//! each answer is what it is.

use super::envelope::{bad, ok};
use super::openapi::{
    AlertsAnswer, BuildInfoAnswer, ExemplarsAnswer, MetadataAnswer, QUERY_TAG, ReadErrors, RulesAnswer,
};
use super::params::{Params, parse_time};
use super::query::time_param;
use axum::response::Response;
use serde_json::{Value as J, json};

/// The Prometheus release whose query API Argus follows (its PromQL results are compared with 2.42's).
/// Grafana reads `version` as a Prometheus version: it picks the closest entry of its own list
/// (`PromFlavorVersions.ts`) when it auto-detects the version, and enables the labels-match API from 2.24.
pub const PROMETHEUS_API_VERSION: &str = "2.42.0";

/// `/api/v1/status/buildinfo`. No `features` field: Grafana's `heuristics.go` calls any server that lists
/// features Mimir and turns its ruler API on, which Argus does not have. Argus' own version is in
/// `argusVersion` (a field Prometheus clients ignore).
#[utoipa::path(method(get, post), path = "/api/v1/status/buildinfo", tag = QUERY_TAG,
    responses((status = 200, description = "Build information", body = BuildInfoAnswer), ReadErrors))]
pub async fn buildinfo() -> Response {
    ok(json!({
        "version": PROMETHEUS_API_VERSION,
        "revision": "",
        "branch": "",
        "buildUser": "",
        "buildDate": "",
        "goVersion": "",
        "argusVersion": env!("CARGO_PKG_VERSION"),
    }))
}

/// `/api/v1/metadata` (`metric`, `limit`, `limit_per_metric`): `{}`, because no write API Argus takes
/// carries a metric's type, help or unit (remote-write metadata is dropped at decode). A type guessed
/// from the name would be worse than none: Grafana's `query_hints.ts` turns metadata type "counter" into
/// "Selected metric *is* a counter". VictoriaMetrics answers `{}` for the same reason.
#[utoipa::path(method(get, post), path = "/api/v1/metadata", tag = QUERY_TAG,
    params(("metric" = Option<String>, Query, description = "A metric name"),
        ("limit" = Option<String>, Query, description = "An integer", example = "10"),
        ("limit_per_metric" = Option<String>, Query, description = "An integer", example = "1")),
    responses((status = 200, description = "No metadata", body = MetadataAnswer), ReadErrors))]
pub async fn metadata(p: Params) -> Response {
    for name in ["limit", "limit_per_metric"] {
        if let Some(s) = p.get(name).filter(|s| !s.is_empty())
            && s.parse::<i64>().is_err()
        {
            return bad(format!("invalid parameter \"{name}\": cannot parse {s:?} to a valid number"));
        }
    }
    ok(json!({}))
}

/// `/api/v1/query_exemplars` (`query`, `start`, `end`): `[]` once the query parses. Grafana probes it
/// with `query=test` when a data source loads and shows exemplar toggles only on success.
#[utoipa::path(method(get, post), path = "/api/v1/query_exemplars", tag = QUERY_TAG,
    params(("query" = String, Query, description = "A PromQL expression", example = "up"), ("start" = Option<String>, Query, description = "Start: Unix seconds or RFC 3339", example = "1700000000"), ("end" = Option<String>, Query, description = "End: Unix seconds or RFC 3339", example = "1700000000")),
    responses((status = 200, description = "No exemplars", body = ExemplarsAnswer), ReadErrors))]
pub async fn query_exemplars(p: Params) -> Response {
    let query = p.get("query").unwrap_or("");
    if let Err(e) = crate::query::parse_expr(query) {
        return bad(format!("invalid parameter \"query\": {}", crate::query::parse_error(query, &e)));
    }
    for name in ["start", "end"] {
        if let Err(r) = time_param(&p, name, 0) {
            return r;
        }
    }
    if let (Some(s), Some(e)) = (p.get("start"), p.get("end"))
        && let (Ok(s), Ok(e)) = (parse_time(s), parse_time(e))
        && e < s
    {
        return bad("invalid parameter \"end\": end timestamp must not be before start time".into());
    }
    ok(J::Array(Vec::new()))
}

/// `/api/v1/rules`: no rule groups. Grafana loads it with every data source to expand recording rules.
#[utoipa::path(method(get, post), path = "/api/v1/rules", tag = QUERY_TAG,
    params(("type" = Option<String>, Query, description = "`alert` or `record`", example = "alert")),
    responses((status = 200, description = "No rule groups", body = RulesAnswer), ReadErrors))]
pub async fn rules(p: Params) -> Response {
    match p.get("type") {
        None | Some("" | "alert" | "record") => ok(json!({ "groups": [] })),
        Some(t) => bad(format!("invalid parameter \"type\": {t:?} is not \"alert\" or \"record\"")),
    }
}

/// `/api/v1/alerts`: no active alerts (alertd, not the store, will own alerting).
#[utoipa::path(method(get, post), path = "/api/v1/alerts", tag = QUERY_TAG,
    responses((status = 200, description = "No alerts", body = AlertsAnswer), ReadErrors))]
pub async fn alerts() -> Response {
    ok(json!({ "alerts": [] }))
}
