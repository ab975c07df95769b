//! Incident correlation: alerts of one route group that share a topology label value (the same host,
//! rack or job) while any of them is active become one incident, notified as one group and updated
//! as it grows. Each incident names a probable cause, the highest-ranked cause among its alerts.
//!
//! Updates back off: after an incident's topology has been notified `n` times within
//! `backoff_window`, an update needs `1 + n / backoff_step` new alerts (not flapping, begun within
//! `burst_window`); an incident's first notification needs one. A new incident notifies on its first
//! alert; a place in an alert storm, whose incident stays open, updates only on a burst that stands
//! out from it.
//!
//! An incident that opens where one closed less than `recurrence_window` ago, with one of its
//! alertnames, recurs it (`recurrence`): it is linked to the earlier one and backs off with the
//! earlier one's notification history, so its first notification is rationed like an update. The
//! engine's memory keeps closed incidents for `recurrence_window` (`Correlator::memory`,
//! `Correlator::merge_incident`), so a restart or a replica links recurrences as this process would.
//!
//! A topology value most of a route group's hosts carry (`job="node-exporter"`, a cluster-wide label)
//! says nothing about which trouble belongs together: a value carried by the alerts of at least
//! `BROAD_MIN_HOSTS` hosts and of more than `BROAD_SHARE` of the hosts that alerted in the route group
//! within `backoff_window` correlates nothing (see `Census`). A training job's label, on a few of the
//! hosts, still joins their alerts.

use crate::alert::{Alert, Fingerprint};
use crate::memory::{IncidentMemory, MAX_NOTIFIED};
use crate::time::Timestamp;
use argus_model::{MatchOp, Matcher};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

mod recurrence;
#[cfg(test)]
pub(crate) mod recurrence_tests;

pub use recurrence::{CRITICAL, Recurrence};
use recurrence::{Closed, History};

/// Labels that name the host an alert is about, most specific first: the census counts hosts by the
/// first of them an alert carries.
pub const HOST_LABELS: [&str; 4] = ["host", "instance", "node", "hostname"];
/// A value seen on fewer hosts than this always correlates: two hosts' alerts sharing a job cannot be
/// told apart from the two hosts of a job, and splitting them would miss a job's cross-host incident.
pub const BROAD_MIN_HOSTS: usize = 3;
/// A value seen on more than this share of the route group's alerting hosts is broad: it correlates
/// nothing, so an incident never spans most of the group through a label they all share.
pub const BROAD_SHARE: f64 = 0.5;

#[derive(Debug, Clone)]
pub struct CorrelationConfig {
    /// Topology labels: alerts sharing the value of any of them correlate.
    pub labels: Vec<String>,
    /// An incident stays open this long after its last alert resolved.
    pub window: Duration,
    pub burst_window: Duration,
    pub backoff_window: Duration,
    pub backoff_step: u32,
    /// The least time between two notifications of one incident, as Alertmanager's `group_interval`
    /// between a group's: a burst that comes sooner waits for it, and what begins meanwhile joins it.
    /// Zero: an update goes out at the next flush of the incident's group.
    pub update_interval: Duration,
    /// How long after an incident closes a new incident at its place with one of its alertnames
    /// recurs it (see `Recurrence`). Zero: incidents never recur, each first notification pages.
    pub recurrence_window: Duration,
    /// Causes, most likely root cause first.
    pub causes: Vec<CauseRule>,
}

#[derive(Debug, Clone)]
pub struct CauseRule {
    pub name: String,
    pub matchers: Vec<Matcher>,
}

fn alertname_re(name: &str, re: &str) -> CauseRule {
    // The patterns below are constants checked by `default_causes_compile`.
    let m = Matcher::new("alertname", MatchOp::RegexMatch, re).unwrap_or_else(|_| Matcher::eq("alertname", re));
    CauseRule { name: name.into(), matchers: vec![m] }
}

/// The built-in cause ranking: node down > NIC/IB link down > GPU Xid/ECC > NCCL timeout > job
/// stall > utilization anomalies.
pub fn default_causes() -> Vec<CauseRule> {
    vec![
        alertname_re("node_down", "(?i).*(host|node|instance|machine).*(down|unreachable|notready|lost).*"),
        alertname_re("link_down", "(?i).*(nic|link|ib|infiniband|rdma|network|port).*(down|flap|lost|error).*"),
        alertname_re("gpu_fault", "(?i).*(xid|ecc|rowremap|gpu.*(lost|fallen|missing|error|fault)).*"),
        alertname_re("nccl_timeout", "(?i).*nccl.*"),
        alertname_re("job_stall", "(?i).*(stall|hang|stuck|noprogress|progress).*"),
        alertname_re("utilization_anomaly", ".+"),
    ]
}

/// The probable cause as notifications and the incident list show it: the cause's name, and the Xid
/// when the alert naming it carries one (`gpu_fault: Xid 79`), since the code says what to do.
pub fn cause_text(cause: &str, a: &Alert) -> String {
    match a.labels.get("xid") {
        Some(xid) => format!("{cause}: Xid {xid}"),
        None => cause.to_string(),
    }
}

/// An incident's number from its content: its first alert's fingerprint and start, which every
/// replica that receives the alert sees alike (senders stamp `startsAt`). 47 bits, so it stays
/// exact as a JSON number, and never 0.
pub fn content_id(first: Fingerprint, starts_at: Timestamp) -> u64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(first.0.to_be_bytes());
    h.update(starts_at.0.to_be_bytes());
    let d = h.finalize();
    let n = u64::from_be_bytes(d[..8].try_into().unwrap_or_default()) & ((1 << 47) - 1);
    n.max(1)
}

impl Default for CorrelationConfig {
    fn default() -> Self {
        CorrelationConfig {
            labels: vec!["rack".into(), "host".into(), "job".into()],
            window: Duration::from_secs(600),
            burst_window: Duration::from_secs(180),
            backoff_window: Duration::from_secs(3600),
            backoff_step: 2,
            update_interval: Duration::ZERO,
            recurrence_window: Duration::ZERO,
            causes: default_causes(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Incident {
    pub id: u64,
    /// The first alert's topology, e.g. `host=node-7`: whose notification history backs off.
    pub origin: String,
    topology: BTreeSet<(String, String)>,
    /// Member alerts and their latest `ends_at`.
    members: HashMap<Fingerprint, Timestamp>,
    pub opened_at: Timestamp,
    /// The latest end of its alerts that a peer or an earlier process knew (see `merge_incident`).
    until: Timestamp,
    /// The latest end of its alerts when it was last remembered (`Correlator::remembered`).
    remembered: Timestamp,
    /// How many alertnames it had when it was last remembered.
    remembered_names: usize,
    /// Its first acknowledgement, made here or on a peer.
    pub ack: Option<crate::memory::Acknowledgement>,
    /// Alertnames of its alerts.
    names: BTreeSet<String>,
    /// The earlier incident it recurs, when it does.
    pub recurrence: Option<Recurrence>,
    /// Whether it has been notified.
    paged: bool,
}

impl Incident {
    fn open_at(&self, now: Timestamp, window: Duration) -> bool {
        now < self.latest_end() + window
    }

    /// The latest end of its alerts.
    pub fn latest_end(&self) -> Timestamp {
        self.members.values().copied().fold(self.until, Timestamp::max)
    }

    /// Its topology, in order.
    pub fn topology(&self) -> impl Iterator<Item = &(String, String)> {
        self.topology.iter()
    }

    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// Its place in a chain of recurrences: its origin, when the chain's first occurrence opened, and
    /// which occurrence it is.
    fn chain(&self) -> (&str, Timestamp, u32) {
        match &self.recurrence {
            Some(r) => (&self.origin, r.since, r.occurrence),
            None => (&self.origin, self.opened_at, 1),
        }
    }

    /// An incident as a peer or an earlier process remembers it (without its alerts, which come
    /// again).
    fn from_memory(m: &IncidentMemory) -> Incident {
        Incident {
            id: m.id,
            origin: m.origin.clone(),
            topology: m.topology.iter().cloned().collect(),
            members: HashMap::new(),
            opened_at: Timestamp(m.opened_at),
            until: Timestamp(m.until),
            remembered: Timestamp(m.until),
            remembered_names: m.names.len(),
            ack: m.ack.clone(),
            names: m.names.iter().cloned().collect(),
            recurrence: m.recurrence.as_ref().map(Recurrence::from_memory),
            paged: m.paged || m.notified.is_some(),
        }
    }

    /// What is kept of it once closed, for its recurrences, with the alerts it notified.
    fn closed(&self, window: Duration, mut notified: BTreeSet<Fingerprint>) -> Closed {
        let r = self.recurrence.as_ref();
        let mut names = self.names.clone();
        names.extend(r.iter().flat_map(|r| r.known.iter().cloned()));
        notified.extend(r.iter().flat_map(|r| r.notified.iter().copied()));
        Closed {
            id: self.id,
            origin: self.origin.clone(),
            topology: self.topology.clone(),
            names,
            notified,
            closed_at: self.latest_end() + window,
            occurrence: r.map_or(1, |r| r.occurrence),
            since: r.map_or(self.opened_at, |r| r.since),
            held: if self.paged { 0 } else { r.map_or(0, |r| r.held) + 1 },
        }
    }
}

/// Moves the incidents of `list` closed at `now` into `history` (when recurrences are kept), with
/// the alerts each notified (taken from `notified`).
fn close(
    list: &mut Vec<Incident>,
    history: &mut History,
    notified: &mut HashMap<u64, BTreeSet<Fingerprint>>,
    now: Timestamp,
    cfg: &CorrelationConfig,
) {
    let window = cfg.window;
    list.retain(|i| {
        let open = i.open_at(now, window);
        if !open {
            let fps = notified.remove(&i.id).unwrap_or_default();
            if !cfg.recurrence_window.is_zero() {
                history.push(i.closed(window, fps));
            }
        }
        open
    });
}

#[derive(Debug)]
pub struct Correlator {
    pub cfg: CorrelationConfig,
    next_id: u64,
    /// Number incidents by their content (`content_id`) instead of in sequence: replicas of a
    /// cluster then give an incident the same number without agreeing on it.
    by_content: bool,
    /// Open incidents per route group.
    incidents: HashMap<String, Vec<Incident>>,
    /// Notification times per incident origin.
    sent: HashMap<String, VecDeque<Timestamp>>,
    /// Which hosts alerted lately, per route group.
    census: HashMap<String, Census>,
    /// Incidents closed within `recurrence_window`, per route group.
    history: HashMap<String, History>,
    /// The firing alerts each open incident has notified, by number. The send stage records them
    /// while the pipeline reads the correlator, hence the lock.
    notified: Mutex<HashMap<u64, BTreeSet<Fingerprint>>>,
}

/// The hosts of one route group that alerted within `backoff_window`, and the hosts each topology
/// value was seen on, with when each was last seen.
#[derive(Debug, Default)]
struct Census {
    hosts: HashMap<String, Timestamp>,
    values: HashMap<(String, String), HashMap<String, Timestamp>>,
    expired_at: Option<Timestamp>,
}

// === impl Census ===

impl Census {
    fn observe(&mut self, host: &str, topology: &BTreeSet<(String, String)>, now: Timestamp) {
        self.hosts.insert(host.to_string(), now);
        for pair in topology {
            self.values.entry(pair.clone()).or_default().insert(host.to_string(), now);
        }
    }

    /// Forgets sightings before `before`; at most once a minute, since it walks every sighting.
    fn expire(&mut self, before: Timestamp, now: Timestamp) {
        if self.expired_at.is_some_and(|t| now - t < Duration::from_secs(60)) {
            return;
        }
        self.expired_at = Some(now);
        self.hosts.retain(|_, t| *t >= before);
        self.values.retain(|_, hosts| {
            hosts.retain(|_, t| *t >= before);
            !hosts.is_empty()
        });
    }

    /// Whether `pair` is carried by too many of the group's hosts to say what belongs together.
    fn broad(&self, pair: &(String, String)) -> bool {
        let n = self.values.get(pair).map_or(0, HashMap::len);
        n >= BROAD_MIN_HOSTS && n as f64 > BROAD_SHARE * self.hosts.len() as f64
    }

    fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }
}

/// The host an alert is about: the value of the first of `HOST_LABELS` it carries.
fn host_of(alert: &Alert) -> Option<(&'static str, &str)> {
    HOST_LABELS.iter().find_map(|&n| alert.labels.get(n).map(|v| (n, v)))
}

impl Correlator {
    pub fn new(cfg: CorrelationConfig) -> Self {
        Correlator {
            cfg,
            next_id: 1,
            by_content: false,
            incidents: HashMap::new(),
            sent: HashMap::new(),
            census: HashMap::new(),
            history: HashMap::new(),
            notified: Mutex::new(HashMap::new()),
        }
    }

    /// Numbers incidents by their content from now on (see `content_id`).
    pub fn number_by_content(&mut self, on: bool) {
        self.by_content = on;
    }

    /// Numbers new incidents after `last` (and after every number given so far). Incident numbers are
    /// in notifications' group keys, which the notification log and the outbox remember across
    /// restarts: a number given again would be taken for that earlier incident.
    pub fn number_after(&mut self, last: u64) {
        self.next_id = self.next_id.max(last.saturating_add(1));
    }

    /// The last incident number given (0 for none).
    pub fn last_number(&self) -> u64 {
        self.next_id - 1
    }

    fn topology(&self, alert: &Alert) -> BTreeSet<(String, String)> {
        self.cfg.labels.iter().filter_map(|n| alert.labels.get(n).map(|v| (n.clone(), v.to_string()))).collect()
    }

    /// The incident the alert belongs to within route group `group`, opening one when none of the
    /// open incidents shares its topology. None for an alert without topology labels, or whose only
    /// topology values are broad (carried by most of the group's hosts, see `Census`).
    pub fn assign(&mut self, group: &str, alert: &Alert, now: Timestamp) -> Option<u64> {
        let mut topo = self.topology(alert);
        let host = host_of(alert);
        if let Some((_, h)) = host {
            let census = self.census.entry(group.to_string()).or_default();
            census.observe(h, &topo, now);
            census.expire(now - self.cfg.backoff_window, now);
        }
        if let Some(census) = self.census.get(group) {
            // The host's own value always correlates: every alert of a host is about it.
            topo.retain(|pair| host.is_some_and(|(n, _)| pair.0 == n) || !census.broad(pair));
        }
        if topo.is_empty() {
            return None;
        }
        let fp = alert.fingerprint();
        let list = self.incidents.entry(group.to_string()).or_default();
        let history = self.history.entry(group.to_string()).or_default();
        let notified = self.notified.get_mut().unwrap_or_else(|e| e.into_inner());
        close(list, history, notified, now, &self.cfg);
        let found = list
            .iter()
            .position(|i| i.members.contains_key(&fp))
            .or_else(|| list.iter().position(|i| !i.topology.is_disjoint(&topo)));
        let inc = match found {
            Some(i) => &mut list[i],
            None => {
                let mut origin = topo.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(",");
                let id = if self.by_content { content_id(fp, alert.starts_at) } else { self.next_id };
                let name = alert.labels.get("alertname").unwrap_or("");
                let earlier = history.find(&topo, name, now, self.cfg.recurrence_window).cloned();
                let recurrence = earlier.map(|c| {
                    // The recurrence backs off with the notifications of the place it recurs.
                    origin = c.origin;
                    history.take(c.id);
                    Recurrence {
                        of: c.id,
                        occurrence: c.occurrence + 1,
                        since: c.since,
                        known: c.names,
                        notified: c.notified,
                        held: c.held,
                    }
                });
                let (topology, members) = (BTreeSet::new(), HashMap::new());
                let never = Timestamp(i64::MIN / 2);
                list.push(Incident {
                    id,
                    origin,
                    topology,
                    members,
                    opened_at: now,
                    until: never,
                    remembered: never,
                    remembered_names: 0,
                    ack: None,
                    names: BTreeSet::new(),
                    recurrence,
                    paged: false,
                });
                if !self.by_content {
                    self.next_id += 1;
                }
                let last = list.len() - 1;
                &mut list[last]
            }
        };
        inc.topology.extend(topo);
        inc.members.insert(fp, alert.ends_at);
        if let Some(name) = alert.labels.get("alertname") {
            inc.names.insert(name.to_string());
        }
        Some(inc.id)
    }

    pub fn incident(&self, group: &str, id: u64) -> Option<&Incident> {
        self.incidents.get(group)?.iter().find(|i| i.id == id)
    }

    /// Records that a notification of incident `id` carried `firing` alerts (the send stage's part
    /// of `record_sent`): a recurrence takes them as already notified.
    pub fn record_notified(&self, id: u64, firing: impl IntoIterator<Item = Fingerprint>) {
        let mut notified = self.notified.lock().unwrap_or_else(|e| e.into_inner());
        notified.entry(id).or_default().extend(firing);
    }

    /// Records a notification of an incident from `origin` at `at` (once per time).
    pub fn record_sent(&mut self, origin: &str, at: Timestamp) -> bool {
        // Of one origin only one incident is open at a time in a route group: a new alert that shares
        // its topology joins it.
        for i in self.incidents.values_mut().flat_map(|l| l.iter_mut()).filter(|i| i.origin == origin) {
            i.paged = true;
        }
        self.merge_sent(origin, &[at])
    }

    /// Merges notification times of `origin` that a peer or an earlier process recorded (its own
    /// included): the union, within the backoff window of the latest. True when any was new.
    pub fn merge_sent(&mut self, origin: &str, times: &[Timestamp]) -> bool {
        let window = self.cfg.backoff_window;
        let q = self.sent.entry(origin.to_string()).or_default();
        let mut all: Vec<i64> = q.iter().map(|t| t.0).collect();
        if !crate::memory::union_times(&mut all, &times.iter().map(|t| t.0).collect::<Vec<_>>()) {
            return false;
        }
        let latest = Timestamp(all.last().copied().unwrap_or(0));
        let kept: VecDeque<Timestamp> = all.into_iter().map(Timestamp).filter(|&t| latest - t < window).collect();
        let changed = kept != *q;
        *q = kept;
        changed
    }

    /// The notification times of `origin` within the backoff window, oldest first.
    pub fn sent_times(&self, origin: &str) -> Vec<Timestamp> {
        self.sent.get(origin).map(|q| q.iter().copied().collect()).unwrap_or_default()
    }

    /// Every open incident with its route group.
    pub fn incidents(&self) -> impl Iterator<Item = (&str, &Incident)> {
        self.incidents.iter().flat_map(|(g, list)| list.iter().map(move |i| (g.as_str(), i)))
    }

    /// Merges an incident that a peer or an earlier process remembers. The same incident here
    /// gains its topology, alertnames and notified alerts, the earlier opening, the later end, a
    /// notification and the recurrence that stands (`Recurrence::supersedes`); one not held here
    /// opens under its number, unless an incident here shares its topology (that one, which may
    /// already have been notified, keeps its number). One that has closed by `now` is kept for its
    /// recurrences until `recurrence_window` after its close, unless a later occurrence of its chain
    /// is known (`History::remember`). True when anything changed.
    pub fn merge_incident(&mut self, m: &IncidentMemory, now: Timestamp) -> bool {
        let (window, rw) = (self.cfg.window, self.cfg.recurrence_window);
        let topo: BTreeSet<(String, String)> = m.topology.iter().cloned().collect();
        let notified = self.notified.get_mut().unwrap_or_else(|e| e.into_inner());
        let list = self.incidents.entry(m.route_group.clone()).or_default();
        let history = self.history.entry(m.route_group.clone()).or_default();
        if let Some(i) = list.iter_mut().find(|i| i.id == m.id) {
            let before = (i.topology.len(), i.opened_at, i.until, i.ack.clone(), i.names.len(), i.paged);
            i.topology.extend(topo);
            i.opened_at = i.opened_at.min(Timestamp(m.opened_at));
            i.until = i.until.max(Timestamp(m.until));
            i.ack = crate::memory::Acknowledgement::first(i.ack.take(), m.ack.clone());
            i.names.extend(m.names.iter().cloned());
            i.paged |= m.paged || m.notified.is_some();
            let mut changed = before != (i.topology.len(), i.opened_at, i.until, i.ack.clone(), i.names.len(), i.paged);
            if let Some(r) = m.recurrence.as_ref().map(Recurrence::from_memory)
                && i.recurrence.as_ref().is_none_or(|held| r.supersedes(held))
            {
                history.supersede(&i.origin, r.since, r.occurrence);
                i.recurrence = Some(r);
                changed = true;
            }
            let fps = notified.entry(m.id).or_default();
            let n = fps.len();
            fps.extend(m.alerts_notified.iter().copied());
            return changed || fps.len() != n;
        }
        if topo.is_empty() {
            return false;
        }
        if !self.by_content {
            // Its number is taken, even if no notification (and so no history row) recorded it.
            self.next_id = self.next_id.max(m.id.saturating_add(1));
        }
        let inc = Incident::from_memory(m);
        if now >= Timestamp(m.until) + window {
            let closed = inc.closed(window, m.alerts_notified.iter().copied().collect());
            let (origin, since, occurrence) = (&closed.origin, closed.since, closed.occurrence);
            let recurred = list.iter().any(|i| {
                let (o, s, n) = i.chain();
                o == origin && s == since && n > occurrence
            });
            if rw.is_zero() || now >= closed.closed_at + rw || recurred {
                return false;
            }
            return history.remember(closed);
        }
        if list.iter().any(|i| !i.topology.is_disjoint(&inc.topology)) {
            return false;
        }
        let (origin, since, occurrence) = inc.chain();
        history.supersede(origin, since, occurrence);
        notified.entry(m.id).or_default().extend(m.alerts_notified.iter().copied());
        list.push(inc);
        true
    }

    /// Incident `id` of `group` as the engine's memory keeps it (`crate::memory`), with the first
    /// notification and the escalations done that the engine's escalator holds. It expires
    /// `recurrence_window` after the incident would close, unless its alerts keep it open.
    pub fn memory(
        &self,
        group: &str,
        id: u64,
        notified: Option<(String, i64)>,
        escalated: Vec<usize>,
    ) -> Option<IncidentMemory> {
        let i = self.incident(group, id)?;
        let until = i.latest_end();
        let alerts_notified = {
            let n = self.notified.lock().unwrap_or_else(|e| e.into_inner());
            n.get(&id).map(|fps| fps.iter().take(MAX_NOTIFIED).copied().collect()).unwrap_or_default()
        };
        Some(IncidentMemory {
            v: crate::memory::FORMAT_VERSION,
            route_group: group.to_string(),
            id,
            origin: i.origin.clone(),
            opened_at: i.opened_at.0,
            topology: i.topology.iter().cloned().collect(),
            until: until.0,
            notified,
            ack: i.ack.clone(),
            escalated,
            expires_at: (until + self.cfg.window + self.cfg.recurrence_window).0,
            names: i.names.iter().cloned().collect(),
            alerts_notified,
            paged: i.paged,
            recurrence: i.recurrence.as_ref().map(Recurrence::to_memory),
        })
    }

    /// Records the acknowledgement of incident `id` (the first one stands). False when no open
    /// incident has that number.
    pub fn acknowledge(&mut self, id: u64, ack: crate::memory::Acknowledgement) -> bool {
        let Some(i) = self.incidents.values_mut().flat_map(|l| l.iter_mut()).find(|i| i.id == id) else {
            return false;
        };
        i.ack = crate::memory::Acknowledgement::first(i.ack.take(), Some(ack));
        true
    }

    /// Notes that incident `id` of `group` was remembered as it is now.
    pub fn remembered(&mut self, group: &str, id: u64) {
        if let Some(i) = self.incidents.get_mut(group).and_then(|l| l.iter_mut().find(|i| i.id == id)) {
            i.remembered = i.latest_end();
            i.remembered_names = i.names.len();
        }
    }

    /// Whether incident `id` of `group` should be remembered again: its alerts now end more than a
    /// quarter of the correlation window after what was last remembered, or it has an alertname
    /// more. Alerts that keep firing push their ends forward at every resend; a replica or a restart
    /// that read an end older than the window would take the incident for closed, and open another
    /// for its next alert. An alertname it was not remembered with would not be recognised in a
    /// recurrence after a restart.
    pub fn stale(&self, group: &str, id: u64) -> bool {
        self.incident(group, id)
            .is_some_and(|i| i.latest_end() > i.remembered + self.cfg.window / 4 || i.names.len() != i.remembered_names)
    }

    /// How many new alerts the next notification for `origin` needs at `now`.
    pub fn required_burst(&self, origin: &str, now: Timestamp) -> usize {
        let recent =
            self.sent.get(origin).map_or(0, |q| q.iter().filter(|&&t| now - t < self.cfg.backoff_window).count());
        1 + recent / self.cfg.backoff_step as usize
    }

    /// The probable cause among `alerts` (firing ones preferred): the first rule, in rank order, that
    /// some alert matches; ties go to the earliest alert.
    pub fn probable_cause<'a>(&self, alerts: &'a [Alert], now: Timestamp) -> Option<(&str, &'a Alert)> {
        let firing: Vec<&Alert> = alerts.iter().filter(|a| !a.resolved_at(now)).collect();
        let pool: Vec<&Alert> = if firing.is_empty() { alerts.iter().collect() } else { firing };
        for rule in &self.cfg.causes {
            let best = pool
                .iter()
                .filter(|a| rule.matchers.iter().all(|m| m.matches(a.labels.get(&m.name).unwrap_or(""))))
                .min_by_key(|a| a.starts_at);
            if let Some(a) = best {
                return Some((rule.name.as_str(), a));
            }
        }
        None
    }

    /// Drops closed incidents and old history.
    pub fn gc(&mut self, now: Timestamp) {
        let (cfg, history) = (&self.cfg, &mut self.history);
        let notified = self.notified.get_mut().unwrap_or_else(|e| e.into_inner());
        self.incidents.retain(|group, list| {
            close(list, history.entry(group.clone()).or_default(), notified, now, cfg);
            !list.is_empty()
        });
        let rw = self.cfg.recurrence_window;
        self.history.retain(|_, h| {
            h.expire(now, rw);
            !h.is_empty()
        });
        let bw = self.cfg.backoff_window;
        self.sent.retain(|_, q| q.back().is_some_and(|&t| now - t < bw));
        self.census.retain(|_, c| {
            c.expire(now - bw, now);
            !c.is_empty()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argus_model::Labels;

    fn alert(pairs: &[(&str, &str)], ends: i64) -> Alert {
        Alert {
            labels: Labels::from_pairs(pairs.iter().copied()),
            annotations: Labels::default(),
            starts_at: Timestamp(0),
            ends_at: Timestamp(ends),
            generator_url: String::new(),
            updated_at: Timestamp(0),
            timeout: false,
        }
    }

    #[test]
    fn default_causes_compile() {
        for c in default_causes() {
            assert_eq!(c.matchers[0].op, MatchOp::RegexMatch, "{}", c.name);
        }
    }

    #[test]
    fn shared_topology_joins_and_cause_ranks() {
        let mut c = Correlator::new(CorrelationConfig::default());
        let far = 10_000_000;
        let util = alert(&[("alertname", "GpuUtilLow"), ("host", "a"), ("job", "j1")], far);
        let nccl = alert(&[("alertname", "NcclTimeout"), ("host", "b"), ("job", "j1")], far);
        let down = alert(&[("alertname", "HostDown"), ("host", "b")], far);
        let other = alert(&[("alertname", "HostDown"), ("host", "c")], far);
        let i1 = c.assign("g", &util, Timestamp(0));
        assert_eq!(c.assign("g", &nccl, Timestamp(1)), i1, "same job");
        assert_eq!(c.assign("g", &down, Timestamp(2)), i1, "same host as a member");
        assert_ne!(c.assign("g", &other, Timestamp(3)), i1);
        assert_eq!(c.assign("g", &alert(&[("alertname", "X")], far), Timestamp(3)), None);
        let all = [util, nccl, down];
        let (cause, a) = c.probable_cause(&all, Timestamp(5)).unwrap();
        assert_eq!((cause, a.labels.get("alertname")), ("node_down", Some("HostDown")));
    }

    #[test]
    fn a_value_most_of_the_groups_hosts_share_does_not_merge_them() {
        let mut c = Correlator::new(CorrelationConfig::default());
        let far = 10_000_000;
        let on = |h: &str| alert(&[("alertname", "DiskFull"), ("host", h), ("job", "node-exporter")], far);
        let a = c.assign("g", &on("a"), Timestamp(0));
        // Two hosts of one job are as likely one job's trouble as a shared exporter's.
        assert_eq!(c.assign("g", &on("b"), Timestamp(1)), a, "two hosts sharing a job correlate");
        let third = c.assign("g", &on("c"), Timestamp(2));
        let fourth = c.assign("g", &on("d"), Timestamp(3));
        assert_ne!(third, a, "the third of three hosts: the job is broad");
        assert_ne!(fourth, a);
        assert_ne!(fourth, third);
        assert_eq!(c.assign("g", &on("c"), Timestamp(4)), third, "its host still joins its own incident");
        assert_eq!(c.assign("g", &alert(&[("alertname", "X"), ("job", "node-exporter")], far), Timestamp(5)), None);
        // Another route group keeps its own census.
        let other = c.assign("h", &on("a"), Timestamp(6));
        assert_eq!(c.assign("h", &on("b"), Timestamp(7)), other);
    }

    #[test]
    fn a_training_job_on_few_of_the_groups_hosts_still_correlates() {
        let mut c = Correlator::new(CorrelationConfig::default());
        let far = 10_000_000;
        let hosts = ["h1", "h2", "h3", "h4", "h5", "h6", "h7"];
        for (i, h) in hosts.iter().enumerate() {
            c.assign(
                "g",
                &alert(&[("alertname", "DiskFull"), ("host", h), ("job", "node-exporter")], far),
                Timestamp(i as i64),
            );
        }
        let nccl = |h: &str| alert(&[("alertname", "NcclTimeout"), ("host", h), ("job", "train-7")], far);
        let first = c.assign("g", &nccl("h1"), Timestamp(100));
        assert_eq!(c.assign("g", &nccl("h2"), Timestamp(101)), first);
        assert_eq!(c.assign("g", &nccl("h3"), Timestamp(102)), first, "3 of 7 hosts: not broad");
        let h5 = c.assign(
            "g",
            &alert(&[("alertname", "DiskFull"), ("host", "h5"), ("job", "node-exporter")], far),
            Timestamp(103),
        );
        assert_ne!(h5, first, "node-exporter, on all seven hosts, joins nothing across hosts");
    }

    #[test]
    fn hosts_leave_the_census_after_the_backoff_window() {
        let cfg = CorrelationConfig { window: Duration::from_secs(60), ..CorrelationConfig::default() };
        let bw = cfg.backoff_window;
        let mut c = Correlator::new(cfg);
        let on = |h: &str, ends: i64| alert(&[("alertname", "DiskFull"), ("host", h), ("job", "node-exporter")], ends);
        for (i, h) in ["a", "b", "c", "d"].iter().enumerate() {
            c.assign("g", &on(h, 1_000), Timestamp(i as i64));
        }
        // Long after: the old sightings are forgotten, so two hosts sharing the job correlate again.
        let later = Timestamp(0) + bw + Duration::from_secs(120);
        c.gc(later);
        let x = c.assign("g", &on("x", later.0 + 1_000_000), later);
        assert_eq!(c.assign("g", &on("y", later.0 + 1_000_000), later + Duration::from_secs(1)), x);
    }

    #[test]
    fn an_xid_alert_names_the_cause_with_its_code() {
        let c = Correlator::new(CorrelationConfig::default());
        let far = 10_000_000;
        let anomaly = alert(&[("alertname", "AnomalyDetected"), ("host", "a")], far);
        let xid = alert(&[("alertname", "GpuXidHardware"), ("host", "a"), ("xid", "79")], far);
        let all = [anomaly.clone(), xid];
        let (cause, a) = c.probable_cause(&all, Timestamp(5)).unwrap();
        assert_eq!(cause_text(cause, a), "gpu_fault: Xid 79");
        let (cause, a) = c.probable_cause(std::slice::from_ref(&anomaly), Timestamp(5)).unwrap();
        assert_eq!(cause_text(cause, a), "utilization_anomaly", "no Xid, the cause alone");
    }

    #[test]
    fn closed_incident_is_not_rejoined_and_backoff_grows() {
        let mut c = Correlator::new(CorrelationConfig::default());
        let a = alert(&[("alertname", "X"), ("host", "a")], 1000);
        let i1 = c.assign("g", &a, Timestamp(0));
        // Resolved at 1 s; the window is 10 minutes.
        assert_eq!(c.assign("g", &a, Timestamp(500_000)), i1);
        assert_ne!(c.assign("g", &alert(&[("alertname", "X"), ("host", "a")], 9_999_999), Timestamp(700_000)), i1);
        assert_eq!(c.required_burst("host=a", Timestamp(0)), 1);
        c.record_sent("host=a", Timestamp(0));
        c.record_sent("host=a", Timestamp(1000));
        assert_eq!(c.required_burst("host=a", Timestamp(2000)), 2);
        assert_eq!(c.required_burst("host=a", Timestamp(3_601_000)), 1);
    }

    #[test]
    fn notification_times_merge_as_a_union_within_the_backoff_window() {
        let mut c = Correlator::new(CorrelationConfig::default());
        assert!(c.record_sent("host=a", Timestamp(1000)));
        assert!(!c.record_sent("host=a", Timestamp(1000)), "the same notification, heard again");
        assert!(c.merge_sent("host=a", &[Timestamp(500), Timestamp(1000)]), "a peer's earlier one");
        assert!(!c.merge_sent("host=a", &[Timestamp(500)]));
        assert_eq!(c.sent_times("host=a"), [Timestamp(500), Timestamp(1000)]);
        assert_eq!(c.required_burst("host=a", Timestamp(2000)), 2);
        // Older than the window before the latest: dropped, and not news.
        let late = Timestamp(500) + c.cfg.backoff_window;
        assert!(c.merge_sent("host=a", &[late]));
        assert_eq!(c.sent_times("host=a"), [Timestamp(1000), late]);
        assert!(!c.merge_sent("host=a", &[Timestamp(400)]));
    }

    /// What a restart or a replica reads back of closed incidents links the next occurrence as the
    /// process that saw them would, whatever order the items come in; a remembered number is not
    /// given again.
    #[test]
    fn remembered_occurrences_link_the_next_in_any_order() {
        let cfg = CorrelationConfig { recurrence_window: Duration::from_secs(3600), ..CorrelationConfig::default() };
        let disk = |ends: i64| alert(&[("alertname", "DiskFull"), ("host", "a")], ends);
        let mut live = Correlator::new(cfg.clone());
        let first = live.assign("g", &disk(1_000), Timestamp(0)).unwrap();
        let m1 = live.memory("g", first, None, vec![]).unwrap();
        // Closed at 601 s; back at 700 s.
        let second = live.assign("g", &disk(701_000), Timestamp(700_000)).unwrap();
        let m2 = live.memory("g", second, None, vec![]).unwrap();
        let r = m2.recurrence.as_ref().unwrap();
        assert_eq!(
            (r.occurrence, r.of, r.held, m2.names.as_slice()),
            (2, first, 1, ["DiskFull".to_string()].as_slice())
        );
        assert_eq!(m2.expires_at, 701_000 + 600_000 + 3_600_000, "kept for the recurrence window after it closes");

        let later = Timestamp(1_400_000);
        for items in [[&m1, &m2], [&m2, &m1]] {
            let mut c = Correlator::new(cfg.clone());
            for m in items {
                c.merge_incident(m, later);
            }
            let third = c.assign("g", &disk(2_000_000), later).unwrap();
            assert_eq!(third, 3);
            let r = c.incident("g", third).unwrap().recurrence.clone().unwrap();
            assert_eq!((r.occurrence, r.of, r.held), (3, second, 2), "the latest occurrence, both held");
        }
        // Still open when a replica reads it: held there with its recurrence, and the first
        // occurrence, which it recurs, is not kept beside it.
        let mut c = Correlator::new(cfg.clone());
        assert!(c.merge_incident(&m2, Timestamp(710_000)));
        assert!(!c.merge_incident(&m1, Timestamp(710_000)));
        assert_eq!(c.incident("g", second).unwrap().recurrence.as_ref().map(|r| r.occurrence), Some(2));
        // Without a recurrence window a closed incident is not kept.
        let mut c = Correlator::new(CorrelationConfig::default());
        assert!(!c.merge_incident(&m1, later));
    }
}
