//! The store's self metrics, exposed on `/metrics`. Each is listed in docs/metrics.md.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Reason {
    pub reason: String,
}

#[derive(Default)]
pub struct Metrics {
    pub samples_ingested: Counter,
    pub events_ingested: Counter,
    pub samples_dropped: Family<Reason, Counter>,
    pub batches_rejected: Family<Reason, Counter>,
    pub head_series: Gauge,
    pub head_samples: Gauge,
    pub head_bytes: Gauge,
    pub head_chunk_file_bytes: Gauge,
    pub head_chunk_write_failures: Counter,
    pub blocks: Gauge,
    pub blocks_bytes: Gauge,
    pub wal_fsyncs: Counter,
    pub wal_fsync_seconds: Counter<f64, AtomicU64>,
    pub wal_truncated_bytes: Counter,
    pub flushes: Counter,
    pub compactions: Counter,
    pub blocks_deleted_retention: Counter,
    pub blocks_deleted_size: Counter,
    pub disk_bytes: Gauge,
    /// The most `disk_bytes` held at once since start, blocks being written beside their sources
    /// included.
    pub disk_peak_bytes: Gauge,
    pub max_disk_bytes: Gauge,
    pub chunk_cache: crate::block::cache::CacheMetrics,
}

impl Metrics {
    pub fn register(&self, r: &mut Registry) {
        let r = r.sub_registry_with_prefix("argus_store");
        r.register("samples_ingested", "Samples stored (acknowledged)", self.samples_ingested.clone());
        r.register("events_ingested", "Events (string fields) stored", self.events_ingested.clone());
        r.register(
            "samples_dropped",
            "Samples accepted in a batch but not stored, by reason",
            self.samples_dropped.clone(),
        );
        r.register("batches_rejected", "Write requests refused, by reason", self.batches_rejected.clone());
        r.register("head_series", "Series in the in-memory head", self.head_series.clone());
        r.register("head_samples", "Samples in the in-memory head", self.head_samples.clone());
        r.register("head_bytes", "Approximate bytes held by the head", self.head_bytes.clone());
        r.register(
            "head_chunk_file_bytes",
            "Size of the head's current chunk file: sealed chunks and the room reserved for the next ones",
            self.head_chunk_file_bytes.clone(),
        );
        r.register(
            "head_chunk_write_failures",
            "Head chunks the chunk file refused (kept open in memory instead)",
            self.head_chunk_write_failures.clone(),
        );
        r.register("blocks", "Persistent blocks", self.blocks.clone());
        r.register("blocks_bytes", "Bytes of persistent blocks on disk", self.blocks_bytes.clone());
        r.register("wal_fsyncs", "WAL fsyncs (one per group commit)", self.wal_fsyncs.clone());
        r.register("wal_fsync_seconds", "Time spent in WAL fsync", self.wal_fsync_seconds.clone());
        r.register(
            "wal_truncated_bytes",
            "Bytes of torn or corrupt WAL cut off at recovery",
            self.wal_truncated_bytes.clone(),
        );
        r.register("flushes", "Head flushes into blocks", self.flushes.clone());
        r.register("compactions", "Block compactions", self.compactions.clone());
        r.register(
            "blocks_deleted_retention",
            "Blocks deleted for being past retention",
            self.blocks_deleted_retention.clone(),
        );
        r.register(
            "blocks_deleted_size",
            "Blocks deleted to keep the data directory under max_disk_size",
            self.blocks_deleted_size.clone(),
        );
        r.register(
            "disk_bytes",
            "Bytes of the data directory counted against max_disk_size: blocks, WAL and head chunks",
            self.disk_bytes.clone(),
        );
        r.register(
            "disk_peak_bytes",
            "The most bytes the data directory held at once since start (blocks, WAL, head chunks, and blocks \
             being written beside the WAL or the blocks they replace)",
            self.disk_peak_bytes.clone(),
        );
        r.register("max_disk_bytes", "store.max_disk_size (0: no bound)", self.max_disk_bytes.clone());
        let c = &self.chunk_cache;
        r.register("chunk_cache_hits", "Chunk reads answered by the decoded-chunk cache", c.hits.clone());
        r.register("chunk_cache_misses", "Chunk reads that decoded the chunk from its block", c.misses.clone());
        r.register(
            "chunk_cache_evictions",
            "Decoded chunks dropped from the cache for its size bound",
            c.evictions.clone(),
        );
        r.register("chunk_cache_bytes", "Bytes held by the decoded-chunk cache", c.bytes.clone());
        r.register("chunk_cache_entries", "Decoded chunks held by the cache", c.entries.clone());
    }

    pub fn dropped(&self, reason: &str, n: u64) {
        if n > 0 {
            self.samples_dropped.get_or_create(&Reason { reason: reason.to_string() }).inc_by(n);
        }
    }

    pub fn rejected(&self, reason: &str) {
        self.batches_rejected.get_or_create(&Reason { reason: reason.to_string() }).inc();
    }
}
