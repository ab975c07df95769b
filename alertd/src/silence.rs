//! Silences: matchers with a time window. Kept in memory behind `Silences`, so a durable store can
//! replace it without touching the pipeline.

use crate::mute::Muter;
use crate::time::Timestamp;
use argus_model::{Labels, Matcher};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone)]
pub struct Silence {
    pub id: String,
    pub matchers: Vec<Matcher>,
    pub starts_at: Timestamp,
    pub ends_at: Timestamp,
    pub created_by: String,
    pub comment: String,
}

impl Silence {
    /// Active from `starts_at` (inclusive) to `ends_at` (exclusive).
    pub fn active_at(&self, now: Timestamp) -> bool {
        self.starts_at <= now && now < self.ends_at
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        self.matchers.iter().all(|m| m.matches(labels.get(&m.name).unwrap_or("")))
    }
}

/// Where silences live.
pub trait Silences: Send + Sync {
    /// Adds a silence, or replaces the one with the same id.
    fn set(&self, s: Silence);
    /// Ends a silence at `now`; false when there is no such silence.
    fn expire(&self, id: &str, now: Timestamp) -> bool;
    fn list(&self) -> Vec<Silence>;
}

#[derive(Default)]
pub struct MemSilences {
    inner: Mutex<Vec<Silence>>,
}

impl Silences for MemSilences {
    fn set(&self, s: Silence) {
        let mut v = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        v.retain(|x| x.id != s.id);
        v.push(s);
    }

    fn expire(&self, id: &str, now: Timestamp) -> bool {
        let mut v = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match v.iter_mut().find(|x| x.id == id) {
            Some(s) => {
                s.ends_at = s.ends_at.min(now);
                true
            }
            None => false,
        }
    }

    fn list(&self) -> Vec<Silence> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The silences as a `Muter`.
pub struct Silencer(pub Arc<dyn Silences>);

impl Muter for Silencer {
    fn mutes(&self, labels: &Labels, now: Timestamp) -> bool {
        self.0.list().iter().any(|s| s.active_at(now) && s.matches(labels))
    }
}
