//! Multivariate anomaly detection at run time: one model per entity (a host, a GPU) over several
//! metrics at once, inside the analyzer's loop.
//!
//! Every `[[analyzer.multivariate]]` rule reads its metric queries at its interval (aligned) and groups
//! the series by the rule's `entity` labels: an entity's values at one step make a row. Each entity gets
//! its own [`MultivariateModel`] — the detector `argus eval anomaly` measures: an isolation forest on the
//! raw metrics and their differences, rolling means and deviations, with a PCA residual, normalised so
//! that above 1 is anomalous — trained on `train_window` of history and retrained every `retrain`.
//!
//! Training (reading the window and fitting every entity) runs as a task of its own, fitting on a blocking
//! thread, so the loop keeps scoring every rule meanwhile with the models it has; an entity first seen
//! between trainings is trained by a smaller round of its own. Each step's rows are scored as they
//! arrive and written as `argus_anomaly_score{detector="iforest", metric=<rule>, rule=<rule>, <entity
//! labels>}`; an entity above 1 for `alert_after` steps fires an alert whose annotations name the
//! features that isolated it (metric, feature kind, value, training median).
//!
//! Missing values: a step where an entity has none of its metrics is no row (nothing scored); a step
//! where it lacks some takes their last known value (forward fill); a row with a metric never yet seen is
//! dropped. Training rows follow the same rule, so training and scoring see the same kind of rows.
//!
//! Models are saved after each training under the state directory (docs/format/analyzer-multivariate.md)
//! and loaded at start: a restart scores with them at once and retrains only when the schedule says so.
//! The scoring windows (rolling features, smoothing) are not saved: an entity whose state is fresh — after
//! a restart or a retrain — is first fed the steps before the ones it scores, so its scores are those an
//! uninterrupted run would give.

pub mod config;
mod persist;

use super::Metrics;
use super::alerts::{self, ALERT_NAME, Alert, Firing, RESEND};
use crate::detect::features::FeatureConfig;
use crate::detect::multivariate::{self, MultivariateModel, ScoreState};
use argus_model::{Labels, METRIC_NAME, Sample, Shard};
use argus_store_api::backend::{QueryValue, StoreBackend};
use argus_store_api::remote_write::WriteSeries;
use config::ModelRule;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tokio::task::JoinHandle;

/// The most steps asked of the store in one range query.
const CHUNK_STEPS: i64 = 720;

/// The `detector` label of the scores and alerts.
pub const DETECTOR: &str = "iforest";

/// Features named in an alert.
const TOP_FEATURES: usize = 3;

/// One entity's trained model, as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityModel {
    /// The entity's labels, in the rule's `entity` order.
    pub labels: Vec<(String, String)>,
    /// When (ms) the training window ended.
    pub trained_at: i64,
    pub model: MultivariateModel,
    /// Each feature's median over the training window, in feature order: what an alert compares with.
    pub medians: Vec<f64>,
}

/// An entity: its label values in the rule's `entity` order.
type Key = Vec<String>;

struct Entity {
    model: Arc<EntityModel>,
    /// None until the entity is first fed after a (re)start or a retrain.
    state: Option<ScoreState>,
    /// The last step (ms) scored.
    last_t: i64,
    /// Last known value of each metric, for forward fill.
    last_row: Vec<f64>,
    anomalous_steps: u32,
    normal_steps: u32,
    firing: Option<Firing>,
}

/// What a training round produced.
struct Trained {
    /// End of the training window (ms).
    at: i64,
    /// Whether every entity was trained (the schedule) or only new ones.
    full: bool,
    models: Vec<EntityModel>,
    /// Entities that could not be trained, with why.
    failed: Vec<(Key, String)>,
    /// Entities asked for that the window no longer holds (gone): no longer waited for.
    gone: Vec<Key>,
    seconds: f64,
}

pub(crate) struct RuleState {
    rule: ModelRule,
    last_step: Option<i64>,
    /// End of the last full training's window (ms).
    trained_at: Option<i64>,
    entities: HashMap<Key, Entity>,
    /// Entities seen without a model, and when (ms) their training was last tried.
    untrained: HashMap<Key, i64>,
    job: Option<JoinHandle<Result<Trained, String>>>,
    saving: Option<JoinHandle<()>>,
}

/// The multivariate half of the analyzer.
pub struct Multivariate {
    backend: Arc<dyn StoreBackend>,
    state_dir: Option<PathBuf>,
    rules: Vec<RuleState>,
    metrics: Metrics,
    alert_after: u32,
    resolve_after: u32,
    max_catchup: i64,
    forget_after: i64,
    /// The entities this process scores (`--shard`).
    shard: Shard,
}

impl Multivariate {
    /// Builds the rules, loading their saved models from `state_dir`.
    pub fn new(
        cfg: &super::Valid,
        backend: Arc<dyn StoreBackend>,
        state_dir: Option<PathBuf>,
        metrics: Metrics,
    ) -> Multivariate {
        let rules = cfg
            .multivariate
            .iter()
            .map(|rule| {
                let loaded = state_dir.as_deref().and_then(|d| persist::load(d, rule));
                let mut state = RuleState {
                    rule: rule.clone(),
                    last_step: None,
                    trained_at: None,
                    entities: HashMap::new(),
                    untrained: HashMap::new(),
                    job: None,
                    saving: None,
                };
                if let Some(l) = loaded {
                    state.trained_at = Some(l.trained_at);
                    for m in l.models {
                        let key: Key = m.labels.iter().map(|(_, v)| v.clone()).collect();
                        state.entities.insert(key, Entity::new(Arc::new(m)));
                    }
                    // Entities whose model could not be used are trained at the first step.
                    state.untrained.extend(l.stale.into_iter().map(|k| (k, i64::MIN)));
                }
                state
            })
            .collect();
        Multivariate {
            shard: cfg.shard,
            backend,
            state_dir,
            rules,
            metrics,
            alert_after: cfg.alert_after,
            resolve_after: cfg.resolve_after,
            max_catchup: cfg.max_catchup.as_millis() as i64,
            forget_after: cfg.forget_after.as_millis() as i64,
        }
    }

    /// The shortest rule interval.
    pub fn tick_every(&self) -> Option<std::time::Duration> {
        self.rules.iter().map(|r| r.rule.interval).min()
    }

    /// Entities with a model, per rule.
    pub fn modelled(&self) -> BTreeMap<String, usize> {
        self.rules.iter().map(|r| (r.rule.name.clone(), r.entities.len())).collect()
    }

    /// Scores every rule whose next step is due at `now` (ms), adding the scores to `writes` and the
    /// alerts to `alerts`; installs the models of finished trainings and starts the ones due.
    pub async fn tick(&mut self, now: i64, writes: &mut Vec<WriteSeries>, alerts: &mut Vec<Alert>) {
        for i in 0..self.rules.len() {
            if self.rules[i].job.as_ref().is_some_and(|j| j.is_finished()) {
                self.finish_training(i).await;
            }
            if let Err(error) = self.step(i, now, writes, alerts).await {
                self.metrics.failed(&self.rules[i].rule.name);
                tracing::warn!(rule = %self.rules[i].rule.name, %error, "Multivariate scoring failed");
            }
        }
    }

    /// Waits for the trainings under way, installs their models and waits for them to be saved.
    pub async fn settle(&mut self) {
        for i in 0..self.rules.len() {
            if self.rules[i].job.is_some() {
                self.finish_training(i).await;
            }
            if let Some(s) = self.rules[i].saving.take() {
                let _ = s.await;
            }
        }
    }

    /// One rule at `now`: training started when due, then the steps since the last one scored.
    async fn step(
        &mut self,
        i: usize,
        now: i64,
        writes: &mut Vec<WriteSeries>,
        alerts: &mut Vec<Alert>,
    ) -> Result<(), String> {
        let r = &self.rules[i];
        let step = r.rule.step_ms();
        let end = now / step * step;
        if r.last_step.is_some_and(|l| l >= end) {
            return Ok(());
        }
        if r.job.is_none() {
            let due = r.trained_at.is_none_or(|t| end - t >= r.rule.retrain.as_millis() as i64);
            // A new entity is tried at once, then again every tenth of `retrain` while it lacks history.
            let retry = (r.rule.retrain.as_millis() as i64 / 10).max(step);
            let new: HashSet<Key> = r
                .untrained
                .iter()
                .filter(|(_, tried)| end.saturating_sub(**tried) >= retry)
                .map(|(k, _)| k.clone())
                .collect();
            if due {
                self.start_training(i, end, None);
            } else if !new.is_empty() {
                self.start_training(i, end, Some(new));
            }
        }
        let r = &self.rules[i];
        let live_from = match r.last_step {
            Some(last) => (last + step).max(end - self.max_catchup / step * step),
            None => end,
        };
        // Fresh scoring states are fed the steps before the first one they score.
        let cold = r.entities.values().any(|e| e.state.is_none());
        let read_from = if cold { live_from - r.rule.warm_steps() * step } else { live_from };
        let backend = self.backend.clone();
        let data = read(&*backend, &self.rules[i].rule, self.shard, read_from, end).await?;
        let r = &mut self.rules[i];
        r.last_step = Some(end);
        let mut anomalous = 0;
        for (key, grid) in &data {
            let Some(e) = r.entities.get_mut(key) else {
                r.untrained.entry(key.clone()).or_insert(i64::MIN);
                continue;
            };
            let mut scores = Vec::new();
            let mut last = None;
            let state = e.state.get_or_insert_with(|| ScoreState::new(&e.model.model));
            for (t, row) in grid.rows(&mut e.last_row) {
                if t <= e.last_t {
                    continue;
                }
                let verdict = state.score(&e.model.model, &row);
                e.last_t = t;
                if t >= live_from {
                    scores.push(Sample { t, v: verdict.score });
                    last = Some((t, verdict.score));
                }
            }
            if scores.is_empty() {
                continue;
            }
            let labels = entity_labels(&e.model.labels);
            writes.push(WriteSeries { labels: score_labels(&r.rule, &labels), samples: scores });
            if let Some((t, score)) = last.filter(|(t, _)| *t == end) {
                anomalous += usize::from(score > 1.0);
                judge(&r.rule, (self.alert_after, self.resolve_after), &labels, e, t, score, alerts);
            }
        }
        // Entities gone for good: resolve their alert and drop them.
        let forget = self.forget_after;
        r.entities.retain(|_, e| {
            if end - e.last_t <= forget || e.last_t == 0 && e.model.trained_at + forget >= end {
                return true;
            }
            if let Some(f) = &e.firing {
                alerts.push(resolved(&r.rule, &entity_labels(&e.model.labels), f, end));
            }
            false
        });
        self.metrics.mv_scored(&r.rule.name, r.entities.len(), anomalous);
        Ok(())
    }

    /// Starts training `only` these entities (None: all) on the window ending at `end`.
    fn start_training(&mut self, i: usize, end: i64, only: Option<HashSet<Key>>) {
        let r = &mut self.rules[i];
        if let Some(only) = &only {
            for k in only {
                r.untrained.insert(k.clone(), end);
            }
        }
        let rule = r.rule.clone();
        let backend = self.backend.clone();
        let shard = self.shard;
        tracing::debug!(rule = %rule.name, full = only.is_none(), "Multivariate training started");
        r.job = Some(tokio::spawn(async move {
            let started = Instant::now();
            let from = end - rule.train_window.as_millis() as i64 / rule.step_ms() * rule.step_ms();
            let data = read(&*backend, &rule, shard, from, end).await?;
            tokio::task::spawn_blocking(move || {
                let full = only.is_none();
                let mut trained = train_all(&rule, data, only.as_ref(), end);
                trained.full = full;
                trained.seconds = started.elapsed().as_secs_f64();
                trained
            })
            .await
            .map_err(|e| format!("training stopped: {e}"))
        }));
    }

    /// Installs a training's models (waiting for it to end) and saves the rule's models.
    async fn finish_training(&mut self, i: usize) {
        let Some(job) = self.rules[i].job.take() else { return };
        let r = &mut self.rules[i];
        let trained = match job.await.map_err(|e| e.to_string()).and_then(|r| r) {
            Ok(t) => t,
            Err(error) => {
                tracing::warn!(rule = %r.rule.name, %error, "Multivariate training failed");
                // Tried again after `retrain` like a success, not at every step.
                return;
            }
        };
        if trained.full {
            r.trained_at = Some(trained.at);
        }
        let n = trained.models.len();
        for m in trained.models {
            let key: Key = m.labels.iter().map(|(_, v)| v.clone()).collect();
            r.untrained.remove(&key);
            let model = Arc::new(m);
            match r.entities.get_mut(&key) {
                // The alert state carries over; the scoring state starts again with the new model.
                Some(e) => {
                    e.model = model;
                    e.state = None;
                }
                None => {
                    r.entities.insert(key, Entity::new(model));
                }
            }
        }
        for key in &trained.gone {
            r.untrained.remove(key);
        }
        for (key, why) in &trained.failed {
            tracing::debug!(rule = %r.rule.name, entity = ?key, %why, "Entity not trained yet");
            r.untrained.entry(key.clone()).or_insert(trained.at);
        }
        tracing::info!(
            rule = %r.rule.name,
            trained = n,
            untrained = trained.failed.len(),
            seconds = trained.seconds,
            "Multivariate models trained"
        );
        self.metrics.mv_trained(&r.rule.name, trained.seconds, r.entities.len(), r.untrained.len());
        if let Some(dir) = self.state_dir.clone() {
            if let Some(previous) = r.saving.take() {
                let _ = previous.await;
            }
            let r = &mut self.rules[i];
            let rule = r.rule.clone();
            let trained_at = r.trained_at.unwrap_or(trained.at);
            let models: Vec<Arc<EntityModel>> = r.entities.values().map(|e| e.model.clone()).collect();
            r.saving = Some(tokio::task::spawn_blocking(move || {
                if let Err(error) = persist::save(&dir, &rule, trained_at, &models) {
                    tracing::warn!(rule = %rule.name, %error, "Saving multivariate models failed");
                }
            }));
        }
    }
}

impl Entity {
    fn new(model: Arc<EntityModel>) -> Entity {
        let n = model.model.inputs.len();
        Entity {
            model,
            state: None,
            last_t: 0,
            last_row: vec![f64::NAN; n],
            anomalous_steps: 0,
            normal_steps: 0,
            firing: None,
        }
    }
}

// === Reading ===

/// One entity's values from `from` every `step`: `n` per step, NaN where missing.
pub(crate) struct Grid {
    from: i64,
    step: i64,
    n: usize,
    values: Vec<f64>,
}

impl Grid {
    /// The steps that make a row, with missing values filled from `last` (updated as it goes): a step
    /// with no value at all is skipped, as is one with a metric not seen yet.
    fn rows<'a>(&'a self, last: &'a mut [f64]) -> impl Iterator<Item = (i64, Vec<f64>)> + 'a {
        self.values.chunks_exact(self.n).enumerate().filter_map(move |(s, raw)| {
            if raw.iter().all(|v| v.is_nan()) {
                return None;
            }
            for (l, v) in last.iter_mut().zip(raw) {
                if !v.is_nan() {
                    *l = *v;
                }
            }
            if last.iter().any(|v| v.is_nan()) {
                return None;
            }
            Some((self.from + s as i64 * self.step, last.to_vec()))
        })
    }
}

/// Every entity's values of the rule's metrics from `from` to `to` (ms, aligned to the step).
async fn read(
    backend: &dyn StoreBackend,
    rule: &ModelRule,
    shard: Shard,
    from: i64,
    to: i64,
) -> Result<BTreeMap<Key, Grid>, String> {
    let step = rule.step_ms();
    let n = rule.metrics.len();
    let n_steps = ((to - from) / step + 1).max(0) as usize;
    let mut out: BTreeMap<Key, Grid> = BTreeMap::new();
    let mut ambiguous: BTreeMap<Key, usize> = BTreeMap::new();
    for (m, query) in rule.metrics.iter().enumerate() {
        let mut seen: HashSet<Key> = HashSet::new();
        let mut at = from;
        while at <= to {
            let chunk_end = (at + (CHUNK_STEPS - 1) * step).min(to);
            let value = backend
                .query_range_shard(query, at, chunk_end, step, shard, &rule.entity)
                .await
                .map_err(|e| format!("{query}: {e}"))?;
            let QueryValue::Matrix(series) = value else {
                return Err(format!("{query}: the query does not return a range vector of series"));
            };
            let mut in_chunk: HashSet<Key> = HashSet::new();
            for s in series {
                let Some(key) =
                    rule.entity.iter().map(|l| s.labels.get(l).map(str::to_string)).collect::<Option<Key>>()
                else {
                    continue;
                };
                if !in_chunk.insert(key.clone()) {
                    ambiguous.insert(key, m);
                    continue;
                }
                seen.insert(key.clone());
                let grid =
                    out.entry(key).or_insert_with(|| Grid { from, step, n, values: vec![f64::NAN; n_steps * n] });
                for sample in &s.samples {
                    let offset = sample.t - from;
                    if offset >= 0 && offset % step == 0 && ((offset / step) as usize) < n_steps {
                        grid.values[(offset / step) as usize * n + m] = sample.v;
                    }
                }
            }
            at = chunk_end + step;
        }
    }
    if let Some((key, m)) = ambiguous.iter().next() {
        tracing::warn!(
            rule = %rule.name,
            entities = ambiguous.len(),
            example = ?key,
            metric = %rule.metrics[*m],
            "A metric gives several series for one entity: those entities are not scored (aggregate the metric by the entity labels)"
        );
        for key in ambiguous.keys() {
            out.remove(key);
        }
    }
    Ok(out)
}

// === Training ===

/// Trains every entity of `data` (or only those in `only`) on its rows.
fn train_all(rule: &ModelRule, data: BTreeMap<Key, Grid>, only: Option<&HashSet<Key>>, at: i64) -> Trained {
    let mut models = Vec::new();
    let mut failed = Vec::new();
    let gone = only.map(|o| o.iter().filter(|k| !data.contains_key(*k)).cloned().collect()).unwrap_or_default();
    for (key, grid) in data {
        if only.is_some_and(|o| !o.contains(&key)) {
            continue;
        }
        match train_one(rule, &key, &grid, at) {
            Ok(m) => models.push(m),
            Err(why) => failed.push((key, why)),
        }
    }
    Trained { at, full: only.is_none(), models, failed, gone, seconds: 0.0 }
}

fn train_one(rule: &ModelRule, key: &Key, grid: &Grid, at: i64) -> Result<EntityModel, String> {
    let mut last = vec![f64::NAN; rule.metrics.len()];
    let rows: Vec<f64> = grid.rows(&mut last).flat_map(|(_, r)| r).collect();
    let n_rows = rows.len() / rule.metrics.len();
    if n_rows < rule.min_train_points {
        return Err(format!("{n_rows} complete rows in the training window, {} needed", rule.min_train_points));
    }
    let model =
        MultivariateModel::train(&rule.params, rule.metrics.clone(), &rows).map_err(|e| format!("training: {e}"))?;
    let features = model.features(&rows);
    let n_features = model.feature_names().len();
    let medians = (0..n_features)
        .map(|f| {
            let column: Vec<f64> = features.iter().skip(f).step_by(n_features).copied().collect();
            multivariate::quantile(&column, 0.5)
        })
        .collect();
    let labels = rule.entity.iter().cloned().zip(key.iter().cloned()).collect();
    Ok(EntityModel { labels, trained_at: at, model, medians })
}

// === Output ===

fn entity_labels(pairs: &[(String, String)]) -> Labels {
    Labels::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

fn score_labels(rule: &ModelRule, entity: &Labels) -> Labels {
    let mut l = entity.clone();
    l.set(METRIC_NAME, "argus_anomaly_score");
    l.set("detector", DETECTOR);
    l.set("metric", &rule.name);
    l.set("rule", &rule.name);
    l
}

/// What each feature group is called in alerts, in feature order.
fn kinds(f: &FeatureConfig) -> Vec<String> {
    let w = f.window.max(1);
    [
        (f.raw, "value".to_string()),
        (f.diff, "diff".into()),
        (f.rolling_mean, format!("mean{w}")),
        (f.rolling_std, format!("std{w}")),
    ]
    .into_iter()
    .filter_map(|(on, k)| on.then_some(k))
    .collect()
}

/// A feature that contributed to a score.
#[derive(Debug, Clone, PartialEq)]
pub struct Contribution {
    /// The metric's query, as configured.
    pub metric: String,
    /// `value`, `diff`, `meanN` or `stdN`.
    pub kind: String,
    pub value: f64,
    /// Its median over the training window.
    pub median: f64,
    /// Share of the attribution, in (0, 1].
    pub weight: f64,
}

/// The features that contributed most to the last row `state` scored.
fn contributions(m: &EntityModel, state: &ScoreState, k: usize) -> Vec<Contribution> {
    let n = m.model.inputs.len();
    let kinds = kinds(&m.model.params.features);
    state
        .top_feature_indices(&m.model, k)
        .into_iter()
        .map(|(f, weight)| Contribution {
            metric: m.model.inputs[f % n].clone(),
            kind: kinds.get(f / n).cloned().unwrap_or_default(),
            value: state.feature_row().get(f).copied().unwrap_or(f64::NAN),
            median: m.medians.get(f).copied().unwrap_or(f64::NAN),
            weight,
        })
        .collect()
}

/// Updates the entity's alert state from its score at `t`.
fn judge(
    rule: &ModelRule,
    (alert_after, resolve_after): (u32, u32),
    labels: &Labels,
    e: &mut Entity,
    t: i64,
    score: f64,
    alerts: &mut Vec<Alert>,
) {
    if score > 1.0 {
        e.anomalous_steps += 1;
        e.normal_steps = 0;
    } else {
        e.normal_steps += 1;
        e.anomalous_steps = 0;
    }
    // Attribution costs one more pass over the forest: done only when an alert may be sent.
    let top = if e.anomalous_steps >= alert_after || e.firing.is_some() {
        e.state.as_ref().map(|s| contributions(&e.model, s, TOP_FEATURES)).unwrap_or_default()
    } else {
        Vec::new()
    };
    match &mut e.firing {
        None if e.anomalous_steps >= alert_after => {
            let f = Firing { since: t, detector: DETECTOR.into(), last_sent: t };
            alerts.push(firing(rule, labels, score, &top, &f, t));
            e.firing = Some(f);
        }
        Some(f) if e.normal_steps >= resolve_after => {
            alerts.push(resolved(rule, labels, f, t));
            e.firing = None;
        }
        Some(f) if t - f.last_sent >= RESEND.as_millis() as i64 => {
            f.last_sent = t;
            alerts.push(firing(rule, labels, score, &top, f, t));
        }
        _ => {}
    }
}

fn identity(rule: &ModelRule, labels: &Labels) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = labels.iter().map(|l| (l.name.clone(), l.value.clone())).collect();
    out.extend(rule.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    out.insert("alertname".into(), ALERT_NAME.into());
    out.insert("severity".into(), rule.severity.clone());
    out.insert("detector".into(), DETECTOR.into());
    out.insert("metric".into(), rule.name.clone());
    out.insert("analyzer_rule".into(), rule.name.clone());
    out
}

fn generator(rule: &ModelRule) -> String {
    format!("/api/v1/anomalies?rule={}", rule.name)
}

/// A firing alert naming its top features, valid for four resend periods (or steps) unless sent again.
fn firing(rule: &ModelRule, labels: &Labels, score: f64, top: &[Contribution], f: &Firing, now: i64) -> Alert {
    let mut annotations = BTreeMap::new();
    annotations.insert("score".into(), format!("{score:.2}"));
    let described: Vec<String> = top
        .iter()
        .map(|c| {
            format!(
                "{} {} = {} (training median {}, weight {:.2})",
                c.metric,
                c.kind,
                alerts::short(c.value),
                alerts::short(c.median),
                c.weight
            )
        })
        .collect();
    annotations.insert("top_features".into(), described.join("; "));
    if let Some(c) = top.first() {
        annotations.insert("top_metric".into(), c.metric.clone());
    }
    let mut summary = format!("{} anomalous on {labels} (score {score:.2})", rule.name);
    if let Some(d) = described.first() {
        summary.push_str(&format!(": {d}"));
    }
    annotations.insert("summary".into(), summary);
    let valid = RESEND.max(rule.interval).as_millis() as i64 * 4;
    Alert {
        labels: identity(rule, labels),
        annotations,
        starts_at: alerts::rfc3339(f.since),
        ends_at: alerts::rfc3339(now + valid),
        generator_url: generator(rule),
    }
}

fn resolved(rule: &ModelRule, labels: &Labels, f: &Firing, now: i64) -> Alert {
    Alert {
        labels: identity(rule, labels),
        annotations: BTreeMap::new(),
        starts_at: alerts::rfc3339(f.since),
        ends_at: alerts::rfc3339(now),
        generator_url: generator(rule),
    }
}

#[cfg(test)]
mod tests;
