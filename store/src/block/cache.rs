//! Decoded chunks of recently read series, kept so that a dashboard refreshing the same panel does not
//! read, check and decompress the same chunks again: a hit is one copy of the samples.
//!
//! Bounded by bytes (`[store] chunk_cache_size`): least recently used chunks are dropped first. Blocks
//! are immutable and a block's id is never reused, so an entry never goes stale; the entries of a
//! block deleted by compaction or retention are simply never asked for again and age out.

use argus_model::Sample;
use lru::LruCache;
use parking_lot::Mutex;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::sync::Arc;

/// What one entry costs besides its samples: the map's slot, the list links and the `Arc`.
const ENTRY_OVERHEAD: usize = 96;

/// A chunk: the block's id and the chunk's offset in its chunks file.
type Key = (u64, u64);

/// The cache's self metrics (docs/metrics.md).
#[derive(Default, Clone)]
pub struct CacheMetrics {
    pub hits: Counter,
    pub misses: Counter,
    pub evictions: Counter,
    pub bytes: Gauge,
    pub entries: Gauge,
}

pub struct ChunkCache {
    limit: usize,
    inner: Mutex<Inner>,
    metrics: CacheMetrics,
}

struct Inner {
    lru: LruCache<Key, Arc<[Sample]>>,
    bytes: usize,
}

/// What an entry of `n` samples counts against the bound.
pub fn entry_bytes(n: usize) -> usize {
    n * std::mem::size_of::<Sample>() + ENTRY_OVERHEAD
}

impl ChunkCache {
    /// A cache holding at most `limit` bytes of decoded chunks; 0 turns it off.
    pub fn new(limit: usize, metrics: CacheMetrics) -> ChunkCache {
        ChunkCache { limit, inner: Mutex::new(Inner { lru: LruCache::unbounded(), bytes: 0 }), metrics }
    }

    pub fn enabled(&self) -> bool {
        self.limit > 0
    }

    /// The decoded samples of chunk `offset` of block `block`, if they are held; counts a hit or a miss.
    pub fn get(&self, block: u64, offset: u64) -> Option<Arc<[Sample]>> {
        if !self.enabled() {
            return None;
        }
        let got = self.inner.lock().lru.get(&(block, offset)).cloned();
        match &got {
            Some(_) => self.metrics.hits.inc(),
            None => self.metrics.misses.inc(),
        };
        got
    }

    /// Keeps a decoded chunk, dropping the least recently used ones past the bound. A chunk larger
    /// than an eighth of the bound is not kept: one huge read must not empty the cache.
    pub fn insert(&self, block: u64, offset: u64, samples: Arc<[Sample]>) {
        let cost = entry_bytes(samples.len());
        if !self.enabled() || cost > self.limit / 8 {
            return;
        }
        let mut inner = self.inner.lock();
        if let Some(old) = inner.lru.put((block, offset), samples) {
            inner.bytes -= entry_bytes(old.len());
        }
        inner.bytes += cost;
        let mut evicted = 0;
        while inner.bytes > self.limit {
            match inner.lru.pop_lru() {
                Some((_, old)) => {
                    inner.bytes -= entry_bytes(old.len());
                    evicted += 1;
                }
                None => break,
            }
        }
        self.metrics.evictions.inc_by(evicted);
        self.metrics.bytes.set(inner.bytes as i64);
        self.metrics.entries.set(inner.lru.len() as i64);
    }

    /// Bytes held, counted as [`entry_bytes`] does.
    pub fn bytes(&self) -> usize {
        self.inner.lock().bytes
    }

    pub fn len(&self) -> usize {
        self.inner.lock().lru.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(n: usize, t0: i64) -> Arc<[Sample]> {
        (0..n).map(|i| Sample::new(t0 + i as i64, i as f64)).collect()
    }

    #[test]
    fn stays_under_its_byte_bound_and_drops_the_least_recently_used() {
        let limit = entry_bytes(100) * 20;
        let m = CacheMetrics::default();
        let c = ChunkCache::new(limit, m.clone());
        for i in 0..20 {
            c.insert(1, i, chunk(100, i as i64 * 100));
        }
        assert_eq!(c.len(), 20);
        assert_eq!(c.bytes(), limit);
        // Touch chunk 0 so that chunk 1 is the oldest, then add one more.
        assert!(c.get(1, 0).is_some());
        c.insert(2, 0, chunk(100, 0));
        assert!(c.bytes() <= limit);
        assert!(c.get(1, 1).is_none(), "the least recently used chunk is evicted");
        assert!(c.get(1, 0).is_some(), "a recently read chunk stays");
        assert_eq!(m.evictions.get(), 1);
        // A bigger chunk pushes out as many small ones as its size needs (here the next three oldest).
        c.insert(3, 0, chunk(250, 0));
        assert!(c.bytes() <= limit, "{} > {limit}", c.bytes());
        assert_eq!(m.evictions.get(), 4);
        assert_eq!(m.bytes.get() as usize, c.bytes());
        assert_eq!(m.entries.get() as usize, c.len());
        assert_eq!(m.hits.get(), 2);
        assert_eq!(m.misses.get(), 1);
        assert_eq!(&*c.get(3, 0).unwrap(), &*chunk(250, 0));
    }

    #[test]
    fn replacing_an_entry_counts_its_bytes_once() {
        let c = ChunkCache::new(1 << 20, CacheMetrics::default());
        c.insert(1, 8, chunk(10, 0));
        c.insert(1, 8, chunk(20, 0));
        assert_eq!(c.len(), 1);
        assert_eq!(c.bytes(), entry_bytes(20));
    }

    #[test]
    fn oversized_chunks_and_a_zero_bound_keep_nothing() {
        let c = ChunkCache::new(entry_bytes(100), CacheMetrics::default());
        c.insert(1, 0, chunk(100, 0));
        assert!(c.is_empty(), "a chunk over an eighth of the bound is not kept");
        let off = ChunkCache::new(0, CacheMetrics::default());
        off.insert(1, 0, chunk(1, 0));
        assert!(off.get(1, 0).is_none() && off.is_empty());
    }
}
