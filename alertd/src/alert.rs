//! Alerts as Alertmanager's API v2 carries them, and their identity (the fingerprint of the labels).

use crate::time::Timestamp;
use argus_model::Labels;
pub(crate) use argus_model::valid_label_name;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// One alert as alertd holds it: the sender's fields plus when alertd last heard of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub labels: Labels,
    pub annotations: Labels,
    pub starts_at: Timestamp,
    /// When the alert ends. Always set once received: a sender that gives none gets
    /// `received + resolve_timeout`, and `timeout` says so.
    pub ends_at: Timestamp,
    pub generator_url: String,
    pub updated_at: Timestamp,
    /// `ends_at` was set by alertd from `resolve_timeout`, not by the sender.
    pub timeout: bool,
}

/// Alertmanager's fingerprint: FNV-1a 64 over the sorted label names and values, each followed by
/// 0xff. Equal to Prometheus' `model.LabelSet.Fingerprint`, so fingerprints match Alertmanager's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(pub u64);

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

pub fn fingerprint(labels: &Labels) -> Fingerprint {
    const OFFSET: u64 = 14_695_981_039_346_656_037;
    const PRIME: u64 = 1_099_511_628_211;
    let mut h = OFFSET;
    let mut add = |b: &[u8]| {
        for &c in b {
            h ^= u64::from(c);
            h = h.wrapping_mul(PRIME);
        }
    };
    for l in labels {
        add(l.name.as_bytes());
        add(&[0xff]);
        add(l.value.as_bytes());
        add(&[0xff]);
    }
    Fingerprint(h)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Firing,
    Resolved,
}

impl Alert {
    pub fn fingerprint(&self) -> Fingerprint {
        fingerprint(&self.labels)
    }

    /// Resolved at `now`: its end is set and not after `now` (Alertmanager's `ResolvedAt`).
    pub fn resolved_at(&self, now: Timestamp) -> bool {
        !self.ends_at.is_zero() && self.ends_at <= now
    }

    pub fn status(&self, now: Timestamp) -> Status {
        if self.resolved_at(now) { Status::Resolved } else { Status::Firing }
    }

    /// Alertmanager's `Alert.Merge`: `other` is an update of the same alert. The younger update wins,
    /// keeping the earliest start; a sender's explicit end beats a resolve-timeout guess.
    pub fn merge(&self, other: &Alert) -> Alert {
        if other.updated_at < self.updated_at {
            return other.merge(self);
        }
        let mut res = other.clone();
        if self.starts_at < other.starts_at {
            res.starts_at = self.starts_at;
        }
        if other.resolved_at(other.updated_at) {
            if self.resolved_at(self.updated_at) && self.ends_at > other.ends_at {
                res.ends_at = self.ends_at;
            }
        } else if self.ends_at > other.ends_at && !self.timeout {
            res.ends_at = self.ends_at;
        }
        res
    }
}

/// An alert as posted to `POST /api/v2/alerts` (Alertmanager's `postableAlert`).
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PostableAlert {
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(rename = "startsAt", default, skip_serializing_if = "Option::is_none")]
    pub starts_at: Option<Timestamp>,
    #[serde(rename = "endsAt", default, skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<Timestamp>,
    #[serde(rename = "generatorURL", default)]
    pub generator_url: String,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AlertError {
    #[error("alert has no labels")]
    NoLabels,
    #[error("invalid label name {0:?}")]
    BadLabelName(String),
    #[error("alert {labels} ends before it starts")]
    EndsBeforeStart { labels: String },
}

impl PostableAlert {
    /// Validates and completes a posted alert received at `now`, as Alertmanager's API does: a missing
    /// start is `now` (or the end, when only that is given); a missing end is `now + resolve_timeout`.
    pub fn into_alert(self, now: Timestamp, resolve_timeout: Duration) -> Result<Alert, AlertError> {
        if self.labels.is_empty() {
            return Err(AlertError::NoLabels);
        }
        if let Some(bad) = self.labels.keys().find(|n| !valid_label_name(n)) {
            return Err(AlertError::BadLabelName(bad.clone()));
        }
        let labels = Labels::from_pairs(self.labels);
        if labels.is_empty() {
            return Err(AlertError::NoLabels);
        }
        let annotations = Labels::from_pairs(self.annotations);
        let ends = self.ends_at.filter(|t| !t.is_zero());
        let starts = match (self.starts_at.filter(|t| !t.is_zero()), ends) {
            (Some(s), _) => s,
            (None, Some(e)) => e,
            (None, None) => now,
        };
        if let Some(e) = ends
            && e < starts
        {
            return Err(AlertError::EndsBeforeStart { labels: labels.to_string() });
        }
        let (ends_at, timeout) = match ends {
            Some(e) => (e, false),
            None => (now + resolve_timeout, true),
        };
        Ok(Alert {
            labels,
            annotations,
            starts_at: starts,
            ends_at,
            generator_url: self.generator_url,
            updated_at: now,
            timeout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(json: &str) -> Result<Alert, String> {
        let p: PostableAlert = serde_json::from_str(json).map_err(|e| e.to_string())?;
        p.into_alert(Timestamp(1_000_000), Duration::from_secs(300)).map_err(|e| e.to_string())
    }

    #[test]
    fn fingerprint_matches_alertmanager() {
        // Values from prometheus/common model/signature_test.go (TestLabelsToSignature uses the same
        // scheme): the empty set hashes to the FNV offset basis.
        assert_eq!(fingerprint(&Labels::default()).0, 14_695_981_039_346_656_037);
        let a = fingerprint(&Labels::from_pairs([("name", "garland, briggs"), ("fear", "love is not enough")]));
        assert_eq!(a.0, 5_799_056_148_416_392_346);
    }

    #[test]
    fn posted_alert_defaults() {
        let a = post(r#"{"labels":{"alertname":"X"}}"#).unwrap();
        assert_eq!((a.starts_at.0, a.ends_at.0, a.timeout), (1_000_000, 1_300_000, true));
        let a = post(r#"{"labels":{"alertname":"X"},"endsAt":"1970-01-01T00:00:02Z"}"#).unwrap();
        assert_eq!((a.starts_at.0, a.ends_at.0, a.timeout), (2000, 2000, false));
        assert_eq!(post(r#"{"labels":{}}"#).unwrap_err(), "alert has no labels");
        assert_eq!(post(r#"{"labels":{"1x":"y"}}"#).unwrap_err(), r#"invalid label name "1x""#);
        assert!(post(r#"{"labels":{"a":"b"},"foo":1}"#).unwrap_err().contains("unknown field `foo`"));
    }

    #[test]
    fn merge_keeps_earliest_start_and_explicit_end() {
        let mut old = post(r#"{"labels":{"a":"b"},"startsAt":"1970-01-01T00:00:01Z"}"#).unwrap();
        old.updated_at = Timestamp(500);
        let new = post(r#"{"labels":{"a":"b"},"startsAt":"1970-01-01T00:00:05Z"}"#).unwrap();
        let m = old.merge(&new);
        assert_eq!(m.starts_at.0, 1000);
        assert_eq!(m.ends_at, new.ends_at);
    }
}
