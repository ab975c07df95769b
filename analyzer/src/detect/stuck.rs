//! The stuck-value stage of the univariate detector: a series that stopped moving.
//!
//! A frozen gauge (an exporter that hung, a GPU counter that stopped advancing, a field the driver no
//! longer refreshes) repeats its last value; its deviation from the expected value is often small, so
//! the band and the likelihood take it for normal. This stage learns, from the series itself, how long
//! it normally stays constant: the longest run of equal values it has completed (a run ends when the
//! value changes; the run under way at the series' first point counts too, as it is at least that
//! long). A run under way that reaches [`StuckParams::factor`] times that learnt run, and at least
//! [`StuckParams::min_points`] points, scores [`STUCK_SCORE`] or more.
//!
//! A series that is often flat learns a long run and stays quiet; a series that has never moved has
//! completed no run and is never scored (a constant metric is not a frozen one). Values are equal when
//! they differ by at most [`EPSILON`] of the larger's magnitude. The state is four numbers and a count,
//! updated in O(1) per point.

use serde::{Deserialize, Serialize};

/// Parameters of the stuck-value stage (`stuck` in a `threshold` detector's parameters).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StuckParams {
    /// How many times the longest constant run learnt so far a run must last; 0 turns the stage off.
    pub factor: f64,
    /// The fewest points (the first value and its repeats) a run must have to be scored; 0 turns the
    /// stage off.
    pub min_points: u64,
}

impl StuckParams {
    /// The stage as it was before it existed: off. Saved detector states without a `stuck` key resume
    /// with this, so a resumed detector behaves as it did when saved.
    pub const OFF: StuckParams = StuckParams { factor: 0.0, min_points: 0 };

    fn is_on(&self) -> bool {
        self.factor.is_finite() && self.factor > 0.0 && self.min_points > 0
    }
}

impl Default for StuckParams {
    fn default() -> Self {
        StuckParams::OFF
    }
}

/// The score of a run that has just reached its limit: above 2, so the stage is a strong finding in
/// [`super::ensemble`] on its own, like the novelty check. It grows with the run beyond the limit.
pub const STUCK_SCORE: f64 = 2.2;

/// Two values closer than this share of the larger's magnitude are the same value: a gauge read back
/// through a unit conversion may differ in its last bits.
pub const EPSILON: f64 = 1e-9;

/// The stage's parameters, the run under way and the longest completed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stuck {
    params: StuckParams,
    /// The value of the run under way (meaningless while `run` is 0).
    value: f64,
    /// Points in the run under way; 0 before the first finite value.
    run: u64,
    /// The longest run completed so far; 0 while the series has never moved.
    longest: u64,
}

impl Default for Stuck {
    fn default() -> Self {
        Stuck::new(StuckParams::OFF)
    }
}

impl Stuck {
    pub fn new(params: StuckParams) -> Self {
        Stuck { params, value: 0.0, run: 0, longest: 0 }
    }

    /// The run under way and the longest completed one, in points.
    pub fn runs(&self) -> (u64, u64) {
        (self.run, self.longest)
    }

    /// Learns `value` and returns the stuck score of the run it is part of: 0 while the run is within
    /// what the series has shown, and always 0 when `scoring` is false (the run is still learnt).
    /// A non-finite value neither extends nor ends the run.
    pub fn update(&mut self, value: f64, scoring: bool) -> f64 {
        if !value.is_finite() {
            return 0.0;
        }
        if self.run > 0 && same(self.value, value) {
            self.run += 1;
        } else {
            self.longest = self.longest.max(self.run);
            self.value = value;
            self.run = 1;
        }
        let p = &self.params;
        if !scoring || !p.is_on() || self.longest == 0 || self.run < p.min_points {
            return 0.0;
        }
        let limit = p.factor * self.longest as f64;
        let run = self.run as f64;
        if run < limit { 0.0 } else { STUCK_SCORE * run / limit.max(p.min_points as f64) }
    }
}

fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= EPSILON * a.abs().max(b.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on() -> StuckParams {
        StuckParams { factor: 2.0, min_points: 3 }
    }

    /// The scores of `values` through a fresh stage, scoring throughout.
    fn scores(params: StuckParams, values: &[f64]) -> Vec<f64> {
        let mut s = Stuck::new(params);
        values.iter().map(|&v| s.update(v, true)).collect()
    }

    #[test]
    fn a_run_beyond_the_learnt_one_alarms() {
        // Runs of up to 2 points, then a value held: the limit is max(3, 2 × 2) = 4 points.
        let mut values: Vec<f64> = (0..200).map(|i| f64::from(i / 2)).collect();
        values.extend([500.0; 10]);
        let s = scores(on(), &values);
        assert!(s[..203].iter().all(|&v| v == 0.0), "{:?}", &s[190..]);
        assert_eq!(s[203], STUCK_SCORE, "the fourth point of the held value");
        assert_eq!(s[209], STUCK_SCORE * 10.0 / 4.0, "and more the longer it lasts");
    }

    #[test]
    fn a_noisy_series_alarms_at_the_minimum_run() {
        let mut values: Vec<f64> = (0..100).map(|i| (f64::from(i) * 0.7).sin()).collect();
        values.extend([0.25; 5]);
        let s = scores(on(), &values);
        assert_eq!(&s[100..], &[0.0, 0.0, STUCK_SCORE, STUCK_SCORE * 4.0 / 3.0, STUCK_SCORE * 5.0 / 3.0]);
    }

    #[test]
    fn an_often_flat_series_does_not_alarm_on_its_usual_flats() {
        // Flat for 300 points at a time, with a few moving points between: a flat of 500 is within twice
        // the longest.
        let mut values = Vec::new();
        for block in 0..5 {
            values.extend(std::iter::repeat_n(f64::from(block % 2), 300));
            values.extend([0.3, 0.7, 0.4]);
        }
        values.extend([1.0; 500]);
        let s = scores(on(), &values);
        assert!(s.iter().all(|&v| v == 0.0));
        values.extend([1.0; 200]);
        let s = scores(on(), &values);
        assert!(s.last().is_some_and(|&v| v >= STUCK_SCORE), "beyond twice the longest it does");
    }

    #[test]
    fn a_series_that_never_moved_never_alarms() {
        assert!(scores(on(), &[7.0; 5000]).iter().all(|&v| v == 0.0));
        assert!(scores(on(), &[0.0; 5000]).iter().all(|&v| v == 0.0));
    }

    #[test]
    fn equal_within_epsilon_and_non_finite_values_keep_the_run() {
        let mut s = Stuck::new(on());
        for v in [1.0, 2.0, 3.0, 3.0 * (1.0 + 1e-12), f64::NAN, 3.0] {
            s.update(v, true);
        }
        assert_eq!(s.runs(), (3, 1));
        s.update(3.0001, true);
        assert_eq!(s.runs(), (1, 3));
    }

    #[test]
    fn off_and_not_scoring_score_nothing_but_learn() {
        let mut values: Vec<f64> = (0..100).map(f64::from).collect();
        values.extend([5.0; 50]);
        for params in [StuckParams::OFF, StuckParams { min_points: 0, ..on() }, StuckParams { factor: 0.0, ..on() }] {
            assert!(scores(params.clone(), &values).iter().all(|&v| v == 0.0), "{params:?}");
        }
        let mut s = Stuck::new(on());
        assert!(values.iter().all(|&v| s.update(v, false) == 0.0));
        assert_eq!(s.runs(), (50, 1));
        assert!(s.update(5.0, true) > 0.0);
    }

    #[test]
    fn state_round_trips_through_json() {
        let mut s = Stuck::new(on());
        for i in 0..100 {
            s.update(f64::from(i / 3), true);
        }
        let mut back: Stuck = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        for _ in 0..10 {
            assert_eq!(back.update(40.0, true), s.update(40.0, true));
        }
    }
}
