//! Per-series model choice: every registered model is backtested with a rolling origin over a validation
//! slice at the end of the history it is fitted on, and the series gets, for each horizon step, the best
//! single model or the best two-model blend (weights on a 5 % grid), whichever has the lower MAE there.
//! [`Selected`] is itself a [`Forecaster`], so the runtime and `argus eval forecast` treat it like any other.

use super::baseline::{Naive, SeasonalNaive};
use super::calibrate::{Band, Calibrated, Volatility};
use super::ets::Ets;
use super::gbdt::Gbdt;
use super::linear::Linear;
use super::lstm::{LstmConfig, LstmForecaster};
use super::mstl::Mstl;
use super::{Forecast, ForecastError, Forecaster, Regular};
use serde::{Deserialize, Serialize};

/// What the models are built for: the horizon and the series' step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// Steps ahead to forecast (and to calibrate bands and choose models for).
    pub horizon: usize,
    pub step_ms: i64,
}

impl ModelConfig {
    /// Steps per day (at least 1).
    pub fn day(&self) -> usize {
        (86_400_000 / self.step_ms.max(1)).max(1) as usize
    }
}

/// Builds one model for a config.
pub type Build = fn(&ModelConfig) -> Box<dyn Forecaster>;

/// Every model Argus can forecast with, by its `model` label. [`Selected`] chooses among all of them.
pub const MODELS: &[(&str, Build)] = &[
    ("naive", |c| Box::new(Calibrated::new("naive", Naive::default(), c.horizon))),
    ("seasonal_naive", |c| Box::new(Calibrated::new("seasonal_naive", SeasonalNaive::new(c.day()), c.horizon))),
    ("ets", |c| Box::new(Calibrated::new("ets", Ets::new(2 * c.day()), c.horizon))),
    ("mstl", |c| Box::new(Calibrated::new("mstl", Mstl::new(vec![c.day()], 7 * c.day(), 2 * c.day()), c.horizon))),
    ("linear", |c| Box::new(Calibrated::new("linear", Linear::new(c.horizon, c.day()), c.horizon))),
    ("lstm", |c| Box::new(LstmForecaster::new(LstmConfig { horizon: c.horizon, ..LstmConfig::default() }))),
];

/// Models `argus eval forecast` also chooses among, which the runtime does not: the gradient-boosted
/// forecaster. The runtime saves every candidate of every series at each checkpoint, and its saved state
/// holds every node of 100 trees for each of its anchor models (5 at a 15-minute horizon), against a few
/// numbers for the other point models; and on the shared series it did not beat naive at +1 h
/// (docs/eval-forecast.md). Moving it into [`MODELS`] makes it a runtime candidate (and a valid `models`
/// entry); [`load_model`] already reads it back.
pub const EVAL_MODELS: &[(&str, Build)] =
    &[("gbdt", |c| Box::new(Calibrated::new("gbdt", Gbdt::new(c.horizon, c.step_ms), c.horizon)))];

/// All registered models, built for `config`.
pub fn build_all(config: &ModelConfig) -> Vec<Box<dyn Forecaster>> {
    MODELS.iter().map(|(_, build)| build(config)).collect()
}

/// The model named `name` in [`MODELS`] or [`EVAL_MODELS`], built for `config`.
pub fn build(name: &str, config: &ModelConfig) -> Option<Box<dyn Forecaster>> {
    MODELS.iter().chain(EVAL_MODELS).find(|(n, _)| *n == name).map(|(_, build)| build(config))
}

/// A model saved by [`Forecaster::save`], read back by its `model` label; `None` for a name with no saved
/// form here (that model is refitted after a restart).
pub fn load_model(name: &str, state: serde_json::Value) -> Option<Result<Box<dyn Forecaster>, String>> {
    fn load<M: super::calibrate::PointModel + Serialize + serde::de::DeserializeOwned + 'static>(
        state: serde_json::Value,
    ) -> Result<Box<dyn Forecaster>, String> {
        serde_json::from_value::<Calibrated<M>>(state)
            .map(|m| Box::new(m) as Box<dyn Forecaster>)
            .map_err(|e| e.to_string())
    }
    Some(match name {
        "naive" => load::<Naive>(state),
        "seasonal_naive" => load::<SeasonalNaive>(state),
        "ets" => load::<Ets>(state),
        "mstl" => load::<Mstl>(state),
        "linear" => load::<Linear>(state),
        "gbdt" => load::<Gbdt>(state),
        "lstm" => LstmForecaster::from_json(state).map(|m| Box::new(m) as Box<dyn Forecaster>),
        _ => return None,
    })
}

/// The choice made for one series, for the `argus_forecast_model_selected` and
/// `argus_forecast_backtest_mae` metrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    /// The chosen model's name, or `ensemble` when steps blend models.
    pub model: String,
    /// Backtest MAE of the choice, averaged over the horizon steps.
    pub backtest_mae: f64,
    /// Backtest MAE of every candidate that could be fitted.
    pub candidates: Vec<(String, f64)>,
    /// Weight of each candidate, averaged over the horizon steps.
    pub weights: Vec<(String, f64)>,
}

/// The per-series choice among [`MODELS`].
pub struct Selected {
    config: ModelConfig,
    /// Share of the history (at most `max_validation` points) the choice is backtested on.
    validation_share: f64,
    max_validation: usize,
    /// The candidates by name, when not every registered model.
    only: Option<Vec<String>>,
    /// Whether [`EVAL_MODELS`] are candidates too.
    eval_models: bool,
    models: Vec<Box<dyn Forecaster>>,
    /// `weights[h][m]`: weight of model `m` at step `h + 1`.
    weights: Vec<Vec<f64>>,
    band: Band,
    volatility: Volatility,
    selection: Selection,
}

impl Selected {
    pub fn new(config: ModelConfig) -> Self {
        Selected {
            config,
            validation_share: 0.2,
            max_validation: 4 * config.day(),
            only: None,
            eval_models: false,
            models: Vec::new(),
            weights: Vec::new(),
            band: Band::default(),
            volatility: Volatility::new(Volatility::SPAN),
            selection: Selection::default(),
        }
    }

    /// Chooses among the named models only (names from [`MODELS`], and [`EVAL_MODELS`] after
    /// [`Selected::with_eval_models`]).
    pub fn with_models(config: ModelConfig, names: Vec<String>) -> Self {
        Selected { only: Some(names), ..Selected::new(config) }
    }

    /// Adds [`EVAL_MODELS`] to the candidates, as `argus eval forecast` does.
    pub fn with_eval_models(self) -> Self {
        Selected { eval_models: true, ..self }
    }

    /// The fitted state: the choice, the blend weights, the band and every model's own state. `None`
    /// before the first fit or when a model cannot be saved.
    pub fn save(&self) -> Option<serde_json::Value> {
        if self.models.is_empty() {
            return None;
        }
        let models = self.models.iter().map(|m| m.save()).collect::<Option<Vec<_>>>()?;
        serde_json::to_value(SavedSelected {
            config: self.config,
            only: self.only.clone(),
            weights: self.weights.clone(),
            band: self.band.clone(),
            volatility: self.volatility.clone(),
            selection: self.selection.clone(),
            models,
        })
        .ok()
    }

    /// A fitted choice saved by [`Selected::save`], ready to observe and forecast without refitting.
    pub fn load(state: serde_json::Value) -> Result<Selected, String> {
        let saved: SavedSelected = serde_json::from_value(state).map_err(|e| e.to_string())?;
        if saved.models.len() != saved.selection.weights.len() {
            return Err("the saved models do not match the saved weights".into());
        }
        let models = saved
            .selection
            .weights
            .iter()
            .zip(saved.models)
            .map(|((name, _), state)| load_model(name, state).unwrap_or_else(|| Err(format!("unknown model {name:?}"))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Selected {
            weights: saved.weights,
            band: saved.band,
            volatility: saved.volatility,
            selection: saved.selection,
            models,
            only: saved.only,
            ..Selected::new(saved.config)
        })
    }

    /// The last choice made by `fit`.
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    fn combine(&self, forecasts: &[Forecast], horizon: usize) -> Vec<f64> {
        (0..horizon)
            .map(|i| {
                let w = &self.weights[i.min(self.weights.len() - 1)];
                forecasts.iter().zip(w).filter(|(_, w)| **w > 0.0).map(|(f, w)| w * f.mean[i]).sum()
            })
            .collect()
    }
}

/// The saved form of [`Selected`] (docs/format/analyzer-forecast-state.md).
#[derive(Serialize, Deserialize)]
struct SavedSelected {
    config: ModelConfig,
    only: Option<Vec<String>>,
    weights: Vec<Vec<f64>>,
    band: Band,
    volatility: Volatility,
    selection: Selection,
    models: Vec<serde_json::Value>,
}

impl Forecaster for Selected {
    fn name(&self) -> &str {
        "selected"
    }

    fn fit(&mut self, history: Regular<'_>) -> Result<(), ForecastError> {
        let n = history.values.len();
        let h = self.config.horizon;
        let held = ((n as f64 * self.validation_share) as usize).min(self.max_validation);
        if held < 10 * h {
            return Err(ForecastError::TooShort { need: 50 * h, have: n });
        }
        let split = n - held;
        // Backtest: fit on everything before the validation slice, then walk it.
        let only = self.only.as_ref();
        let eval_models = if self.eval_models { EVAL_MODELS } else { &[] };
        let mut probes: Vec<Box<dyn Forecaster>> = MODELS
            .iter()
            .chain(eval_models)
            .map(|(_, build)| build(&self.config))
            .filter(|m| only.is_none_or(|names| names.iter().any(|n| n == m.name())))
            .filter_map(|mut m| m.fit(Regular { values: &history.values[..split], ..history }).ok().map(|()| m))
            .collect();
        if probes.is_empty() {
            return Err(ForecastError::Model("no model could be fitted".into()));
        }
        let origins = held - h;
        // forecasts[m][o * h + i]
        let mut forecasts = vec![Vec::with_capacity(origins * h); probes.len()];
        for o in 0..origins {
            for (m, probe) in probes.iter_mut().enumerate() {
                let f = probe.forecast(h)?;
                forecasts[m].extend_from_slice(&f.mean);
                probe.observe(history.values[split + o]);
            }
        }
        let actual = |o: usize, i: usize| history.values[split + o + i];
        let mae = |blend: &dyn Fn(usize, usize) -> f64, i: usize| {
            (0..origins).map(|o| (actual(o, i) - blend(o, i)).abs()).sum::<f64>() / origins as f64
        };
        let m_count = probes.len();
        self.weights.clear();
        let mut total = 0.0;
        let mut candidates = vec![0.0; m_count];
        for i in 0..h {
            let mut best = (f64::INFINITY, vec![0.0; m_count]);
            for a in 0..m_count {
                let single = mae(&|o, i| forecasts[a][o * h + i], i);
                candidates[a] += single / h as f64;
                if single < best.0 {
                    best = (single, (0..m_count).map(|m| if m == a { 1.0 } else { 0.0 }).collect());
                }
                for b in a + 1..m_count {
                    for k in 1..20 {
                        let w = k as f64 / 20.0;
                        let e = mae(&|o, i| w * forecasts[a][o * h + i] + (1.0 - w) * forecasts[b][o * h + i], i);
                        if e < best.0 {
                            let mut weights = vec![0.0; m_count];
                            weights[a] = w;
                            weights[b] = 1.0 - w;
                            best = (e, weights);
                        }
                    }
                }
            }
            total += best.0 / h as f64;
            self.weights.push(best.1);
        }
        // The band: the blend's own errors on the validation slice, in units of volatility.
        self.volatility.reset(&history.values[..split]);
        let mut errors = vec![Vec::with_capacity(origins); h];
        for o in 0..origins {
            for (i, errs) in errors.iter_mut().enumerate() {
                let blend: f64 = (0..m_count).map(|m| self.weights[i][m] * forecasts[m][o * h + i]).sum();
                errs.push((actual(o, i) - blend) / self.volatility.scale());
            }
            self.volatility.push(history.values[split + o]);
        }
        self.band = Band::from_errors(&mut errors);
        let names: Vec<String> = probes.iter().map(|p| p.name().to_string()).collect();
        let mean_weight: Vec<f64> =
            (0..m_count).map(|m| self.weights.iter().map(|w| w[m]).sum::<f64>() / h as f64).collect();
        let used: Vec<usize> = (0..m_count).filter(|&m| mean_weight[m] > 0.0).collect();
        self.selection = Selection {
            model: if used.len() == 1 { names[used[0]].clone() } else { "ensemble".into() },
            backtest_mae: total,
            candidates: names.iter().cloned().zip(candidates).collect(),
            weights: names.iter().cloned().zip(mean_weight.iter().copied()).collect(),
        };
        // The models themselves, in the weights' order: those the choice uses refitted on the whole
        // history; the others (kept so that a later refit and the saved state list every candidate) are
        // their probes, caught up with the last points, which saves refitting an unused LSTM.
        let mut models = Vec::with_capacity(m_count);
        for (m, mut probe) in probes.into_iter().enumerate() {
            if mean_weight[m] > 0.0 {
                let mut model = build(&names[m], &self.config).expect("names come from MODELS or EVAL_MODELS");
                model.fit(history)?;
                models.push(model);
            } else {
                for &v in &history.values[split + origins..] {
                    probe.observe(v);
                }
                models.push(probe);
            }
        }
        self.models = models;
        self.volatility.reset(history.values);
        Ok(())
    }

    fn observe(&mut self, value: f64) {
        for m in &mut self.models {
            m.observe(value);
        }
        self.volatility.push(value);
    }

    fn forecast(&self, horizon: usize) -> Result<Forecast, ForecastError> {
        if self.models.is_empty() {
            return Err(ForecastError::Model("selected: not fitted".into()));
        }
        let forecasts = self
            .models
            .iter()
            .zip(&self.selection.weights)
            .map(|(m, (_, w))| if *w > 0.0 { m.forecast(horizon) } else { Ok(Forecast::default()) })
            .collect::<Result<Vec<_>, _>>()?;
        let point = self.combine(&forecasts, horizon);
        Ok(self.band.apply(point, self.volatility.scale()))
    }

    fn save(&self) -> Option<serde_json::Value> {
        Selected::save(self)
    }
}
