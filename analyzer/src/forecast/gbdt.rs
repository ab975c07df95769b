//! A gradient-boosted forecaster: trees (`forust-ml`) that predict the change from the last value to a
//! point some steps ahead, from the time of day and week, the recent past and the same stretch one day and
//! one week earlier ([`features`]).
//!
//! Direct multi-horizon, one model per anchor step (1, 2, 4, … and the horizon itself), the steps between
//! anchors interpolated linearly. A model per step would cost the horizon's length in fits (360 at six
//! hours of one-minute steps); the step ahead as a feature would multiply the training rows by the horizon
//! and still leave the trees piecewise constant in it. The anchors double, so the short steps, where the
//! change moves fastest, get the most models, and a six-hour horizon needs ten.
//!
//! Predicting the change makes the last value the starting point, as the LSTM does: where nothing can be
//! learnt, the trees stay near zero and the forecast near naive's.
//!
//! The trees use LightGBM's published defaults (100 rounds, learning rate 0.1, 31 leaves grown best-first,
//! at least 20 rows a leaf, no L2, 256 bins, no bagging) and were not tuned on any series. Training rows
//! are every origin of the history, or every k-th where that would be more than [`MAX_ROWS`]: neighbouring
//! origins of a one-minute series are near copies. One thread and a fixed seed make a fit a pure function
//! of the history. The 80 % band is [`Calibrated`](super::calibrate::Calibrated)'s, as for every point
//! model.

pub mod features;

use forust_ml::gradientbooster::GrowPolicy;
use forust_ml::objective::ObjectiveType;
use forust_ml::{GradientBooster, Matrix};
use serde::{Deserialize, Serialize};

use self::features::{COLUMNS, WARMUP};
use super::calibrate::PointModel;
use super::{ForecastError, Regular};

/// Most training rows per anchor model.
pub const MAX_ROWS: usize = 20_000;
/// Fewest training rows per anchor model.
const MIN_ROWS: usize = 200;

/// The gradient-boosted point model; wrap it in [`Calibrated`](super::calibrate::Calibrated) for a band.
#[derive(Serialize, Deserialize)]
pub struct Gbdt {
    horizon: usize,
    /// Steps a day, for the day and week lags.
    day: usize,
    /// The steps ahead with a model of their own, ascending, the last one `horizon`.
    anchors: Vec<usize>,
    models: Vec<GradientBooster>,
    /// The last points seen (at least a week and the longest window), oldest first.
    recent: Vec<f64>,
    /// Time of the last point seen.
    last_ms: i64,
    step_ms: i64,
}

impl Gbdt {
    /// A model for `horizon` steps of `step_ms`.
    pub fn new(horizon: usize, step_ms: i64) -> Self {
        let horizon = horizon.max(1);
        let day = (86_400_000 / step_ms.max(1)).max(1) as usize;
        Gbdt { horizon, day, anchors: anchors(horizon), models: Vec::new(), recent: Vec::new(), last_ms: 0, step_ms }
    }

    /// Points kept for the features: a week back from the origin, plus the longest window.
    fn keep(&self) -> usize {
        7 * self.day + WARMUP + 1
    }
}

/// 1, 2, 4, … below `horizon`, then `horizon`.
fn anchors(horizon: usize) -> Vec<usize> {
    let mut out: Vec<usize> =
        std::iter::successors(Some(1usize), |s| s.checked_mul(2)).take_while(|s| *s < horizon).collect();
    out.push(horizon);
    out
}

/// LightGBM's defaults for regression (100 rounds, learning rate 0.1, 31 leaves grown best-first, 20
/// rows a leaf, no L2, 256 bins), on one thread with a fixed seed: the starting point of every
/// gradient-boosted model of the analyzer (`argus simulate --demand`'s CES forecaster too).
pub(crate) fn booster() -> GradientBooster {
    let mut b = GradientBooster::default()
        .set_objective_type(ObjectiveType::SquaredLoss)
        .set_iterations(100)
        .set_learning_rate(0.1)
        .set_max_depth(usize::MAX)
        .set_max_leaves(31)
        .set_min_leaf_weight(20.0)
        .set_l2(0.0)
        .set_nbins(256)
        .set_initialize_base_score(true)
        .set_seed(0)
        .set_parallel(false)
        .set_num_threads(Some(1));
    b.grow_policy = GrowPolicy::LossGuide;
    b
}

impl PointModel for Gbdt {
    fn min_history(&self) -> usize {
        WARMUP + self.horizon + MIN_ROWS
    }

    fn fit(&mut self, history: Regular<'_>) -> Result<(), ForecastError> {
        let values = history.values;
        let n = values.len();
        if n < self.min_history() {
            return Err(ForecastError::TooShort { need: self.min_history(), have: n });
        }
        let at = |t: usize| history.start_ms + t as i64 * history.step_ms;
        let mut models = Vec::with_capacity(self.anchors.len());
        let mut row = [0.0; COLUMNS];
        for &ahead in &self.anchors {
            // Origins WARMUP..n - ahead, thinned to at most MAX_ROWS.
            let origins = n - ahead - WARMUP;
            let stride = origins.div_ceil(MAX_ROWS).max(1);
            let mut rows: Vec<[f64; COLUMNS]> = Vec::with_capacity(origins / stride + 1);
            let mut y = Vec::with_capacity(origins / stride + 1);
            for t in (WARMUP..n - ahead).step_by(stride) {
                let target = values[t + ahead] - values[t];
                if !target.is_finite() {
                    continue;
                }
                features::row(values, t, at(t), ahead, self.day, &mut row);
                rows.push(row);
                y.push(target);
            }
            if y.len() < MIN_ROWS {
                return Err(ForecastError::TooShort { need: self.min_history(), have: n });
            }
            // Column-major, as forust reads a matrix.
            let columns: Vec<f64> = (0..COLUMNS).flat_map(|c| rows.iter().map(move |r| r[c])).collect();
            let mut model = booster();
            model
                .fit(&Matrix::new(&columns, y.len(), COLUMNS), &y, &vec![1.0; y.len()], None)
                .map_err(|e| ForecastError::Model(format!("gbdt: {ahead} steps ahead: {e}")))?;
            models.push(model);
        }
        self.models = models;
        self.recent = values[n.saturating_sub(self.keep())..].to_vec();
        self.last_ms = at(n - 1);
        self.step_ms = history.step_ms;
        Ok(())
    }

    fn push(&mut self, value: f64) {
        self.recent.push(value);
        if self.recent.len() > 2 * self.keep() {
            let drop = self.recent.len() - self.keep();
            self.recent.drain(..drop);
        }
        self.last_ms += self.step_ms;
    }

    fn point(&self, out: &mut [f64]) {
        let Some(&last) = self.recent.last() else {
            out.fill(f64::NAN);
            return;
        };
        if self.models.is_empty() {
            out.fill(last);
            return;
        }
        let t = self.recent.len() - 1;
        let mut row = [0.0; COLUMNS];
        let change: Vec<f64> = self
            .anchors
            .iter()
            .zip(&self.models)
            .map(|(&ahead, model)| {
                features::row(&self.recent, t, self.last_ms, ahead, self.day, &mut row);
                model.predict(&Matrix::new(&row[..], 1, COLUMNS), false)[0]
            })
            .collect();
        // Linear between anchors; past the last one, its change holds.
        let mut k = 0;
        for (i, o) in out.iter_mut().enumerate() {
            let step = i + 1;
            while k + 1 < self.anchors.len() && self.anchors[k + 1] <= step {
                k += 1;
            }
            let c = if k + 1 < self.anchors.len() && step > self.anchors[k] {
                let (a, b) = (self.anchors[k], self.anchors[k + 1]);
                let w = (step - a) as f64 / (b - a) as f64;
                change[k] * (1.0 - w) + change[k + 1] * w
            } else {
                change[k]
            };
            *o = last + c;
        }
    }
}

#[cfg(test)]
mod tests;
