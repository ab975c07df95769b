//! The simplest band worth having: an exponentially weighted mean and deviation (the EWMA control
//! chart), with a warm-up, a direction and a minimum-deviation guard. Cheap enough for every series;
//! the seasonal dynamic threshold is the better choice where a daily rhythm exists.

use super::Direction;
use super::{StreamDetector, Verdict};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EwmaParams {
    /// Weight of each new point in the mean and the variance (0–1).
    pub alpha: f64,
    /// Band half-width in deviations.
    pub k: f64,
    /// Points learnt before any score above 0.
    pub warmup: u32,
    /// The band is never narrower than this on each side (metric unit)…
    pub min_deviation: f64,
    /// …nor than this fraction of |mean|.
    pub min_relative_deviation: f64,
    pub direction: Direction,
}

impl Default for EwmaParams {
    fn default() -> Self {
        EwmaParams {
            alpha: 0.02,
            k: 4.0,
            warmup: 30,
            min_deviation: 0.0,
            min_relative_deviation: 0.05,
            direction: Direction::Both,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ewma {
    pub params: EwmaParams,
    mean: f64,
    var: f64,
    seen: u32,
}

impl Ewma {
    pub fn new(params: EwmaParams) -> Self {
        Ewma { params, mean: 0.0, var: 0.0, seen: 0 }
    }

    fn half_width(&self) -> f64 {
        let p = &self.params;
        (p.k * self.var.sqrt()).max(p.min_deviation).max(p.min_relative_deviation * self.mean.abs())
    }
}

impl StreamDetector for Ewma {
    fn name(&self) -> &'static str {
        "ewma"
    }

    fn update(&mut self, _t_ms: i64, value: f64) -> Verdict {
        if !value.is_finite() {
            return Verdict { score: 0.0, expected: None, band: None };
        }
        if self.seen == 0 {
            self.mean = value;
            self.seen = 1;
            return Verdict { score: 0.0, expected: Some(value), band: None };
        }
        let half = self.half_width();
        let deviation = value - self.mean;
        let band = (self.mean - half, self.mean + half);
        let watched = match self.params.direction {
            Direction::Above => deviation > 0.0,
            Direction::Below => deviation < 0.0,
            Direction::Both => true,
        };
        let warm = self.seen >= self.params.warmup;
        let score = if warm && watched && half > 0.0 { deviation.abs() / half } else { 0.0 };
        let expected = self.mean;
        // Learning from the deviation clipped to the band (Huber's rule), so a fault neither drags
        // the mean nor widens the band much; a lasting level shift still becomes normal in time.
        let a = self.params.alpha;
        let d = if warm && half > 0.0 { deviation.clamp(-half, half) } else { deviation };
        self.mean += a * d;
        self.var = (1.0 - a) * (self.var + a * d * d);
        self.seen = self.seen.saturating_add(1);
        Verdict { score, expected: Some(expected), band: warm.then_some(band) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_far_outside_the_band_scores_above_one_and_the_band_holds() {
        let mut d = Ewma::new(EwmaParams::default());
        let mut worst_before = 0.0f64;
        for i in 0..200 {
            let v = 50.0 + ((i * 7919) % 13) as f64 * 0.3;
            worst_before = worst_before.max(d.update(i, v).score);
        }
        assert!(worst_before < 1.0, "normal data scored {worst_before}");
        let v = d.update(200, 95.0);
        assert!(v.score > 1.0, "the fault scored {}", v.score);
        let (lo, hi) = v.band.unwrap();
        assert!(lo < 52.0 && hi < 60.0 && lo > 40.0, "band {lo}..{hi}");
    }

    #[test]
    fn direction_and_state_round_trip() {
        let mut d = Ewma::new(EwmaParams { direction: Direction::Above, ..EwmaParams::default() });
        for i in 0..100 {
            d.update(i, 10.0 + (i % 2) as f64);
        }
        assert_eq!(d.clone().update(100, 1.0).score, 0.0);
        let saved = serde_json::to_string(&d).unwrap();
        let mut back: Ewma = serde_json::from_str(&saved).unwrap();
        assert_eq!(back.update(100, 30.0), d.update(100, 30.0));
    }
}
