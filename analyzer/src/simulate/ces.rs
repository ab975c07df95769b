//! Helios' Cluster Energy Saving policy (Hu et al., SC '21), and `reactive`, the same rule without a
//! forecast.
//!
//! At each 10-minute step, with `demand` the nodes in use and `powered` the nodes powered after the step
//! before:
//! 1. power-up: when `demand > powered`, power up to `demand + buffer` at once and hold for `keep` steps;
//! 2. power-down to `demand + buffer`, only when all of these hold: demand fell over the last `history`
//!    steps (their mean minus demand ≥ `his_threshold`); the hold is over; and, for CES only, the forecast's
//!    mean over the next `future` steps is not above demand by more than `-fut_threshold`, and the forecast
//!    is not rising (its mean over `future` steps ≥ its mean over `2 × future`); and the cut is at least
//!    `de_threshold` nodes.
//!
//! The powered count never exceeds the fleet. The first hour is a warm-up at `demand + buffer` (the
//! simulator counts neither shortfall nor power-ups there).

use super::power::{PowerPolicy, View};

/// CES' settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CesParams {
    pub history: usize,
    pub future: usize,
    pub his_threshold: f64,
    pub fut_threshold: f64,
    pub de_threshold: f64,
    pub buffer: f64,
    pub keep: usize,
}

impl CesParams {
    /// Helios' settings for Philly (`CES_Philly.py`).
    pub const PHILLY: CesParams = CesParams {
        history: 2,
        future: 30,
        his_threshold: 0.1,
        fut_threshold: 0.0,
        de_threshold: 1.0,
        buffer: 20.0,
        keep: 10,
    };

    /// The paper's settings for Helios' Earth cluster: history 6, buffer 5, de_threshold 5; the rest as
    /// for Philly.
    pub const EARTH: CesParams = CesParams { history: 6, buffer: 5.0, de_threshold: 5.0, ..CesParams::PHILLY };
}

/// The CES rule over one test window. `prediction[k]` is the forecast for test step `k`; `None` makes it
/// `reactive`.
#[derive(Debug, Clone)]
pub struct Ces {
    params: CesParams,
    prediction: Option<Vec<f64>>,
    /// Steps before this one are held after a power-up.
    hold_until: usize,
}

impl Ces {
    pub fn new(params: CesParams, prediction: Option<Vec<f64>>) -> Ces {
        Ces { params, prediction, hold_until: 0 }
    }

    /// Whether the forecast lets a power-down through at test step `k` (always, without a forecast).
    fn forecast_allows(&self, k: usize, demand: f64) -> bool {
        let Some(p) = &self.prediction else { return true };
        let f = self.params.future;
        // Windows past the end are cut short, as numpy's slices are.
        let near = mean(&p[k.min(p.len())..(k + f).min(p.len())]);
        let far = mean(&p[k.min(p.len())..(k + 2 * f).min(p.len())]);
        demand - near >= self.params.fut_threshold && near >= far
    }
}

impl PowerPolicy for Ces {
    fn name(&self) -> String {
        if self.prediction.is_some() { "ces".into() } else { "reactive".into() }
    }

    fn decide(&mut self, view: &View<'_>) -> u64 {
        let p = &self.params;
        let demand = view.now();
        let up_to = |d: f64| (d + p.buffer).max(0.0) as u64;
        if view.warm_up {
            return up_to(demand);
        }
        let mut powered = view.powered;
        if (powered as f64) < demand {
            powered = up_to(demand);
            self.hold_until = view.step + p.keep;
        }
        powered = powered.min(view.total);
        let n = view.demand.len();
        let past = &view.demand[n - 1 - p.history.min(n - 1)..n - 1];
        let fell = !past.is_empty() && mean(past) - demand >= p.his_threshold;
        if !fell || view.step < self.hold_until || !self.forecast_allows(view.step, demand) {
            return powered;
        }
        let target = powered.min(up_to(demand));
        if (powered - target) as f64 >= p.de_threshold { target } else { powered }
    }
}

/// Mean of `w`; NaN for an empty slice, so comparisons with it fail as numpy's do.
fn mean(w: &[f64]) -> f64 {
    w.iter().sum::<f64>() / w.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: CesParams = CesParams {
        history: 2,
        future: 2,
        his_threshold: 0.1,
        fut_threshold: 0.0,
        de_threshold: 3.0,
        buffer: 5.0,
        keep: 3,
    };

    /// The decision at test step `step` with `demand` up to it and `powered` before it.
    fn decide(ces: &mut Ces, step: usize, demand: &[f64], powered: u64) -> u64 {
        ces.decide(&View { step, timestamp_ms: 0, demand, total: 100, powered, warm_up: false })
    }

    #[test]
    fn powers_up_on_shortfall_and_keeps() {
        let mut c = Ces::new(P, None);
        assert_eq!(decide(&mut c, 0, &[10.0, 10.0, 20.0], 15), 25);
        // Demand falls right after: held for `keep` steps, then cut to demand + buffer.
        assert_eq!(decide(&mut c, 1, &[10.0, 20.0, 10.0], 25), 25);
        assert_eq!(decide(&mut c, 2, &[20.0, 12.0, 10.0], 25), 25);
        assert_eq!(decide(&mut c, 3, &[12.0, 12.0, 10.0], 25), 15);
        // Never above the fleet.
        assert_eq!(decide(&mut Ces::new(P, None), 0, &[1.0, 1.0, 98.0], 50), 100);
    }

    #[test]
    fn powers_down_only_when_demand_fell_over_history() {
        assert_eq!(decide(&mut Ces::new(P, None), 5, &[10.0, 10.0, 10.0], 30), 30);
        assert_eq!(decide(&mut Ces::new(P, None), 5, &[9.0, 14.0, 10.0], 30), 15);
        // Only the last `history` steps count: a fall three steps back is not enough.
        assert_eq!(decide(&mut Ces::new(P, None), 5, &[40.0, 10.0, 10.0, 10.0], 30), 30);
    }

    #[test]
    fn powers_down_only_when_forecast_not_above_demand() {
        let fell = [12.0, 12.0, 10.0];
        assert_eq!(decide(&mut Ces::new(P, Some(vec![0.0, 11.0, 11.0, 11.0, 11.0])), 1, &fell, 30), 30);
        assert_eq!(decide(&mut Ces::new(P, Some(vec![0.0, 10.0, 10.0, 10.0, 10.0])), 1, &fell, 30), 15);
    }

    #[test]
    fn powers_down_only_when_forecast_not_rising() {
        let fell = [12.0, 12.0, 10.0];
        assert_eq!(decide(&mut Ces::new(P, Some(vec![9.0, 9.0, 12.0, 12.0])), 0, &fell, 30), 30);
        assert_eq!(decide(&mut Ces::new(P, Some(vec![9.0, 9.0, 8.0, 8.0])), 0, &fell, 30), 15);
        // Windows past the end of the forecast are cut short.
        assert_eq!(decide(&mut Ces::new(P, Some(vec![9.0, 9.0])), 1, &fell, 30), 15);
    }

    #[test]
    fn cuts_at_least_de_threshold() {
        let fell = [12.0, 12.0, 10.0];
        assert_eq!(decide(&mut Ces::new(P, None), 5, &fell, 17), 17);
        assert_eq!(decide(&mut Ces::new(P, None), 5, &fell, 18), 15);
    }

    #[test]
    fn warm_up_is_demand_plus_buffer() {
        let mut c = Ces::new(P, None);
        let v = View { step: 0, timestamp_ms: 0, demand: &[7.0], total: 100, powered: 100, warm_up: true };
        assert_eq!(c.decide(&v), 12);
    }
}
