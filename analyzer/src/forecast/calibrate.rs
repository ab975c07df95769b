//! The 80 % band every point model shares: empirical 10th/90th percentiles of its own out-of-sample errors,
//! per horizon step, measured on the tail of the history it is fitted on.
//!
//! A model fits its parameters on the history minus a calibration tail, then walks the tail one point at a
//! time exactly as it will at runtime, forecasting from every origin. The errors it makes there set the
//! band, so the band is as wide as the model's real errors, whatever the model assumes about its noise.
//! Errors are measured in units of the series' recent volatility (a moving average of the absolute
//! one-step change) and scaled back by the volatility at forecast time, so the band widens when the series
//! turns busier than it was during calibration.

use serde::{Deserialize, Serialize};

use super::{Forecast, ForecastError, Forecaster, Regular};

/// A model that forecasts a point trajectory and moves forward one observation at a time.
pub trait PointModel: Send {
    /// Fewest points `fit` accepts.
    fn min_history(&self) -> usize;
    /// Fits the parameters on `history` and leaves the state at its last point.
    fn fit(&mut self, history: Regular<'_>) -> Result<(), ForecastError>;
    /// Appends one point to the state.
    fn push(&mut self, value: f64);
    /// Writes the point forecast for the next `out.len()` steps.
    fn point(&self, out: &mut [f64]);
}

/// Moving average of the absolute one-step change, over about `span` steps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Volatility {
    last: Option<f64>,
    mean: f64,
    span: f64,
}

impl Volatility {
    /// Steps the average spans by default (six hours at one-minute steps).
    pub const SPAN: usize = 360;

    pub fn new(span: usize) -> Self {
        Volatility { last: None, mean: 0.0, span: span.max(1) as f64 }
    }

    pub fn push(&mut self, value: f64) {
        if !value.is_finite() {
            return;
        }
        if let Some(last) = self.last {
            self.mean += ((value - last).abs() - self.mean) / self.span;
        }
        self.last = Some(value);
    }

    /// Starts from the mean absolute change over the last `span` points of `values`, then follows them.
    pub fn reset(&mut self, values: &[f64]) {
        let tail = &values[values.len().saturating_sub(self.span as usize + 1)..];
        let changes = tail.len().saturating_sub(1).max(1) as f64;
        self.mean = tail.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>() / changes;
        self.last = tail.last().copied();
    }

    /// The current scale, kept above zero so a flat stretch cannot collapse the band.
    pub fn scale(&self) -> f64 {
        self.mean.max(1e-6 * (1.0 + self.last.unwrap_or(0.0).abs()))
    }
}

/// Error quantiles per horizon step, in units of [`Volatility::scale`]: `lower[i]`/`upper[i]` are added to the point forecast `i + 1` steps
/// ahead.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub lower: Vec<f64>,
    pub upper: Vec<f64>,
}

impl Band {
    /// The 10th/90th percentiles of `errors[h]` (actual − forecast at step `h + 1`, divided by the scale).
    pub fn from_errors(errors: &mut [Vec<f64>]) -> Band {
        let mut band = Band::default();
        for e in errors.iter_mut() {
            e.retain(|x| x.is_finite());
            e.sort_by(f64::total_cmp);
            band.lower.push(quantile_sorted(e, 0.1));
            band.upper.push(quantile_sorted(e, 0.9));
        }
        band
    }

    /// Mean, lower and upper for `point` at volatility `scale`; steps past the calibrated ones widen with
    /// the square root of the step, from the last calibrated one.
    pub fn apply(&self, point: Vec<f64>, scale: f64) -> Forecast {
        let n = self.lower.len();
        let widen = |i: usize, v: &[f64]| -> f64 {
            scale
                * if n == 0 {
                    0.0
                } else if i < n {
                    v[i]
                } else {
                    v[n - 1] * ((i + 1) as f64 / n as f64).sqrt()
                }
        };
        // Residuals of a biased model can all lie on one side; the band still holds the forecast, so a
        // reader never sees a point outside its own band.
        let lower = point.iter().enumerate().map(|(i, p)| (p + widen(i, &self.lower)).min(*p)).collect();
        let upper = point.iter().enumerate().map(|(i, p)| (p + widen(i, &self.upper)).max(*p)).collect();
        Forecast { mean: point, lower, upper }
    }
}

/// Linear-interpolated quantile of sorted values (0 when empty).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    if i + 1 < sorted.len() { sorted[i] * (1.0 - frac) + sorted[i + 1] * frac } else { sorted[i] }
}

/// A [`PointModel`] with its calibrated band: the [`Forecaster`] the rest of Argus uses.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibrated<M> {
    name: String,
    pub model: M,
    /// Steps ahead the band is measured for.
    horizon: usize,
    /// Share of the history (at most `max_calibration` points) held out to measure the band.
    calibration_share: f64,
    max_calibration: usize,
    band: Band,
    volatility: Volatility,
}

impl<M: PointModel> Calibrated<M> {
    /// `horizon` is the number of steps the band is measured for (forecasts further ahead widen it).
    pub fn new(name: &str, model: M, horizon: usize) -> Self {
        Calibrated {
            name: name.to_string(),
            model,
            horizon: horizon.max(1),
            calibration_share: 0.2,
            max_calibration: 4 * 1440,
            band: Band::default(),
            volatility: Volatility::new(Volatility::SPAN),
        }
    }

    pub fn band(&self) -> &Band {
        &self.band
    }
}

impl<M: PointModel + Serialize> Forecaster for Calibrated<M> {
    fn name(&self) -> &str {
        &self.name
    }

    fn fit(&mut self, history: Regular<'_>) -> Result<(), ForecastError> {
        let n = history.values.len();
        let need = self.model.min_history() + 2 * self.horizon;
        if n < need {
            return Err(ForecastError::TooShort { need, have: n });
        }
        let held = ((n as f64 * self.calibration_share) as usize)
            .min(self.max_calibration)
            .min(n - self.model.min_history())
            .max(self.horizon + 1);
        let split = n - held;
        self.model.fit(Regular { values: &history.values[..split], ..history })?;
        self.volatility.reset(&history.values[..split]);
        let h = self.horizon;
        let mut errors = vec![Vec::with_capacity(held); h];
        let mut point = vec![0.0; h];
        for origin in split..n {
            self.model.point(&mut point);
            for (step, p) in point.iter().enumerate() {
                if let Some(actual) = history.values.get(origin + step) {
                    errors[step].push((actual - p) / self.volatility.scale());
                }
            }
            self.model.push(history.values[origin]);
            self.volatility.push(history.values[origin]);
        }
        self.band = Band::from_errors(&mut errors);
        Ok(())
    }

    fn observe(&mut self, value: f64) {
        self.model.push(value);
        self.volatility.push(value);
    }

    fn forecast(&self, horizon: usize) -> Result<Forecast, ForecastError> {
        let mut point = vec![0.0; horizon];
        self.model.point(&mut point);
        Ok(self.band.apply(point, self.volatility.scale()))
    }

    fn save(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self).ok()
    }
}
