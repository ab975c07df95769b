//! SendStage builds the webhook message and hands it to the notifier (Alertmanager's RetryStage:
//! a retryable failure fails the flush, so the next one tries again; a permanent one is logged and
//! not tried again), with a recurring incident's annotations (`Recurrence::annotations`);
//! SetNotifiesStage records what was notified in the notification log.

use super::dedup::split;
use super::{Ctx, Notification, Notifier, NotifyError, Stage};
use crate::alert::Alert;
use crate::nflog::{Entry, NotificationLog};
use crate::webhook::{self, Extras, IncidentInfo};
use std::sync::Arc;

pub struct SendStage {
    pub notifier: Arc<dyn Notifier>,
    /// Read for the previous notification's time (see `Notification::previous`).
    pub nflog: Arc<dyn NotificationLog>,
}

impl Stage for SendStage {
    fn name(&self) -> &'static str {
        "send"
    }

    fn exec(&self, ctx: &Ctx, alerts: Vec<Alert>) -> Result<Vec<Alert>, NotifyError> {
        // As Alertmanager: without send_resolved, resolved alerts are left out, and a message that
        // would be empty is not sent (the log is still written, so the receiver is not told again).
        let mut sent: Vec<Alert> = if ctx.integration.send_resolved {
            alerts.clone()
        } else {
            alerts.iter().filter(|a| !a.resolved_at(ctx.now)).cloned().collect()
        };
        if sent.is_empty() {
            return Ok(alerts);
        }
        // A recurring incident says so on every alert, and so in the common annotations that
        // receivers show: which occurrence, of what, since when, and how many were held back.
        if let Some(r) = ctx.incident.and_then(|(_, i)| i.recurrence.as_ref()) {
            let notes = r.annotations();
            for a in &mut sent {
                for (name, value) in &notes {
                    a.annotations.set(name, value);
                }
            }
        }
        let mut extras = Extras::default();
        if let Some((c, inc)) = ctx.incident
            && let Some((cause, a)) = c.probable_cause(&sent, ctx.now)
        {
            extras.incident = Some(IncidentInfo {
                id: inc.id,
                probable_cause: crate::incident::cause_text(cause, a),
                cause_alert: a.fingerprint().to_string(),
                alerts: inc.size(),
                opened_at: inc.opened_at,
            });
        }
        if let Some(f) = ctx.flap {
            for a in &sent {
                if let Some(n) = f.flapping(a.fingerprint(), ctx.now) {
                    extras.flapping.insert(a.fingerprint().to_string(), n);
                }
            }
        }
        extras.escalation = ctx.escalation.map(|d| webhook::Escalation { unacknowledged_seconds: d.as_secs() });
        let has_extras = extras.incident.is_some() || !extras.flapping.is_empty() || extras.escalation.is_some();
        let message = webhook::message(webhook::Input {
            receiver: &ctx.receiver.name,
            group_key: ctx.group_key,
            group_labels: ctx.group_labels,
            external_url: ctx.external_url,
            alerts: &sent,
            max_alerts: ctx.integration.max_alerts,
            now: ctx.now,
            extras: has_extras.then_some(extras),
        });
        let entry = self.nflog.get(ctx.group_key, &ctx.recipient);
        let previous = entry.as_ref().map(|e| e.timestamp);
        tracing::debug!(
            at = %ctx.now,
            group = ctx.group_key,
            recipient = %ctx.recipient,
            alerts = sent.len(),
            previous_firing = entry.as_ref().map(|e| e.firing.len()),
            previous_at = ?previous,
            "Notifying"
        );
        let notified = self.notifier.notify(Notification {
            at: ctx.now,
            previous,
            receiver: ctx.receiver.name.clone(),
            integration: ctx.recipient.clone(),
            message,
        });
        match notified {
            Ok(()) => {}
            // Sending the same alerts again would fail the same way. The alerts go on to the
            // notification log as if sent, so the next flush sends only what changed (or the
            // repeat), and the flush succeeds: a failed flush would keep the group's resolved
            // alerts and fail again every group_interval.
            Err(error) if !error.is_retryable() => {
                tracing::error!(receiver = %ctx.receiver.name, recipient = %ctx.recipient, group = ctx.group_key, %error, "Notification failed, giving up");
                return Ok(alerts);
            }
            Err(error) => return Err(error),
        }
        ctx.sent.set(true);
        if let Some((c, inc)) = ctx.incident {
            c.record_notified(inc.id, sent.iter().filter(|a| !a.resolved_at(ctx.now)).map(Alert::fingerprint));
        }
        Ok(alerts)
    }
}

pub struct SetNotifiesStage {
    pub nflog: Arc<dyn NotificationLog>,
}

impl Stage for SetNotifiesStage {
    fn name(&self) -> &'static str {
        "set_notifies"
    }

    fn exec(&self, ctx: &Ctx, alerts: Vec<Alert>) -> Result<Vec<Alert>, NotifyError> {
        let (firing, resolved) = split(ctx, &alerts);
        self.nflog.log(ctx.group_key, &ctx.recipient, Entry { firing, resolved, timestamp: ctx.now });
        Ok(alerts)
    }
}
