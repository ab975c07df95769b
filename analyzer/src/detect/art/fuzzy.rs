//! Dual-vigilance fuzzy ART over complement-coded inputs (Carpenter, Grossberg & Rosen 1991; Brito da
//! Silva, Elnabarawy & Wunsch 2019), with fast learning.
//!
//! With complement coding an input `a ∈ [0,1]^d` is `I = (a, 1 − a)` and a category's weights
//! `w = (u, 1 − v)` describe a box `[u, v]`; the fuzzy AND `I ∧ w` then has size
//! `d − Σ (v − u) − Σ dist(a, [u, v])`. That is how categories are stored here (as boxes, in single
//! precision), and how choice and match are computed:
//!
//! - choice `T = |I ∧ w| / (α + |w|)` orders the categories;
//! - match `M = |I ∧ w| / |I|` = 1 − (size of the box grown to hold `a`) / d;
//! - the first category by choice whose match reaches the upper vigilance `ρ_ub` resonates and learns
//!   (fast learning: its box grows to hold `a`);
//! - otherwise a new category is made, a box around `a` alone. Dual vigilance: it joins the cluster of
//!   the best-matching category if that one reaches the lower vigilance `ρ_lb`, or starts a new cluster:
//!   nothing resonates, the input is novel.
//!
//! The number of categories is bounded; when it is reached the one that resonated least recently is
//! replaced. Everything is deterministic: ties go to the lower index.

use serde::{Deserialize, Serialize};

use super::haar::Kind;

/// The choice parameter α: small, so that among boxes that hold the input the smallest is chosen.
const ALPHA: f64 = 1e-3;

/// The categories of one series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Categories {
    /// Input dimension `d`.
    dim: usize,
    /// Box bounds, `dim` lower then `dim` upper per category.
    bounds: Vec<f32>,
    /// Each category's cluster.
    cluster: Vec<u32>,
    /// The step at which each category last resonated or was made.
    used: Vec<u64>,
    /// Clusters made so far (the next cluster's number).
    clusters: u32,
    /// Steps presented so far.
    step: u64,
}

/// What presenting one input found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Presented {
    /// `1 −` the best match of any category before learning: 0 inside a box of zero size, 1 with no
    /// categories at all.
    pub mismatch: f64,
    /// Whether it started a new cluster (no category reached the lower vigilance).
    pub novel: bool,
}

impl Categories {
    pub fn new(dim: usize) -> Self {
        Categories { dim, ..Default::default() }
    }

    pub fn len(&self) -> usize {
        self.cluster.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cluster.is_empty()
    }

    /// Clusters made so far.
    pub fn clusters(&self) -> u32 {
        self.clusters
    }

    /// Presents `a` (length `dim`, values in [0, 1]) and learns it: resonance at `rho_ub`, a new category
    /// otherwise, in a new cluster when nothing reaches `rho_lb`. At most `max` categories are kept.
    pub fn present(&mut self, a: &[f64], rho_ub: f64, rho_lb: f64, max: usize) -> Presented {
        debug_assert_eq!(a.len(), self.dim);
        self.step += 1;
        let d = self.dim as f64;
        let mut best_match = (f64::NEG_INFINITY, 0usize);
        let mut resonant: Option<(f64, usize)> = None;
        for j in 0..self.len() {
            let (lo, hi) = self.bounds[2 * j * self.dim..2 * (j + 1) * self.dim].split_at(self.dim);
            let (mut width, mut grown) = (0.0, 0.0);
            for ((&u, &v), &x) in lo.iter().zip(hi).zip(a) {
                let (u, v) = (f64::from(u), f64::from(v));
                width += v - u;
                grown += v.max(x) - u.min(x);
            }
            let m = 1.0 - grown / d;
            if m > best_match.0 {
                best_match = (m, j);
            }
            if m >= rho_ub {
                // |I ∧ w| = d − grown, |w| = d − width.
                let t = (d - grown) / (ALPHA + d - width);
                if resonant.is_none_or(|(best, _)| t > best) {
                    resonant = Some((t, j));
                }
            }
        }
        let mismatch = if self.is_empty() { 1.0 } else { 1.0 - best_match.0 };
        if let Some((_, j)) = resonant {
            let (lo, hi) = self.bounds[2 * j * self.dim..2 * (j + 1) * self.dim].split_at_mut(self.dim);
            for ((u, v), &x) in lo.iter_mut().zip(hi.iter_mut()).zip(a) {
                *u = u.min(x as f32);
                *v = v.max(x as f32);
            }
            self.used[j] = self.step;
            return Presented { mismatch, novel: false };
        }
        let novel = self.is_empty() || best_match.0 < rho_lb;
        let cluster = if novel {
            self.clusters += 1;
            self.clusters - 1
        } else {
            self.cluster[best_match.1]
        };
        let slot = if self.len() < max.max(1) {
            self.bounds.resize(self.bounds.len() + 2 * self.dim, 0.0);
            self.cluster.push(cluster);
            self.used.push(0);
            self.len() - 1
        } else {
            // The least recently resonating category gives way (the first of equals).
            let mut oldest = 0;
            for (j, &u) in self.used.iter().enumerate() {
                if u < self.used[oldest] {
                    oldest = j;
                }
            }
            self.cluster[oldest] = cluster;
            oldest
        };
        let (lo, hi) = self.bounds[2 * slot * self.dim..2 * (slot + 1) * self.dim].split_at_mut(self.dim);
        for ((u, v), &x) in lo.iter_mut().zip(hi.iter_mut()).zip(a) {
            (*u, *v) = (x as f32, x as f32);
        }
        self.used[slot] = self.step;
        Presented { mismatch, novel }
    }

    /// Moves every box as its inputs move when each raw input `x` becomes `scale · x + shift` (a wider
    /// input range), feature by feature according to `kinds`.
    pub fn rescale(&mut self, kinds: &[Kind], scale: f64, shift: f64) {
        debug_assert_eq!(kinds.len(), self.dim);
        for cat in self.bounds.chunks_exact_mut(2 * self.dim) {
            let (lo, hi) = cat.split_at_mut(self.dim);
            for ((u, v), k) in lo.iter_mut().zip(hi.iter_mut()).zip(kinds) {
                *u = k.rescale(f64::from(*u), scale, shift) as f32;
                *v = k.rescale(f64::from(*v), scale, shift) as f32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resonance_grows_a_box_and_a_far_input_starts_a_cluster() {
        let mut c = Categories::new(2);
        let first = c.present(&[0.2, 0.2], 0.9, 0.7, 10);
        assert_eq!(first, Presented { mismatch: 1.0, novel: true });
        // Close enough for the upper vigilance: the box grows to [0.2, 0.25] × [0.2, 0.2].
        let near = c.present(&[0.25, 0.2], 0.9, 0.7, 10);
        assert!(!near.novel && (near.mismatch - 0.025).abs() < 1e-6, "{near:?}");
        assert_eq!((c.len(), c.clusters()), (1, 1));
        // Between the vigilances: a new category in the same cluster.
        let mid = c.present(&[0.6, 0.2], 0.9, 0.7, 10);
        assert!(!mid.novel && (mid.mismatch - 0.2).abs() < 1e-6, "{mid:?}");
        assert_eq!((c.len(), c.clusters(), c.cluster[1]), (2, 1, 0));
        // Beyond the lower vigilance of every category: a new cluster.
        let far = c.present(&[1.0, 1.0], 0.9, 0.7, 10);
        assert!(far.novel, "{far:?}");
        assert_eq!((c.len(), c.clusters(), c.cluster[2]), (3, 2, 1));
    }

    #[test]
    fn a_full_memory_replaces_the_least_recently_used_category() {
        let mut c = Categories::new(1);
        for x in [0.0, 0.5, 1.0] {
            c.present(&[x], 0.99, 0.9, 2);
        }
        assert_eq!(c.len(), 2);
        // 0.0 was the least recently used, so 1.0 took its place.
        assert_eq!(c.bounds, vec![1.0, 1.0, 0.5, 0.5]);
    }

    #[test]
    fn rescaling_moves_boxes_with_their_inputs() {
        let mut c = Categories::new(2);
        c.present(&[0.4, 0.75], 0.9, 0.8, 4);
        c.rescale(&[Kind::Mean, Kind::Detail], 0.5, 0.1);
        assert_eq!(c.bounds, vec![0.3, 0.625, 0.3, 0.625]);
    }
}
