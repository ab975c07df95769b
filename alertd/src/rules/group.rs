//! Rule groups evaluated on their interval through a [`StoreBackend`]: each rule's instant query at
//! the evaluation time, recording rules' results and the `ALERTS` / `ALERTS_FOR_STATE` series written
//! back (with stale markers when a series ends), alerts sent into the engine like API v2 posts, and
//! pending `for` state restored from `ALERTS_FOR_STATE` after the first evaluation, as Prometheus
//! does (rules/manager.go `RestoreForState`). A reload keeps the state of every rule it leaves
//! unchanged ([`Groups`], Prometheus' `Group.CopyState`). Each group publishes its status
//! ([`super::status`]) for the rules API.

use super::alerting::{ALERTS_FOR_STATE, AlertingState, Annotated, State};
use super::status::{self, AlertingStatus, GroupStatus, Health, RuleStatus, RulesView, Slot};
use super::template::Prefetched;
use super::{RecordingRule, Rule, RuleGroup};
use crate::alert::PostableAlert;
use crate::clock::{Clock, TokioClock};
pub use crate::config::EvalOptions;
use crate::runner::Shared;
use crate::time::Timestamp;
use argus_model::{Labels, METRIC_NAME, Matcher, Sample};
use argus_store_api::backend::{BackendError, QueryValue, StoreBackend};
use argus_store_api::promql::STALE_NAN_BITS;
use argus_store_api::remote_write::WriteSeries;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

mod metrics;

pub use metrics::{Evaluation, GroupLabel, RULE_METRICS, RuleMetrics};

/// How many rounds of template queries one evaluation runs: each round runs the queries the last
/// one's answers led to (`query` built from a `query` result), so chains deeper than this end in
/// an expansion error rather than stalling the group.
const MAX_QUERY_ROUNDS: usize = 4;

/// Where evaluated alerts go: the engine, as if posted to `/api/v2/alerts`.
pub trait AlertSink: Send + Sync {
    fn send(&self, now: Timestamp, alerts: Vec<PostableAlert>);

    /// Told, each time a [`Groups`] (re)starts its groups, where their statuses can be read, so
    /// that whoever shows the alerts can show the rules that raise them too. The view follows
    /// later reloads by itself. Ignored by default.
    fn running(&self, _groups: &RulesView) {}
}

impl AlertSink for Shared {
    fn send(&self, now: Timestamp, alerts: Vec<PostableAlert>) {
        let result = {
            let mut engine = self.lock();
            engine.advance(now);
            engine.post(now, alerts)
        };
        if let Err(error) = result {
            tracing::warn!(%error, "Rule alerts refused");
        }
        self.changed();
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("query failed: {0}")]
    Query(#[from] BackendError),
    #[error("query answered a {0}, not an instant vector or a scalar")]
    NotVector(&'static str),
    #[error(transparent)]
    Template(#[from] super::template::TemplateError),
}

enum RuleState {
    Alerting(Box<AlertingState>),
    Recording(RecordingRule),
}

impl RuleState {
    /// Whether `self` and `other` are the same rule: every field of its definition equal.
    fn same_rule(&self, other: &RuleState) -> bool {
        match (self, other) {
            (RuleState::Alerting(a), RuleState::Alerting(b)) => a.rule == b.rule,
            (RuleState::Recording(a), RuleState::Recording(b)) => a == b,
            _ => false,
        }
    }
}

/// A group's state, locked by its task while it evaluates.
type SharedGroup = Arc<tokio::sync::Mutex<GroupState>>;

/// A rule's last evaluation: when, how long it took, and its error.
#[derive(Debug, Clone, Default)]
struct RuleHealth {
    at: Option<Timestamp>,
    took: Duration,
    error: Option<String>,
}

/// A group's rules and what each wrote at its last evaluation (to mark ended series stale).
pub struct GroupState {
    pub file: String,
    pub name: String,
    pub interval: Duration,
    rules: Vec<(RuleState, HashSet<Labels>)>,
    /// Each rule's last evaluation, in rule order (for the rules API).
    health: Vec<RuleHealth>,
    last_evaluation: Option<Timestamp>,
    evaluation_time: Duration,
    /// Samples the rules wrote at the last evaluation.
    last_samples: usize,
    /// Series written by rules a reload removed or changed: marked stale at the next evaluation.
    stale: HashSet<Labels>,
    evaluated: bool,
    /// The state of the group this one replaces at a reload, copied in before its first evaluation.
    inherit: Option<SharedGroup>,
}

impl GroupState {
    pub fn new(group: RuleGroup) -> Self {
        let rules = group
            .rules
            .into_iter()
            .map(|r| match r {
                Rule::Alerting(a) => (RuleState::Alerting(Box::new(AlertingState::new(a))), HashSet::new()),
                Rule::Recording(r) => (RuleState::Recording(r), HashSet::new()),
            })
            .collect::<Vec<_>>();
        GroupState {
            file: group.file,
            name: group.name,
            interval: group.interval,
            health: vec![RuleHealth::default(); rules.len()],
            last_evaluation: None,
            evaluation_time: Duration::ZERO,
            last_samples: 0,
            rules,
            stale: HashSet::new(),
            evaluated: false,
            inherit: None,
        }
    }

    /// Takes over the state of `old`, the same group before a reload, as Prometheus'
    /// `Group.CopyState` does: each rule whose definition is unchanged (name, expr, `for`,
    /// `keep_firing_for`, labels, annotations) keeps its alerts with their `activeAt`, and the
    /// series it wrote; duplicates match first to first. The series of old rules left unmatched are
    /// marked stale at the next evaluation; their firing alerts are no longer sent, so they resolve
    /// at their `endsAt`. Rules without a match start fresh, without reading `ALERTS_FOR_STATE`
    /// (that is for a process start only).
    pub fn copy_state(&mut self, old: &mut GroupState) {
        let mut taken = vec![false; old.rules.len()];
        for (rule, written) in &mut self.rules {
            let found = old.rules.iter().enumerate().position(|(i, (o, _))| !taken[i] && o.same_rule(rule));
            match found {
                Some(i) => {
                    taken[i] = true;
                    let (o, w) = &mut old.rules[i];
                    *written = std::mem::take(w);
                    if let (RuleState::Alerting(new), RuleState::Alerting(o)) = (&mut *rule, o) {
                        std::mem::swap(new, o);
                    }
                }
                None => {
                    if let RuleState::Alerting(a) = rule {
                        a.restored = true;
                    }
                }
            }
        }
        self.stale = std::mem::take(&mut old.stale);
        for (i, (_, w)) in old.rules.iter_mut().enumerate() {
            if !taken[i] {
                self.stale.extend(w.drain());
            }
        }
        // A group replaced before its first evaluation still restores its kept rules at its first.
        self.evaluated = old.evaluated;
        self.last_evaluation = old.last_evaluation;
        self.evaluation_time = old.evaluation_time;
    }

    /// Copies in the state of the group this one replaced at a reload, if any, once: a group
    /// replaced again before it ever ran passes on the state it inherited.
    fn inherit(&mut self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            let Some(from) = self.inherit.take() else { return };
            let mut old = from.lock().await;
            old.inherit().await;
            self.copy_state(&mut old);
        })
    }

    /// Marks the group as having restored its `for` state without reading `ALERTS_FOR_STATE`, so
    /// its alerting rules write `ALERTS` from their first evaluation: for a group evaluated over a
    /// store that holds no earlier run of it (`argus test rules`, as promtool's `SetRestored(true)`).
    pub fn skip_restore(&mut self) {
        self.evaluated = true;
        for (r, _) in &mut self.rules {
            if let RuleState::Alerting(a) = r {
                a.restored = true;
            }
        }
    }

    /// The alerting rules' states, for tests and the API.
    pub fn alerting(&self) -> impl Iterator<Item = &AlertingState> {
        self.rules.iter().filter_map(|(r, _)| match r {
            RuleState::Alerting(a) => Some(&**a),
            RuleState::Recording(_) => None,
        })
    }

    /// The group's status as the rules API shows it.
    pub fn status(&self) -> GroupStatus {
        let rules = self
            .rules
            .iter()
            .zip(&self.health)
            .map(|((rule, _), h)| {
                let health = match (&h.at, &h.error) {
                    (None, _) => Health::Unknown,
                    (Some(_), Some(_)) => Health::Err,
                    (Some(_), None) => Health::Ok,
                };
                let (name, query, labels, alerting) = match rule {
                    RuleState::Alerting(a) => {
                        let alerts = a.alerts().into_iter().filter(|x| x.state != State::Inactive).cloned().collect();
                        let alerting = AlertingStatus {
                            hold: a.rule.hold,
                            keep_firing_for: a.rule.keep_firing_for,
                            annotations: a.rule.annotations.clone(),
                            alerts,
                        };
                        (&a.rule.name, &a.rule.expr, &a.rule.labels, Some(alerting))
                    }
                    RuleState::Recording(r) => (&r.record, &r.expr, &r.labels, None),
                };
                RuleStatus {
                    name: name.clone(),
                    query: query.clone(),
                    labels: labels.clone(),
                    health,
                    last_error: h.error.clone(),
                    last_evaluation: h.at,
                    evaluation_time: h.took,
                    alerting,
                }
            })
            .collect();
        GroupStatus {
            file: self.file.clone(),
            name: self.name.clone(),
            interval: self.interval,
            last_evaluation: self.last_evaluation,
            evaluation_time: self.evaluation_time,
            rules,
        }
    }
}

/// Evaluates groups against a backend and sends their alerts to a sink.
pub struct Evaluator {
    pub backend: Arc<dyn StoreBackend>,
    pub sink: Arc<dyn AlertSink>,
    pub opts: EvalOptions,
}

impl Evaluator {
    /// One evaluation of every rule of `g` at `ts`. A failing rule is logged and counted, and the
    /// others still run.
    pub async fn eval(&self, g: &mut GroupState, ts: Timestamp) {
        let failed = self.eval_rules(g, ts).await;
        let durations: Vec<Duration> = g.health.iter().map(|h| h.took).collect();
        RULE_METRICS.evaluated(Evaluation {
            group: &GroupLabel::new(&g.file, &g.name),
            rule_durations: &durations,
            failures: failed.len(),
            samples: g.last_samples,
            took: g.evaluation_time,
            at_ms: ts.0,
        });
        for (rule, error) in failed {
            tracing::warn!(group = %g.name, %rule, %error, "Rule evaluation failed");
        }
    }

    /// [`Evaluator::eval`], answering the name and error of each rule that failed, in rule order,
    /// instead of logging them (`argus test rules` reports them as promtool does).
    pub async fn eval_rules(&self, g: &mut GroupState, ts: Timestamp) -> Vec<(String, EvalError)> {
        let first = !g.evaluated;
        g.evaluated = true;
        let started = std::time::Instant::now();
        let mut failed = Vec::new();
        let mut samples = 0;
        for ((rule, written), health) in g.rules.iter_mut().zip(&mut g.health) {
            let rule_started = std::time::Instant::now();
            let result = self.eval_rule(rule, written, ts, first, g.interval).await.map(|n| samples += n);
            *health = RuleHealth {
                at: Some(ts),
                took: rule_started.elapsed(),
                error: result.as_ref().err().map(ToString::to_string),
            };
            if let Err(error) = result {
                let name = match rule {
                    RuleState::Alerting(a) => a.rule.name.clone(),
                    RuleState::Recording(r) => r.record.clone(),
                };
                failed.push((name, error));
            }
        }
        g.last_evaluation = Some(ts);
        g.evaluation_time = started.elapsed();
        g.last_samples = samples;
        if !g.stale.is_empty() {
            // Series of removed or changed rules that no rule wrote again this time end here.
            let mut gone = std::mem::take(&mut g.stale);
            gone.retain(|l| !g.rules.iter().any(|(_, w)| w.contains(l)));
            if let Err(error) = self.write(Vec::new(), &mut gone, ts).await {
                tracing::warn!(group = %g.name, %error, "Stale markers of removed rules not written");
            }
        }
        failed
    }

    async fn eval_rule(
        &self,
        rule: &mut RuleState,
        written: &mut HashSet<Labels>,
        ts: Timestamp,
        first: bool,
        interval: Duration,
    ) -> Result<usize, EvalError> {
        let out = match rule {
            RuleState::Recording(r) => instant_vector(self.backend.query_instant(&r.expr, ts.0).await?)?
                .into_iter()
                .map(|(mut l, v)| {
                    l.set(METRIC_NAME, &r.record);
                    for (k, val) in &r.labels {
                        l.set(k, val);
                    }
                    (l, v)
                })
                .collect(),
            RuleState::Alerting(a) => {
                if a.external_labels != self.opts.external_labels {
                    a.external_labels = self.opts.external_labels.clone();
                }
                if a.external_url != self.opts.external_url {
                    a.external_url = self.opts.external_url.clone();
                }
                let result: Vec<Annotated> = match a.rule.forecast.clone() {
                    Some(spec) => {
                        let selector = spec.selector();
                        let forecasts = instant_vector(self.backend.query_instant(&selector, ts.0).await?)?;
                        let written =
                            instant_vector(self.backend.query_instant(&format!("timestamp({selector})"), ts.0).await?)?;
                        let limits = instant_vector(self.backend.query_instant(&spec.limit, ts.0).await?)?;
                        spec.crossings(&forecasts, &written, &limits)
                    }
                    None => instant_vector(self.backend.query_instant(&a.rule.expr, ts.0).await?)?
                        .into_iter()
                        .map(|(l, v)| (l, v, Vec::new()))
                        .collect(),
                };
                let mut answers = Prefetched::default();
                if a.uses_query() {
                    self.template_queries(a, &result, &mut answers, ts).await;
                }
                let out = a.eval_with(ts, &result, &mut answers)?;
                if first && !a.restored {
                    self.restore(a, ts).await?;
                }
                let mut alerts = a.to_send(ts, self.opts.resend_delay, interval);
                // As Prometheus' notifier: external labels go on each alert sent, where it lacks
                // them, never on the rule's own alerts (nor `ALERTS`).
                for alert in &mut alerts {
                    for l in self.opts.external_labels.iter() {
                        alert.labels.entry(l.name.clone()).or_insert_with(|| l.value.clone());
                    }
                }
                if !alerts.is_empty() {
                    self.sink.send(ts, alerts);
                }
                out
            }
        };
        let samples = out.len();
        self.write(out, written, ts).await?;
        Ok(samples)
    }

    /// Runs the queries the rule's templates make for this result, at the evaluation time, through
    /// the group's backend, into `answers`; a query built from another's answer is found at the
    /// next round.
    async fn template_queries(&self, a: &AlertingState, result: &[Annotated], answers: &mut Prefetched, ts: Timestamp) {
        for _ in 0..MAX_QUERY_ROUNDS {
            let missing = a.template_queries(result, answers);
            if missing.is_empty() {
                return;
            }
            for q in missing {
                let answer = match self.backend.query_instant(&q, ts.0).await {
                    Ok(v) => instant_vector(v).map_err(|_| "rule result is not a vector or scalar".to_string()),
                    Err(e) => Err(e.to_string()),
                };
                answers.insert(q, answer);
            }
        }
    }

    /// Writes this evaluation's samples, and a stale marker for each series written last time only.
    async fn write(
        &self,
        out: Vec<(Labels, f64)>,
        written: &mut HashSet<Labels>,
        ts: Timestamp,
    ) -> Result<(), EvalError> {
        let now: HashSet<Labels> = out.iter().map(|(l, _)| l.clone()).collect();
        let stale = f64::from_bits(STALE_NAN_BITS);
        let mut series: Vec<WriteSeries> =
            out.into_iter().map(|(labels, v)| WriteSeries { labels, samples: vec![Sample::new(ts.0, v)] }).collect();
        series.extend(
            written
                .difference(&now)
                .map(|l| WriteSeries { labels: l.clone(), samples: vec![Sample::new(ts.0, stale)] }),
        );
        *written = now;
        if series.is_empty() {
            return Ok(());
        }
        self.backend.write(series).await?;
        Ok(())
    }

    /// Reads the rule's `ALERTS_FOR_STATE` series of the last `outage_tolerance` and restores from them.
    async fn restore(&self, a: &mut AlertingState, ts: Timestamp) -> Result<(), EvalError> {
        let matchers = [Matcher::eq(METRIC_NAME, ALERTS_FOR_STATE), Matcher::eq("alertname", &a.rule.name)];
        let start = ts - self.opts.outage_tolerance;
        let found = match self.backend.select(&matchers, start.0, ts.0).await {
            Ok(f) => f,
            Err(e) => {
                // Evaluation goes on unrestored rather than never writing ALERTS.
                a.restore(ts, &[], self.opts.for_grace_period);
                return Err(e.into());
            }
        };
        let last: Vec<(Labels, i64, f64)> =
            found.iter().filter_map(|s| s.samples.last().map(|x| (s.labels.without_name(), x.t, x.v))).collect();
        a.restore(ts, &last, self.opts.for_grace_period);
        Ok(())
    }

    /// Evaluates `group` every interval on `clock`, forever (abort the task to stop it).
    pub async fn run(self: Arc<Self>, group: RuleGroup, clock: TokioClock) {
        let g = GroupState::new(group);
        let slot = Arc::new(std::sync::Mutex::new(g.status()));
        self.run_state(Arc::new(tokio::sync::Mutex::new(g)), clock, slot).await
    }

    /// Evaluates the group in `state` every interval, after taking over the state it inherits,
    /// publishing its status into `slot` after each.
    async fn run_state(self: Arc<Self>, state: SharedGroup, clock: TokioClock, slot: Slot) {
        let (interval, label) = {
            let mut g = state.lock().await;
            g.inherit().await;
            status::publish(&slot, g.status());
            let label = GroupLabel::new(&g.file, &g.name);
            RULE_METRICS.started(&label, g.rules.len(), g.interval);
            (g.interval, label)
        };
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        // The iteration due last, as Prometheus' group loop counts missed ones: a tick that comes
        // more than one interval after it means the ones in between were skipped while the last
        // evaluation ran.
        let mut due: Option<tokio::time::Instant> = None;
        loop {
            let at = tick.tick().await;
            let now = tokio::time::Instant::now();
            match &mut due {
                None => due = Some(at),
                Some(due) => {
                    let ticks = u32::try_from((now - *due).as_nanos() / interval.as_nanos().max(1)).unwrap_or(u32::MAX);
                    if ticks > 1 {
                        RULE_METRICS.missed(&label, u64::from(ticks - 1));
                    }
                    *due += interval * ticks.max(1);
                }
            }
            let mut g = state.lock().await;
            self.eval(&mut g, clock.now()).await;
            // Published under the group's lock, so a reload's successor publishes after it.
            status::publish(&slot, g.status());
        }
    }
}

/// The running rule groups' states, kept across reloads: a group of the same file and name as a
/// running one takes over the state of its unchanged rules ([`GroupState::copy_state`]).
#[derive(Default)]
pub struct Groups {
    states: std::sync::Mutex<HashMap<(String, String), SharedGroup>>,
    /// Set by the first `spawn`: groups started later (by a reload) without a namesake read no
    /// `ALERTS_FOR_STATE`, as in Prometheus, where only the first load after a start restores.
    started: std::sync::atomic::AtomicBool,
    view: RulesView,
}

impl Groups {
    /// Starts one task per group, each taking over the state its namesake had. Call it after
    /// aborting the tasks it started before (a reload): an aborted group's last evaluation finishes
    /// before its state is copied.
    pub fn spawn(
        &self,
        groups: Vec<RuleGroup>,
        evaluator: Arc<Evaluator>,
        clock: TokioClock,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let mut states = self.states.lock().unwrap_or_else(|e| e.into_inner());
        let mut old = std::mem::take(&mut *states);
        let reload = self.started.swap(true, std::sync::atomic::Ordering::Relaxed);
        let mut tasks = Vec::with_capacity(groups.len());
        let mut slots = Vec::with_capacity(groups.len());
        for group in groups {
            let key = (group.file.clone(), group.name.clone());
            let mut g = GroupState::new(group);
            g.inherit = old.remove(&key);
            if reload && g.inherit.is_none() {
                g.evaluated = true;
                for (r, _) in &mut g.rules {
                    if let RuleState::Alerting(a) = r {
                        a.restored = true;
                    }
                }
            }
            let slot = Arc::new(std::sync::Mutex::new(g.status()));
            slots.push(slot.clone());
            let g = Arc::new(tokio::sync::Mutex::new(g));
            states.insert(key, g.clone());
            tasks.push(tokio::spawn(evaluator.clone().run_state(g, clock.clone(), slot)));
        }
        for (file, name) in old.keys() {
            RULE_METRICS.forget(&GroupLabel::new(file, name));
        }
        self.view.replace(slots);
        evaluator.sink.running(&self.view);
        tasks
    }

    /// The statuses of the groups it runs, following every later `spawn`.
    pub fn view(&self) -> RulesView {
        self.view.clone()
    }
}

/// An instant query's answer as samples: a scalar is one sample without labels, as Prometheus'
/// rule query function makes it.
fn instant_vector(v: QueryValue) -> Result<Vec<(Labels, f64)>, EvalError> {
    match v {
        QueryValue::Vector(v) => Ok(v.into_iter().map(|(l, s)| (Labels::clone(&l), s.v)).collect()),
        QueryValue::Scalar(s) => Ok(vec![(Labels::default(), s.v)]),
        QueryValue::Matrix(_) => Err(EvalError::NotVector("range vector")),
        QueryValue::String(..) => Err(EvalError::NotVector("string")),
    }
}

/// An embedded store in a temporary directory, and a whole second `minutes` ago to write from
/// (the store keeps recent samples only).
#[cfg(test)]
pub(crate) fn embedded_for_tests(minutes: i64) -> (tempfile::TempDir, Arc<dyn StoreBackend>, i64) {
    use argus_store::{Db, Options, backend::Embedded, query::QueryLimits};
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Options::new(dir.path())).unwrap());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    (dir, Arc::new(Embedded::new(db, QueryLimits::default())), now / 1000 * 1000 - minutes * 60_000)
}

#[cfg(test)]
mod tests;
