//! Forecasters behind one trait, so the backtest, the model choice, the runtime and `argus eval forecast`
//! treat the naive baseline and the LSTM alike.

use std::fmt;

/// A forecast over the next `horizon` steps: `mean[i]` is the forecast for `i + 1` steps ahead, and the
/// band is the 80 % interval (10th and 90th percentiles).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Forecast {
    pub mean: Vec<f64>,
    pub lower: Vec<f64>,
    pub upper: Vec<f64>,
}

/// Why a forecaster could not fit or forecast.
#[derive(Debug, Clone, PartialEq)]
pub enum ForecastError {
    /// Not enough history for this model (`need` points, `have` points).
    TooShort { need: usize, have: usize },
    /// The model could not be fitted or run; the string says why.
    Model(String),
}

impl fmt::Display for ForecastError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForecastError::TooShort { need, have } => write!(f, "needs {need} points of history, has {have}"),
            ForecastError::Model(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for ForecastError {}

/// One series at a regular step: `values[i]` is at `start_ms + i * step_ms`.
#[derive(Debug, Clone, Copy)]
pub struct Regular<'a> {
    pub start_ms: i64,
    pub step_ms: i64,
    pub values: &'a [f64],
}

/// A forecasting model. `fit` learns from history; `observe` brings the state up to date with each new
/// point without refitting; `forecast` looks ahead from the last point seen.
pub trait Forecaster: Send {
    /// The `model` label value: `naive`, `seasonal_naive`, `ets`, `mstl`, `lstm`, `gbdt`, …
    fn name(&self) -> &str;
    /// Fits the model on `history`, replacing anything learnt before.
    fn fit(&mut self, history: Regular<'_>) -> Result<(), ForecastError>;
    /// Appends one new point (at the next step after the last one seen) to the model's state.
    fn observe(&mut self, value: f64);
    /// The forecast for the next `horizon` steps after the last point fitted or observed.
    fn forecast(&self, horizon: usize) -> Result<Forecast, ForecastError>;
    /// The fitted state as JSON, for a restart that resumes without refitting; `None` when the model
    /// cannot be saved (it is refitted after a restart). [`select::load_model`] reads it back.
    fn save(&self) -> Option<serde_json::Value> {
        None
    }
}

pub mod baseline;
pub mod calibrate;
pub mod ets;
pub mod gbdt;
pub mod linear;
pub mod lstm;
pub mod mstl;
pub mod select;
