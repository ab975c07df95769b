//! PCA reconstruction error: the principal subspace of standardised training rows holds how the metrics
//! normally move together; a point far from that subspace breaks the usual relations between them.
//! The eigen-decomposition is linfa's (`linfa-linalg`, pure Rust, on ndarray).

use linfa_linalg::eigh::Eigh;
use ndarray::Array2;
use serde::{Deserialize, Serialize};

/// A fitted principal subspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pca {
    n_features: usize,
    /// Training mean of each feature.
    mean: Vec<f64>,
    /// The kept principal axes, `k` rows of `n_features` unit vectors, largest variance first.
    components: Vec<f64>,
}

/// Why a subspace could not be fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PcaError {
    #[error("needs at least 2 rows of at least 1 feature")]
    TooSmall,
    #[error("eigen-decomposition failed: {0}")]
    Linalg(String),
}

impl Pca {
    /// Fits on `rows` (row-major, `n` features each), keeping the fewest axes that explain at least
    /// `variance` (0..=1) of the total variance.
    pub fn fit(rows: &[f64], n: usize, variance: f64) -> Result<Pca, PcaError> {
        let count = rows.len().checked_div(n).unwrap_or(0);
        if count < 2 {
            return Err(PcaError::TooSmall);
        }
        let mut mean = vec![0.0; n];
        for row in rows.chunks_exact(n) {
            mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
        }
        mean.iter_mut().for_each(|m| *m /= count as f64);
        let mut cov = Array2::<f64>::zeros((n, n));
        let mut centred = vec![0.0; n];
        for row in rows.chunks_exact(n) {
            centred.iter_mut().zip(row).zip(&mean).for_each(|((c, v), m)| *c = v - m);
            for i in 0..n {
                let ci = centred[i];
                for j in i..n {
                    cov[[i, j]] += ci * centred[j];
                }
            }
        }
        for i in 0..n {
            for j in i..n {
                let v = cov[[i, j]] / (count - 1) as f64;
                cov[[i, j]] = v;
                cov[[j, i]] = v;
            }
        }
        let (values, vectors) = cov.eigh().map_err(|e| PcaError::Linalg(e.to_string()))?;
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
        let total: f64 = values.iter().map(|v| v.max(0.0)).sum();
        let mut components = Vec::new();
        let mut explained = 0.0;
        for &i in &order {
            if total > 0.0 && explained >= variance * total {
                break;
            }
            explained += values[i].max(0.0);
            components.extend(vectors.column(i).iter());
        }
        Ok(Pca { n_features: n, mean, components })
    }

    /// Axes kept.
    pub fn k(&self) -> usize {
        self.components.len() / self.n_features.max(1)
    }

    /// Writes each feature's reconstruction residual for `row` into `residuals` and returns the squared
    /// error (their sum of squares).
    pub fn residuals(&self, row: &[f64], residuals: &mut Vec<f64>) -> f64 {
        residuals.clear();
        residuals.extend(row.iter().zip(&self.mean).map(|(v, m)| v - m));
        let centred = residuals.clone();
        for axis in self.components.chunks_exact(self.n_features) {
            let proj: f64 = axis.iter().zip(&centred).map(|(a, c)| a * c).sum();
            residuals.iter_mut().zip(axis).for_each(|(r, a)| *r -= proj * a);
        }
        residuals.iter().map(|r| r * r).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_on_the_training_plane_reconstruct_exactly() {
        // Training rows lie on the plane z = x + y (with x, y independent).
        let mut rows = Vec::new();
        for i in 0..50 {
            let (x, y) = ((i % 7) as f64, (i % 5) as f64 * 0.5);
            rows.extend([x, y, x + y]);
        }
        let pca = Pca::fit(&rows, 3, 0.999).unwrap();
        assert_eq!(pca.k(), 2);
        let mut r = Vec::new();
        assert!(pca.residuals(&[10.0, -3.0, 7.0], &mut r) < 1e-18);
        // Off the plane by 3 along z: the residual is the distance to the plane, sqrt(3)² = 3.
        let err = pca.residuals(&[1.0, 1.0, 5.0], &mut r);
        assert!((err - 3.0).abs() < 1e-9, "{err}");
        assert!(r[2].abs() > r[0].abs());
    }

    #[test]
    fn too_small() {
        assert_eq!(Pca::fit(&[1.0, 2.0], 2, 0.9), Err(PcaError::TooSmall));
    }
}
