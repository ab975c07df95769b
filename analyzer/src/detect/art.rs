//! Adaptive resonance: a series' recent shapes learnt as fuzzy ART categories; a window that resonates
//! with none of them is novel.
//!
//! Each point closes a window of the last [`ArtParams::window`] values. The values are scaled into [0, 1]
//! by the input range, the window is described by its Haar wavelet coefficients ([`haar`]) and the
//! features are presented to a dual-vigilance fuzzy ART ([`fuzzy`]): a window close to a learnt category
//! (upper vigilance [`ArtParams::rho`]) refines it; one farther away makes a new category, and one that
//! reaches no category at the lower vigilance starts a new cluster: that is the novelty this detector
//! reports. The score is the window's mismatch (1 − its best match) over the novelty level `1 − ρ_lb`,
//! so it is above 1 exactly when the window is novel, and graded below and above.
//!
//! The first [`ArtParams::warmup`] points are a probation: they are buffered, and at their end their
//! lowest and highest values set the input range and they are replayed through ART. The largest mismatch
//! of the replay's second half, times [`ArtParams::margin`], sets the base novelty level: this series'
//! normal windows differ from each other that much. From then on the lower vigilance adapts: a novel
//! window lowers it to its own match (that shape is now known, and a repeat of it is not news), and it
//! climbs back to the base a little every point ([`ArtParams::decay`]). A value beyond the input range
//! widens it (by [`ArtParams::headroom`] of the new width, so that a slowly climbing series does not
//! rescale at every point); the categories and the novelty level move with the inputs, since every feature
//! is affine in the values. The range is learnt from the stream only, never from the future.
//!
//! Memory is bounded: [`ArtParams::max_categories`] boxes of `2 · window` single-precision bounds, plus a
//! cluster number and a last-use step each (at the defaults, at most 512 · 76 bytes, 38 KiB, per series;
//! a series whose windows repeat holds far fewer). A smaller bound saves memory on an analyzer watching
//! many series, at a cost: with 128 a noisy periodic series evicts its own normal windows and can alarm
//! (NAB: 67.19 whole against 68.16). Everything is deterministic.

pub mod fuzzy;
pub mod haar;

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{StreamDetector, Verdict};
use fuzzy::Categories;
use haar::Kind;

/// The longest window: features are computed in fixed buffers of this size.
pub const MAX_WINDOW: usize = 64;

/// Parameters of the adaptive-resonance detector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ArtParams {
    /// Values per window: a power of two from 2 to [`MAX_WINDOW`].
    pub window: usize,
    /// Points averaged into each of the window's values: the window spans `window · block` points.
    pub block: usize,
    /// Points of probation: the input range is theirs, and ART learns them before it scores.
    pub warmup: usize,
    /// The upper vigilance ρ_ub: a window resonates with (and refines) a category it matches this well.
    pub rho: f64,
    /// The base novelty level is this multiple of the largest mismatch in the warm-up's second half.
    pub margin: f64,
    /// Per-point decay of the novelty level back towards its base after a novel window raised it.
    pub decay: f64,
    /// Categories kept per series; the least recently resonating one gives way.
    pub max_categories: usize,
    /// When a value widens the input range, the range is widened further by this share of its new width.
    pub headroom: f64,
}

impl Default for ArtParams {
    fn default() -> Self {
        ArtParams {
            window: 8,
            block: 1,
            warmup: 300,
            rho: 0.98,
            margin: 1.0,
            decay: 0.999,
            max_categories: 512,
            headroom: 0.05,
        }
    }
}

impl ArtParams {
    /// Checks the parameters; the error names the first one out of its range.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.window.is_power_of_two() && (2..=MAX_WINDOW).contains(&self.window)) {
            return Err(format!("window = {} must be a power of two from 2 to {MAX_WINDOW}", self.window));
        }
        if !(1..=64).contains(&self.block) {
            return Err(format!("block = {} must be from 1 to 64", self.block));
        }
        if self.warmup < 2 * self.window * self.block {
            return Err(format!(
                "warmup = {} must be at least twice the window's span ({} points)",
                self.warmup,
                self.window * self.block
            ));
        }
        if !(self.rho > 0.0 && self.rho < 1.0) {
            return Err(format!("rho = {} must be in (0, 1)", self.rho));
        }
        if !(self.margin.is_finite() && self.margin > 0.0) {
            return Err(format!("margin = {} must be above 0", self.margin));
        }
        if !(self.decay > 0.0 && self.decay <= 1.0) {
            return Err(format!("decay = {} must be in (0, 1]", self.decay));
        }
        if !(1..=4096).contains(&self.max_categories) {
            return Err(format!("max_categories = {} must be from 1 to 4096", self.max_categories));
        }
        if !(self.headroom.is_finite() && self.headroom >= 0.0) {
            return Err(format!("headroom = {} must be a number at or above 0", self.headroom));
        }
        Ok(())
    }
}

/// The adaptive-resonance detector over one series; serialisable, so the runtime can persist it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Art {
    params: ArtParams,
    /// Warm-up values, in single precision; empty once the warm-up is over.
    buffer: Vec<f32>,
    /// Whether the warm-up is over.
    live: bool,
    /// The last `window · block` values, oldest first.
    recent: VecDeque<f64>,
    /// The input range (set at the end of the warm-up).
    lo: f64,
    hi: f64,
    categories: Categories,
    /// The novelty level `1 − ρ_lb`, and the base it returns to.
    level: f64,
    base: f64,
}

impl Default for Art {
    fn default() -> Self {
        Art::new(ArtParams::default())
    }
}

impl Art {
    /// A detector with `params`, which [`ArtParams::validate`] should have accepted: a window that is not a
    /// power of two in range is taken as the nearest one that is.
    pub fn new(mut params: ArtParams) -> Self {
        params.window = params.window.clamp(2, MAX_WINDOW).next_power_of_two().min(MAX_WINDOW);
        params.block = params.block.clamp(1, 64);
        params.warmup = params.warmup.max(2 * params.window * params.block);
        Art {
            categories: Categories::new(params.window),
            params,
            buffer: Vec::new(),
            live: false,
            recent: VecDeque::new(),
            lo: 0.0,
            hi: 0.0,
            level: 1.0,
            base: 1.0,
        }
    }

    /// Whether the probation is over (the detector scores).
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// The input range `(lo, hi)`, once live.
    pub fn range(&self) -> Option<(f64, f64)> {
        self.live.then_some((self.lo, self.hi))
    }

    /// Categories held, and clusters made.
    pub fn categories(&self) -> (usize, u32) {
        (self.categories.len(), self.categories.clusters())
    }

    /// Ends the probation: the range from the buffered values, then ART learns them.
    fn go_live(&mut self) {
        let values: Vec<f64> = std::mem::take(&mut self.buffer).into_iter().map(f64::from).collect();
        let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        // A flat warm-up gets a range just wide enough to be one: any later move leaves it.
        let pad = if hi - lo > f64::EPSILON * lo.abs().max(hi.abs()).max(1.0) { 0.0 } else { 1e-6 * lo.abs().max(1.0) };
        (self.lo, self.hi, self.live) = (lo - pad, hi + pad, true);
        // The replay learns with a lower vigilance equal to the upper one: its clusters mean nothing yet.
        let floor = 1.0 - self.params.rho;
        let half = values.len() / 2;
        let mut largest = 0.0f64;
        for (i, v) in values.into_iter().enumerate() {
            if let Some(mismatch) = self.present(v, floor)
                && i >= half
            {
                largest = largest.max(mismatch);
            }
        }
        self.base = (self.params.margin * largest).max(floor);
        self.level = self.base;
    }

    /// Adds `value` to the window and, once the window is full, presents it to ART at novelty level
    /// `level`; the window's mismatch.
    fn present(&mut self, value: f64, level: f64) -> Option<f64> {
        let (n, block) = (self.params.window, self.params.block);
        if self.recent.len() == n * block {
            self.recent.pop_front();
        }
        self.recent.push_back(value);
        if self.recent.len() < n * block {
            return None;
        }
        let (mut x, mut f, mut scratch) = ([0.0; MAX_WINDOW], [0.0; MAX_WINDOW], [0.0; MAX_WINDOW]);
        let width = self.hi - self.lo;
        for (i, x) in x[..n].iter_mut().enumerate() {
            let mean = self.recent.range(i * block..(i + 1) * block).sum::<f64>() / block as f64;
            *x = ((mean - self.lo) / width).clamp(0.0, 1.0);
        }
        haar::features(&x[..n], &mut f[..n], &mut scratch[..n]);
        let p = &self.params;
        Some(self.categories.present(&f[..n], p.rho, 1.0 - level, p.max_categories).mismatch)
    }

    /// Widens the input range to hold `value`, moving the categories and the novelty level with it.
    fn widen(&mut self, value: f64) {
        let (mut lo, mut hi) = (self.lo.min(value), self.hi.max(value));
        let room = self.params.headroom * (hi - lo);
        if value < self.lo {
            lo -= room;
        } else {
            hi += room;
        }
        let (old_width, width) = (self.hi - self.lo, hi - lo);
        let (scale, shift) = (old_width / width, (self.lo - lo) / width);
        let kinds: Vec<Kind> = haar::kinds(self.params.window).collect();
        self.categories.rescale(&kinds, scale, shift);
        let floor = 1.0 - self.params.rho;
        self.base = (self.base * scale).max(floor);
        self.level = (self.level * scale).max(self.base);
        (self.lo, self.hi) = (lo, hi);
    }
}

impl StreamDetector for Art {
    fn name(&self) -> &'static str {
        "art"
    }

    /// Scores the window that `value` closes (0 during the probation); a non-finite value scores 0 and
    /// teaches nothing.
    fn update(&mut self, _t_ms: i64, value: f64) -> Verdict {
        let quiet = Verdict { score: 0.0, expected: None, band: None };
        if !value.is_finite() {
            return quiet;
        }
        if !self.live {
            self.buffer.push(value as f32);
            if self.buffer.len() >= self.params.warmup {
                self.go_live();
            }
            return quiet;
        }
        if value < self.lo || value > self.hi {
            self.widen(value);
        }
        let Some(mismatch) = self.present(value, self.level) else { return quiet };
        let score = mismatch / self.level;
        self.level = if score > 1.0 { mismatch } else { (self.level * self.params.decay).max(self.base) };
        Verdict { score, expected: None, band: None }
    }
}

#[cfg(test)]
mod tests;
