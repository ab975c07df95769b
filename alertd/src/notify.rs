//! The notification pipeline: a chain of `Stage`s each group flush runs through, per receiver
//! integration, in Alertmanager's order — inhibit, time active, time mute, silence, dedup — then
//! alertd's hold (flapping, incident backoff), send, and the notification log.

mod dedup;
mod hold;
mod mute;
mod send;

pub use dedup::DedupStage;
pub use hold::{HoldStage, Waiting};
pub use mute::{MuteStage, TimeActiveStage, TimeMuteStage};
pub use send::{SendStage, SetNotifiesStage};

use crate::alert::Alert;
use crate::deliver::DeliverError;
use crate::flap::FlapDetector;
use crate::incident::{Correlator, Incident};
use crate::receiver::{Integration, Receiver};
use crate::route::RouteOpts;
use crate::suppressed::{HeldRoute, Hold, Reason};
use crate::time::Timestamp;
use crate::timeinterval::TimeInterval;
use crate::webhook::Message;
use argus_model::Labels;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Everything a stage may read about one flush for one receiver integration. Read-only, except
/// `sent`, which the send stage sets.
pub struct Ctx<'a> {
    pub now: Timestamp,
    pub receiver: &'a Receiver,
    pub integration: Integration,
    /// The notification log's name for this integration, e.g. `team/webhook/0`.
    pub recipient: String,
    pub group_key: &'a str,
    pub group_labels: &'a Labels,
    pub opts: &'a RouteOpts,
    pub time_intervals: &'a BTreeMap<String, Vec<TimeInterval>>,
    pub external_url: &'a str,
    pub flap: Option<&'a FlapDetector>,
    pub incident: Option<(&'a Correlator, &'a Incident)>,
    /// Set when this is an escalation: how long the incident went unacknowledged.
    pub escalation: Option<std::time::Duration>,
    pub sent: Cell<bool>,
    /// The dispatcher's id of the group, and its route's path, for held-back records.
    pub group_id: &'a str,
    pub route: &'a str,
    /// The alerts the stages held back in this run, and why; the engine records them.
    pub holds: RefCell<Vec<Hold>>,
}

impl Ctx<'_> {
    /// Notes that a stage holds back `alert` for `reason` until `until` (where known): on the whole
    /// route, or only on this integration (`per_integration`). Only firing alerts are held back: a
    /// resolution that is not sent pages no one.
    pub fn hold(&self, alert: &Alert, reason: Reason, until: Option<Timestamp>, per_integration: bool) {
        if alert.resolved_at(self.now) {
            return;
        }
        let route = HeldRoute {
            receiver: self.receiver.name.clone(),
            route: self.route.to_string(),
            group_key: self.group_key.to_string(),
            integration: if per_integration { self.recipient.clone() } else { String::new() },
            group: self.group_id.to_string(),
        };
        let h = Hold { fingerprint: alert.fingerprint(), labels: alert.labels.clone(), route, reason, until };
        self.holds.borrow_mut().push(h);
    }
}

/// Why a notification was not handed on. A retryable one fails the flush, which keeps the group's
/// alerts and writes no notification log entry, so the next flush sends it again; a permanent one
/// ends that notification (see `SendStage`).
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// The integration could not take the notification; `error` says whether trying again helps:
    /// a 4xx, a body that cannot be rendered or an integration no longer configured never will.
    #[error("receiver {receiver}: {error}")]
    Integration {
        receiver: String,
        #[source]
        error: DeliverError,
    },
    /// The delivery side stopped taking notifications (alertd is shutting down).
    #[error("receiver {receiver}: delivery channel closed")]
    ChannelClosed { receiver: String },
}

impl NotifyError {
    /// The error of `receiver`'s integration failing with `error`.
    pub fn integration(receiver: &str, error: impl Into<DeliverError>) -> NotifyError {
        NotifyError::Integration { receiver: receiver.to_string(), error: error.into() }
    }

    /// Whether trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            NotifyError::Integration { error, .. } => error.is_retryable(),
            NotifyError::ChannelClosed { .. } => true,
        }
    }
}

/// One step of the pipeline. Returns the alerts to pass on; none ends this run.
pub trait Stage: Send + Sync {
    fn name(&self) -> &'static str;
    fn exec(&self, ctx: &Ctx, alerts: Vec<Alert>) -> Result<Vec<Alert>, NotifyError>;
}

/// A stage chain.
pub struct Pipeline {
    pub stages: Vec<Box<dyn Stage>>,
}

impl Pipeline {
    /// Runs the stages in order until one passes nothing on. True when a notification was sent.
    pub fn exec(&self, ctx: &Ctx, mut alerts: Vec<Alert>) -> Result<bool, NotifyError> {
        for s in &self.stages {
            alerts = s.exec(ctx, alerts)?;
            if alerts.is_empty() {
                tracing::trace!(stage = s.name(), group = ctx.group_key, "Pipeline stopped");
                break;
            }
        }
        Ok(ctx.sent.get())
    }
}

/// One notification as sent to one integration.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub at: Timestamp,
    /// When the notification log last recorded a notification of this group on this integration
    /// (none the first time). Part of the idempotency key in place of `at`: a flush repeated after a
    /// crash that came before the log was written has a new `at` but the same `previous`.
    pub previous: Option<Timestamp>,
    pub receiver: String,
    /// The integration it is for, by its notification-log name, e.g. `team/webhook/0`.
    pub integration: String,
    pub message: Message,
}

/// Where the send stage hands notifications: an HTTP client, a channel, or a recorder.
pub trait Notifier: Send + Sync {
    fn notify(&self, n: Notification) -> Result<(), NotifyError>;

    /// The held-back ledger that the notifier's delivery records into, which the engine then
    /// records into as well; None for a notifier that holds nothing back.
    fn suppressed(&self) -> Option<std::sync::Arc<crate::suppressed::Suppressed>> {
        None
    }

    /// Housekeeping, from the engine's: forgets what the notifier keeps of notifications finished
    /// `retention` or more before `now`.
    fn gc(&self, _now: crate::time::Timestamp, _retention: std::time::Duration) {}

    /// Housekeeping of a notifier that keeps history: forgets history older than `retention`.
    fn gc_history(&self, _now: crate::time::Timestamp, _retention: std::time::Duration) {}
}

/// Keeps every notification, for replay and tests.
#[derive(Default)]
pub struct Recorder {
    sent: Mutex<Vec<Notification>>,
}

impl Recorder {
    /// Takes the notifications recorded so far.
    pub fn take(&self) -> Vec<Notification> {
        std::mem::take(&mut *self.sent.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Notifier for Recorder {
    fn notify(&self, n: Notification) -> Result<(), NotifyError> {
        self.sent.lock().unwrap_or_else(|e| e.into_inner()).push(n);
        Ok(())
    }
}

/// Hands notifications to a channel (the runner's delivery side, and timeline tests).
pub struct ChannelNotifier(pub tokio::sync::mpsc::UnboundedSender<Notification>);

impl Notifier for ChannelNotifier {
    fn notify(&self, n: Notification) -> Result<(), NotifyError> {
        let receiver = n.receiver.clone();
        self.0.send(n).map_err(|_| NotifyError::ChannelClosed { receiver })
    }
}

#[cfg(test)]
mod tests;
