//! [`Emit`], where sources hand their batches, and the clock that stamps them. The agent builds an
//! `Emit` and the sources send through it, so it lives apart from both: `agent` and `source` each
//! depend on this module and not on each other.

use crate::batch::{Batch, Point};
use crate::metrics::{SelfMetrics, SourceLabel};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Where sources put their batches: stamps the global labels and hands each batch to every sink. Polled
/// sources reach it through the agent's loop; push and stream sources ([`Task`](crate::source::Task)s)
/// hold a clone.
#[derive(Clone)]
pub struct Emit {
    pub(crate) global: Arc<Vec<(String, String)>>,
    pub(crate) metrics: SelfMetrics,
    pub(crate) senders: Vec<mpsc::Sender<Batch>>,
}

// === impl Emit ===

impl Emit {
    /// An `Emit` feeding one channel, for tests and embedders that read batches themselves.
    pub fn channel(global: Vec<(String, String)>, capacity: usize) -> (Emit, mpsc::Receiver<Batch>) {
        let (tx, rx) = mpsc::channel(capacity);
        (Emit { global: Arc::new(global), metrics: SelfMetrics::default(), senders: vec![tx] }, rx)
    }

    /// Stamps the global labels and sends the batch to every sink; false once the sinks are gone.
    pub async fn send(&self, mut batch: Batch) -> bool {
        if batch.is_empty() {
            return true;
        }
        batch.stamp(&self.global);
        let Some((last, others)) = self.senders.split_last() else { return true };
        for tx in others {
            if tx.send(batch.clone()).await.is_err() {
                return false;
            }
        }
        last.send(batch).await.is_ok()
    }

    /// Records how a source's round went: self metrics on `/metrics`, and the same as points in `batch`.
    pub fn report(&self, source: &'static str, now: i64, elapsed: Duration, ok: bool, batch: &mut Batch) {
        let label = SourceLabel { source: source.to_string() };
        self.metrics.source_duration.get_or_create(&label).set(elapsed.as_secs_f64());
        self.metrics.source_success.get_or_create(&label).set(i64::from(ok));
        self_points(source, now, elapsed, ok, batch);
    }
}

/// The per-source self metrics as points, so they reach the store with the data.
pub(crate) fn self_points(source: &str, now: i64, elapsed: Duration, ok: bool, batch: &mut Batch) {
    batch.push(
        Point::new("argus_collector", now)
            .tag("source", source)
            .field("source_duration_seconds", elapsed.as_secs_f64())
            .field("source_success", if ok { 1.0 } else { 0.0 }),
    );
}

pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}
