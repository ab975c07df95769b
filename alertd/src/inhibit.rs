//! Inhibition: a firing source alert mutes target alerts whose `equal` labels have the same values.

use crate::alert::{Alert, Fingerprint};
use crate::mute::Muter;
use crate::suppressed::{InhibitedBy, InhibitingAlert, Reason};
use crate::time::Timestamp;
use argus_model::{Labels, Matcher};
use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, Clone)]
pub struct InhibitRule {
    pub source: Vec<Matcher>,
    pub target: Vec<Matcher>,
    pub equal: Vec<String>,
}

fn all_match(ms: &[Matcher], labels: &Labels) -> bool {
    ms.iter().all(|m| m.matches(labels.get(&m.name).unwrap_or("")))
}

/// The inhibitor keeps, per rule, the alerts that match its source side (Alertmanager's `scache`),
/// fed by `observe` for every alert received.
pub struct Inhibitor {
    rules: Vec<InhibitRule>,
    sources: Mutex<Vec<HashMap<Fingerprint, Alert>>>,
}

impl Inhibitor {
    pub fn new(rules: Vec<InhibitRule>) -> Self {
        let sources = Mutex::new(rules.iter().map(|_| HashMap::new()).collect());
        Inhibitor { rules, sources }
    }

    /// Records an alert (new or updated) as a possible source.
    pub fn observe(&self, alert: &Alert) {
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        for (rule, cache) in self.rules.iter().zip(sources.iter_mut()) {
            if all_match(&rule.source, &alert.labels) {
                cache.insert(alert.fingerprint(), alert.clone());
            }
        }
    }

    /// Drops sources resolved before `now`.
    pub fn gc(&self, now: Timestamp) {
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        for cache in sources.iter_mut() {
            cache.retain(|_, a| !a.resolved_at(now));
        }
    }
}

impl Inhibitor {
    /// The fingerprints of the firing alerts that inhibit an alert with `labels` at `now`
    /// (Alertmanager's `inhibitedBy`), for the API.
    pub fn inhibited_by(&self, labels: &Labels, now: Timestamp) -> Vec<Fingerprint> {
        let sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for (rule, cache) in self.rules.iter().zip(sources.iter()) {
            if all_match(&rule.target, labels) {
                let two_sided = all_match(&rule.source, labels);
                out.extend(
                    cache.values().filter(|s| inhibits(rule, s, labels, now, two_sided)).map(Alert::fingerprint),
                );
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// Whether source alert `s` of `rule` inhibits an alert with `labels` (whose labels match the
/// target side; `two_sided` when they match the source side too).
fn inhibits(rule: &InhibitRule, s: &Alert, labels: &Labels, now: Timestamp, two_sided: bool) -> bool {
    !s.resolved_at(now)
        && rule.equal.iter().all(|n| s.labels.get(n) == labels.get(n))
        && !(two_sided && all_match(&rule.target, &s.labels))
}

impl Muter for Inhibitor {
    /// Alertmanager's `Inhibitor.Mutes`: a rule whose target matches mutes when one of its source
    /// alerts is firing at `now` and agrees on every `equal` label (absent equals absent). Where the
    /// alert matches the source side too, sources that also match the target side are skipped, so
    /// two alerts never inhibit each other and an alert never inhibits itself. Every rule that mutes
    /// is named, with its inhibiting alerts; it lasts until they resolve.
    fn muted_by(&self, labels: &Labels, now: Timestamp) -> Option<(Reason, Option<Timestamp>)> {
        let sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        let mut rules = Vec::new();
        for (i, (rule, cache)) in self.rules.iter().zip(sources.iter()).enumerate() {
            if !all_match(&rule.target, labels) {
                continue;
            }
            let two_sided = all_match(&rule.source, labels);
            let mut alerts: Vec<&Alert> =
                cache.values().filter(|s| inhibits(rule, s, labels, now, two_sided)).collect();
            if alerts.is_empty() {
                continue;
            }
            alerts.sort_by_key(|a| a.fingerprint());
            rules.push(InhibitedBy {
                rule: i,
                source_matchers: rule.source.iter().map(|m| m.to_string()).collect(),
                target_matchers: rule.target.iter().map(|m| m.to_string()).collect(),
                equal: rule.equal.clone(),
                alerts: alerts
                    .iter()
                    .map(|a| InhibitingAlert {
                        fingerprint: a.fingerprint().to_string(),
                        labels: a.labels.iter().map(|l| (l.name.clone(), l.value.clone())).collect(),
                    })
                    .collect(),
            });
        }
        (!rules.is_empty()).then_some((Reason::Inhibited { rules }, None))
    }
}
