//! Engine options, with the defaults an operator gets when the configuration names none.

use crate::chunk::{DEFAULT_ENCODING, Encoding};
use crate::wal::WalSync;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Options {
    pub data_dir: PathBuf,
    /// Samples older than this, measured from the wall clock, are dropped on ingest and deleted.
    pub retention: Duration,
    /// Bytes the data directory may hold (blocks, WAL, head chunks): past it the oldest blocks are
    /// deleted, whatever their age (`None`: no bound; time retention alone). The WAL and the head are
    /// never deleted for it, so acknowledged data not yet in a block is never lost to this bound.
    pub max_disk_size: Option<u64>,
    /// Samples further than this in the future make their batch invalid.
    pub max_future: Duration,
    pub wal_sync: WalSync,
    pub wal_segment_bytes: u64,
    /// The time range of a block cut from the head, and when the head is cut: once its samples span this.
    pub block_range_ms: i64,
    /// Compaction levels, ascending: blocks inside one aligned window of each length are merged into
    /// one block once the window is closed (or at once when they overlap).
    pub compact_ranges_ms: Vec<i64>,
    /// The memory the whole store may use. The head is flushed early past half of its share when that
    /// frees memory (`Shared::early_flush_due`), writes are refused (503) while the head holds more
    /// than `head_budget_ratio` of it, and new series are refused while the head's series (labels,
    /// postings: what a flush does not free while they stay active) hold more than
    /// `series_budget_ratio` of it, which keeps part of the head's share for samples. Blocks hold next
    /// to nothing on the heap (their indexes are read in place from mapped files), so the rest is for
    /// queries, flushes and compactions, requests in flight and the allocator.
    pub memory_limit: u64,
    pub head_budget_ratio: f64,
    pub series_budget_ratio: f64,
    pub encoding: Encoding,
    /// Most live series in the head: a batch that would create more is refused (400) naming a metric
    /// it adds to. A guard against label explosions that the memory budget alone would only catch
    /// once memory is full.
    pub max_series: usize,
    /// Most live series of one metric name: a batch that would pass it is refused (400) naming the
    /// metric, the usual sign of an unbounded label (a request id, a timestamp) on one metric.
    pub max_series_per_metric: usize,
    /// Bytes of decoded chunks kept for reads of recently read series (0: none). `None`: a sixteenth
    /// of `memory_limit`, at most [`DEFAULT_CHUNK_CACHE_MAX`]; see [`Options::chunk_cache_bytes`].
    pub chunk_cache: Option<usize>,
}

/// The largest default chunk cache: 16 M decoded samples, about 1,900 series over 24 h at 10 s.
pub const DEFAULT_CHUNK_CACHE_MAX: usize = 256 << 20;

/// Twice the active series of the fleet one server is designed for (docs/limits.md).
pub const DEFAULT_MAX_SERIES: usize = 4_000_000;
/// A per-GPU metric over 25,000 8-GPU nodes stays well under it.
pub const DEFAULT_MAX_SERIES_PER_METRIC: usize = 500_000;

impl Options {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Options {
            data_dir: data_dir.into(),
            retention: Duration::from_secs(35 * 24 * 3600),
            max_disk_size: None,
            max_future: Duration::from_secs(10 * 60),
            wal_sync: WalSync::Always,
            wal_segment_bytes: 128 << 20,
            block_range_ms: 2 * 3600 * 1000,
            compact_ranges_ms: vec![6 * 3600 * 1000, 24 * 3600 * 1000],
            memory_limit: default_memory_limit(),
            head_budget_ratio: 0.4,
            series_budget_ratio: 0.25,
            encoding: DEFAULT_ENCODING,
            max_series: DEFAULT_MAX_SERIES,
            max_series_per_metric: DEFAULT_MAX_SERIES_PER_METRIC,
            chunk_cache: None,
        }
    }

    pub fn head_budget(&self) -> usize {
        (self.memory_limit as f64 * self.head_budget_ratio) as usize
    }

    pub fn series_budget(&self) -> usize {
        (self.memory_limit as f64 * self.series_budget_ratio) as usize
    }

    /// The chunk cache's bound: the configured one, or a sixteenth of the memory limit (part of what
    /// the budget leaves to queries), at most [`DEFAULT_CHUNK_CACHE_MAX`].
    pub fn chunk_cache_bytes(&self) -> usize {
        self.chunk_cache.unwrap_or(((self.memory_limit / 16) as usize).min(DEFAULT_CHUNK_CACHE_MAX))
    }
}

/// Half of the memory the process may use — the machine's (`MemTotal` in /proc/meminfo), or its
/// cgroup's limit where that is lower, as in a container — at least 256 MiB (4 GiB if unreadable).
///
/// `argus serve` is meant to own the machine it runs on, as a Prometheus or VictoriaMetrics server
/// does (Prometheus sets no limit; VictoriaMetrics lets its caches take 60 %); the store's budget
/// leaves the other half to the analyzer, alertd, queries and the page cache. A quarter admitted only
/// ~850,000 series on a 24 GiB machine, less than the soak's 500,000 written series plus the
/// analyzer's results for them (1.2 M, 3.7 GiB resident).
fn default_memory_limit() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| mem_total(&s));
    let cgroup = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok().and_then(|s| cgroup_limit(&s)));
    meminfo.into_iter().chain(cgroup).min().map_or(4 << 30, |t| (t / 2).max(256 << 20))
}

/// `MemTotal` of /proc/meminfo, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
}

/// A cgroup's memory limit in bytes: cgroup v2's `memory.max` ("max" when unlimited) or v1's
/// `memory.limit_in_bytes` (a huge page-rounded number when unlimited).
fn cgroup_limit(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|&b| b < 1 << 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_limit_reads_the_machine_and_its_cgroup() {
        assert_eq!(mem_total("MemTotal:       24570220 kB\nMemFree: 1 kB\n"), Some(24570220 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(cgroup_limit("17179869184\n"), Some(16 << 30));
        assert_eq!(cgroup_limit("max\n"), None);
        assert_eq!(cgroup_limit("9223372036854771712\n"), None, "cgroup v1's unlimited");
        let limit = default_memory_limit();
        let machine = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| mem_total(&s));
        assert!(limit >= 256 << 20 && machine.is_none_or(|m| limit <= (m / 2).max(256 << 20)), "{limit}");
    }
}
