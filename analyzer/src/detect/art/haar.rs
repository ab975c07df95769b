//! The window's features: its Haar wavelet coefficients, each mapped into [0, 1] for fuzzy ART.
//!
//! For a window of `2^k` values already scaled into [0, 1], the coefficients are the window's mean and, at
//! every level from the coarsest (the two halves) to the finest (neighbouring pairs), half the difference
//! of the means of each block's two halves. The mean lies in [0, 1] and each detail in [-1/2, 1/2], so
//! the details are shifted by 1/2. Every feature is affine in the values, which is what lets the stored
//! categories follow a change of the input range exactly ([`Kind::rescale`]).

/// Which of the two affine forms a feature has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The window's mean: `f = mean(x)`.
    Mean,
    /// A detail coefficient: `f = 1/2 + (mean(left) − mean(right)) / 2`.
    Detail,
}

impl Kind {
    /// The feature a value `f` becomes when every input `x` becomes `scale · x + shift`.
    pub fn rescale(self, f: f64, scale: f64, shift: f64) -> f64 {
        match self {
            Kind::Mean => scale * f + shift,
            Kind::Detail => scale * (f - 0.5) + 0.5,
        }
    }
}

/// The kind of each of the `window` features [`features`] writes.
pub fn kinds(window: usize) -> impl Iterator<Item = Kind> {
    (0..window).map(|i| if i == 0 { Kind::Mean } else { Kind::Detail })
}

/// Writes the Haar features of `x` (length a power of two, values in [0, 1]) into `out` (same length):
/// the mean first, then the details from the coarsest level to the finest. `scratch` (same length) is
/// overwritten.
pub fn features(x: &[f64], out: &mut [f64], scratch: &mut [f64]) {
    debug_assert!(x.len().is_power_of_two() && out.len() == x.len() && scratch.len() == x.len());
    scratch.copy_from_slice(x);
    // Pairwise averaging from the finest level up; each level's details land in their slot of `out`
    // (level with `half` blocks writes `out[half..2 * half]`).
    let mut len = x.len();
    while len > 1 {
        let half = len / 2;
        for i in 0..half {
            let (a, b) = (scratch[2 * i], scratch[2 * i + 1]);
            out[half + i] = 0.5 + (a - b) / 2.0;
            scratch[i] = (a + b) / 2.0;
        }
        len = half;
    }
    out[0] = scratch[0];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coefficients_of_a_step_and_a_ramp() {
        let mut out = [0.0; 4];
        let mut scratch = [0.0; 4];
        features(&[0.0, 0.0, 1.0, 1.0], &mut out, &mut scratch);
        // Mean 1/2; the halves differ by 1 (left lower): 1/2 − 1/2; both pairs flat.
        assert_eq!(out, [0.5, 0.0, 0.5, 0.5]);
        features(&[0.2, 0.2, 0.2, 0.2], &mut out, &mut scratch);
        assert_eq!(out, [0.2, 0.5, 0.5, 0.5]);
        features(&[1.0, 0.0, 1.0, 0.0], &mut out, &mut scratch);
        assert_eq!(out, [0.5, 0.5, 1.0, 1.0]);
    }

    #[test]
    fn rescaling_features_equals_featuring_rescaled_values() {
        let x = [0.1, 0.7, 0.4, 0.9, 0.0, 0.3, 0.5, 0.2];
        let (scale, shift) = (0.6, 0.25);
        let y: Vec<f64> = x.iter().map(|v| scale * v + shift).collect();
        let (mut fx, mut fy, mut s) = ([0.0; 8], [0.0; 8], [0.0; 8]);
        features(&x, &mut fx, &mut s);
        features(&y, &mut fy, &mut s);
        for ((k, a), b) in kinds(8).zip(fx).zip(fy) {
            assert!((k.rescale(a, scale, shift) - b).abs() < 1e-12, "{k:?}: {a} → {b}");
        }
    }
}
