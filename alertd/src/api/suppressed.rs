//! `GET /api/v1/suppressed`: the alerts held back from notification and every reason that held them
//! ("why wasn't I paged"), in the Prometheus API's envelope like the history API.

use super::history::{Success, V1Error, ok, span};
use super::openapi::{HistoryErrors, SUPPRESSED_TAG};
use super::{ApiError, Params, State};
use crate::alert::Status;
use crate::suppressed::{HeldRoute, Reason, Record};
use crate::time::Timestamp;
use argus_model::{MatchOp, Matcher};
use axum::Json;
use axum::extract::{Query, State as Ext};
use serde::Serialize;
use std::collections::BTreeMap;

/// One held-back alert.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SuppressedAlert {
    pub labels: BTreeMap<String, String>,
    pub fingerprint: String,
    /// `firing`, or `resolved` (also for an alert alertd no longer holds).
    #[schema(value_type = String)]
    pub state: &'static str,
    /// Whether a reason holds it back now (one has no `endedAt`).
    pub held: bool,
    /// Every reason that held it in the range asked for, oldest first.
    pub reasons: Vec<HeldReason>,
}

/// One reason an alert was held back, where, and for how long.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HeldReason {
    #[serde(flatten)]
    pub reason: Reason,
    #[serde(flatten)]
    pub route: HeldRoute,
    pub since: Timestamp,
    /// When the hold is expected to end (a silence's end, the group's next flush, the next
    /// delivery attempt); absent when only a change can end it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<Timestamp>,
    /// When it ended: the alert was let through, the reason went away, or the alert resolved.
    /// Absent while it holds.
    #[serde(rename = "endedAt", skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
}

impl From<Record> for HeldReason {
    fn from(r: Record) -> Self {
        HeldReason { reason: r.reason, route: r.route, since: r.since, until: r.until, ended_at: r.ended }
    }
}

/// The matchers of one `match[]` selector, in Prometheus' syntax (`{alertname="GpuDown", host=~"n.*"}`).
/// A name before the braces matches `alertname`, alerts having no metric name.
pub fn selector(s: &str) -> Result<Vec<Matcher>, ApiError> {
    let bad = |why: String| ApiError::BadRequest(format!("invalid parameter \"match[]\": {why}"));
    argus_store_api::promql::parse(s).map_err(|e| bad(e.to_string()))?;
    let not_selector = || bad(format!("{s:?} is not a series selector"));
    let t = s.trim();
    let name_len = t
        .char_indices()
        .take_while(|&(i, c)| c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit()))
        .count();
    let (name, rest) = t.split_at(name_len);
    let rest = rest.trim();
    let mut out = Vec::new();
    if !name.is_empty() {
        out.push(Matcher::new("alertname", MatchOp::Equal, name).map_err(|e| bad(e.to_string()))?);
    }
    if !rest.is_empty() {
        if !rest.starts_with('{') || !rest.ends_with('}') {
            return Err(not_selector());
        }
        let inner = rest[1..rest.len() - 1].trim();
        if !inner.is_empty() {
            out.extend(crate::config::matchers::parse(inner).map_err(|_| not_selector())?);
        }
    }
    if out.is_empty() {
        return Err(not_selector());
    }
    Ok(out)
}

/// `GET /api/v1/suppressed?match[]=&start=&end=`: the alerts held back, with every reason.
#[utoipa::path(get, path = "/api/v1/suppressed", tag = SUPPRESSED_TAG,
    params(("match[]" = Option<Vec<String>>, Query, description = "Series selectors in Prometheus' syntax, repeatable: an alert is listed when every matcher of one of them matches; a name before the braces matches `alertname`", example = json!(["{severity=\"page\"}"])),
        ("start" = Option<String>, Query, description = "Only reasons that held at or after this time: Unix seconds or RFC 3339", example = "1700000000"),
        ("end" = Option<String>, Query, description = "Only reasons that held at or before this time: Unix seconds or RFC 3339", example = "1800000000")),
    responses((status = 200, description = "Held-back alerts by fingerprint, each reason oldest first", body = Success<Vec<SuppressedAlert>>), HistoryErrors))]
pub async fn get_suppressed(
    Ext(s): Ext<State>,
    Query(p): Query<Params>,
) -> Result<Json<Success<Vec<SuppressedAlert>>>, V1Error> {
    let selectors =
        p.iter().filter(|(k, _)| k == "match[]").map(|(_, v)| selector(v)).collect::<Result<Vec<_>, _>>()?;
    let (start, end) = span(&p)?;
    let now = s.engine.now();
    let e = s.engine.lock();
    let held = e.suppressed().query(&selectors, start, end);
    let out = held
        .into_iter()
        .filter_map(|(fp, mut records)| {
            records.sort_by_key(|r| (r.since, r.ended.is_none(), r.reason.kind()));
            let alert = e.alert(fp);
            let labels = alert.map_or(&records.first()?.labels, |a| &a.labels);
            let state = match e.status(fp, now) {
                Some(Status::Firing) => "firing",
                _ => "resolved",
            };
            Some(SuppressedAlert {
                labels: labels.iter().map(|l| (l.name.clone(), l.value.clone())).collect(),
                fingerprint: fp.to_string(),
                state,
                held: records.iter().any(Record::is_open),
                reasons: records.into_iter().map(HeldReason::from).collect(),
            })
        })
        .collect();
    Ok(ok(out))
}
