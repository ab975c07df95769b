//! The head: the recent, mutable part of the store, in memory and covered by the WAL.
//!
//! Series get a dense `u32` reference for the life of the process (and of the WAL). Samples of a
//! series are kept sorted by time; out-of-order samples are inserted, an identical rewrite is a no-op
//! and a different value at the same millisecond replaces the old one.
//!
//! Series that receive nothing for a whole flush cycle are released at the next flush in two steps:
//! first *buried* (unfindable, labels kept, so a write that resolved its reference just before can
//! still bring it back), then *freed* one flush later, when no such write can still be queued.

use crate::postings::Postings;
use crate::wal::RefSample;
use argus_model::{Event, Labels, Matcher, Sample};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// Bytes one sample costs in the head, for memory accounting.
pub const SAMPLE_BYTES: usize = std::mem::size_of::<Sample>();
/// Fixed overhead per series beyond its labels: the series slot, hash entry and postings entries.
const SERIES_OVERHEAD: usize = 320;

/// A series' labels and samples, as selections return them.
pub type SeriesSamples = (Arc<Labels>, Vec<Sample>);

pub struct MemSeries {
    pub labels: Arc<Labels>,
    pub samples: Vec<Sample>,
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

impl MemSeries {
    /// Returns true when the series changed.
    fn put(&mut self, t: i64, v: f64) -> bool {
        let s = Sample::new(t, v);
        match self.samples.last() {
            None => {}
            Some(last) if last.t < t => {}
            Some(last) if last.t == t => {
                if last.same_as(&s) {
                    return false;
                }
                let n = self.samples.len();
                self.samples[n - 1] = s;
                return true;
            }
            Some(_) => {
                return match self.samples.binary_search_by(|x| x.t.cmp(&t)) {
                    Ok(i) if self.samples[i].same_as(&s) => false,
                    Ok(i) => {
                        self.samples[i] = s;
                        true
                    }
                    Err(i) => {
                        self.samples.insert(i, s);
                        true
                    }
                };
            }
        }
        self.samples.push(s);
        true
    }
}

/// Head samples taken out by a flush: readable until they are in blocks.
#[derive(Default)]
pub struct Frozen {
    pub series: Vec<(Arc<Labels>, Vec<Sample>)>,
    pub events: Vec<Event>,
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

#[derive(Default)]
pub struct Head {
    series: Vec<MemSeries>,
    by_hash: HashMap<u64, u32, BuildHasherDefault<IdentityHasher>>,
    /// Rare second and later series sharing a 64-bit hash.
    collisions: HashMap<u64, Vec<u32>>,
    postings: Postings,
    events: Vec<Event>,
    samples: usize,
    label_bytes: usize,
    event_bytes: usize,
    pub frozen: Option<Arc<Frozen>>,
    frozen_bytes: usize,
    epoch: u64,
    buried: Vec<u32>,
    live: usize,
}

impl Head {
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
        if (r as usize) < self.series.len() {
            return;
        }
        // References are dense; replay may skip numbers only if a series record was lost, so pad.
        while self.series.len() < r as usize {
            self.series.push(MemSeries {
                labels: Arc::new(Labels::default()),
                samples: Vec::new(),
                active: 0,
                state: SlotState::Freed,
            });
        }
        self.index_hash(labels.stable_hash(), r);
        self.postings.add(r, &labels);
        self.label_bytes += series_bytes(&labels);
        self.live += 1;
        self.series.push(MemSeries {
            labels: Arc::new(labels),
            samples: Vec::new(),
            active: self.epoch,
            state: SlotState::Live,
        });
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
            let before = ms.samples.len();
            ms.put(s.t, s.v);
            self.samples += ms.samples.len() - before;
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

    /// One past the highest reference ever given out.
    pub fn slots(&self) -> u32 {
        self.series.len() as u32
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
                s.samples = Vec::new();
                s.state = SlotState::Freed;
            }
        }
        let idle: Vec<u32> = (0..self.series.len() as u32)
            .filter(|r| {
                let s = &self.series[*r as usize];
                s.state == SlotState::Live && s.samples.is_empty() && s.active + 1 < self.epoch
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

    /// Approximate bytes held, frozen samples included.
    pub fn bytes(&self) -> usize {
        self.samples * SAMPLE_BYTES + self.label_bytes + self.event_bytes + self.frozen_bytes
    }

    /// Moves every sample and event into a frozen snapshot for a flush. Series and references stay.
    pub fn freeze(&mut self) -> Arc<Frozen> {
        let mut f = Frozen::default();
        let epoch = self.epoch;
        for s in &mut self.series {
            if !s.samples.is_empty() {
                s.active = epoch;
                f.series.push((s.labels.clone(), std::mem::take(&mut s.samples)));
            }
        }
        self.collect_garbage();
        self.epoch += 1;
        f.events = std::mem::take(&mut self.events);
        self.frozen_bytes = self.samples * SAMPLE_BYTES + self.event_bytes;
        self.samples = 0;
        self.event_bytes = 0;
        let f = Arc::new(f);
        self.frozen = Some(f.clone());
        f
    }

    /// Drops the frozen snapshot once its blocks are loaded.
    pub fn release_frozen(&mut self) {
        self.frozen = None;
        self.frozen_bytes = 0;
    }

    /// Series selected by the matchers with their samples in [mint, maxt].
    pub fn select(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Vec<SeriesSamples> {
        self.postings
            .select(matchers)
            .into_iter()
            .filter_map(|r| {
                let s = &self.series[r as usize];
                let v = in_range(&s.samples, mint, maxt);
                (!v.is_empty()).then(|| (s.labels.clone(), v.to_vec()))
            })
            .collect()
    }

    /// Series selected by the matchers that have any sample in [mint, maxt], samples not copied.
    pub fn select_labels(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Vec<Arc<Labels>> {
        self.postings
            .select(matchers)
            .into_iter()
            .filter_map(|r| {
                let s = &self.series[r as usize];
                (!in_range(&s.samples, mint, maxt).is_empty()).then(|| s.labels.clone())
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
            if let (Some(a), Some(b)) = (s.samples.first(), s.samples.last()) {
                r = Some(r.map_or((a.t, b.t), |(lo, hi)| (lo.min(a.t), hi.max(b.t))));
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

/// The sub-slice of sorted samples inside [mint, maxt].
pub fn in_range(samples: &[Sample], mint: i64, maxt: i64) -> &[Sample] {
    let lo = samples.partition_point(|s| s.t < mint);
    let hi = samples.partition_point(|s| s.t <= maxt);
    if lo >= hi { &[] } else { &samples[lo..hi] }
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
        let got = h.select(&[Matcher::eq("__name__", "m")], 0, 100);
        let ts: Vec<(i64, f64)> = got[0].1.iter().map(|s| (s.t, s.v)).collect();
        assert_eq!(ts, vec![(10, 9.0), (20, 2.0), (30, 3.0)]);
        assert_eq!(h.sample_count(), 3);
        assert_eq!(h.select(&[Matcher::eq("__name__", "m")], 11, 29)[0].1.len(), 1);
        assert!(h.select(&[Matcher::eq("__name__", "m")], 31, 100).is_empty());
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
        assert_eq!(h.select(&[Matcher::eq("__name__", "m")], 0, 10)[0].1, vec![Sample::new(3, 3.0)]);
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
