//! Alert levels by extreme value theory: SPOT and DSPOT (Siffer, Fouque, Termier, Largouët, "Anomaly
//! Detection in Streams with Extreme Value Theory", KDD 2017).
//!
//! A fixed score level (1) or one training quantile suits some series and not others: the scores of one
//! machine have a long tail, another's a short one. Peaks over threshold instead model the tail of the
//! detector's own scores: take a high quantile `t` of the calibration scores (`init_quantile`, 0.98),
//! fit a generalised Pareto distribution (GPD) to the excesses over it (the peaks), and set the alert
//! level where the fitted tail leaves probability `q` per point:
//!
//! ```text
//! z_q = t + (σ/γ)·((q·n/N_t)^(−γ) − 1)        (γ = 0: z_q = t − σ·ln(q·n/N_t))
//! ```
//!
//! with `n` the points learnt and `N_t` the peaks among them. The level then follows the stream (SPOT): a
//! score above `z_q` is an alarm and is not learnt from; one between `t` and `z_q` joins the peaks; every
//! learnt point moves `n` (and so `z_q`, with the last fit), and the GPD is fitted again every
//! `refit_every` new peaks. DSPOT (`depth` > 0) does the same on each score minus the mean of the last
//! `depth` learnt scores, for scores that drift.
//!
//! The fit is Grimshaw's maximum-likelihood method, as in the paper: the likelihood's stationary points
//! are the roots of a function of one variable, found here by a grid scan and bisection (deterministic,
//! no optimiser). It is written here because no maintained crate on crates.io fits a GPD.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::multivariate::quantile;

/// How a detector's alert level is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AlertLevel {
    /// By peaks over threshold on the detector's own scores ([`Spot`]).
    #[default]
    Spot,
    /// At the detector's fixed level: score 1 for the univariate detector, the training quantile
    /// `threshold_quantile` for the multivariate one.
    Fixed,
}

/// SPOT's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpotParams {
    /// Risk: the probability per point that a normal score passes the alert level.
    pub q: f64,
    /// The quantile of the calibration scores that sets the initial threshold `t`.
    pub init_quantile: f64,
    /// DSPOT: scores are taken relative to the mean of the last `depth` learnt scores; 0 = SPOT.
    pub depth: usize,
    /// Peaks learnt between two fits of the distribution (1 = every peak).
    pub refit_every: usize,
    /// Peaks kept at most (memory: 8 bytes each); past it the oldest is forgotten, with its share of `n`.
    pub max_peaks: usize,
    /// Scores a detector that learns online (the univariate one) collects after its warm-up before it
    /// calibrates; a trained model (the multivariate one) calibrates on its training window instead.
    pub calibration: usize,
}

/// The risk `q` of every detector; chosen by leave-one-machine-out on the SMD machines
/// (bench/results/spot-2026-12-07.json).
pub const DEFAULT_Q: f64 = 3e-3;

impl Default for SpotParams {
    fn default() -> Self {
        SpotParams { q: DEFAULT_Q, init_quantile: 0.98, depth: 0, refit_every: 10, max_peaks: 1000, calibration: 1000 }
    }
}

impl SpotParams {
    /// Checks the values, naming the first bad key.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.q > 0.0 && self.q < 1.0) {
            return Err(format!("spot.q = {} must be in (0, 1)", self.q));
        }
        if !(self.init_quantile > 0.0 && self.init_quantile < 1.0) {
            return Err(format!("spot.init_quantile = {} must be in (0, 1)", self.init_quantile));
        }
        if self.refit_every == 0 {
            return Err("spot.refit_every must be at least 1".into());
        }
        if self.max_peaks < MIN_PEAKS {
            return Err(format!("spot.max_peaks = {} must be at least {MIN_PEAKS}", self.max_peaks));
        }
        if self.depth > MAX_DEPTH {
            return Err(format!("spot.depth = {} must be at most {MAX_DEPTH}", self.depth));
        }
        if self.calibration > MAX_CALIBRATION {
            return Err(format!("spot.calibration = {} must be at most {MAX_CALIBRATION}", self.calibration));
        }
        Ok(())
    }
}

/// Peaks needed for a fit: fewer say nothing about a tail.
pub const MIN_PEAKS: usize = 5;
/// The longest DSPOT window and calibration a rule may ask for (both are kept per series).
pub const MAX_DEPTH: usize = 10_000;
pub const MAX_CALIBRATION: usize = 100_000;

/// Why SPOT could not start from a calibration window.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpotError {
    #[error(
        "calibration has {points} finite scores, needs at least depth {depth} plus {} / (1 − init_quantile)",
        MIN_PEAKS
    )]
    TooFew { points: usize, depth: usize },
    #[error("calibration has {peaks} scores above its {init_quantile} quantile, needs {} to fit a tail", MIN_PEAKS)]
    FewPeaks { peaks: usize, init_quantile: f64 },
}

/// A generalised Pareto distribution of excesses: P(Y > y) = (1 + γy/σ)^(−1/γ) (exp(−y/σ) when γ = 0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Gpd {
    /// Shape γ: above 0 a heavy tail, 0 exponential, below 0 a bounded one.
    pub gamma: f64,
    /// Scale σ (> 0).
    pub sigma: f64,
}

/// |γ| below this is taken as 0 (the exponential tail).
const GAMMA_ZERO: f64 = 1e-9;

impl Gpd {
    /// Grimshaw's maximum-likelihood fit to `excesses` (each above 0). With θ = γ/σ, the likelihood's
    /// stationary points are the roots of w(θ) = u(θ)·v(θ) − 1, u(θ) = 1 + mean ln(1 + θY),
    /// v(θ) = mean 1/(1 + θY), on θ > −1/max Y, where γ = u(θ) − 1 and σ = γ/θ; θ = 0 (the exponential,
    /// σ = mean Y) is always a candidate. Of them all, the one of highest likelihood. `None` for fewer than
    /// [`MIN_PEAKS`] excesses or any not finite and above 0.
    pub fn fit(excesses: &[f64]) -> Option<Gpd> {
        if excesses.len() < MIN_PEAKS || excesses.iter().any(|y| !(y.is_finite() && *y > 0.0)) {
            return None;
        }
        let n = excesses.len() as f64;
        let (lo, hi) = excesses.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &y| (lo.min(y), hi.max(y)));
        let mean = excesses.iter().sum::<f64>() / n;
        let w = |theta: f64| {
            let (mut u, mut v) = (0.0, 0.0);
            for &y in excesses {
                let s = 1.0 + theta * y;
                u += s.ln();
                v += 1.0 / s;
            }
            (1.0 + u / n) * (v / n) - 1.0
        };
        let mut best = Gpd { gamma: 0.0, sigma: mean };
        let mut best_ll = best.log_likelihood(excesses);
        let mut consider = |theta: f64| {
            let gamma = excesses.iter().map(|&y| (theta * y).ln_1p()).sum::<f64>() / n;
            let sigma = gamma / theta;
            if !(gamma.is_finite() && sigma.is_finite() && sigma > 0.0) {
                return;
            }
            let g = Gpd { gamma, sigma };
            let ll = g.log_likelihood(excesses);
            if ll > best_ll {
                (best, best_ll) = (g, ll);
            }
        };
        // Left of 0, down to the support's edge −1/max Y.
        let edge = -1.0 / hi;
        let left: Vec<f64> = ends(GRID).map(|s| edge * (1.0 - s)).collect();
        for theta in roots(&w, &left) {
            consider(theta);
        }
        // Right of 0 up to Grimshaw's upper bound 2(Ȳ − min Y)/min Y², on a geometric grid from
        // 10⁻⁶/Ȳ: a root of a heavy tail (θ = γ/σ) lies there.
        let from = 1e-6 / mean;
        let to = 2.0 * (mean - lo) / (lo * lo);
        if to.is_finite() && to > from {
            let ratio = to / from;
            let right: Vec<f64> = (0..=2 * GRID).map(|i| from * ratio.powf(i as f64 / (2 * GRID) as f64)).collect();
            for theta in roots(&w, &right) {
                consider(theta);
            }
        }
        Some(best)
    }

    /// The log-likelihood of `excesses`; −∞ where one is outside the support.
    pub fn log_likelihood(&self, excesses: &[f64]) -> f64 {
        let n = excesses.len() as f64;
        if self.sigma.is_nan() || self.sigma <= 0.0 {
            return f64::NEG_INFINITY;
        }
        if self.gamma.abs() < GAMMA_ZERO {
            return -n * self.sigma.ln() - excesses.iter().sum::<f64>() / self.sigma;
        }
        let mut sum = 0.0;
        for &y in excesses {
            let s = 1.0 + self.gamma * y / self.sigma;
            if s <= 0.0 {
                return f64::NEG_INFINITY;
            }
            sum += s.ln();
        }
        -n * self.sigma.ln() - (1.0 + 1.0 / self.gamma) * sum
    }

    /// The excess `y` with P(Y > y) = `p`.
    pub fn excess_quantile(&self, p: f64) -> f64 {
        if self.gamma.abs() < GAMMA_ZERO {
            -self.sigma * p.ln()
        } else {
            self.sigma / self.gamma * (p.powf(-self.gamma) - 1.0)
        }
    }
}

/// Grid points per interval in [`Gpd::fit`]'s root search.
const GRID: usize = 200;

/// `2·half` shares of an interval in (0, 1), dense near both ends (geometric from 1e-8 to ½, mirrored),
/// where the roots of Grimshaw's function tend to lie.
fn ends(half: usize) -> impl Iterator<Item = f64> {
    let half = half / 2;
    let near = move |i: usize| 1e-8 * (0.5f64 / 1e-8).powf(i as f64 / half as f64);
    (0..=half).map(near).chain((0..half).rev().map(move |i| 1.0 - near(i)))
}

/// The roots of `f` between consecutive grid points where it changes sign, each by bisection.
fn roots(f: &impl Fn(f64) -> f64, grid: &[f64]) -> Vec<f64> {
    let mut found = Vec::new();
    let values: Vec<f64> = grid.iter().map(|&x| f(x)).collect();
    for i in 1..grid.len() {
        let (mut a, mut b, fa, fb) = (grid[i - 1], grid[i], values[i - 1], values[i]);
        if !(fa.is_finite() && fb.is_finite()) || fa.signum() == fb.signum() {
            continue;
        }
        let mut fa = fa;
        for _ in 0..100 {
            let m = 0.5 * (a + b);
            let fm = f(m);
            if fm.signum() == fa.signum() {
                (a, fa) = (m, fm);
            } else {
                b = m;
            }
            if (b - a).abs() <= 1e-14 * a.abs().max(b.abs()) {
                break;
            }
        }
        found.push(0.5 * (a + b));
    }
    found
}

/// What SPOT made of one score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Above the alert level: not learnt.
    Alarm,
    /// Between the initial threshold and the alert level: a new peak.
    Peak,
    /// Below the initial threshold (or not finite, and ignored).
    Normal,
}

/// SPOT's state over one score stream; serialisable, so it is saved with its detector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spot {
    params: SpotParams,
    /// The initial threshold `t` (relative to the moving mean for DSPOT).
    t: f64,
    /// Excesses over `t`, oldest first.
    peaks: VecDeque<f64>,
    /// Points learnt, `n`; a real number because forgetting a peak forgets its share of the points.
    n: f64,
    fit: Gpd,
    /// The alert level `z_q` (relative to the moving mean for DSPOT).
    z: f64,
    /// Peaks learnt since the last fit.
    since_fit: usize,
    /// DSPOT: the last `depth` learnt scores, oldest first.
    recent: VecDeque<f64>,
}

impl Spot {
    /// Starts SPOT from `scores` (a training window's, or the first of a stream's), in time order;
    /// non-finite scores are skipped. DSPOT's first `depth` scores only fill its moving window.
    pub fn calibrate(params: &SpotParams, scores: &[f64]) -> Result<Spot, SpotError> {
        let depth = params.depth;
        let finite: Vec<f64> = scores.iter().copied().filter(|s| s.is_finite()).collect();
        let needed = depth + (MIN_PEAKS as f64 / (1.0 - params.init_quantile)).ceil() as usize;
        if finite.len() < needed {
            return Err(SpotError::TooFew { points: finite.len(), depth });
        }
        let mut recent: VecDeque<f64> = finite[..depth].iter().copied().collect();
        let mut relative = Vec::with_capacity(finite.len() - depth);
        for &s in &finite[depth..] {
            relative.push(s - mean(&recent));
            if depth > 0 {
                recent.pop_front();
                recent.push_back(s);
            }
        }
        let t = quantile(&relative, params.init_quantile);
        let mut peaks: VecDeque<f64> = relative.iter().filter(|&&x| x > t).map(|&x| x - t).collect();
        if peaks.len() < MIN_PEAKS {
            return Err(SpotError::FewPeaks { peaks: peaks.len(), init_quantile: params.init_quantile });
        }
        let mut n = relative.len() as f64;
        while peaks.len() > params.max_peaks {
            n *= (peaks.len() - 1) as f64 / peaks.len() as f64;
            peaks.pop_front();
        }
        let peaks_now: Vec<f64> = peaks.iter().copied().collect();
        let fit = Gpd::fit(&peaks_now)
            .ok_or(SpotError::FewPeaks { peaks: peaks_now.len(), init_quantile: params.init_quantile })?;
        let mut spot = Spot { params: params.clone(), t, peaks, n, fit, z: t, since_fit: 0, recent };
        spot.z = spot.level_from_fit();
        Ok(spot)
    }

    /// The alert level in the scores' own units (for DSPOT, the moving mean plus `z_q`).
    pub fn level(&self) -> f64 {
        mean(&self.recent) + self.z
    }

    /// The initial threshold in the scores' own units.
    pub fn threshold(&self) -> f64 {
        mean(&self.recent) + self.t
    }

    /// The fitted tail of the excesses.
    pub fn fit(&self) -> Gpd {
        self.fit
    }

    /// Peaks held, and points learnt.
    pub fn counts(&self) -> (usize, f64) {
        (self.peaks.len(), self.n)
    }

    pub fn params(&self) -> &SpotParams {
        &self.params
    }

    /// Judges the next score against the current level, then learns from it unless it is an alarm.
    pub fn update(&mut self, score: f64) -> Step {
        if !score.is_finite() {
            return Step::Normal;
        }
        let x = score - mean(&self.recent);
        if x > self.z {
            return Step::Alarm;
        }
        let step = if x > self.t {
            self.peaks.push_back(x - self.t);
            if self.peaks.len() > self.params.max_peaks {
                self.n *= (self.peaks.len() - 1) as f64 / self.peaks.len() as f64;
                self.peaks.pop_front();
            }
            self.since_fit += 1;
            if self.since_fit >= self.params.refit_every {
                self.since_fit = 0;
                let peaks: Vec<f64> = self.peaks.iter().copied().collect();
                if let Some(fit) = Gpd::fit(&peaks) {
                    self.fit = fit;
                }
            }
            Step::Peak
        } else {
            Step::Normal
        };
        self.n += 1.0;
        if self.params.depth > 0 {
            if self.recent.len() >= self.params.depth {
                self.recent.pop_front();
            }
            self.recent.push_back(score);
        }
        self.z = self.level_from_fit();
        step
    }

    /// `z_q` from the current fit, `n` and peaks; never below `t`.
    fn level_from_fit(&self) -> f64 {
        let rate = self.params.q * self.n / self.peaks.len().max(1) as f64;
        let z = self.t + self.fit.excess_quantile(rate);
        if z.is_finite() { z.max(self.t) } else { self.t }
    }
}

fn mean(v: &VecDeque<f64>) -> f64 {
    if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 }
}

#[cfg(test)]
mod tests;
