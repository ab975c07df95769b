//! `empirical_naive`: the last value as the forecast, with a band from the changes history has seen.
//!
//! For each step `h` ahead, the band is the last value plus the 10th and 90th percentiles of `x[t+h] -
//! x[t]` over the fitted history. It is what capacity planning needs from a demand forecast, an honest
//! upper band (how far demand climbs within `h` minutes when it does), at the cost of a sort per step at
//! each fit; the simulator refits it hourly on the last day. Any [`Forecaster`] can replace it.

use crate::forecast::{Forecast, ForecastError, Forecaster, Regular};

#[derive(Debug, Clone)]
pub struct EmpiricalNaive {
    max_horizon: usize,
    /// Per step ahead: (10th, 50th, 90th) percentile of the change.
    quantiles: Vec<(f64, f64, f64)>,
    last: Option<f64>,
}

impl EmpiricalNaive {
    /// A model forecasting up to `max_horizon` steps ahead.
    pub fn new(max_horizon: usize) -> EmpiricalNaive {
        EmpiricalNaive { max_horizon, quantiles: Vec::new(), last: None }
    }
}

impl Forecaster for EmpiricalNaive {
    fn name(&self) -> &str {
        "empirical_naive"
    }

    fn fit(&mut self, history: Regular<'_>) -> Result<(), ForecastError> {
        let x: Vec<f64> = history.values.iter().copied().filter(|v| v.is_finite()).collect();
        let need = self.max_horizon + 2;
        if x.len() < need {
            return Err(ForecastError::TooShort { need, have: x.len() });
        }
        self.quantiles = (1..=self.max_horizon)
            .map(|h| {
                let mut d: Vec<f64> = x.windows(h + 1).map(|w| w[h] - w[0]).collect();
                d.sort_unstable_by(f64::total_cmp);
                (quantile(&d, 0.1), quantile(&d, 0.5), quantile(&d, 0.9))
            })
            .collect();
        self.last = x.last().copied();
        Ok(())
    }

    fn observe(&mut self, value: f64) {
        if value.is_finite() {
            self.last = Some(value);
        }
    }

    fn forecast(&self, horizon: usize) -> Result<Forecast, ForecastError> {
        let Some(last) = self.last else {
            return Err(ForecastError::TooShort { need: self.max_horizon + 2, have: 0 });
        };
        if horizon > self.quantiles.len() {
            return Err(ForecastError::Model(format!(
                "horizon {horizon} is beyond the {} steps fitted",
                self.quantiles.len()
            )));
        }
        let q = &self.quantiles[..horizon];
        Ok(Forecast {
            mean: q.iter().map(|&(_, m, _)| last + m).collect(),
            lower: q.iter().map(|&(l, _, _)| last + l).collect(),
            upper: q.iter().map(|&(_, _, u)| last + u).collect(),
        })
    }
}

/// Linear-interpolated quantile of sorted, non-empty `d`.
fn quantile(d: &[f64], q: f64) -> f64 {
    let pos = q * (d.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    if i + 1 < d.len() { d[i] + (d[i + 1] - d[i]) * frac } else { d[i] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn band_follows_the_changes_seen() {
        // A ramp of +1 per step with a jump of +10 once every 10 steps: one 1-step change in 10 holds the
        // jump (below the 90th percentile), two 2-step changes in 10 do (above it).
        let x: Vec<f64> = (0..200).map(|i| i as f64 + 10.0 * (i / 10) as f64).collect();
        let mut m = EmpiricalNaive::new(3);
        m.fit(Regular { start_ms: 0, step_ms: 60_000, values: &x }).unwrap();
        m.observe(1000.0);
        let f = m.forecast(2).unwrap();
        assert_eq!(f.mean, vec![1001.0, 1002.0]);
        assert_eq!(f.lower, vec![1001.0, 1002.0]);
        assert!((f.upper[0] - 1001.0).abs() < 1e-9, "{:?}", f.upper);
        assert!((f.upper[1] - 1012.0).abs() < 1e-9, "{:?}", f.upper);
        assert!(m.forecast(4).is_err());
        assert_eq!(
            EmpiricalNaive::new(3).fit(Regular { start_ms: 0, step_ms: 1, values: &x[..4] }),
            Err(ForecastError::TooShort { need: 5, have: 4 })
        );
    }
}
