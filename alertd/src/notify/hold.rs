//! HoldStage (alertd's own): after dedup has found news, holds the notification when the only news
//! is alerts that are flapping, or — for an update of a correlated incident already notified — fewer
//! new alerts than the incident's backoff asks for (`Correlator::required_burst`). Resolutions and
//! repeats pass. An update of an incident that comes within `update_interval` of its last
//! notification waits for it. A burst is what begins within `burst_window`, or within two of the
//! sender's evaluation intervals when it evaluates slower.
//!
//! A recurring incident (`incident::Recurrence`) is rationed the same way from its first
//! notification: as an update of the earlier occurrence, whose origin's notification history it
//! backs off with. It pages at once when nothing of its origin was notified within `backoff_window`
//! (the earlier page was long ago), or when the earlier notification is older than
//! `repeat_interval`, and always for a critical alert or an alertname the earlier occurrences did
//! not have. Held, its alerts wait in its group for a burst, and the notification that goes out says
//! how many occurrences were held before it.

use super::dedup::split;
use super::{Ctx, NotifyError, Stage};
use crate::alert::Alert;
use crate::nflog::NotificationLog;
use crate::suppressed::{Reason, Timer};
use crate::time::Timestamp;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Updates that have met their incident's backoff and wait out its `update_interval`: when each met
/// it, per group key and recipient. Shared so that a reload's new pipeline keeps them.
pub type Waiting = Arc<Mutex<HashMap<(String, String), Timestamp>>>;

pub struct HoldStage {
    nflog: Arc<dyn NotificationLog>,
    waiting: Waiting,
}

impl HoldStage {
    pub fn new(nflog: Arc<dyn NotificationLog>, waiting: Waiting) -> Self {
        HoldStage { nflog, waiting }
    }
}

impl Stage for HoldStage {
    fn name(&self) -> &'static str {
        "hold"
    }

    fn exec(&self, ctx: &Ctx, alerts: Vec<Alert>) -> Result<Vec<Alert>, NotifyError> {
        if ctx.flap.is_none() && ctx.incident.is_none() {
            return Ok(alerts);
        }
        let (firing, _) = split(ctx, &alerts);
        let entry = self.nflog.get(ctx.group_key, &ctx.recipient);
        if let Some(e) = &entry
            && (e.is_firing_subset(&firing) || e.timestamp + ctx.opts.repeat_interval <= ctx.now)
        {
            // The news is resolutions or the repeat interval, not new firing alerts.
            return Ok(alerts);
        }
        // The last notification this one would update: the group's own, or for a recurrence not yet
        // notified, its origin's latest.
        let previous = entry.as_ref().map(|e| e.timestamp).or_else(|| recurrence_previous(ctx, &alerts));
        let recurrence = ctx.incident.and_then(|(_, i)| i.recurrence.as_ref()).filter(|_| previous.is_some());
        // A burst must have begun within `burst_window` (or two of its sender's evaluations, see
        // `burst_window`) to count for an update. An incident's first
        // notification takes its alerts however long ago they began: they may have waited out a long
        // group_wait, or fired while alertd was down.
        let window = ctx.incident.filter(|_| previous.is_some()).map(|(c, _)| c.cfg.burst_window);
        let before_burst = |a: &Alert| window.is_some_and(|w| a.starts_at < ctx.now - burst_window(w, a));
        // Alerts new since the last notification: `steady` ones lead a burst; `riders` (flapping
        // alerts, and alerts that had been notified and have begun again since) join one.
        let (mut steady, mut riders) = (0, 0);
        for a in &alerts {
            if a.resolved_at(ctx.now) || before_burst(a) {
                continue;
            }
            let fp = a.fingerprint();
            // A recurrence's alert that an earlier occurrence notified has begun again since.
            let notified = match &entry {
                Some(e) => e.firing.contains(&fp),
                None => recurrence.is_some_and(|r| r.notified.contains(&fp)),
            };
            if notified && entry.as_ref().is_some_and(|e| a.starts_at <= e.timestamp) {
                continue;
            }
            if notified || ctx.flap.and_then(|f| f.flapping(fp, ctx.now)).is_some() {
                riders += 1;
            } else {
                steady += 1;
            }
        }
        // Riders never notify on their own, but those that begin together with steady alerts are
        // part of the burst: an alert storm shows as many alerts beginning at once.
        let new = if steady > 0 { steady + riders } else { 0 };
        // The backoff rations updates of an incident. Its first notification needs one new alert:
        // the place has been quiet for the correlation window (an alert that shares its topology
        // with an open incident joins that one), so what begins there now is news.
        let need = match (ctx.incident, previous) {
            (Some((c, i)), Some(_)) => c.required_burst(&i.origin, ctx.now),
            _ => 1,
        };
        let burst = new >= need;
        if let (Some((c, _)), Some(last)) = (ctx.incident, previous)
            && !c.cfg.update_interval.is_zero()
        {
            let wait = c.cfg.update_interval;
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            // A burst met since the last notification stays met until it goes out: it began within
            // `burst_window` of when it was counted, however long it waits.
            waiting.retain(|_, &mut t| ctx.now - t <= 2 * wait);
            let key = (ctx.group_key.to_string(), ctx.recipient.clone());
            let met = waiting.get(&key).copied().filter(|&t| t > last);
            if burst || met.is_some() {
                if ctx.now < last + wait {
                    waiting.insert(key, met.unwrap_or(ctx.now));
                    tracing::debug!(at = %ctx.now, group = ctx.group_key, "Update waits for update_interval");
                    let incident = ctx.incident.map(|(_, i)| i.id);
                    let reason =
                        Reason::Grouped { timer: Timer::UpdateInterval, incident, new_alerts: None, needed: None };
                    hold_news(ctx, entry.as_ref(), &alerts, |_| (reason.clone(), Some(last + wait)));
                    return Ok(Vec::new());
                }
                waiting.remove(&key);
                return Ok(alerts);
            }
        }
        if burst {
            return Ok(alerts);
        }
        tracing::debug!(at = %ctx.now, group = ctx.group_key, new, need, "Notification held");
        let backoff = Reason::Grouped {
            timer: Timer::Backoff,
            incident: ctx.incident.map(|(_, i)| i.id),
            new_alerts: Some(new),
            needed: Some(need),
        };
        hold_news(ctx, entry.as_ref(), &alerts, |a| {
            match ctx.flap.and_then(|f| f.flap_hold(a.fingerprint(), ctx.now)) {
                Some(flapping) => flapping,
                None => (backoff.clone(), None),
            }
        });
        Ok(Vec::new())
    }
}

/// For the first notification of a recurring incident, rationed as an update: the latest
/// notification of its origin. None when it pages at once as any new incident does: it is no
/// recurrence, this is an escalation, one of its alerts is news (critical, or of an alertname the
/// earlier occurrences did not have), nothing of its origin was notified within `backoff_window`,
/// or that notification is older than `repeat_interval`.
fn recurrence_previous(ctx: &Ctx, alerts: &[Alert]) -> Option<Timestamp> {
    let (c, i) = ctx.incident?;
    let r = i.recurrence.as_ref().filter(|_| ctx.escalation.is_none())?;
    if alerts.iter().any(|a| !a.resolved_at(ctx.now) && r.is_news(a)) {
        return None;
    }
    let last = c.sent_times(&i.origin).last().copied()?;
    (ctx.now < last + ctx.opts.repeat_interval && ctx.now - last < c.cfg.backoff_window).then_some(last)
}

/// The longest evaluation interval taken from a sender's `endsAt`: beyond it, an end far ahead is a
/// sender's own choice (a heartbeat, a long expiry), not four evaluation intervals.
const MAX_SENDER_INTERVAL: Duration = Duration::from_secs(450);

/// The window in which `a` must have begun to count toward a burst: `burst_window`, or two of its
/// sender's evaluation intervals when that is longer. Alerts cannot begin closer together than the
/// rule evaluations that start them, so a sender evaluating every 5 minutes shows a burst spread over
/// two evaluations, 5 minutes apart. Prometheus sends a firing alert with its end four times the
/// larger of its evaluation interval and its resend delay (1m) ahead, so that is a quarter of the time
/// from the alert's last receipt to its end (an end alertd set from `resolve_timeout` says nothing of
/// the sender).
fn burst_window(configured: Duration, a: &Alert) -> Duration {
    if a.timeout {
        return configured;
    }
    let interval = ((a.ends_at - a.updated_at) / 4).min(MAX_SENDER_INTERVAL);
    configured.max(2 * interval)
}

/// Records why each alert this notification would have brought news of is held: those not in the
/// last notification as firing, or begun again since.
fn hold_news(
    ctx: &Ctx,
    entry: Option<&crate::nflog::Entry>,
    alerts: &[Alert],
    why: impl Fn(&Alert) -> (Reason, Option<Timestamp>),
) {
    for a in alerts {
        let notified = entry.is_some_and(|e| e.firing.contains(&a.fingerprint()) && a.starts_at <= e.timestamp);
        if !notified {
            let (reason, until) = why(a);
            ctx.hold(a, reason, until, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argus_model::Labels;

    fn alert(received: i64, ends: i64, timeout: bool) -> Alert {
        Alert {
            labels: Labels::from_pairs([("alertname", "X")]),
            annotations: Labels::default(),
            starts_at: Timestamp(0),
            ends_at: Timestamp(ends),
            generator_url: String::new(),
            updated_at: Timestamp(received),
            timeout,
        }
    }

    #[test]
    fn a_burst_spans_two_of_the_senders_evaluations() {
        let w = Duration::from_secs(120);
        let check =
            |received: i64, ends: i64, timeout: bool| burst_window(w, &alert(received, ends, timeout)).as_secs();
        assert_eq!(check(0, 60_000, false), 120, "every 15 s: the configured window");
        assert_eq!(check(0, 240_000, false), 120, "every minute: two evaluations are the configured window");
        assert_eq!(check(600_000, 1_800_000, false), 600, "every 5 minutes: two evaluations");
        assert_eq!(check(0, 3_600_000, false), 900, "an end an hour ahead: capped");
        assert_eq!(check(0, 1_200_000, true), 120, "an end from resolve_timeout says nothing of the sender");
        assert_eq!(check(60_000, 0, false), 120, "resolved: never shorter than configured");
    }
}
