//! The one trait through which the rules, the analyzer and alertd reach whatever store is configured —
//! the embedded engine, a Prometheus-compatible remote (VictoriaMetrics single-node or cluster,
//! Prometheus, Mimir, Thanos) or InfluxDB 2 — so they run unchanged on each. The implementations live
//! in argus-store (`argus_store::backend`).
//!
//! Every backend answers in the same shapes, so callers never ask which one they hold: raw selects are
//! [`Series`] sorted by labels, samples in `[start, end]` (milliseconds, both ends included) without
//! stale markers; PromQL answers are a [`QueryValue`]. Operator docs: docs/backends.md.

mod error;

pub use error::BackendError;

use crate::remote_write::WriteSeries;
use argus_model::shard::Shard;
use argus_model::{Labels, Matcher, Sample};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future, so that [`StoreBackend`] can be held as `Arc<dyn StoreBackend>`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One selected series with its samples, sorted by time.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub labels: Arc<Labels>,
    pub samples: Vec<Sample>,
}

/// The answer to a PromQL query, as the Prometheus HTTP API types it. Timestamps are milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryValue {
    /// One sample per series, at the evaluation time.
    Vector(Vec<(Arc<Labels>, Sample)>),
    /// Samples per series: a range query's steps, or the raw samples of a range selector.
    Matrix(Vec<Series>),
    /// A number at the evaluation time.
    Scalar(Sample),
    /// A string at the evaluation time (ms).
    String(i64, String),
}

/// A store the analyzer and alertd read and write, whichever engine is behind it.
///
/// Every method is `async` through [`BoxFuture`] so the trait stays object-safe. Errors say with
/// [`BackendError::is_retryable`] whether the same call may succeed later.
pub trait StoreBackend: Send + Sync {
    /// The kind of backend, for logs and metrics: `embedded`, `victoriametrics`, `influxdb2`, …
    fn name(&self) -> &'static str;

    /// Where it writes and reads, for the startup log. Never holds a secret.
    fn describe(&self) -> String;

    /// Stores series with their float samples. All or nothing where the engine allows it (the embedded
    /// store, remote write); a line-protocol write refused halfway may have stored part of the batch.
    fn write(&self, series: Vec<WriteSeries>) -> BoxFuture<'_, Result<(), BackendError>>;

    /// The raw samples in `[start, end]` (ms) of the series the matchers select, sorted by labels.
    fn select<'a>(
        &'a self,
        matchers: &'a [Matcher],
        start: i64,
        end: i64,
    ) -> BoxFuture<'a, Result<Vec<Series>, BackendError>>;

    /// A PromQL instant query at `t` (ms).
    fn query_instant<'a>(&'a self, query: &'a str, t: i64) -> BoxFuture<'a, Result<QueryValue, BackendError>>;

    /// A PromQL range query from `start` to `end` every `step` (all ms).
    fn query_range<'a>(
        &'a self,
        query: &'a str,
        start: i64,
        end: i64,
        step: i64,
    ) -> BoxFuture<'a, Result<QueryValue, BackendError>>;

    /// [`StoreBackend::query_range`], keeping only the series that `shard`
    /// owns by their values of `by` ([`Shard::owns_series`]): how a shard of the analyzer reads its
    /// share. A backend that decodes answers off the wire builds only the series kept; this default
    /// filters the whole answer.
    fn query_range_shard<'a>(
        &'a self,
        query: &'a str,
        start: i64,
        end: i64,
        step: i64,
        shard: Shard,
        by: &'a [String],
    ) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        Box::pin(async move {
            let mut v = self.query_range(query, start, end, step).await?;
            if let QueryValue::Matrix(m) = &mut v {
                m.retain(|s| shard.owns_series(&s.labels, by));
            }
            Ok(v)
        })
    }
}
