//! The endpoints Grafana's Prometheus data source calls besides queries and label lookups:
//! `status/buildinfo`, `metadata`, `query_exemplars`, `rules` and `alerts`. Argus keeps no metric
//! metadata or exemplars, so those answer what Prometheus answers when it has none: empty successes,
//! never errors, after checking the parameters Prometheus checks. `rules` and `alerts` answer the rule
//! groups of the rules role in this process ([`RuleSource`]) in Prometheus 2.42's shape, or none
//! where the rules role runs elsewhere. docs/api.md says why each answer is what it is.

use super::envelope::{bad, ok};
use super::openapi::{BuildInfoAnswer, ExemplarsAnswer, MetadataAnswer, QUERY_TAG, ReadErrors, SuccessStatus};
use super::params::{Params, parse_time};
use super::query::time_param;
use argus_store_api::LabelScope;
use axum::Extension;
use axum::extract::State as S;
use axum::response::Response;
use serde_json::{Map, Value as J, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};
use utoipa::ToSchema;

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

/// `/api/v1/rules` (`type`: `alert` or `record`, any case): the rule groups this process evaluates,
/// each rule with its health, last error, last evaluation and, for an alerting rule, its state and
/// pending and firing alerts; a group whose rules the filter removes stays, with no rules, as in
/// Prometheus 2.42. None where the rules role does not run in this process. Grafana loads it with
/// every data source (to expand recording rules) and its alert list reads it.
#[utoipa::path(method(get, post), path = "/api/v1/rules", tag = QUERY_TAG,
    params(("type" = Option<String>, Query, description = "`alert` or `record`", example = "alert")),
    responses((status = 200, description = "The rule groups", body = RuleGroupsAnswer), ReadErrors))]
pub async fn rules(S(state): S<Arc<super::State>>, scope: Scope, p: Params) -> Response {
    let want = match p.get("type").map(str::to_lowercase).as_deref() {
        None | Some("") => None,
        Some("alert") => Some(true),
        Some("record") => Some(false),
        Some(t) => return bad(format!("invalid parameter \"type\": not supported value {t:?}")),
    };
    let groups = confined(state.rule_groups(), scope);
    let groups: Vec<J> = groups
        .iter()
        .map(|g| {
            let rules: Vec<J> =
                g.rules.iter().filter(|r| want.is_none_or(|a| a == r.alerting.is_some())).map(rule_json).collect();
            json!({
                "name": g.name,
                "file": g.file,
                "rules": rules,
                "interval": seconds(g.interval),
                "limit": 0,
                "evaluationTime": seconds(g.evaluation_time),
                "lastEvaluation": rfc3339(g.last_evaluation_ms),
            })
        })
        .collect();
    ok(json!({ "groups": groups }))
}

/// `/api/v1/alerts`: the pending and firing alerts of this process's alerting rules (alertd's
/// alerts, from every source, are under `/api/v2/alerts`).
#[utoipa::path(method(get, post), path = "/api/v1/alerts", tag = QUERY_TAG,
    responses((status = 200, description = "The rules' active alerts", body = ActiveAlertsAnswer), ReadErrors))]
pub async fn alerts(S(state): S<Arc<super::State>>, scope: Scope) -> Response {
    let groups = confined(state.rule_groups(), scope);
    let alerts: Vec<J> = groups
        .iter()
        .flat_map(|g| &g.rules)
        .filter_map(|r| r.alerting.as_ref())
        .flat_map(|a| &a.alerts)
        .map(alert_json)
        .collect();
    ok(json!({ "alerts": alerts }))
}

/// The label scope of a token confined to a share of the series; absent for every other reader.
type Scope = Option<Extension<Arc<LabelScope>>>;

/// What a token confined to `scope` sees of the rule groups: the rules whose own labels are inside
/// the scope, and those with a pending or firing alert inside it; of each rule only the alerts inside
/// the scope, its state taken from them; groups left with no rule are left out.
fn confined(groups: Vec<RuleGroupInfo>, scope: Scope) -> Vec<RuleGroupInfo> {
    let Some(Extension(scope)) = scope else { return groups };
    let inside =
        |labels: &BTreeMap<String, String>| scope.first_outside(|k| labels.get(k).map(String::as_str)).is_none();
    let mut out = Vec::new();
    for mut g in groups {
        g.rules.retain_mut(|r| {
            let own = inside(&r.labels);
            let Some(a) = &mut r.alerting else { return own };
            a.alerts.retain(|al| inside(&al.labels));
            let states = |s: &str| a.alerts.iter().any(|al| al.state == s);
            a.state = if states("firing") {
                "firing"
            } else if states("pending") {
                "pending"
            } else {
                "inactive"
            };
            own || !a.alerts.is_empty()
        });
        if !g.rules.is_empty() {
            out.push(g);
        }
    }
    out
}

// === the rule groups of this process ===

/// The rule groups evaluated in this process, as the rules API shows them.
pub trait RuleSource: Send + Sync {
    /// Every running group, in the order they were loaded, as of its last evaluation.
    fn rule_groups(&self) -> Vec<RuleGroupInfo>;
}

/// One rule group.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleGroupInfo {
    pub name: String,
    pub file: String,
    pub interval: Duration,
    /// Unix milliseconds; None before the first evaluation.
    pub last_evaluation_ms: Option<i64>,
    pub evaluation_time: Duration,
    pub rules: Vec<RuleInfo>,
}

/// One rule of a group.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleInfo {
    /// The alert's name or the recorded series' name.
    pub name: String,
    /// The PromQL expression; answered as Prometheus prints it once parsed.
    pub query: String,
    pub labels: BTreeMap<String, String>,
    /// `ok`, `err` or `unknown` (not evaluated yet).
    pub health: &'static str,
    pub last_error: Option<String>,
    pub last_evaluation_ms: Option<i64>,
    pub evaluation_time: Duration,
    /// None for a recording rule.
    pub alerting: Option<AlertingInfo>,
}

/// What an alerting rule adds.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertingInfo {
    /// `inactive`, `pending` or `firing`.
    pub state: &'static str,
    /// `for`.
    pub duration: Duration,
    pub keep_firing_for: Duration,
    pub annotations: BTreeMap<String, String>,
    /// The pending and firing alerts.
    pub alerts: Vec<AlertInfo>,
}

/// One pending or firing alert of a rule.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertInfo {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// `pending` or `firing`.
    pub state: &'static str,
    pub active_at_ms: i64,
    pub value: f64,
}

fn rule_json(r: &RuleInfo) -> J {
    let mut m = Map::new();
    // Prometheus answers the parsed expression printed back; text that does not parse as written.
    let query =
        argus_store_api::promql::parse_expr(&r.query).map(|e| e.to_string()).unwrap_or_else(|_| r.query.clone());
    if let Some(a) = &r.alerting {
        m.insert("state".into(), json!(a.state));
        m.insert("name".into(), json!(r.name));
        m.insert("query".into(), json!(query));
        m.insert("duration".into(), seconds(a.duration));
        m.insert("keepFiringFor".into(), seconds(a.keep_firing_for));
        m.insert("labels".into(), json!(r.labels));
        m.insert("annotations".into(), json!(a.annotations));
        m.insert("alerts".into(), J::Array(a.alerts.iter().map(alert_json).collect()));
    } else {
        m.insert("name".into(), json!(r.name));
        m.insert("query".into(), json!(query));
        if !r.labels.is_empty() {
            m.insert("labels".into(), json!(r.labels));
        }
    }
    m.insert("health".into(), json!(r.health));
    if let Some(e) = &r.last_error {
        m.insert("lastError".into(), json!(e));
    }
    m.insert("evaluationTime".into(), seconds(r.evaluation_time));
    m.insert("lastEvaluation".into(), json!(rfc3339(r.last_evaluation_ms)));
    m.insert("type".into(), json!(if r.alerting.is_some() { "alerting" } else { "recording" }));
    J::Object(m)
}

fn alert_json(a: &AlertInfo) -> J {
    json!({
        "labels": a.labels,
        "annotations": a.annotations,
        "state": a.state,
        "activeAt": rfc3339(Some(a.active_at_ms)),
        "value": go_float_e(a.value),
    })
}

/// Seconds as Go's JSON writes a float64: whole numbers without a fraction.
fn seconds(d: Duration) -> J {
    if d.subsec_nanos() == 0 { json!(d.as_secs()) } else { json!(d.as_secs_f64()) }
}

/// Go's `time.Time` in JSON (RFC 3339, trailing zeros of the fraction dropped); Go's zero time for
/// never.
fn rfc3339(ms: Option<i64>) -> String {
    let Some(ms) = ms else { return "0001-01-01T00:00:00Z".into() };
    // humantime formats years 1970 to 9999 only.
    let ms = ms.clamp(0, 253_402_300_799_999) as u64;
    let s = humantime::format_rfc3339_nanos(UNIX_EPOCH + Duration::from_millis(ms)).to_string();
    let s = s.trim_end_matches('Z');
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { s };
    format!("{s}Z")
}

/// A value as Prometheus' API writes an alert's: Go's `strconv.FormatFloat(v, 'e', -1, 64)`.
fn go_float_e(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let s = format!("{v:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs())
}

// === schemas of the answers (built by hand above) ===

/// Prometheus' success envelope around the rule groups.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct RuleGroupsAnswer {
    status: SuccessStatus,
    data: PromRuleGroups,
    #[schema(nullable = false)]
    warnings: Option<Vec<String>>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct PromRuleGroups {
    groups: Vec<PromRuleGroup>,
}

/// A rule group. Times are RFC 3339 (`0001-01-01T00:00:00Z` before the first evaluation), durations
/// seconds.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct PromRuleGroup {
    name: String,
    file: String,
    rules: Vec<PromRule>,
    interval: f64,
    /// Always 0: Argus' rule groups take no `limit`.
    limit: u64,
    evaluation_time: f64,
    last_evaluation: String,
}

/// An alerting or recording rule; `state`, `duration`, `keepFiringFor`, `annotations` and `alerts`
/// for an alerting rule only, `labels` for a recording rule only when it has some.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct PromRule {
    /// `inactive`, `pending` or `firing`.
    #[schema(nullable = false)]
    state: Option<String>,
    name: String,
    query: String,
    #[schema(nullable = false)]
    duration: Option<f64>,
    #[schema(nullable = false)]
    keep_firing_for: Option<f64>,
    #[schema(nullable = false)]
    labels: Option<BTreeMap<String, String>>,
    #[schema(nullable = false)]
    annotations: Option<BTreeMap<String, String>>,
    #[schema(nullable = false)]
    alerts: Option<Vec<PromAlert>>,
    /// `ok`, `err` or `unknown`.
    health: String,
    #[schema(nullable = false)]
    last_error: Option<String>,
    evaluation_time: f64,
    last_evaluation: String,
    /// `alerting` or `recording`.
    #[serde(rename = "type")]
    kind: String,
}

/// A pending or firing alert of a rule.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct PromAlert {
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    /// `pending` or `firing`.
    state: String,
    active_at: String,
    /// The value at the last evaluation, as Go's `%e` with the shortest digits (`9.1e+01`).
    value: String,
}

/// Prometheus' success envelope around the rules' active alerts.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ActiveAlertsAnswer {
    status: SuccessStatus,
    data: PromAlerts,
    #[schema(nullable = false)]
    warnings: Option<Vec<String>>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct PromAlerts {
    alerts: Vec<PromAlert>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_times_as_prometheus_writes_them() {
        let got: Vec<String> = [1.0, 91.0, 0.0, -2.5, 1.5e-7, 1e21, f64::NAN, f64::INFINITY, f64::NEG_INFINITY]
            .into_iter()
            .map(go_float_e)
            .collect();
        assert_eq!(got, ["1e+00", "9.1e+01", "0e+00", "-2.5e+00", "1.5e-07", "1e+21", "NaN", "+Inf", "-Inf"]);
        assert_eq!(rfc3339(None), "0001-01-01T00:00:00Z");
        assert_eq!(rfc3339(Some(1_700_000_000_000)), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(Some(1_700_000_000_150)), "2023-11-14T22:13:20.15Z");
        assert_eq!(seconds(Duration::from_secs(60)), json!(60));
        assert_eq!(seconds(Duration::from_millis(1500)), json!(1.5));
    }
}
