//! Decoded chunks of recently read series, kept so that a dashboard refreshing the same panel does not
//! read, check and decompress the same chunks again: a hit is one copy of the samples.
//!
//! Bounded by bytes (`[store] chunk_cache_size`). The policy is quick_cache's (CLOCK-Pro, close to
//! S3-FIFO), not least-recently-used: a dashboard reads its panels in the same order at every
//! refresh, and when their chunks add up to more than the bound, LRU drops each chunk just before it
//! is read again and hits nothing; this policy keeps a steady part of such a loop (two thirds of the
//! reads hit when the loop is a quarter larger than the cache) and still lets one-off reads pass
//! through without pushing out what is read again and again. Blocks are immutable and a block's id is
//! never reused, so an entry never goes stale; the entries of a block deleted by compaction or
//! retention are simply never asked for again and age out.

use argus_model::Sample;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Lifecycle, Weighter};
use std::sync::Arc;

/// What one entry costs besides its samples: the map's slot, the queue's links and the `Arc`.
const ENTRY_OVERHEAD: usize = 96;

/// A chunk: the block's id and the chunk's offset in its chunks file.
type Key = (u64, u64);

/// A decoded chunk as the cache holds it. Samples taken at a fixed interval (a scraper's or the
/// collector's regular timestamps) keep only their values, half the memory of whole samples, so
/// twice as many of them fit under the bound; their times are worked out again as they are copied.
pub enum Cached {
    /// Sample `i` is at `start + i * step` (`step` > 0).
    Regular {
        start: i64,
        step: i64,
        vals: Box<[f64]>,
    },
    Samples(Box<[Sample]>),
}

type Chunk = Arc<Cached>;

impl Cached {
    /// A chunk's decoded times and values, in time order.
    pub fn new(ts: &[i64], vals: &[f64]) -> Cached {
        debug_assert_eq!(ts.len(), vals.len());
        // The same test the pco encoder uses to store times as a start and a step; a step of 0 or one
        // that wraps (one sample, out-of-contract times) keeps whole samples.
        if let Some((start, step)) = crate::chunk::regular_step(ts).filter(|&(_, step)| (step as i64) > 0) {
            return Cached::Regular { start, step: step as i64, vals: vals.into() };
        }
        Cached::Samples(ts.iter().zip(vals).map(|(&t, &v)| Sample::new(t, v)).collect())
    }

    /// What the entry counts against the cache's bound.
    pub fn bytes(&self) -> usize {
        ENTRY_OVERHEAD
            + match self {
                Cached::Regular { vals, .. } => std::mem::size_of_val(&**vals),
                Cached::Samples(s) => std::mem::size_of_val(&**s),
            }
    }

    /// Appends the samples with `mint <= t <= maxt`.
    pub fn append_range(&self, mint: i64, maxt: i64, out: &mut Vec<Sample>) {
        match self {
            Cached::Regular { start, step, vals } => {
                // Wide arithmetic: the bounds may be the far ends of time.
                let (start, step, n) = (i128::from(*start), i128::from(*step), vals.len() as i128);
                let a = ((i128::from(mint) - start).max(0) + step - 1) / step;
                let a = a.min(n);
                let b = if i128::from(maxt) < start { 0 } else { ((i128::from(maxt) - start) / step + 1).min(n) };
                if a < b {
                    let (a, b) = (a as usize, b as usize);
                    // In range, since every one of these times was a decoded sample's.
                    let at = |i: usize| (start + step * i as i128) as i64;
                    out.extend(vals[a..b].iter().enumerate().map(|(k, &v)| Sample::new(at(a + k), v)));
                }
            }
            Cached::Samples(s) => {
                let (a, b) = (s.partition_point(|x| x.t < mint), s.partition_point(|x| x.t <= maxt));
                out.extend_from_slice(&s[a..b.max(a)]);
            }
        }
    }
}

/// The cache's self metrics (docs/metrics.md).
#[derive(Default, Clone)]
pub struct CacheMetrics {
    pub hits: Counter,
    pub misses: Counter,
    pub evictions: Counter,
    pub bytes: Gauge,
    pub entries: Gauge,
}

/// Weighs an entry by [`Cached::bytes`].
#[derive(Clone)]
struct ByBytes;

impl Weighter<Key, Chunk> for ByBytes {
    fn weight(&self, _: &Key, chunk: &Chunk) -> u64 {
        chunk.bytes() as u64
    }
}

/// Counts evictions into the cache's metric.
#[derive(Clone)]
struct CountEvictions(Counter);

impl Lifecycle<Key, Chunk> for CountEvictions {
    type RequestState = ();

    fn on_evict(&self, _: &mut (), _: Key, _: Chunk) {
        self.0.inc();
    }
}

pub struct ChunkCache {
    limit: usize,
    /// `None` when the cache is off.
    inner: Option<Cache<Key, Chunk, ByBytes, DefaultHashBuilder, CountEvictions>>,
    metrics: CacheMetrics,
}

/// The size of a typical chunk, for sizing the cache's table: two hours at a 10-second interval.
const TYPICAL_SAMPLES: usize = 720;

impl ChunkCache {
    /// A cache holding at most `limit` bytes of decoded chunks; 0 turns it off.
    pub fn new(limit: usize, metrics: CacheMetrics) -> ChunkCache {
        let inner = (limit > 0).then(|| {
            let items = (limit / (ENTRY_OVERHEAD + TYPICAL_SAMPLES * 8)).max(16);
            let hasher = DefaultHashBuilder::default();
            Cache::with(items, limit as u64, ByBytes, hasher, CountEvictions(metrics.evictions.clone()))
        });
        ChunkCache { limit, inner, metrics }
    }

    pub fn enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// The decoded samples of chunk `offset` of block `block`, if they are held; counts a hit or a miss.
    pub fn get(&self, block: u64, offset: u64) -> Option<Chunk> {
        let got = self.inner.as_ref()?.get(&(block, offset));
        match &got {
            Some(_) => self.metrics.hits.inc(),
            None => self.metrics.misses.inc(),
        };
        got
    }

    /// Keeps a decoded chunk, dropping others past the bound. A chunk larger than an eighth of the
    /// bound is not kept: one huge read must not empty the cache.
    pub fn insert(&self, block: u64, offset: u64, chunk: Chunk) {
        let Some(cache) = &self.inner else { return };
        if chunk.bytes() > self.limit / 8 {
            return;
        }
        cache.insert((block, offset), chunk);
        self.metrics.bytes.set(cache.weight() as i64);
        self.metrics.entries.set(cache.len() as i64);
    }

    /// Bytes held, counted as [`Cached::bytes`] does.
    pub fn bytes(&self) -> usize {
        self.inner.as_ref().map_or(0, |c| c.weight() as usize)
    }

    pub fn len(&self) -> usize {
        self.inner.as_ref().map_or(0, |c| c.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` samples one millisecond apart from `t0`: a regular chunk.
    fn chunk(n: usize, t0: i64) -> Chunk {
        let ts: Vec<i64> = (0..n as i64).map(|i| t0 + i).collect();
        let vals: Vec<f64> = (0..n).map(|i| i as f64).collect();
        Arc::new(Cached::new(&ts, &vals))
    }

    fn entry_bytes(n: usize) -> usize {
        chunk(n, 0).bytes()
    }

    fn all(c: &Cached) -> Vec<Sample> {
        let mut out = Vec::new();
        c.append_range(i64::MIN, i64::MAX, &mut out);
        out
    }

    #[test]
    fn regular_chunks_keep_only_their_values_and_give_back_the_same_samples() {
        let ts: Vec<i64> = (0..500).map(|i| 1_700_000_000_000 + i * 10_000).collect();
        let vals: Vec<f64> = (0..500).map(|i| (i as f64).sin()).collect();
        let regular = Cached::new(&ts, &vals);
        assert!(matches!(regular, Cached::Regular { step: 10_000, .. }));
        let mut jittered = ts.clone();
        jittered[250] += 3;
        let irregular = Cached::new(&jittered, &vals);
        assert!(matches!(irregular, Cached::Samples(_)));
        assert_eq!(regular.bytes() - ENTRY_OVERHEAD, 500 * 8, "values only");
        assert_eq!(irregular.bytes() - ENTRY_OVERHEAD, 500 * 16);
        for (c, ts) in [(&regular, &ts), (&irregular, &jittered)] {
            let want: Vec<Sample> = ts.iter().zip(&vals).map(|(&t, &v)| Sample::new(t, v)).collect();
            assert_eq!(all(c), want);
            // Every range: bounds before, on, between and after the samples.
            for (mint, maxt) in [
                (ts[0] - 5, ts[0] - 1),
                (ts[0], ts[0]),
                (ts[10] - 1, ts[20] + 1),
                (ts[10] + 1, ts[20] - 1),
                (ts[10], ts[20]),
                (ts[250] - 1, ts[250] + 4),
                (ts[499], i64::MAX),
                (ts[499] + 1, i64::MAX),
                (i64::MIN, ts[3]),
                (ts[20], ts[10]),
            ] {
                let mut got = Vec::new();
                c.append_range(mint, maxt, &mut got);
                let want: Vec<Sample> = want.iter().copied().filter(|x| x.t >= mint && x.t <= maxt).collect();
                assert_eq!(got, want, "[{mint}, {maxt}]");
            }
        }
        for short in [&[][..], &[5][..]] {
            let c = Cached::new(short, &vec![1.0; short.len()]);
            assert_eq!(all(&c).len(), short.len());
        }
    }

    #[test]
    fn stays_under_its_byte_bound_and_counts_what_it_does() {
        let limit = entry_bytes(100) * 200;
        let m = CacheMetrics::default();
        let c = ChunkCache::new(limit, m.clone());
        for i in 0..1000 {
            c.insert(1, i, chunk(100, i as i64 * 100));
            assert!(c.bytes() <= limit, "{} > {limit} after {i} inserts", c.bytes());
        }
        assert!(c.len() >= 150, "the cache holds about as much as its bound: {} entries", c.len());
        assert!(m.evictions.get() >= 1000 - 200, "{} evictions", m.evictions.get());
        assert_eq!(m.bytes.get() as usize, c.bytes());
        assert_eq!(m.entries.get() as usize, c.len());
        let held = (0..1000).filter(|&i| c.get(1, i).is_some()).count();
        assert_eq!(held, c.len());
        assert_eq!((m.hits.get() + m.misses.get()) as usize, 1000);
        assert_eq!(m.hits.get() as usize, held);
        let some = (0..1000).find(|&i| c.get(1, i).is_some()).unwrap();
        assert_eq!(all(&c.get(1, some).unwrap()), all(&chunk(100, some as i64 * 100)));
    }

    #[test]
    fn a_loop_larger_than_the_cache_still_hits() {
        // A dashboard refreshing panels whose chunks add up to a quarter more than the bound: least
        // recently used would drop every chunk just before it is read again.
        let limit = entry_bytes(720) * 800;
        let c = ChunkCache::new(limit, CacheMetrics::default());
        let (mut hits, mut reads) = (0, 0);
        for round in 0..10 {
            for i in 0..1000 {
                let hit = c.get(1, i).is_some();
                if !hit {
                    c.insert(1, i, chunk(720, 0));
                }
                if round >= 3 {
                    reads += 1;
                    hits += hit as usize;
                }
            }
        }
        assert!(hits * 2 > reads, "{hits} hits in {reads} reads");
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
