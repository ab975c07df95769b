//! Moving the head into blocks, compacting blocks, and deleting what is past retention.

use super::commit::{Committer, Job};
use super::{DbError, Shared, merge_samples};
use crate::block::{Block, BlockWriter, Lineage, write_block};
use argus_model::{Labels, Sample};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::sync::Arc;
use std::sync::mpsc;

/// Cuts the head, writes its samples as level-0 blocks (one per aligned block range they touch),
/// loads them, then drops the frozen head and the WAL segments it came from. When the blocks cannot
/// be written (a full disk), the frozen head stays readable and its WAL segments stay on disk; the
/// next flush writes it before cutting again, so nothing acknowledged is dropped.
pub(crate) fn flush(shared: &Shared, committer: &Committer) -> Result<(), DbError> {
    let mut unflushed = shared.flush_lock.lock();
    if let Some((frozen, segment)) = unflushed.take()
        && let Err(e) = write_frozen(shared, &frozen, segment)
    {
        *unflushed = Some((frozen, segment));
        return Err(e);
    }
    let (tx, rx) = mpsc::sync_channel(1);
    committer.submit(Job::Cut { done: tx })?;
    let (frozen, segment) = match rx.recv() {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            return Err(DbError::Wal(crate::wal::WalError::Io {
                path: shared.opts.data_dir.join("wal"),
                source: std::io::Error::other(e),
            }));
        }
        Err(_) => return Err(DbError::Closed),
    };
    if let Err(e) = write_frozen(shared, &frozen, segment) {
        *unflushed = Some((frozen, segment));
        return Err(e);
    }
    Ok(())
}

/// Writes a frozen head as level-0 blocks, loads them, releases the frozen head and removes the WAL
/// segments before `segment`.
fn write_frozen(shared: &Shared, frozen: &Arc<crate::head::Frozen>, segment: u64) -> Result<(), DbError> {
    let range = shared.opts.block_range_ms;
    // One writer per block range the frozen samples touch; samples go in as slices, never copied.
    let mut windows: BTreeMap<i64, BlockWriter> = BTreeMap::new();
    let writer = || BlockWriter::new(shared.opts.encoding);
    for (labels, data) in &frozen.series {
        // One series decoded at a time: the writer encodes it into its block at once.
        let samples = frozen.samples(data)?;
        let mut start = 0;
        while start < samples.len() {
            let w = samples[start].t.div_euclid(range) * range;
            let end = start + samples[start..].partition_point(|s| s.t < w + range);
            windows.entry(w).or_insert_with(writer).add_series(labels.clone(), &samples[start..end]);
            start = end;
        }
    }
    for e in &frozen.events {
        windows.entry(e.t.div_euclid(range) * range).or_insert_with(writer).add_events([e.clone()]);
    }
    let blocks_dir = shared.opts.data_dir.join("blocks");
    let mut new_blocks = Vec::new();
    for (_, w) in windows {
        let id = shared.next_id();
        let (path, _) = w.finish(&blocks_dir, Lineage { id, seq: id, level: 0, sources: Vec::new() })?;
        new_blocks.push(Arc::new(Block::open(&path)?));
    }
    let n = new_blocks.len();
    {
        let mut blocks = shared.blocks.write();
        let mut head = shared.head.write();
        blocks.extend(new_blocks);
        blocks.sort_by_key(|b| (b.meta.seq, b.meta.id));
        head.release_frozen();
    }
    let removed = shared.wal.lock().remove_before(segment)?;
    shared.metrics.flushes.inc();
    shared.update_gauges();
    tracing::info!(blocks = n, samples = frozen.sample_count(), wal_segments_removed = removed, "Flushed head");
    Ok(())
}

/// Merges blocks that share an aligned compaction window, level by level, when they overlap in time
/// or when the window is closed (the newest data is at least a block range past its end).
pub(crate) fn compact(shared: &Shared) -> Result<(), DbError> {
    let _guard = shared.flush_lock.lock();
    for &range in &shared.opts.compact_ranges_ms {
        let blocks: Vec<Arc<Block>> = shared.blocks.read().clone();
        let newest = blocks.iter().map(|b| b.meta.max_time).max().unwrap_or(i64::MIN);
        let mut windows: BTreeMap<i64, Vec<Arc<Block>>> = BTreeMap::new();
        for b in &blocks {
            windows.entry(b.meta.min_time.div_euclid(range) * range).or_default().push(b.clone());
        }
        for (start, group) in windows {
            // A block reaching past the window belongs to a larger level (or was never made by us).
            let group: Vec<Arc<Block>> = group.into_iter().filter(|b| b.meta.max_time < start + range).collect();
            if group.len() < 2 {
                continue;
            }
            let closed = start + range + shared.opts.block_range_ms <= newest;
            let overlapping = group
                .iter()
                .enumerate()
                .any(|(i, a)| group[i + 1..].iter().any(|b| a.overlaps(b.meta.min_time, b.meta.max_time)));
            if closed || overlapping {
                merge(shared, &group)?;
            }
        }
    }
    Ok(())
}

fn merge(shared: &Shared, group: &[Arc<Block>]) -> Result<(), DbError> {
    // Oldest first, so a later block's sample wins at equal timestamps.
    let mut group = group.to_vec();
    group.sort_by_key(|b| (b.meta.seq, b.meta.id));
    let mut series: HashMap<Arc<Labels>, Vec<Vec<Sample>>> = HashMap::new();
    let mut events = Vec::new();
    for b in &group {
        for (l, s) in b.all_series()? {
            series.entry(l).or_default().push(s);
        }
        events.extend(b.all_events()?);
    }
    let merged = series.into_iter().map(|(l, lists)| {
        let s = if lists.len() == 1 { lists.into_iter().next().unwrap_or_default() } else { merge_samples(lists) };
        (l, s)
    });
    let id = shared.next_id();
    let seq = group.iter().map(|b| b.meta.seq).max().unwrap_or(id);
    let level = group.iter().map(|b| b.meta.level).max().unwrap_or(0) + 1;
    let sources: Vec<u64> =
        group.iter().flat_map(|b| std::iter::once(b.meta.id).chain(b.meta.sources.iter().copied())).collect();
    let blocks_dir = shared.opts.data_dir.join("blocks");
    let Some((path, meta)) =
        write_block(&blocks_dir, shared.opts.encoding, Lineage { id, seq, level, sources }, merged, events)?
    else {
        return Ok(());
    };
    let new = Arc::new(Block::open(&path)?);
    {
        let mut blocks = shared.blocks.write();
        blocks.retain(|b| !group.iter().any(|g| g.meta.id == b.meta.id));
        blocks.push(new);
        blocks.sort_by_key(|b| (b.meta.seq, b.meta.id));
    }
    for b in &group {
        delete_block_dir(&b.dir)?;
    }
    shared.metrics.compactions.inc();
    shared.update_gauges();
    tracing::info!(sources = group.len(), samples = meta.samples, series = meta.series, "Compacted blocks");
    Ok(())
}

/// Deletes blocks whose newest sample is older than the retention window.
pub(crate) fn apply_retention(shared: &Shared, now: i64) -> Result<(), DbError> {
    let cutoff = now.saturating_sub(shared.opts.retention.as_millis() as i64);
    let expired: Vec<Arc<Block>> = {
        let mut blocks = shared.blocks.write();
        let (old, keep): (Vec<_>, Vec<_>) = blocks.drain(..).partition(|b| b.meta.max_time < cutoff);
        *blocks = keep;
        old
    };
    for b in &expired {
        tracing::info!(block = %b.dir.display(), max_time = b.meta.max_time, "Deleting block past retention");
        delete_block_dir(&b.dir)?;
        shared.metrics.blocks_deleted_retention.inc();
    }
    if !expired.is_empty() {
        shared.update_gauges();
    }
    Ok(())
}

/// Renames first so a crash mid-delete leaves a `.deleted` directory that open removes, never a
/// half-deleted block that looks whole.
fn delete_block_dir(dir: &std::path::Path) -> Result<(), DbError> {
    let io = |source| DbError::Io { path: dir.to_path_buf(), source };
    let tomb = dir.with_extension("deleted");
    fs::rename(dir, &tomb).map_err(io)?;
    fs::remove_dir_all(&tomb).map_err(io)
}
