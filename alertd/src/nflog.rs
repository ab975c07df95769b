//! The notification log: what was last sent for each group and receiver integration. Dedup reads
//! it; it is written after a send. In memory behind `NotificationLog`, so a durable log can replace it.

use crate::alert::Fingerprint;
use crate::time::Timestamp;
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

/// One log entry (Alertmanager's `nflogpb.Entry`): the firing and resolved alerts of the last
/// notification and when it was sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub firing: BTreeSet<Fingerprint>,
    pub resolved: BTreeSet<Fingerprint>,
    pub timestamp: Timestamp,
}

impl Entry {
    /// Every alert of `firing` was firing in this entry.
    pub fn is_firing_subset(&self, firing: &BTreeSet<Fingerprint>) -> bool {
        firing.is_subset(&self.firing)
    }

    pub fn is_resolved_subset(&self, resolved: &BTreeSet<Fingerprint>) -> bool {
        resolved.is_subset(&self.resolved)
    }
}

/// The receiver integration an entry belongs to, e.g. `team-gpu/webhook/0`.
pub type Recipient = String;

pub trait NotificationLog: Send + Sync {
    fn get(&self, group_key: &str, recipient: &str) -> Option<Entry>;
    fn log(&self, group_key: &str, recipient: &str, entry: Entry);
    /// Drops entries older than `retention`.
    fn gc(&self, now: Timestamp, retention: Duration);
    /// Every entry: group key, recipient, entry.
    fn entries(&self) -> Vec<(String, Recipient, Entry)>;
}

#[derive(Default)]
pub struct MemLog {
    entries: Mutex<HashMap<(String, Recipient), Entry>>,
}

impl NotificationLog for MemLog {
    fn get(&self, group_key: &str, recipient: &str) -> Option<Entry> {
        let m = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        m.get(&(group_key.to_string(), recipient.to_string())).cloned()
    }

    fn log(&self, group_key: &str, recipient: &str, entry: Entry) {
        let mut m = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        m.insert((group_key.to_string(), recipient.to_string()), entry);
    }

    fn gc(&self, now: Timestamp, retention: Duration) {
        let mut m = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        m.retain(|_, e| now - e.timestamp < retention);
    }

    fn entries(&self) -> Vec<(String, Recipient, Entry)> {
        let m = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        m.iter().map(|((g, r), e)| (g.clone(), r.clone(), e.clone())).collect()
    }
}
