//! Anomaly detectors. A score above 1 means anomalous, for every detector, so scores compare and
//! combine (`argus_anomaly_score{detector, metric}`).

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

/// A detector fed one series point by point, in time order, learning as it goes.
pub trait StreamDetector: Send {
    /// The `detector` label value, e.g. `threshold`.
    fn name(&self) -> &'static str;
    /// Scores `value` at `t_ms`, then learns from it.
    fn update(&mut self, t_ms: i64, value: f64) -> Verdict;
}

pub mod features;
pub mod iforest;
pub mod multivariate;
pub mod pca;
