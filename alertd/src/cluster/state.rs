//! What replicas share, and how a replica merges what it reads from its peers.
//!
//! Each replica publishes every item it holds (its own and those it merged) as key-values in its
//! own part of the gossip state, so an item outlives the replica that made it. Items are versioned
//! JSON (docs/format/alertd-cluster.md). Merging is per item and needs no agreement: the later
//! version of a silence (by `updated_at`) and the later notification log entry (by its timestamp)
//! win, which is Alertmanager's rule for both. The same items in any order give the same state.

use crate::alert::Fingerprint;
use crate::engine::NFLOG_RETENTION;
use crate::memory::{Memory, MemorySink};
use crate::nflog::{Entry, NotificationLog};
use crate::silence::{Silence, Silences, StoreError, WireMatcher};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The format version this alertd writes. Readers take any version: fields are only ever added, and
/// a change that cannot be read by an older replica gets new key prefixes (written beside the old
/// ones for one release), so replicas one release apart interoperate during a rolling upgrade.
pub const FORMAT_VERSION: u32 = 1;

/// Key prefix of a silence (`s/<id>`).
pub const SILENCE_PREFIX: &str = "s/";
/// Key prefix of a notification log entry (`n/<group key>\x1f<recipient>`).
pub const NFLOG_PREFIX: &str = "n/";
/// Separates group key and recipient in a log key (neither holds control characters).
const SEP: char = '\u{1f}';
/// Separates a log key from the number of one of its parts (`PART_SEP` then the index).
const PART_SEP: char = '\u{1e}';
/// Fingerprints one value carries at most. A gossip value must fit one datagram; a group of a
/// fleet-wide alert can hold thousands of alerts, so its entry is split into parts of this many.
pub const FINGERPRINTS_PER_VALUE: usize = 2_000;

#[derive(Serialize, Deserialize)]
struct WireSilence {
    v: u32,
    id: String,
    matchers: Vec<WireMatcher>,
    starts_at: i64,
    ends_at: i64,
    updated_at: i64,
    created_by: String,
    comment: String,
    #[serde(default)]
    until_resolved: bool,
}

#[derive(Serialize, Deserialize)]
struct WireEntry {
    v: u32,
    #[serde(default)]
    firing: Vec<String>,
    #[serde(default)]
    resolved: Vec<String>,
    timestamp: i64,
    /// For an entry too large for one value: how many parts hold its fingerprints (firing ones
    /// first, then `resolved_count` resolved ones); `firing` and `resolved` are then empty.
    #[serde(default, skip_serializing_if = "is_zero")]
    parts: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    resolved_count: usize,
    /// Set while the notification is still in its sender's outbox: the replica that owes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pending: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One part of a large log entry (`n/<group key>\x1f<recipient>\x1e<index>`).
#[derive(Serialize, Deserialize)]
struct WirePart {
    v: u32,
    /// The entry's timestamp: a part of another version of the entry does not count.
    timestamp: i64,
    fps: Vec<String>,
}

/// One shared item.
#[derive(Debug, Clone)]
pub enum Item {
    Silence(Silence),
    /// A notification log entry. `pending` names the replica that enqueued the notification and
    /// has not delivered it yet; None once delivered (or failed for good).
    Log {
        group_key: String,
        recipient: String,
        entry: Entry,
        pending: Option<String>,
    },
    /// Engine state: an open incident, an origin's backoff, an alert's flap history.
    Memory(Memory),
}

impl Item {
    /// Which kind, for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Item::Silence(_) => "silence",
            Item::Log { .. } => "nflog",
            Item::Memory(m) => m.kind(),
        }
    }

    /// When the item stops mattering: a silence the retention after it expired, a log entry the
    /// retention after it was written, engine state when it says. Keys of items past it are
    /// deleted from the gossip state.
    pub fn expires_at(&self) -> Timestamp {
        match self {
            Item::Silence(s) => s.ends_at + NFLOG_RETENTION,
            Item::Log { entry, .. } => entry.timestamp + NFLOG_RETENTION,
            Item::Memory(m) => m.expires_at(),
        }
    }
}

pub fn silence_key(id: &str) -> String {
    format!("{SILENCE_PREFIX}{id}")
}

pub fn log_key(group_key: &str, recipient: &str) -> String {
    format!("{NFLOG_PREFIX}{group_key}{SEP}{recipient}")
}

fn fps(s: &BTreeSet<Fingerprint>) -> Vec<String> {
    s.iter().map(|f| f.to_string()).collect()
}

fn parse_fps(v: &[String]) -> Result<BTreeSet<Fingerprint>, String> {
    v.iter()
        .map(|h| u64::from_str_radix(h, 16).map(Fingerprint).map_err(|e| format!("fingerprint {h:?}: {e}")))
        .collect()
}

/// The key-values that publish `item`, in the order to write them: a large log entry's parts come
/// before the entry itself, so a peer that reads the entry already has its parts (gossip delivers
/// a member's key-values in the order they were written).
pub fn encode(item: &Item) -> Vec<(String, String)> {
    match item {
        Item::Silence(s) => {
            let w = WireSilence {
                v: FORMAT_VERSION,
                id: s.id.clone(),
                matchers: s.matchers.iter().map(WireMatcher::from_matcher).collect(),
                starts_at: s.starts_at.0,
                ends_at: s.ends_at.0,
                updated_at: s.updated_at.0,
                created_by: s.created_by.clone(),
                comment: s.comment.clone(),
                until_resolved: s.until_resolved,
            };
            vec![(silence_key(&s.id), serde_json::to_string(&w).unwrap_or_default())]
        }
        Item::Log { group_key, recipient, entry, pending } => {
            let key = log_key(group_key, recipient);
            let mut w = WireEntry {
                v: FORMAT_VERSION,
                firing: fps(&entry.firing),
                resolved: fps(&entry.resolved),
                timestamp: entry.timestamp.0,
                parts: 0,
                resolved_count: 0,
                pending: pending.clone(),
            };
            let mut out = Vec::new();
            if w.firing.len() + w.resolved.len() > FINGERPRINTS_PER_VALUE {
                w.resolved_count = w.resolved.len();
                let all: Vec<String> =
                    std::mem::take(&mut w.firing).into_iter().chain(std::mem::take(&mut w.resolved)).collect();
                for (i, chunk) in all.chunks(FINGERPRINTS_PER_VALUE).enumerate() {
                    let part = WirePart { v: FORMAT_VERSION, timestamp: entry.timestamp.0, fps: chunk.to_vec() };
                    out.push((part_key(&key, i), serde_json::to_string(&part).unwrap_or_default()));
                }
                w.parts = out.len();
            }
            out.push((key, serde_json::to_string(&w).unwrap_or_default()));
            out
        }
        Item::Memory(m) => vec![(m.key(), m.value())],
    }
}

/// The key of part `i` of the log entry at `key`.
pub fn part_key(key: &str, i: usize) -> String {
    format!("{}{i}", parts_prefix(key))
}

/// What the keys of every part of the log entry at `key` begin with.
pub fn parts_prefix(key: &str) -> String {
    format!("{key}{PART_SEP}")
}

/// Whether `key` is a part of a log entry (read through its entry, not on its own).
pub fn is_part(key: &str) -> bool {
    key.starts_with(NFLOG_PREFIX) && key.contains(PART_SEP)
}

/// When a part expires (its entry's), for garbage collection.
pub fn part_expires_at(value: &str) -> Option<Timestamp> {
    serde_json::from_str::<WirePart>(value).ok().map(|p| Timestamp(p.timestamp) + NFLOG_RETENTION)
}

/// The item a key-value publishes. `Ok(None)` for keys of other kinds (membership, future items,
/// parts) and for a large entry whose parts `part` (the same member's value of a key) does not
/// hold yet; an error names what is wrong with a key this alertd should read.
pub fn decode(key: &str, value: &str, part: impl Fn(&str) -> Option<String>) -> Result<Option<Item>, String> {
    if is_part(key) {
        return Ok(None);
    }
    if crate::memory::is_memory_key(key) {
        return Ok(Memory::decode(key, value)?.map(Item::Memory));
    }
    if let Some(id) = key.strip_prefix(SILENCE_PREFIX) {
        let w: WireSilence = serde_json::from_str(value).map_err(|e| format!("silence {id}: {e}"))?;
        if w.id != id {
            return Err(format!("silence {id}: value names silence {}", w.id));
        }
        let matchers = w
            .matchers
            .iter()
            .map(WireMatcher::to_matcher)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("silence {id}: {e}"))?;
        return Ok(Some(Item::Silence(Silence {
            id: w.id,
            matchers,
            starts_at: Timestamp(w.starts_at),
            ends_at: Timestamp(w.ends_at),
            updated_at: Timestamp(w.updated_at),
            created_by: w.created_by,
            comment: w.comment,
            until_resolved: w.until_resolved,
        })));
    }
    if let Some(rest) = key.strip_prefix(NFLOG_PREFIX) {
        let (group_key, recipient) =
            rest.split_once(SEP).ok_or_else(|| format!("notification log key {rest:?}: no recipient"))?;
        let mut w: WireEntry = serde_json::from_str(value).map_err(|e| format!("notification log {group_key}: {e}"))?;
        if w.parts > 0 {
            let mut all = Vec::new();
            for i in 0..w.parts {
                let Some(text) = part(&part_key(key, i)) else { return Ok(None) };
                let p: WirePart =
                    serde_json::from_str(&text).map_err(|e| format!("notification log {group_key} part {i}: {e}"))?;
                if p.timestamp != w.timestamp {
                    return Ok(None);
                }
                all.extend(p.fps);
            }
            let split = all.len().saturating_sub(w.resolved_count);
            w.resolved = all.split_off(split);
            w.firing = all;
        }
        let entry = Entry {
            firing: parse_fps(&w.firing).map_err(|e| format!("notification log {group_key}: {e}"))?,
            resolved: parse_fps(&w.resolved).map_err(|e| format!("notification log {group_key}: {e}"))?,
            timestamp: Timestamp(w.timestamp),
        };
        return Ok(Some(Item::Log {
            group_key: group_key.to_string(),
            recipient: recipient.to_string(),
            entry,
            pending: w.pending,
        }));
    }
    Ok(None)
}

/// Whether `incoming` replaces `held`: the later update wins; of two updates at the same time, the
/// one that ends earlier (an expiry over an extension), so every replica picks the same.
pub fn silence_wins(incoming: &Silence, held: Option<&Silence>) -> bool {
    held.is_none_or(|h| {
        (incoming.updated_at, std::cmp::Reverse(incoming.ends_at)) > (h.updated_at, std::cmp::Reverse(h.ends_at))
    })
}

/// Whether `incoming` replaces `held`: the later notification wins, as in Alertmanager's nflog.
pub fn entry_wins(incoming: &Entry, held: Option<&Entry>) -> bool {
    held.is_none_or(|h| incoming.timestamp > h.timestamp)
}

/// Local changes waiting to be published, in the order they were made.
#[derive(Clone, Default)]
pub struct Outgoing(Arc<Mutex<Vec<Item>>>);

impl Outgoing {
    pub fn push(&self, item: Item) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(item);
    }

    pub fn take(&self) -> Vec<Item> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The engine's memory, kept by `inner` (alertd.db) and published as it changes. A peer's item
/// merges into the engine (`Engine::merge_memory`), which remembers the merged state here in turn.
pub struct ReplicatedMemory {
    inner: Arc<dyn MemorySink>,
    out: Outgoing,
}

impl ReplicatedMemory {
    pub fn new(inner: Arc<dyn MemorySink>, out: Outgoing) -> Self {
        ReplicatedMemory { inner, out }
    }
}

impl MemorySink for ReplicatedMemory {
    fn remember(&self, m: &Memory) {
        self.inner.remember(m);
        self.out.push(Item::Memory(m.clone()));
    }

    fn gc(&self, now: Timestamp) {
        self.inner.gc(now);
    }
}

/// Silences that publish every local change; `merge` takes a peer's.
pub struct ReplicatedSilences {
    inner: Arc<dyn Silences>,
    out: Outgoing,
}

impl ReplicatedSilences {
    pub fn new(inner: Arc<dyn Silences>, out: Outgoing) -> Self {
        ReplicatedSilences { inner, out }
    }

    /// Applies a peer's version of a silence when it wins over the one held. True when it did.
    pub fn merge(&self, s: Silence) -> Result<bool, StoreError> {
        let held = self.inner.get(&s.id);
        if !silence_wins(&s, held.as_ref()) {
            return Ok(false);
        }
        self.inner.set(s)?;
        Ok(true)
    }

    /// Every silence held, to publish at start.
    pub fn items(&self) -> Vec<Item> {
        self.inner.list().into_iter().map(Item::Silence).collect()
    }
}

impl Silences for ReplicatedSilences {
    fn set(&self, s: Silence) -> Result<(), StoreError> {
        self.inner.set(s.clone())?;
        self.out.push(Item::Silence(s));
        Ok(())
    }

    fn expire(&self, id: &str, now: Timestamp) -> Result<bool, StoreError> {
        if !self.inner.expire(id, now)? {
            return Ok(false);
        }
        if let Some(s) = self.inner.get(id) {
            self.out.push(Item::Silence(s));
        }
        Ok(true)
    }

    fn list(&self) -> Vec<Silence> {
        self.inner.list()
    }

    fn get(&self, id: &str) -> Option<Silence> {
        self.inner.get(id)
    }

    fn gc(&self, now: Timestamp, retention: Duration) {
        self.inner.gc(now, retention)
    }
}

type LogKey = (String, String);

/// A notification log shared with the cluster's other replicas.
///
/// An entry this replica logs is published at once as *pending* (owed by this replica): peers hold
/// back their own notification while this replica is alive, however long its delivery retries take
/// (no duplicate while a receiver is down). Once the outbox delivered it (or gave up) it is
/// published again, *confirmed*. A peer's pending entry counts only while its owner is alive: when the
/// owner dies with the notification undelivered, the next replica notifies instead — under the same
/// idempotency key, since that comes from the confirmed entry before it.
pub struct ReplicatedLog {
    inner: Arc<dyn NotificationLog>,
    out: Outgoing,
    /// This replica's name, which its pending entries carry.
    name: String,
    /// Live replicas by name (this one included), kept by the cluster.
    live: Mutex<std::collections::HashSet<String>>,
    /// Peers' pending entries later than the confirmed one held, with their owners.
    remote_pending: Mutex<HashMap<LogKey, (Entry, String)>>,
    /// This replica's entries published as pending, until the outbox finishes them.
    awaiting: Mutex<HashMap<LogKey, Entry>>,
}

impl ReplicatedLog {
    pub fn new(inner: Arc<dyn NotificationLog>, out: Outgoing, name: &str) -> Self {
        ReplicatedLog {
            inner,
            out,
            name: name.to_string(),
            live: Mutex::new([name.to_string()].into()),
            remote_pending: Default::default(),
            awaiting: Default::default(),
        }
    }

    /// Sets the replicas alive now.
    pub fn set_live(&self, names: impl IntoIterator<Item = String>) {
        let mut live = lock(&self.live);
        live.clear();
        live.extend(names);
        live.insert(self.name.clone());
    }

    /// Applies a peer's entry. A confirmed entry later than the one held replaces it; a pending one is
    /// kept aside (see the type's doc). True when the confirmed log changed.
    pub fn merge(&self, group_key: &str, recipient: &str, entry: Entry, pending: Option<String>) -> bool {
        let key = (group_key.to_string(), recipient.to_string());
        let held = self.inner.get(group_key, recipient);
        match pending {
            Some(owner) if owner != self.name => {
                if entry_wins(&entry, held.as_ref()) {
                    let mut p = lock(&self.remote_pending);
                    if entry_wins(&entry, p.get(&key).map(|(e, _)| e)) {
                        p.insert(key, (entry, owner));
                    }
                }
                false
            }
            // This replica's own pending entry, from before a restart: its outbox still holds it.
            Some(_) => false,
            None => {
                let mut p = lock(&self.remote_pending);
                if p.get(&key).is_some_and(|(e, _)| e.timestamp <= entry.timestamp) {
                    p.remove(&key);
                }
                drop(p);
                if !entry_wins(&entry, held.as_ref()) {
                    return false;
                }
                self.inner.log(group_key, recipient, entry);
                true
            }
        }
    }

    /// The outbox finished a notification of `group_key` to `recipient`: confirms the entry this
    /// replica published as pending for it.
    pub fn confirm(&self, group_key: &str, recipient: &str) {
        let key = (group_key.to_string(), recipient.to_string());
        if let Some(entry) = lock(&self.awaiting).remove(&key) {
            self.out.push(Item::Log { group_key: key.0, recipient: key.1, entry, pending: None });
        }
    }

    /// Every confirmed entry held, to publish at start.
    pub fn items(&self) -> Vec<Item> {
        self.inner
            .entries()
            .into_iter()
            .map(|(group_key, recipient, entry)| Item::Log { group_key, recipient, entry, pending: None })
            .collect()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl NotificationLog for ReplicatedLog {
    fn get(&self, group_key: &str, recipient: &str) -> Option<Entry> {
        let held = self.inner.get(group_key, recipient);
        let key = (group_key.to_string(), recipient.to_string());
        let pending = lock(&self.remote_pending).get(&key).cloned();
        match pending {
            Some((e, owner)) if lock(&self.live).contains(&owner) && entry_wins(&e, held.as_ref()) => Some(e),
            _ => held,
        }
    }

    fn log(&self, group_key: &str, recipient: &str, entry: Entry) {
        self.inner.log(group_key, recipient, entry.clone());
        let key = (group_key.to_string(), recipient.to_string());
        lock(&self.awaiting).insert(key, entry.clone());
        self.out.push(Item::Log {
            group_key: group_key.to_string(),
            recipient: recipient.to_string(),
            entry,
            pending: Some(self.name.clone()),
        });
    }

    fn gc(&self, now: Timestamp, retention: Duration) {
        self.inner.gc(now, retention);
        lock(&self.remote_pending).retain(|_, (e, _)| now - e.timestamp < retention);
        lock(&self.awaiting).retain(|_, e| now - e.timestamp < retention);
    }

    fn entries(&self) -> Vec<(String, String, Entry)> {
        self.inner.entries()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nflog::MemLog;
    use crate::silence::MemSilences;
    use argus_model::Matcher;

    fn silence(id: &str, updated: i64, ends: i64) -> Silence {
        Silence {
            id: id.into(),
            matchers: vec![Matcher::eq("host", "node-1")],
            starts_at: Timestamp(0),
            ends_at: Timestamp(ends),
            updated_at: Timestamp(updated),
            created_by: "sre".into(),
            comment: "maintenance".into(),
            until_resolved: true,
        }
    }

    fn entry(ts: i64, firing: &[u64]) -> Entry {
        Entry {
            firing: firing.iter().map(|&f| Fingerprint(f)).collect(),
            resolved: BTreeSet::new(),
            timestamp: Timestamp(ts),
        }
    }

    #[test]
    fn items_round_trip_through_their_key_values() {
        let items = [
            Item::Silence(silence("a1", 5, 100)),
            Item::Log {
                group_key: "{}/{}:{host=\"n1\"}:incident=7".into(),
                recipient: "team/webhook/0".into(),
                entry: entry(9, &[3, 0xabc]),
                pending: Some("r0".into()),
            },
        ];
        for item in items {
            let kvs = encode(&item);
            assert_eq!(kvs.len(), 1);
            let (k, v) = &kvs[0];
            let back = decode(k, v, |_| None).unwrap().unwrap();
            assert_eq!(encode(&back), kvs);
        }
        assert!(decode("membership", "x", |_| None).unwrap().is_none());
        let e = decode("s/a1", "{\"v\":1}", |_| None).unwrap_err();
        assert!(e.starts_with("silence a1: missing field"), "{e}");
        assert_eq!(decode("n/nokey", "{}", |_| None).unwrap_err(), "notification log key \"nokey\": no recipient");
    }

    #[test]
    fn a_newer_format_with_added_fields_is_read() {
        let v = r#"{"v":2,"id":"a1","matchers":[],"starts_at":0,"ends_at":9,"updated_at":1,"created_by":"x","comment":"","until_resolved":false,"owner":"team"}"#;
        assert!(matches!(decode("s/a1", v, |_| None), Ok(Some(Item::Silence(_)))));
    }

    #[test]
    fn a_large_entry_travels_in_parts_that_must_all_match_it() {
        let n = 2 * FINGERPRINTS_PER_VALUE + 7;
        let firing: Vec<u64> = (0..n as u64).collect();
        let mut e = entry(9, &firing);
        e.resolved = (n as u64..n as u64 + 10).map(Fingerprint).collect();
        let item = Item::Log { group_key: "g".into(), recipient: "r".into(), entry: e.clone(), pending: None };
        let kvs = encode(&item);
        assert_eq!(kvs.len(), 4, "three parts, then the entry");
        assert!(kvs[..3].iter().all(|(k, _)| is_part(k)) && !is_part(&kvs[3].0));
        assert!(kvs.iter().all(|(_, v)| v.len() < 48 * 1024), "every value fits a datagram");
        let map: HashMap<String, String> = kvs.iter().cloned().collect();
        let (k, v) = &kvs[3];
        match decode(k, v, |p| map.get(p).cloned()).unwrap() {
            Some(Item::Log { entry, .. }) => assert_eq!(entry, e),
            other => panic!("{other:?}"),
        }
        // A missing part, or a part of another version of the entry: not readable yet.
        assert!(decode(k, v, |p| map.get(p).filter(|_| !p.ends_with("\u{1e}1")).cloned()).unwrap().is_none());
        let older = encode(&Item::Log {
            group_key: "g".into(),
            recipient: "r".into(),
            entry: entry(8, &firing),
            pending: None,
        });
        let stale: HashMap<String, String> = older.into_iter().collect();
        assert!(decode(k, v, |p| stale.get(p).cloned()).unwrap().is_none());
        assert_eq!(part_expires_at(&map[&part_key(k, 0)]), Some(Timestamp(9) + NFLOG_RETENTION));
    }

    #[test]
    fn merging_in_any_order_gives_the_same_state() {
        // Three versions of one silence (made, extended, expired) and three log entries.
        let versions = [silence("a1", 1, 500), silence("a1", 2, 900), silence("a1", 3, 3)];
        let entries = [entry(10, &[1]), entry(20, &[1, 2]), entry(15, &[2])];
        let orders = [[0, 1, 2], [2, 1, 0], [1, 2, 0], [2, 0, 1]];
        let mut results = Vec::new();
        for order in orders {
            let s = ReplicatedSilences::new(Arc::new(MemSilences::default()), Outgoing::default());
            let l = ReplicatedLog::new(Arc::new(MemLog::default()), Outgoing::default(), "r1");
            for &i in &order {
                s.merge(versions[i].clone()).unwrap();
                l.merge("g", "r", entries[i].clone(), None);
            }
            let held = s.list().pop().unwrap();
            results.push((held.updated_at, held.ends_at, l.get("g", "r").unwrap()));
        }
        assert!(results.iter().all(|r| *r == results[0]), "{results:?}");
        assert_eq!(results[0], (Timestamp(3), Timestamp(3), entry(20, &[1, 2])));
    }

    #[test]
    fn an_expiry_beats_an_extension_made_at_the_same_time() {
        let (extend, expire) = (silence("a1", 7, 900), silence("a1", 7, 7));
        assert!(silence_wins(&expire, Some(&extend)));
        assert!(!silence_wins(&extend, Some(&expire)));
    }

    #[test]
    fn local_changes_are_published_and_merges_are_not() {
        let out = Outgoing::default();
        let s = ReplicatedSilences::new(Arc::new(MemSilences::default()), out.clone());
        let l = ReplicatedLog::new(Arc::new(MemLog::default()), out.clone(), "r1");
        s.set(silence("a1", 1, 500)).unwrap();
        assert!(s.expire("a1", Timestamp(4)).unwrap());
        assert!(!s.expire("zz", Timestamp(4)).unwrap());
        l.log("g", "r", entry(5, &[1]));
        assert!(s.merge(silence("b2", 1, 50)).unwrap());
        assert!(l.merge("g2", "r", entry(6, &[1]), None));
        assert!(!l.merge("g2", "r", entry(5, &[1]), None));
        l.confirm("g", "r");
        l.confirm("g", "r");
        let kinds: Vec<String> =
            out.take().iter().map(|i| format!("{}@{}", i.kind(), (i.expires_at() - NFLOG_RETENTION).0)).collect();
        assert_eq!(kinds, ["silence@500", "silence@4", "nflog@5", "nflog@5"]);
    }

    #[test]
    fn a_peers_pending_entry_holds_back_only_while_its_owner_lives() {
        let l = ReplicatedLog::new(Arc::new(MemLog::default()), Outgoing::default(), "r1");
        l.merge("g", "r", entry(5, &[1]), None);
        l.set_live(["r0".to_string()]);
        // r0 enqueued a later notification and is still delivering it: it counts as sent here.
        assert!(!l.merge("g", "r", entry(9, &[1, 2]), Some("r0".into())));
        assert_eq!(l.get("g", "r"), Some(entry(9, &[1, 2])));
        // r0 died before delivering: the confirmed entry before it is what counts.
        l.set_live(Vec::new());
        assert_eq!(l.get("g", "r"), Some(entry(5, &[1])));
        // Its confirmation, when it comes, replaces both.
        l.set_live(["r0".to_string()]);
        assert!(l.merge("g", "r", entry(9, &[1, 2]), None));
        l.set_live(Vec::new());
        assert_eq!(l.get("g", "r"), Some(entry(9, &[1, 2])));
    }

    #[test]
    fn a_local_entry_is_published_pending_then_confirmed() {
        let out = Outgoing::default();
        let l = ReplicatedLog::new(Arc::new(MemLog::default()), out.clone(), "r1");
        l.log("g", "r", entry(5, &[1]));
        l.confirm("g", "r");
        let states: Vec<Option<String>> = out
            .take()
            .into_iter()
            .map(|i| match i {
                Item::Log { pending, .. } => pending,
                other => panic!("not a log entry: {}", other.kind()),
            })
            .collect();
        assert_eq!(states, [Some("r1".to_string()), None]);
    }
}
