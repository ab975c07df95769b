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
use argus_store::backend::{QueryValue, StoreBackend};
use argus_store::remote_write::WriteSeries;
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
        let forecasts = tokio::spawn(forecasting.run(self.cfg.checkpoint, stopped));
        let every = self.tick_every().as_millis() as i64;
        loop {
            let now = now_ms();
            // Wake just after the next step boundary, so the step's data has arrived.
            let next = (now / every + 1) * every + 1_000;
            let sleep = tokio::time::sleep(Duration::from_millis((next - now) as u64));
            tokio::select! {
                _ = &mut stop => break,
                _ = sleep => {}
            }
            self.tick(now_ms()).await;
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
        let mut from = start;
        let mut outs: HashMap<Labels, Outputs> = HashMap::new();
        while from <= end {
            let to = (from + (CHUNK_STEPS - 1) * step).min(end);
            let value = self.backend.query_range(&query, from, to, step).await.map_err(|e| e.to_string())?;
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
                let out = outs.entry((*s.labels).clone()).or_default();
                feed(&state.rule, tracked, &s.samples, live_from, end, out);
            }
            from = to + step;
        }
        let state = &mut self.rules[i];
        state.last_step = Some(end);
        if let Some(p) = &state.rule.peer {
            let scores = peer_scores(&p.by, &p.params, p.window.as_millis() as i64 / step, step, end, &state.series);
            for (labels, score) in scores {
                outs.entry(labels).or_default().peer = Some(score);
            }
        }
        let forget = self.cfg.forget_after.as_millis() as i64;
        let mut findings = Vec::new();
        for (labels, out) in &outs {
            let Some(tracked) = state.series.get_mut(labels) else { continue };
            let metric = metric_of(&state.rule, labels);
            let base = labels.without_name();
            write_outputs(writes, &base, &metric, &state.rule, out);
            if writes.len() >= WRITE_BATCH {
                write_results(&*self.backend, &self.metrics, writes).await;
            }
            if let Some(f) = judge(&self.cfg, &state.rule, labels, &metric, tracked, out, end, alerts) {
                findings.push(f);
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
        findings.sort_by(|a, b| b.score.total_cmp(&a.score));
        findings.truncate(1000);
        self.metrics.anomalous(&state.rule.name, findings.iter().filter(|f| f.score > 1.0).count());
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
    Ok(Tracked { detectors, window: VecDeque::new(), last_seen: 0, anomalous_steps: 0, normal_steps: 0, firing: None })
}

fn feed(rule: &Rule, t: &mut Tracked, samples: &[Sample], live_from: i64, end: i64, out: &mut Outputs) {
    let keep = rule.peer.as_ref().map_or(0, |p| (p.window.as_millis() / rule.interval.as_millis().max(1)) as usize + 1);
    for s in samples {
        if s.t <= t.last_seen {
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
fn peer_scores(
    by: &[String],
    params: &PeerParams,
    steps: i64,
    step: i64,
    end: i64,
    series: &HashMap<Labels, Tracked>,
) -> Vec<(Labels, peer::PeerScore)> {
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
            out.extend(members.iter().zip(scores).map(|((l, _), s)| ((*l).clone(), s)));
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

/// Updates the series' alert state from its latest verdicts; returns its finding.
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
) -> Option<Finding> {
    let (time, value, verdicts) = out.last.as_ref()?;
    if *time != end {
        return None;
    }
    let score = ensemble_of(out)?;
    let mut by_detector: BTreeMap<String, f64> =
        rule.univariate.iter().zip(verdicts).map(|(n, v)| (n.clone(), v.score)).collect();
    if let Some(p) = &out.peer {
        by_detector.insert("peer".into(), p.score);
    }
    let expected = verdicts.iter().find_map(|v| v.expected).or(out.peer.map(|p| p.group_median));
    let band = verdicts.iter().find_map(|v| v.band);
    if score > 1.0 {
        t.anomalous_steps += 1;
        t.normal_steps = 0;
    } else {
        t.normal_steps += 1;
        t.anomalous_steps = 0;
    }
    let top = by_detector.iter().max_by(|a, b| a.1.total_cmp(b.1)).map(|(n, _)| n.clone()).unwrap_or_default();
    let ctx = alerts::Context { rule, labels, metric, value: *value, score, expected, band, peer: out.peer };
    match &mut t.firing {
        None if t.anomalous_steps >= cfg.alert_after => {
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
    Some(Finding {
        rule: rule.name.clone(),
        metric: metric.to_string(),
        labels: labels.without_name().iter().map(|l| (l.name.clone(), l.value.clone())).collect(),
        time: *time,
        value: *value,
        score,
        detectors: by_detector,
        expected,
        band,
        firing_since: t.firing.as_ref().map(|f| f.since),
    })
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}
