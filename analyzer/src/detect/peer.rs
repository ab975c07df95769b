//! Peer outliers: one member of a group (a GPU among the job's GPUs, a rank among a distributed
//! training job's ranks, a node in its pool) behaving unlike the others over the same recent window.
//! This is also straggler detection: the rank whose GPU activity, step rate or network throughput lags
//! the job's other ranks scores high in the `below` direction.
//!
//! The spread of the group comes from augurs' double median absolute deviation over every member's
//! window (robust to the outlier itself, and asymmetric: a group may spread more upwards than
//! downwards). Two guards make it usable on real fleets:
//! - a minimum deviation (absolute, and relative to the group's median): GPUs that differ by a
//!   fraction of a percent are never outliers, however tight the group;
//! - when more than half the group's points sit exactly on the median (eight GPUs pinned at 100 %,
//!   one at 40 %), the MAD is zero and augurs refuses; the minimum deviation is the scale then.
//!
//! A member's score is the median over its window of the per-point scores, so one spike does not
//! make an outlier but a rank lagging for the whole window does.

use augurs_outlier::{MADDetector, OutlierDetector};
use serde::{Deserialize, Serialize};

pub use super::Direction;

/// Parameters of the peer detector.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PeerParams {
    /// How many scaled MADs from the group's median a point must be to score 1.
    pub threshold: f64,
    /// Deviations smaller than this (in the metric's unit) never score above 1.
    pub min_deviation: f64,
    /// Deviations smaller than this fraction of |median| never score above 1.
    pub min_relative_deviation: f64,
    /// Groups with fewer members are not judged (no majority to compare with).
    pub min_members: usize,
    pub direction: Direction,
}

impl Default for PeerParams {
    fn default() -> Self {
        PeerParams {
            threshold: 3.5,
            min_deviation: 0.0,
            min_relative_deviation: 0.1,
            min_members: 3,
            direction: Direction::Both,
        }
    }
}

/// One member's verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerScore {
    /// Above 1: unlike its peers in the watched direction.
    pub score: f64,
    /// The group's median over the window.
    pub group_median: f64,
    /// The member's own median over the window.
    pub member_median: f64,
}

/// Scores each member of one group. `windows[i]` is member i's values over the same timestamps
/// (NaN where a member has no point). Returns `None` when the group is too small to judge.
pub fn score_group(params: &PeerParams, windows: &[&[f64]]) -> Option<Vec<PeerScore>> {
    let members = windows.iter().filter(|w| w.iter().any(|v| v.is_finite())).count();
    if members < params.min_members.max(2) {
        return None;
    }
    let len = windows.iter().map(|w| w.len()).min().unwrap_or(0);
    if len == 0 {
        return None;
    }
    let windows: Vec<&[f64]> = windows.iter().map(|w| &w[w.len() - len..]).collect();
    let all: Vec<f64> = windows.iter().flat_map(|w| w.iter().copied()).filter(|v| v.is_finite()).collect();
    let centre = median(all)?;
    let floor = params.min_deviation.max(params.min_relative_deviation * centre.abs());
    let mad = mad_scores(params.threshold, &windows);
    let out = windows
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let points: Vec<f64> = w
                .iter()
                .enumerate()
                .map(|(j, &v)| {
                    if !v.is_finite() {
                        return f64::NAN;
                    }
                    let deviation = v - centre;
                    if !params.direction.keeps(deviation) {
                        return 0.0;
                    }
                    let guard = if floor > 0.0 { deviation.abs() / floor } else { f64::INFINITY };
                    match &mad {
                        // The MAD's verdict, but never more than the minimum-deviation guard allows.
                        Some(scores) => scores[i][j].min(guard),
                        None => guard,
                    }
                })
                .collect();
            PeerScore {
                score: median(points).unwrap_or(0.0),
                group_median: centre,
                member_median: median(w.to_vec()).unwrap_or(f64::NAN),
            }
        })
        .collect();
    Some(out)
}

/// Per-point MAD scores divided by the threshold (so 1 is the threshold), or `None` when the group's
/// MAD is zero on a side or the data is degenerate.
fn mad_scores(threshold: f64, windows: &[&[f64]]) -> Option<Vec<Vec<f64>>> {
    let detector = MADDetector::with_threshold(threshold);
    let pre = detector.preprocess(windows).ok()?;
    let out = detector.detect(&pre).ok()?;
    Some(
        out.series_results
            .into_iter()
            .map(|s| s.scores.into_iter().map(|x| if x.is_finite() { x / threshold } else { f64::NAN }).collect())
            .collect(),
    )
}

/// The median of the finite values, `None` when there are none.
pub(crate) fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scores(params: &PeerParams, windows: &[Vec<f64>]) -> Vec<f64> {
        let refs: Vec<&[f64]> = windows.iter().map(|w| w.as_slice()).collect();
        score_group(params, &refs).unwrap().iter().map(|s| s.score).collect()
    }

    fn noisy(base: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                base + ((x >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 4.0
            })
            .collect()
    }

    #[test]
    fn a_straggler_rank_stands_out_below() {
        // Eight ranks around 90 % GPU activity with noise; rank 5 lags at 55 %.
        let mut windows: Vec<Vec<f64>> = (0..8).map(|i| noisy(90.0, 30, i)).collect();
        windows[5] = noisy(55.0, 30, 99);
        let params = PeerParams { direction: Direction::Below, ..PeerParams::default() };
        let s = scores(&params, &windows);
        for (i, score) in s.iter().enumerate() {
            if i == 5 {
                assert!(*score > 1.0, "straggler scored {score}");
            } else {
                assert!(*score < 1.0, "rank {i} scored {score}");
            }
        }
        // Watching only the upper side, the same lagging rank is not an outlier.
        let above = PeerParams { direction: Direction::Above, ..PeerParams::default() };
        assert!(scores(&above, &windows)[5] == 0.0);
    }

    #[test]
    fn pinned_group_falls_back_to_the_minimum_deviation() {
        // Seven GPUs exactly at 100, one at 40: the MAD is zero, augurs refuses, the guard decides.
        let mut windows: Vec<Vec<f64>> = (0..8).map(|_| vec![100.0; 10]).collect();
        windows[2] = vec![40.0; 10];
        let s = scores(&PeerParams::default(), &windows);
        assert!(s[2] > 1.0, "pinned straggler scored {}", s[2]);
        assert!(s.iter().enumerate().all(|(i, v)| i == 2 || *v == 0.0));
    }

    #[test]
    fn tight_groups_do_not_flag_tiny_differences() {
        // Temperatures within 0.3 °C of each other: the MAD is tiny, the relative guard holds.
        let windows: Vec<Vec<f64>> =
            (0..6).map(|i| (0..20).map(|j| 60.0 + (i as f64) * 0.05 + (j % 3) as f64 * 0.1).collect()).collect();
        assert!(scores(&PeerParams::default(), &windows).iter().all(|s| *s < 1.0));
    }

    #[test]
    fn one_spike_is_not_an_outlier() {
        let mut windows: Vec<Vec<f64>> = (0..6).map(|i| noisy(50.0, 20, i)).collect();
        windows[1][7] = 500.0;
        assert!(scores(&PeerParams::default(), &windows)[1] < 1.0);
    }

    #[test]
    fn small_groups_are_not_judged() {
        let windows = [vec![1.0, 1.0], vec![9.0, 9.0]];
        let refs: Vec<&[f64]> = windows.iter().map(|w| w.as_slice()).collect();
        assert!(score_group(&PeerParams::default(), &refs).is_none());
    }
}
