//! What held an alert back, as `GET /api/v1/suppressed` shows it.

use crate::time::Timestamp;
use serde::Serialize;
use std::collections::BTreeMap;

/// Where an alert was held: the route (and its group) or the receiver integration.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct HeldRoute {
    pub receiver: String,
    /// The route's path in the routing tree, e.g. `{}/{severity="page"}` (empty for a hold in
    /// delivery, which may carry several groups in one message).
    pub route: String,
    #[serde(rename = "groupKey")]
    pub group_key: String,
    /// The receiver integration, e.g. `team/webhook/0`; empty when the hold is the route's (every
    /// integration of the receiver is held alike).
    pub integration: String,
    /// The dispatcher's id of the group (one per route and group labels); empty in delivery.
    #[serde(skip)]
    pub group: String,
}

/// A silence that mutes the alert.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SilencedBy {
    pub id: String,
    #[serde(rename = "createdBy")]
    pub created_by: String,
    pub comment: String,
    #[serde(rename = "endsAt")]
    pub ends_at: Timestamp,
    /// A silence until resolved: it ends once its alerts have resolved, `endsAt` is only its bound.
    #[serde(rename = "untilResolved")]
    pub until_resolved: bool,
}

/// An inhibit rule that mutes the alert, and its source alerts that do.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct InhibitedBy {
    /// The rule's position in `inhibit_rules`, from 0.
    pub rule: usize,
    #[serde(rename = "sourceMatchers")]
    pub source_matchers: Vec<String>,
    #[serde(rename = "targetMatchers")]
    pub target_matchers: Vec<String>,
    pub equal: Vec<String>,
    /// The inhibiting (source) alerts.
    pub alerts: Vec<InhibitingAlert>,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct InhibitingAlert {
    pub fingerprint: String,
    pub labels: BTreeMap<String, String>,
}

/// Which timer an alert waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Timer {
    /// A new group's first flush.
    GroupWait,
    /// The group's next flush: the alert joined a group that has already notified.
    GroupInterval,
    /// Already notified: sent again once `repeat_interval` has passed since.
    RepeatInterval,
    /// An update of a correlated incident with fewer new alerts than its backoff asks for.
    Backoff,
    /// An update of an incident waiting out `update_interval` since its last notification.
    UpdateInterval,
}

/// Why an alert is held back. `reason` names the kind; the other fields are what held it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Reason {
    /// Active silences match the alert.
    Silenced { silences: Vec<SilencedBy> },
    /// Firing source alerts of inhibit rules mute it.
    Inhibited { rules: Vec<InhibitedBy> },
    /// Flap suppression: it changed state `changes` times (at least `threshold` within `window`)
    /// and is released once it has not changed for `settle`.
    Flapping {
        changes: u32,
        threshold: u32,
        #[serde(rename = "windowSeconds")]
        window_seconds: u64,
        #[serde(rename = "settleSeconds")]
        settle_seconds: u64,
        #[serde(rename = "lastChange")]
        last_change: Timestamp,
    },
    /// Storm control: the integration's rate limit (`max` messages per `per`) holds its
    /// notification; `waiting` notifications go out as one message when the next slot opens.
    Storm {
        #[serde(rename = "maxMessages")]
        max_messages: u32,
        #[serde(rename = "perSeconds")]
        per_seconds: f64,
        waiting: usize,
    },
    /// Grouping: it waits for a group timer (`until` is when it is due, where known).
    Grouped {
        timer: Timer,
        /// The correlated incident, for `backoff` and `update_interval`.
        #[serde(skip_serializing_if = "Option::is_none")]
        incident: Option<u64>,
        /// For `backoff`: new alerts in this update, and how many the backoff asks for.
        #[serde(rename = "newAlerts", skip_serializing_if = "Option::is_none")]
        new_alerts: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        needed: Option<usize>,
    },
    /// A time interval mutes the route: one of its `mute_time_intervals` contains now
    /// (`field: "mute_time_intervals"`, `intervals` those that do), or none of its
    /// `active_time_intervals` does (`field: "active_time_intervals"`, `intervals` all of them).
    TimeInterval { field: String, intervals: Vec<String> },
    /// Delivery to the integration fails: `error` is the last one; `until` is the next attempt, none
    /// when delivery gave up.
    Delivery {
        error: String,
        attempts: u32,
        #[serde(rename = "gaveUp")]
        gave_up: bool,
    },
}

impl Reason {
    /// The reason's kind, as `reason` in the API.
    pub fn kind(&self) -> &'static str {
        match self {
            Reason::Silenced { .. } => "silenced",
            Reason::Inhibited { .. } => "inhibited",
            Reason::Flapping { .. } => "flapping",
            Reason::Storm { .. } => "storm",
            Reason::Grouped { .. } => "grouped",
            Reason::TimeInterval { .. } => "time_interval",
            Reason::Delivery { .. } => "delivery",
        }
    }
}
