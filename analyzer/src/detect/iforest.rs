//! Isolation forest (Liu, Ting and Zhou, 2008): anomalies are the points that random axis-parallel
//! splits isolate in few steps.
//!
//! Our own implementation: linfa has no isolation forest, and the crates that do (`extended-isolation-forest`,
//! `isolation_forest`) are dormant and keep boxed trees, which score slowly and do not serialise. Here every
//! tree lives in one flat node array (children of a node are adjacent), trees are built in parallel on
//! `std::thread::scope` with one seeded generator per tree (so the forest does not depend on the thread
//! count), and the whole forest serialises with serde (format: docs/format/analyzer-models.md).
//!
//! The standard algorithm: each tree sees a subsample of ψ points (256) drawn without replacement, grows to
//! the height limit ⌈log₂ ψ⌉, and a point's score is `2^(−E(h(x)) / c(ψ))`, where `h` is the path length
//! plus `c(n)` for the `n` training points left in the leaf. Scores near 1 are anomalous, below 0.5 normal.

use rand::RngExt;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

/// Training parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IForestParams {
    /// Number of trees.
    pub n_trees: usize,
    /// Subsample size ψ per tree (capped at the number of training rows).
    pub sample_size: usize,
    /// Seed: the same data, parameters and seed give the same forest.
    pub seed: u64,
    /// Threads for fitting and batch scoring; 0 means all available cores.
    pub threads: usize,
}

impl Default for IForestParams {
    fn default() -> Self {
        IForestParams { n_trees: 100, sample_size: 256, seed: 0, threads: 0 }
    }
}

/// Why a forest could not be fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    #[error("no training rows")]
    Empty,
    #[error("rows have no features")]
    NoFeatures,
    #[error("{len} values do not make whole rows of {n_features} features")]
    Ragged { len: usize, n_features: usize },
    #[error("row {row}, feature {feature} is not finite")]
    NotFinite { row: usize, feature: usize },
}

/// A fitted isolation forest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IsolationForest {
    n_features: usize,
    /// ψ actually used (the requested size, or fewer when training had fewer rows).
    sample_size: usize,
    /// `c(ψ)`, the average path length that normalises the score.
    c_psi: f64,
    /// Index of each tree's root in `nodes`.
    roots: Vec<u32>,
    nodes: Vec<Node>,
    threads: usize,
}

/// One node. Internal: `feature` < n_features, `value` is the split (left holds `x < value`), and the
/// children sit at `left` and `left + 1`. Leaf: `feature == LEAF`, `value` is `c(n)` for the `n` training
/// points that reached it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Node {
    #[serde(rename = "f")]
    feature: u32,
    #[serde(rename = "l")]
    left: u32,
    #[serde(rename = "v")]
    value: f64,
}

const LEAF: u32 = u32::MAX;

/// Average path length of an unsuccessful search in a binary search tree of `n` points: the expected depth
/// a subtree of `n` points would have added.
pub fn c(n: usize) -> f64 {
    match n {
        0 | 1 => 0.0,
        2 => 1.0,
        _ => {
            let n = n as f64;
            2.0 * ((n - 1.0).ln() + EULER_GAMMA) - 2.0 * (n - 1.0) / n
        }
    }
}

const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

// === impl IsolationForest ===

impl IsolationForest {
    /// Fits a forest on `data`, `n_features` values per row, row after row.
    pub fn fit(params: &IForestParams, data: &[f64], n_features: usize) -> Result<Self, FitError> {
        if n_features == 0 {
            return Err(FitError::NoFeatures);
        }
        if !data.len().is_multiple_of(n_features) {
            return Err(FitError::Ragged { len: data.len(), n_features });
        }
        let n_rows = data.len() / n_features;
        if n_rows == 0 {
            return Err(FitError::Empty);
        }
        if let Some(i) = data.iter().position(|v| !v.is_finite()) {
            return Err(FitError::NotFinite { row: i / n_features, feature: i % n_features });
        }
        let psi = params.sample_size.clamp(1, n_rows);
        let height_limit = (psi as f64).log2().ceil() as usize;
        let threads = threads(params.threads).min(params.n_trees.max(1));
        let n_trees = params.n_trees.max(1);

        // Trees are dealt round-robin to threads; each tree's generator depends only on the seed and the
        // tree's index, so the forest is the same whatever the thread count.
        let mut built: Vec<Vec<Node>> = vec![Vec::new(); n_trees];
        std::thread::scope(|s| {
            let mut slots: Vec<Vec<(usize, &mut Vec<Node>)>> = (0..threads).map(|_| Vec::new()).collect();
            for (i, slot) in built.iter_mut().enumerate() {
                slots[i % threads].push((i, slot));
            }
            for work in slots {
                s.spawn(move || {
                    let mut builder = Builder::new(data, n_features, height_limit);
                    for (i, slot) in work {
                        let mut rng = Pcg64Mcg::seed_from_u64(tree_seed(params.seed, i));
                        *slot = builder.tree(&mut rng, psi);
                    }
                });
            }
        });

        let mut roots = Vec::with_capacity(n_trees);
        let mut nodes = Vec::with_capacity(built.iter().map(Vec::len).sum());
        for tree in built {
            let base = nodes.len() as u32;
            roots.push(base);
            nodes.extend(tree.into_iter().map(|mut n| {
                if n.feature != LEAF {
                    n.left += base;
                }
                n
            }));
        }
        Ok(IsolationForest { n_features, sample_size: psi, c_psi: c(psi), roots, nodes, threads: params.threads })
    }

    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// The same forest, scoring batches on `threads` threads (0: all cores).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    pub fn n_trees(&self) -> usize {
        self.roots.len()
    }

    /// The anomaly score of one row, in (0, 1]: above 0.5 is more isolated than average.
    ///
    /// `row` must hold `n_features` values; extra values are ignored, missing ones read as NaN, and a NaN
    /// feature always goes right, like any value not below the split.
    pub fn score(&self, row: &[f64]) -> f64 {
        let mean = self.mean_path_length(row);
        if self.c_psi == 0.0 {
            return 0.5;
        }
        (-mean / self.c_psi).exp2()
    }

    /// Scores many rows (row-major, `n_features` each), in parallel.
    pub fn score_batch(&self, data: &[f64]) -> Vec<f64> {
        let n_rows = data.len() / self.n_features;
        let mut out = vec![0.0; n_rows];
        let threads = threads(self.threads).min(n_rows.div_ceil(1024).max(1));
        let per = n_rows.div_ceil(threads).max(1);
        std::thread::scope(|s| {
            for (chunk, rows) in out.chunks_mut(per).zip(data.chunks(per * self.n_features)) {
                s.spawn(move || {
                    for (o, row) in chunk.iter_mut().zip(rows.chunks_exact(self.n_features)) {
                        *o = self.score(row);
                    }
                });
            }
        });
        out
    }

    /// The features that isolated `row`, heaviest first, at most `k`, with weights summing to 1 over all
    /// features. Each split on the row's path in each tree credits its feature with `1 / h`, `h` being
    /// that tree's path length for the row: splits that isolate the row quickly weigh most (the depth-based
    /// local attribution of DIFFI, Carletti et al. 2020, without its inlier normalisation).
    pub fn top_features(&self, row: &[f64], k: usize) -> Vec<(usize, f64)> {
        let mut weights = vec![0.0; self.n_features];
        let mut path = Vec::with_capacity(16);
        for &root in &self.roots {
            path.clear();
            let mut i = root as usize;
            let mut depth = 0.0;
            loop {
                let node = self.nodes[i];
                if node.feature == LEAF {
                    depth += node.value;
                    break;
                }
                path.push(node.feature as usize);
                depth += 1.0;
                i = node.left as usize + usize::from(goes_right(row[node.feature as usize], node.value));
            }
            let w = 1.0 / depth.max(1.0);
            for &f in &path {
                weights[f] += w;
            }
        }
        top_k(&weights, k)
    }

    fn mean_path_length(&self, row: &[f64]) -> f64 {
        let mut total = 0.0;
        for &root in &self.roots {
            let mut i = root as usize;
            let mut depth = 0u32;
            loop {
                let node = &self.nodes[i];
                if node.feature == LEAF {
                    total += f64::from(depth) + node.value;
                    break;
                }
                depth += 1;
                i = node.left as usize + usize::from(goes_right(row[node.feature as usize], node.value));
            }
        }
        total / self.roots.len() as f64
    }
}

/// Left holds `x < split`; everything else, NaN included, goes right.
#[inline]
fn goes_right(x: f64, split: f64) -> bool {
    x.partial_cmp(&split) != Some(std::cmp::Ordering::Less)
}

/// The `k` largest weights with their indices, heaviest first, the weights divided by their sum.
pub(crate) fn top_k(weights: &[f64], k: usize) -> Vec<(usize, f64)> {
    let total: f64 = weights.iter().sum();
    let mut ranked: Vec<(usize, f64)> = weights
        .iter()
        .enumerate()
        .filter(|(_, w)| **w > 0.0)
        .map(|(i, w)| (i, if total > 0.0 { w / total } else { 0.0 }))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(k);
    ranked
}

pub(crate) fn threads(requested: usize) -> usize {
    if requested > 0 {
        return requested;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// SplitMix64 of the seed and tree index: well-spread, independent seeds for neighbouring trees.
fn tree_seed(seed: u64, tree: usize) -> u64 {
    let mut z = seed ^ (tree as u64).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

// === impl Builder ===

/// Grows one tree at a time, reusing its buffers.
struct Builder<'a> {
    data: &'a [f64],
    n_features: usize,
    height_limit: usize,
    /// Row indices of the subsample, partitioned in place as the tree grows.
    rows: Vec<usize>,
    /// Features with a non-zero range in the current node, and their ranges.
    candidates: Vec<(usize, f64, f64)>,
}

impl<'a> Builder<'a> {
    fn new(data: &'a [f64], n_features: usize, height_limit: usize) -> Self {
        Builder { data, n_features, height_limit, rows: Vec::new(), candidates: Vec::new() }
    }

    fn tree(&mut self, rng: &mut Pcg64Mcg, psi: usize) -> Vec<Node> {
        let n_rows = self.data.len() / self.n_features;
        self.rows = rand::seq::index::sample(rng, n_rows, psi).into_vec();
        let mut nodes = vec![Node { feature: LEAF, left: 0, value: 0.0 }];
        // Depth-first with an explicit stack: (node index, row range, depth).
        let mut stack = vec![(0usize, 0usize, psi, 0usize)];
        while let Some((at, lo, hi, depth)) = stack.pop() {
            let n = hi - lo;
            let split = if depth < self.height_limit && n > 1 { self.split(rng, lo, hi) } else { None };
            let Some((feature, value, mid)) = split else {
                nodes[at] = Node { feature: LEAF, left: 0, value: c(n) };
                continue;
            };
            let left = nodes.len();
            nodes.push(Node { feature: LEAF, left: 0, value: 0.0 });
            nodes.push(Node { feature: LEAF, left: 0, value: 0.0 });
            nodes[at] = Node { feature: feature as u32, left: left as u32, value };
            stack.push((left + 1, mid, hi, depth + 1));
            stack.push((left, lo, mid, depth + 1));
        }
        nodes
    }

    /// Picks a random feature among those not constant on `rows[lo..hi]` and a uniform split inside its
    /// range, and partitions the rows; `None` when every feature is constant there.
    fn split(&mut self, rng: &mut Pcg64Mcg, lo: usize, hi: usize) -> Option<(usize, f64, usize)> {
        self.candidates.clear();
        for f in 0..self.n_features {
            let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
            for &r in &self.rows[lo..hi] {
                let v = self.data[r * self.n_features + f];
                min = min.min(v);
                max = max.max(v);
            }
            if max > min {
                self.candidates.push((f, min, max));
            }
        }
        if self.candidates.is_empty() {
            return None;
        }
        let (feature, min, max) = self.candidates[rng.random_range(0..self.candidates.len())];
        let mut value = min + rng.random::<f64>() * (max - min);
        if value <= min {
            // The split must leave at least one point on each side: left holds `x < value`.
            value = min.next_up().min(max);
        }
        let rows = &mut self.rows[lo..hi];
        let mut mid = 0;
        for i in 0..rows.len() {
            if self.data[rows[i] * self.n_features + feature] < value {
                rows.swap(i, mid);
                mid += 1;
            }
        }
        Some((feature, value, lo + mid))
    }
}

#[cfg(test)]
mod tests;
