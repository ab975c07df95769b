//! The head: the recent, mutable part of the store, in memory and covered by the WAL.
//!
//! Series get a dense `u32` reference for the life of the process (and of the WAL). Samples of a
//! series are kept sorted by time in compressed chunks ([`chunks`]): the open one in memory, sealed
//! ones in the head's chunk file. Out-of-order samples are inserted, an identical rewrite is a no-op
//! and a different value at the same millisecond replaces the old one.
//!
//! Series that receive nothing for a whole flush cycle are released at the next flush in two steps:
//! first *buried* (unfindable, labels kept, so a write that resolved its reference just before can
//! still bring it back), then *freed* one flush later, when no such write can still be queued.

pub mod chunks;

use crate::postings::Postings;
use crate::wal::RefSample;
use argus_model::{Event, Labels, Matcher, Sample};
use chunks::{ChunkFile, ChunkReadError, SeriesChunks};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The most one sample of a request can cost the head before it is compressed: the admission check's
/// charge per sample.
pub const SAMPLE_BYTES: usize = std::mem::size_of::<Sample>();
/// Fixed overhead per series beyond its labels: the series slot, hash entry and postings entries.
const SERIES_OVERHEAD: usize = 320;

/// A series' labels and samples, as the tests' whole-series selections return them.
#[cfg(test)]
pub type SeriesSamples = (Arc<Labels>, Vec<Sample>);

pub struct MemSeries {
    pub labels: Arc<Labels>,
    data: SeriesChunks,
    /// The flush epoch in which the series last held samples.
    active: u64,
    state: SlotState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Live,
    Buried,
    Freed,
}

/// Head samples taken out by a flush: readable until they are in blocks. The chunk file they were
/// sealed into goes with them and is deleted when the last reader lets go.
pub struct Frozen {
    pub series: Vec<(Arc<Labels>, SeriesChunks)>,
    pub events: Vec<Event>,
    file: Arc<ChunkFile>,
    /// The series' chunks, sealed and open, as the head counted them.
    chunks: u64,
}

impl Frozen {
    /// Every sample of one of this snapshot's series.
    pub fn samples(&self, data: &SeriesChunks) -> Result<Vec<Sample>, ChunkReadError> {
        let mut out = Vec::with_capacity(data.len());
        data.read(&self.file, i64::MIN, i64::MAX, &mut out)?;
        Ok(out)
    }

    pub fn sample_count(&self) -> usize {
        self.series.iter().map(|(_, d)| d.len()).sum()
    }

    /// Chunks of the series, sealed and open.
    pub fn chunk_count(&self) -> u64 {
        self.chunks
    }

    /// The series the matchers select that may have samples in [mint, maxt], to decode outside the
    /// head's lock.
    pub fn snapshot(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Snapshot {
        let series = self
            .series
            .iter()
            .filter(|(l, d)| crate::db::matches(matchers, l) && overlaps(d, mint, maxt))
            .map(|(l, d)| (l.clone(), d.slice(mint, maxt)))
            .collect();
        Snapshot { series, file: self.file.clone() }
    }

    /// Labels of the series the matchers select that have a sample in [mint, maxt].
    pub fn select_labels(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Vec<Arc<Labels>> {
        self.series
            .iter()
            .filter(|(l, d)| crate::db::matches(matchers, l) && d.any_in(&self.file, mint, maxt))
            .map(|(l, _)| l.clone())
            .collect()
    }
}

/// Head series copied out (their chunks' places and open chunks, not their samples) under the head's
/// lock, to decode after it is let go.
pub struct Snapshot {
    series: Vec<(Arc<Labels>, SeriesChunks)>,
    file: Arc<ChunkFile>,
}

impl Snapshot {
    pub fn len(&self) -> usize {
        self.series.len()
    }

    /// The labels of series `i`.
    pub fn labels(&self, i: usize) -> &Arc<Labels> {
        &self.series[i].0
    }

    /// Appends series `i`'s samples in [mint, maxt] to `out`: one series decoded at a time, so a read
    /// holds the head's samples of the series it is on, not of all it selected.
    pub fn read(&self, i: usize, mint: i64, maxt: i64, out: &mut Vec<Sample>) -> Result<(), ChunkReadError> {
        self.series[i].1.read(&self.file, mint, maxt, out)
    }

    /// The series with their samples in [mint, maxt]; series with none there are left out. (Reads go
    /// a series at a time through [`Snapshot::read`]; this whole decode is the tests' view.)
    #[cfg(test)]
    pub fn decode(self, mint: i64, maxt: i64) -> Result<Vec<SeriesSamples>, ChunkReadError> {
        let mut out = Vec::with_capacity(self.series.len());
        for (labels, data) in self.series {
            let mut samples = Vec::new();
            data.read(&self.file, mint, maxt, &mut samples)?;
            if !samples.is_empty() {
                out.push((labels, samples));
            }
        }
        Ok(out)
    }
}

fn overlaps(d: &SeriesChunks, mint: i64, maxt: i64) -> bool {
    d.time_range().is_some_and(|(a, b)| a <= maxt && b >= mint)
}

/// Keys of `by_hash` are already hashes: hashing them again would only cost time.
#[derive(Default)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

pub struct Head {
    series: Vec<MemSeries>,
    by_hash: HashMap<u64, u32, BuildHasherDefault<IdentityHasher>>,
    /// Rare second and later series sharing a 64-bit hash.
    collisions: HashMap<u64, Vec<u32>>,
    postings: Postings,
    events: Vec<Event>,
    samples: usize,
    /// Chunks of the series, sealed and open (`/api/v1/status/tsdb`'s `chunkCount`): kept as
    /// samples go in, so that counting costs nothing.
    chunks: u64,
    /// Memory held by the series' chunks (open chunks and sealed chunks' places).
    data_bytes: usize,
    label_bytes: usize,
    event_bytes: usize,
    pub frozen: Option<Arc<Frozen>>,
    frozen_bytes: usize,
    epoch: u64,
    buried: Vec<u32>,
    live: usize,
    /// Where sealed chunks go; a new one at each freeze.
    file: Arc<ChunkFile>,
    /// The directory of the chunk files (none: they are kept in memory).
    dir: Option<PathBuf>,
    generation: u64,
    /// Samples that could not be applied because their series' chunks could not be read back.
    lost_reads: u64,
    /// Chunk writes refused by the chunk files before the current one.
    write_failures: u64,
    /// The next freeze buries series idle since the last one (not only those idle a whole cycle).
    eager: bool,
}

impl Default for Head {
    /// A head that keeps its sealed chunks in memory.
    fn default() -> Self {
        Head {
            series: Vec::new(),
            by_hash: HashMap::default(),
            collisions: HashMap::new(),
            postings: Postings::default(),
            events: Vec::new(),
            samples: 0,
            chunks: 0,
            data_bytes: 0,
            label_bytes: 0,
            event_bytes: 0,
            frozen: None,
            frozen_bytes: 0,
            epoch: 0,
            buried: Vec::new(),
            live: 0,
            file: Arc::new(ChunkFile::in_memory()),
            dir: None,
            generation: 0,
            lost_reads: 0,
            write_failures: 0,
            eager: false,
        }
    }
}

impl Head {
    /// A head whose sealed chunks go to files in `dir`, which is emptied first: what a previous
    /// process left there is rebuilt from the WAL.
    pub fn with_dir(dir: &Path) -> std::io::Result<Head> {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        std::fs::create_dir_all(dir)?;
        let file = Arc::new(ChunkFile::create(&chunk_file_path(dir, 1))?);
        Ok(Head { file, dir: Some(dir.to_path_buf()), generation: 1, ..Head::default() })
    }

    /// Finds a series by its hash (`Labels::stable_hash`) and its label pairs in name order, without
    /// building a label set.
    pub fn lookup_hashed<'a>(&self, h: u64, pairs: impl Iterator<Item = (&'a str, &'a str)> + Clone) -> Option<u32> {
        let r = *self.by_hash.get(&h)?;
        if self.series[r as usize].labels.eq_pairs(pairs.clone()) {
            return Some(r);
        }
        self.collisions.get(&h)?.iter().copied().find(|r| self.series[*r as usize].labels.eq_pairs(pairs.clone()))
    }

    pub fn lookup(&self, labels: &Labels) -> Option<u32> {
        self.lookup_hashed(labels.stable_hash(), labels.iter().map(|l| (l.name.as_str(), l.value.as_str())))
    }

    /// Returns the series' reference, creating it when new (the bool says so).
    pub fn get_or_create(&mut self, labels: Labels) -> (u32, bool) {
        if let Some(r) = self.lookup(&labels) {
            return (r, false);
        }
        let r = self.series.len() as u32;
        self.insert(r, labels);
        (r, true)
    }

    /// Re-creates a series under a known reference (WAL replay).
    pub fn insert(&mut self, r: u32, labels: Labels) {
        let i = r as usize;
        match self.series.get(i).map(|slot| slot.state) {
            Some(SlotState::Freed) => {
                // The WAL names series in the order a batch first uses them, so a lower reference can
                // come after a higher one, whose insertion left a placeholder here: fill it.
                self.postings.insert(r, &labels);
            }
            Some(_) => return,
            None => {
                // References are dense; pad the numbers not named yet (or never, if a series record was
                // lost).
                while self.series.len() < i {
                    self.series.push(MemSeries {
                        labels: Arc::new(Labels::default()),
                        data: SeriesChunks::default(),
                        active: 0,
                        state: SlotState::Freed,
                    });
                }
                self.postings.add(r, &labels);
            }
        }
        self.index_hash(labels.stable_hash(), r);
        self.label_bytes += series_bytes(&labels);
        self.live += 1;
        let series = MemSeries {
            labels: Arc::new(labels),
            data: SeriesChunks::default(),
            active: self.epoch,
            state: SlotState::Live,
        };
        if i < self.series.len() {
            self.series[i] = series;
        } else {
            self.series.push(series);
        }
    }

    /// Applies samples; a reference the head does not know is skipped and counted (it can only come
    /// from a WAL whose series record was cut off).
    pub fn append(&mut self, samples: &[RefSample]) -> usize {
        let mut unknown = 0;
        for s in samples {
            match self.series.get(s.r as usize).map(|m| m.state) {
                Some(SlotState::Live) => {}
                Some(SlotState::Buried) => self.resurrect(s.r),
                Some(SlotState::Freed) | None => {
                    unknown += 1;
                    continue;
                }
            }
            let ms = &mut self.series[s.r as usize];
            let before = ms.data.heap_bytes();
            match ms.data.put(&self.file, s.t, s.v) {
                Ok(put) => {
                    self.samples += put.added;
                    self.chunks = self.chunks.saturating_add_signed(put.chunks);
                }
                Err(e) => {
                    // Only a failing disk gets here; the WAL still holds the sample for the next start.
                    self.lost_reads += 1;
                    if self.lost_reads.is_power_of_two() {
                        tracing::error!(error = %e, samples = self.lost_reads,
                            "Could not apply a sample to its head series; it is in the WAL and returns on restart");
                    }
                }
            }
            self.data_bytes = self.data_bytes + ms.data.heap_bytes() - before;
        }
        unknown
    }

    pub fn append_events(&mut self, events: Vec<Event>) {
        self.event_bytes += events.iter().map(|e| e.text.len() + e.labels.heap_bytes() + 64).sum::<usize>();
        self.events.extend(events);
    }

    pub fn labels(&self, r: u32) -> Option<&Arc<Labels>> {
        self.series.get(r as usize).map(|s| &s.labels)
    }

    /// Live series (buried and freed slots not counted).
    pub fn series_count(&self) -> usize {
        self.live
    }

    /// Live series of the metric `name`.
    pub fn metric_series(&self, name: &str) -> usize {
        self.postings.count(argus_model::METRIC_NAME, name)
    }

    /// Makes `r` findable by its hash.
    fn index_hash(&mut self, h: u64, r: u32) {
        match self.by_hash.entry(h) {
            std::collections::hash_map::Entry::Occupied(_) => self.collisions.entry(h).or_default().push(r),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(r);
            }
        }
    }

    /// A buried series gets a write after all: make it findable again.
    fn resurrect(&mut self, r: u32) {
        let labels = self.series[r as usize].labels.clone();
        self.series[r as usize].state = SlotState::Live;
        self.buried.retain(|x| *x != r);
        self.index_hash(labels.stable_hash(), r);
        self.postings.insert(r, &labels);
        self.live += 1;
    }

    /// Frees the series buried at the last flush and buries those idle for a whole cycle.
    fn collect_garbage(&mut self) {
        for r in std::mem::take(&mut self.buried) {
            let s = &mut self.series[r as usize];
            if s.state == SlotState::Buried {
                self.label_bytes = self.label_bytes.saturating_sub(series_bytes(&s.labels));
                s.labels = Arc::new(Labels::default());
                s.data = SeriesChunks::default();
                s.state = SlotState::Freed;
            }
        }
        let cycles = if std::mem::take(&mut self.eager) { 0 } else { 1 };
        let idle: Vec<u32> = (0..self.series.len() as u32)
            .filter(|r| {
                let s = &self.series[*r as usize];
                s.state == SlotState::Live && s.data.is_empty() && s.active + cycles < self.epoch
            })
            .collect();
        if idle.is_empty() {
            return;
        }
        let gone: std::collections::HashSet<u32> = idle.iter().copied().collect();
        self.postings.remove(&gone);
        for r in &idle {
            let s = &mut self.series[*r as usize];
            s.state = SlotState::Buried;
            let h = s.labels.stable_hash();
            if self.by_hash.get(&h) == Some(r) {
                self.by_hash.remove(&h);
                // Promote a colliding series, if any, to the primary slot.
                if let Some(list) = self.collisions.get_mut(&h)
                    && let Some(next) = list.pop()
                {
                    self.by_hash.insert(h, next);
                }
            } else if let Some(list) = self.collisions.get_mut(&h) {
                list.retain(|x| x != r);
            }
            if self.collisions.get(&h).is_some_and(Vec::is_empty) {
                self.collisions.remove(&h);
            }
        }
        self.live -= idle.len();
        self.buried = idle;
    }

    pub fn sample_count(&self) -> usize {
        self.samples
    }

    /// Chunks of the live series, sealed and open (the frozen head's are [`Frozen::chunk_count`]).
    pub fn chunk_count(&self) -> u64 {
        self.chunks
    }

    /// Approximate bytes held, frozen samples included.
    pub fn bytes(&self) -> usize {
        self.data_bytes + self.file.memory_bytes() + self.label_bytes + self.event_bytes + self.frozen_bytes
    }

    /// Whether flushing would give memory back: series are buried (freed at the next freeze), or idle
    /// since the last one. Asks [`Head::freeze`] to bury the idle ones at once.
    pub fn reclaim_soon(&mut self) -> bool {
        let idle = self.series.iter().any(|s| s.state == SlotState::Live && s.data.is_empty() && s.active < self.epoch);
        self.eager = idle;
        idle || !self.buried.is_empty()
    }

    /// Size of the current chunk file (sealed chunks and the room reserved for the next).
    pub fn chunk_file_bytes(&self) -> u64 {
        self.file.len()
    }

    /// Chunk writes the chunk files refused since the head was made.
    pub fn chunk_write_failures(&self) -> u64 {
        self.write_failures + self.file.failures()
    }

    /// Moves every sample and event into a frozen snapshot for a flush, with the chunk file they were
    /// sealed into; the head goes on in a new one. Series and references stay.
    pub fn freeze(&mut self) -> Arc<Frozen> {
        let epoch = self.epoch;
        let mut series = Vec::new();
        for s in &mut self.series {
            if !s.data.is_empty() {
                s.active = epoch;
                series.push((s.labels.clone(), std::mem::take(&mut s.data)));
            }
        }
        self.collect_garbage();
        self.epoch += 1;
        let next = Arc::new(self.next_file());
        let file = std::mem::replace(&mut self.file, next);
        self.write_failures += file.failures();
        let chunks = std::mem::take(&mut self.chunks);
        let f = Frozen { series, events: std::mem::take(&mut self.events), file, chunks };
        self.frozen_bytes = self.data_bytes + f.file.memory_bytes() + self.event_bytes;
        self.samples = 0;
        self.data_bytes = 0;
        self.event_bytes = 0;
        let f = Arc::new(f);
        self.frozen = Some(f.clone());
        f
    }

    /// The chunk file after the current one. A freeze must not fail (the WAL is already cut), so when
    /// the file cannot be created the new head keeps its chunks in memory.
    fn next_file(&mut self) -> ChunkFile {
        let Some(dir) = &self.dir else { return ChunkFile::in_memory() };
        self.generation += 1;
        let path = chunk_file_path(dir, self.generation);
        ChunkFile::create(&path).unwrap_or_else(|e| {
            tracing::error!(path = %path.display(), error = %e,
                "Could not create a head chunk file; the head keeps its chunks in memory until the next flush");
            ChunkFile::in_memory()
        })
    }

    /// Drops the frozen snapshot once its blocks are loaded.
    pub fn release_frozen(&mut self) {
        self.frozen = None;
        self.frozen_bytes = 0;
    }

    /// Series selected by the matchers with their samples in [mint, maxt] (the tests' view; reads go
    /// through [`Head::snapshot`]).
    #[cfg(test)]
    pub fn select(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<Vec<SeriesSamples>, ChunkReadError> {
        self.snapshot(matchers, mint, maxt).decode(mint, maxt)
    }

    /// The series the matchers select that may have samples in [mint, maxt], to decode outside the
    /// head's lock.
    pub fn snapshot(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Snapshot {
        let series = self
            .postings
            .select(matchers)
            .into_iter()
            .filter_map(|r| {
                let s = &self.series[r as usize];
                overlaps(&s.data, mint, maxt).then(|| (s.labels.clone(), s.data.slice(mint, maxt)))
            })
            .collect();
        Snapshot { series, file: self.file.clone() }
    }

    /// Series selected by the matchers that have any sample in [mint, maxt], samples not copied.
    pub fn select_labels(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Vec<Arc<Labels>> {
        self.postings
            .select(matchers)
            .into_iter()
            .filter_map(|r| {
                let s = &self.series[r as usize];
                s.data.any_in(&self.file, mint, maxt).then(|| s.labels.clone())
            })
            .collect()
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Time range of the head's samples, if any.
    /// Bytes of the series' labels and index entries: what the block cut from this head will hold
    /// in memory again as its index.
    pub fn label_bytes(&self) -> usize {
        self.label_bytes
    }

    pub fn time_range(&self) -> Option<(i64, i64)> {
        let mut r: Option<(i64, i64)> = None;
        for s in &self.series {
            if let Some((a, b)) = s.data.time_range() {
                r = Some(r.map_or((a, b), |(lo, hi)| (lo.min(a), hi.max(b))));
            }
        }
        r
    }
}

/// Memory a series costs beyond its samples: its labels (kept in the series and again in the postings),
/// the slot, the hash entry and the postings entries.
pub(crate) fn series_bytes(labels: &Labels) -> usize {
    labels.heap_bytes() * 3 + SERIES_OVERHEAD
}

/// [`series_bytes`] of the series these label pairs would make, without making it.
pub(crate) fn pairs_bytes<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> usize {
    pairs.map(|(n, v)| std::mem::size_of::<argus_model::Label>() + n.len() + v.len()).sum::<usize>() * 3
        + SERIES_OVERHEAD
}

/// The file of generation `n` in the head's chunk directory.
fn chunk_file_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("chunks-{n:08}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs(r: u32, t: i64, v: f64) -> RefSample {
        RefSample { r, t, v }
    }

    #[test]
    fn out_of_order_rewrites_and_replacements() {
        let mut h = Head::default();
        let (r, new) = h.get_or_create(Labels::from_pairs([("__name__", "m")]));
        assert!(new);
        assert_eq!(h.get_or_create(Labels::from_pairs([("__name__", "m")])), (r, false));
        h.append(&[rs(r, 30, 3.0), rs(r, 10, 1.0), rs(r, 20, 2.0), rs(r, 20, 2.0), rs(r, 10, 9.0)]);
        let got = h.select(&[Matcher::eq("__name__", "m")], 0, 100).unwrap();
        let ts: Vec<(i64, f64)> = got[0].1.iter().map(|s| (s.t, s.v)).collect();
        assert_eq!(ts, vec![(10, 9.0), (20, 2.0), (30, 3.0)]);
        assert_eq!(h.sample_count(), 3);
        assert_eq!(h.select(&[Matcher::eq("__name__", "m")], 11, 29).unwrap()[0].1.len(), 1);
        assert!(h.select(&[Matcher::eq("__name__", "m")], 31, 100).unwrap().is_empty());
    }

    #[test]
    fn idle_series_are_buried_then_freed_and_a_late_write_resurrects() {
        let mut h = Head::default();
        let m = Labels::from_pairs([("__name__", "m")]);
        let n = Labels::from_pairs([("__name__", "n")]);
        let (rm, _) = h.get_or_create(m.clone());
        let (rn, _) = h.get_or_create(n.clone());
        h.append(&[rs(rm, 1, 1.0), rs(rn, 1, 1.0)]);
        h.freeze(); // both active in epoch 0
        h.append(&[rs(rn, 2, 2.0)]);
        h.freeze(); // m idle through epoch 1
        assert_eq!(h.lookup(&n), Some(rn));
        h.freeze(); // m buried
        assert_eq!(h.lookup(&m), None, "buried series are not findable");
        assert_eq!(h.series_count(), 1);
        // A write that resolved m's reference before it was buried still lands.
        h.append(&[rs(rm, 3, 3.0)]);
        assert_eq!(h.lookup(&m), Some(rm));
        assert_eq!(h.select(&[Matcher::eq("__name__", "m")], 0, 10).unwrap()[0].1, vec![Sample::new(3, 3.0)]);
        for _ in 0..4 {
            h.freeze();
        }
        assert_eq!(h.series_count(), 0, "idle series are freed");
        assert_eq!(h.append(&[rs(rm, 4, 4.0)]), 1, "a freed slot takes no samples");
        let before = h.bytes();
        let (r2, new) = h.get_or_create(m);
        assert!(new && r2 > rn, "a freed series comes back under a new reference");
        assert!(h.bytes() > before);
    }

    /// The chunks of the head's live series, counted by reading their runs.
    fn counted(h: &Head) -> u64 {
        h.series.iter().map(|s| s.data.count_chunks(&h.file) as u64).sum()
    }

    #[test]
    fn the_chunk_count_follows_seals_rewrites_and_freezes() {
        let dir = tempfile::tempdir().unwrap();
        // Sealed chunks in memory (a run each) and in a chunk file (runs of 1, 4, 16 chunks).
        for mut h in [Head::default(), Head::with_dir(&dir.path().join("head")).unwrap()] {
            let (a, _) = h.get_or_create(Labels::from_pairs([("__name__", "a")]));
            let (b, _) = h.get_or_create(Labels::from_pairs([("__name__", "b")]));
            // 250 steady samples of a, sealed at 120 a chunk: 120, 120 and 10 open; one sample of b.
            let mut batch: Vec<RefSample> = (0..250).map(|i| rs(a, i * 1000, 1.0)).collect();
            batch.push(rs(b, 0, 1.0));
            h.append(&batch);
            assert_eq!((h.chunk_count(), counted(&h)), (4, 4));
            // A sample into a's first chunk rewrites all three: 120, 120 and 11 open.
            h.append(&[rs(a, 500, 2.0)]);
            assert_eq!((h.chunk_count(), counted(&h)), (4, 4));
            // Noisy series seal by size, about every 15 samples; writes in a scrambled order rewrite
            // runs in the middle and at the end.
            let mut x: u64 = 11;
            let refs: Vec<u32> =
                (0..5).map(|i| h.get_or_create(Labels::from_pairs([("__name__", format!("n{i}"))])).0).collect();
            for round in 0..40 {
                let batch: Vec<RefSample> = (0..100)
                    .map(|_| {
                        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                        let t = if (x >> 61) == 0 {
                            (x >> 20) as i64 % (round * 1000 + 1)
                        } else {
                            round * 1000 + (x >> 40) as i64 % 1000
                        };
                        rs(refs[(x >> 33) as usize % refs.len()], t, (x >> 11) as f64)
                    })
                    .collect();
                h.append(&batch);
                assert_eq!(h.chunk_count(), counted(&h), "round {round}");
            }
            let before = h.chunk_count();
            assert!(before > 100, "{before} chunks");
            // A freeze takes the chunks along; the head starts from none.
            let f = h.freeze();
            let frozen: u64 = f.series.iter().map(|(_, d)| d.count_chunks(&f.file) as u64).sum();
            assert_eq!((f.chunk_count(), frozen), (before, before));
            assert_eq!((h.chunk_count(), counted(&h)), (0, 0));
            h.append(&[rs(a, 300_000, 1.0)]);
            assert_eq!(h.chunk_count(), 1);
        }
    }

    #[test]
    fn freeze_moves_samples_and_keeps_series() {
        let mut h = Head::default();
        let (r, _) = h.get_or_create(Labels::from_pairs([("__name__", "m")]));
        h.append(&[rs(r, 1, 1.0)]);
        let f = h.freeze();
        assert_eq!(f.series.len(), 1);
        assert_eq!(h.sample_count(), 0);
        assert_eq!(h.lookup(&Labels::from_pairs([("__name__", "m")])), Some(r));
    }
}
