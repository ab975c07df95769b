//! DedupStage: Alertmanager's `needsUpdate` against the notification log, unchanged.

use super::{Ctx, NotifyError, Stage};
use crate::alert::{Alert, Fingerprint};
use crate::nflog::{Entry, NotificationLog};
use crate::suppressed::{Reason, Timer};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

pub struct DedupStage {
    pub nflog: Arc<dyn NotificationLog>,
}

/// The firing and resolved fingerprints of `alerts` at `ctx.now`.
pub fn split(ctx: &Ctx, alerts: &[Alert]) -> (BTreeSet<Fingerprint>, BTreeSet<Fingerprint>) {
    let (mut firing, mut resolved) = (BTreeSet::new(), BTreeSet::new());
    for a in alerts {
        if a.resolved_at(ctx.now) {
            resolved.insert(a.fingerprint())
        } else {
            firing.insert(a.fingerprint())
        };
    }
    (firing, resolved)
}

/// Alertmanager's `DedupStage.needsUpdate`.
pub fn needs_update(
    entry: Option<&Entry>,
    firing: &BTreeSet<Fingerprint>,
    resolved: &BTreeSet<Fingerprint>,
    send_resolved: bool,
    repeat: Duration,
    now: crate::time::Timestamp,
) -> bool {
    let Some(entry) = entry else {
        // Never notified: notify unless everything is already resolved.
        return !firing.is_empty();
    };
    if !entry.is_firing_subset(firing) {
        return true;
    }
    if firing.is_empty() {
        // All resolved: notify (to clear the receiver) only if it was told something was firing.
        return !entry.firing.is_empty();
    }
    if send_resolved && !entry.is_resolved_subset(resolved) {
        return true;
    }
    // Nothing changed: only when the repeat interval has passed.
    entry.timestamp < now - repeat
}

impl Stage for DedupStage {
    fn name(&self) -> &'static str {
        "dedup"
    }

    fn exec(&self, ctx: &Ctx, alerts: Vec<Alert>) -> Result<Vec<Alert>, NotifyError> {
        let (firing, resolved) = split(ctx, &alerts);
        let entry = self.nflog.get(ctx.group_key, &ctx.recipient);
        let send_resolved = ctx.integration.send_resolved;
        let update = needs_update(entry.as_ref(), &firing, &resolved, send_resolved, ctx.opts.repeat_interval, ctx.now);
        if update {
            return Ok(alerts);
        }
        // Nothing new: every firing alert was notified, and is sent again after the repeat interval.
        if let Some(e) = &entry {
            let due = e.timestamp + ctx.opts.repeat_interval;
            for a in &alerts {
                let reason =
                    Reason::Grouped { timer: Timer::RepeatInterval, incident: None, new_alerts: None, needed: None };
                ctx.hold(a, reason, Some(due), true);
            }
        }
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Timestamp;
    use expect_test::expect;

    #[test]
    fn needs_update_table() {
        let set = |v: &[u64]| v.iter().map(|&x| Fingerprint(x)).collect::<BTreeSet<_>>();
        let entry =
            |f: &[u64], r: &[u64], ts: i64| Entry { firing: set(f), resolved: set(r), timestamp: Timestamp(ts) };
        let h = Duration::from_secs(3600);
        let now = Timestamp(10 * 3_600_000);
        let rows = [
            ("never notified, firing", None, set(&[1]), set(&[]), false),
            ("never notified, all resolved", None, set(&[]), set(&[1]), false),
            ("new firing alert", Some(entry(&[1], &[], now.0)), set(&[1, 2]), set(&[]), false),
            ("same firing, recent", Some(entry(&[1, 2], &[], now.0)), set(&[1]), set(&[]), false),
            ("all resolved after firing", Some(entry(&[1], &[], now.0)), set(&[]), set(&[1]), false),
            ("all resolved, nothing was firing", Some(entry(&[], &[1], now.0)), set(&[]), set(&[1]), false),
            ("newly resolved, send_resolved", Some(entry(&[1, 2], &[], now.0)), set(&[1]), set(&[2]), true),
            ("newly resolved, not send_resolved", Some(entry(&[1, 2], &[], now.0)), set(&[1]), set(&[2]), false),
            ("repeat interval passed", Some(entry(&[1], &[], now.0 - 3_600_001)), set(&[1]), set(&[]), false),
        ];
        let got: Vec<String> = rows
            .iter()
            .map(|(name, e, f, r, sr)| format!("{name}: {}", needs_update(e.as_ref(), f, r, *sr, h, now)))
            .collect();
        expect![[r#"
            never notified, firing: true
            never notified, all resolved: false
            new firing alert: true
            same firing, recent: false
            all resolved after firing: true
            all resolved, nothing was firing: false
            newly resolved, send_resolved: true
            newly resolved, not send_resolved: false
            repeat interval passed: true"#]]
        .assert_eq(&got.join("\n"));
    }
}
