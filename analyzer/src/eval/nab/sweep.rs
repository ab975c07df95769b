//! NAB's scoring, as its `Sweeper` computes it (numenta/NAB `nab/sweeper.py`, v1.1): each point after the
//! probationary period gets a weight from the scaled sigmoid of its position relative to the anomaly windows;
//! a window scores the weight of its first detection (or `-fnWeight` when it has none) and every detection
//! outside a window adds its false-positive weight. Sweeping the anomaly scores from the highest down gives the
//! corpus score at every threshold at once, which is how NAB picks a detector's threshold per profile.

use super::corpus::Profile;

/// NAB's probationary fraction: the first 15 % of a file (at most 750 points) are not scored.
pub const PROBATION_FRACTION: f64 = 0.15;

/// `2·sigmoid(-5x) − 1`: about 0.987 at the left edge of a window (x = −1), 0 at its right edge, falling to
/// −1 for false positives far behind it (x ≥ 3).
pub fn scaled_sigmoid(x: f64) -> f64 {
    if x >= 3.0 { -1.0 } else { 2.0 / (1.0 + (5.0 * x).exp()) - 1.0 }
}

/// The number of leading points of a file of `n` points that NAB does not score.
pub fn probation_len(n: usize) -> f64 {
    (PROBATION_FRACTION * n as f64).floor().min(PROBATION_FRACTION * 5000.0)
}

/// One scorable point: its anomaly score, and what a detection there is worth before the profile's weights.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub score: f64,
    pub kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// Inside window `id` (numbered over the corpus); `weight` is the scaled sigmoid of the position
    /// divided by its value at the left edge, so the earliest detection is worth exactly `tpWeight`.
    Window { id: usize, weight: f64 },
    /// Outside every window; `weight` (≤ 0) is multiplied by `fpWeight`.
    Outside { weight: f64 },
}

/// Why a file's windows cannot be scored.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WindowError {
    #[error("window {index} {edge} timestamp {t_ms} ms is not a timestamp of the file")]
    EdgeNotInFile { index: usize, edge: &'static str, t_ms: i64 },
    #[error("window {index} overlaps or precedes the previous window")]
    Unordered { index: usize },
}

/// The scorable points of one file (probationary points dropped), with windows numbered from `first_window`.
/// Returns the points and how many of the file's windows are scorable (have a point after probation).
///
/// Windows are matched on exact timestamps, as NAB's sweeper does.
pub fn sweep_file(
    timestamps: &[i64],
    scores: &[f64],
    windows: &[(i64, i64)],
    first_window: usize,
) -> Result<(Vec<Point>, usize), WindowError> {
    debug_assert_eq!(timestamps.len(), scores.len());
    // The first point at `t`, as NAB's `timestamps.index(t)` finds it: a few files repeat timestamps or step
    // back an hour, so the file order is kept and searched.
    let index_of = |t: i64| timestamps.iter().position(|&x| x == t);
    let mut bounds = Vec::with_capacity(windows.len());
    for (index, &(start, end)) in windows.iter().enumerate() {
        let s = index_of(start).ok_or(WindowError::EdgeNotInFile { index, edge: "start", t_ms: start })?;
        let e = index_of(end).ok_or(WindowError::EdgeNotInFile { index, edge: "end", t_ms: end })?;
        if e < s || bounds.last().is_some_and(|&(_, prev_end)| s <= prev_end) {
            return Err(WindowError::Unordered { index });
        }
        bounds.push((s, e));
    }
    let max_tp = scaled_sigmoid(-1.0);
    let probation = probation_len(timestamps.len());
    let mut points = Vec::with_capacity(timestamps.len());
    let mut scorable = vec![false; bounds.len()];
    let mut next = 0;
    let mut current: Option<usize> = None;
    // (right index, width) of the window the last points were past.
    let mut previous: Option<(usize, f64)> = None;
    for (i, &score) in scores.iter().enumerate() {
        if current.is_none() && next < bounds.len() && timestamps[i] == windows[next].0 {
            current = Some(next);
            next += 1;
        }
        let inside = current;
        let kind = match inside {
            Some(w) => {
                let (left, right) = bounds[w];
                let width = (right - left + 1) as f64;
                // NAB's `+ 1`: the right edge itself sits at -1/width, never exactly 0.
                let position = -((right as f64 - i as f64 + 1.0) / width);
                Kind::Window { id: first_window + w, weight: scaled_sigmoid(position) / max_tp }
            }
            None => {
                let position = match previous {
                    None => 3.0,
                    Some((right, width)) => (i as f64 - right as f64).abs() / (width - 1.0),
                };
                Kind::Outside { weight: scaled_sigmoid(position) }
            }
        };
        if (i as f64) >= probation {
            if let Some(w) = inside {
                scorable[w] = true;
            }
            points.push(Point { score, kind });
        }
        if let Some(w) = inside
            && timestamps[i] == windows[w].1
        {
            previous = Some((i, (bounds[w].1 - bounds[w].0 + 1) as f64));
            current = None;
        }
    }
    Ok((points, scorable.iter().filter(|&&s| s).count()))
}

/// Counts of points by outcome at a threshold (probationary points excluded), as NAB reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub tp: usize,
    pub tn: usize,
    pub fp: usize,
    pub fn_: usize,
}

/// The raw NAB score of a set of points (from one file or many) when every point with a score at or above
/// `threshold` is a detection. `windows` is the number of windows numbered in the points.
pub fn score_at(points: &[Point], windows: usize, threshold: f64, profile: &Profile) -> (f64, Counts) {
    let mut best: Vec<Option<f64>> = vec![None; windows];
    let mut fp = 0.0;
    let mut counts = Counts::default();
    for p in points {
        let detected = p.score >= threshold;
        match p.kind {
            Kind::Window { id, weight } => {
                if detected {
                    counts.tp += 1;
                    let b = &mut best[id];
                    *b = Some(b.map_or(weight, |b: f64| b.max(weight)));
                } else {
                    counts.fn_ += 1;
                }
            }
            Kind::Outside { weight } => {
                if detected {
                    counts.fp += 1;
                    fp += weight * profile.fp_weight;
                } else {
                    counts.tn += 1;
                }
            }
        }
    }
    let present = window_presence(points, windows);
    let windows_score: f64 = best
        .iter()
        .zip(&present)
        .filter(|(_, present)| **present)
        .map(|(b, _)| b.map_or(-profile.fn_weight, |w| (w * profile.tp_weight).max(-profile.fn_weight)))
        .sum();
    (windows_score + fp, counts)
}

/// The threshold NAB's optimiser picks: sweeping the scores from the highest down, the threshold with the
/// highest total score (the first one reached on ties). `f64::INFINITY` means "never detect".
pub fn optimize(points: &[Point], windows: usize, profile: &Profile) -> (f64, f64) {
    let present = window_presence(points, windows);
    let mut order: Vec<&Point> = points.iter().collect();
    order.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut window_part: Vec<f64> = vec![-profile.fn_weight; windows];
    let mut total: f64 = present.iter().filter(|&&p| p).count() as f64 * -profile.fn_weight;
    let (mut best_threshold, mut best_score) = (f64::INFINITY, total);
    let mut i = 0;
    while i < order.len() {
        let threshold = order[i].score;
        while i < order.len() && order[i].score == threshold {
            match order[i].kind {
                Kind::Window { id, weight } => {
                    let new = window_part[id].max(weight * profile.tp_weight);
                    total += new - window_part[id];
                    window_part[id] = new;
                }
                Kind::Outside { weight } => total += weight * profile.fp_weight,
            }
            i += 1;
        }
        if total > best_score {
            (best_threshold, best_score) = (threshold, total);
        }
    }
    (best_threshold, best_score)
}

fn window_presence(points: &[Point], windows: usize) -> Vec<bool> {
    let mut present = vec![false; windows];
    for p in points {
        if let Kind::Window { id, .. } = p.kind {
            present[id] = true;
        }
    }
    present
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standard() -> Profile {
        Profile { name: "standard".into(), tp_weight: 1.0, fp_weight: 0.11, fn_weight: 1.0 }
    }

    #[test]
    fn scaled_sigmoid_matches_nab() {
        assert!((scaled_sigmoid(-1.0) - 0.986_614_298_151_430_3).abs() < 1e-12);
        assert!((scaled_sigmoid(-0.5) - 0.848_283_639_957_512_7).abs() < 1e-12);
        assert_eq!(scaled_sigmoid(0.0), 0.0);
        assert_eq!(scaled_sigmoid(3.0), -1.0);
    }

    #[test]
    fn probation_is_fifteen_percent_capped_at_750() {
        assert_eq!(probation_len(4032), 604.0);
        assert_eq!(probation_len(15858), 750.0);
    }

    /// 100 points, probation 15; one window over points 40..=49.
    fn file() -> (Vec<i64>, Vec<(i64, i64)>) {
        ((0..100).collect(), vec![(40, 49)])
    }

    #[test]
    fn first_detection_in_window_counts_and_earliest_is_worth_tp_weight() {
        let (ts, w) = file();
        let mut scores = vec![0.0; 100];
        scores[40] = 1.0;
        scores[45] = 1.0;
        let (points, n) = sweep_file(&ts, &scores, &w, 0).unwrap();
        assert_eq!((points.len(), n), (85, 1));
        let (s, c) = score_at(&points, 1, 1.0, &standard());
        assert!((s - 1.0).abs() < 1e-12, "{s}");
        assert_eq!(c, Counts { tp: 2, tn: 75, fp: 0, fn_: 8 });
    }

    #[test]
    fn false_positives_before_windows_and_in_probation() {
        let (ts, w) = file();
        let mut scores = vec![0.0; 100];
        scores[5] = 1.0; // probationary: ignored
        scores[20] = 1.0; // before any window: −fpWeight
        let (points, _) = sweep_file(&ts, &scores, &w, 0).unwrap();
        let (s, _) = score_at(&points, 1, 1.0, &standard());
        assert!((s - (-1.0 - 0.11)).abs() < 1e-12, "{s}");
    }

    #[test]
    fn false_positive_just_after_a_window_costs_little() {
        let (ts, w) = file();
        let mut scores = vec![0.0; 100];
        scores[50] = 1.0;
        let (points, _) = sweep_file(&ts, &scores, &w, 0).unwrap();
        let (s, _) = score_at(&points, 1, 1.0, &standard());
        let expected = -1.0 + 0.11 * scaled_sigmoid(1.0 / 9.0);
        assert!((s - expected).abs() < 1e-12, "{s}");
    }

    #[test]
    fn optimiser_finds_the_threshold_separating_hits_from_noise() {
        let (ts, w) = file();
        let mut scores = vec![0.1; 100];
        scores[42] = 0.9;
        scores[70] = 0.5;
        let (points, n) = sweep_file(&ts, &scores, &w, 0).unwrap();
        let (threshold, best) = optimize(&points, n, &standard());
        assert_eq!(threshold, 0.9);
        assert_eq!(best, score_at(&points, n, 0.9, &standard()).0);
        assert_eq!(optimize(&points[..0], 0, &standard()), (f64::INFINITY, 0.0));
    }

    #[test]
    fn windows_must_sit_on_timestamps() {
        let (ts, _) = file();
        let err = sweep_file(&ts, &[0.0; 100], &[(40, 140)], 0).unwrap_err();
        assert_eq!(err, WindowError::EdgeNotInFile { index: 0, edge: "end", t_ms: 140 });
    }
}
