//! The engine: alert store, dispatcher, extensions and pipeline behind two calls — `ingest` at a
//! time, and `advance` to a time. It never reads a clock or sleeps, so the same code runs on tokio
//! time (`runner`) and in virtual time (`replay`), and every run is deterministic.

use crate::alert::{Alert, AlertError, PostableAlert, Status};
use crate::config::Config;
use crate::dispatch::{Dispatcher, route_group};
use crate::escalate::{Due, Escalator};
use crate::flap::FlapDetector;
use crate::incident::Correlator;
use crate::inhibit::Inhibitor;
use crate::memory::{BackoffMemory, FlapMemory, Memory, MemorySink};
use crate::nflog::NotificationLog;
use crate::notify::{
    Ctx, DedupStage, HoldStage, MuteStage, Notifier, Pipeline, SendStage, SetNotifiesStage, TimeActiveStage,
    TimeMuteStage,
};
use crate::silence::{Silencer, Silences};
use crate::store::AlertStore;
use crate::suppressed::{HeldRoute, Hold, Reason, Source, Suppressed, Timer};
use crate::time::Timestamp;
use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

/// How often (in engine time) state is garbage-collected.
const GC_EVERY: Duration = Duration::from_secs(900);
/// How long notification log entries, expired silences and finished outbox entries are kept
/// (Alertmanager's default `--data.retention`).
pub const NFLOG_RETENTION: Duration = Duration::from_secs(120 * 3600);

/// Equal configuration sections. Matchers (holding compiled regexes) have no `PartialEq`; their
/// `Debug` form names their name, operator and value, which is what makes two of them equal.
fn same<T: std::fmt::Debug>(a: &T, b: &T) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

pub struct Engine {
    cfg: Config,
    store: AlertStore,
    dispatcher: Dispatcher,
    inhibitor: Arc<Inhibitor>,
    flap: Option<FlapDetector>,
    correlator: Option<Correlator>,
    nflog: Arc<dyn NotificationLog>,
    silences: Arc<dyn Silences>,
    pipeline: Pipeline,
    /// Escalations skip dedup and hold (each goes out once, by the escalator's own bookkeeping) and
    /// leave the notification log alone, so the incident's own receiver is unaffected.
    escalation_pipeline: Pipeline,
    escalator: Escalator,
    /// Where notifications go, for its housekeeping.
    notifier: Arc<dyn Notifier>,
    last_gc: Option<Timestamp>,
    /// Silences until resolved that this process has seen match a firing alert; only those end when
    /// none does any more. After a restart the engine holds no alert yet: the silence waits for its
    /// alerts to come back (Prometheus resends them) rather than ending at the first other alert.
    armed: std::collections::HashSet<String>,
    /// Incident numbers given before (by earlier processes, or a correlator a reload replaced): new
    /// incidents are numbered after it.
    last_incident: u64,
    /// The hold stage's updates waiting out `update_interval`, kept over a reload.
    waiting: crate::notify::Waiting,
    /// In a cluster, how long this replica lets the replicas before it notify first: its position
    /// times the peer timeout (Alertmanager's wait stage). A group due at `t` runs its pipeline at
    /// `t + peer_wait`, by when the notification log holds what an earlier replica sent.
    peer_wait: Duration,
    /// Whether this replica runs in a cluster: incidents are numbered by content, and escalations
    /// wait their position as notifications do.
    clustered: bool,
    /// Where incident, backoff and flap state goes as it changes (alertd.db, and the cluster).
    memory: Option<Arc<dyn MemorySink>>,
    /// Batches of alerts received while intake is held (`hold_intake`), in order.
    held: Option<Vec<Vec<Alert>>>,
    /// Every alert held back from notification and why; shared with delivery (through the
    /// notifier) and the API.
    suppressed: Arc<Suppressed>,
}

impl Engine {
    pub fn new(
        cfg: Config,
        silences: Arc<dyn Silences>,
        nflog: Arc<dyn NotificationLog>,
        notifier: Arc<dyn Notifier>,
    ) -> Engine {
        Engine::with_waiting(cfg, silences, nflog, notifier, Default::default())
    }

    fn with_waiting(
        cfg: Config,
        silences: Arc<dyn Silences>,
        nflog: Arc<dyn NotificationLog>,
        notifier: Arc<dyn Notifier>,
        waiting: crate::notify::Waiting,
    ) -> Engine {
        let inhibitor = Arc::new(Inhibitor::new(cfg.inhibit_rules.clone()));
        let silencer = Arc::new(Silencer(silences.clone()));
        let pipeline = Pipeline {
            stages: vec![
                Box::new(MuteStage { name: "inhibit", muter: inhibitor.clone() }),
                Box::new(TimeActiveStage),
                Box::new(TimeMuteStage),
                Box::new(MuteStage { name: "silence", muter: silencer.clone() }),
                Box::new(DedupStage { nflog: nflog.clone() }),
                Box::new(HoldStage::new(nflog.clone(), waiting.clone())),
                Box::new(SendStage { notifier: notifier.clone(), nflog: nflog.clone() }),
                Box::new(SetNotifiesStage { nflog: nflog.clone() }),
            ],
        };
        let escalation_pipeline = Pipeline {
            stages: vec![
                Box::new(MuteStage { name: "inhibit", muter: inhibitor.clone() }),
                Box::new(TimeActiveStage),
                Box::new(TimeMuteStage),
                Box::new(MuteStage { name: "silence", muter: silencer }),
                Box::new(SendStage { notifier: notifier.clone(), nflog: nflog.clone() }),
            ],
        };
        Engine {
            suppressed: notifier.suppressed().unwrap_or_default(),
            flap: cfg.flap.clone().map(FlapDetector::new),
            correlator: cfg.correlation.clone().map(Correlator::new),
            escalator: Escalator::new(cfg.escalation.clone()),
            cfg,
            store: AlertStore::default(),
            dispatcher: Dispatcher::default(),
            inhibitor,
            nflog,
            silences,
            pipeline,
            escalation_pipeline,
            notifier,
            last_gc: None,
            armed: Default::default(),
            last_incident: 0,
            waiting,
            peer_wait: Duration::ZERO,
            clustered: false,
            memory: None,
            held: None,
        }
    }

    /// Holds the alerts received from now on until `release_intake`. A replica that starts beside
    /// peers merges their state first (their open incidents among it): an alert that still fires then
    /// joins the incident its peers hold, under their number, instead of opening one of its own that
    /// they would not know. Nothing held is lost: it is ingested on release, in order.
    pub fn hold_intake(&mut self) {
        self.held.get_or_insert_with(Vec::new);
    }

    /// Ingests, at `now`, the alerts held since `hold_intake`, and takes alerts at once from then on.
    /// Returns how many were held.
    pub fn release_intake(&mut self, now: Timestamp) -> usize {
        let Some(held) = self.held.take() else { return 0 };
        let n = held.iter().map(Vec::len).sum();
        for alerts in held {
            self.ingest(now, alerts);
        }
        n
    }

    /// Hands every change of incident, backoff and flap state to `sink` from now on.
    pub fn remember_with(&mut self, sink: Arc<dyn MemorySink>) {
        self.memory = Some(sink);
    }

    /// Hands what `item` builds to the sink; builds nothing without one (ingestion calls this for
    /// every state change).
    fn remember(&self, item: impl FnOnce(&Self) -> Option<Memory>) {
        if let Some(sink) = &self.memory
            && let Some(m) = item(self)
        {
            sink.remember(&m);
        }
    }

    /// Remembers incident `id` of `route_group` as it is now.
    fn remember_incident(&mut self, route_group: &str, id: u64) {
        if self.memory.is_none() {
            return;
        }
        self.remember(|e| e.incident_memory(route_group, id));
        if let Some(c) = &mut self.correlator {
            c.remembered(route_group, id);
        }
    }

    /// Incident `id` of `route_group` as remembered.
    fn incident_memory(&self, route_group: &str, id: u64) -> Option<Memory> {
        let c = self.correlator.as_ref()?;
        let progress = self.escalator.progress(id);
        let notified = progress.as_ref().map(|p| (p.group_key.clone(), p.notified_at.0));
        let escalated = progress.map(|p| p.done).unwrap_or_default();
        c.memory(route_group, id, notified, escalated).map(|m| Memory::Incident(Box::new(m)))
    }

    fn backoff_memory(&self, origin: &str) -> Option<Memory> {
        let c = self.correlator.as_ref()?;
        let sent = c.sent_times(origin);
        let last = *sent.last()?;
        Some(Memory::Backoff(BackoffMemory {
            v: 0,
            origin: origin.to_string(),
            sent: sent.iter().map(|t| t.0).collect(),
            expires_at: (last + c.cfg.backoff_window).0,
        }))
    }

    fn flap_memory(&self, fp: crate::alert::Fingerprint) -> Option<Memory> {
        let f = self.flap.as_ref()?;
        let (changes, flapping) = f.recent(fp)?;
        let last = *changes.last()?;
        Some(Memory::Flap(FlapMemory {
            v: 0,
            fingerprint: fp,
            changes: changes.iter().map(|t| t.0).collect(),
            flapping,
            expires_at: (last + f.horizon()).0,
        }))
    }

    /// Merges state that a peer or an earlier process remembers (see `crate::memory`), at `now`.
    /// True when it changed this engine's state; the merged state is then remembered in turn.
    pub fn merge_memory(&mut self, m: &Memory, now: Timestamp) -> bool {
        match m {
            Memory::Backoff(b) => {
                let Some(c) = &mut self.correlator else { return false };
                let times: Vec<Timestamp> = b.sent.iter().copied().map(Timestamp).collect();
                if !c.merge_sent(&b.origin, &times) {
                    return false;
                }
                self.remember(|e| e.backoff_memory(&b.origin));
            }
            Memory::Flap(f) => {
                let Some(d) = &mut self.flap else { return false };
                let changes: Vec<Timestamp> = f.changes.iter().copied().map(Timestamp).collect();
                if !d.merge(f.fingerprint, &changes, f.flapping) {
                    return false;
                }
                self.remember(|e| e.flap_memory(f.fingerprint));
            }
            Memory::Incident(i) => {
                let Some(c) = &mut self.correlator else { return false };
                let mut changed = c.merge_incident(i, now);
                // Progress counts only for an incident held here under this number.
                let Some(held) = c.incident(&i.route_group, i.id) else { return false };
                if let Some((group_key, at)) = &i.notified {
                    let p = crate::escalate::Progress {
                        group_key: group_key.clone(),
                        notified_at: Timestamp(*at),
                        acked: i.ack.is_some(),
                        done: i.escalated.clone(),
                    };
                    changed |= self.escalator.merge(i.id, &i.route_group, held.opened_at, &p);
                }
                if !changed {
                    return false;
                }
                self.remember_incident(&i.route_group, i.id);
            }
        }
        true
    }

    /// Runs as a replica of a cluster: incidents numbered by content, so every replica gives an
    /// incident (and so its group key) the same number.
    pub fn join_cluster(&mut self) {
        self.clustered = true;
        if let Some(c) = &mut self.correlator {
            c.number_by_content(true);
        }
    }

    /// Sets how long this replica waits before running a due group's pipeline (its position in the
    /// cluster times the peer timeout).
    pub fn set_peer_wait(&mut self, wait: Duration) {
        self.peer_wait = wait;
        self.escalator.set_delay(wait);
    }

    pub fn peer_wait(&self) -> Duration {
        self.peer_wait
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Validates posted alerts (all or none) and ingests them at `now`.
    pub fn post(&mut self, now: Timestamp, alerts: Vec<PostableAlert>) -> Result<(), AlertError> {
        let rt = self.cfg.resolve_timeout;
        let alerts = alerts.into_iter().map(|a| a.into_alert(now, rt)).collect::<Result<Vec<_>, _>>()?;
        self.ingest(now, alerts);
        Ok(())
    }

    /// Takes in alerts received at `now`. Call `advance(now)` first, so timers due earlier fire
    /// before the new alerts are seen, and after, for groups that flush at once.
    pub fn ingest(&mut self, now: Timestamp, mut alerts: Vec<Alert>) {
        if let Some(held) = &mut self.held {
            held.push(alerts);
            return;
        }
        if self.clustered {
            // An incident is numbered by the alert that opens it: of a batch, the one that began
            // first. A replica that restarts receives the firing alerts again in one batch and so
            // opens the incident its peers opened, with the same number, when its first alert is
            // still firing.
            alerts.sort_by_key(|a| (a.starts_at, a.fingerprint()));
        }
        for a in alerts {
            let put = self.store.put(a, now);
            if let Some(f) = &mut self.flap
                && !put.changes.is_empty()
            {
                let fp = put.alert.fingerprint();
                for (at, _status) in &put.changes {
                    f.change(fp, *at);
                }
                self.remember(|e| e.flap_memory(fp));
            }
            self.inhibitor.observe(&put.alert);
            if put.alert.resolved_at(now) {
                // Resolved: nothing holds back a page for it any more.
                let fp = put.alert.fingerprint();
                self.suppressed.release(fp, Source::Engine, now, |_| true);
                self.suppressed.release(fp, Source::Delivery, now, |_| true);
            }
            self.dispatch(&put.alert, now);
        }
        self.expire_resolved_silences(now);
    }

    /// Puts a stored alert into the group of each route it matches.
    fn dispatch(&mut self, alert: &Alert, now: Timestamp) {
        let mut stale = Vec::new();
        for route in self.cfg.route.match_labels(&alert.labels) {
            let labels = route.group_labels(&alert.labels);
            let group = route_group(route, &labels);
            let incident = match &mut self.correlator {
                Some(c) => c.assign(&group, alert, now),
                None => None,
            };
            let (g, news) = self.dispatcher.insert(route, labels, incident, alert.clone(), now);
            // The dispatcher's timer decides when a new alert is first notified.
            let due = g.next_flush + self.peer_wait;
            if news && due > now {
                let timer = if g.has_flushed { Timer::GroupInterval } else { Timer::GroupWait };
                let route = HeldRoute {
                    receiver: g.opts.receiver.clone(),
                    route: g.route.clone(),
                    group_key: g.key.clone(),
                    integration: String::new(),
                    group: g.id.clone(),
                };
                let reason = Reason::Grouped { timer, incident: g.incident, new_alerts: None, needed: None };
                let hold = Hold {
                    fingerprint: alert.fingerprint(),
                    labels: alert.labels.clone(),
                    route,
                    reason,
                    until: Some(due),
                };
                self.suppressed.hold(Source::Engine, hold, now);
            }
            if let (Some(id), Some(c)) = (incident, &self.correlator)
                && self.memory.is_some()
                && c.stale(&group, id)
            {
                stale.push((group, id));
            }
        }
        for (group, id) in stale {
            self.remember_incident(&group, id);
        }
    }

    /// Swaps in a new configuration at `now`, sending through `notifier` from then on, as
    /// Alertmanager does on reload: the dispatcher is rebuilt and takes every held alert again, so
    /// each group starts over; one whose alerts began longer than `group_wait` ago flushes at once,
    /// and the notification log (kept, keyed by group) holds back what was already sent. Groups of
    /// routes that still exist therefore keep their notification state; groups of new or changed
    /// routes notify as new ones. Silences and held alerts are kept, and so are flap history,
    /// incidents and escalations while their sections are unchanged.
    pub fn reload(&mut self, cfg: Config, notifier: Arc<dyn Notifier>, now: Timestamp) {
        let mut next =
            Engine::with_waiting(cfg, self.silences.clone(), self.nflog.clone(), notifier, self.waiting.clone());
        next.store = std::mem::take(&mut self.store);
        next.last_gc = self.last_gc;
        next.armed = std::mem::take(&mut self.armed);
        next.set_peer_wait(self.peer_wait);
        next.memory = self.memory.clone();
        next.held = self.held.take();
        if self.clustered {
            next.join_cluster();
        }
        next.number_incidents_after(self.last_incident.max(self.correlator.as_ref().map_or(0, |c| c.last_number())));
        if next.cfg.flap == self.cfg.flap {
            next.flap = self.flap.take();
        }
        if same(&next.cfg.correlation, &self.cfg.correlation) {
            next.correlator = self.correlator.take();
            if same(&next.cfg.escalation, &self.cfg.escalation) {
                // Its delay is this engine's peer wait already, which `next` has too.
                next.escalator = std::mem::take(&mut self.escalator);
            }
        }
        if next.notifier.suppressed().is_none() {
            next.suppressed = self.suppressed.clone();
        }
        // The groups are made anew: their holds are recorded again as the new groups decide.
        next.suppressed.release_all(Source::Engine, now);
        let held: Vec<Alert> = next.store.iter().cloned().collect();
        for a in &held {
            next.inhibitor.observe(a);
            next.dispatch(a, now);
        }
        *self = next;
    }

    /// Numbers new incidents after `last`: the highest number an earlier process gave (alertd.db's
    /// history), so that none is given twice.
    pub fn number_incidents_after(&mut self, last: u64) {
        self.last_incident = self.last_incident.max(last);
        if let Some(c) = &mut self.correlator {
            c.number_after(self.last_incident);
        }
    }

    /// The next time `advance` has work.
    pub fn next_deadline(&self) -> Option<Timestamp> {
        match (self.dispatcher.next_deadline().map(|t| t + self.peer_wait), self.escalator.next_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs every group flush and escalation due at or before `now`, each at its own due time, in
    /// time order (a flush before an escalation due at the same time).
    pub fn advance(&mut self, now: Timestamp) {
        loop {
            let wait = self.peer_wait;
            let flush = self.dispatcher.next_deadline().map(|t| t + wait).filter(|&t| t <= now);
            let escalate = self.escalator.next_due().filter(|&t| t <= now);
            match (flush, escalate) {
                (Some(f), e) if e.is_none_or(|e| f <= e) => {
                    let Some((due, key)) = self.dispatcher.pop_due(now - wait) else { break };
                    // The group's timers keep their own times; only its pipeline runs later.
                    let at = due + wait;
                    self.gc(at);
                    self.expire_resolved_silences(at);
                    let ok = self.flush(&key, at);
                    self.dispatcher.after_flush(&key, due, ok);
                }
                (_, Some(_)) => {
                    let Some(due) = self.escalator.take_due(now) else { break };
                    self.gc(due.at);
                    self.escalate(&due);
                }
                _ => break,
            }
        }
        self.gc(now);
        self.expire_resolved_silences(now);
    }

    /// Whether a firing alert at `now` is matched by all of `matchers`.
    pub fn firing_matches(&self, matchers: &[argus_model::Matcher], now: Timestamp) -> bool {
        self.store
            .iter()
            .any(|a| !a.resolved_at(now) && matchers.iter().all(|m| m.matches(a.labels.get(&m.name).unwrap_or(""))))
    }

    /// Expires, at `now`, each active silence until resolved that no firing alert matches any more,
    /// having matched one before: the alerts it silenced (and any that matched it since) have all
    /// resolved.
    fn expire_resolved_silences(&mut self, now: Timestamp) {
        for s in self.silences.list() {
            if !s.until_resolved || !s.active_at(now) {
                self.armed.remove(&s.id);
                continue;
            }
            if self.firing_matches(&s.matchers, now) {
                self.armed.insert(s.id.clone());
                continue;
            }
            if !self.armed.remove(&s.id) {
                continue;
            }
            match self.silences.expire(&s.id, now) {
                Ok(_) => tracing::info!(silence = %s.id, "Silence expired: its alerts have resolved"),
                Err(error) => tracing::error!(silence = %s.id, %error, "Silence expiry failed"),
            }
        }
    }

    /// Matchers that select the alerts of incident `id` opened at `opened_at` that fire at `now`:
    /// its group's labels, the names of those alerts, and each correlation label that all of them
    /// carry, with the values they have. None when the engine holds no firing alert of the incident.
    pub fn incident_matchers(
        &self,
        id: u64,
        opened_at: Timestamp,
        now: Timestamp,
    ) -> Option<Vec<argus_model::Matcher>> {
        use argus_model::{MatchOp, Matcher};
        let c = self.correlator.as_ref()?;
        let group = self.dispatcher.groups().find(|g| {
            g.incident == Some(id)
                && c.incident(&g.route_group, id).is_some_and(|i| self.clustered || i.opened_at == opened_at)
        })?;
        let alerts: Vec<Alert> = group.sorted_alerts().into_iter().filter(|a| !a.resolved_at(now)).collect();
        if alerts.is_empty() {
            return None;
        }
        let any_of = |name: &str| -> Option<Matcher> {
            let mut values: Vec<&str> = alerts.iter().map(|a| a.labels.get(name)).collect::<Option<Vec<_>>>()?;
            values.sort_unstable();
            values.dedup();
            let re = values.iter().map(|v| regex::escape(v)).collect::<Vec<_>>().join("|");
            Matcher::new(name, MatchOp::RegexMatch, re).ok()
        };
        let mut out: Vec<Matcher> = group.labels.iter().map(|l| Matcher::eq(&l.name, &l.value)).collect();
        for name in std::iter::once("alertname").chain(c.cfg.labels.iter().map(String::as_str)) {
            if group.labels.get(name).is_none()
                && let Some(m) = any_of(name)
            {
                out.push(m);
            }
        }
        Some(out)
    }

    /// Acknowledges incident `id` opened at `opened_at` (as the history database names it): its
    /// escalations still due are dropped. False when the engine does not hold that incident.
    pub fn acknowledge(&mut self, id: u64, opened_at: Timestamp, ack: crate::memory::Acknowledgement) -> bool {
        // In a cluster an incident's number is the same on every replica but each opened it at its
        // own time: the number names it.
        let opened_at = (!self.clustered).then_some(opened_at);
        let group = self.correlator.as_ref().and_then(|c| {
            c.incidents()
                .find(|(_, i)| i.id == id && opened_at.is_none_or(|o| i.opened_at == o))
                .map(|(g, _)| g.to_string())
        });
        let escalations = self.escalator.acknowledge(id, opened_at);
        let Some(group) = group else { return escalations };
        if let Some(c) = &mut self.correlator {
            c.acknowledge(id, ack);
        }
        // Remembered with it, so peers and a restart know who acknowledged it.
        self.remember_incident(&group, id);
        true
    }

    /// Notifies an unacknowledged incident to its escalation rule's receiver, when it still has a
    /// firing alert that the rule matches.
    fn escalate(&mut self, due: &Due) {
        self.send_escalation(due);
        // Done (sent, or found not to apply): replicas after this one skip it.
        self.remember_incident(&due.route_group, due.incident);
    }

    fn send_escalation(&mut self, due: &Due) {
        let rule = self.escalator.rule(due.rule);
        let (Some(group), Some(c)) = (self.dispatcher.group(&due.group_key), &self.correlator) else { return };
        let Some(incident) = c.incident(&due.route_group, due.incident) else { return };
        let Some(receiver) = self.cfg.receivers.get(&rule.receiver) else { return };
        let alerts = group.sorted_alerts();
        if !alerts.iter().any(|a| !a.resolved_at(due.at) && rule.matches(&a.labels)) {
            return;
        }
        tracing::info!(incident = due.incident, receiver = %receiver.name, "Escalating an unacknowledged incident");
        for integration in receiver.integrations() {
            let ctx = self.ctx(due.at, receiver, integration, group, Some((c, incident)), Some(rule.after));
            if let Err(error) = self.escalation_pipeline.exec(&ctx, alerts.clone()) {
                tracing::warn!(receiver = %receiver.name, group = %group.key, %error, "Escalation failed");
            }
        }
    }

    /// What the pipeline's stages read about one notification of `group` to one integration.
    fn ctx<'a>(
        &'a self,
        now: Timestamp,
        receiver: &'a crate::receiver::Receiver,
        integration: crate::receiver::Integration,
        group: &'a crate::dispatch::AggrGroup,
        incident: Option<(&'a Correlator, &'a crate::incident::Incident)>,
        escalation: Option<Duration>,
    ) -> Ctx<'a> {
        Ctx {
            now,
            receiver,
            integration,
            recipient: crate::deliver::recipient(&receiver.name, integration.kind, integration.index),
            group_key: &group.key,
            group_labels: &group.labels,
            opts: &group.opts,
            time_intervals: &self.cfg.time_intervals,
            external_url: &self.cfg.external_url,
            flap: self.flap.as_ref(),
            incident,
            escalation,
            sent: Cell::new(false),
            group_id: &group.id,
            route: &group.route,
            holds: Default::default(),
        }
    }

    fn flush(&mut self, key: &str, at: Timestamp) -> bool {
        let Some(group) = self.dispatcher.group(key) else { return true };
        let Some(receiver) = self.cfg.receivers.get(&group.opts.receiver) else { return true };
        let alerts = group.sorted_alerts();
        let incident = match (&self.correlator, group.incident) {
            (Some(c), Some(id)) => c.incident(&group.route_group, id).map(|i| (c, i)),
            _ => None,
        };
        let origin = incident.map(|(_, i)| (i.origin.clone(), i.id, i.opened_at));
        let mut ok = true;
        let mut sent_any = false;
        let mut holds = Vec::new();
        for integration in receiver.integrations() {
            let ctx = self.ctx(at, receiver, integration, group, incident, None);
            match self.pipeline.exec(&ctx, alerts.clone()) {
                Ok(sent) => sent_any |= sent,
                Err(error) => {
                    tracing::warn!(receiver = %receiver.name, group = %group.key, %error, "Notification failed");
                    ok = false;
                }
            }
            holds.extend(ctx.holds.take());
        }
        // What this flush held back stands; every other hold of the group's alerts is over.
        let fps: Vec<_> = group.alerts.keys().copied().collect();
        self.suppressed.settle_group(&group.id, &fps, holds, at);
        if sent_any && let (Some(c), Some((origin, id, opened_at))) = (&mut self.correlator, origin) {
            c.record_sent(&origin, at);
            let route_group = group.route_group.clone();
            self.escalator.notified(id, &route_group, key, opened_at, at);
            self.remember(|e| e.backoff_memory(&origin));
            self.remember_incident(&route_group, id);
        }
        ok
    }

    fn gc(&mut self, now: Timestamp) {
        if self.last_gc.is_some_and(|t| now - t < GC_EVERY) {
            return;
        }
        self.last_gc = Some(now);
        let mut keep = Duration::from_secs(3600);
        if let Some(f) = &self.cfg.flap {
            keep = keep.max(f.window).max(f.settle);
        }
        self.store.gc(now, keep);
        self.inhibitor.gc(now);
        self.nflog.gc(now, NFLOG_RETENTION);
        self.silences.gc(now, NFLOG_RETENTION);
        self.notifier.gc(now, NFLOG_RETENTION);
        self.notifier.gc_history(now, self.cfg.history_retention);
        if let Some(f) = &mut self.flap {
            f.gc(now);
        }
        if let Some(c) = &mut self.correlator {
            c.gc(now);
            self.escalator.gc(|group, id| c.incident(group, id).is_some());
        }
        if let Some(sink) = &self.memory {
            sink.gc(now);
        }
        let store = &self.store;
        self.suppressed.sweep(now, |fp| store.get(fp).is_some_and(|a| !a.resolved_at(now)));
    }

    /// Every alert held back from notification, and why (shared with delivery and the API).
    pub fn suppressed(&self) -> &Arc<Suppressed> {
        &self.suppressed
    }

    /// Every alert held (firing, and resolved ones not yet forgotten), for the API.
    pub fn alerts(&self) -> impl Iterator<Item = &Alert> {
        self.store.iter()
    }

    pub fn alert(&self, fp: crate::alert::Fingerprint) -> Option<&Alert> {
        self.store.get(fp)
    }

    /// The aggregation groups that hold alerts now, for the API.
    pub fn groups(&self) -> impl Iterator<Item = &crate::dispatch::AggrGroup> {
        self.dispatcher.groups()
    }

    /// The receivers of the routes an alert with `labels` takes, in route order, without repeats.
    pub fn receivers_for(&self, labels: &argus_model::Labels) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.cfg.route.match_labels(labels) {
            if !out.contains(&r.opts.receiver) {
                out.push(r.opts.receiver.clone());
            }
        }
        out
    }

    /// The alerts that inhibit an alert with `labels` at `now`.
    pub fn inhibited_by(&self, labels: &argus_model::Labels, now: Timestamp) -> Vec<crate::alert::Fingerprint> {
        self.inhibitor.inhibited_by(labels, now)
    }

    /// The silences the engine mutes with (shared with the API).
    pub fn silences(&self) -> &Arc<dyn Silences> {
        &self.silences
    }

    /// The alert's status at `now` as stored, for tests and the API.
    pub fn status(&self, fp: crate::alert::Fingerprint, now: Timestamp) -> Option<Status> {
        self.store.get(fp).map(|a| a.status(now))
    }
}

#[cfg(test)]
pub(crate) mod memory_tests;
#[cfg(test)]
pub(crate) mod tests;
