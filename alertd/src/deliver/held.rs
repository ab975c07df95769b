//! What delivery holds back, recorded in the outbox's held-back ledger: the firing alerts of
//! notifications that storm control keeps waiting, or whose receiver fails. A delivered
//! notification releases its alerts on that integration.

use super::{DeliverError, limit::Window};
use crate::alert::{Fingerprint, Status};
use crate::outbox::{Entry, Outbox};
use crate::suppressed::{HeldRoute, Hold, Reason, Source};
use crate::time::Timestamp;
use crate::webhook::Message;
use argus_model::Labels;
use std::time::Duration;

/// The firing alerts of an entry's message, with its group key. An entry whose message cannot be
/// read holds nothing that can be named.
fn firing(e: &Entry) -> Vec<(Fingerprint, Labels, String)> {
    let Ok(m) = serde_json::from_str::<Message>(&e.message) else { return Vec::new() };
    m.alerts
        .into_iter()
        .filter(|a| a.status == Status::Firing)
        .filter_map(|a| {
            let fp = u64::from_str_radix(&a.fingerprint, 16).ok()?;
            Some((Fingerprint(fp), Labels::from_pairs(a.labels), m.group_key.clone()))
        })
        .collect()
}

fn hold(outbox: &Outbox, integration: &str, e: &Entry, reason: &Reason, until: Option<Timestamp>, now: i64) {
    for (fp, labels, group_key) in firing(e) {
        let route = HeldRoute {
            receiver: e.receiver.clone(),
            route: String::new(),
            group_key,
            integration: integration.to_string(),
            group: String::new(),
        };
        let h = Hold { fingerprint: fp, labels, route, reason: reason.clone(), until };
        outbox.suppressed().hold(Source::Delivery, h, Timestamp(now));
    }
}

/// `waiting` (oldest first) wait `wait` for the rate limit `limit` of `integration`.
pub(super) fn storm(outbox: &Outbox, integration: &str, waiting: &[Entry], limit: &Window, wait: Duration, now: i64) {
    let reason = Reason::Storm {
        max_messages: u32::try_from(limit.max()).unwrap_or(u32::MAX),
        per_seconds: limit.per().as_secs_f64(),
        waiting: waiting.len(),
    };
    let until = Timestamp(now) + wait;
    for e in waiting {
        hold(outbox, integration, e, &reason, Some(until), now);
    }
}

/// `batch` failed on `integration` at attempt `attempt`; `next` is the next attempt, None when
/// delivery gave up. No longer held by storm control: it was sent.
pub(super) fn failing(
    outbox: &Outbox,
    integration: &str,
    batch: &[Entry],
    error: &DeliverError,
    attempts: u32,
    next: Option<i64>,
    now: i64,
) {
    let reason = Reason::Delivery { error: error.to_string(), attempts, gave_up: next.is_none() };
    for e in batch {
        release(outbox, integration, e, now, |r| matches!(r, Reason::Storm { .. }));
        hold(outbox, integration, e, &reason, next.map(Timestamp), now);
    }
}

/// `batch` was delivered on `integration`: its alerts are no longer held there.
pub(super) fn released(outbox: &Outbox, integration: &str, batch: &[Entry], now: i64) {
    for e in batch {
        release(outbox, integration, e, now, |_| true);
    }
}

fn release(outbox: &Outbox, integration: &str, e: &Entry, now: i64, which: impl Fn(&Reason) -> bool) {
    for (fp, _, _) in firing(e) {
        outbox
            .suppressed()
            .release(fp, Source::Delivery, Timestamp(now), |r| r.route.integration == integration && which(&r.reason));
    }
}
