//! Several stores holding the same data (the two embedded stores of a pair, each fed by every
//! collector) behind one backend: each call goes to the store last found healthy and, when it does not
//! answer (a retryable error: unreachable, timed out, 5xx), to the next, so the rules and the analyzer
//! keep reading and writing while one store is down. A refused query or write (4xx) is the caller's
//! and is not tried elsewhere.

use super::{BackendError, BoxFuture, QueryValue, StoreBackend};
use crate::Series;
use crate::remote_write::WriteSeries;
use argus_model::Matcher;
use argus_model::shard::Shard;
use std::sync::atomic::{AtomicUsize, Ordering};

pub(super) struct Failover {
    members: Vec<Box<dyn StoreBackend>>,
    /// The member the last successful call went to; calls start there.
    current: AtomicUsize,
}

impl Failover {
    pub(super) fn new(members: Vec<Box<dyn StoreBackend>>) -> Failover {
        assert!(!members.is_empty(), "a failover backend needs a member");
        Failover { members, current: AtomicUsize::new(0) }
    }

    /// `call` on the current member, then on each next one while the error is retryable.
    async fn first_healthy<'a, T>(
        &'a self,
        call: impl Fn(&'a dyn StoreBackend) -> BoxFuture<'a, Result<T, BackendError>>,
    ) -> Result<T, BackendError> {
        let n = self.members.len();
        let start = self.current.load(Ordering::Relaxed) % n;
        let mut last = None;
        for k in 0..n {
            let i = (start + k) % n;
            match call(&*self.members[i]).await {
                Ok(v) => {
                    if i != start {
                        self.current.store(i, Ordering::Relaxed);
                        tracing::warn!(
                            from = %self.members[start].describe(),
                            to = %self.members[i].describe(),
                            "Store unavailable; failed over to the next"
                        );
                    }
                    return Ok(v);
                }
                Err(e) if e.is_retryable() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| BackendError::Internal("no store to try".into())))
    }
}

impl StoreBackend for Failover {
    fn name(&self) -> &'static str {
        self.members[0].name()
    }

    fn describe(&self) -> String {
        let all: Vec<String> = self.members.iter().map(|m| m.describe()).collect();
        format!("failing over in order between [{}]", all.join("; "))
    }

    fn write(&self, series: Vec<WriteSeries>) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(async move { self.first_healthy(|m| m.write(series.clone())).await })
    }

    fn select<'a>(
        &'a self,
        matchers: &'a [Matcher],
        start: i64,
        end: i64,
    ) -> BoxFuture<'a, Result<Vec<Series>, BackendError>> {
        Box::pin(self.first_healthy(move |m| m.select(matchers, start, end)))
    }

    fn query_instant<'a>(&'a self, query: &'a str, t: i64) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        Box::pin(self.first_healthy(move |m| m.query_instant(query, t)))
    }

    fn query_range<'a>(
        &'a self,
        query: &'a str,
        start: i64,
        end: i64,
        step: i64,
    ) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        Box::pin(self.first_healthy(move |m| m.query_range(query, start, end, step)))
    }

    fn query_range_shard<'a>(
        &'a self,
        query: &'a str,
        start: i64,
        end: i64,
        step: i64,
        shard: Shard,
        by: &'a [String],
    ) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        Box::pin(self.first_healthy(move |m| m.query_range_shard(query, start, end, step, shard, by)))
    }
}
