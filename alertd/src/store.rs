//! Every alert alertd knows, by fingerprint (Alertmanager's `provider/mem`): updates merge into the
//! alert they continue; an alert that starts again after it ended replaces it.

use crate::alert::{Alert, Fingerprint, Status};
use crate::time::Timestamp;
use std::collections::HashMap;
use std::time::Duration;

#[derive(Debug, Default)]
pub struct AlertStore {
    alerts: HashMap<Fingerprint, Alert>,
}

/// What a put changed: the stored alert, and the status changes it made (with their times).
pub struct Put {
    pub alert: Alert,
    pub changes: Vec<(Timestamp, Status)>,
}

impl AlertStore {
    /// Stores an update received at `now`. As Alertmanager: an update merges with the stored alert
    /// when their active ranges overlap, else replaces it.
    pub fn put(&mut self, alert: Alert, now: Timestamp) -> Put {
        let fp = alert.fingerprint();
        let old = self.alerts.get(&fp);
        let merged = match old {
            Some(old)
                if (alert.ends_at > old.starts_at && alert.ends_at < old.ends_at)
                    || (alert.starts_at > old.starts_at && alert.starts_at < old.ends_at) =>
            {
                old.merge(&alert)
            }
            _ => alert,
        };
        let mut changes = Vec::new();
        let before = old.map(|o| (o.status(now), o.ends_at));
        let after = merged.status(now);
        match before {
            None if after == Status::Firing => changes.push((now, Status::Firing)),
            Some((Status::Firing, _)) if after == Status::Resolved => changes.push((now, Status::Resolved)),
            Some((Status::Resolved, ended)) if after == Status::Firing => {
                // It had resolved (possibly by timeout, unobserved) and fires again.
                if let Some(o) = old
                    && o.status(o.updated_at) == Status::Firing
                {
                    changes.push((ended.min(now), Status::Resolved));
                }
                changes.push((now, Status::Firing));
            }
            _ => {}
        }
        self.alerts.insert(fp, merged.clone());
        Put { alert: merged, changes }
    }

    pub fn get(&self, fp: Fingerprint) -> Option<&Alert> {
        self.alerts.get(&fp)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Alert> {
        self.alerts.values()
    }

    pub fn len(&self) -> usize {
        self.alerts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.alerts.is_empty()
    }

    /// Forgets alerts resolved more than `keep` ago.
    pub fn gc(&mut self, now: Timestamp, keep: Duration) {
        self.alerts.retain(|_, a| !a.resolved_at(now - keep));
    }
}
