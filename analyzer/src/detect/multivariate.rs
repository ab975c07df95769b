//! The multivariate detector for one entity (a host, a GPU): an isolation forest on the raw metrics and
//! their rolling statistics, and a PCA reconstruction error on the standardised metrics, combined.
//!
//! The two see different anomalies: the forest finds points whose values (or recent level or
//! volatility) are rare, PCA finds points where metrics that normally move together stop doing so. Each
//! raw score is divided by a high quantile of its own training scores, the two are averaged, smoothed
//! over the last few points (anomalies last minutes, noise does not) and divided by an alert level, so
//! that above 1 means anomalous, without any labels. The alert level is set by peaks over threshold
//! ([`super::spot`], `alert_level = "spot"`, the default): a generalised Pareto tail fitted to the
//! training window's highest smoothed scores gives the level a normal score passes with probability
//! `spot.q`, and it follows the scores as they arrive. Machines whose score tails differ get levels that
//! differ, where one training quantile fits some and not others. `alert_level = "fixed"` divides by the
//! training quantile `threshold_quantile` instead. Training windows may hold anomalies of their own; a
//! quantile, unlike the maximum, is not moved by a few of them.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::features::{FeatureConfig, FeatureStream, Scaler};
use super::iforest::{self, IForestParams, IsolationForest};
use super::pca::{Pca, PcaError};
use super::spot::{AlertLevel, Spot, SpotParams};

/// The version of the persisted [`MultivariateModel`]; bumped on any change to its fields' meaning.
/// Version 2 added the SPOT alert level (`spot`).
pub const MODEL_VERSION: u32 = 2;

/// Every model version this build reads: a version 1 model (no `spot`) scores against its training
/// quantile until it is trained again.
pub const MODEL_VERSIONS_READ: [u32; 2] = [1, 2];

/// Detector parameters: one set for every entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MultivariateParams {
    /// Features the isolation forest sees.
    pub features: FeatureConfig,
    pub iforest: IForestParams,
    /// Share of the training variance the PCA subspace keeps; the rest is the anomalous residual.
    pub pca_variance: f64,
    /// Points the combined score is averaged over (1 = no smoothing).
    pub smooth: usize,
    /// Training quantile each detector's score is divided by before combining.
    pub norm_quantile: f64,
    /// Training quantile of the combined score that maps to a final score of 1 with `alert_level = "fixed"`.
    pub threshold_quantile: f64,
    /// How the level that maps to a final score of 1 is set: by SPOT (default) or at `threshold_quantile`.
    pub alert_level: AlertLevel,
    /// SPOT's parameters (`calibration` unused: the training window calibrates).
    pub spot: SpotParams,
}

impl Default for MultivariateParams {
    fn default() -> Self {
        MultivariateParams {
            features: FeatureConfig::default(),
            iforest: IForestParams::default(),
            pca_variance: 0.99,
            smooth: 10,
            norm_quantile: 0.995,
            threshold_quantile: 0.995,
            alert_level: AlertLevel::Spot,
            spot: SpotParams::default(),
        }
    }
}

/// Why a model could not be trained.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TrainError {
    #[error("training window has {rows} rows of {inputs} metrics, needs at least 2 rows of 1 metric")]
    TooSmall { rows: usize, inputs: usize },
    #[error("isolation forest: {0}")]
    Forest(#[from] iforest::FitError),
    #[error("pca: {0}")]
    Pca(#[from] PcaError),
}

/// A trained model, as persisted (docs/format/analyzer-models.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MultivariateModel {
    pub version: u32,
    pub params: MultivariateParams,
    /// Input metric names, in input order.
    pub inputs: Vec<String>,
    /// Standardises the raw inputs for PCA.
    scaler: Scaler,
    pca: Pca,
    forest: IsolationForest,
    /// Divisors of the forest and PCA scores.
    forest_norm: f64,
    pca_norm: f64,
    /// Divisor of the smoothed combined score with `alert_level = "fixed"`, and without `spot`.
    threshold: f64,
    /// SPOT calibrated on the training window's smoothed combined scores: the alert level, when
    /// `alert_level` is `spot`. Absent from version 1 models, and when the training window's scores have no
    /// tail to fit (a constant window): the model then divides by `threshold`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spot: Option<Spot>,
}

/// One scored point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MultiVerdict {
    /// Above 1 means anomalous.
    pub score: f64,
    /// The unsmoothed combined score at this point, in the same units.
    pub instant: f64,
}

impl MultivariateModel {
    /// Trains on `rows`, row-major with one value per input metric (`inputs.len()` per row), in time order.
    pub fn train(params: &MultivariateParams, inputs: Vec<String>, rows: &[f64]) -> Result<Self, TrainError> {
        let n = inputs.len();
        let n_rows = rows.len().checked_div(n).unwrap_or(0);
        if n_rows < 2 {
            return Err(TrainError::TooSmall { rows: n_rows, inputs: n });
        }
        let rows = &rows[..n_rows * n];
        let scaler = Scaler::fit(rows, n);
        let mut scaled = rows.to_vec();
        scaled.chunks_exact_mut(n).for_each(|r| scaler.transform(r));
        let pca = Pca::fit(&scaled, n, params.pca_variance)?;
        let features = FeatureStream::run(&params.features, rows, n);
        let n_features = FeatureStream::new(&params.features, n).n_features();
        let forest = IsolationForest::fit(&params.iforest, &features, n_features)?;

        let forest_scores = forest.score_batch(&features);
        let mut residuals = Vec::with_capacity(n);
        let pca_scores: Vec<f64> = scaled.chunks_exact(n).map(|r| pca.residuals(r, &mut residuals)).collect();
        let forest_norm = positive(quantile(&smooth(&forest_scores, params.smooth), params.norm_quantile));
        let pca_norm = positive(quantile(&smooth(&pca_scores, params.smooth), params.norm_quantile));
        let combined: Vec<f64> =
            forest_scores.iter().zip(&pca_scores).map(|(f, p)| (f / forest_norm + p / pca_norm) / 2.0).collect();
        let smoothed = smooth(&combined, params.smooth);
        let threshold = positive(quantile(&smoothed, params.threshold_quantile));
        let spot = match params.alert_level {
            AlertLevel::Spot => Spot::calibrate(&params.spot, &smoothed).ok(),
            AlertLevel::Fixed => None,
        };
        Ok(MultivariateModel {
            version: MODEL_VERSION,
            params: params.clone(),
            inputs,
            scaler,
            pca,
            forest,
            forest_norm,
            pca_norm,
            threshold,
            spot,
        })
    }

    /// The SPOT state its scorers start from, when the alert level is SPOT's.
    pub fn spot(&self) -> Option<&Spot> {
        self.spot.as_ref()
    }

    /// A fresh scorer, to be fed the points that follow, in time order.
    pub fn scorer(&self) -> MultivariateScorer<'_> {
        MultivariateScorer { model: self, state: ScoreState::new(self) }
    }

    /// Names of the forest's features, in feature order (`m0`, `m0:diff`, `m0:mean10`, …).
    pub fn feature_names(&self) -> Vec<String> {
        self.params.features.names(&self.inputs)
    }

    /// The features every row expands to, for `rows` scored from a fresh start (row-major, one value per
    /// input each): what the forest was trained on when `rows` is the training window.
    pub fn features(&self, rows: &[f64]) -> Vec<f64> {
        FeatureStream::run(&self.params.features, rows, self.inputs.len())
    }
}

/// Scores one entity's points as they arrive.
#[derive(Debug, Clone)]
pub struct MultivariateScorer<'m> {
    model: &'m MultivariateModel,
    state: ScoreState,
}

impl MultivariateScorer<'_> {
    /// Scores the next point (one value per input metric).
    pub fn score(&mut self, row: &[f64]) -> MultiVerdict {
        self.state.score(self.model, row)
    }

    /// The metrics that contributed most to the last point scored; see [`ScoreState::top_features`].
    pub fn top_features(&self, k: usize) -> Vec<(&str, f64)> {
        self.state.top_features(self.model, k)
    }
}

/// What scoring one entity remembers between points, apart from its model: the feature and smoothing
/// windows, and SPOT's alert level as it follows the scores. Kept apart from the model so that a caller may
/// own both (the runtime swaps models on retrain, and starts a fresh state with each).
#[derive(Debug, Clone)]
pub struct ScoreState {
    features: FeatureStream,
    recent: VecDeque<f64>,
    spot: Option<Spot>,
    feature_row: Vec<f64>,
    scaled: Vec<f64>,
    residuals: Vec<f64>,
}

impl ScoreState {
    /// A fresh state for `model`'s inputs and parameters.
    pub fn new(model: &MultivariateModel) -> Self {
        ScoreState {
            features: FeatureStream::new(&model.params.features, model.inputs.len()),
            recent: VecDeque::with_capacity(model.params.smooth.max(1)),
            spot: model.spot.clone(),
            feature_row: Vec::new(),
            scaled: Vec::new(),
            residuals: Vec::new(),
        }
    }

    /// Scores the next point (one value per input metric) with `m`, the model this state was made for.
    pub fn score(&mut self, m: &MultivariateModel, row: &[f64]) -> MultiVerdict {
        self.feature_row.clear();
        self.features.push(row, &mut self.feature_row);
        let forest = m.forest.score(&self.feature_row);
        self.scaled.clear();
        self.scaled.extend_from_slice(&row[..m.inputs.len()]);
        m.scaler.transform(&mut self.scaled);
        let pca = m.pca.residuals(&self.scaled, &mut self.residuals);
        let combined = (forest / m.forest_norm + pca / m.pca_norm) / 2.0;
        if self.recent.len() == m.params.smooth.max(1) {
            self.recent.pop_front();
        }
        self.recent.push_back(combined);
        let smoothed = self.recent.iter().sum::<f64>() / self.recent.len() as f64;
        // The level is the one before this point: SPOT judges a score, then learns it unless it alarms.
        let level = match &mut self.spot {
            Some(spot) => {
                let level = positive(spot.level());
                spot.update(smoothed);
                level
            }
            None => m.threshold,
        };
        MultiVerdict { score: smoothed / level, instant: combined / level }
    }

    /// The alert level the next point's smoothed score is divided by.
    pub fn level(&self, m: &MultivariateModel) -> f64 {
        self.spot.as_ref().map_or(m.threshold, |s| positive(s.level()))
    }

    /// The last point's features, in [`MultivariateModel::feature_names`] order.
    pub fn feature_row(&self) -> &[f64] {
        &self.feature_row
    }

    /// The features that contributed most to the last point scored, as indices into
    /// [`MultivariateModel::feature_names`], heaviest first, at most `k`, with weights summing to at most
    /// 1: half from the forest's isolating splits (each split on the point's path credits its feature
    /// with 1 / path length, see [`IsolationForest::top_features`]), half from each metric's share of the
    /// PCA residual, credited to the metric's first feature (its raw value when raw values are on).
    pub fn top_feature_indices(&self, m: &MultivariateModel, k: usize) -> Vec<(usize, f64)> {
        let mut weights = vec![0.0; m.forest.n_features()];
        for (f, w) in m.forest.top_features(&self.feature_row, usize::MAX) {
            weights[f] += w / 2.0;
        }
        let total: f64 = self.residuals.iter().map(|r| r * r).sum();
        if total > 0.0 {
            for (w, r) in weights.iter_mut().zip(&self.residuals) {
                *w += r * r / total / 2.0;
            }
        }
        iforest::top_k(&weights, k)
    }

    /// The metrics that contributed most to the last point scored, heaviest first, at most `k`: the
    /// weights of [`ScoreState::top_feature_indices`] summed per metric (a temporal feature credits its
    /// metric).
    pub fn top_features<'m>(&self, m: &'m MultivariateModel, k: usize) -> Vec<(&'m str, f64)> {
        let n = m.inputs.len();
        let mut weights = vec![0.0; n];
        for (f, w) in self.top_feature_indices(m, usize::MAX) {
            weights[f % n] += w;
        }
        iforest::top_k(&weights, k).into_iter().map(|(i, w)| (m.inputs[i].as_str(), w)).collect()
    }
}

/// Causal moving average over the last `w` points (fewer at the start).
fn smooth(values: &[f64], w: usize) -> Vec<f64> {
    let w = w.max(1);
    let mut sum = 0.0;
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            sum += v;
            if i >= w {
                sum -= values[i - w];
            }
            sum / (i + 1).min(w) as f64
        })
        .collect()
}

/// The `q` quantile with linear interpolation (numpy's default).
pub(crate) fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// A divisor that cannot be zero or NaN (a constant training window).
fn positive(v: f64) -> f64 {
    if v.is_finite() && v > 0.0 { v } else { f64::MIN_POSITIVE.sqrt() }
}

#[cfg(test)]
mod tests;
