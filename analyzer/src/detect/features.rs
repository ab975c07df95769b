//! Features for the multivariate detectors: the raw metrics plus temporal ones (first difference, rolling
//! mean and rolling standard deviation over the last `window` points), computed point by point. Training
//! runs the same [`FeatureStream`] over its window that scoring runs as data arrives, so a model never
//! sees features computed differently from those it was trained on.
//!
//! [`Scaler`] is fitted on training rows only and applied unchanged to everything scored later.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Which features to compute from each input metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FeatureConfig {
    /// The value itself.
    pub raw: bool,
    /// The value minus the previous one (0 at the first point).
    pub diff: bool,
    /// Mean of the last `window` values, this one included.
    pub rolling_mean: bool,
    /// Population standard deviation of the last `window` values, this one included.
    pub rolling_std: bool,
    /// Points in the rolling window (at least 1). Until `window` points have been seen, the rolling
    /// features cover the points seen so far.
    pub window: usize,
}

impl Default for FeatureConfig {
    fn default() -> Self {
        FeatureConfig { raw: true, diff: false, rolling_mean: true, rolling_std: true, window: 10 }
    }
}

impl FeatureConfig {
    /// Feature names for these inputs, in the order [`FeatureStream::push`] writes them: all raw values,
    /// then all differences, rolling means and rolling deviations (`m0`, `m0:diff`, `m0:mean10`, `m0:std10`).
    pub fn names(&self, inputs: &[String]) -> Vec<String> {
        let w = self.window.max(1);
        let mut names = Vec::new();
        let mut group = |on: bool, suffix: &str| {
            if on {
                names.extend(inputs.iter().map(|i| format!("{i}{suffix}")));
            }
        };
        group(self.raw, "");
        group(self.diff, ":diff");
        group(self.rolling_mean, &format!(":mean{w}"));
        group(self.rolling_std, &format!(":std{w}"));
        names
    }

    fn groups(&self) -> usize {
        [self.raw, self.diff, self.rolling_mean, self.rolling_std].iter().filter(|on| **on).count()
    }
}

/// Computes features point by point for one entity.
#[derive(Debug, Clone)]
pub struct FeatureStream {
    config: FeatureConfig,
    n_inputs: usize,
    /// The last `window` input rows, oldest first.
    history: VecDeque<Vec<f64>>,
}

impl FeatureStream {
    pub fn new(config: &FeatureConfig, n_inputs: usize) -> Self {
        let config = FeatureConfig { window: config.window.max(1), ..config.clone() };
        FeatureStream { history: VecDeque::with_capacity(config.window), config, n_inputs }
    }

    /// Features per point.
    pub fn n_features(&self) -> usize {
        self.n_inputs * self.config.groups()
    }

    /// Takes the next point (`n_inputs` values) and appends its features to `out`.
    pub fn push(&mut self, row: &[f64], out: &mut Vec<f64>) {
        let row = &row[..self.n_inputs];
        if self.config.raw {
            out.extend_from_slice(row);
        }
        if self.config.diff {
            match self.history.back() {
                Some(prev) => out.extend(row.iter().zip(prev).map(|(v, p)| v - p)),
                None => out.extend(std::iter::repeat_n(0.0, self.n_inputs)),
            }
        }
        if self.history.len() == self.config.window {
            let mut oldest = self.history.pop_front().unwrap_or_default();
            oldest.clear();
            oldest.extend_from_slice(row);
            self.history.push_back(oldest);
        } else {
            self.history.push_back(row.to_vec());
        }
        if self.config.rolling_mean || self.config.rolling_std {
            let n = self.history.len() as f64;
            let mean_at = out.len();
            // Two passes over a short window: exact, where running sums of squares would cancel badly
            // on large counters.
            for i in 0..self.n_inputs {
                out.push(self.history.iter().map(|r| r[i]).sum::<f64>() / n);
            }
            if self.config.rolling_std {
                for i in 0..self.n_inputs {
                    let m = out[mean_at + i];
                    let var = self.history.iter().map(|r| (r[i] - m).powi(2)).sum::<f64>() / n;
                    out.push(var.sqrt());
                }
            }
            if !self.config.rolling_mean {
                out.drain(mean_at..mean_at + self.n_inputs);
            }
        }
    }

    /// Runs a fresh stream over `rows` (row-major, `n_inputs` each) and returns every point's features.
    pub fn run(config: &FeatureConfig, rows: &[f64], n_inputs: usize) -> Vec<f64> {
        let mut stream = FeatureStream::new(config, n_inputs);
        let mut out = Vec::with_capacity(rows.len() / n_inputs.max(1) * stream.n_features());
        for row in rows.chunks_exact(n_inputs.max(1)) {
            stream.push(row, &mut out);
        }
        out
    }
}

/// Standardises each feature with the mean and deviation of the training rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scaler {
    pub center: Vec<f64>,
    pub scale: Vec<f64>,
}

impl Scaler {
    /// Fits on `rows` (row-major, `n` features each). A feature's scale is its standard deviation, but
    /// at least 1 % of its largest training magnitude (and at least 1e-6): a metric that barely moved in
    /// training must not turn every later wobble into a huge deviation.
    pub fn fit(rows: &[f64], n: usize) -> Scaler {
        let count = (rows.len() / n.max(1)).max(1) as f64;
        let mut center = vec![0.0; n];
        let mut magnitude = vec![0.0f64; n];
        for row in rows.chunks_exact(n) {
            for ((c, m), v) in center.iter_mut().zip(&mut magnitude).zip(row) {
                *c += v;
                *m = m.max(v.abs());
            }
        }
        center.iter_mut().for_each(|c| *c /= count);
        let mut var = vec![0.0; n];
        for row in rows.chunks_exact(n) {
            for ((s, c), v) in var.iter_mut().zip(&center).zip(row) {
                *s += (v - c).powi(2);
            }
        }
        let scale = var.iter().zip(&magnitude).map(|(v, m)| (v / count).sqrt().max(0.01 * m).max(1e-6)).collect();
        Scaler { center, scale }
    }

    /// Standardises one row in place; a missing (NaN) value becomes 0, the training mean.
    pub fn transform(&self, row: &mut [f64]) {
        for ((v, c), s) in row.iter_mut().zip(&self.center).zip(&self.scale) {
            *v = if v.is_nan() { 0.0 } else { (*v - c) / s };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_output_order() {
        let config = FeatureConfig { diff: true, window: 3, ..FeatureConfig::default() };
        let names = config.names(&["a".into(), "b".into()]);
        assert_eq!(names, ["a", "b", "a:diff", "b:diff", "a:mean3", "b:mean3", "a:std3", "b:std3"]);
        assert_eq!(FeatureStream::new(&config, 2).n_features(), names.len());
    }

    #[test]
    fn rolling_features_by_hand() {
        let config = FeatureConfig { raw: true, diff: true, rolling_mean: true, rolling_std: true, window: 2 };
        let rows = [1.0, 10.0, 3.0, 10.0, 7.0, 20.0];
        let out = FeatureStream::run(&config, &rows, 2);
        #[rustfmt::skip]
        let expected = [
            // raw      diff        mean        std
            1.0, 10.0,  0.0, 0.0,   1.0, 10.0,  0.0, 0.0,
            3.0, 10.0,  2.0, 0.0,   2.0, 10.0,  1.0, 0.0,
            7.0, 20.0,  4.0, 10.0,  5.0, 15.0,  2.0, 5.0,
        ];
        assert_eq!(out, expected);
    }

    #[test]
    fn std_without_mean() {
        let config = FeatureConfig { raw: false, diff: false, rolling_mean: false, rolling_std: true, window: 3 };
        let out = FeatureStream::run(&config, &[2.0, 4.0, 6.0, 8.0], 1);
        let var23 = (2.0f64 / 3.0).sqrt() * 2.0;
        assert_eq!(out, [0.0, 1.0, var23, var23]);
    }

    #[test]
    fn streaming_equals_batch() {
        let config = FeatureConfig { diff: true, window: 4, ..FeatureConfig::default() };
        let rows: Vec<f64> = (0..60).map(|i| ((i * 7919) % 13) as f64).collect();
        let batch = FeatureStream::run(&config, &rows, 3);
        let mut stream = FeatureStream::new(&config, 3);
        let mut out = Vec::new();
        for row in rows.chunks(3) {
            stream.push(row, &mut out);
        }
        assert_eq!(out, batch);
    }

    #[test]
    fn scaler_uses_training_statistics_and_floors_the_scale() {
        let scaler = Scaler::fit(&[0.0, 5.0, 2.0, 5.0, 4.0, 5.0], 2);
        assert_eq!(scaler.center, [2.0, 5.0]);
        assert!((scaler.scale[0] - (8.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(scaler.scale[1], 0.05, "constant in training: 1 % of its magnitude");
        let mut row = [6.0, f64::NAN];
        scaler.transform(&mut row);
        assert!((row[0] - 4.0 / (8.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(row[1], 0.0);
    }
}
