//! Silences: matchers with a time window, behind `Silences`: in memory here, in SQLite in `db`.

use crate::mute::Muter;
use crate::suppressed::{Reason, SilencedBy};
use crate::time::Timestamp;
use argus_model::{Labels, MatchOp, Matcher};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone)]
pub struct Silence {
    pub id: String,
    pub matchers: Vec<Matcher>,
    pub starts_at: Timestamp,
    pub ends_at: Timestamp,
    pub updated_at: Timestamp,
    pub created_by: String,
    pub comment: String,
    /// Silence until resolved (alertd's own): alertd expires the silence once no alert it matches
    /// is firing; `ends_at` is then only a bound on its lifetime.
    pub until_resolved: bool,
}

impl Silence {
    /// A silence until resolved made at `now`, with a new id, that lasts at most `max`.
    pub fn until_resolved(
        matchers: Vec<Matcher>,
        created_by: String,
        comment: String,
        now: Timestamp,
        max: std::time::Duration,
    ) -> Silence {
        Silence {
            id: new_id(),
            matchers,
            starts_at: now,
            ends_at: now + max,
            updated_at: now,
            created_by,
            comment,
            until_resolved: true,
        }
    }

    /// Active from `starts_at` (inclusive) to `ends_at` (exclusive).
    pub fn active_at(&self, now: Timestamp) -> bool {
        self.starts_at <= now && now < self.ends_at
    }

    /// Alertmanager's silence states.
    pub fn state(&self, now: Timestamp) -> SilenceState {
        if self.ends_at <= now {
            SilenceState::Expired
        } else if now < self.starts_at {
            SilenceState::Pending
        } else {
            SilenceState::Active
        }
    }

    /// Ends the silence at `now`, unless it ends earlier; a pending one starts and ends now.
    pub fn expire(&mut self, now: Timestamp) {
        self.ends_at = self.ends_at.min(now);
        self.starts_at = self.starts_at.min(self.ends_at);
        self.updated_at = now;
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        self.matchers.iter().all(|m| m.matches(labels.get(&m.name).unwrap_or("")))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SilenceState {
    Active,
    Pending,
    Expired,
}

/// A silence store that could not write.
#[derive(Debug, thiserror::Error)]
#[error("silence storage: {0}")]
pub struct StoreError(pub String);

/// A matcher as Alertmanager's API v2 writes it (`matcher` in api/v2/openapi.yaml); also how the
/// database keeps a silence's matchers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WireMatcher {
    pub name: String,
    pub value: String,
    #[serde(rename = "isRegex")]
    pub is_regex: bool,
    #[serde(rename = "isEqual", default = "yes")]
    pub is_equal: bool,
}

fn yes() -> bool {
    true
}

impl WireMatcher {
    pub fn from_matcher(m: &Matcher) -> WireMatcher {
        let (is_regex, is_equal) = match m.op {
            MatchOp::Equal => (false, true),
            MatchOp::NotEqual => (false, false),
            MatchOp::RegexMatch => (true, true),
            MatchOp::RegexNoMatch => (true, false),
        };
        WireMatcher { name: m.name.clone(), value: m.value.clone(), is_regex, is_equal }
    }

    pub fn to_matcher(&self) -> Result<Matcher, argus_model::MatcherError> {
        let op = match (self.is_regex, self.is_equal) {
            (false, true) => MatchOp::Equal,
            (false, false) => MatchOp::NotEqual,
            (true, true) => MatchOp::RegexMatch,
            (true, false) => MatchOp::RegexNoMatch,
        };
        Matcher::new(self.name.clone(), op, self.value.clone())
    }
}

/// Where silences live.
pub trait Silences: Send + Sync {
    /// Adds a silence, or replaces the one with the same id.
    fn set(&self, s: Silence) -> Result<(), StoreError>;
    /// Ends a silence at `now` (one that ends earlier keeps its end); false when there is no such
    /// silence.
    fn expire(&self, id: &str, now: Timestamp) -> Result<bool, StoreError>;
    fn list(&self) -> Vec<Silence>;
    /// The silence with this id (without copying the others, as `list` does).
    fn get(&self, id: &str) -> Option<Silence>;
    /// Forgets silences that expired `retention` or more before `now`.
    fn gc(&self, now: Timestamp, retention: std::time::Duration);
}

#[derive(Default)]
pub struct MemSilences {
    inner: Mutex<Vec<Silence>>,
}

impl Silences for MemSilences {
    fn set(&self, s: Silence) -> Result<(), StoreError> {
        let mut v = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        v.retain(|x| x.id != s.id);
        v.push(s);
        Ok(())
    }

    fn expire(&self, id: &str, now: Timestamp) -> Result<bool, StoreError> {
        let mut v = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        Ok(v.iter_mut().find(|x| x.id == id).map(|s| s.expire(now)).is_some())
    }

    fn list(&self) -> Vec<Silence> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn get(&self, id: &str) -> Option<Silence> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|s| s.id == id).cloned()
    }

    fn gc(&self, now: Timestamp, retention: std::time::Duration) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).retain(|s| now - s.ends_at < retention);
    }
}

/// A random version 4 UUID, the form Alertmanager's silence ids take (`amtool` prints them).
pub fn new_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the OS once per thread and stepped for every instance, so two
    // calls never share a key; the time and a counter vary the input as well.
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let half = |salt: u64| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(salt);
        h.write_u64(n);
        h.write_u128(t);
        h.finish()
    };
    let (hi, lo) = (half(1), half(2));
    let hi = (hi & 0xffff_ffff_ffff_0fff) | 0x4000;
    let lo = (lo & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// The silences as a `Muter`.
pub struct Silencer(pub Arc<dyn Silences>);

impl Muter for Silencer {
    /// The active silences that match, until the last of them ends.
    fn muted_by(&self, labels: &Labels, now: Timestamp) -> Option<(Reason, Option<Timestamp>)> {
        let mut by: Vec<Silence> =
            self.0.list().into_iter().filter(|s| s.active_at(now) && s.matches(labels)).collect();
        if by.is_empty() {
            return None;
        }
        by.sort_by(|a, b| a.id.cmp(&b.id));
        let until = by.iter().map(|s| s.ends_at).max();
        let silences = by
            .into_iter()
            .map(|s| SilencedBy {
                id: s.id,
                created_by: s.created_by,
                comment: s.comment,
                ends_at: s.ends_at,
                until_resolved: s.until_resolved,
            })
            .collect();
        Some((Reason::Silenced { silences }, until))
    }
}
