//! The embedded engine as a backend: the same [`Db`] the HTTP API serves, called on blocking threads.

use super::{BackendError, BoxFuture, QueryValue, StoreBackend};
use crate::db::WriteError;
use crate::query::{self, QueryError};
use crate::remote_write::WriteSeries;
use crate::{Db, Series};
use argus_model::Matcher;
use std::sync::Arc;

/// The embedded store behind [`StoreBackend`].
pub struct Embedded {
    db: Arc<Db>,
    limits: query::QueryLimits,
}

impl Embedded {
    /// `limits` bound each query as `max_query_samples` and `query_timeout` do for the HTTP API; its
    /// queries draw on the shared `max_query_memory` as `limits.memory`'s caller (rules, or the rest
    /// of the process), each refused with [`BackendError::BadQuery`] naming the budget.
    pub fn new(db: Arc<Db>, limits: query::QueryLimits) -> Embedded {
        Embedded { db, limits }
    }
}

impl StoreBackend for Embedded {
    fn name(&self) -> &'static str {
        "embedded"
    }

    fn describe(&self) -> String {
        format!("embedded store in {}", self.db.options().data_dir.display())
    }

    fn write(&self, series: Vec<WriteSeries>) -> BoxFuture<'_, Result<(), BackendError>> {
        let db = self.db.clone();
        Box::pin(async move {
            // As the HTTP API answers 503: the head flushes and writes resume.
            if db.write_pressure().is_some() {
                return Err(BackendError::Overloaded);
            }
            let pairs: Vec<_> = series.into_iter().map(|s| (s.labels, s.samples)).collect();
            blocking(move || match db.write_series(&pairs) {
                Ok(_) => Ok(()),
                Err(
                    e @ (WriteError::Invalid(_)
                    | WriteError::TooManySeries { .. }
                    | WriteError::TooManySeriesForMetric { .. }),
                ) => Err(BackendError::InvalidWrite(e.to_string())),
                Err(WriteError::OverBudget { .. }) => Err(BackendError::Overloaded),
                Err(e) => Err(BackendError::Storage(e.to_string())),
            })
            .await
        })
    }

    fn select<'a>(
        &'a self,
        matchers: &'a [Matcher],
        start: i64,
        end: i64,
    ) -> BoxFuture<'a, Result<Vec<Series>, BackendError>> {
        let (db, matchers) = (self.db.clone(), matchers.to_vec());
        Box::pin(blocking(move || {
            let mut series = db.select(&matchers, start, end).map_err(|e| BackendError::Storage(e.to_string()))?;
            // The Prometheus API never returns stale markers; dropping them here keeps backends alike.
            for s in &mut series {
                s.samples.retain(|x| !query::is_stale(x.v));
            }
            series.retain(|s| !s.samples.is_empty());
            Ok(series)
        }))
    }

    fn query_instant<'a>(&'a self, q: &'a str, t: i64) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        let (db, q, limits) = (self.db.clone(), q.to_string(), self.limits.clone());
        Box::pin(blocking(move || query::instant(&db, &q, t, &limits).map(from_value).map_err(query_error)))
    }

    fn query_range<'a>(
        &'a self,
        q: &'a str,
        start: i64,
        end: i64,
        step: i64,
    ) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        let (db, q, limits) = (self.db.clone(), q.to_string(), self.limits.clone());
        Box::pin(blocking(move || {
            query::check_range(start, end, step).map_err(query_error)?;
            query::range(&db, &q, start, end, step, &limits).map(from_value).map_err(query_error)
        }))
    }
}

/// The query engine's answer in the backends' shape: the one place that knows `query::Value`.
fn from_value(v: query::Value) -> QueryValue {
    match v {
        query::Value::Vector(v) => QueryValue::Vector(v),
        query::Value::Matrix(m) => {
            QueryValue::Matrix(m.into_iter().map(|(labels, samples)| Series { labels, samples }).collect())
        }
        query::Value::Scalar(s) => QueryValue::Scalar(s),
        query::Value::String(t, s) => QueryValue::String(t, s),
    }
}

fn query_error(e: QueryError) -> BackendError {
    match e {
        QueryError::BadData(m) | QueryError::Execution(m) => BackendError::BadQuery(m),
        e @ QueryError::Timeout(_) => BackendError::Storage(e.to_string()),
        QueryError::Storage(e) => BackendError::Storage(e.to_string()),
    }
}

/// Runs store work on a blocking thread; a panic there is reported, not propagated.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, BackendError> + Send + 'static,
) -> Result<T, BackendError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| BackendError::Internal(format!("store task failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;
    use argus_model::{Labels, Sample};

    #[tokio::test]
    async fn writes_read_back_through_select_and_queries() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(Options::new(dir.path().to_path_buf())).unwrap());
        let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, query::QueryLimits::default()));
        let t0 = crate::db::now_ms() / 1000 * 1000 - 60_000;
        let labels = Labels::from_pairs([("__name__", "gpu_util"), ("host", "a")]);
        let samples = vec![Sample::new(t0, 1.0), Sample::new(t0 + 1000, f64::from_bits(query::STALE_NAN_BITS))];
        backend.write(vec![WriteSeries { labels: labels.clone(), samples }]).await.unwrap();

        let m = [Matcher::eq("__name__", "gpu_util")];
        let got = backend.select(&m, t0, t0 + 1000).await.unwrap();
        assert_eq!(got, vec![Series { labels: Arc::new(labels.clone()), samples: vec![Sample::new(t0, 1.0)] }]);
        let v = backend.query_instant("gpu_util", t0).await.unwrap();
        assert_eq!(v, QueryValue::Vector(vec![(Arc::new(labels), Sample::new(t0, 1.0))]));
        let e = backend.query_range("gpu_util", t0, t0 - 1, 1000).await.unwrap_err();
        assert!(matches!(e, BackendError::BadQuery(_)) && !e.is_retryable(), "{e}");
        let e = backend.query_instant("gpu_util{", t0).await.unwrap_err();
        assert!(matches!(e, BackendError::BadQuery(_)), "{e}");
    }
}
