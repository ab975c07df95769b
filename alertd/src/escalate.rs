//! Escalation (alertd's own): an incident with a firing alert that matches an escalation rule, and
//! that nobody has acknowledged `after` its first notification, is notified to the rule's receiver
//! as well — once per rule. An acknowledgement (`POST /api/v1/incidents/{id}/ack`) stops every
//! escalation of the incident still due.
//!
//! Pure bookkeeping over explicit times, like the rest of the engine: the engine asks `next_due`
//! for its timer and calls `take_due` when the time comes.

use crate::time::Timestamp;
use argus_model::{Labels, Matcher};
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct EscalationRule {
    /// An incident escalates under this rule when one of its firing alerts matches all of these.
    pub matchers: Vec<Matcher>,
    /// Time from the incident's first notification without an acknowledgement.
    pub after: Duration,
    pub receiver: String,
}

impl EscalationRule {
    pub fn matches(&self, labels: &Labels) -> bool {
        self.matchers.iter().all(|m| m.matches(labels.get(&m.name).unwrap_or("")))
    }
}

/// An incident notified at least once.
#[derive(Debug, Clone)]
struct Tracked {
    /// Its route group and aggregation group.
    route_group: String,
    group_key: String,
    /// When the correlator opened it: with its id, what names it in the history database.
    opened_at: Timestamp,
    /// Its first notification.
    notified_at: Timestamp,
    acked: bool,
    /// Per rule: escalated (or found not to apply) already.
    done: Vec<bool>,
}

/// One escalation due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    pub at: Timestamp,
    pub incident: u64,
    pub rule: usize,
    pub route_group: String,
    pub group_key: String,
}

#[derive(Debug, Default)]
pub struct Escalator {
    rules: Vec<EscalationRule>,
    /// By engine incident id.
    tracked: BTreeMap<u64, Tracked>,
    /// Added to every due time: in a cluster, this replica's position wait, so that the replicas
    /// before it escalate first and it escalates only what none of them did.
    delay: Duration,
}

/// What a replica or a restart needs of a tracked incident (see `crate::memory`).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub group_key: String,
    pub notified_at: Timestamp,
    pub acked: bool,
    /// Rules escalated (or found not to apply) already, by index.
    pub done: Vec<usize>,
}

impl Escalator {
    pub fn new(rules: Vec<EscalationRule>) -> Escalator {
        Escalator { rules, tracked: BTreeMap::new(), delay: Duration::ZERO }
    }

    /// Sets the delay added to every due time.
    pub fn set_delay(&mut self, delay: Duration) {
        self.delay = delay;
    }

    /// Incident `id`'s progress, when tracked.
    pub fn progress(&self, id: u64) -> Option<Progress> {
        let t = self.tracked.get(&id)?;
        let done = t.done.iter().enumerate().filter(|(_, d)| **d).map(|(i, _)| i).collect();
        Some(Progress { group_key: t.group_key.clone(), notified_at: t.notified_at, acked: t.acked, done })
    }

    /// Merges progress that a peer or an earlier process recorded for incident `id`: the earlier
    /// first notification, an acknowledgement, rules done. True when anything changed.
    pub fn merge(&mut self, id: u64, route_group: &str, opened_at: Timestamp, p: &Progress) -> bool {
        if self.rules.is_empty() {
            return false;
        }
        let n = self.rules.len();
        let mut created = false;
        let t = self.tracked.entry(id).or_insert_with(|| {
            created = true;
            Tracked {
                route_group: route_group.to_string(),
                group_key: p.group_key.clone(),
                opened_at,
                notified_at: p.notified_at,
                acked: false,
                done: vec![false; n],
            }
        });
        let before = (t.notified_at, t.acked, t.done.clone());
        t.notified_at = t.notified_at.min(p.notified_at);
        t.acked |= p.acked;
        for &i in p.done.iter().filter(|&&i| i < n) {
            t.done[i] = true;
        }
        created || before != (t.notified_at, t.acked, t.done.clone())
    }

    pub fn rule(&self, i: usize) -> &EscalationRule {
        &self.rules[i]
    }

    /// Records a notification of incident `id` at `at`; the first one starts its escalation clock.
    pub fn notified(&mut self, id: u64, route_group: &str, group_key: &str, opened_at: Timestamp, at: Timestamp) {
        if self.rules.is_empty() {
            return;
        }
        let n = self.rules.len();
        self.tracked.entry(id).or_insert_with(|| Tracked {
            route_group: route_group.to_string(),
            group_key: group_key.to_string(),
            opened_at,
            notified_at: at,
            acked: false,
            done: vec![false; n],
        });
    }

    /// Acknowledges incident `id` opened at `opened_at` (both as the history database has them, so an
    /// id reused after a restart is not mistaken for another incident); `None` for any opening time:
    /// in a cluster, where each replica opened an incident that has one number everywhere at its own
    /// time. False when it is not tracked.
    pub fn acknowledge(&mut self, id: u64, opened_at: Option<Timestamp>) -> bool {
        match self.tracked.get_mut(&id) {
            Some(t) if opened_at.is_none_or(|o| t.opened_at == o) => {
                t.acked = true;
                true
            }
            _ => false,
        }
    }

    pub fn acknowledged(&self, id: u64) -> bool {
        self.tracked.get(&id).is_some_and(|t| t.acked)
    }

    fn dues(&self) -> impl Iterator<Item = Due> + '_ {
        self.tracked.iter().filter(|(_, t)| !t.acked).flat_map(move |(&id, t)| {
            t.done.iter().enumerate().filter(|(_, d)| !**d).map(move |(i, _)| Due {
                at: t.notified_at + self.rules[i].after + self.delay,
                incident: id,
                rule: i,
                route_group: t.route_group.clone(),
                group_key: t.group_key.clone(),
            })
        })
    }

    /// The earliest escalation still to run.
    pub fn next_due(&self) -> Option<Timestamp> {
        self.dues().map(|d| d.at).min()
    }

    /// The earliest escalation due at or before `now`, marked done.
    pub fn take_due(&mut self, now: Timestamp) -> Option<Due> {
        let due = self.dues().filter(|d| d.at <= now).min_by_key(|d| (d.at, d.incident, d.rule))?;
        if let Some(t) = self.tracked.get_mut(&due.incident) {
            t.done[due.rule] = true;
        }
        Some(due)
    }

    /// Forgets incidents for which `open` says no (closed by the correlator).
    pub fn gc(&mut self, mut open: impl FnMut(&str, u64) -> bool) {
        self.tracked.retain(|&id, t| open(&t.route_group, id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(after: u64, receiver: &str) -> EscalationRule {
        EscalationRule {
            matchers: vec![Matcher::eq("severity", "critical")],
            after: Duration::from_secs(after),
            receiver: receiver.into(),
        }
    }

    #[test]
    fn due_in_order_once_each_and_ack_stops_the_rest() {
        let mut e = Escalator::new(vec![rule(600, "lead"), rule(1800, "manager")]);
        assert_eq!(e.next_due(), None);
        e.notified(1, "g", "k1", Timestamp(0), Timestamp(30_000));
        e.notified(1, "g", "k1", Timestamp(0), Timestamp(90_000));
        e.notified(2, "g", "k2", Timestamp(5), Timestamp(60_000));
        assert_eq!(e.next_due(), Some(Timestamp(630_000)), "the first notification starts the clock");
        assert_eq!(e.take_due(Timestamp(600_000)), None);
        let d = e.take_due(Timestamp(700_000)).unwrap();
        assert_eq!((d.incident, d.rule, d.at), (1, 0, Timestamp(630_000)));
        let d = e.take_due(Timestamp(700_000)).unwrap();
        assert_eq!((d.incident, d.rule), (2, 0));
        assert_eq!(e.take_due(Timestamp(700_000)), None);
        assert!(!e.acknowledge(2, Some(Timestamp(6))), "another incident with a reused id");
        assert!(e.acknowledge(2, Some(Timestamp(5))));
        assert_eq!(e.next_due(), Some(Timestamp(1_830_000)));
        assert_eq!(e.take_due(Timestamp(9_000_000)).map(|d| (d.incident, d.rule)), Some((1, 1)));
        assert_eq!(e.next_due(), None);
        e.gc(|_, id| id != 1);
        assert!(e.acknowledged(2));
        assert!(!e.acknowledged(1));
    }

    #[test]
    fn no_rules_tracks_nothing() {
        let mut e = Escalator::new(Vec::new());
        e.notified(1, "g", "k", Timestamp(0), Timestamp(0));
        assert_eq!(e.next_due(), None);
        assert!(!e.acknowledge(1, Some(Timestamp(0))));
    }
}
