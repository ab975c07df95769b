//! The embedded engine: the head, the WAL with group commit, and the blocks, behind one handle.
//!
//! Writes: a request resolves its series in the head, then hands one WAL entry to the committer
//! thread, which writes and fsyncs a group of entries, applies them to the head in WAL order, and only
//! then acknowledges them. Reads merge blocks (by `seq`), the frozen head and the head; where two hold
//! the same timestamp, the newer source wins.

mod append;
mod commit;
mod flush;
mod options;
mod read;
mod snapshot;

pub use append::{WriteError, WriteStats};
pub use options::Options;
pub use snapshot::{SNAPSHOTS_DIR, Snapshot, SnapshotError, SnapshotPart};

use crate::block::{Block, BlockError, ChunkCache};
use crate::head::Head;
use crate::metrics::Metrics;
use crate::wal::{Record, Wal, WalError};
use argus_model::{Event, Labels, Matcher, Sample};
use commit::Committer;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(transparent)]
    Wal(#[from] WalError),
    #[error(transparent)]
    Block(#[from] BlockError),
    #[error("data directory {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the store is shutting down")]
    Closed,
    #[error("a thread reading the store panicked")]
    ReaderPanicked,
    #[error("data directory {0} is in use by another Argus process")]
    Locked(PathBuf),
    #[error(transparent)]
    HeadChunk(#[from] crate::head::chunks::ChunkReadError),
}

pub use argus_store_api::Series;

pub(crate) struct Shared {
    pub opts: Options,
    pub head: RwLock<Head>,
    /// Sorted by `seq`, oldest first.
    pub blocks: RwLock<Vec<Arc<Block>>>,
    pub wal: Mutex<Wal>,
    /// Held by a flush or a compaction. It keeps the frozen head (and the WAL segment after it) of a
    /// flush whose blocks could not be written (a full disk), for the next flush to write first.
    pub flush_lock: Mutex<Option<(Arc<crate::head::Frozen>, u64)>>,
    pub next_id: AtomicU64,
    pub metrics: Metrics,
    /// Decoded chunks of recently read series (`Options::chunk_cache_bytes`).
    pub cache: ChunkCache,
    /// Whether the data directory last held over 80 % of `max_disk_size` (said once per crossing).
    pub disk_high: std::sync::atomic::AtomicBool,
    _lock: fs::File,
}

/// Under `max_disk_size`, the head is cut into blocks once the WAL and head chunks pass this part of
/// the bound ([`Shared::size_flush_due`]) …
pub(crate) const LIVE_FLUSH_PART: u64 = 16;
/// … and writes wait (503) while they hold over this part ([`Db::over_disk`]).
pub(crate) const LIVE_REFUSE_PART: u64 = 8;

/// What [`Db::span_stats`] finds over a span of time.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SpanStats {
    /// Chunks of the blocks and of the head (sealed and open) overlapping the span.
    pub chunks: u64,
    /// First and last sample times of the blocks and head series overlapping it, in milliseconds.
    pub min_time: Option<i64>,
    pub max_time: Option<i64>,
}

pub struct Db {
    shared: Arc<Shared>,
    committer: Committer,
}

pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

impl Db {
    /// Opens (or creates) the store in `opts.data_dir`, replaying the WAL into the head.
    pub fn open(opts: Options) -> Result<Db, DbError> {
        let dir = opts.data_dir.clone();
        let blocks_dir = dir.join("blocks");
        fs::create_dir_all(&blocks_dir).map_err(|source| DbError::Io { path: blocks_dir.clone(), source })?;
        // Two processes writing one WAL would corrupt it: hold an exclusive lock while open.
        let lock_path = dir.join("lock");
        let lock = fs::File::create(&lock_path).map_err(|source| DbError::Io { path: lock_path.clone(), source })?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => return Err(DbError::Locked(dir.clone())),
            Err(fs::TryLockError::Error(source)) => return Err(DbError::Io { path: lock_path, source }),
        }
        snapshot::remove_incomplete(&dir)?;
        let blocks = load_blocks(&blocks_dir)?;
        let next_id = blocks.iter().map(|b| b.meta.id.max(b.meta.seq)).max().unwrap_or(0) + 1;
        let head_dir = dir.join("head");
        let mut head = Head::with_dir(&head_dir).map_err(|source| DbError::Io { path: head_dir, source })?;
        let mut unknown = 0usize;
        let mut events = Vec::new();
        let (wal, report) = Wal::open(&dir.join("wal"), opts.wal_segment_bytes, |records| {
            for r in records {
                match r {
                    Record::Series(s) => s.into_iter().for_each(|(r, l)| head.insert(r, l)),
                    Record::Samples(s) => unknown += head.append(&s),
                    Record::Events(e) => events.extend(e),
                }
            }
        })?;
        head.append_events(events);
        let metrics = Metrics::default();
        for (path, bytes, why) in &report.truncated {
            tracing::warn!(path = %path.display(), bytes, reason = %why, "Truncated a torn WAL tail on recovery");
            metrics.wal_truncated_bytes.inc_by(*bytes);
        }
        if unknown > 0 {
            tracing::warn!(samples = unknown, "WAL samples referenced unknown series and were skipped");
        }
        tracing::info!(
            segments = report.segments,
            entries = report.entries,
            series = head.series_count(),
            samples = head.sample_count(),
            blocks = blocks.len(),
            "Store opened"
        );
        let cache = ChunkCache::new(opts.chunk_cache_bytes(), metrics.chunk_cache.clone());
        let shared = Arc::new(Shared {
            opts,
            head: RwLock::new(head),
            blocks: RwLock::new(blocks),
            wal: Mutex::new(wal),
            flush_lock: Mutex::new(None),
            next_id: AtomicU64::new(next_id),
            metrics,
            cache,
            disk_high: std::sync::atomic::AtomicBool::new(false),
            _lock: lock,
        });
        shared.metrics.max_disk_bytes.set(shared.opts.max_disk_size.unwrap_or(0) as i64);
        shared.update_gauges();
        let committer = Committer::start(shared.clone());
        Ok(Db { shared, committer })
    }

    pub fn options(&self) -> &Options {
        &self.shared.opts
    }

    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// Label sets of the series selected by the matchers with samples in [mint, maxt], sorted.
    pub fn series(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<Vec<Arc<Labels>>, DbError> {
        let mut set: BTreeSet<Arc<Labels>> = BTreeSet::new();
        {
            let head = self.shared.head.read();
            if let Some(f) = &head.frozen {
                set.extend(f.select_labels(matchers, mint, maxt));
            }
            set.extend(head.select_labels(matchers, mint, maxt));
        }
        // The blocks after the head, as a read takes them, so that a flush in between is not missed.
        for b in self.blocks_in(mint, maxt) {
            set.extend(b.select_labels(matchers, mint, maxt)?.into_iter().map(Arc::new));
        }
        Ok(set.into_iter().collect())
    }

    /// Label names of the selected series, sorted. With no matcher, the names of every series in the
    /// head and in the blocks overlapping [mint, maxt], read from the blocks' label tables.
    pub fn label_names(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<Vec<String>, DbError> {
        let mut names = BTreeSet::new();
        if matchers.is_empty() {
            for b in self.blocks_in(mint, maxt) {
                names.extend(b.label_names()?);
            }
        }
        for s in self.series_or_head(matchers, mint, maxt)? {
            names.extend(s.iter().map(|l| l.name.clone()));
        }
        Ok(names.into_iter().collect())
    }

    /// Values of one label over the selected series, sorted; with no matcher, as for
    /// [`Db::label_names`].
    pub fn label_values(&self, name: &str, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<Vec<String>, DbError> {
        let mut values = BTreeSet::new();
        if matchers.is_empty() {
            for b in self.blocks_in(mint, maxt) {
                values.extend(b.label_values(name)?);
            }
        }
        for s in self.series_or_head(matchers, mint, maxt)? {
            if let Some(v) = s.get(name) {
                values.insert(v.to_string());
            }
        }
        Ok(values.into_iter().collect())
    }

    /// The blocks overlapping [mint, maxt], taken out of the blocks' lock so that reading them holds
    /// up no flush.
    pub(crate) fn blocks_in(&self, mint: i64, maxt: i64) -> Vec<Arc<Block>> {
        self.shared.blocks.read().iter().filter(|b| b.overlaps(mint, maxt)).cloned().collect()
    }

    /// Chunks and first and last sample times of the data overlapping [mint, maxt], from the blocks'
    /// `meta.json` and the head's series in memory; no chunk is read. A block, or the head (or the
    /// frozen head being flushed), overlapping the span in part counts whole.
    pub fn span_stats(&self, mint: i64, maxt: i64) -> SpanStats {
        let inside = |&(a, b): &(i64, i64)| a <= maxt && b >= mint;
        let mut ranges = Vec::new();
        let mut stats = SpanStats::default();
        {
            let head = self.shared.head.read();
            if let Some(r) = head.time_range().filter(inside) {
                ranges.push(r);
                stats.chunks += head.chunk_count();
            }
            if let Some(f) = &head.frozen {
                let before = ranges.len();
                ranges.extend(f.series.iter().filter_map(|(_, d)| d.time_range()).filter(inside));
                if ranges.len() > before {
                    stats.chunks += f.chunk_count();
                }
            }
        }
        for b in self.blocks_in(mint, maxt) {
            stats.chunks += b.meta.chunks;
            ranges.push((b.meta.min_time, b.meta.max_time));
        }
        stats.min_time = ranges.iter().map(|r| r.0).min();
        stats.max_time = ranges.iter().map(|r| r.1).max();
        stats
    }

    /// The selected series; with no matcher, every series of the head (blocks answer from their label
    /// tables instead).
    fn series_or_head(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<Vec<Arc<Labels>>, DbError> {
        if matchers.is_empty() {
            // Every series has a name; `=~".+"` on it selects all.
            let all =
                [Matcher::new(argus_model::METRIC_NAME, argus_model::MatchOp::RegexMatch, ".+").expect("static regex")];
            let head = self.shared.head.read();
            let mut out: Vec<Arc<Labels>> = head.select_labels(&all, mint, maxt);
            if let Some(f) = &head.frozen {
                out.extend(f.select_labels(&all, mint, maxt));
            }
            return Ok(out);
        }
        self.series(matchers, mint, maxt)
    }

    /// Events whose labels the matchers select, in [mint, maxt], sorted by time.
    pub fn events(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<Vec<Event>, DbError> {
        let mut out = Vec::new();
        {
            let head = self.shared.head.read();
            let keep = |e: &&Event| e.t >= mint && e.t <= maxt && matches(matchers, &e.labels);
            if let Some(f) = &head.frozen {
                out.extend(f.events.iter().filter(keep).cloned());
            }
            out.extend(head.events().iter().filter(keep).cloned());
        }
        // The blocks after the head, as a read takes them, so that a flush in between is not missed.
        let blocks: Vec<Arc<Block>> = self.shared.blocks.read().clone();
        for b in &blocks {
            out.extend(b.events(matchers, mint, maxt)?);
        }
        // A rewritten event (same series, time and text) is one event, as a rewritten sample is one sample.
        out.sort_by(Event::cmp_by_time);
        out.dedup();
        Ok(out)
    }

    /// Moves the whole head into blocks, truncates the WAL and compacts; returns once done.
    pub fn flush(&self) -> Result<(), DbError> {
        flush::flush(&self.shared, &self.committer)?;
        flush::compact(&self.shared)?;
        Ok(())
    }

    /// Periodic upkeep: flush when the head spans a block range, when an early flush would give
    /// memory back ([`Shared::early_flush_due`]) or disk back under `max_disk_size`
    /// ([`Shared::size_flush_due`]), or when writes are refused for memory and a flush would free idle
    /// series; compact, and delete blocks past retention or past `max_disk_size`.
    pub fn maintain(&self) -> Result<(), DbError> {
        // The read lock for the common case; the write lock only when over budget, where asking the head
        // to bury idle series at its next freeze changes it.
        let (span, early, over) = {
            let h = self.shared.head.read();
            (
                h.time_range().map_or(0, |(a, b)| b - a),
                self.shared.early_flush_due(&h),
                self.shared.over_budget(&h, 0, 0),
            )
        };
        let reclaim = over && self.shared.head.write().reclaim_soon();
        if reclaim || span >= self.shared.opts.block_range_ms || early || (span > 0 && self.shared.size_flush_due()) {
            flush::flush(&self.shared, &self.committer)?;
        }
        flush::compact(&self.shared)?;
        flush::apply_retention(&self.shared, now_ms())?;
        Ok(())
    }

    /// Whether the head, or its series, hold more than their share of the memory limit (writes should
    /// be refused).
    pub fn over_budget(&self) -> bool {
        let head = self.shared.head.read();
        self.shared.over_budget(&head, 0, 0)
    }

    /// Whether, under `max_disk_size`, the WAL and the head's chunks hold more than an eighth of it
    /// ([`LIVE_REFUSE_PART`]): writes arrive faster than the upkeep cuts them into blocks (which begins
    /// at a sixteenth), and only blocks can be deleted to keep the bound, so writes should wait for the
    /// next flush.
    pub fn over_disk(&self) -> bool {
        self.shared.live_over(LIVE_REFUSE_PART)
    }

    /// Why writes should wait now, if they should: both refusals are a 503 with `Retry-After` that the
    /// upkeep's next flush lifts.
    pub fn write_pressure(&self) -> Option<Pressure> {
        if self.over_budget() {
            Some(Pressure::Memory)
        } else if self.over_disk() {
            Some(Pressure::Disk)
        } else {
            None
        }
    }

    /// Bytes of the head, for the admission check and the status page.
    pub fn head_bytes(&self) -> usize {
        self.shared.head.read().bytes()
    }

    /// Stops the committer after it has written what it was given. Callers flush first if they want
    /// the head in blocks; the WAL alone keeps everything acknowledged.
    pub fn close(self) {
        self.committer.stop();
    }
}

/// Why the store refuses writes for now ([`Db::write_pressure`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pressure {
    /// The head, or its series, over their share of `memory_limit`.
    Memory,
    /// The WAL and the head's chunks over an eighth of `max_disk_size`.
    Disk,
}

impl Pressure {
    /// The `reason` of `argus_store_batches_rejected_total`.
    pub fn reason(self) -> &'static str {
        match self {
            Pressure::Memory => "memory",
            Pressure::Disk => "disk",
        }
    }

    /// What a refused writer is told.
    pub fn message(self) -> &'static str {
        match self {
            Pressure::Memory => "the store is over its memory budget and flushing; retry later",
            Pressure::Disk => {
                "the store's WAL holds over an eighth of store.max_disk_size and is being cut into blocks; retry later"
            }
        }
    }
}

impl Shared {
    pub fn update_gauges(&self) {
        let m = &self.metrics;
        {
            let h = self.head.read();
            m.head_series.set(h.series_count() as i64);
            m.head_samples.set(h.sample_count() as i64);
            m.head_bytes.set(h.bytes() as i64);
            m.head_chunk_file_bytes.set(h.chunk_file_bytes() as i64);
            let failures = h.chunk_write_failures();
            m.head_chunk_write_failures.inc_by(failures.saturating_sub(m.head_chunk_write_failures.get()));
        }
        let b = self.blocks.read();
        m.blocks.set(b.len() as i64);
        m.blocks_bytes.set(b.iter().map(|b| b.size as i64).sum());
    }

    /// Whether the head should be cut into a block before its block range is over: it holds more than
    /// half its share of the memory limit, and at least a quarter of that share is samples and events,
    /// which a flush frees — or it is within a tenth of its share, where writes are about to be refused
    /// and only a flush lets them in again. A head that is mostly its series' labels and postings —
    /// many series, few samples each — keeps them after a flush, so flushing it any earlier would cut
    /// small blocks and free almost nothing.
    pub fn early_flush_due(&self, head: &Head) -> bool {
        let share = self.opts.head_budget();
        let samples = head.bytes().saturating_sub(head.label_bytes());
        head.bytes() > share / 2 && (samples >= share / 4 || head.bytes() > share / 10 * 9)
    }

    /// Whether, under `max_disk_size`, the WAL and the head's chunks hold more than a sixteenth of it
    /// ([`LIVE_FLUSH_PART`]). They are the least compact form of the data (the WAL takes about ten times
    /// a block's bytes per sample), and the bound cannot delete them, only blocks: cut into a block, the
    /// same samples leave the rest of the bound to the blocks, whose oldest go first. Without this a
    /// bound smaller than a block range's WAL could never hold, and every new block would be deleted as
    /// it came. Whatever the WAL holds at its largest is taken from the blocks for good (blocks deleted
    /// to make room for it do not come back when it is cut), so it is kept small: at a quarter of the
    /// bound, a backfill kept 6 of the 12 hours the bound could hold as blocks.
    pub fn size_flush_due(&self) -> bool {
        self.live_over(LIVE_FLUSH_PART)
    }

    /// Whether, under `max_disk_size`, the WAL and the head's chunks hold more than `1/part` of it.
    fn live_over(&self, part: u64) -> bool {
        self.opts.max_disk_size.is_some_and(|max| flush::live_bytes(self).is_ok_and(|live| live > max / part))
    }

    /// Whether `series` more bytes of new series and `samples` more bytes of samples would put the head
    /// past its share of the memory limit, or its series past theirs: the one budget rule for admitting
    /// requests and creating series.
    pub fn over_budget(&self, head: &Head, series: usize, samples: usize) -> bool {
        head.bytes() + series + samples > self.opts.head_budget()
            || head.label_bytes() + series > self.opts.series_budget()
    }

    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::SeqCst)
    }
}

pub(crate) fn matches(matchers: &[Matcher], labels: &Labels) -> bool {
    matchers.iter().all(|m| m.matches(labels.get(&m.name).unwrap_or("")))
}

/// Merges sorted sample lists, oldest list first; at equal timestamps the latest list wins.
pub(crate) fn merge_samples(lists: Vec<Vec<Sample>>) -> Vec<Sample> {
    let mut out = Vec::new();
    for l in lists {
        merge_into(&mut out, &l);
    }
    out
}

/// Merges the sorted `newer` into the sorted `out`; at equal timestamps `newer` wins. Sources of
/// consecutive time ranges, the common case, are only appended.
pub(crate) fn merge_into(out: &mut Vec<Sample>, newer: &[Sample]) {
    let Some(first) = newer.first() else { return };
    if out.last().is_none_or(|l| l.t < first.t) {
        out.extend_from_slice(newer);
        return;
    }
    let old = std::mem::take(out);
    out.reserve(old.len() + newer.len());
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < newer.len() {
        if old[i].t < newer[j].t {
            out.push(old[i]);
            i += 1;
        } else {
            if old[i].t == newer[j].t {
                i += 1;
            }
            out.push(newer[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&old[i..]);
    out.extend_from_slice(&newer[j..]);
}

/// Opens every block; removes half-written (`.tmp`) ones and sources of an interrupted compaction.
fn load_blocks(dir: &Path) -> Result<Vec<Arc<Block>>, DbError> {
    let io = |source| DbError::Io { path: dir.to_path_buf(), source };
    let mut blocks = Vec::new();
    for e in fs::read_dir(dir).map_err(io)? {
        let e = e.map_err(io)?;
        let path = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if name.ends_with(".tmp") || name.ends_with(".deleted") {
            tracing::warn!(path = %path.display(), "Removing an incomplete block left by a crash");
            fs::remove_dir_all(&path).map_err(io)?;
            continue;
        }
        if name.starts_with("b-") {
            blocks.push(Block::open(&path)?);
        }
    }
    let replaced: BTreeSet<u64> = blocks.iter().flat_map(|b| b.meta.sources.iter().copied()).collect();
    let mut kept = Vec::new();
    for b in blocks {
        if replaced.contains(&b.meta.id) {
            tracing::warn!(block = %b.dir.display(), "Removing a block already compacted into another");
            fs::remove_dir_all(&b.dir).map_err(io)?;
        } else {
            kept.push(Arc::new(b));
        }
    }
    kept.sort_by_key(|b| (b.meta.seq, b.meta.id));
    Ok(kept)
}

#[cfg(test)]
mod tests;
