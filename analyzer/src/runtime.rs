//! The analyzer as it runs inside `argus serve` (or alone): every rule's query evaluated on its step
//! through the [`StoreBackend`], each series fed to its detectors, peers compared, the detectors'
//! verdicts combined by [`crate::detect::ensemble`], and the results written back as series
//! (`argus_anomaly_score`, `argus_yhat*`). Anomalies that persist become Alertmanager v2 alerts.
//!
//! Steps are aligned to the rule's interval. A restart resumes from the saved detector state and
//! catches up the steps it missed (at most `max_catchup`); a new series is warmed on `warmup` of
//! history before it may alert. Detectors see each series sampled at the rule's step.

pub mod alerts;
pub mod api;
pub mod config;
pub mod detectors;
pub mod forecasts;
mod metrics;
pub mod multivariate;
mod persist;

pub use alerts::{Alert, AlertOut, HttpAlertOut};
pub use config::{Config, ConfigError, Valid};
pub use forecasts::{ForecastBoard, Forecasting};
pub use metrics::Metrics;
pub use multivariate::Multivariate;

use crate::detect::peer::{self, PeerParams};
use crate::detect::{Verdict, ensemble};
use alerts::Firing;
use argus_model::{Labels, METRIC_NAME, Sample};
use argus_store_api::backend::{QueryValue, StoreBackend};
use argus_store_api::remote_write::WriteSeries;
use config::Rule;
use detectors::Univariate;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The most steps asked of the store in one range query.
const CHUNK_STEPS: i64 = 720;

/// Result series written to the store at a time. Every watched series yields up to six result series
/// (scores, expected value and band), so a fleet's tick built as one write held hundreds of thousands of
/// label sets at once, and the allocator kept that peak as resident memory; batches bound it.
pub const WRITE_BATCH: usize = 8192;

/// A series' latest verdicts, as `/api/v1/anomalies` shows them.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Finding {
    pub rule: String,
    pub metric: String,
    pub labels: BTreeMap<String, String>,
    /// Milliseconds.
    pub time: i64,
    /// The sample's value; null when it is not finite (JSON has no NaN).
    #[schema(value_type = Option<f64>)]
    pub value: f64,
    /// The ensemble's score (> 1 anomalous).
    pub score: f64,
    /// Each detector's own score (null when not finite).
    #[schema(value_type = BTreeMap<String, Option<f64>>)]
    pub detectors: BTreeMap<String, f64>,
    pub expected: Option<f64>,
    /// `[low, high]`: the band of expected values.
    #[schema(value_type = Option<Vec<Option<f64>>>, min_items = 2, max_items = 2)]
    pub band: Option<(f64, f64)>,
    /// Since when (ms) the alert has fired, if it does.
    pub firing_since: Option<i64>,
}

/// What the HTTP API reads: the findings of the last evaluation of every rule.
#[derive(Default)]
pub struct Board {
    pub by_rule: parking_lot::RwLock<BTreeMap<String, Vec<Finding>>>,
}

pub(crate) struct Tracked {
    pub detectors: Vec<Box<dyn Univariate>>,
    /// Recent (step, value) pairs for the peer comparison.
    pub window: VecDeque<(i64, f64)>,
    pub last_seen: i64,
    /// Values before this time are read but not learned from: the series' first values, computed
    /// over less than the query's longest range window (see [`Rule::settle`]). `None` until the
    /// series' first value arrives; a series restored from a checkpoint has settled long ago.
    pub settled_from: Option<i64>,
    pub anomalous_steps: u32,
    pub normal_steps: u32,
    pub firing: Option<Firing>,
}

pub(crate) struct RuleState {
    pub rule: Rule,
    pub last_step: Option<i64>,
    pub series: HashMap<Labels, Tracked>,
}

/// The running analyzer.
pub struct Analyzer {
    cfg: Valid,
    backend: Arc<dyn StoreBackend>,
    out: Arc<dyn AlertOut>,
    state_dir: Option<PathBuf>,
    rules: Vec<RuleState>,
    board: Arc<Board>,
    metrics: Metrics,
    last_checkpoint: i64,
    forecasting: Forecasting,
    multivariate: Multivariate,
}

impl Analyzer {
    /// Builds the analyzer, restoring each rule's saved state from `state_dir` (where it is kept).
    pub fn new(
        cfg: Valid,
        backend: Arc<dyn StoreBackend>,
        out: Arc<dyn AlertOut>,
        state_dir: Option<PathBuf>,
        metrics: Metrics,
    ) -> Analyzer {
        let rules = cfg
            .rules
            .iter()
            .map(|rule| {
                let restored = state_dir.as_deref().and_then(|d| persist::load(d, rule));
                match restored {
                    Some((last_step, series)) => RuleState { rule: rule.clone(), last_step, series },
                    None => RuleState { rule: rule.clone(), last_step: None, series: HashMap::new() },
                }
            })
            .collect();
        let forecasting = Forecasting::new(
            &cfg.forecasts,
            &cfg.pools,
            backend.clone(),
            state_dir.clone(),
            metrics.clone(),
            cfg.forget_after,
        );
        let multivariate = Multivariate::new(&cfg, backend.clone(), state_dir.clone(), metrics.clone());
        Analyzer {
            cfg,
            backend,
            out,
            state_dir,
            rules,
            board: Arc::default(),
            metrics,
            last_checkpoint: 0,
            forecasting,
            multivariate,
        }
    }

    pub fn board(&self) -> Arc<Board> {
        self.board.clone()
    }

    /// Hands each pool's capacity plan to `out` on its first plan and when its recommended capacity
    /// changes (alertd's scheduler receivers).
    pub fn with_capacity_out(mut self, out: Arc<dyn forecasts::push::CapacityOut>) -> Analyzer {
        self.forecasting.push_capacity_to(out);
        self
    }

    /// What `/api/v1/forecasts` and `/api/v1/capacity` read.
    pub fn forecast_board(&self) -> Arc<ForecastBoard> {
        self.forecasting.board()
    }

    /// Entities with a trained multivariate model, per `[[analyzer.multivariate]]` rule.
    pub fn multivariate_models(&self) -> BTreeMap<String, usize> {
        self.multivariate.modelled()
    }

    /// Waits for the multivariate trainings under way to end, then installs and saves their models
    /// (the loop itself never waits: it picks them up at the first step after they end).
    pub async fn settle(&mut self) {
        self.multivariate.settle().await;
    }

    /// The shortest rule interval or forecast step: how often [`Analyzer::run`] wakes.
    fn tick_every(&self) -> Duration {
        let rules = self.rules.iter().map(|r| r.rule.interval);
        let steps = rules.chain(self.forecasting.tick_every()).chain(self.multivariate.tick_every());
        steps.min().unwrap_or(Duration::from_secs(10))
    }

    /// Runs until `stop` completes, then saves the state.
    pub async fn run(mut self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        // Forecasting runs beside the rules, on its own task; this loop keeps an idle stand-in.
        let idle = Forecasting::new(&[], &[], self.backend.clone(), None, self.metrics.clone(), self.cfg.forget_after);
        let forecasting = std::mem::replace(&mut self.forecasting, idle);
        let (stop_forecasting, stopped) = tokio::sync::watch::channel(false);
        let delay = self.cfg.eval_delay;
        let forecasts = tokio::spawn(forecasting.run(self.cfg.checkpoint, delay, stopped));
        let every = self.tick_every();
        loop {
            tokio::select! {
                _ = &mut stop => break,
                _ = sleep_to_step(every, delay) => {}
            }
            self.tick(now_ms() - delay.as_millis() as i64).await;
        }
        let _ = stop_forecasting.send(true);
        match forecasts.await {
            Ok(forecasting) => self.forecasting = forecasting,
            Err(error) => tracing::error!(%error, "The forecasting task failed"),
        }
        self.checkpoint();
    }

    /// Evaluates every rule whose next step is due at `now` (ms).
    pub async fn tick(&mut self, now: i64) {
        let started = std::time::Instant::now();
        let mut writes = Vec::new();
        let mut alerts = Vec::new();
        for i in 0..self.rules.len() {
            let name = self.rules[i].rule.name.clone();
            match self.eval_rule(i, now, &mut writes, &mut alerts).await {
                Ok(true) => self.metrics.evaluated(&name, self.rules[i].series.len()),
                Ok(false) => {}
                Err(error) => {
                    self.metrics.failed(&name);
                    tracing::warn!(rule = %name, %error, "Analyzer rule evaluation failed");
                }
            }
        }
        self.multivariate.tick(now, &mut writes, &mut alerts).await;
        write_results(&*self.backend, &self.metrics, &mut writes).await;
        if !alerts.is_empty() {
            let n = alerts.len();
            match self.out.send(alerts).await {
                Ok(()) => self.metrics.alerts_sent(n),
                Err(error) => {
                    self.metrics.alerts_failed(n);
                    tracing::warn!(%error, "Posting anomalies to alertd failed");
                }
            }
        }
        self.metrics.tick_seconds(started.elapsed().as_secs_f64());
        self.forecasting.tick(now).await;
        if now - self.last_checkpoint >= self.cfg.checkpoint.as_millis() as i64 {
            if self.last_checkpoint != 0 {
                self.checkpoint();
            }
            self.last_checkpoint = now;
        }
    }

    /// Saves every rule's detector state (atomically per rule), every forecast target's models and every
    /// pool's planner.
    pub fn checkpoint(&self) {
        self.forecasting.checkpoint();
        if let Some(dir) = &self.state_dir {
            for r in &self.rules {
                if let Err(error) = persist::save(dir, r) {
                    tracing::warn!(rule = %r.rule.name, %error, "Saving analyzer state failed");
                }
            }
        }
    }

    /// One rule at `now`: the steps since its last one, or its warm-up window for a first run.
    /// Returns whether a step was evaluated.
    async fn eval_rule(
        &mut self,
        i: usize,
        now: i64,
        writes: &mut Vec<WriteSeries>,
        alerts: &mut Vec<Alert>,
    ) -> Result<bool, String> {
        let step = self.rules[i].rule.interval.as_millis() as i64;
        let end = now / step * step;
        let (start, live_from) = match self.rules[i].last_step {
            Some(last) if last >= end => return Ok(false),
            Some(last) => ((last + step).max(end - self.cfg.max_catchup.as_millis() as i64 / step * step), last + step),
            None => (end - self.cfg.warmup.as_millis() as i64 / step * step, end),
        };
        let query = self.rules[i].rule.query.clone();
        let (shard, by) = (self.cfg.shard, self.rules[i].rule.shard_by());
        let mut from = start;
        // Keyed by the answer's shared labels: a clone per series and evaluation was a transient
        // copy of every label set the rule tracks.
        let mut outs: HashMap<Arc<Labels>, Outputs> = HashMap::new();
        while from <= end {
            let to = (from + (CHUNK_STEPS - 1) * step).min(end);
            let value =
                self.backend.query_range_shard(&query, from, to, step, shard, &by).await.map_err(|e| e.to_string())?;
            let QueryValue::Matrix(series) = value else {
                return Err("the query does not return a range vector of series".into());
            };
            let state = &mut self.rules[i];
            for s in series {
                let tracked = match state.series.get_mut(&*s.labels) {
                    Some(t) => t,
                    None => {
                        let t = new_tracked(&state.rule)?;
                        state.series.entry((*s.labels).clone()).or_insert(t)
                    }
                };
                let out = outs.entry(s.labels.clone()).or_default();
                feed(&state.rule, tracked, &s.samples, live_from, end, out);
            }
            from = to + step;
        }
        let state = &mut self.rules[i];
        state.last_step = Some(end);
        if let Some(p) = &state.rule.peer {
            let scores = peer_scores(&p.by, &p.params, p.window.as_millis() as i64 / step, step, end, &state.series);
            for (labels, score) in scores {
                match outs.get_mut(labels) {
                    Some(out) => out.peer = Some(score),
                    None => {
                        outs.insert(Arc::new(labels.clone()), Outputs { peer: Some(score), ..Outputs::default() });
                    }
                }
            }
        }
        let forget = self.cfg.forget_after.as_millis() as i64;
        let mut findings = Top::new(FINDINGS);
        let mut anomalous = 0;
        for (labels, out) in &outs {
            let Some(tracked) = state.series.get_mut(&**labels) else { continue };
            let metric = metric_of(&state.rule, labels);
            let base = labels.without_name();
            write_outputs(writes, &base, &metric, &state.rule, out);
            if writes.len() >= WRITE_BATCH {
                write_results(&*self.backend, &self.metrics, writes).await;
            }
            if let Some(score) = judge(&self.cfg, &state.rule, labels, &metric, tracked, out, end, alerts) {
                anomalous += usize::from(score > 1.0);
                findings.offer(score, || finding(&state.rule, labels, &metric, tracked, out, score));
            }
        }
        // Series gone for good: resolve their alert and drop their state.
        state.series.retain(|labels, t| {
            if end - t.last_seen <= forget {
                return true;
            }
            if let Some(f) = &t.firing {
                alerts.push(alerts::resolved(&state.rule, labels, &metric_of(&state.rule, labels), f, end));
            }
            false
        });
        let findings = findings.into_sorted();
        self.metrics.anomalous(&state.rule.name, anomalous);
        self.board.by_rule.write().insert(state.rule.name.clone(), findings);
        Ok(true)
    }
}

/// Writes (and empties) `writes`; a failure is counted and logged, and the tick goes on.
async fn write_results(backend: &dyn StoreBackend, metrics: &Metrics, writes: &mut Vec<WriteSeries>) {
    if writes.is_empty() {
        return;
    }
    if let Err(error) = backend.write(std::mem::take(writes)).await {
        metrics.write_failed();
        tracing::warn!(%error, "Writing analyzer results failed");
    }
}

/// What one series produced in one evaluation.
#[derive(Default)]
struct Outputs {
    /// Per univariate detector: (step, verdict) for the live steps.
    steps: Vec<(i64, Vec<Verdict>)>,
    /// The latest value and verdicts, live or not.
    last: Option<(i64, f64, Vec<Verdict>)>,
    peer: Option<peer::PeerScore>,
}

fn new_tracked(rule: &Rule) -> Result<Tracked, String> {
    let detectors = rule
        .univariate
        .iter()
        .map(|name| detectors::make(name, rule.params.get(name), rule.direction, rule.min_deviation))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Tracked {
        detectors,
        window: VecDeque::new(),
        last_seen: 0,
        settled_from: None,
        anomalous_steps: 0,
        normal_steps: 0,
        firing: None,
    })
}

fn feed(rule: &Rule, t: &mut Tracked, samples: &[Sample], live_from: i64, end: i64, out: &mut Outputs) {
    let keep = rule.peer.as_ref().map_or(0, |p| (p.window.as_millis() / rule.interval.as_millis().max(1)) as usize + 1);
    let settled_from = *t.settled_from.get_or_insert_with(|| {
        samples.first().map_or(i64::MIN, |first| first.t.saturating_add(rule.settle.as_millis() as i64))
    });
    for s in samples {
        if s.t <= t.last_seen {
            continue;
        }
        if s.t < settled_from {
            t.last_seen = s.t;
            continue;
        }
        let verdicts: Vec<Verdict> = t.detectors.iter_mut().map(|d| d.update(s.t, s.v)).collect();
        t.last_seen = s.t;
        if keep > 0 {
            t.window.push_back((s.t, s.v));
            while t.window.len() > keep {
                t.window.pop_front();
            }
        }
        if s.t >= live_from && s.t <= end {
            out.steps.push((s.t, verdicts.clone()));
        }
        out.last = Some((s.t, s.v, verdicts));
    }
}

/// Peer scores at `end` for every series seen at `end`, grouped by the `by` labels.
fn peer_scores<'s>(
    by: &[String],
    params: &PeerParams,
    steps: i64,
    step: i64,
    end: i64,
    series: &'s HashMap<Labels, Tracked>,
) -> Vec<(&'s Labels, peer::PeerScore)> {
    let mut groups: BTreeMap<Vec<&str>, Vec<(&Labels, Vec<f64>)>> = BTreeMap::new();
    let first = end - steps * step;
    for (labels, t) in series {
        if t.last_seen != end || t.window.is_empty() {
            continue;
        }
        let key: Vec<&str> = by.iter().map(|n| labels.get(n).unwrap_or("")).collect();
        let mut row = vec![f64::NAN; steps as usize + 1];
        for &(ts, v) in &t.window {
            if ts >= first && (ts - first) % step == 0 {
                row[((ts - first) / step) as usize] = v;
            }
        }
        groups.entry(key).or_default().push((labels, row));
    }
    let mut out = Vec::new();
    for members in groups.values() {
        let rows: Vec<&[f64]> = members.iter().map(|(_, r)| r.as_slice()).collect();
        if let Some(scores) = peer::score_group(params, &rows) {
            out.extend(members.iter().zip(scores).map(|((l, _), s)| (*l, s)));
        }
    }
    out
}

/// The `metric` label of a series' results: its metric name, else the rule's `metric`, else the rule's name.
fn metric_of(rule: &Rule, labels: &Labels) -> String {
    labels.metric_name().map(str::to_string).or_else(|| rule.metric.clone()).unwrap_or_else(|| rule.name.clone())
}

fn with(base: &Labels, name: &str, extra: &[(&str, &str)]) -> Labels {
    let mut l = base.clone();
    l.set(METRIC_NAME, name);
    for (n, v) in extra {
        l.set(n, v);
    }
    l
}

fn write_outputs(writes: &mut Vec<WriteSeries>, base: &Labels, metric: &str, rule: &Rule, out: &Outputs) {
    for (d, name) in rule.univariate.iter().enumerate() {
        let scores: Vec<Sample> = out.steps.iter().map(|(t, v)| Sample { t: *t, v: v[d].score }).collect();
        if scores.is_empty() {
            continue;
        }
        writes.push(WriteSeries {
            labels: with(base, "argus_anomaly_score", &[("detector", name), ("metric", metric)]),
            samples: scores,
        });
        let mut yhat = Vec::new();
        let mut lower = Vec::new();
        let mut upper = Vec::new();
        for (t, v) in &out.steps {
            if let Some(e) = v[d].expected {
                yhat.push(Sample { t: *t, v: e });
            }
            if let Some((lo, hi)) = v[d].band {
                lower.push(Sample { t: *t, v: lo });
                upper.push(Sample { t: *t, v: hi });
            }
        }
        for (series, samples) in [("argus_yhat", yhat), ("argus_yhat_lower", lower), ("argus_yhat_upper", upper)] {
            if !samples.is_empty() {
                writes
                    .push(WriteSeries { labels: with(base, series, &[("model", name), ("metric", metric)]), samples });
            }
        }
    }
    let Some((t, _, _)) = &out.last else { return };
    if let Some(p) = &out.peer {
        writes.push(WriteSeries {
            labels: with(base, "argus_anomaly_score", &[("detector", "peer"), ("metric", metric)]),
            samples: vec![Sample { t: *t, v: p.score }],
        });
    }
    if let Some(score) = ensemble_of(out) {
        writes.push(WriteSeries {
            labels: with(base, "argus_anomaly_score", &[("detector", "ensemble"), ("metric", metric)]),
            samples: vec![Sample { t: *t, v: score }],
        });
    }
}

fn ensemble_of(out: &Outputs) -> Option<f64> {
    let (_, _, verdicts) = out.last.as_ref()?;
    let mut scores: Vec<f64> = verdicts.iter().map(|v| v.score).collect();
    scores.extend(out.peer.map(|p| p.score));
    Some(ensemble(&scores))
}

/// Updates the series' alert state from its latest verdicts; returns its ensemble score when it was
/// seen at `end`.
#[allow(clippy::too_many_arguments)]
fn judge(
    cfg: &Valid,
    rule: &Rule,
    labels: &Labels,
    metric: &str,
    t: &mut Tracked,
    out: &Outputs,
    end: i64,
    alerts: &mut Vec<Alert>,
) -> Option<f64> {
    let (time, value, verdicts) = out.last.as_ref()?;
    if *time != end {
        return None;
    }
    let score = ensemble_of(out)?;
    let (expected, band) = expectation(out, verdicts);
    if score > 1.0 {
        t.anomalous_steps += 1;
        t.normal_steps = 0;
    } else {
        t.normal_steps += 1;
        t.anomalous_steps = 0;
    }
    let top = detector_scores(rule, verdicts, out)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(n, _)| n.to_string())
        .unwrap_or_default();
    let ctx = alerts::Context { rule, labels, metric, value: *value, score, expected, band, peer: out.peer };
    match &mut t.firing {
        None if t.anomalous_steps >= cfg.alert_after || cfg.alert_at_once > 0.0 && score >= cfg.alert_at_once => {
            let f = Firing { since: end, detector: top, last_sent: end };
            alerts.push(alerts::firing(&ctx, &f, end, rule.interval));
            t.firing = Some(f);
        }
        Some(f) if t.normal_steps >= cfg.resolve_after => {
            alerts.push(alerts::resolved(rule, labels, metric, f, end));
            t.firing = None;
        }
        Some(f) if end - f.last_sent >= alerts::RESEND.as_millis() as i64 || score > 1.0 && t.anomalous_steps == 1 => {
            f.last_sent = end;
            alerts.push(alerts::firing(&ctx, f, end, rule.interval));
        }
        _ => {}
    }
    Some(score)
}

/// Each detector's score at the series' latest step, the peer comparison's last.
fn detector_scores<'a>(rule: &'a Rule, verdicts: &[Verdict], out: &Outputs) -> impl Iterator<Item = (&'a str, f64)> {
    let own = rule.univariate.iter().zip(verdicts).map(|(n, v)| (n.as_str(), v.score));
    own.chain(out.peer.map(|p| ("peer", p.score)))
}

/// The value and band the detectors expected at the latest step: the first detector's that has one,
/// else the peer group's median.
fn expectation(out: &Outputs, verdicts: &[Verdict]) -> (Option<f64>, Option<(f64, f64)>) {
    let expected = verdicts.iter().find_map(|v| v.expected).or(out.peer.map(|p| p.group_median));
    (expected, verdicts.iter().find_map(|v| v.band))
}

/// The finding the status page and `/api/v1/anomalies` show for a judged series; made only for the
/// highest scores kept (see [`Top`]).
fn finding(rule: &Rule, labels: &Labels, metric: &str, t: &Tracked, out: &Outputs, score: f64) -> Finding {
    let (time, value, verdicts) = out.last.as_ref().map_or((0, f64::NAN, &[][..]), |(t, v, d)| (*t, *v, &d[..]));
    let (expected, band) = expectation(out, verdicts);
    Finding {
        rule: rule.name.clone(),
        metric: metric.to_string(),
        labels: labels.without_name().iter().map(|l| (l.name.clone(), l.value.clone())).collect(),
        time,
        value,
        score,
        detectors: detector_scores(rule, verdicts, out).map(|(n, s)| (n.to_string(), s)).collect(),
        expected,
        band,
        firing_since: t.firing.as_ref().map(|f| f.since),
    }
}

/// Findings kept per rule and evaluation: the highest scores.
const FINDINGS: usize = 1000;

/// The `n` highest-scored items of a stream, made only when they would be kept: an evaluation judges
/// every series the rule tracks, and a finding made for each (labels, detector names) before keeping
/// the top thousand was a transient copy of the whole rule's label sets at every step — the soak's
/// largest allocation swing (git show d87df420:bench/RESULTS.md, "Twelfth run").
struct Top<T> {
    n: usize,
    /// A min-heap on the score: its top is the first to go.
    heap: std::collections::BinaryHeap<std::cmp::Reverse<Scored<T>>>,
}

struct Scored<T>(f64, T);

impl<T> PartialEq for Scored<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0.total_cmp(&other.0).is_eq()
    }
}
impl<T> Eq for Scored<T> {}
impl<T> PartialOrd for Scored<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Scored<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl<T> Top<T> {
    fn new(n: usize) -> Self {
        Top { n, heap: std::collections::BinaryHeap::with_capacity(n.min(1024) + 1) }
    }

    /// Keeps `make()` when `score` is among the `n` highest so far.
    fn offer(&mut self, score: f64, make: impl FnOnce() -> T) {
        if self.heap.len() == self.n {
            match self.heap.peek() {
                Some(std::cmp::Reverse(low)) if score.total_cmp(&low.0).is_gt() => {
                    self.heap.pop();
                }
                _ => return,
            }
        }
        if self.n > 0 {
            self.heap.push(std::cmp::Reverse(Scored(score, make())));
        }
    }

    /// The items kept, highest score first.
    fn into_sorted(self) -> Vec<T> {
        // `into_sorted_vec` is ascending in `Reverse`, so highest score first.
        self.heap.into_sorted_vec().into_iter().map(|std::cmp::Reverse(Scored(_, t))| t).collect()
    }
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// When the next step ends plus `delay` (all in ms): a step of `every` is evaluated `delay` after it
/// ends, so that its samples still on their way have arrived ([`Valid::eval_delay`]).
fn next_wake(now: i64, every: i64, delay: i64) -> i64 {
    let every = every.max(1);
    ((now - delay).div_euclid(every) + 1) * every + delay
}

/// Sleeps until [`next_wake`] from now; the caller then evaluates at `now_ms() - delay`.
pub(crate) async fn sleep_to_step(every: Duration, delay: Duration) {
    let now = now_ms();
    let next = next_wake(now, every.as_millis() as i64, delay.as_millis() as i64);
    tokio::time::sleep(Duration::from_millis((next - now).max(0) as u64)).await;
}

#[cfg(test)]
mod tests {
    use super::{Top, next_wake};

    /// A step is evaluated `delay` after it ends, never twice and never skipped: a wake just after one
    /// step's evaluation sleeps to the next step's.
    #[test]
    fn wakes_delay_after_each_step_ends() {
        assert_eq!(next_wake(5_000, 10_000, 1_000), 11_000);
        assert_eq!(next_wake(10_500, 10_000, 1_000), 11_000);
        assert_eq!(next_wake(11_000, 10_000, 1_000), 21_000);
        assert_eq!(next_wake(41_000, 10_000, 30_000), 50_000);
        assert_eq!(next_wake(39_999, 10_000, 30_000), 40_000);
        // Evaluating at the wake minus the delay lands on the step's end.
        for now in [0, 7_300, 19_999, 1_000_000_123] {
            let wake = next_wake(now, 10_000, 5_000);
            assert_eq!((wake - 5_000) % 10_000, 0);
            assert!(wake > now && wake - now <= 10_000);
        }
    }

    /// The highest `n` scores, highest first, each item made only when kept at the time it came;
    /// ties keep the first come, NaN ranks above every number (`total_cmp`), as the sort it replaces.
    #[test]
    fn top_keeps_the_highest_and_makes_only_what_it_keeps() {
        let scores = [0.5, 3.0, 1.0, 7.0, 3.0, -1.0, 2.0, 9.0, 0.1, 8.0];
        let mut top = Top::new(3);
        let mut made = 0;
        for (i, &s) in scores.iter().enumerate() {
            top.offer(s, || {
                made += 1;
                (i, s)
            });
        }
        assert_eq!(top.into_sorted(), vec![(7, 9.0), (9, 8.0), (3, 7.0)]);
        // Made: the first three, then 7.0, the second 3.0 (above the 1.0 kept then), 9.0 and 8.0; never
        // one at or below the lowest kept.
        assert_eq!(made, 7);

        let mut top = Top::new(2);
        for (i, s) in [(0, 1.0), (1, f64::NAN), (2, 1.0)] {
            top.offer(s, || i);
        }
        assert_eq!(top.into_sorted(), vec![1, 0]);
        let mut none = Top::new(0);
        none.offer(5.0, || panic!("nothing is kept"));
        assert!(none.into_sorted().is_empty());
    }
}
