//! The gradient-boosted forecaster's inputs at one origin: the calendar, the recent past relative to the
//! last value, and the same stretch one day and one week earlier. One function computes them for training
//! rows and for live forecasts, so the two can never disagree.
//!
//! Everything but the calendar and the level is a difference from the last value, so a model trained
//! at one level of demand still applies after the series has moved to another.

/// Steps back of the differences `y[t] − y[t − k]`.
pub const LAGS: [usize; 7] = [1, 2, 5, 15, 30, 60, 240];
/// Windows (steps, ending at the origin) whose mean and maximum, less the last value, are features.
pub const WINDOWS: [usize; 3] = [15, 60, 240];
/// Points before the first origin with every lag and window complete.
pub const WARMUP: usize = 240;
/// Columns that do not depend on the step ahead: hour of day, day of week, level, lags, windows.
pub const COMMON: usize = 3 + LAGS.len() + 2 * WINDOWS.len();
/// Columns that do: yesterday's and last week's change over the same stretch, and their level against now.
pub const SEASONAL: usize = 4;
/// Columns of a row.
pub const COLUMNS: usize = COMMON + SEASONAL;

const DAY_MS: i64 = 86_400_000;

/// Writes the [`COMMON`] columns for origin `t` of `values` (the last point seen), at `t_ms`. A lag or
/// window reaching before the first value is missing (NaN), which the trees route down a learnt branch.
pub fn common(values: &[f64], t: usize, t_ms: i64, out: &mut [f64]) {
    let y = values[t];
    out[0] = t_ms.rem_euclid(DAY_MS) as f64 / 3_600_000.0;
    // 1970-01-01 was a Thursday; Monday is 0.
    out[1] = (t_ms.div_euclid(DAY_MS) + 3).rem_euclid(7) as f64;
    out[2] = y;
    for (k, lag) in LAGS.iter().enumerate() {
        out[3 + k] = if t >= *lag { y - values[t - lag] } else { f64::NAN };
    }
    let base = 3 + LAGS.len();
    for (k, w) in WINDOWS.iter().enumerate() {
        let (mean, max) = if t + 1 >= *w {
            let window = &values[t + 1 - w..=t];
            let mean = window.iter().sum::<f64>() / *w as f64;
            (mean - y, window.iter().copied().fold(f64::NEG_INFINITY, f64::max) - y)
        } else {
            (f64::NAN, f64::NAN)
        };
        out[base + 2 * k] = mean;
        out[base + 2 * k + 1] = max;
    }
}

/// Writes the [`SEASONAL`] columns for origin `t` and the target `ahead` steps later, with `day` steps a
/// day: the change from `t − day` to `t + ahead − day`, the level at `t + ahead − day` against `y[t]`, and
/// the same a week back. Missing where that history is not there (or lies after the origin).
pub fn seasonal(values: &[f64], t: usize, ahead: usize, day: usize, out: &mut [f64]) {
    let y = values[t];
    for (k, period) in [day, 7 * day].into_iter().enumerate() {
        let (change, level) = if t >= period && ahead <= period {
            let then = values[t + ahead - period];
            (then - values[t - period], then - y)
        } else {
            (f64::NAN, f64::NAN)
        };
        out[2 * k] = change;
        out[2 * k + 1] = level;
    }
}

/// One whole row: [`common`] then [`seasonal`].
pub fn row(values: &[f64], t: usize, t_ms: i64, ahead: usize, day: usize, out: &mut [f64; COLUMNS]) {
    common(values, t, t_ms, &mut out[..COMMON]);
    seasonal(values, t, ahead, day, &mut out[COMMON..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_follow_their_definitions() {
        // 2020-05-04 00:00 UTC was a Monday; one point a minute, values 0, 1, 4, 9, …
        let start = 1_588_550_400_000;
        let values: Vec<f64> = (0..3000).map(|i| (i * i) as f64).collect();
        let mut r = [0.0; COLUMNS];
        let t = 2890;
        row(&values, t, start + t as i64 * 60_000, 10, 1440, &mut r);
        let y = values[t];
        assert!((r[0] - 10.0 / 60.0).abs() < 1e-12, "ten past midnight: {}", r[0]);
        assert_eq!(r[1], 2.0, "two days after a Monday");
        assert_eq!(r[2], y);
        assert_eq!(r[3], y - values[t - 1]);
        assert_eq!(r[9], y - values[t - 240]);
        let w15 = &values[t - 14..=t];
        assert_eq!(r[10], w15.iter().sum::<f64>() / 15.0 - y);
        assert_eq!(r[11], 0.0, "an increasing series peaks at its last value");
        assert_eq!(r[COMMON], values[t + 10 - 1440] - values[t - 1440]);
        assert_eq!(r[COMMON + 1], values[t + 10 - 1440] - y);
        assert!(r[COMMON + 2].is_nan() && r[COMMON + 3].is_nan(), "no week of history");
        // Too early for the long lag and window; a target past one period ahead has no yesterday.
        row(&values, 100, start, 10, 1440, &mut r);
        assert!(r[9].is_nan() && r[14].is_nan() && r[15].is_nan() && !r[8].is_nan());
        row(&values, 2890, start, 1441, 1440, &mut r);
        assert!(r[COMMON].is_nan());
    }
}
