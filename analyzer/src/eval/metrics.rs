//! Ranking and detection metrics over per-point scores and 0/1 labels, with scikit-learn's definitions
//! (tied scores form one threshold).

/// Area under the precision-recall curve as average precision: `Σ (Rₙ − Rₙ₋₁) Pₙ` over the distinct
/// score thresholds, highest first (`sklearn.metrics.average_precision_score`). 0 without positives.
pub fn average_precision(scores: &[f64], labels: &[bool]) -> f64 {
    let positives = labels.iter().filter(|l| **l).count();
    if positives == 0 {
        return 0.0;
    }
    let mut ap = 0.0;
    let mut prev_recall = 0.0;
    for (tp, fp) in operating_points(scores, labels) {
        let recall = tp as f64 / positives as f64;
        let precision = tp as f64 / (tp + fp) as f64;
        ap += (recall - prev_recall) * precision;
        prev_recall = recall;
    }
    ap
}

/// Area under the ROC curve, trapezoidal over the distinct thresholds (`roc_auc_score`); 0.5 when only
/// one class is present.
pub fn roc_auc(scores: &[f64], labels: &[bool]) -> f64 {
    let positives = labels.iter().filter(|l| **l).count();
    let negatives = labels.len() - positives;
    if positives == 0 || negatives == 0 {
        return 0.5;
    }
    let (mut area, mut prev_tpr, mut prev_fpr) = (0.0, 0.0, 0.0);
    for (tp, fp) in operating_points(scores, labels) {
        let tpr = tp as f64 / positives as f64;
        let fpr = fp as f64 / negatives as f64;
        area += (fpr - prev_fpr) * (tpr + prev_tpr) / 2.0;
        (prev_tpr, prev_fpr) = (tpr, fpr);
    }
    area
}

/// The best F1 over all thresholds (flagging every point scored at or above it), no point adjustment.
pub fn best_f1(scores: &[f64], labels: &[bool]) -> f64 {
    let positives = labels.iter().filter(|l| **l).count();
    operating_points(scores, labels).map(|(tp, fp)| f1_from(tp, fp, positives - tp)).fold(0.0, f64::max)
}

/// F1 of the flagged points.
pub fn f1(flags: &[bool], labels: &[bool]) -> f64 {
    let (mut tp, mut fp, mut fn_) = (0, 0, 0);
    for (&f, &l) in flags.iter().zip(labels) {
        match (f, l) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, true) => fn_ += 1,
            (false, false) => {}
        }
    }
    f1_from(tp, fp, fn_)
}

/// F1 after point adjustment: every point of a labelled segment counts as flagged when any point of it
/// is. It rewards long segments hit once and inflates every detector; reported for comparison with
/// papers, never a goal.
pub fn point_adjusted_f1(flags: &[bool], labels: &[bool]) -> f64 {
    let mut adjusted = flags.to_vec();
    let mut i = 0;
    while i < labels.len() {
        if !labels[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < labels.len() && labels[i] {
            i += 1;
        }
        if flags[start..i].iter().any(|f| *f) {
            adjusted[start..i].iter_mut().for_each(|f| *f = true);
        }
    }
    f1(&adjusted, labels)
}

fn f1_from(tp: usize, fp: usize, fn_: usize) -> f64 {
    if tp == 0 { 0.0 } else { 2.0 * tp as f64 / (2 * tp + fp + fn_) as f64 }
}

/// Cumulative (true positives, false positives) at each distinct score, highest score first.
fn operating_points<'a>(scores: &'a [f64], labels: &'a [bool]) -> impl Iterator<Item = (usize, usize)> + 'a {
    let mut order: Vec<usize> = (0..scores.len().min(labels.len())).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let (mut tp, mut fp) = (0, 0);
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= order.len() {
            return None;
        }
        let s = scores[order[i]];
        while i < order.len() && scores[order[i]] == s {
            if labels[order[i]] {
                tp += 1
            } else {
                fp += 1
            }
            i += 1;
        }
        Some((tp, fp))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(s: &str) -> Vec<bool> {
        s.chars().map(|c| c == '1').collect()
    }

    #[test]
    fn average_precision_by_hand() {
        // sklearn's docstring example: average_precision_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) = 0.8333…
        let ap = average_precision(&[0.1, 0.4, 0.35, 0.8], &labels("0011"));
        assert!((ap - 5.0 / 6.0).abs() < 1e-12, "{ap}");
        // Ties form one threshold: both at 0.5 → recall 1 at precision 1/2.
        assert_eq!(average_precision(&[0.5, 0.5], &labels("10")), 0.5);
        assert_eq!(average_precision(&[0.5, 0.1], &labels("00")), 0.0);
    }

    #[test]
    fn roc_auc_by_hand() {
        // roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) = 0.75
        assert_eq!(roc_auc(&[0.1, 0.4, 0.35, 0.8], &labels("0011")), 0.75);
        // A tie between a positive and a negative counts half.
        assert_eq!(roc_auc(&[0.5, 0.5, 0.1], &labels("101")), 0.25);
        assert_eq!(roc_auc(&[1.0, 2.0], &labels("11")), 0.5);
    }

    #[test]
    fn best_f1_by_hand() {
        // Thresholds 0.8 → P 1 R ½ F1 ⅔; 0.4 → P ½ R ½; 0.35 → P ⅔ R 1 → F1 0.8.
        let f = best_f1(&[0.1, 0.4, 0.35, 0.8], &labels("0011"));
        assert!((f - 0.8).abs() < 1e-12, "{f}");
    }

    #[test]
    fn f1_and_point_adjustment_by_hand() {
        let truth = labels("0111000110");
        let flags = labels("0010010000");
        // tp 1, fp 1, fn 4 → 2 / (2 + 1 + 4)
        assert!((f1(&flags, &truth) - 2.0 / 7.0).abs() < 1e-12);
        // Adjusted: the first segment is all caught (tp 3), the second missed (fn 2), fp 1 → 6 / 9
        assert!((point_adjusted_f1(&flags, &truth) - 6.0 / 9.0).abs() < 1e-12);
        assert_eq!(f1(&labels("000"), &labels("000")), 0.0);
    }
}
