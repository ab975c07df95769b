//! Anomaly detectors. A score above 1 means anomalous, for every detector, so scores compare and
//! combine (`argus_anomaly_score{detector, metric}`). Where the univariate and multivariate detectors put
//! that level is set by extreme value theory on their own scores ([`spot`]) unless asked for their fixed
//! level.

/// What a univariate streaming detector says about one point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// Above 1 means outside what the detector expects.
    pub score: f64,
    /// The expected value (`argus_yhat`), when the detector has one.
    pub expected: Option<f64>,
    /// The band it expected the point in (`argus_yhat_lower`, `argus_yhat_upper`), when it has one.
    pub band: Option<(f64, f64)>,
}

/// Which side of the expected value (or of the peer group) is anomalous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Above,
    Below,
    #[default]
    Both,
}

impl Direction {
    /// Keeps a signed deviation (value − expected) only when it points the watched way.
    pub fn keeps(self, deviation: f64) -> bool {
        match self {
            Direction::Above => deviation > 0.0,
            Direction::Below => deviation < 0.0,
            Direction::Both => deviation != 0.0,
        }
    }

    /// The size of a signed deviation (value − expected) in the watched direction: 0 when it points the
    /// other way.
    pub fn watched(self, deviation: f64) -> f64 {
        match self {
            Direction::Above => deviation.max(0.0),
            Direction::Below => (-deviation).max(0.0),
            Direction::Both => deviation.abs(),
        }
    }
}

/// A detector fed one series point by point, in time order, learning as it goes.
pub trait StreamDetector: Send {
    /// The `detector` label value, e.g. `threshold`.
    fn name(&self) -> &'static str;
    /// Scores `value` at `t_ms`, then learns from it.
    fn update(&mut self, t_ms: i64, value: f64) -> Verdict;
}

pub mod art;
pub mod ewma;
pub mod features;
pub mod iforest;
pub mod likelihood;
pub mod multivariate;
pub mod pca;
pub mod peer;
pub mod spot;
pub mod stuck;
pub mod threshold;
pub mod univariate;

/// Combines detectors' scores for one point: anomalous (> 1) when one detector is far out (its score
/// above 2) or at least two agree (both above 1). The result is the larger of half the strongest
/// score and the second strongest; with a single detector, its own score.
pub fn ensemble(scores: &[f64]) -> f64 {
    let mut s: Vec<f64> = scores.iter().copied().filter(|v| v.is_finite()).collect();
    s.sort_by(|a, b| b.total_cmp(a));
    match s.as_slice() {
        [] => 0.0,
        [one] => *one,
        [first, second, ..] => (first / 2.0).max(*second),
    }
}

#[cfg(test)]
mod tests {
    use super::ensemble;

    #[test]
    fn ensemble_needs_one_strong_or_two_agreeing() {
        assert_eq!(ensemble(&[]), 0.0);
        assert_eq!(ensemble(&[1.4]), 1.4);
        assert!(ensemble(&[1.5, 0.2]) < 1.0, "one detector slightly out is not enough");
        assert!(ensemble(&[2.6, 0.1]) > 1.0, "one detector far out is");
        assert!(ensemble(&[1.2, 1.1, 0.0]) > 1.0, "two agreeing are");
        assert_eq!(ensemble(&[f64::NAN, 0.5]), 0.5);
    }
}
