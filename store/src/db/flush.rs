//! Moving the head into blocks, compacting blocks, and deleting what is past retention.

use super::commit::{Committer, Job};
use super::{DbError, Shared, merge_samples};
use crate::block::{Block, BlockWriter, Lineage, Scratch};
use argus_model::{Labels, Sample};
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
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
        Ok(Err(e)) => return Err(DbError::Wal(e)),
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
    // Under `max_disk_size`, room for the new blocks first: they sit beside the WAL they come from until
    // it is truncated.
    let reserve = flush_reserve(shared, frozen.sample_count() as u64);
    delete_for_size(shared, over_size(shared, reserve, &[])?.unwrap_or_default())?;
    let range = shared.opts.block_range_ms;
    let blocks_dir = shared.opts.data_dir.join("blocks");
    // One writer per block range the frozen samples touch; samples go in as slices, never copied.
    let mut windows: BTreeMap<i64, BlockWriter> = BTreeMap::new();
    for (labels, data) in &frozen.series {
        // One series decoded at a time: the writer encodes it into its block's file at once.
        let samples = frozen.samples(data)?;
        let mut start = 0;
        while start < samples.len() {
            let w = samples[start].t.div_euclid(range) * range;
            let end = start + samples[start..].partition_point(|s| s.t < w + range);
            window(shared, &blocks_dir, &mut windows, w)?.add_series(labels.clone(), &samples[start..end])?;
            start = end;
        }
    }
    for e in &frozen.events {
        window(shared, &blocks_dir, &mut windows, e.t.div_euclid(range) * range)?.add_events([e.clone()]);
    }
    let mut new_blocks = Vec::new();
    for (_, w) in windows {
        let (path, _) = w.finish()?;
        new_blocks.push(Arc::new(Block::open(&path)?));
    }
    note_disk(shared, new_blocks.iter().map(|b| b.size).sum())?;
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

/// Bytes a flush of `samples` samples is expected to write: the newest level-0 block's bytes per
/// sample (a flush's blocks are alike from one to the next) twice over (a flush that touches two
/// block ranges writes every series' labels twice), never more than
/// the head's chunk bytes with two blocks' worth of its labels (a flush touches at most two block
/// ranges), which is what the first flush reserves.
fn flush_reserve(shared: &Shared, samples: u64) -> u64 {
    let bound = {
        let head = shared.head.read();
        head.chunk_file_bytes() + 2 * head.label_bytes() as u64
    };
    let blocks = shared.blocks.read();
    let newest = blocks.iter().filter(|b| b.meta.level == 0 && b.meta.samples > 0).max_by_key(|b| b.meta.seq);
    match newest {
        Some(b) => {
            let per_sample = b.size as f64 / b.meta.samples as f64;
            ((per_sample * samples as f64 * 2.0) as u64 + 64 * 1024).min(bound)
        }
        None => bound,
    }
}

/// The writer of the level-0 block for the block range starting at `w`, started on first use.
fn window<'a>(
    shared: &Shared,
    blocks_dir: &std::path::Path,
    windows: &'a mut BTreeMap<i64, BlockWriter>,
    w: i64,
) -> Result<&'a mut BlockWriter, DbError> {
    Ok(match windows.entry(w) {
        Entry::Occupied(e) => e.into_mut(),
        Entry::Vacant(e) => {
            e.insert(BlockWriter::new(blocks_dir, shared.opts.encoding, Lineage::fresh(shared.next_id()))?)
        }
    })
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
            if !(closed || overlapping) {
                continue;
            }
            // The merged block sits beside its sources until it is whole; it is never larger than they are
            // together. Under `max_disk_size`, older blocks make room for it, unless the group's own data is
            // among the oldest: then it is retention's to delete, not worth merging.
            let reserve = group.iter().map(|b| b.size).sum();
            match over_size(shared, reserve, &group)? {
                Some(doomed) => {
                    delete_for_size(shared, doomed)?;
                    merge(shared, &group)?;
                }
                None => tracing::debug!(start, "Not compacting blocks whose data max_disk_size is about to drop"),
            }
        }
    }
    Ok(())
}

/// Merges a group of blocks into one, a series at a time: each block's series are in label order,
/// so the group is walked in step and only the series being merged is ever in memory.
fn merge(shared: &Shared, group: &[Arc<Block>]) -> Result<(), DbError> {
    // Oldest first, so a later block's sample wins at equal timestamps.
    let mut group = group.to_vec();
    group.sort_by_key(|b| (b.meta.seq, b.meta.id));
    let id = shared.next_id();
    let seq = group.iter().map(|b| b.meta.seq).max().unwrap_or(id);
    let level = group.iter().map(|b| b.meta.level).max().unwrap_or(0) + 1;
    let sources: Vec<u64> =
        group.iter().flat_map(|b| std::iter::once(b.meta.id).chain(b.meta.sources.iter().copied())).collect();
    let blocks_dir = shared.opts.data_dir.join("blocks");
    let mut w = BlockWriter::new(&blocks_dir, shared.opts.encoding, Lineage { id, seq, level, sources })?;
    // Each block's next series: its id and labels.
    let mut heads: Vec<Option<(u32, Labels)>> = Vec::with_capacity(group.len());
    for b in &group {
        heads.push(next_series(b, 0)?);
    }
    let mut scratch = Scratch::default();
    let mut lists: Vec<Vec<Sample>> = Vec::new();
    while let Some(least) = heads.iter().flatten().map(|(_, l)| l).min().cloned() {
        lists.clear();
        for (b, head) in group.iter().zip(heads.iter_mut()) {
            let Some((sid, labels)) = head else { continue };
            if *labels != least {
                continue;
            }
            let mut samples = Vec::new();
            b.read(*sid, i64::MIN, i64::MAX, None, &mut scratch, &mut samples)?;
            lists.push(samples);
            *head = next_series(b, *sid + 1)?;
        }
        let merged =
            if lists.len() == 1 { lists.pop().unwrap_or_default() } else { merge_samples(std::mem::take(&mut lists)) };
        w.add_series(Arc::new(least), &merged)?;
    }
    for b in &group {
        w.add_events(b.all_events()?);
    }
    if w.is_empty() {
        return Ok(());
    }
    let (path, meta) = w.finish()?;
    let new = Arc::new(Block::open(&path)?);
    note_disk(shared, new.size)?;
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

/// Series `id` of a block with its labels, or `None` past its last.
fn next_series(b: &Block, id: u32) -> Result<Option<(u32, Labels)>, DbError> {
    if id >= b.series_count() {
        return Ok(None);
    }
    Ok(Some((id, b.labels(id)?)))
}

/// Deletes blocks whose newest sample is older than the retention window, then, with
/// `max_disk_size`, the blocks with the oldest data until the data directory fits (see
/// [`over_size`]).
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
    let oversize = over_size(shared, 0, &[])?.unwrap_or_default();
    let deleted = !oversize.is_empty();
    delete_for_size(shared, oversize)?;
    if !expired.is_empty() && !deleted {
        shared.update_gauges();
    }
    Ok(())
}

/// Deletes blocks [`over_size`] took out of the list.
fn delete_for_size(shared: &Shared, doomed: Vec<Arc<Block>>) -> Result<(), DbError> {
    for b in &doomed {
        tracing::warn!(
            block = %b.dir.display(),
            max_time = b.meta.max_time,
            bytes = b.size,
            "Deleting block to keep the data directory under store.max_disk_size"
        );
        delete_block_dir(&b.dir)?;
        shared.metrics.blocks_deleted_size.inc();
    }
    if !doomed.is_empty() {
        shared.update_gauges();
    }
    Ok(())
}

/// With `max_disk_size`: takes out of the block list, and returns, the blocks whose data is oldest
/// (smallest newest sample, then lowest `seq`) until blocks, WAL, head chunks and `reserve` more bytes
/// (about to be written) together fit. The WAL and the head are never counted out: what is acknowledged
/// but not yet in a block stays, even if it alone passes the bound. `None`, with nothing taken, when a
/// block of `keep` would have to go (blocks about to be merged). Sets the disk gauges and says once
/// when 80 % of the bound is passed.
fn over_size(shared: &Shared, reserve: u64, keep: &[Arc<Block>]) -> Result<Option<Vec<Arc<Block>>>, DbError> {
    let (live, total) = note_disk(shared, 0)?;
    let m = &shared.metrics;
    m.disk_bytes.set(total as i64);
    let Some(max) = shared.opts.max_disk_size else {
        return Ok(Some(Vec::new()));
    };
    warn_when_high(shared, total, max);
    // The WAL and head grow between two checks, while writes go on, until writes wait at an eighth of
    // the bound ([`super::LIVE_REFUSE_PART`]): room is kept for them to reach it, and a quarter more
    // for the requests admitted just under it.
    let growth = (max / super::LIVE_REFUSE_PART / 4 * 5).saturating_sub(live);
    let reserve = reserve + growth;
    if total + reserve <= max {
        return Ok(Some(Vec::new()));
    }
    if live + reserve > max {
        // Deleting blocks cannot make the room: keep them. A merge waits; a flush goes on, since it is
        // what gives the WAL's bytes back. The upkeep flushes the head long before the WAL alone passes
        // the bound (`size_flush_due`) unless blocks cannot be written: say so then.
        if live > max {
            tracing::error!(
                bytes = total,
                wal_and_head = live,
                max_disk_size = max,
                "The WAL and the head alone pass store.max_disk_size; no block is deleted for it"
            );
        }
        return Ok(if keep.is_empty() { Some(Vec::new()) } else { None });
    }
    // Over the bound: the write lock, and the total again under it (a flush may have added a block).
    let mut blocks = shared.blocks.write();
    let mut total = live + reserve + blocks.iter().map(|b| b.size).sum::<u64>();
    let mut oldest_first: Vec<Arc<Block>> = blocks.clone();
    oldest_first.sort_by_key(|b| (b.meta.max_time, b.meta.seq));
    let mut doomed = Vec::new();
    for b in oldest_first {
        if total <= max {
            break;
        }
        if keep.iter().any(|k| Arc::ptr_eq(k, &b)) {
            return Ok(None);
        }
        total -= b.size;
        doomed.push(b);
    }
    blocks.retain(|b| !doomed.iter().any(|d| Arc::ptr_eq(d, b)));
    m.disk_bytes.set((total - reserve) as i64);
    Ok(Some(doomed))
}

/// What the data directory holds now, with `unlisted` bytes of blocks just written and not yet in the
/// block list, recorded in the peak gauge: (WAL and head chunks, everything).
fn note_disk(shared: &Shared, unlisted: u64) -> Result<(u64, u64), DbError> {
    let live = live_bytes(shared)?;
    let total = live + shared.blocks.read().iter().map(|b| b.size).sum::<u64>() + unlisted;
    let peak = &shared.metrics.disk_peak_bytes;
    peak.set(peak.get().max(total as i64));
    Ok((live, total))
}

/// Says once, when `total` passes 80 % of `max`, that the bound is near (again after falling below).
fn warn_when_high(shared: &Shared, total: u64, max: u64) {
    let high = total.saturating_mul(5) >= max.saturating_mul(4);
    if high && !shared.disk_high.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!(
            bytes = total,
            max_disk_size = max,
            "The data directory holds over 80 % of store.max_disk_size; the oldest blocks go first past it"
        );
    } else if !high {
        shared.disk_high.store(false, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Bytes of what is acknowledged but not yet in a block: the WAL's segments and the head's chunks.
pub(crate) fn live_bytes(shared: &Shared) -> Result<u64, DbError> {
    Ok(wal_bytes(&shared.opts.data_dir.join("wal"))? + shared.head.read().chunk_file_bytes())
}

/// Bytes of the WAL's segment files.
fn wal_bytes(dir: &std::path::Path) -> Result<u64, DbError> {
    let io = |source| DbError::Io { path: dir.to_path_buf(), source };
    let mut total = 0;
    for entry in fs::read_dir(dir).map_err(io)? {
        let meta = entry.map_err(io)?.metadata().map_err(io)?;
        if meta.is_file() {
            total += meta.len();
        }
    }
    Ok(total)
}

/// Renames first so a crash mid-delete leaves a `.deleted` directory that open removes, never a
/// half-deleted block that looks whole.
fn delete_block_dir(dir: &std::path::Path) -> Result<(), DbError> {
    let io = |source| DbError::Io { path: dir.to_path_buf(), source };
    let tomb = dir.with_extension("deleted");
    fs::rename(dir, &tomb).map_err(io)?;
    fs::remove_dir_all(&tomb).map_err(io)
}
