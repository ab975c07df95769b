//! The runtime's univariate detector: the dynamic threshold's band and the anomaly likelihood of its
//! residuals, followed by a record stage.
//!
//! The raw surprise of a point is the larger of the band score and the likelihood score (each above 1 when
//! anomalous). The record stage divides it by the largest raw surprise seen before, decayed a little every
//! point and never below [`UnivariateParams::record_floor`]: the final score is above 1 only for a point that is
//! outside the band *and* beyond anything the series showed recently. A level shift alarms once, not for every
//! point until the baseline catches up; a series that is always spiky stops alarming on its usual spikes. The
//! record is forgotten when the threshold's warm-up ends, since its early surprises were measured against a
//! rough baseline. The expected value and the band are the threshold's.

use serde::{Deserialize, Serialize};

use super::likelihood::{Likelihood, LikelihoodParams};
use super::threshold::{Threshold, ThresholdParams};
use super::{StreamDetector, Verdict};

/// Parameters of the univariate ensemble.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UnivariateParams {
    pub threshold: ThresholdParams,
    pub likelihood: LikelihoodParams,
    /// Per-point decay of the record; 0 turns the record stage off (the score is then the raw surprise).
    pub record_decay: f64,
    /// The record never falls below this.
    pub record_floor: f64,
}

impl Default for UnivariateParams {
    fn default() -> Self {
        UnivariateParams {
            threshold: ThresholdParams::default(),
            likelihood: LikelihoodParams::default(),
            record_decay: 0.999,
            record_floor: 1.0,
        }
    }
}

/// The univariate ensemble over one series; serialisable like its parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Univariate {
    threshold: Threshold,
    likelihood: Likelihood,
    record_decay: f64,
    record_floor: f64,
    record: f64,
}

impl Univariate {
    pub fn new(params: UnivariateParams) -> Self {
        Univariate {
            threshold: Threshold::new(params.threshold),
            likelihood: Likelihood::new(params.likelihood),
            record_decay: params.record_decay,
            record_floor: params.record_floor,
            record: params.record_floor,
        }
    }
}

impl StreamDetector for Univariate {
    fn name(&self) -> &'static str {
        "univariate"
    }

    fn update(&mut self, t_ms: i64, value: f64) -> Verdict {
        let (verdict, z) = self.threshold.peek(value);
        let warming = self.threshold.period().is_none();
        self.threshold.update(t_ms, value);
        let raw = verdict.score.max(self.likelihood.update(z.abs()));
        if self.record_decay <= 0.0 {
            return Verdict { score: raw, ..verdict };
        }
        let score = raw / self.record;
        self.record = (self.record * self.record_decay).max(raw).max(self.record_floor);
        if warming && self.threshold.period().is_some() {
            self.record = self.record_floor;
        }
        Verdict { score, ..verdict }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_shift_alarms_at_its_start_only() {
        let mut e = Univariate::new(UnivariateParams::default());
        let noise = |i: u64| super::super::threshold::tests::noise(i as usize);
        let quiet: Vec<f64> = (0..2000).map(|i| e.update(i as i64, 10.0 + noise(i)).score).collect();
        assert!(quiet[700..].iter().all(|&s| s < 1.0), "{}", quiet[700..].iter().cloned().fold(0.0, f64::max));
        let shifted: Vec<f64> = (2000..2300).map(|i| e.update(i as i64, 30.0 + noise(i)).score).collect();
        assert!(shifted[0] > 1.0, "{}", shifted[0]);
        // While the baseline catches up the surprise can edge past its record a few times, then never again.
        assert!(shifted[10..].iter().all(|&s| s < 1.0), "{shifted:?}");
    }

    #[test]
    fn state_round_trips_through_json() {
        let mut e = Univariate::new(UnivariateParams::default());
        for i in 0..1000 {
            e.update(i, (i as f64 / 10.0).sin());
        }
        let json = serde_json::to_string(&e).unwrap();
        let mut back: Univariate = serde_json::from_str(&json).unwrap();
        assert_eq!(back.update(1000, 0.3), e.update(1000, 0.3));
    }
}
