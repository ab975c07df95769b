//! Anomaly likelihood, in the style of Numenta's (`nupic.algorithms.anomaly_likelihood`): rather than
//! thresholding a raw surprise directly, compare its short-term average with the long-term distribution of
//! that average, and score how improbable the current average is. A series that is always noisy stops
//! alarming; a quiet series that becomes noisy alarms even on moderate deviations.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Parameters of the likelihood stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LikelihoodParams {
    /// Points in the short-term average.
    pub short: usize,
    /// Time constant (points) of the long-term mean and variance of the short-term average.
    pub long: f64,
    /// Points before the long-term distribution is trusted (the score is 0 until then).
    pub learn: u64,
    /// The score is `-log10(tail probability) / log_tail`: 1 at a tail probability of `10^-log_tail`.
    pub log_tail: f64,
    /// Raw surprises are capped here so one huge value does not mask the rest for long.
    pub cap: f64,
}

impl Default for LikelihoodParams {
    fn default() -> Self {
        LikelihoodParams { short: 10, long: 2000.0, learn: 300, log_tail: 5.0, cap: 10.0 }
    }
}

/// The likelihood state of one series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Likelihood {
    params: LikelihoodParams,
    recent: VecDeque<f64>,
    sum: f64,
    n: u64,
    mean: f64,
    var: f64,
}

impl Likelihood {
    pub fn new(params: LikelihoodParams) -> Self {
        Likelihood { params, recent: VecDeque::new(), sum: 0.0, n: 0, mean: 0.0, var: 0.0 }
    }

    /// Takes a raw surprise (≥ 0) and returns the likelihood score (> 1: improbable).
    pub fn update(&mut self, surprise: f64) -> f64 {
        let p = &self.params;
        let a = if surprise.is_finite() { surprise.clamp(0.0, p.cap) } else { p.cap };
        self.recent.push_back(a);
        self.sum += a;
        if self.recent.len() > p.short
            && let Some(old) = self.recent.pop_front()
        {
            self.sum -= old;
        }
        let avg = self.sum / self.recent.len() as f64;
        let score = if self.n >= p.learn {
            // Numenta floors the deviation so a perfectly flat history does not make every blip infinite.
            let sd = self.var.sqrt().max(0.03 * self.mean.abs()).max(1e-3);
            let tail = upper_tail((avg - self.mean) / sd);
            -tail.max(1e-300).log10() / p.log_tail
        } else {
            0.0
        };
        self.n += 1;
        let alpha = (1.0 / self.n as f64).max(1.0 / p.long);
        let d = avg - self.mean;
        self.mean += alpha * d;
        self.var = (1.0 - alpha) * (self.var + alpha * d * d);
        score
    }
}

/// P(Z > z) for a standard normal Z, via the complementary error function (Abramowitz–Stegun 7.1.26 is too
/// coarse in the far tail, so this uses the continued-fraction-free Numerical Recipes `erfc` approximation).
pub fn upper_tail(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_probabilities() {
        assert!((upper_tail(0.0) - 0.5).abs() < 1e-7);
        assert!((upper_tail(1.959_964) - 0.025).abs() < 1e-6);
        assert!((upper_tail(4.264_891) / 1e-5 - 1.0).abs() < 1e-3);
    }

    #[test]
    fn a_burst_after_quiet_scores_high_and_steady_noise_does_not() {
        let mut l = Likelihood::new(LikelihoodParams::default());
        let quiet: Vec<f64> = (0..1000).map(|i| l.update(0.5 + 0.3 * ((i * 7919 % 13) as f64 / 13.0))).collect();
        assert!(quiet[300..].iter().all(|&s| s < 1.0), "{:?}", quiet.iter().cloned().fold(0.0, f64::max));
        let burst: Vec<f64> = (0..10).map(|_| l.update(8.0)).collect();
        assert!(burst.iter().any(|&s| s > 1.0), "{burst:?}");
    }
}
