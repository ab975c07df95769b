//! Dynamic thresholds: a per-series seasonal baseline with a band that adapts online.
//!
//! The first [`ThresholdParams::warmup`] points are buffered; at their end the period is found with augurs'
//! periodogram ([`augurs_seasons::PeriodogramDetector`]) and kept only if a per-phase median profile explains
//! enough of the variance. From then on the expected value is `level + seasonal[phase]`, both updated by
//! exponentially weighted, clipped (Huber) residuals, so a single outlier moves neither far; the scale is an
//! exponentially weighted mean absolute deviation of the same clipped residuals. During warm-up the detector is
//! already live, without a season. The band is `expected ± k · scale`, where the scale is never below the
//! absolute and relative minimum deviations, and the score is the deviation in the watched direction divided
//! by `k · scale`: above 1 means outside the band.
//!
//! Phases count points, not wall-clock time: the series must come on a regular grid (as the runtime's range
//! queries give it); a non-finite value (a gap on the grid) advances the phase but teaches nothing.

use augurs_seasons::PeriodogramDetector;
use serde::{Deserialize, Serialize};

use super::{StreamDetector, Verdict};

/// Points that only start the baseline and the scale (the scale learns from them unclipped).
const START: u64 = 10;

pub use super::Direction;

/// The dynamic threshold's parameters. The defaults suit metrics sampled every few seconds to minutes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ThresholdParams {
    /// Points buffered before the season is looked for.
    pub warmup: usize,
    /// Shortest and longest period (in points) considered.
    pub min_period: u32,
    pub max_period: u32,
    /// Share of the warm-up variance the seasonal profile must explain to be used.
    pub min_season_strength: f64,
    /// Band half-width in scales.
    pub k: f64,
    /// Residuals are clipped to `clip` scales before the baseline learns from them.
    pub clip: f64,
    /// Learning rates of the level, of each phase of the season, and of the scale.
    pub alpha_level: f64,
    pub alpha_season: f64,
    pub alpha_scale: f64,
    /// The scale never falls below `min_abs`, nor `min_rel` times the series' typical magnitude (a slow
    /// average of `|value|`), nor `min_long` times its long-run scale: a series that sat flat for a while
    /// must not make its next small step look infinite.
    pub min_abs: f64,
    pub min_rel: f64,
    pub min_long: f64,
    /// Learning rate of the typical magnitude and the long-run scale.
    pub alpha_long: f64,
    pub direction: Direction,
    /// Model `sign(x)·ln(1 + |x|)` instead of `x`: counts, bytes and request rates spread over decades, and a
    /// band on the log scale widens with the level.
    pub log: bool,
}

impl Default for ThresholdParams {
    fn default() -> Self {
        ThresholdParams {
            warmup: 640,
            min_period: 4,
            max_period: 320,
            min_season_strength: 0.3,
            k: 4.0,
            clip: 3.0,
            alpha_level: 0.05,
            alpha_season: 0.05,
            alpha_scale: 0.01,
            min_abs: 1e-9,
            min_rel: 0.01,
            min_long: 0.2,
            alpha_long: 0.001,
            direction: Direction::Both,
            log: false,
        }
    }
}

/// A dynamic threshold over one series. Serialisable, so the runtime can persist and resume it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    params: ThresholdParams,
    /// Points seen.
    n: u64,
    /// Warm-up values, emptied once the season is settled. Single precision: the buffer is most of a
    /// warming detector's memory (2.5 KiB rather than 5 for the default 640 points, for every watched
    /// series of a fleet at once), and period, profile and scale need nowhere near 24 bits (a value past
    /// f32's range, ~3.4e38, leaves the series without a season).
    buffer: Vec<f32>,
    level: f64,
    /// Empty when the series has no season.
    seasonal: Vec<f64>,
    /// Mean absolute deviation of the clipped residuals.
    scale: f64,
    /// Slow averages of `|value|` and of the scale.
    magnitude: f64,
    long_scale: f64,
}

impl Threshold {
    pub fn new(params: ThresholdParams) -> Self {
        Threshold {
            params,
            n: 0,
            buffer: Vec::new(),
            level: 0.0,
            seasonal: Vec::new(),
            scale: 0.0,
            magnitude: 0.0,
            long_scale: 0.0,
        }
    }

    /// The side of the expected value it watches.
    pub fn direction(&self) -> Direction {
        self.params.direction
    }

    /// The period in use, once warm-up is over (1 without a season).
    pub fn period(&self) -> Option<usize> {
        (self.n as usize >= self.params.warmup).then(|| self.seasonal.len().max(1))
    }

    fn phase(&self) -> usize {
        if self.seasonal.is_empty() { 0 } else { (self.n as usize) % self.seasonal.len() }
    }

    fn expected(&self) -> f64 {
        self.level + self.seasonal.get(self.phase()).copied().unwrap_or(0.0)
    }

    fn floor(&self) -> f64 {
        let p = &self.params;
        p.min_abs.max(p.min_rel * self.magnitude).max(p.min_long * self.long_scale)
    }

    /// Scores `value` against the current band without learning from it: (verdict, residual in scales).
    pub fn peek(&self, value: f64) -> (Verdict, f64) {
        let value = self.forward(value);
        // The first few points only start the scale: no verdict on them.
        if self.n < START || !value.is_finite() {
            return (Verdict { score: 0.0, expected: None, band: None }, 0.0);
        }
        let expected = self.expected();
        let scale = self.scale.max(self.floor());
        let width = self.params.k * scale;
        let r = value - expected;
        let verdict = Verdict {
            score: self.params.direction.watched(r) / width,
            expected: Some(self.back(expected)),
            band: Some((self.back(expected - width), self.back(expected + width))),
        };
        (verdict, r / scale)
    }

    fn forward(&self, x: f64) -> f64 {
        if self.params.log { x.signum() * x.abs().ln_1p() } else { x }
    }

    fn back(&self, y: f64) -> f64 {
        if self.params.log { y.signum() * y.abs().exp_m1() } else { y }
    }

    fn learn(&mut self, value: f64) {
        let mut value = self.forward(value);
        if !value.is_finite() {
            if self.n == 0 {
                return;
            }
            // A gap: keep the phase, and fill the warm-up buffer with what was expected.
            value = self.expected();
            self.n += 1;
            self.push_warmup(value);
            return;
        }
        let p = &self.params;
        if self.n == 0 {
            (self.level, self.scale) = (value, 0.0);
        } else {
            let expected = self.expected();
            let scale = self.scale.max(self.floor());
            let r = value - expected;
            // Before the scale has history, it is zero: take the first residuals unclipped.
            let rc = if self.n < START { r } else { r.clamp(-p.clip * scale, p.clip * scale) };
            self.level += p.alpha_level * rc;
            let phase = self.phase();
            if let Some(s) = self.seasonal.get_mut(phase) {
                *s += p.alpha_season * (1.0 - p.alpha_level) * rc;
            }
            let alpha_scale = if self.n < START { 1.0 / (self.n as f64 + 1.0) } else { p.alpha_scale };
            self.scale += alpha_scale * (rc.abs() - self.scale);
        }
        let alpha_long = (1.0 / (self.n as f64 + 1.0)).max(p.alpha_long);
        self.magnitude += alpha_long * (value.abs() - self.magnitude);
        self.long_scale += alpha_long * (self.scale - self.long_scale);
        self.n += 1;
        self.push_warmup(value);
    }

    fn push_warmup(&mut self, value: f64) {
        if (self.n as usize) <= self.params.warmup {
            // The whole buffer at once: grown by doubling it would end at the next power of two (1,024 for
            // the default 640, 60 % more) and leave each series' outgrown copies behind in the allocator,
            // which made a watched fleet's memory climb for the first hours.
            if self.buffer.capacity() < self.params.warmup {
                self.buffer.reserve_exact(self.params.warmup - self.buffer.len());
                // And written through once, so the system commits its pages now: a fleet's detectors
                // then take their warm-up memory as their series appear, instead of resident memory
                // creeping up for the whole warm-up (107 minutes at a 10 s step; the soak in
                // docs/performance.md) and dropping when every season is settled. The peak is the same.
                self.buffer.spare_capacity_mut().fill(std::mem::MaybeUninit::new(0.0));
            }
            self.buffer.push(value as f32);
            if self.n as usize == self.params.warmup {
                self.settle_season();
            }
        }
    }

    /// Ends warm-up: finds the period and, when it explains enough, starts the seasonal profile from the
    /// per-phase medians of the buffer.
    fn settle_season(&mut self) {
        let buffer: Vec<f64> = std::mem::take(&mut self.buffer).into_iter().map(f64::from).collect();
        let p = &self.params;
        let max_period = p.max_period.min(buffer.len() as u32 / 2);
        if max_period <= p.min_period || buffer.iter().any(|v| !v.is_finite()) {
            return;
        }
        let Some(period) = find_period(&buffer, p.min_period, max_period) else { return };
        let mut profile: Vec<f64> =
            (0..period).map(|phase| median(buffer.iter().skip(phase).step_by(period).copied().collect())).collect();
        let centre = median(profile.clone());
        profile.iter_mut().for_each(|v| *v -= centre);
        let mean = buffer.iter().sum::<f64>() / buffer.len() as f64;
        let total: f64 = buffer.iter().map(|v| (v - mean).powi(2)).sum();
        let deseasoned: Vec<f64> = buffer.iter().enumerate().map(|(i, v)| v - profile[i % period]).collect();
        let mean_d = deseasoned.iter().sum::<f64>() / deseasoned.len() as f64;
        let left: f64 = deseasoned.iter().map(|v| (v - mean_d).powi(2)).sum();
        if total <= 0.0 || 1.0 - left / total < p.min_season_strength {
            return;
        }
        // Phases are counted from the first point; the buffer started at point 0.
        let tail = &deseasoned[deseasoned.len().saturating_sub(period)..];
        self.level = median(tail.to_vec());
        let residuals: Vec<f64> = deseasoned.iter().map(|v| (v - self.level).abs()).collect();
        self.scale = median(residuals);
        self.seasonal = profile;
    }
}

impl StreamDetector for Threshold {
    fn name(&self) -> &'static str {
        "threshold"
    }

    fn update(&mut self, _t_ms: i64, value: f64) -> Verdict {
        let (verdict, _) = self.peek(value);
        self.learn(value);
        verdict
    }
}

/// The period of `data`: augurs' periodogram proposes peaks, but its frequency bins are coarse (with 640
/// points, 42 and 51 but not 48) and its strongest "peak" is often the trend in the lowest bin; so the lags
/// between the neighbouring bins of the strongest peaks are searched for a local autocorrelation maximum.
pub fn find_period(data: &[f64], min_period: u32, max_period: u32) -> Option<usize> {
    let detector = PeriodogramDetector::builder().min_period(min_period).max_period(max_period).build();
    let peaks: Vec<_> = detector.periodogram(data).peaks(0.01).collect();
    let mean = data.iter().sum::<f64>() / data.len() as f64;
    let var: f64 = data.iter().map(|v| (v - mean).powi(2)).sum();
    if var <= 0.0 {
        return None;
    }
    let acf =
        |lag: usize| -> f64 { data.iter().zip(&data[lag..]).map(|(a, b)| (a - mean) * (b - mean)).sum::<f64>() / var };
    let mut candidate = vec![false; (max_period as usize).min(data.len() / 2) + 2];
    // augurs lists the peaks by increasing power.
    for peak in peaks.iter().rev().take(5) {
        // Periods fall along the periodogram: `prev_period` is the longer neighbour, 0 past the longest bin.
        let lo = peak.next_period.max(min_period).max(2) as usize;
        let hi = if peak.prev_period == 0 { max_period } else { peak.prev_period.min(max_period) } as usize;
        for lag in lo..=hi.min(candidate.len() - 2) {
            candidate[lag] = true;
        }
    }
    // The shortest lag among the candidates that is a local maximum of the autocorrelation, at least 0.3:
    // the longest ones are often multiples of it.
    (2..candidate.len() - 1).find(|&lag| {
        if !candidate[lag] {
            return false;
        }
        let r = acf(lag);
        r >= 0.3 && r >= acf(lag - 1) && r >= acf(lag + 1)
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mid = v.len() / 2;
    let (_, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    *m
}

#[cfg(test)]
pub(crate) mod tests;
