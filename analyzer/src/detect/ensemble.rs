//! The runtime's univariate detector: the dynamic threshold's band, and the anomaly likelihood of its
//! residuals. The score is the larger of the two (each is above 1 when anomalous); the band and the expected
//! value are the threshold's.

use serde::{Deserialize, Serialize};

use super::likelihood::{Likelihood, LikelihoodParams};
use super::threshold::{Threshold, ThresholdParams};
use super::{StreamDetector, Verdict};

/// Parameters of the univariate ensemble.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnsembleParams {
    pub threshold: ThresholdParams,
    pub likelihood: LikelihoodParams,
    /// Leave the band out of the score (it still gives `expected` and the band).
    pub likelihood_only: bool,
    /// When positive, the score is divided by the largest score seen before, decayed by this factor each point:
    /// only a deviation beyond what the series has recently shown counts, and a repeat of an alarm does not.
    pub record_decay: f64,
    /// The record never falls below this (so a quiet series still needs a real deviation).
    pub record_floor: f64,
    /// Which raw surprise the record stage uses: 0 band score, 1 likelihood, 2 the larger.
    pub base: u8,
}

impl Default for EnsembleParams {
    fn default() -> Self {
        EnsembleParams {
            threshold: ThresholdParams::default(),
            likelihood: LikelihoodParams::default(),
            likelihood_only: false,
            record_decay: 0.0,
            record_floor: 1.0,
            base: 0,
        }
    }
}

/// The univariate ensemble over one series; serialisable like its parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ensemble {
    threshold: Threshold,
    likelihood: Likelihood,
    likelihood_only: bool,
    record_decay: f64,
    record_floor: f64,
    base: u8,
    record: f64,
}

impl Ensemble {
    pub fn new(params: EnsembleParams) -> Self {
        Ensemble {
            threshold: Threshold::new(params.threshold),
            likelihood: Likelihood::new(params.likelihood),
            likelihood_only: params.likelihood_only,
            record_decay: params.record_decay,
            record_floor: params.record_floor,
            base: params.base,
            record: params.record_floor,
        }
    }
}

impl StreamDetector for Ensemble {
    fn name(&self) -> &'static str {
        "ensemble"
    }

    fn update(&mut self, t_ms: i64, value: f64) -> Verdict {
        let (verdict, z) = self.threshold.peek(value);
        self.threshold.update(t_ms, value);
        let likely = self.likelihood.update(z.abs());
        let mut score = if self.likelihood_only { likely } else { verdict.score.max(likely) };
        if self.record_decay > 0.0 {
            let raw = match self.base {
                0 => verdict.score,
                1 => likely,
                _ => verdict.score.max(likely),
            };
            score = raw / self.record;
            self.record = (self.record * self.record_decay).max(raw).max(self.record_floor);
        }
        Verdict { score, ..verdict }
    }
}
