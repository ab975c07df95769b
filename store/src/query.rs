//! Query evaluation over the store. Today: instant and range queries of series selectors and range
//! selectors, with Prometheus 2 semantics (5-minute lookback, stale markers, `offset`, `@`). The PromQL
//! engine takes this module's place behind the same entry points.

use crate::{Db, DbError};
use argus_model::{Labels, METRIC_NAME, MatchOp, Matcher, Sample};
use promql_parser::label::MatchOp as PMatchOp;
use promql_parser::parser::{AtModifier, Expr, Offset, VectorSelector};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

/// How far back an instant selector looks for the latest sample.
pub const LOOKBACK_MS: i64 = 5 * 60 * 1000;
/// Prometheus' stale marker: a NaN with this exact bit pattern ends a series.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

pub fn is_stale(v: f64) -> bool {
    v.to_bits() == STALE_NAN_BITS
}

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The query text or a parameter is wrong (HTTP 400, `bad_data`).
    #[error("{0}")]
    BadData(String),
    /// The query is valid but cannot be run (HTTP 422, `execution`).
    #[error("{0}")]
    Execution(String),
    #[error(transparent)]
    Storage(#[from] DbError),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Vector(Vec<(Arc<Labels>, Sample)>),
    Matrix(Vec<(Arc<Labels>, Vec<Sample>)>),
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

fn parse(query: &str) -> Result<Expr, QueryError> {
    promql_parser::parser::parse(query).map_err(|e| QueryError::BadData(format!("invalid parameter \"query\": {e}")))
}

/// Evaluation time of a selector at `t`, after `@` and `offset`.
fn shifted(vs: &VectorSelector, t: i64, start: i64, end: i64) -> i64 {
    let base = match &vs.at {
        None => t,
        Some(AtModifier::Start) => start,
        Some(AtModifier::End) => end,
        Some(AtModifier::At(st)) => match st.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_millis() as i64,
            Err(e) => -(e.duration().as_millis() as i64),
        },
    };
    match &vs.offset {
        None => base,
        Some(Offset::Pos(d)) => base - d.as_millis() as i64,
        Some(Offset::Neg(d)) => base + d.as_millis() as i64,
    }
}

fn unsupported(e: &Expr) -> QueryError {
    QueryError::Execution(format!(
        "only series selectors and range selectors can be evaluated yet; {:?} expressions are not supported",
        expr_kind(e)
    ))
}

fn expr_kind(e: &Expr) -> &'static str {
    match e {
        Expr::Aggregate(_) => "aggregation",
        Expr::Unary(_) => "unary",
        Expr::Binary(_) => "binary operator",
        Expr::Paren(_) => "parenthesised",
        Expr::Subquery(_) => "subquery",
        Expr::NumberLiteral(_) => "number literal",
        Expr::StringLiteral(_) => "string literal",
        Expr::VectorSelector(_) => "vector selector",
        Expr::MatrixSelector(_) => "matrix selector",
        Expr::Call(_) => "function call",
        Expr::Extension(_) => "extension",
    }
}

fn check_samples(n: usize, limit: usize) -> Result<(), QueryError> {
    if n > limit {
        return Err(QueryError::Execution(format!(
            "query processing would load too many samples into memory in query execution (more than {limit})"
        )));
    }
    Ok(())
}

/// The latest non-stale sample at or before `t` within the lookback window.
fn at(samples: &[Sample], t: i64) -> Option<Sample> {
    visible(samples, samples.partition_point(|s| s.t <= t), t)
}

/// The sample an instant selector sees at `t`, given `end`, the number of samples at or before `t`:
/// the last of them, unless it is older than the lookback window or a stale marker.
fn visible(samples: &[Sample], end: usize, t: i64) -> Option<Sample> {
    let s = *samples.get(end.checked_sub(1)?)?;
    (s.t >= t - LOOKBACK_MS && !is_stale(s.v)).then_some(s)
}

pub fn instant(db: &Db, query: &str, t: i64, max_samples: usize) -> Result<Value, QueryError> {
    match parse(query)? {
        Expr::VectorSelector(vs) => {
            let ms = matchers_of(&vs).map_err(QueryError::BadData)?;
            let te = shifted(&vs, t, t, t);
            let series = db.select(&ms, te - LOOKBACK_MS, te)?;
            check_samples(series.iter().map(|s| s.samples.len()).sum(), max_samples)?;
            let v = series
                .into_iter()
                .filter_map(|s| at(&s.samples, te).map(|x| (s.labels.clone(), Sample::new(t, x.v))))
                .collect();
            Ok(Value::Vector(v))
        }
        Expr::MatrixSelector(m) => {
            let ms = matchers_of(&m.vs).map_err(QueryError::BadData)?;
            let te = shifted(&m.vs, t, t, t);
            let range = m.range.as_millis() as i64;
            let series = db.select(&ms, te - range, te)?;
            check_samples(series.iter().map(|s| s.samples.len()).sum(), max_samples)?;
            let v = series
                .into_iter()
                .map(|s| (s.labels, s.samples.into_iter().filter(|x| !is_stale(x.v)).collect::<Vec<_>>()))
                .filter(|(_, s)| !s.is_empty())
                .collect();
            Ok(Value::Matrix(v))
        }
        e => Err(unsupported(&e)),
    }
}

/// A range query: the selector evaluated at every step from `start` to `end`.
pub fn range(db: &Db, query: &str, start: i64, end: i64, step: i64, max_samples: usize) -> Result<Value, QueryError> {
    match parse(query)? {
        Expr::VectorSelector(vs) => {
            let ms = matchers_of(&vs).map_err(QueryError::BadData)?;
            let (lo, hi) = (shifted(&vs, start, start, end), shifted(&vs, end, start, end));
            let (lo, hi) = (lo.min(hi), lo.max(hi));
            let series = db.select(&ms, lo - LOOKBACK_MS, hi)?;
            let steps = ((end - start) / step + 1) as usize;
            check_samples(series.len().saturating_mul(steps), max_samples)?;
            let mut out = Vec::with_capacity(series.len());
            for s in series {
                let mut points = Vec::with_capacity(steps.min(s.samples.len() * 2 + 1));
                // Steps only move forward, so a cursor replaces a binary search per step.
                let mut i = 0;
                let mut t = start;
                while t <= end {
                    let te = shifted(&vs, t, start, end);
                    while i < s.samples.len() && s.samples[i].t <= te {
                        i += 1;
                    }
                    if let Some(x) = visible(&s.samples, i, te) {
                        points.push(Sample::new(t, x.v));
                    }
                    t += step;
                }
                if !points.is_empty() {
                    out.push((s.labels.clone(), points));
                }
            }
            Ok(Value::Matrix(out))
        }
        Expr::MatrixSelector(_) => Err(QueryError::BadData(
            "invalid expression type \"range vector\" for range query, must be Scalar or instant Vector".into(),
        )),
        e => Err(unsupported(&e)),
    }
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
    if (end - start) / step > 11_000 {
        return Err(QueryError::BadData(
            "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)".into(),
        ));
    }
    Ok(())
}

pub fn lookback() -> Duration {
    Duration::from_millis(LOOKBACK_MS as u64)
}
