//! `/api/v1/status/tsdb`: where the series are, as Prometheus' TSDB status page and VictoriaMetrics'
//! cardinality explorer answer it. Prometheus' fields (`headStats`, `seriesCountByMetricName`,
//! `labelValueCountByLabelName`, `memoryInBytesByLabelName`, `seriesCountByLabelValuePair`, each
//! list its top `limit` entries, most first) and VictoriaMetrics' (`totalSeries`,
//! `totalLabelValuePairs`, `seriesCountByLabelName`, `seriesCountByFocusLabelValue`, with its `topN`,
//! `date`, `match[]` and `focusLabel` parameters).
//!
//! Prometheus counts its head block: the last two to three hours. Argus counts the series with a
//! sample in the last [`HEAD_WINDOW_MS`], or on the UTC day `date` names, read from the label index
//! only (no sample is decoded), so the answer costs what `/api/v1/series` over the same time does.
//! `headStats`' `chunkCount`, `minTime` and `maxTime` describe the store's data over that span, from
//! the blocks' `meta.json` and the head's series in memory ([`crate::Db::span_stats`]): the chunks
//! of the blocks overlapping it and, when the head overlaps it, every head chunk (sealed and open,
//! a count the head keeps as samples go in).

use super::State;
use super::envelope::{bad, err, ok};
use super::openapi::{QUERY_TAG, ReadErrors, SuccessStatus};
use super::params::{Params, parse_selector, parse_time};
use argus_model::{Labels, MatchOp, Matcher};
use axum::extract::State as S;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value as J, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use utoipa::{OpenApi, ToSchema};

/// The window counted without `date`: Prometheus' head block range.
pub const HEAD_WINDOW_MS: i64 = 2 * 3_600_000;
/// Entries per list without `limit` or `topN`, as in both.
const DEFAULT_TOP: usize = 10;
const DAY_MS: i64 = 86_400_000;

/// `/api/v1/status/tsdb`: `limit` or `topN` (entries per list, default 10), `date` (`YYYY-MM-DD`:
/// the series with samples on that UTC day; default the last two hours), `match[]` (only the
/// series these selectors select; repeat for several), `focusLabel` (counts series by its values).
#[utoipa::path(method(get, post), path = "/api/v1/status/tsdb", tag = QUERY_TAG,
    params(
        ("limit" = Option<String>, Query, description = "Entries per list (Prometheus' name); default 10", example = "10"),
        ("topN" = Option<String>, Query, description = "Entries per list (VictoriaMetrics' name); default 10", example = "10"),
        ("date" = Option<String>, Query, description = "A UTC day, YYYY-MM-DD: the series with samples on it; default the last two hours", example = "2026-12-07"),
        ("match[]" = Option<Vec<String>>, Query, description = "Series selector; repeat for several (optional)", example = json!(["{job=\"argus\"}"])),
        ("focusLabel" = Option<String>, Query, description = "A label name: series counted by its values in seriesCountByFocusLabelValue", example = "host"),
    ),
    responses((status = 200, description = "Cardinality statistics", body = TsdbAnswer), ReadErrors))]
pub async fn tsdb(
    S(state): S<Arc<State>>,
    scope: Option<axum::Extension<Arc<argus_store_api::LabelScope>>>,
    p: Params,
) -> Response {
    let q = match Query::from_params(&p, crate::now_ms()) {
        Ok(q) => q,
        Err(e) => return bad(e),
    };
    let task = tokio::task::spawn_blocking(move || {
        let mut all = BTreeSet::new();
        for ms in &q.selectors {
            match state.db.series(ms, q.mint, q.maxt) {
                Ok(s) => all.extend(s),
                Err(e) => return err(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
            }
        }
        let mut out = Stats::count(all.iter().map(|l| &**l), q.focus.as_deref()).json(q.top, q.focus.as_deref());
        // The chunk count and time span are the whole store's, so a token confined to a share of the
        // series is not shown them: 0 chunks, no span.
        let span = match scope {
            None => state.db.span_stats(q.mint, q.maxt),
            Some(_) => Default::default(),
        };
        out["headStats"]["chunkCount"] = json!(span.chunks);
        out["headStats"]["minTime"] = json!(span.min_time);
        out["headStats"]["maxTime"] = json!(span.max_time);
        ok(out)
    });
    task.await
        .unwrap_or_else(|e| err(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("status task failed: {e}")))
}

/// The request's parameters, checked.
#[derive(Debug)]
struct Query {
    top: usize,
    mint: i64,
    maxt: i64,
    selectors: Vec<Vec<Matcher>>,
    focus: Option<String>,
}

impl Query {
    fn from_params(p: &Params, now: i64) -> Result<Query, String> {
        let given = |name| p.get(name).filter(|s| !s.is_empty());
        let top = match (given("limit"), given("topN")) {
            (Some(_), Some(_)) => return Err("give limit or topN, not both".into()),
            (Some(s), None) | (None, Some(s)) => {
                let name = if given("limit").is_some() { "limit" } else { "topN" };
                match s.parse::<i64>() {
                    Ok(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
                    _ => return Err(format!("invalid parameter \"{name}\": {s:?} is not a positive number")),
                }
            }
            (None, None) => DEFAULT_TOP,
        };
        let (mint, maxt) = match p.get("date").filter(|d| !d.is_empty()) {
            Some(d) => {
                let shaped = d.len() == 10 && d.bytes().enumerate().all(|(i, b)| matches!(i, 4 | 7) == (b == b'-'));
                let start = shaped.then(|| parse_time(&format!("{d}T00:00:00Z")).ok()).flatten();
                let start =
                    start.ok_or_else(|| format!("invalid parameter \"date\": {d:?} is not a YYYY-MM-DD date"))?;
                (start, start + DAY_MS - 1)
            }
            None => (now - HEAD_WINDOW_MS, i64::MAX),
        };
        let mut selectors = Vec::new();
        for s in p.all("match[]") {
            selectors.push(parse_selector(s).map_err(|e| format!("invalid parameter \"match[]\": {e}"))?);
        }
        if selectors.is_empty() {
            // Every series has a name; `=~".+"` on it selects all.
            let all = Matcher::new(argus_model::METRIC_NAME, MatchOp::RegexMatch, ".+").map_err(|e| e.to_string())?;
            selectors.push(vec![all]);
        }
        let focus = p.get("focusLabel").filter(|f| !f.is_empty()).map(str::to_string);
        Ok(Query { top, mint, maxt, selectors, focus })
    }
}

/// The counts over a set of series.
#[derive(Debug, Default)]
struct Stats {
    series: u64,
    /// Label pairs over all series (VictoriaMetrics' `totalLabelValuePairs`).
    pairs_total: u64,
    by_metric: HashMap<String, u64>,
    /// Series per label name.
    by_name: HashMap<String, u64>,
    /// Series per `name=value`.
    by_pair: HashMap<(String, String), u64>,
    by_focus: HashMap<String, u64>,
}

impl Stats {
    fn count<'a>(series: impl Iterator<Item = &'a Labels>, focus: Option<&str>) -> Stats {
        let mut s = Stats::default();
        for labels in series {
            s.series += 1;
            for l in labels.iter() {
                s.pairs_total += 1;
                if l.name == argus_model::METRIC_NAME {
                    *s.by_metric.entry(l.value.clone()).or_default() += 1;
                }
                *s.by_name.entry(l.name.clone()).or_default() += 1;
                *s.by_pair.entry((l.name.clone(), l.value.clone())).or_default() += 1;
                if focus == Some(l.name.as_str()) {
                    *s.by_focus.entry(l.value.clone()).or_default() += 1;
                }
            }
        }
        s
    }

    fn json(&self, top: usize, focus: Option<&str>) -> J {
        // Distinct values and their bytes per label name, as Prometheus' postings statistics count them.
        let mut values: HashMap<&str, (u64, u64)> = HashMap::new();
        for (name, value) in self.by_pair.keys() {
            let e = values.entry(name.as_str()).or_default();
            e.0 += 1;
            e.1 += value.len() as u64;
        }
        let pairs = self.by_pair.iter().map(|((n, v), c)| (format!("{n}={v}"), *c));
        let mut out = json!({
            "headStats": {
                "numSeries": self.series,
                "numLabelPairs": self.by_pair.len(),
            },
            "seriesCountByMetricName": top_n(self.by_metric.iter().map(|(k, v)| (k.clone(), *v)), top),
            "labelValueCountByLabelName": top_n(values.iter().map(|(k, v)| (k.to_string(), v.0)), top),
            "memoryInBytesByLabelName": top_n(values.iter().map(|(k, v)| (k.to_string(), v.1)), top),
            "seriesCountByLabelValuePair": top_n(pairs, top),
            "totalSeries": self.series,
            "totalLabelValuePairs": self.pairs_total,
            "seriesCountByLabelName": top_n(self.by_name.iter().map(|(k, v)| (k.clone(), *v)), top),
        });
        if focus.is_some() {
            out["seriesCountByFocusLabelValue"] = top_n(self.by_focus.iter().map(|(k, v)| (k.clone(), *v)), top);
        }
        out
    }
}

/// The `top` largest counts as `[{"name", "value"}]`, largest first, ties by name.
fn top_n(items: impl Iterator<Item = (String, u64)>, top: usize) -> J {
    let mut v: Vec<(String, u64)> = items.collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(top);
    J::Array(v.into_iter().map(|(name, value)| json!({ "name": name, "value": value })).collect())
}

// === OpenAPI ===

/// The endpoint's part of `/api/openapi.json`.
pub fn document() -> utoipa::openapi::OpenApi {
    TsdbApi::openapi()
}

#[derive(OpenApi)]
#[openapi(paths(tsdb))]
struct TsdbApi;

/// One entry of a top list.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct NameValue {
    name: String,
    value: u64,
}

/// Counts over the series counted.
#[derive(ToSchema)]
#[allow(dead_code, non_snake_case)]
pub struct HeadStats {
    numSeries: u64,
    /// Distinct `name=value` pairs.
    numLabelPairs: u64,
    /// Chunks of the blocks overlapping the span counted, plus the head's chunks (sealed and open;
    /// those of a head being flushed too) when the head overlaps it.
    chunkCount: u64,
    /// First sample time (ms) of the blocks and head series overlapping the span; null when none.
    minTime: Option<i64>,
    /// Last sample time (ms) of the blocks and head series overlapping the span; null when none.
    maxTime: Option<i64>,
}

/// The statistics; every list holds its top `limit` entries, largest first.
#[derive(ToSchema)]
#[allow(dead_code, non_snake_case)]
pub struct TsdbStatus {
    headStats: HeadStats,
    seriesCountByMetricName: Vec<NameValue>,
    /// Distinct values per label name.
    labelValueCountByLabelName: Vec<NameValue>,
    /// Bytes of a label name's distinct values.
    memoryInBytesByLabelName: Vec<NameValue>,
    /// Series per `name=value`.
    seriesCountByLabelValuePair: Vec<NameValue>,
    totalSeries: u64,
    /// Label pairs summed over the series.
    totalLabelValuePairs: u64,
    /// Series that carry each label name.
    seriesCountByLabelName: Vec<NameValue>,
    /// With `focusLabel` only: series per value of that label.
    #[schema(nullable = false)]
    seriesCountByFocusLabelValue: Option<Vec<NameValue>>,
}

/// The TSDB status in Prometheus' success envelope.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct TsdbAnswer {
    status: SuccessStatus,
    data: TsdbStatus,
}

#[cfg(test)]
mod tests;
