//! Reading series: each selected series is assembled from every source that holds it (blocks by
//! `seq`, then the frozen and the live head) into one buffer that is reused for the next series, and
//! handed to the caller's function. A query therefore holds its own results, never every sample of
//! its range at once, and a large read spreads its series over threads, decoding and evaluating
//! together — what a dashboard's 6 h and 24 h panels over all GPUs need.

use super::{Db, DbError, Series, merge_into};
use crate::block::{Block, ChunkCache, Scratch};
use crate::head::Snapshot;
use argus_model::{Labels, Matcher, Sample};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Below this many chunks to decode, a read stays on its caller's thread: threads cost more than
/// they save.
pub(crate) const PARALLEL_CHUNKS: usize = 64;
/// At most this many threads for one read.
const MAX_THREADS: usize = 8;

/// Where one series' samples are, oldest source first.
enum Src {
    /// A block, and the series' id in it.
    Block(usize, u32),
    /// A head snapshot (the frozen head's, then the live head's), and the series' place in it.
    Mem(usize, usize),
}

/// One selected series and the sources to read it from.
struct Planned {
    labels: Arc<Labels>,
    srcs: Vec<Src>,
    /// Chunks to decode (a head part counts as one): the cost used to split work among threads.
    cost: usize,
}

// === impl Db ===

impl Db {
    /// Series selected by the matchers with their samples in [mint, maxt], sorted by labels.
    pub fn select(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<Vec<Series>, DbError> {
        self.select_map(matchers, mint, maxt, |labels, samples| {
            Ok::<_, DbError>(Some(Series { labels: labels.clone(), samples: samples.to_vec() }))
        })
    }

    /// Calls `f` on each series selected by the matchers, with its samples in [mint, maxt] (never
    /// empty), and returns what it kept, in label order. Series are read one at a time into a
    /// reused buffer; with many chunks to decode they are split among threads (one per core, at
    /// most 8), each running `f` on its own series. The first error stops the read.
    pub fn select_map<T, E, F>(&self, matchers: &[Matcher], mint: i64, maxt: i64, f: F) -> Result<Vec<T>, E>
    where
        T: Send,
        E: From<DbError> + Send,
        F: Fn(&Arc<Labels>, &[Sample]) -> Result<Option<T>, E> + Sync,
    {
        let mut out = Vec::new();
        self.select_chunks(matchers, mint, maxt, usize::MAX, f, |kept| {
            out.extend(kept);
            Ok(())
        })?;
        Ok(out)
    }

    /// [`Db::select_map`] a window of `window` series at a time: what `f` kept for each window goes
    /// to `sink`, windows in label order, before the next window is read. A caller that folds what it
    /// is given (an aggregation over a whole fleet) holds one window's results, not the read's.
    pub fn select_chunks<T, E, F, S>(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
        window: usize,
        f: F,
        mut sink: S,
    ) -> Result<(), E>
    where
        T: Send,
        E: From<DbError> + Send,
        F: Fn(&Arc<Labels>, &[Sample]) -> Result<Option<T>, E> + Sync,
        S: FnMut(Vec<T>) -> Result<(), E>,
    {
        // The head's chunks are copied out under its lock (their places, not their samples) and
        // decoded a series at a time after it is let go, so that a large read does not hold up writes.
        let mem: Vec<Snapshot> = {
            let head = self.shared.head.read();
            let frozen = head.frozen.as_ref().map(|f| f.snapshot(matchers, mint, maxt));
            frozen.into_iter().chain(std::iter::once(head.snapshot(matchers, mint, maxt))).collect()
        };
        // The blocks after the head: a flush that ends in between has added the frozen head's blocks
        // by then (read twice, merged as one), where the other order could miss both.
        let blocks = self.blocks_in(mint, maxt);
        let plan = plan(&blocks, &mem, matchers, mint, maxt)?;
        let read = Reading { blocks: &blocks, mem: &mem, mint, maxt, cache: &self.shared.cache };
        for part in plan.chunks(window.max(1)) {
            sink(read.run(part, &f)?)?;
        }
        Ok(())
    }
}

/// What one read draws on: the blocks and head snapshots it planned over, and its time range.
struct Reading<'a> {
    blocks: &'a [Arc<Block>],
    mem: &'a [Snapshot],
    mint: i64,
    maxt: i64,
    cache: &'a ChunkCache,
}

impl Reading<'_> {
    /// Reads the planned series, on several threads when they have many chunks to decode, and
    /// returns what `f` kept, in plan order.
    fn run<T, E, F>(&self, plan: &[Planned], f: &F) -> Result<Vec<T>, E>
    where
        T: Send,
        E: From<DbError> + Send,
        F: Fn(&Arc<Labels>, &[Sample]) -> Result<Option<T>, E> + Sync,
    {
        let total: usize = plan.iter().map(|p| p.cost).sum();
        let threads = cores().min(MAX_THREADS);
        let stop = AtomicBool::new(false);
        let run = |part: &[Planned]| -> Result<Vec<T>, E> {
            let mut scratch = Scratch::default();
            let mut samples: Vec<Sample> = Vec::new();
            let mut head: Vec<Sample> = Vec::new();
            let mut kept = Vec::new();
            for p in part {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                samples.clear();
                for src in &p.srcs {
                    let read = match *src {
                        Src::Block(b, id) => read_block(
                            &self.blocks[b],
                            id,
                            self.mint,
                            self.maxt,
                            self.cache,
                            &mut scratch,
                            &mut samples,
                        ),
                        Src::Mem(m, i) => {
                            head.clear();
                            self.mem[m].read(i, self.mint, self.maxt, &mut head).map_err(DbError::from).map(|()| {
                                merge_into(&mut samples, &head);
                            })
                        }
                    };
                    if let Err(e) = read {
                        stop.store(true, Ordering::Relaxed);
                        return Err(e.into());
                    }
                }
                if samples.is_empty() {
                    continue;
                }
                match f(&p.labels, &samples) {
                    Ok(Some(t)) => kept.push(t),
                    Ok(None) => {}
                    Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
            }
            Ok(kept)
        };
        if threads < 2 || total < PARALLEL_CHUNKS {
            return run(plan);
        }
        let parts = split(plan, threads, total);
        let results: Vec<Result<Vec<T>, E>> = std::thread::scope(|scope| {
            let handles: Vec<_> = parts.iter().map(|part| scope.spawn(|| run(part))).collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(E::from(DbError::ReaderPanicked)))).collect()
        });
        let mut out = Vec::with_capacity(plan.len());
        for r in results {
            out.extend(r?);
        }
        Ok(out)
    }
}

/// The cores this process may use, read once: `available_parallelism` reads the cgroup's files on each
/// call, which cost a short read a few percent of its time.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Every selected series with its sources, sorted by labels. A block's labels are decoded from its
/// index once per query and shared by every source of the series.
fn plan(
    blocks: &[Arc<Block>],
    mem: &[Snapshot],
    matchers: &[Matcher],
    mint: i64,
    maxt: i64,
) -> Result<Vec<Planned>, DbError> {
    let mut index: HashMap<Arc<Labels>, usize> = HashMap::new();
    let mut plan: Vec<Planned> = Vec::new();
    let slot = |labels: Arc<Labels>, index: &mut HashMap<Arc<Labels>, usize>, plan: &mut Vec<Planned>| {
        plan.push(Planned { labels: labels.clone(), srcs: Vec::new(), cost: 0 });
        index.insert(labels, plan.len() - 1);
        plan.len() - 1
    };
    for (b, block) in blocks.iter().enumerate() {
        for (id, chunks) in block.lookup(matchers, mint, maxt)? {
            let labels = block.labels(id)?;
            let i = match index.get(&labels) {
                Some(&i) => i,
                None => slot(Arc::new(labels), &mut index, &mut plan),
            };
            plan[i].srcs.push(Src::Block(b, id));
            plan[i].cost += chunks;
        }
    }
    for (m, snap) in mem.iter().enumerate() {
        for s in 0..snap.len() {
            let labels = snap.labels(s);
            let i = match index.get(&**labels) {
                Some(&i) => i,
                None => slot(labels.clone(), &mut index, &mut plan),
            };
            plan[i].srcs.push(Src::Mem(m, s));
            plan[i].cost += 1;
        }
    }
    plan.sort_by(|a, b| a.labels.cmp(&b.labels));
    Ok(plan)
}

/// Appends a block's part of a series, merging when it is not simply later than what is there.
fn read_block(
    block: &Block,
    id: u32,
    mint: i64,
    maxt: i64,
    cache: &ChunkCache,
    scratch: &mut Scratch,
    samples: &mut Vec<Sample>,
) -> Result<(), DbError> {
    let before = samples.len();
    block.read(id, mint, maxt, Some(cache), scratch, samples)?;
    if before > 0 && samples.len() > before && samples[before].t <= samples[before - 1].t {
        // Overlapping blocks (out-of-order data): rare, so the extra copy does not matter.
        let newer = samples.split_off(before);
        merge_into(samples, &newer);
    }
    Ok(())
}

/// Splits the plan into at most `threads` consecutive parts of about equal cost.
fn split(plan: &[Planned], threads: usize, total: usize) -> Vec<&[Planned]> {
    let target = total.div_ceil(threads);
    let mut parts = Vec::with_capacity(threads);
    let (mut start, mut acc) = (0, 0);
    for (i, p) in plan.iter().enumerate() {
        acc += p.cost;
        if acc >= target && parts.len() + 1 < threads {
            parts.push(&plan[start..=i]);
            start = i + 1;
            acc = 0;
        }
    }
    if start < plan.len() {
        parts.push(&plan[start..]);
    }
    parts
}
