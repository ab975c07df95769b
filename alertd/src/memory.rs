//! What the engine remembers besides alerts, silences and the notification log: its open incidents
//! (number, topology, first notification, acknowledgement, escalations sent), each incident origin's
//! notification times (the backoff) and the change history of alerts that change state (flapping).
//!
//! The engine hands every change to a `MemorySink`: alertd.db keeps it (so a lone alertd restarts
//! with its incidents, acknowledgements and escalation timers), and in a cluster the replicas share
//! it. Every item merges as a join: the union of times, the earliest first notification, an
//! acknowledgement or escalation once made stays made. The same items in any order give the same
//! state, so replicas converge without agreeing on anything. The wire form is versioned JSON
//! (docs/format/alertd-cluster.md, docs/format/alertd-db.md).

use crate::alert::Fingerprint;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The format version this alertd writes. Fields are only ever added.
pub const FORMAT_VERSION: u32 = 1;
/// Key prefix of an incident (`i/<route group>\x1f<number>`).
pub const INCIDENT_PREFIX: &str = "i/";
/// Key prefix of an incident origin's notification times (`b/<origin>`).
pub const BACKOFF_PREFIX: &str = "b/";
/// Key prefix of an alert's state changes (`f/<fingerprint>`).
pub const FLAP_PREFIX: &str = "f/";
const SEP: char = '\u{1f}';

/// An open incident as replicas and restarts see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncidentMemory {
    #[serde(default)]
    pub v: u32,
    pub route_group: String,
    pub id: u64,
    pub origin: String,
    pub opened_at: i64,
    pub topology: Vec<(String, String)>,
    /// The latest end of its alerts known when written: it stays open until then plus the
    /// correlation window, unless alerts that keep it open arrive.
    pub until: i64,
    /// Its group key and the time of its first notification (which starts escalation clocks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notified: Option<(String, i64)>,
    /// The first acknowledgement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack: Option<Acknowledgement>,
    /// Escalation rules (by their index in the configuration) that have gone out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalated: Vec<usize>,
    pub expires_at: i64,
}

/// Who acknowledged an incident, when and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Acknowledgement {
    pub at: i64,
    pub by: String,
    pub comment: String,
}

impl Acknowledgement {
    /// Of two acknowledgements, the one that stands: the first (at the same time, the lesser by
    /// name and comment, so that every replica picks the same).
    pub fn first(a: Option<Acknowledgement>, b: Option<Acknowledgement>) -> Option<Acknowledgement> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if (a.at, &a.by, &a.comment) <= (b.at, &b.by, &b.comment) { a } else { b }),
            (a, b) => a.or(b),
        }
    }
}

/// The notification times of one incident origin within the backoff window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackoffMemory {
    #[serde(default)]
    pub v: u32,
    pub origin: String,
    pub sent: Vec<i64>,
    pub expires_at: i64,
}

/// One alert's recent state changes, and its change count while flapping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlapMemory {
    #[serde(default)]
    pub v: u32,
    #[serde(with = "hex_fp")]
    pub fingerprint: Fingerprint,
    pub changes: Vec<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flapping: Option<u32>,
    pub expires_at: i64,
}

mod hex_fp {
    use crate::alert::Fingerprint;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(fp: &Fingerprint, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&fp.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Fingerprint, D::Error> {
        let s = String::deserialize(d)?;
        u64::from_str_radix(&s, 16).map(Fingerprint).map_err(serde::de::Error::custom)
    }
}

/// One remembered item.
#[derive(Debug, Clone, PartialEq)]
pub enum Memory {
    Incident(IncidentMemory),
    Backoff(BackoffMemory),
    Flap(FlapMemory),
}

impl Memory {
    pub fn kind(&self) -> &'static str {
        match self {
            Memory::Incident(_) => "incident",
            Memory::Backoff(_) => "backoff",
            Memory::Flap(_) => "flap",
        }
    }

    /// Its key: one per incident, origin or alert.
    pub fn key(&self) -> String {
        match self {
            Memory::Incident(i) => format!("{INCIDENT_PREFIX}{}{SEP}{}", i.route_group, i.id),
            Memory::Backoff(b) => format!("{BACKOFF_PREFIX}{}", b.origin),
            Memory::Flap(f) => format!("{FLAP_PREFIX}{}", f.fingerprint),
        }
    }

    /// When it stops mattering; it is forgotten after.
    pub fn expires_at(&self) -> Timestamp {
        Timestamp(match self {
            Memory::Incident(i) => i.expires_at,
            Memory::Backoff(b) => b.expires_at,
            Memory::Flap(f) => f.expires_at,
        })
    }

    /// Its value (JSON, with the format version).
    pub fn value(&self) -> String {
        let v = match self {
            Memory::Incident(i) => serde_json::to_string(&IncidentMemory { v: FORMAT_VERSION, ..i.clone() }),
            Memory::Backoff(b) => serde_json::to_string(&BackoffMemory { v: FORMAT_VERSION, ..b.clone() }),
            Memory::Flap(f) => serde_json::to_string(&FlapMemory { v: FORMAT_VERSION, ..f.clone() }),
        };
        v.unwrap_or_default()
    }

    /// Reads an item from its key and value. None for a key that is not a memory item; an error
    /// naming the key for a value that cannot be read.
    pub fn decode(key: &str, value: &str) -> Result<Option<Memory>, String> {
        let err = |e: serde_json::Error| format!("{key}: {e}");
        let m = if key.starts_with(INCIDENT_PREFIX) {
            Memory::Incident(serde_json::from_str(value).map_err(err)?)
        } else if key.starts_with(BACKOFF_PREFIX) {
            Memory::Backoff(serde_json::from_str(value).map_err(err)?)
        } else if key.starts_with(FLAP_PREFIX) {
            Memory::Flap(serde_json::from_str(value).map_err(err)?)
        } else {
            return Ok(None);
        };
        if m.key() != key {
            return Err(format!("{key}: the value names another item ({})", m.key()));
        }
        Ok(Some(m))
    }
}

/// Whether a key belongs to a memory item.
pub fn is_memory_key(key: &str) -> bool {
    [INCIDENT_PREFIX, BACKOFF_PREFIX, FLAP_PREFIX].iter().any(|p| key.starts_with(p))
}

/// Where the engine hands what it remembers.
pub trait MemorySink: Send + Sync {
    /// Keeps the item's latest state (replacing the earlier one under its key).
    fn remember(&self, m: &Memory);
    /// Forgets items expired at `now`.
    fn gc(&self, now: Timestamp);
}

/// Merges sorted, distinct time lists: true when `into` gained any.
pub fn union_times(into: &mut Vec<i64>, other: &[i64]) -> bool {
    let before = into.len();
    into.extend_from_slice(other);
    into.sort_unstable();
    into.dedup();
    into.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_round_trip_and_keys_are_checked() {
        let items = [
            Memory::Incident(IncidentMemory {
                v: 0,
                route_group: "{}/{}:{cluster=\"a\"}".into(),
                id: 77,
                origin: "host=n1".into(),
                opened_at: 5,
                topology: vec![("host".into(), "n1".into())],
                until: 9,
                notified: Some(("k".into(), 6)),
                ack: Some(Acknowledgement { at: 7, by: "sre".into(), comment: "on it".into() }),
                escalated: vec![0],
                expires_at: 100,
            }),
            Memory::Backoff(BackoffMemory { v: 0, origin: "host=n1".into(), sent: vec![1, 2], expires_at: 50 }),
            Memory::Flap(FlapMemory {
                v: 0,
                fingerprint: Fingerprint(0xabc),
                changes: vec![1, 2, 3],
                flapping: Some(3),
                expires_at: 60,
            }),
        ];
        for m in items {
            let back = Memory::decode(&m.key(), &m.value()).unwrap().unwrap();
            assert_eq!(back.key(), m.key());
            assert_eq!(back.value(), m.value());
            assert!(back.value().contains("\"v\":1"), "{}", back.value());
        }
        assert_eq!(Memory::decode("s/x", "{}").unwrap(), None);
        let e = Memory::decode("b/host=n2", r#"{"origin":"host=n1","sent":[],"expires_at":1}"#).unwrap_err();
        assert!(e.contains("b/host=n2") && e.contains("another item"), "{e}");
        let e = Memory::decode("f/zz", r#"{"fingerprint":"zz","changes":[],"expires_at":1}"#).unwrap_err();
        assert!(e.starts_with("f/zz:"), "{e}");
    }

    #[test]
    fn union_of_times_is_sorted_and_distinct() {
        let mut a = vec![1, 5];
        assert!(union_times(&mut a, &[5, 3]));
        assert_eq!(a, [1, 3, 5]);
        assert!(!union_times(&mut a, &[1, 5]));
    }
}
