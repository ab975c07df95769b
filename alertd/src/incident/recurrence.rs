//! Recurring incidents: an incident that opens where one closed less than `recurrence_window` ago,
//! with an alertname that one had, is the same problem again. It is linked to the earlier one (its
//! number, the occurrence count, when the first occurrence opened) and takes over its origin, so
//! its first notification is rationed by the origin's backoff like an update of a still-open
//! incident (`HoldStage`), instead of paging as a new incident does.
//!
//! The identity is the correlation key (a shared topology value, the rule that joins open
//! incidents) and the alertname: a problem that recurs fires the same rules, but often on other
//! series of the place (another GPU, disk or metric of the host), so fingerprints differ from one
//! occurrence to the next while alertnames do not. An alertname the earlier occurrences never had is
//! a new kind of trouble and pages at once, and so does a critical alert. An alert the earlier
//! occurrences notified that begins again rides along, as it would in an update.
//!
//! The engine's memory (`crate::memory`) keeps an incident's item until `recurrence_window` after it
//! closed, with its recurrence, so a restart or a replica rebuilds the closed incidents from it
//! (`History::remember`). Occurrences of one problem form a chain with one origin and one `since`
//! (when the first opened): of a chain, only the latest occurrence is kept, whatever order the items
//! arrive in, as a recurrence taking over a closed incident (`History::take`) does in one process.

use crate::alert::{Alert, Fingerprint};
use crate::memory::{MAX_NOTIFIED, RecurrenceMemory};
use crate::time::Timestamp;
use std::collections::BTreeSet;
use std::time::Duration;

/// The label value that always pages at once, recurrence or not.
pub const CRITICAL: (&str, &str) = ("severity", "critical");

/// How an incident recurs an earlier one.
#[derive(Debug, Clone, PartialEq)]
pub struct Recurrence {
    /// The number of the occurrence it recurs (the one before it).
    pub of: u64,
    /// Which occurrence this is: 2 for the first recurrence.
    pub occurrence: u32,
    /// When the first occurrence opened.
    pub since: Timestamp,
    /// Alertnames of the earlier occurrences: an alert with another name is news.
    pub known: BTreeSet<String>,
    /// Alerts the earlier occurrences notified: one of them beginning again is, as in an update of
    /// an open incident, a rider that joins a burst but leads none.
    pub notified: BTreeSet<Fingerprint>,
    /// Earlier occurrences, since the last one that was notified, that were held back and never
    /// notified: the next notification says how many.
    pub held: u32,
}

impl Recurrence {
    /// Whether `a` pages at once in a recurrence: it is critical, or of an alertname the earlier
    /// occurrences did not have.
    pub fn is_news(&self, a: &Alert) -> bool {
        a.labels.get(CRITICAL.0) == Some(CRITICAL.1)
            || !a.labels.get("alertname").is_some_and(|n| self.known.contains(n))
    }

    /// The annotations a notification of the recurrence carries, so receivers can show "3rd time in
    /// 2h": `argus_occurrence`, `argus_recurrence_of`, `argus_recurring_since` and, when earlier
    /// occurrences were held back unnotified, `argus_recurrences_held`.
    pub fn annotations(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("argus_occurrence", self.occurrence.to_string()),
            ("argus_recurrence_of", self.of.to_string()),
            ("argus_recurring_since", self.since.to_string()),
        ];
        if self.held > 0 {
            out.push(("argus_recurrences_held", self.held.to_string()));
        }
        out
    }

    /// As the engine's memory keeps it.
    pub fn to_memory(&self) -> RecurrenceMemory {
        RecurrenceMemory {
            of: self.of,
            occurrence: self.occurrence,
            since: self.since.0,
            known: self.known.iter().cloned().collect(),
            alerts_notified: self.notified.iter().take(MAX_NOTIFIED).copied().collect(),
            held: self.held,
        }
    }

    /// From the engine's memory.
    pub fn from_memory(m: &RecurrenceMemory) -> Recurrence {
        Recurrence {
            of: m.of,
            occurrence: m.occurrence,
            since: Timestamp(m.since),
            known: m.known.iter().cloned().collect(),
            notified: m.alerts_notified.iter().copied().collect(),
            held: m.held,
        }
    }

    /// Whether this recurrence stands over `other`, as the same incident's recurrence seen by a peer:
    /// the later occurrence, then the earlier incident it recurs, so every replica keeps the same.
    pub(super) fn supersedes(&self, other: &Recurrence) -> bool {
        (self.occurrence, std::cmp::Reverse(self.of)) > (other.occurrence, std::cmp::Reverse(other.of))
    }
}

/// A closed incident, kept for `recurrence_window` so that its problem coming back is recognised.
#[derive(Debug, Clone)]
pub(super) struct Closed {
    pub id: u64,
    pub origin: String,
    pub topology: BTreeSet<(String, String)>,
    /// Alertnames of this occurrence and the earlier ones it recurred.
    pub names: BTreeSet<String>,
    /// Alerts notified in this occurrence and the earlier ones.
    pub notified: BTreeSet<Fingerprint>,
    /// When it closed: its last alert's end plus the correlation window.
    pub closed_at: Timestamp,
    pub occurrence: u32,
    pub since: Timestamp,
    /// Occurrences up to this one, since the last notified, that were never notified.
    pub held: u32,
}

impl Closed {
    /// Whether it is an occurrence, earlier than `occurrence`, of the chain of `origin` that began
    /// at `since`.
    fn precedes(&self, origin: &str, since: Timestamp, occurrence: u32) -> bool {
        self.origin == origin && self.since == since && self.occurrence < occurrence
    }
}

/// Closed incidents of one route group, oldest first.
#[derive(Debug, Default)]
pub(super) struct History {
    closed: Vec<Closed>,
}

// === impl History ===

impl History {
    pub fn push(&mut self, c: Closed) {
        self.closed.push(c);
    }

    /// Forgets incidents closed `window` or longer before `now`.
    pub fn expire(&mut self, now: Timestamp, window: Duration) {
        self.closed.retain(|c| now < c.closed_at + window);
    }

    pub fn is_empty(&self) -> bool {
        self.closed.is_empty()
    }

    /// The latest closed incident an incident opening at `now` with `topology` and first alertname
    /// `name` recurs, if any closed less than `window` ago.
    pub fn find(
        &self,
        topology: &BTreeSet<(String, String)>,
        name: &str,
        now: Timestamp,
        window: Duration,
    ) -> Option<&Closed> {
        self.closed
            .iter()
            .filter(|c| now < c.closed_at + window && !c.topology.is_disjoint(topology) && c.names.contains(name))
            .max_by_key(|c| c.closed_at)
    }

    /// Keeps a closed incident that a peer or an earlier process remembers, unless it is known here
    /// or a later occurrence of its chain is; earlier occurrences of its chain are dropped. True
    /// when it was kept.
    pub fn remember(&mut self, c: Closed) -> bool {
        let later =
            |k: &Closed| k.id == c.id || (k.origin == c.origin && k.since == c.since && k.occurrence >= c.occurrence);
        if self.closed.iter().any(later) {
            return false;
        }
        self.supersede(&c.origin, c.since, c.occurrence);
        self.closed.push(c);
        true
    }

    /// Drops the occurrences before `occurrence` of the chain of `origin` that began at `since`: an
    /// incident held here recurs them.
    pub fn supersede(&mut self, origin: &str, since: Timestamp, occurrence: u32) {
        self.closed.retain(|c| !c.precedes(origin, since, occurrence));
    }

    /// Drops the closed incident `id` once a recurrence has taken it over: the recurrence carries its
    /// names and count on, and is the one the next recurrence links to.
    pub fn take(&mut self, id: u64) {
        self.closed.retain(|c| c.id != id);
    }
}
