//! The analyzer's alerts through alertd's engine in virtual time, as `argus alertd replay` runs them,
//! with two differences that make the clock the one a running alertd keeps: the engine's timers fire
//! at their own deadlines between the analyzer's posts (the replay tool fires them at the next input
//! line, up to a minute late here), and every hold the engine records (`GET /api/v1/suppressed`: flap,
//! backoff, group timers, inhibition) is kept, so that a fault that was alerted but not notified in time
//! says what held it.

use super::data::DataSet;
use super::pipeline::{Page, Trigger};
use anyhow::{Context, Result, anyhow};
use argus_alertd::alert::{Fingerprint, PostableAlert, Status};
use argus_alertd::engine::Engine;
use argus_alertd::nflog::MemLog;
use argus_alertd::notify::{Notification, Notifier, NotifyError};
use argus_alertd::silence::MemSilences;
use argus_alertd::suppressed::Suppressed;
use argus_alertd::time::Timestamp;
use argus_alertd::webhook::MessageAlert;
use argus_analyzer::runtime::Alert;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// After the last post, timers run on for at most this long (as the replay tool's drain).
const DRAIN: Duration = Duration::from_secs(24 * 3600);

/// Held-back records kept: every hold of a run (the server keeps 10,000 for its API).
const LEDGER: usize = 1 << 24;

/// One hold of an alert of the set, as the engine recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    /// `flapping`, `inhibited`, `grouped:<timer>` (`group_wait`, `group_interval`, `backoff`, …).
    pub reason: String,
    pub since: i64,
    /// When the hold ended; `None` while open at the end of the run.
    pub ended: Option<i64>,
}

/// What alertd made of the analyzer's alerts.
#[derive(Debug, Default)]
pub struct Notified {
    pub pages: Vec<Page>,
    /// Holds by alert fingerprint.
    pub held: HashMap<Fingerprint, Vec<Held>>,
    /// Notifications that left alerts out (`truncatedAlerts` > 0, the receiver's `max_alerts`).
    pub truncated: usize,
}

/// The notifier of the run: records what is sent, and shares the ledger the engine records holds in.
struct Sink {
    sent: Mutex<Vec<Notification>>,
    ledger: Arc<Suppressed>,
}

impl Notifier for Sink {
    fn notify(&self, n: Notification) -> Result<(), NotifyError> {
        self.sent.lock().unwrap_or_else(|e| e.into_inner()).push(n);
        Ok(())
    }

    fn suppressed(&self) -> Option<Arc<Suppressed>> {
        Some(self.ledger.clone())
    }
}

impl Sink {
    fn take(&self) -> Vec<Notification> {
        std::mem::take(&mut *self.sent.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Replays `timeline` (the analyzer's posts by step, in time order) through alertd configured by `cfg`.
pub fn notify(set: &DataSet, cfg: argus_alertd::Config, timeline: &[(i64, Vec<Alert>)]) -> Result<Notified> {
    let sink = Arc::new(Sink { sent: Mutex::default(), ledger: Arc::new(Suppressed::with_capacity(LEDGER)) });
    let mut engine = Engine::new(cfg, Arc::new(MemSilences::default()), Arc::new(MemLog::default()), sink.clone());
    let series = SeriesIndex::new(set);
    let mut out = Notified::default();
    let collect = |sent: Vec<Notification>, out: &mut Notified| {
        for n in sent {
            out.truncated += usize::from(n.message.truncated_alerts > 0);
            let firing: Vec<(usize, &MessageAlert)> = n
                .message
                .alerts
                .iter()
                .filter(|a| a.status == Status::Firing)
                .filter_map(|a| series.find(&a.labels).map(|i| (i, a)))
                .collect();
            let trigger = firing.iter().max_by_key(|(_, a)| a.starts_at).map(|(i, a)| Trigger {
                series: *i,
                rule: a.labels.get("analyzer_rule").cloned().unwrap_or_default(),
                detector: a.labels.get("detector").cloned().unwrap_or_default(),
            });
            let alerts = firing.iter().map(|(i, a)| (*i, a.starts_at.millis())).collect();
            out.pages.push(Page { at: n.at.millis(), alerts, trigger });
        }
    };
    for (t, alerts) in timeline {
        let now = Timestamp::from_millis(*t);
        // Timers due since the last post fire when they are due, as on a running server.
        while let Some(due) = engine.next_deadline().filter(|&d| d < now) {
            engine.advance(due);
            collect(sink.take(), &mut out);
        }
        let postable: Vec<PostableAlert> = alerts
            .iter()
            .map(|a| serde_json::to_value(a).and_then(serde_json::from_value))
            .collect::<Result<_, _>>()
            .with_context(|| format!("{}: an analyzer alert alertd cannot read", set.name))?;
        engine.advance(now);
        engine.post(now, postable).map_err(|e| anyhow!("{}: alertd refused the alerts at {t}: {e}", set.name))?;
        engine.advance(now);
        collect(sink.take(), &mut out);
    }
    if let Some((last, _)) = timeline.last() {
        let stop = Timestamp::from_millis(*last) + DRAIN;
        while let Some(due) = engine.next_deadline().filter(|&d| d <= stop) {
            engine.advance(due);
            collect(sink.take(), &mut out);
        }
    }
    let everything = sink.ledger.query(&[], Timestamp(i64::MIN), Timestamp(i64::MAX));
    for (fp, records) in everything {
        let held = records
            .into_iter()
            .map(|r| Held {
                reason: match &r.reason {
                    argus_alertd::suppressed::Reason::Grouped { timer, .. } => {
                        format!(
                            "grouped:{}",
                            serde_json::to_value(timer)
                                .ok()
                                .and_then(|v| v.as_str().map(String::from))
                                .unwrap_or_default()
                        )
                    }
                    other => other.kind().to_string(),
                },
                since: r.since.millis(),
                ended: r.ended.map(Timestamp::millis),
            })
            .collect();
        out.held.insert(fp, held);
    }
    Ok(out)
}

/// The set's series by the labels their alerts carry: an alert has the series' labels but its name
/// (as `metric`), plus its own.
pub struct SeriesIndex {
    names: Vec<String>,
    by_key: HashMap<Vec<Option<String>>, usize>,
}

impl SeriesIndex {
    pub fn new(set: &DataSet) -> SeriesIndex {
        let names: Vec<String> = set
            .series
            .iter()
            .flat_map(|s| s.labels.without_name().iter().map(|l| l.name.clone()).collect::<Vec<_>>())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut index = SeriesIndex { names, by_key: HashMap::new() };
        for (i, s) in set.series.iter().enumerate() {
            let key = index.key(|n| match n {
                None => s.labels.metric_name(),
                Some(n) => s.labels.get(n),
            });
            index.by_key.insert(key, i);
        }
        index
    }

    fn key<'a>(&self, get: impl Fn(Option<&str>) -> Option<&'a str>) -> Vec<Option<String>> {
        std::iter::once(get(None)).chain(self.names.iter().map(|n| get(Some(n)))).map(|v| v.map(String::from)).collect()
    }

    /// The series an alert with `labels` names, if it names one of the set's.
    pub fn find(&self, labels: &BTreeMap<String, String>) -> Option<usize> {
        let key = self.key(|n| match n {
            None => labels.get("metric").map(String::as_str),
            Some(n) => labels.get(n).map(String::as_str),
        });
        self.by_key.get(&key).copied()
    }
}
