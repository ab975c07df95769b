//! MSTL (augurs): the series is split into a daily (and, given two weeks, weekly) seasonal part and the
//! rest; the rest is forecast by [`Ets`] and the seasonal part repeats its last cycle.
//!
//! The decomposition uses the last `window` points (a week at one-minute steps by default, two weeks when
//! the weekly season is on); observed points are deseasonalised with the stored profile and move the ETS
//! state, without refitting.

use std::collections::VecDeque;

use augurs_core::Fit;
use augurs_mstl::MSTLModel;
use serde::{Deserialize, Serialize};

use super::calibrate::PointModel;
use super::ets::Ets;
use super::{ForecastError, Regular};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Mstl {
    periods: Vec<usize>,
    window: usize,
    /// Seasonal value of each of the next `max(periods)` steps, the next one first.
    profile: VecDeque<f64>,
    rest: Ets,
}

impl Mstl {
    /// `periods` in steps, shortest first (e.g. `[1440]` for a daily season at one-minute steps).
    pub fn new(periods: Vec<usize>, window: usize, ets_window: usize) -> Self {
        Mstl { periods, window, profile: VecDeque::new(), rest: Ets::new(ets_window) }
    }
}

impl PointModel for Mstl {
    fn min_history(&self) -> usize {
        2 * self.periods.iter().copied().max().unwrap_or(1) + 16
    }

    fn fit(&mut self, history: Regular<'_>) -> Result<(), ForecastError> {
        let n = history.values.len();
        let need = self.min_history();
        if n < need {
            return Err(ForecastError::TooShort { need, have: n });
        }
        let y = &history.values[n - self.window.max(need).min(n)..];
        // Only seasons with two full cycles in the window can be estimated.
        let periods: Vec<usize> = self.periods.iter().copied().filter(|p| 2 * p <= y.len()).collect();
        let fitted =
            MSTLModel::naive(periods.clone()).fit(y).map_err(|e| ForecastError::Model(format!("mstl: {e}")))?;
        let decomposition = fitted.fit();
        let seasonal = decomposition.seasonal();
        let m = y.len();
        let longest = periods.iter().copied().max().unwrap_or(1);
        // The next step after the window repeats the value one cycle earlier, for each season.
        self.profile = (0..longest)
            .map(|i| periods.iter().zip(seasonal).map(|(&p, s)| s[m - p + i % p] as f64).sum::<f64>())
            .collect();
        let deseasonalised: Vec<f64> =
            (0..m).map(|i| y[i] - seasonal.iter().map(|s| s[i] as f64).sum::<f64>()).collect();
        self.rest.fit_values(&deseasonalised)
    }

    fn push(&mut self, value: f64) {
        let season = self.profile.pop_front().unwrap_or(0.0);
        self.profile.push_back(season);
        self.rest.push(value - season);
    }

    fn point(&self, out: &mut [f64]) {
        self.rest.point(out);
        for (i, o) in out.iter_mut().enumerate() {
            *o += self.profile.get(i % self.profile.len().max(1)).copied().unwrap_or(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::Forecaster;
    use crate::forecast::calibrate::Calibrated;

    #[test]
    fn repeats_a_daily_season_over_a_level() {
        let season = |i: usize| 20.0 * (std::f64::consts::TAU * (i % 24) as f64 / 24.0).sin();
        let noise = |i: usize| ((i as f64 * 7.31).sin() * 1000.0).fract() * 0.5;
        let y: Vec<f64> = (0..24 * 20).map(|i| 100.0 + season(i) + noise(i)).collect();
        let mut m = Calibrated::new("mstl", Mstl::new(vec![24], 24 * 14, 24 * 7), 6);
        m.fit(Regular { start_ms: 0, step_ms: 3_600_000, values: &y }).unwrap();
        let f = m.forecast(24).unwrap();
        for (h, mean) in f.mean.iter().enumerate() {
            let truth = 100.0 + season(y.len() + h);
            assert!((mean - truth).abs() < 2.0, "step {}: {mean} vs {truth}", h + 1);
        }
    }
}
