//! Setup shared by the analyzer's runtime examples: an embedded store in a temporary directory,
//! holding generated history that ends a few steps before the wall clock.

use argus_store::backend::{Embedded, StoreBackend};
use argus_store::query::QueryLimits;
use argus_store::{Db, Options};
use argus_store_api::remote_write::WriteSeries;
use std::sync::Arc;

/// The store and where its history ends; the directory lives as long as this does.
pub struct History {
    pub backend: Arc<dyn StoreBackend>,
    /// The last step written: a multiple of the step, `spare_steps` steps before the wall clock, so
    /// the example's own rounds then run on steps still to come.
    pub now: i64,
    _dir: tempfile::TempDir,
}

/// Opens an embedded store and writes `span_ms` of history ending at [`History::now`], in pieces of
/// `chunk_ms`; `batch(from, to)` makes the series of one piece (both ends included).
pub async fn history(
    step: i64,
    spare_steps: i64,
    span_ms: i64,
    chunk_ms: i64,
    batch: impl Fn(i64, i64) -> Vec<WriteSeries>,
) -> History {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Options::new(dir.path())).unwrap());
    let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, QueryLimits::default()));
    let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let now = wall / step * step - spare_steps * step;
    for chunk in (now - span_ms..=now).step_by(chunk_ms as usize) {
        backend.write(batch(chunk, (chunk + chunk_ms - step).min(now))).await.unwrap();
    }
    History { backend, now, _dir: dir }
}
