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
//!
//! An incident's item outlives the incident by `recurrence_window` when recurrences are kept: it
//! carries what recognising and rationing a recurrence needs (its alertnames, the alerts it
//! notified, whether it paged, and how it recurs an earlier one), so that the next occurrence after
//! a restart or a failover is linked and backs off as it would have in the process that saw it.

use crate::alert::Fingerprint;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The format version this alertd writes. Fields are only ever added: version 2 added an
/// incident's `names`, `alerts_notified`, `paged` and `recurrence`, and keeps a closed incident's
/// item for `recurrence_window`.
pub const FORMAT_VERSION: u32 = 2;
/// The most fingerprints an incident's item lists as notified (in `alerts_notified`, and in its
/// `recurrence`): 1,024 of them take about 20 KiB of JSON, well under the 56 KiB a cluster value may
/// have. An alert beyond them that begins again in a recurrence counts as new, and may page.
pub const MAX_NOTIFIED: usize = 1024;
/// Key prefix of an incident (`i/<route group>\x1f<number>`).
pub const INCIDENT_PREFIX: &str = "i/";
/// Key prefix of an incident origin's notification times (`b/<origin>`).
pub const BACKOFF_PREFIX: &str = "b/";
/// Key prefix of an alert's state changes (`f/<fingerprint>`).
pub const FLAP_PREFIX: &str = "f/";
const SEP: char = '\u{1f}';

/// An incident as replicas and restarts see it: open, or closed less than `recurrence_window` ago.
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
    /// Until its close plus `recurrence_window`.
    pub expires_at: i64,
    /// Alertnames of its alerts: an incident opening at its place after it closed, with one of
    /// them, recurs it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Firing alerts its notifications carried (at most `MAX_NOTIFIED`).
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "hex_fps")]
    pub alerts_notified: Vec<Fingerprint>,
    /// Whether it has been notified (`notified` says so only where escalation rules track it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paged: bool,
    /// The earlier incident it recurs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurrence: Option<RecurrenceMemory>,
}

/// How an incident recurs an earlier one (`crate::incident::Recurrence`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecurrenceMemory {
    /// The number of the occurrence it recurs.
    pub of: u64,
    /// Which occurrence it is: 2 for the first recurrence.
    pub occurrence: u32,
    /// When the first occurrence opened.
    pub since: i64,
    /// Alertnames of the earlier occurrences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub known: Vec<String>,
    /// Alerts the earlier occurrences notified (at most `MAX_NOTIFIED`).
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "hex_fps")]
    pub alerts_notified: Vec<Fingerprint>,
    /// Earlier occurrences held back unnotified since the last one notified.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub held: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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

mod hex_fps {
    use crate::alert::Fingerprint;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(fps: &[Fingerprint], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(fps.iter().map(|fp| fp.to_string()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Fingerprint>, D::Error> {
        let v = Vec::<String>::deserialize(d)?;
        v.iter().map(|s| u64::from_str_radix(s, 16).map(Fingerprint).map_err(serde::de::Error::custom)).collect()
    }
}

/// One remembered item.
#[derive(Debug, Clone, PartialEq)]
pub enum Memory {
    /// Boxed: an incident's item is several times the size of the others.
    Incident(Box<IncidentMemory>),
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
            Memory::Incident(i) => serde_json::to_string(&IncidentMemory { v: FORMAT_VERSION, ..(**i).clone() }),
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
            Memory::Incident(Box::new(IncidentMemory {
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
                names: vec!["DiskFull".into()],
                alerts_notified: vec![Fingerprint(0xabc)],
                paged: true,
                recurrence: Some(RecurrenceMemory {
                    of: 76,
                    occurrence: 2,
                    since: 1,
                    known: vec!["DiskFull".into()],
                    alerts_notified: vec![Fingerprint(0xdef)],
                    held: 1,
                }),
            })),
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
            assert!(back.value().contains("\"v\":2"), "{}", back.value());
        }
        assert_eq!(Memory::decode("s/x", "{}").unwrap(), None);
        let e = Memory::decode("b/host=n2", r#"{"origin":"host=n1","sent":[],"expires_at":1}"#).unwrap_err();
        assert!(e.contains("b/host=n2") && e.contains("another item"), "{e}");
        let e = Memory::decode("f/zz", r#"{"fingerprint":"zz","changes":[],"expires_at":1}"#).unwrap_err();
        assert!(e.starts_with("f/zz:"), "{e}");
    }

    /// An incident as the previous release (format version 1) wrote it, in alertd.db or from a peer:
    /// it reads, with no recurrence and nothing notified.
    #[test]
    fn an_incident_of_format_version_1_reads_without_recurrence() {
        let v1 = r#"{"v":1,"route_group":"g","id":7,"origin":"host=n1","opened_at":5,"topology":[["host","n1"]],"until":9,"notified":["k",6],"expires_at":609}"#;
        let Some(Memory::Incident(i)) = Memory::decode("i/g\u{1f}7", v1).unwrap() else { panic!("not an incident") };
        assert_eq!((i.id, i.notified.clone(), i.until), (7, Some(("k".to_string(), 6)), 9));
        assert_eq!((i.names.len(), i.alerts_notified.len(), i.paged, &i.recurrence), (0, 0, false, &None));
        // Written again, it has the new version and still no recurrence fields.
        let again = Memory::Incident(i).value();
        assert!(
            again.starts_with(r#"{"v":2,"#) && !again.contains("recurrence") && !again.contains("paged"),
            "{again}"
        );
    }

    /// What the previous release reads of an incident (its `IncidentMemory`, format version 1, which
    /// ignores fields it does not know): a replica of it decodes this release's items, recurrence
    /// and all.
    #[test]
    fn the_previous_release_reads_an_incident_of_this_one() {
        #[derive(Debug, PartialEq, Deserialize)]
        struct V1 {
            #[serde(default)]
            v: u32,
            route_group: String,
            id: u64,
            origin: String,
            opened_at: i64,
            topology: Vec<(String, String)>,
            until: i64,
            #[serde(default)]
            notified: Option<(String, i64)>,
            #[serde(default)]
            ack: Option<Acknowledgement>,
            #[serde(default)]
            escalated: Vec<usize>,
            expires_at: i64,
        }
        let m = IncidentMemory {
            v: 0,
            route_group: "g".into(),
            id: 8,
            origin: "host=n1".into(),
            opened_at: 5,
            topology: vec![("host".into(), "n1".into())],
            until: 9,
            notified: None,
            ack: None,
            escalated: vec![],
            expires_at: 100,
            names: vec!["DiskFull".into()],
            alerts_notified: vec![Fingerprint(1)],
            paged: true,
            recurrence: Some(RecurrenceMemory {
                of: 7,
                occurrence: 2,
                since: 1,
                known: vec![],
                alerts_notified: vec![],
                held: 0,
            }),
        };
        let old: V1 = serde_json::from_str(&Memory::Incident(Box::new(m)).value()).unwrap();
        let topology = vec![("host".to_string(), "n1".to_string())];
        let want = V1 {
            v: 2,
            route_group: "g".into(),
            id: 8,
            origin: "host=n1".into(),
            opened_at: 5,
            topology,
            until: 9,
            notified: None,
            ack: None,
            escalated: vec![],
            expires_at: 100,
        };
        assert_eq!(old, want);
    }

    #[test]
    fn union_of_times_is_sorted_and_distinct() {
        let mut a = vec![1, 5];
        assert!(union_times(&mut a, &[5, 3]));
        assert_eq!(a, [1, 3, 5]);
        assert!(!union_times(&mut a, &[1, 5]));
    }
}
