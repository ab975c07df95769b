//! Exponential smoothing: AutoETS (augurs) chooses the model (error type, no/additive/damped trend) and
//! its parameters by likelihood on a recent window; new points then move the level and growth forward with
//! the same recursion augurs uses, so observing a point costs a few flops and never refits.
//!
//! The fit uses the last `window` points only (two days at one-minute steps by default): AutoETS's
//! optimiser is quadratic-ish in practice on long series, and at a 15-minute horizon the level and slope
//! of the last days are what matters.

use augurs_core::{Fit, Predict};
use augurs_ets::AutoETS;
use augurs_ets::model::TrendComponent;
use serde::{Deserialize, Serialize};

use super::calibrate::PointModel;
use super::{ForecastError, Regular};

/// Smoothing parameters and state of a non-seasonal ETS model with an optional (damped) additive trend.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ets {
    window: usize,
    alpha: f64,
    /// `beta / alpha`, the share of the level's change passed to the growth.
    beta_ratio: f64,
    phi: f64,
    trend: bool,
    level: f64,
    growth: f64,
    /// The model AutoETS chose, e.g. `AAdN`.
    pub spec: String,
}

impl Ets {
    pub fn new(window: usize) -> Self {
        Ets {
            window: window.max(16),
            alpha: 1.0,
            beta_ratio: 0.0,
            phi: 1.0,
            trend: false,
            level: 0.0,
            growth: 0.0,
            spec: String::new(),
        }
    }

    /// Fits AutoETS to `y` and takes over its parameters and final state.
    pub(crate) fn fit_values(&mut self, y: &[f64]) -> Result<(), ForecastError> {
        let y = &y[y.len().saturating_sub(self.window)..];
        let err = |e: &dyn std::fmt::Display| ForecastError::Model(format!("ets: {e}"));
        let auto = AutoETS::new(1, "ZZN").map_err(|e| err(&e))?;
        let fitted = auto.fit(y).map_err(|e| err(&e))?;
        let model = fitted.model();
        let kind = model.model_type();
        if kind.trend == TrendComponent::Multiplicative {
            return Err(err(&"multiplicative trend is not supported"));
        }
        // augurs keeps the fitted parameters private; its Debug output is the one place they appear.
        let debug = format!("{model:?}");
        let field = |name: &str| debug_field(&debug, name).ok_or_else(|| err(&format!("no {name} in the fit")));
        let alpha = field("alpha")?;
        self.trend = kind.trend == TrendComponent::Additive;
        self.phi = if self.trend && model.damped() { field("phi")? } else { 1.0 };
        self.alpha = alpha;
        self.beta_ratio = if self.trend && alpha > 0.0 { field("beta")? / alpha } else { 0.0 };
        // The final level and growth, read back from the forecast function l + (φ + … + φ^h)·b.
        let f = fitted.predict(2, None).map_err(|e| err(&e))?.point;
        if self.trend {
            self.growth = (f[1] - f[0]) / (self.phi * self.phi);
            self.level = f[0] - self.phi * self.growth;
        } else {
            self.growth = 0.0;
            self.level = f[0];
        }
        self.spec = format!("{kind}{}", if model.damped() { "d" } else { "" });
        if ![self.alpha, self.beta_ratio, self.phi, self.level, self.growth].iter().all(|v| v.is_finite()) {
            return Err(err(&"non-finite parameters"));
        }
        Ok(())
    }
}

/// The number after `name: ` in a Debug rendering of a struct.
fn debug_field(debug: &str, name: &str) -> Option<f64> {
    let at = debug.find(&format!("{name}: "))? + name.len() + 2;
    let rest = &debug[at..];
    let end = rest.find([',', ' ', '}']).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

impl PointModel for Ets {
    fn min_history(&self) -> usize {
        16
    }

    fn fit(&mut self, history: Regular<'_>) -> Result<(), ForecastError> {
        self.fit_values(history.values)
    }

    fn push(&mut self, value: f64) {
        let phi_b = if self.trend { self.phi * self.growth } else { 0.0 };
        let q = self.level + phi_b;
        let level = q + self.alpha * (value - q);
        if self.trend {
            self.growth = phi_b + self.beta_ratio * (level - self.level - phi_b);
        }
        self.level = level;
    }

    fn point(&self, out: &mut [f64]) {
        let mut damp = 0.0;
        let mut phi_h = 1.0;
        for o in out.iter_mut() {
            phi_h *= self.phi;
            damp += phi_h;
            *o = self.level + if self.trend { damp * self.growth } else { 0.0 };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::Forecaster;
    use crate::forecast::calibrate::Calibrated;

    /// Deterministic noise in [-0.5, 0.5).
    fn noise(i: usize) -> f64 {
        ((i as f64 * 12.9898).sin() * 43_758.545).fract() - 0.5
    }

    #[test]
    fn follows_a_linear_trend() {
        let y: Vec<f64> = (0..400).map(|i| 50.0 + 0.5 * i as f64 + 0.2 * noise(i)).collect();
        let mut m = Calibrated::new("ets", Ets::new(400), 10);
        m.fit(Regular { start_ms: 0, step_ms: 60_000, values: &y }).unwrap();
        assert!(m.model.spec.contains('A'), "trend model expected, got {}", m.model.spec);
        let f = m.forecast(10).unwrap();
        for (h, mean) in f.mean.iter().enumerate() {
            let truth = 50.0 + 0.5 * (400 + h) as f64;
            assert!((mean - truth).abs() < 1.0, "step {}: {mean} vs {truth}", h + 1);
        }
        // Observing moves the level without refitting.
        for i in 400..420 {
            m.observe(50.0 + 0.5 * i as f64);
        }
        let truth = 50.0 + 0.5 * 420.0;
        assert!((m.forecast(1).unwrap().mean[0] - truth).abs() < 1.0);
    }

    #[test]
    fn reads_parameters_from_debug() {
        let debug = "Model { params: Params { alpha: 0.25, beta: 1e-4, gamma: NaN, phi: 0.98 }, x: [1.0] }";
        assert_eq!(debug_field(debug, "alpha"), Some(0.25));
        assert_eq!(debug_field(debug, "beta"), Some(1e-4));
        assert_eq!(debug_field(debug, "phi"), Some(0.98));
        assert_eq!(debug_field(debug, "delta"), None);
    }
}
