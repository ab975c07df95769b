//! Held-back alerts ("why wasn't I paged"): every alert that the pipeline or delivery holds back
//! from notification, with what held it, since when and until when it is expected to be released.
//! Each reason is recorded where the decision is made — the mute stages, the time interval stages,
//! dedup, the hold stage, the dispatcher's timers, the delivery workers — never recomputed here.
//!
//! A record is one alert held for one reason on one route (or one integration); it stays open while
//! the decision stands and is ended once the alert is let through, the reason is gone, or the alert
//! resolves. Ended records are kept as history for `GET /api/v1/suppressed` until the ledger holds
//! [`MAX_RECORDS`]; then the oldest ended record is dropped first (the oldest open one only when
//! none has ended), and each drop is counted in `argus_alertd_suppressed_records_dropped_total`.

mod reason;

pub use reason::{HeldRoute, InhibitedBy, InhibitingAlert, Reason, SilencedBy, Timer};

use crate::alert::Fingerprint;
use crate::time::Timestamp;
use argus_model::{Labels, Matcher};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Mutex;

/// The most records kept, open and ended together.
pub const MAX_RECORDS: usize = 10_000;

/// What decided a hold: the engine's pipeline and timers (engine time), or a delivery worker (wall
/// clock). A flush of a group settles the engine's records of that group; delivery settles its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    Engine,
    Delivery,
}

/// One alert held for one reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub fingerprint: Fingerprint,
    pub labels: Labels,
    pub route: HeldRoute,
    pub reason: Reason,
    pub since: Timestamp,
    /// When the hold is expected to end (a silence's end, the group's next flush, the next delivery
    /// attempt); None when only a change can end it (an inhibiting alert resolving).
    pub until: Option<Timestamp>,
    /// When it ended; None while the alert is held.
    pub ended: Option<Timestamp>,
    source: Source,
}

impl Record {
    pub fn is_open(&self) -> bool {
        self.ended.is_none()
    }

    /// The record's identity: one per alert, route or integration, and kind of reason.
    fn key(&self) -> Key {
        (self.fingerprint, self.source, self.route.group.clone(), self.route.integration.clone(), self.reason.kind())
    }
}

type Key = (Fingerprint, Source, String, String, &'static str);

/// A hold decided now: the alert, where, why and until when.
#[derive(Debug, Clone)]
pub struct Hold {
    pub fingerprint: Fingerprint,
    pub labels: Labels,
    pub route: HeldRoute,
    pub reason: Reason,
    pub until: Option<Timestamp>,
}

/// The ledger, shared by the engine, the delivery workers and the API.
#[derive(Debug)]
pub struct Suppressed {
    max: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    /// Every record by sequence number, oldest first.
    records: BTreeMap<u64, Record>,
    open: HashMap<Key, u64>,
    /// Open records by alert.
    by_fp: HashMap<Fingerprint, BTreeSet<u64>>,
    /// Ended records by end time, the first dropped at the cap.
    ended: BTreeSet<(Timestamp, u64)>,
    metrics: Option<(Gauge, Counter)>,
}

impl Default for Suppressed {
    fn default() -> Self {
        Suppressed::with_capacity(MAX_RECORDS)
    }
}

impl Suppressed {
    /// A ledger keeping at most `max` records.
    pub fn with_capacity(max: usize) -> Suppressed {
        Suppressed { max: max.max(1), inner: Mutex::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Exports the number of records kept into `records`, and counts dropped ones into `dropped`.
    pub fn count_into(&self, records: Gauge, dropped: Counter) {
        let mut inner = self.lock();
        records.set(inner.records.len() as i64);
        inner.metrics = Some((records, dropped));
    }

    /// Records `h` as decided by `source` at `at`: opens a record, or updates the open one with the
    /// same identity (its reason's details and expected end), keeping its start.
    pub fn hold(&self, source: Source, h: Hold, at: Timestamp) {
        let mut inner = self.lock();
        inner.hold(source, h, at);
        inner.trim(self.max);
    }

    /// Settles the engine's records of the alerts `fps` in group `group` after a flush at `at`: the
    /// holds in `asserted` stand (opened or updated), every other open one ends.
    pub fn settle_group(&self, group: &str, fps: &[Fingerprint], asserted: Vec<Hold>, at: Timestamp) {
        let mut inner = self.lock();
        let keep: HashSet<Key> = asserted
            .iter()
            .map(|h| {
                (h.fingerprint, Source::Engine, h.route.group.clone(), h.route.integration.clone(), h.reason.kind())
            })
            .collect();
        let ending: Vec<u64> =
            fps.iter()
                .filter_map(|fp| inner.by_fp.get(fp))
                .flatten()
                .copied()
                .filter(|seq| {
                    inner.records.get(seq).is_some_and(|r| {
                        r.source == Source::Engine && r.route.group == group && !keep.contains(&r.key())
                    })
                })
                .collect();
        for seq in ending {
            inner.end(seq, at);
        }
        for h in asserted {
            inner.hold(Source::Engine, h, at);
        }
        inner.trim(self.max);
    }

    /// Ends the open records of alert `fp` from `source` that `which` selects, at `at`.
    pub fn release(&self, fp: Fingerprint, source: Source, at: Timestamp, which: impl Fn(&Record) -> bool) {
        let mut inner = self.lock();
        let ending: Vec<u64> = inner
            .by_fp
            .get(&fp)
            .into_iter()
            .flatten()
            .copied()
            .filter(|seq| inner.records.get(seq).is_some_and(|r| r.source == source && which(r)))
            .collect();
        for seq in ending {
            inner.end(seq, at);
        }
    }

    /// Ends every open record from `source` (a reload rebuilds the groups the engine's belong to).
    pub fn release_all(&self, source: Source, at: Timestamp) {
        let mut inner = self.lock();
        let ending: Vec<u64> = inner.open.iter().filter(|(k, _)| k.1 == source).map(|(_, &seq)| seq).collect();
        for seq in ending {
            inner.end(seq, at);
        }
    }

    /// Ends, at `now`, every open record of an alert that `firing` says no longer fires.
    pub fn sweep(&self, now: Timestamp, firing: impl Fn(Fingerprint) -> bool) {
        let mut inner = self.lock();
        let gone: Vec<Fingerprint> = inner.by_fp.keys().copied().filter(|&fp| !firing(fp)).collect();
        for fp in gone {
            let seqs: Vec<u64> = inner.by_fp.get(&fp).into_iter().flatten().copied().collect();
            for seq in seqs {
                inner.end(seq, now);
            }
        }
    }

    /// The records of alerts that any of `selectors` matches (every matcher of one selector; all
    /// alerts when there is none), that were open at some time in `[start, end]`, by alert, each
    /// alert's oldest first.
    pub fn query(
        &self,
        selectors: &[Vec<Matcher>],
        start: Timestamp,
        end: Timestamp,
    ) -> BTreeMap<Fingerprint, Vec<Record>> {
        let inner = self.lock();
        let selected = |l: &Labels| {
            selectors.is_empty()
                || selectors.iter().any(|ms| ms.iter().all(|m| m.matches(l.get(&m.name).unwrap_or(""))))
        };
        let mut out: BTreeMap<Fingerprint, Vec<Record>> = BTreeMap::new();
        for r in inner.records.values() {
            if r.since <= end && r.ended.is_none_or(|e| e >= start) && selected(&r.labels) {
                out.entry(r.fingerprint).or_default().push(r.clone());
            }
        }
        out
    }

    /// How many records are kept.
    pub fn len(&self) -> usize {
        self.lock().records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    fn hold(&mut self, source: Source, h: Hold, at: Timestamp) {
        let key = (h.fingerprint, source, h.route.group.clone(), h.route.integration.clone(), h.reason.kind());
        if let Some(r) = self.open.get(&key).and_then(|seq| self.records.get_mut(seq)) {
            r.reason = h.reason;
            r.until = h.until;
            r.labels = h.labels;
            r.route = h.route;
            return;
        }
        let seq = self.next;
        self.next += 1;
        let r = Record {
            fingerprint: h.fingerprint,
            labels: h.labels,
            route: h.route,
            reason: h.reason,
            since: at,
            until: h.until,
            ended: None,
            source,
        };
        self.open.insert(key, seq);
        self.by_fp.entry(r.fingerprint).or_default().insert(seq);
        self.records.insert(seq, r);
        self.export();
    }

    fn end(&mut self, seq: u64, at: Timestamp) {
        let Some(r) = self.records.get_mut(&seq) else { return };
        if r.ended.is_some() {
            return;
        }
        // A hold ends no earlier than it began (delivery's wall clock and engine time may disagree).
        let at = at.max(r.since);
        r.ended = Some(at);
        let (key, fp) = (r.key(), r.fingerprint);
        self.open.remove(&key);
        self.unindex(fp, seq);
        self.ended.insert((at, seq));
    }

    fn unindex(&mut self, fp: Fingerprint, seq: u64) {
        if let Some(set) = self.by_fp.get_mut(&fp) {
            set.remove(&seq);
            if set.is_empty() {
                self.by_fp.remove(&fp);
            }
        }
    }

    /// Drops records past `max`: the earliest ended first, then the oldest open.
    fn trim(&mut self, max: usize) {
        let mut dropped = 0u64;
        while self.records.len() > max {
            let seq = match self.ended.pop_first() {
                Some((_, seq)) => seq,
                None => match self.records.keys().next() {
                    Some(&seq) => seq,
                    None => break,
                },
            };
            if let Some(r) = self.records.remove(&seq)
                && r.ended.is_none()
            {
                self.open.remove(&r.key());
                self.unindex(r.fingerprint, seq);
            }
            dropped += 1;
        }
        if dropped > 0
            && let Some((_, counter)) = &self.metrics
        {
            counter.inc_by(dropped);
        }
        self.export();
    }

    fn export(&self) {
        if let Some((gauge, _)) = &self.metrics {
            gauge.set(self.records.len() as i64);
        }
    }
}

#[cfg(test)]
mod tests;
