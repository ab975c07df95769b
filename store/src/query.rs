//! PromQL evaluation over the store, with Prometheus 2 semantics: 5-minute lookback, stale markers,
//! step alignment, `offset` and `@`, subqueries, functions, aggregations and binary operators with
//! vector matching. Parsing is the `promql-parser` crate's; evaluation is ours (`query/`).
//!
//! Every node is evaluated once for all steps of the query (an instant query is a range query of one
//! step), so a selector reads the store once however many steps there are. Where Prometheus' answer
//! depends on its own evaluation order (ties in `topk`, float rounding in sums) we follow its code.

mod aggregate;
mod binary;
mod eval;
mod functions;
pub mod memory;
mod range_functions;
#[cfg(test)]
mod selector_tests;
#[cfg(test)]
mod tests;

use crate::{Db, DbError};
use argus_model::memo::Memo;
use argus_model::{Labels, METRIC_NAME, MatchOp, Matcher, Sample};
use memory::{QueryMemory, Reservation};
use promql_parser::label::MatchOp as PMatchOp;
use promql_parser::parser::{Expr, VectorSelector};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use argus_store_api::promql::{STALE_NAN_BITS, is_stale, parse_error, parse_expr};

/// How far back an instant selector looks for the latest sample.
pub const LOOKBACK_MS: i64 = 5 * 60 * 1000;
/// The step of a subquery written without one (`x[1h:]`): Prometheus' default evaluation interval.
pub const DEFAULT_SUBQUERY_STEP_MS: i64 = 60_000;
/// Prometheus' limit on the points of one series in a range query's answer.
pub const MAX_POINTS_PER_SERIES: i64 = 11_000;

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The query text or a parameter is wrong (HTTP 400, `bad_data`).
    #[error("{0}")]
    BadData(String),
    /// The query is valid but cannot be run (HTTP 422, `execution`).
    #[error("{0}")]
    Execution(String),
    /// The query ran past its time limit (HTTP 503, `timeout`).
    #[error("query timed out in {0}")]
    Timeout(&'static str),
    #[error(transparent)]
    Storage(#[from] DbError),
}

/// What one query may cost.
#[derive(Debug, Clone)]
pub struct QueryLimits {
    /// Samples a query may hold at once (raw samples read, or points of one intermediate result).
    pub max_samples: usize,
    /// Wall-clock time a query may run.
    pub timeout: Duration,
    /// The memory shared with every other query of the process, and who asks (default: none, only
    /// `max_samples` applies).
    pub memory: QueryMemory,
}

impl Default for QueryLimits {
    fn default() -> Self {
        QueryLimits { max_samples: 50_000_000, timeout: Duration::from_secs(120), memory: QueryMemory::default() }
    }
}

/// A query's answer, in the shapes of the Prometheus API.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Vector(Vec<(Arc<Labels>, Sample)>),
    Matrix(Vec<(Arc<Labels>, Vec<Sample>)>),
    Scalar(Sample),
    String(i64, String),
}

/// Our matchers for a parsed selector; the metric name becomes a `__name__` matcher.
pub fn matchers_of(vs: &VectorSelector) -> Result<Vec<Matcher>, String> {
    if !vs.matchers.or_matchers.is_empty() {
        return Err("selectors with \"or\" between matcher sets are not supported".into());
    }
    let mut out = Vec::with_capacity(vs.matchers.matchers.len() + 1);
    if let Some(name) = &vs.name {
        out.push(Matcher::eq(METRIC_NAME, name.clone()));
    }
    for m in &vs.matchers.matchers {
        let op = match m.op {
            PMatchOp::Equal => MatchOp::Equal,
            PMatchOp::NotEqual => MatchOp::NotEqual,
            PMatchOp::Re(_) => MatchOp::RegexMatch,
            PMatchOp::NotRe(_) => MatchOp::RegexNoMatch,
        };
        out.push(Matcher::new(m.name.clone(), op, m.value.clone()).map_err(|e| e.to_string())?);
    }
    if out.iter().all(Matcher::matches_empty) {
        return Err("vector selector must contain at least one non-empty matcher".into());
    }
    Ok(out)
}

/// Queries kept parsed at most, and the longest query text kept.
const PARSED_MEMO_MAX: usize = 1024;
const PARSED_MEMO_MAX_LEN: usize = 16 << 10;

/// `query` parsed, once per process (see [`Memo`]): parsing compiles every regex matcher anew, and an
/// `Expr` clone shares them. Only queries that parse are kept.
fn parse(query: &str) -> Result<Expr, QueryError> {
    static PARSED: Memo<Expr> = Memo::new(PARSED_MEMO_MAX, PARSED_MEMO_MAX_LEN);
    PARSED.get_or_try(query, || {
        argus_store_api::promql::parse(query)
            .map_err(|e| QueryError::BadData(format!("invalid parameter \"query\": {e}")))
    })
}

/// Checks that `query` parses, as the query endpoints would; the error is the message those endpoints
/// answer.
pub fn check(query: &str) -> Result<(), QueryError> {
    parse(query).map(|_| ())
}

/// The sample an instant selector sees at `t`, given `end`, the number of samples at or before `t`:
/// the last of them, unless it is older than the lookback window or a stale marker.
pub(crate) fn visible(samples: &[Sample], end: usize, t: i64) -> Option<Sample> {
    let s = *samples.get(end.checked_sub(1)?)?;
    (s.t >= t - LOOKBACK_MS && !is_stale(s.v)).then_some(s)
}

/// An instant query at `t` (ms).
pub fn instant(db: &Db, query: &str, t: i64, limits: &QueryLimits) -> Result<Value, QueryError> {
    instant_held(db, query, t, limits).map(|(v, _)| v)
}

/// [`instant`], with the query's share of `max_query_memory` still held for the answer: the HTTP API
/// gives it back as it writes the answer out, so the result counts until it is let go.
pub fn instant_held(db: &Db, query: &str, t: i64, limits: &QueryLimits) -> Result<(Value, Reservation), QueryError> {
    let expr = parse(query)?;
    let mem = limits.memory.reserve();
    let ev = eval::Ev::new(db, t, t, 1, limits, &mem);
    let v = match ev.eval(&expr)? {
        eval::Val::Scalar(v) => Value::Scalar(Sample::new(t, v[0])),
        eval::Val::String(s) => Value::String(t, s),
        eval::Val::Matrix(m) => Value::Matrix(m),
        eval::Val::Vector(rows) => {
            Value::Vector(rows.into_iter().filter_map(|r| r.vals[0].map(|v| (r.labels, Sample::new(t, v)))).collect())
        }
    };
    Ok((v, mem))
}

/// A range query: the expression evaluated at every step from `start` to `end`; series sorted by labels.
pub fn range(db: &Db, query: &str, start: i64, end: i64, step: i64, limits: &QueryLimits) -> Result<Value, QueryError> {
    range_held(db, query, start, end, step, limits).map(|(v, _)| v)
}

/// [`range`], with the query's share of `max_query_memory` still held for the answer (see
/// [`instant_held`]).
pub fn range_held(
    db: &Db,
    query: &str,
    start: i64,
    end: i64,
    step: i64,
    limits: &QueryLimits,
) -> Result<(Value, Reservation), QueryError> {
    check_range(start, end, step)?;
    let expr = parse(query)?;
    let kind = match expr.value_type() {
        promql_parser::parser::value::ValueType::Matrix => Some("range vector"),
        promql_parser::parser::value::ValueType::String => Some("string"),
        _ => None,
    };
    if let Some(kind) = kind {
        return Err(QueryError::BadData(format!(
            "invalid parameter \"query\": invalid expression type \"{kind}\" for range query, must be Scalar or instant Vector"
        )));
    }
    let mem = limits.memory.reserve();
    let ev = eval::Ev::new(db, start, end, step, limits, &mem);
    if let Expr::VectorSelector(vs) = eval::unparen(&expr) {
        // The most common range query (a dashboard panel of one metric): its points straight from
        // the samples, identical to the general evaluation below (tested against it).
        let mut out = ev.selector_points(vs)?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        return Ok((Value::Matrix(out), mem));
    }
    let v = evaluated(&ev, &expr, start, step)?;
    Ok((v, mem))
}

/// A range query's answer by the general evaluator: every node over all steps, then one point per
/// step with a value.
fn evaluated(ev: &eval::Ev<'_>, expr: &Expr, start: i64, step: i64) -> Result<Value, QueryError> {
    let t = |i: usize| start + i as i64 * step;
    let mut out: Vec<(Arc<Labels>, Vec<Sample>)> = match ev.eval(expr)? {
        eval::Val::Scalar(v) => {
            vec![(Arc::new(Labels::default()), v.iter().enumerate().map(|(i, &v)| Sample::new(t(i), v)).collect())]
        }
        eval::Val::Vector(rows) => rows
            .into_iter()
            .map(|r| {
                let mut points = Vec::with_capacity(r.vals.iter().filter(|v| v.is_some()).count());
                points.extend(r.vals.iter().enumerate().filter_map(|(i, v)| v.map(|v| Sample::new(t(i), v))));
                (r.labels, points)
            })
            .filter(|(_, p): &(_, Vec<Sample>)| !p.is_empty())
            .collect(),
        eval::Val::Matrix(_) | eval::Val::String(_) => {
            return Err(QueryError::BadData("range queries must evaluate to a scalar or an instant vector".into()));
        }
    };
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Value::Matrix(out))
}

/// Checks a range query's shape as Prometheus does.
pub fn check_range(start: i64, end: i64, step: i64) -> Result<(), QueryError> {
    if end < start {
        return Err(QueryError::BadData(
            "invalid parameter \"end\": end timestamp must not be before start time".into(),
        ));
    }
    if step <= 0 {
        return Err(QueryError::BadData(
            "invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer".into(),
        ));
    }
    if (end - start) / step > MAX_POINTS_PER_SERIES {
        return Err(QueryError::BadData(
            "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)".into(),
        ));
    }
    Ok(())
}

pub fn lookback() -> Duration {
    Duration::from_millis(LOOKBACK_MS as u64)
}

/// When a query must stop.
pub(crate) fn deadline(limits: &QueryLimits) -> Instant {
    Instant::now() + limits.timeout
}
