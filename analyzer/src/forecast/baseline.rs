//! Baselines: naive (the last value) and seasonal naive (the value one period earlier).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::calibrate::PointModel;
use super::{ForecastError, Regular};

/// Tomorrow looks like now: every step ahead is the last value seen.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Naive {
    last: f64,
}

impl PointModel for Naive {
    fn min_history(&self) -> usize {
        1
    }

    fn fit(&mut self, history: Regular<'_>) -> Result<(), ForecastError> {
        self.last = *history.values.last().ok_or(ForecastError::TooShort { need: 1, have: 0 })?;
        Ok(())
    }

    fn push(&mut self, value: f64) {
        self.last = value;
    }

    fn point(&self, out: &mut [f64]) {
        out.fill(self.last);
    }
}

/// The value one season (`period` steps, one day by default) before the target.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeasonalNaive {
    period: usize,
    /// The last `period` values, oldest first.
    recent: VecDeque<f64>,
}

impl SeasonalNaive {
    pub fn new(period: usize) -> Self {
        SeasonalNaive { period: period.max(1), recent: VecDeque::new() }
    }
}

impl PointModel for SeasonalNaive {
    fn min_history(&self) -> usize {
        self.period
    }

    fn fit(&mut self, history: Regular<'_>) -> Result<(), ForecastError> {
        let n = history.values.len();
        if n < self.period {
            return Err(ForecastError::TooShort { need: self.period, have: n });
        }
        self.recent = history.values[n - self.period..].iter().copied().collect();
        Ok(())
    }

    fn push(&mut self, value: f64) {
        self.recent.pop_front();
        self.recent.push_back(value);
    }

    fn point(&self, out: &mut [f64]) {
        // Step i + 1 ahead is period − i − 1 points before the newest; past one period, repeat the season.
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.recent[i % self.period];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::Forecaster;
    use crate::forecast::calibrate::Calibrated;

    fn regular(values: &[f64]) -> Regular<'_> {
        Regular { start_ms: 0, step_ms: 3_600_000, values }
    }

    #[test]
    fn naive_repeats_the_last_value_after_a_step() {
        let mut y = vec![10.0; 100];
        y.extend(vec![30.0; 100]);
        let mut m = Calibrated::new("naive", Naive::default(), 3);
        m.fit(regular(&y)).unwrap();
        assert_eq!(m.forecast(3).unwrap().mean, vec![30.0; 3]);
        m.observe(7.0);
        assert_eq!(m.forecast(2).unwrap().mean, vec![7.0; 2]);
    }

    #[test]
    fn seasonal_naive_repeats_yesterday() {
        let day = |i: usize| (i % 24) as f64 * 2.0;
        let y: Vec<f64> = (0..24 * 10).map(day).collect();
        let mut m = Calibrated::new("seasonal_naive", SeasonalNaive::new(24), 6);
        m.fit(regular(&y)).unwrap();
        let f = m.forecast(30).unwrap();
        let expected: Vec<f64> = (y.len()..y.len() + 30).map(day).collect();
        assert_eq!(f.mean, expected);
        // A perfect fit has a zero-width band.
        assert!(f.lower.iter().zip(&f.upper).all(|(l, u)| (u - l).abs() < 1e-9));
        m.observe(99.0);
        assert_eq!(m.forecast(24).unwrap().mean[23], 99.0);
    }
}
