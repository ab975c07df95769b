//! What the running rule groups show of themselves: each group's and rule's last evaluation, health
//! and last error, and the alerting rules' active alerts, as Prometheus' `/api/v1/rules` and
//! `/api/v1/alerts` answer them. A group publishes a [`GroupStatus`] after it takes over its state and
//! after every evaluation; a [`RulesView`] reads the last ones without waiting for an evaluation in
//! progress.

use super::alerting::{ActiveAlert, State};
use crate::time::Timestamp;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A rule's health at its last evaluation (Prometheus' `health`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Not evaluated yet.
    Unknown,
    Ok,
    Err,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Unknown => "unknown",
            Health::Ok => "ok",
            Health::Err => "err",
        }
    }
}

/// One group as last published.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupStatus {
    pub file: String,
    pub name: String,
    pub interval: Duration,
    /// When its last evaluation ran (None: not yet).
    pub last_evaluation: Option<Timestamp>,
    /// How long its last evaluation took.
    pub evaluation_time: Duration,
    pub rules: Vec<RuleStatus>,
}

/// One rule of a group.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleStatus {
    /// The alert name, or the recorded metric name.
    pub name: String,
    /// The PromQL expression as written (a forecast rule's band selector).
    pub query: String,
    /// As written (templates unexpanded).
    pub labels: BTreeMap<String, String>,
    pub health: Health,
    pub last_error: Option<String>,
    pub last_evaluation: Option<Timestamp>,
    pub evaluation_time: Duration,
    /// None for a recording rule.
    pub alerting: Option<AlertingStatus>,
}

/// What an alerting rule adds to [`RuleStatus`].
#[derive(Debug, Clone, PartialEq)]
pub struct AlertingStatus {
    /// `for`.
    pub hold: Duration,
    pub keep_firing_for: Duration,
    /// As written (templates unexpanded).
    pub annotations: BTreeMap<String, String>,
    /// Its pending and firing alerts, sorted by labels (resolved ones are left out, as in Prometheus).
    pub alerts: Vec<ActiveAlert>,
}

impl AlertingStatus {
    /// The rule's state: firing when one alert fires, else pending when one is pending.
    pub fn state(&self) -> State {
        let mut state = State::Inactive;
        for a in &self.alerts {
            match a.state {
                State::Firing => return State::Firing,
                State::Pending => state = State::Pending,
                State::Inactive => {}
            }
        }
        state
    }
}

/// Where one group publishes its status.
pub(super) type Slot = Arc<Mutex<GroupStatus>>;

/// The statuses of the groups a [`Groups`](super::group::Groups) runs, in the order they were
/// given, following every reload. Cheap to clone.
#[derive(Clone, Default)]
pub struct RulesView(Arc<Mutex<Vec<Slot>>>);

impl RulesView {
    /// The last published status of every running group.
    pub fn groups(&self) -> Vec<GroupStatus> {
        let slots = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        slots.iter().map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).clone()).collect()
    }

    /// Replaces the groups shown: a group no longer running publishes into a slot nobody reads.
    pub(super) fn replace(&self, slots: Vec<Slot>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = slots;
    }
}

pub(super) fn publish(slot: &Slot, status: GroupStatus) {
    *slot.lock().unwrap_or_else(|e| e.into_inner()) = status;
}
