//! What the network sees: per-step input features of a window ending at an anchor point, and the
//! targets after it. Pure arithmetic over slices, shared by training and forecasting so the two
//! cannot drift apart.

use std::f64::consts::TAU;

/// Input features per time step.
pub const FEATURES: usize = 7;

const DAY_MS: i64 = 86_400_000;
const WEEK_MS: i64 = 7 * DAY_MS;
/// 1970-01-01 was a Thursday; shifting by 3 days puts Monday 00:00 UTC at phase 0.
const MONDAY_OFFSET_MS: i64 = 3 * DAY_MS;

/// Scaling fitted on the training part of the history only.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scaler {
    /// Mean and standard deviation of the values (the level feature).
    pub mean: f64,
    pub std: f64,
    /// Standard deviation of the one-step changes: the unit of the change features and of the
    /// targets, which are changes relative to the last value.
    pub change: f64,
}

impl Scaler {
    pub fn fit(values: &[f64]) -> Scaler {
        let n = values.len().max(1) as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let diffs: Vec<f64> = values.windows(2).map(|w| w[1] - w[0]).collect();
        let dn = diffs.len().max(1) as f64;
        let dmean = diffs.iter().sum::<f64>() / dn;
        let dvar = diffs.iter().map(|d| (d - dmean).powi(2)).sum::<f64>() / dn;
        Scaler { mean, std: positive_or_one(var.sqrt()), change: positive_or_one(dvar.sqrt()) }
    }
}

/// A flat series (zero spread) keeps unit scale rather than dividing by zero.
fn positive_or_one(x: f64) -> f64 {
    if x.is_finite() && x > 1e-12 { x } else { 1.0 }
}

/// Writes the `window × FEATURES` inputs of the window ending at `values[anchor]` into `out`
/// (time-major: step 0 is the oldest). `values[anchor - window]` must exist: the first step's
/// change looks one point further back. `t0_ms` is the time of `values[0]`.
pub fn window_features(
    values: &[f64],
    anchor: usize,
    window: usize,
    t0_ms: i64,
    step_ms: i64,
    scaler: &Scaler,
    out: &mut [f32],
) {
    debug_assert!(anchor >= window && anchor < values.len());
    debug_assert_eq!(out.len(), window * FEATURES);
    let last = values[anchor];
    for (k, row) in out.chunks_exact_mut(FEATURES).enumerate() {
        let i = anchor + 1 - window + k;
        let t_ms = t0_ms + i as i64 * step_ms;
        let day = TAU * t_ms.rem_euclid(DAY_MS) as f64 / DAY_MS as f64;
        let week = TAU * (t_ms + MONDAY_OFFSET_MS).rem_euclid(WEEK_MS) as f64 / WEEK_MS as f64;
        row[0] = ((values[i] - last) / scaler.change) as f32;
        row[1] = ((values[i] - values[i - 1]) / scaler.change) as f32;
        row[2] = ((values[i] - scaler.mean) / scaler.std) as f32;
        row[3] = day.sin() as f32;
        row[4] = day.cos() as f32;
        row[5] = week.sin() as f32;
        row[6] = week.cos() as f32;
    }
}

/// Writes the `horizon` targets after `values[anchor]`: changes relative to it, in scaled units.
pub fn targets(values: &[f64], anchor: usize, horizon: usize, scaler: &Scaler, out: &mut [f32]) {
    let last = values[anchor];
    for (h, o) in out.iter_mut().enumerate() {
        *o = ((values[anchor + 1 + h] - last) / scaler.change) as f32;
    }
    debug_assert_eq!(out.len(), horizon);
}

/// Replaces non-finite values by the last finite one before them (the first finite one at the
/// start), so a gap in the history does not poison the scaler or the network. `None` when no value
/// is finite.
pub fn fill_gaps(values: &[f64]) -> Option<Vec<f64>> {
    let first = values.iter().copied().find(|v| v.is_finite())?;
    let mut last = first;
    Some(
        values
            .iter()
            .map(|&v| {
                if v.is_finite() {
                    last = v;
                }
                last
            })
            .collect(),
    )
}

/// A small deterministic generator (SplitMix64) for weight initialisation and shuffling; burn's
/// own seeding is per backend and process-global, which parallel fits would race on.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n).
    pub fn below(&mut self, n: usize) -> usize {
        (self.unit() * n as f64) as usize % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_are_relative_to_the_anchor_and_scaled() {
        let values = [10.0, 12.0, 11.0, 15.0, 13.0];
        let scaler = Scaler { mean: 12.0, std: 2.0, change: 2.0 };
        let mut out = [0f32; 2 * FEATURES];
        // Monday 2020-05-04 00:00 UTC, one-minute steps: anchor 4 is 00:04.
        let t0 = 1_588_550_400_000;
        window_features(&values, 4, 2, t0, 60_000, &scaler, &mut out);
        assert_eq!(&out[..3], &[1.0, 2.0, 1.5]);
        assert_eq!(&out[FEATURES..FEATURES + 3], &[0.0, -1.0, 0.5]);
        // Monday just after midnight: both phases near zero.
        assert!(out[3].abs() < 0.02 && (out[4] - 1.0).abs() < 1e-3, "{out:?}");
        assert!(out[5].abs() < 0.01 && (out[6] - 1.0).abs() < 1e-3, "{out:?}");
        let mut y = [0f32; 1];
        targets(&values, 3, 1, &scaler, &mut y);
        assert_eq!(y, [-1.0]);
    }

    #[test]
    fn flat_series_keep_unit_scale_and_gaps_are_filled() {
        let s = Scaler::fit(&[5.0; 10]);
        assert_eq!((s.mean, s.std, s.change), (5.0, 1.0, 1.0));
        assert_eq!(fill_gaps(&[f64::NAN, 2.0, f64::NAN, 3.0]), Some(vec![2.0, 2.0, 2.0, 3.0]));
        assert_eq!(fill_gaps(&[f64::NAN]), None);
    }
}
