//! Aggregation groups and their timers (Alertmanager's dispatcher): alerts are put into the group of
//! each route they match; a group flushes `group_wait` after it is made (at once when its alert began
//! longer ago than that), then every `group_interval` while it holds alerts.

use crate::alert::{Alert, Fingerprint};
use crate::route::{Route, RouteOpts};
use crate::time::Timestamp;
use argus_model::Labels;
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Debug, Clone)]
pub struct AggrGroup {
    /// `route id:group labels`, plus `:incident=N` when correlation split the group: the group's
    /// identity in the dispatcher, one per route even when sibling routes have the same matchers.
    pub id: String,
    /// `route key:group labels`, plus `:incident=N`: the group key notifications carry (`groupKey`),
    /// and the notification log's key beside the recipient, as in Alertmanager.
    pub key: String,
    /// `route id:group labels`: the route group the incident belongs to.
    pub route_group: String,
    /// The route's path in the routing tree (its key), e.g. `{}/{severity="page"}`.
    pub route: String,
    pub opts: RouteOpts,
    pub labels: Labels,
    pub incident: Option<u64>,
    pub alerts: BTreeMap<Fingerprint, Alert>,
    pub next_flush: Timestamp,
    pub has_flushed: bool,
}

impl AggrGroup {
    /// The group's alerts in Alertmanager's order: by `job`, then `instance`, then all labels.
    pub fn sorted_alerts(&self) -> Vec<Alert> {
        let mut v: Vec<Alert> = self.alerts.values().cloned().collect();
        v.sort_by(|a, b| {
            let key = |x: &Alert| (x.labels.get("job").map(str::to_owned), x.labels.get("instance").map(str::to_owned));
            key(a).cmp(&key(b)).then_with(|| a.labels.cmp(&b.labels))
        });
        v
    }
}

#[derive(Debug, Default)]
pub struct Dispatcher {
    groups: HashMap<String, AggrGroup>,
    timers: BTreeSet<(Timestamp, String)>,
}

/// The route group an alert falls in on a route: `route id:group labels`.
pub fn route_group(route: &Route, group_labels: &Labels) -> String {
    format!("{}:{}", route.id, group_labels)
}

impl Dispatcher {
    /// Puts an alert (already merged in the store) into its group on `route`, making the group when
    /// needed. Returns the group, and whether the alert is news to it: firing, where the group held
    /// no firing alert of that fingerprint before.
    pub fn insert(
        &mut self,
        route: &Route,
        group_labels: Labels,
        incident: Option<u64>,
        alert: Alert,
        now: Timestamp,
    ) -> (&AggrGroup, bool) {
        let route_group = route_group(route, &group_labels);
        let suffix = incident.map(|n| format!(":incident={n}")).unwrap_or_default();
        let id = format!("{route_group}{suffix}");
        let g = self.groups.entry(id.clone()).or_insert_with(|| {
            let next = now + route.opts.group_wait;
            self.timers.insert((next, id.clone()));
            AggrGroup {
                id: id.clone(),
                key: format!("{}:{}{suffix}", route.key, group_labels),
                route_group,
                route: route.key.clone(),
                opts: route.opts.clone(),
                labels: group_labels,
                incident,
                alerts: BTreeMap::new(),
                next_flush: next,
                has_flushed: false,
            }
        });
        // Alertmanager flushes at once when the alert began longer than group_wait ago.
        if !g.has_flushed && alert.starts_at + g.opts.group_wait < now && g.next_flush > now {
            self.timers.remove(&(g.next_flush, id.clone()));
            g.next_flush = now;
            self.timers.insert((now, id));
        }
        let fp = alert.fingerprint();
        let news = !alert.resolved_at(now) && g.alerts.get(&fp).is_none_or(|a| a.resolved_at(now));
        g.alerts.insert(fp, alert);
        (g, news)
    }

    pub fn next_deadline(&self) -> Option<Timestamp> {
        self.timers.first().map(|(t, _)| *t)
    }

    /// The group due first, if due at or before `now`, taken off the timer list.
    pub fn pop_due(&mut self, now: Timestamp) -> Option<(Timestamp, String)> {
        match self.timers.first() {
            Some((t, _)) if *t <= now => self.timers.pop_first(),
            _ => None,
        }
    }

    /// The group with dispatcher id `id`.
    pub fn group(&self, id: &str) -> Option<&AggrGroup> {
        self.groups.get(id)
    }

    /// After a flush at `at`: when it succeeded, drops the alerts that were resolved (Alertmanager's
    /// `DeleteIfNotModified`); then removes an empty group or schedules its next flush.
    pub fn after_flush(&mut self, id: &str, at: Timestamp, ok: bool) {
        let Some(g) = self.groups.get_mut(id) else { return };
        g.has_flushed = true;
        if ok {
            g.alerts.retain(|_, a| !a.resolved_at(at));
        }
        if g.alerts.is_empty() {
            self.groups.remove(id);
            return;
        }
        g.next_flush = at + g.opts.group_interval;
        self.timers.insert((g.next_flush, id.to_string()));
    }

    pub fn groups(&self) -> impl Iterator<Item = &AggrGroup> {
        self.groups.values()
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}
