//! Alertmanager-acceptance-style timelines on paused tokio time: push alerts at offsets from the
//! start, run the engine with the tokio runner, and read back when each notification went out.

use argus_alertd::clock::TokioClock;
use argus_alertd::nflog::MemLog;
use argus_alertd::notify::{ChannelNotifier, Notification};
use argus_alertd::runner::Shared;
use argus_alertd::silence::{MemSilences, Silence, Silences};
use argus_alertd::{Engine, PostableAlert, Timestamp, config};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

pub const T0: Timestamp = Timestamp(1_600_000_000_000);

pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// An alert posted with these labels; `ends` (seconds from T0) resolves it explicitly.
pub fn alert(labels: &[(&str, &str)], ends: Option<u64>) -> PostableAlert {
    PostableAlert {
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
        annotations: BTreeMap::new(),
        starts_at: None,
        ends_at: ends.map(|s| T0 + secs(s)),
        generator_url: String::new(),
    }
}

pub struct Timeline {
    pub config: String,
    pub silences: Arc<MemSilences>,
    steps: Vec<(Duration, Step)>,
}

enum Step {
    Push(Vec<PostableAlert>),
    /// Acknowledges the incident with this engine id, as `POST /api/v1/incidents/{id}/ack` does.
    Ack(u64),
    /// Silences these matchers until resolved, as `POST /api/v1/incidents/{id}/silence` does.
    SilenceUntilResolved(Vec<argus_model::Matcher>),
}

impl Timeline {
    pub fn new(config: &str) -> Self {
        Timeline { config: config.to_string(), silences: Arc::new(MemSilences::default()), steps: Vec::new() }
    }

    /// Posts `alerts` at `at` after the start.
    pub fn push(mut self, at: Duration, alerts: Vec<PostableAlert>) -> Self {
        self.steps.push((at, Step::Push(alerts)));
        self
    }

    /// Acknowledges incident `id` (the engine's number, as notified) at `at` after the start.
    pub fn ack(mut self, at: Duration, id: u64) -> Self {
        self.steps.push((at, Step::Ack(id)));
        self
    }

    /// Silences `matchers` until resolved at `at` after the start.
    pub fn silence_until_resolved(mut self, at: Duration, matchers: Vec<argus_model::Matcher>) -> Self {
        self.steps.push((at, Step::SilenceUntilResolved(matchers)));
        self
    }

    /// Runs until `until`, returning one line per notification: `offset receiver status alerts`.
    pub async fn run(self, until: Duration) -> String {
        let cfg = config::parse(&self.config, "test.yml").unwrap();
        let (ntx, mut nrx) = mpsc::unbounded_channel();
        let engine =
            Engine::new(cfg, self.silences.clone(), Arc::new(MemLog::default()), Arc::new(ChannelNotifier(ntx)));
        let clock = TokioClock::starting_at(T0);
        let shared = Shared::new(engine, clock.clone());
        let timers = tokio::spawn(argus_alertd::runner::run_shared(shared.clone()));
        let mut seen: Vec<Notification> = Vec::new();
        for (at, step) in self.steps {
            tokio::time::sleep_until(clock.instant_at(T0 + at)).await;
            while let Ok(n) = nrx.try_recv() {
                seen.push(n);
            }
            let now = shared.now();
            let mut engine = shared.lock();
            engine.advance(now);
            match step {
                Step::Push(alerts) => engine.post(now, alerts).unwrap(),
                Step::Ack(id) => {
                    let opened_at = seen
                        .iter()
                        .filter_map(|n| n.message.argus.as_ref()?.incident.as_ref())
                        .find(|i| i.id == id)
                        .map(|i| i.opened_at)
                        .expect("acknowledging an incident that was notified");
                    let ack = argus_alertd::memory::Acknowledgement {
                        at: now.0,
                        by: "timeline".into(),
                        comment: String::new(),
                    };
                    assert!(engine.acknowledge(id, opened_at, ack), "incident {id} is tracked");
                }
                Step::SilenceUntilResolved(matchers) => {
                    assert!(engine.firing_matches(&matchers, now), "silencing firing alerts");
                    let max = engine.config().silence_until_resolved_max;
                    let s = Silence::until_resolved(matchers, "test".into(), "until resolved".into(), now, max);
                    self.silences.set(s).unwrap();
                }
            }
            engine.advance(now);
            drop(engine);
            shared.changed();
        }
        tokio::time::sleep_until(clock.instant_at(T0 + until)).await;
        timers.abort();
        while let Ok(n) = nrx.try_recv() {
            seen.push(n);
        }
        seen.iter().map(render).collect::<Vec<_>>().join("\n")
    }
}

fn render(n: &Notification) -> String {
    let m = &n.message;
    let alerts: Vec<String> = m
        .alerts
        .iter()
        .map(|a| {
            let name = a.labels.get("alertname").cloned().unwrap_or_default();
            let host = a.labels.get("host").map(|h| format!("@{h}")).unwrap_or_default();
            let st = if a.status == argus_alertd::alert::Status::Firing { "" } else { "(resolved)" };
            format!("{name}{host}{st}")
        })
        .collect();
    let mut line = format!("{} {} {:?} [{}]", offset(n.at), n.receiver, m.status, alerts.join(" "));
    if let Some(x) = &m.argus {
        if let Some(i) = &x.incident {
            line.push_str(&format!(" incident={} cause={}", i.id, i.probable_cause));
        }
        if let Some(e) = &x.escalation {
            line.push_str(&format!(" escalated-after={}s", e.unacknowledged_seconds));
        }
        if !x.flapping.is_empty() {
            line.push_str(&format!(" flapping={:?}", x.flapping.values().collect::<Vec<_>>()));
        }
    }
    line
}

fn offset(t: Timestamp) -> String {
    let s = (t.0 - T0.0) / 1000;
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s:02}s"),
        _ => format!("{h}h{m:02}m{s:02}s"),
    }
}
