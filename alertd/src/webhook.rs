//! The webhook body: Alertmanager's webhook v4 message, field for field, plus an optional `argus`
//! object (incident and flap details) that v4 consumers ignore.

use crate::alert::{Alert, Status};
use crate::time::Timestamp;
use argus_model::Labels;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Go's `template.KV`: a JSON object with keys in order.
pub type Kv = BTreeMap<String, String>;

fn kv(l: &Labels) -> Kv {
    l.iter().map(|x| (x.name.clone(), x.value.clone())).collect()
}

/// Alertmanager's webhook `Message`, fields in Alertmanager's order. Read back by the outbox to
/// batch messages.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Message {
    pub receiver: String,
    pub status: Status,
    pub alerts: Vec<MessageAlert>,
    #[serde(rename = "groupLabels")]
    pub group_labels: Kv,
    #[serde(rename = "commonLabels")]
    pub common_labels: Kv,
    #[serde(rename = "commonAnnotations")]
    pub common_annotations: Kv,
    #[serde(rename = "externalURL")]
    pub external_url: String,
    /// Always "4".
    pub version: String,
    #[serde(rename = "groupKey")]
    pub group_key: String,
    #[serde(rename = "truncatedAlerts")]
    pub truncated_alerts: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argus: Option<Extras>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MessageAlert {
    pub status: Status,
    pub labels: Kv,
    pub annotations: Kv,
    #[serde(rename = "startsAt")]
    pub starts_at: Timestamp,
    /// Go's zero time while the alert is firing, as Alertmanager hides a future end.
    #[serde(rename = "endsAt")]
    pub ends_at: Timestamp,
    #[serde(rename = "generatorURL")]
    pub generator_url: String,
    pub fingerprint: String,
}

/// What alertd adds: the incident this group is, and which of its alerts are flapping.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Extras {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incident: Option<IncidentInfo>,
    /// Fingerprint → state changes, for flapping alerts in this message.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flapping: BTreeMap<String, u32>,
    /// How many notifications a receiver's rate limit held and sent as this one message.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batched: u32,
    /// Set on an escalation: the incident went unacknowledged this long after its first notification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<Escalation>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Escalation {
    /// Seconds without an acknowledgement (the rule's `after`).
    #[serde(rename = "unacknowledgedSeconds")]
    pub unacknowledged_seconds: u64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IncidentInfo {
    pub id: u64,
    #[serde(rename = "probableCause")]
    pub probable_cause: String,
    /// Fingerprint of the alert that names the cause.
    #[serde(rename = "causeAlert")]
    pub cause_alert: String,
    pub alerts: usize,
    #[serde(rename = "openedAt")]
    pub opened_at: Timestamp,
}

/// Everything a message is built from.
pub struct Input<'a> {
    pub receiver: &'a str,
    pub group_key: &'a str,
    pub group_labels: &'a Labels,
    pub external_url: &'a str,
    pub alerts: &'a [Alert],
    pub max_alerts: u64,
    pub now: Timestamp,
    pub extras: Option<Extras>,
}

pub fn message(i: Input) -> Message {
    let firing = i.alerts.iter().any(|a| !a.resolved_at(i.now));
    let total = i.alerts.len() as u64;
    let keep = if i.max_alerts > 0 && total > i.max_alerts { i.max_alerts as usize } else { i.alerts.len() };
    let alerts = i.alerts[..keep]
        .iter()
        .map(|a| {
            let status = a.status(i.now);
            MessageAlert {
                status,
                labels: kv(&a.labels),
                annotations: kv(&a.annotations),
                starts_at: a.starts_at,
                ends_at: if status == Status::Firing { Timestamp::ZERO } else { a.ends_at },
                generator_url: a.generator_url.clone(),
                fingerprint: a.fingerprint().to_string(),
            }
        })
        .collect();
    Message {
        receiver: i.receiver.to_string(),
        status: if firing { Status::Firing } else { Status::Resolved },
        alerts,
        group_labels: kv(i.group_labels),
        common_labels: common(i.alerts.iter().map(|a| &a.labels)),
        common_annotations: common(i.alerts.iter().map(|a| &a.annotations)),
        external_url: i.external_url.to_string(),
        version: "4".into(),
        group_key: i.group_key.to_string(),
        truncated_alerts: total - keep as u64,
        argus: i.extras,
    }
}

/// Labels with the same value in every set (over all alerts, before truncation, as Alertmanager).
fn common<'a>(mut sets: impl Iterator<Item = &'a Labels>) -> Kv {
    let Some(first) = sets.next() else { return Kv::new() };
    let mut out = kv(first);
    for s in sets {
        out.retain(|k, v| s.get(k) == Some(v.as_str()));
    }
    out
}
