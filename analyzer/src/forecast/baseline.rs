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
