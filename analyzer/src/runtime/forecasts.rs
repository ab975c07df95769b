//! Forecasts and capacity plans at run time, inside the analyzer's loop.
//!
//! Every target's query is read through the [`StoreBackend`] at the target's step (aligned). Each series
//! it returns keeps its own [`Selected`] model: fitted on `history` when first seen and again every
//! `retrain`, brought up to date point by point in between. At every step the forecast over the horizon
//! is made from the step's value and written at that step's time as `argus_yhat`, `argus_yhat_lower` and
//! `argus_yhat_upper` with labels `metric`, `model` and `horizon` (the `horizon="15m"` series holds the
//! forecast for 15 minutes later); the whole trajectory is kept for `GET /api/v1/forecasts`.
//!
//! A series with too little history for the model choice is forecast by the naive model alone until a
//! retrain finds enough. After the targets, every `[[analyzer.capacity]]` pool whose demand was forecast
//! is planned ([`CapacityPlanner`]) and its `argus_capacity_*` series written; a plan whose recommended
//! capacity changed is handed to alertd for the scheduler receivers ([`push`]).
//!
//! Models, choices and planners are saved under the state directory (docs/format/analyzer-forecast-state.md),
//! so a restart resumes without refitting.

pub mod api;
pub mod config;
mod persist;
pub mod push;

use crate::capacity::{CapacityPlanner, ForecastPeak, HeldBy, Outlook, PlanInput, Recommendation};
use crate::forecast::select::{MODELS, ModelConfig, Selected, Selection};
use crate::forecast::{Forecast, ForecastError, Forecaster, Regular};
use argus_model::{Labels, METRIC_NAME, Sample};
use argus_store_api::backend::{QueryValue, StoreBackend};
use argus_store_api::remote_write::WriteSeries;
use config::{Pool, Target};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use super::Metrics;

/// The most steps asked of the store in one range query.
const CHUNK_STEPS: i64 = 720;

/// One series' latest forecast, as `GET /api/v1/forecasts` shows it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ForecastEntry {
    pub target: String,
    pub metric: String,
    /// The series' labels (its metric name left out).
    pub labels: BTreeMap<String, String>,
    /// The chosen model (`ensemble` when horizon steps blend two).
    pub model: String,
    /// Unix seconds of the step the forecast was made at.
    pub made_at: f64,
    pub step_seconds: f64,
    /// The choice's backtest MAE and the naive model's, in the series' units; absent when the naive
    /// fallback forecasts (too little history to choose).
    pub backtest: Option<Backtest>,
    pub points: Vec<Point>,
}

#[derive(Debug, Clone, Copy, serde::Serialize, utoipa::ToSchema)]
pub struct Backtest {
    #[schema(value_type = Option<f64>)]
    pub mae: f64,
    pub naive_mae: Option<f64>,
}

#[derive(Debug, Clone, Copy, serde::Serialize, utoipa::ToSchema)]
pub struct Point {
    /// Unix seconds.
    pub t: f64,
    // A model that cannot forecast a step writes NaN, which JSON shows as null.
    #[schema(value_type = Option<f64>)]
    pub yhat: f64,
    #[schema(value_type = Option<f64>)]
    pub lower: f64,
    #[schema(value_type = Option<f64>)]
    pub upper: f64,
}

/// What the HTTP API reads: the latest forecasts per target and the latest plan per pool.
#[derive(Default)]
pub struct ForecastBoard {
    pub by_target: parking_lot::RwLock<BTreeMap<String, Vec<ForecastEntry>>>,
    pub capacity: parking_lot::RwLock<BTreeMap<String, Recommendation>>,
}

/// A series' model: the per-series choice, or the naive model while the history is too short to choose.
pub(crate) enum Model {
    Selected(Box<Selected>),
    Fallback(Box<dyn Forecaster>),
}

impl Model {
    fn forecaster(&self) -> &dyn Forecaster {
        match self {
            Model::Selected(s) => s.as_ref(),
            Model::Fallback(f) => f.as_ref(),
        }
    }

    fn observe(&mut self, v: f64) {
        match self {
            Model::Selected(s) => s.observe(v),
            Model::Fallback(f) => f.observe(v),
        }
    }

    fn selection(&self) -> Option<&Selection> {
        match self {
            Model::Selected(s) => Some(s.selection()),
            Model::Fallback(_) => None,
        }
    }

    fn model_name(&self) -> String {
        match self {
            Model::Selected(s) => s.selection().model.clone(),
            Model::Fallback(f) => f.name().to_string(),
        }
    }
}

pub(crate) struct SeriesState {
    pub model: Model,
    /// The last step (ms) fed to the model and its value.
    pub last_t: i64,
    pub last_v: f64,
}

pub(crate) struct TargetState {
    pub target: Target,
    pub last_step: Option<i64>,
    /// When (ms) the series were last refitted together.
    pub fitted_at: Option<i64>,
    pub series: HashMap<Labels, SeriesState>,
    /// The latest forecast of every series, by labels.
    pub latest: HashMap<Labels, Forecast>,
}

pub(crate) struct PoolState {
    pub pool: Pool,
    pub planner: CapacityPlanner,
    pub last: Option<Recommendation>,
}

/// The forecasting half of the analyzer.
pub struct Forecasting {
    backend: Arc<dyn StoreBackend>,
    state_dir: Option<PathBuf>,
    targets: Vec<TargetState>,
    pools: Vec<PoolState>,
    board: Arc<ForecastBoard>,
    metrics: Metrics,
    forget_after: i64,
    pusher: Option<push::Pusher>,
}

impl Forecasting {
    /// Builds the targets and pools, restoring their saved state from `state_dir`.
    pub fn new(
        targets: &[Target],
        pools: &[Pool],
        backend: Arc<dyn StoreBackend>,
        state_dir: Option<PathBuf>,
        metrics: Metrics,
        forget_after: std::time::Duration,
    ) -> Forecasting {
        let targets = targets
            .iter()
            .map(|t| {
                let restored = state_dir.as_deref().and_then(|d| persist::load_target(d, t));
                let (last_step, fitted_at, series) = restored.unwrap_or_default();
                TargetState { target: t.clone(), last_step, fitted_at, series, latest: HashMap::new() }
            })
            .collect();
        let pools = pools
            .iter()
            .map(|p| {
                let mut planner =
                    CapacityPlanner::new(p.pool.clone(), p.planner.clone()).expect("pool configs are validated");
                let mut last = None;
                if let Some((state, rec)) = state_dir.as_deref().and_then(|d| persist::load_pool(d, p)) {
                    planner.restore(state);
                    last = rec;
                }
                PoolState { pool: p.clone(), planner, last }
            })
            .collect();
        let board: Arc<ForecastBoard> = Arc::default();
        {
            let mut cap = board.capacity.write();
            for p in &pools {
                let p: &PoolState = p;
                if let Some(r) = &p.last {
                    cap.insert(p.pool.pool.clone(), r.clone());
                }
            }
        }
        Forecasting {
            backend,
            state_dir,
            targets,
            pools,
            board,
            metrics,
            forget_after: forget_after.as_millis() as i64,
            pusher: None,
        }
    }

    /// Hands changed capacity plans to `out` from now on.
    pub fn push_capacity_to(&mut self, out: Arc<dyn push::CapacityOut>) {
        self.pusher = Some(push::Pusher::new(out));
    }

    pub fn board(&self) -> Arc<ForecastBoard> {
        self.board.clone()
    }

    /// Runs the forecasting rounds on a task of their own until `stop` turns true, saving the state every
    /// `checkpoint`; returns itself for the final save. Apart from the anomaly rules, so that a refit
    /// (minutes for many series, or for an LSTM) never holds them up.
    /// Each step is forecast `delay` after it ends ([`super::Valid::eval_delay`]).
    pub async fn run(
        mut self,
        checkpoint: std::time::Duration,
        delay: std::time::Duration,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) -> Self {
        let Some(every) = self.tick_every() else {
            let _ = stop.wait_for(|s| *s).await;
            return self;
        };
        let mut last_checkpoint = super::now_ms();
        loop {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => break,
                _ = super::sleep_to_step(every, delay) => {}
            }
            tokio::select! {
                _ = stop.wait_for(|s| *s) => break,
                _ = self.tick(super::now_ms() - delay.as_millis() as i64) => {}
            }
            let now = super::now_ms();
            if now - last_checkpoint >= checkpoint.as_millis() as i64 {
                self.checkpoint();
                last_checkpoint = now;
            }
        }
        self
    }

    /// The shortest target step.
    pub fn tick_every(&self) -> Option<std::time::Duration> {
        self.targets.iter().map(|t| t.target.step).min()
    }

    /// Forecasts every target whose next step is due at `now` (ms), then plans the pools whose demand
    /// was forecast, and writes the results. Returns the recommendations made.
    pub async fn tick(&mut self, now: i64) -> Vec<Recommendation> {
        let mut writes = Vec::new();
        let mut forecast = Vec::new();
        for i in 0..self.targets.len() {
            let name = self.targets[i].target.name.clone();
            let started = std::time::Instant::now();
            match self.round(i, now, &mut writes).await {
                Ok(true) => {
                    forecast.push(name.clone());
                    self.metrics.forecast_round(&name, started.elapsed().as_secs_f64());
                }
                Ok(false) => {}
                Err(error) => {
                    self.metrics.forecast_failed(&name);
                    tracing::warn!(target_name = %name, %error, "Forecast round failed");
                }
            }
        }
        let mut recs = Vec::new();
        for p in 0..self.pools.len() {
            if !forecast.contains(&self.pools[p].pool.demand) {
                continue;
            }
            let pool = self.pools[p].pool.pool.clone();
            match self.plan(p, &mut writes).await {
                Ok(rec) => recs.push(rec),
                Err(error) => {
                    self.metrics.plan_failed(&pool);
                    tracing::warn!(%pool, %error, "Capacity planning failed");
                }
            }
        }
        if !writes.is_empty()
            && let Err(error) = self.backend.write(writes).await
        {
            self.metrics.write_failed();
            tracing::warn!(%error, "Writing forecasts failed");
        }
        if let Some(p) = &mut self.pusher {
            p.push(&recs).await;
        }
        recs
    }

    /// Saves every target's models and every pool's planner (atomically per file).
    pub fn checkpoint(&self) {
        let Some(dir) = &self.state_dir else { return };
        for t in &self.targets {
            if let Err(error) = persist::save_target(dir, t) {
                tracing::warn!(target_name = %t.target.name, %error, "Saving forecast state failed");
            }
        }
        for p in &self.pools {
            if let Err(error) = persist::save_pool(dir, p) {
                tracing::warn!(pool = %p.pool.pool, %error, "Saving planner state failed");
            }
        }
    }

    /// One target at `now`: returns whether a step was forecast.
    async fn round(&mut self, i: usize, now: i64, writes: &mut Vec<WriteSeries>) -> Result<bool, String> {
        let t = &self.targets[i];
        let step = t.target.step_ms();
        let end = now / step * step;
        if t.last_step.is_some_and(|l| l >= end) {
            return Ok(false);
        }
        let history = t.target.history.as_millis() as i64 / step * step;
        let refit = t.fitted_at.is_none_or(|f| end - f >= t.target.retrain.as_millis() as i64);
        let from = match t.last_step {
            Some(last) if !refit => (last + step).max(end - history),
            _ => end - history,
        };
        let query = t.target.query.clone();
        // The backend alone is held across awaits: `self` holds models that are Send but not Sync.
        let backend = self.backend.clone();
        let mut data = read(&*backend, &query, from, end, step).await?;
        let t = &self.targets[i];
        if !refit && data.keys().any(|l| !t.series.contains_key(l)) {
            // A new series: its history, to fit it now.
            let full = read(&*backend, &query, end - history, end, step).await?;
            let t = &self.targets[i];
            for (labels, samples) in full {
                if !t.series.contains_key(&labels) {
                    data.insert(labels, samples);
                }
            }
        }
        // Fits first, on the blocking pool (an LSTM takes up to a minute of CPU): nothing changes before
        // they are done, so a round cancelled at shutdown leaves the state as it was.
        let t = &self.targets[i];
        let config = ModelConfig { horizon: t.target.horizon_steps, step_ms: step };
        let (to_fit, to_observe): (Vec<_>, Vec<_>) =
            data.into_iter().partition(|(labels, _)| refit || !t.series.contains_key(labels));
        let fits = to_fit.len();
        let fitted = if to_fit.is_empty() {
            Vec::new()
        } else {
            let target = t.target.clone();
            tokio::task::spawn_blocking(move || fit_all(&target, config, step, to_fit))
                .await
                .map_err(|e| format!("fitting the series failed: {e}"))?
        };
        let t = &mut self.targets[i];
        for (labels, samples) in to_observe {
            let Some(s) = t.series.get_mut(&labels) else { continue };
            for (_, v) in regular(&samples, s.last_t + step, step, Some(s.last_v)) {
                s.model.observe(v);
            }
            if let Some(last) = samples.last().filter(|l| l.t > s.last_t) {
                s.last_t = last.t;
                s.last_v = fill_value(&samples, last.t);
            }
        }
        for (labels, result) in fitted {
            match result {
                Ok(state) => {
                    t.series.insert(labels, state);
                }
                Err(error) => {
                    tracing::debug!(target_name = %t.target.name, %error, "Series not forecast yet");
                }
            }
        }
        if refit {
            t.fitted_at = Some(end);
        }
        t.last_step = Some(end);
        let forget = self.forget_after;
        t.series.retain(|_, s| end - s.last_t <= forget);
        // Forecast the series seen at this step.
        t.latest.clear();
        let mut entries = Vec::new();
        for (labels, s) in &t.series {
            if s.last_t != end {
                continue;
            }
            let f = match s.model.forecaster().forecast(t.target.horizon_steps) {
                Ok(f) => f,
                Err(error) => {
                    tracing::debug!(target_name = %t.target.name, %error, "Forecast failed");
                    continue;
                }
            };
            let model = s.model.model_name();
            let base = labels.without_name();
            for (label, k) in &t.target.horizons {
                for (name, v) in
                    [("argus_yhat", &f.mean), ("argus_yhat_lower", &f.lower), ("argus_yhat_upper", &f.upper)]
                {
                    let mut l = base.clone();
                    l.set(METRIC_NAME, name);
                    l.set("metric", &t.target.metric);
                    l.set("model", &model);
                    l.set("horizon", label);
                    writes.push(WriteSeries { labels: l, samples: vec![Sample { t: end, v: v[k - 1] }] });
                }
            }
            let backtest = s.model.selection().map(|sel| Backtest {
                mae: sel.backtest_mae,
                naive_mae: sel.candidates.iter().find(|(n, _)| n == "naive").map(|c| c.1),
            });
            entries.push(ForecastEntry {
                target: t.target.name.clone(),
                metric: t.target.metric.clone(),
                labels: base.iter().map(|l| (l.name.clone(), l.value.clone())).collect(),
                model,
                made_at: end as f64 / 1000.0,
                step_seconds: step as f64 / 1000.0,
                backtest,
                points: (0..f.mean.len())
                    .map(|k| Point {
                        t: (end + (k as i64 + 1) * step) as f64 / 1000.0,
                        yhat: f.mean[k],
                        lower: f.lower[k],
                        upper: f.upper[k],
                    })
                    .collect(),
            });
            t.latest.insert(labels.clone(), f);
        }
        entries.sort_by(|a, b| a.labels.cmp(&b.labels));
        self.metrics
            .forecast_models(&t.target.metric, t.series.values().map(|s| (s.model.model_name(), s.model.selection())));
        self.metrics.forecast_fits(&t.target.name, fits, t.series.len());
        self.board.by_target.write().insert(t.target.name.clone(), entries);
        Ok(true)
    }

    /// Plans pool `p` from its demand target's latest forecast.
    async fn plan(&mut self, p: usize, writes: &mut Vec<WriteSeries>) -> Result<Recommendation, String> {
        let pool = self.pools[p].pool.clone();
        let (end, demand, demand_peak) = self.outlook(&pool.demand)?;
        let (low_priority, low_peak) = match &pool.low_priority {
            Some(name) => {
                let (_, outlook, peak) = self.outlook(name)?;
                (Some(outlook), peak)
            }
            None => (None, None),
        };
        let backend = self.backend.clone();
        let current = match backend.query_instant(&pool.current, end).await.map_err(|e| e.to_string())? {
            QueryValue::Vector(v) => v.iter().map(|(_, s)| s.v).filter(|v| v.is_finite()).sum::<f64>(),
            QueryValue::Scalar(s) => s.v,
            _ => return Err("current: the query returns neither a number nor series".into()),
        };
        let input = PlanInput { timestamp_ms: end, current: current.max(0.0).round() as u64, demand, low_priority };
        let state = &mut self.pools[p];
        let mut rec = state.planner.plan(&input);
        rec.explain_forecast(demand_peak, low_peak);
        let labels = |name: &str, extra: Option<(&str, &str)>| {
            let mut l = Labels::from_pairs([(METRIC_NAME, name.to_string()), ("pool", pool.pool.clone())]);
            if let Some((n, v)) = extra {
                l.set(n, v);
            }
            l
        };
        for (name, v) in [
            ("argus_capacity_current", rec.current as f64),
            ("argus_capacity_demand", rec.demand),
            ("argus_capacity_forecast_upper", rec.forecast_upper),
            ("argus_capacity_base", rec.base as f64),
            ("argus_capacity_reservation", rec.reservation as f64),
            ("argus_capacity_desired", rec.desired as f64),
            ("argus_capacity_recommended", rec.recommended as f64),
        ] {
            writes.push(WriteSeries { labels: labels(name, None), samples: vec![Sample { t: end, v }] });
        }
        for (reason, held) in
            [("hysteresis", HeldBy::Hysteresis), ("cooldown", HeldBy::Cooldown), ("window", HeldBy::Window)]
        {
            let v = if rec.held_by == Some(held) { 1.0 } else { 0.0 };
            writes.push(WriteSeries {
                labels: labels("argus_capacity_held", Some(("reason", reason))),
                samples: vec![Sample { t: end, v }],
            });
        }
        state.last = Some(rec.clone());
        self.board.capacity.write().insert(pool.pool.clone(), rec.clone());
        Ok(rec)
    }

    /// The step, demand outlook and forecast peak of a target with exactly one series forecast at its
    /// last step.
    fn outlook(&self, target: &str) -> Result<(i64, Outlook, Option<ForecastPeak>), String> {
        let t = self.targets.iter().find(|t| t.target.name == target).ok_or_else(|| format!("no target {target:?}"))?;
        let end = t.last_step.ok_or_else(|| format!("target {target:?} has not been forecast"))?;
        let mut latest = t.latest.iter();
        let (Some((labels, f)), None) = (latest.next(), latest.next()) else {
            return Err(format!(
                "target {target:?} forecasts {} series at its last step; a pool's demand needs exactly one (aggregate in the query)",
                t.latest.len()
            ));
        };
        let series = t.series.get(labels);
        let now = series.map_or(f64::NAN, |s| s.last_v);
        let model = series.map_or_else(String::new, |s| s.model.model_name());
        let peak = ForecastPeak::from_forecast(f, end, t.target.step_ms(), &model);
        Ok((end, Outlook::from_forecast(now, f), peak))
    }
}

/// The series of `query` from `from` to `to` at `step`, chunked.
async fn read(
    backend: &dyn StoreBackend,
    query: &str,
    from: i64,
    to: i64,
    step: i64,
) -> Result<HashMap<Labels, Vec<Sample>>, String> {
    let mut out: HashMap<Labels, Vec<Sample>> = HashMap::new();
    let mut start = from;
    while start <= to {
        let end = (start + (CHUNK_STEPS - 1) * step).min(to);
        let value = backend.query_range(query, start, end, step).await.map_err(|e| e.to_string())?;
        let QueryValue::Matrix(series) = value else {
            return Err("the query does not return a range vector of series".into());
        };
        for s in series {
            out.entry((*s.labels).clone()).or_default().extend_from_slice(&s.samples);
        }
        start = end + step;
    }
    Ok(out)
}

/// Fits each series from its history (run on the blocking pool), on every core: a fit is independent
/// of the others, and one series' model choice (every candidate backtested, the LSTM among them) costs
/// seconds, so a target over a thousand series would otherwise wait on one core for its first forecast.
fn fit_all(
    target: &Target,
    config: ModelConfig,
    step: i64,
    series: Vec<(Labels, Vec<Sample>)>,
) -> Vec<(Labels, Result<SeriesState, ForecastError>)> {
    let fit_one = |(labels, samples): (Labels, Vec<Sample>)| {
        let first = samples.first()?;
        let points = regular(&samples, first.t, step, None);
        let values: Vec<f64> = points.iter().map(|p| p.1).collect();
        let history = Regular { start_ms: first.t, step_ms: step, values: &values };
        let (last_t, last_v) = *points.last()?;
        Some((labels, fit(target, config, history).map(|model| SeriesState { model, last_t, last_v })))
    };
    let threads = crate::detect::iforest::threads(0).min(series.len()).max(1);
    if threads == 1 {
        return series.into_iter().filter_map(fit_one).collect();
    }
    // Dealt round-robin so that long and short histories spread evenly.
    let mut shares: Vec<Vec<(Labels, Vec<Sample>)>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, s) in series.into_iter().enumerate() {
        shares[i % threads].push(s);
    }
    std::thread::scope(|scope| {
        let workers: Vec<_> = shares
            .into_iter()
            .map(|share| scope.spawn(move || share.into_iter().filter_map(fit_one).collect::<Vec<_>>()))
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

/// Fits a series: the per-series choice, or the naive model when the history is too short to choose.
fn fit(target: &Target, config: ModelConfig, history: Regular<'_>) -> Result<Model, ForecastError> {
    let mut selected = match &target.models {
        Some(names) => Selected::with_models(config, names.clone()),
        None => Selected::new(config),
    };
    match selected.fit(history) {
        Ok(()) => Ok(Model::Selected(Box::new(selected))),
        Err(ForecastError::TooShort { .. }) => {
            let build = MODELS.iter().find(|(n, _)| *n == "naive").map(|(_, b)| b).expect("naive is registered");
            let mut naive = build(&config);
            naive.fit(history)?;
            Ok(Model::Fallback(naive))
        }
        Err(e) => Err(e),
    }
}

/// The value at `t` (the sample there, else the last one before it).
fn fill_value(samples: &[Sample], t: i64) -> f64 {
    samples.iter().rev().find(|s| s.t <= t).map_or(f64::NAN, |s| s.v)
}

/// `(t, value)` at every step from `from` to the last sample, gaps filled with the previous value (or
/// `before`); steps before the first value are left out.
fn regular(samples: &[Sample], from: i64, step: i64, before: Option<f64>) -> Vec<(i64, f64)> {
    let Some(last) = samples.last() else { return Vec::new() };
    let mut out = Vec::new();
    let mut prev = before;
    let mut it = samples.iter().peekable();
    let mut t = from;
    while t <= last.t {
        while let Some(s) = it.peek()
            && s.t <= t
        {
            if s.v.is_finite() {
                prev = Some(s.v);
            }
            it.next();
        }
        if let Some(v) = prev {
            out.push((t, v));
        }
        t += step;
    }
    out
}

#[cfg(test)]
mod tests;
