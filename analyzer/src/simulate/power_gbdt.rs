//! CES' demand forecaster: a gradient-boosted regression on Helios' features, trained on the history
//! before the test window and run once over the window.
//!
//! Features, per 10-minute step (as in Helios' `CES_Philly.py`): the calendar (year, month, day, hour,
//! minute, day of week, day of year, ISO week); the mean, median and sample standard deviation over 30
//! minutes and over 1 hour, one day earlier; the value 3 hours earlier and its soft average (½ of it plus
//! ¼ of each neighbour). Missing features (the first day of a frame) stay missing: the trees send them down
//! a learnt branch.
//!
//! As Helios does, the test window's features are computed from the test window alone, and the 3-hour lag
//! is the observed value: a forecast more than 3 hours ahead of a decision rests on demand observed after
//! it. That is CES as published, kept so the re-implementation reproduces its figures; it favours CES.
//!
//! The model is `forust-ml`'s gradient booster with LightGBM's defaults where Helios kept them (squared
//! loss, learning rate 0.1, 31 leaves grown best-first, at least 20 rows a leaf, no L2, 256 bins) and
//! Helios' own settings (bagging 0.85 of the rows each round, up to 10,000 rounds, early stopping after
//! 200 rounds without a better validation RMSE). Helios validates on November and trains on October; here
//! the later half of the history validates and the earlier half trains, which is the same split on
//! Philly. One thread and a fixed seed make the result the same on every machine.

use super::demand::{DAY_STEPS, STEP_MS};
use chrono::{DateTime, Datelike, Timelike};
use forust_ml::Matrix;
use forust_ml::metric::Metric;
use forust_ml::sampler::SampleMethod;

/// Features per row.
pub const FEATURES: usize = 16;

/// The feature rows of a frame of `values` starting at `start_ms`, column-major (`FEATURES` columns of
/// `values.len()` rows), as the booster reads them.
pub fn features(start_ms: i64, values: &[f64]) -> Vec<f64> {
    let n = values.len();
    let mut cols = vec![f64::NAN; FEATURES * n];
    let day = DAY_STEPS;
    let lag3h = DAY_STEPS / 8;
    for j in 0..n {
        let mut row = [f64::NAN; FEATURES];
        if let Some(t) = DateTime::from_timestamp_millis(start_ms + j as i64 * STEP_MS) {
            row[0] = f64::from(t.year());
            row[1] = f64::from(t.month());
            row[2] = f64::from(t.day());
            row[3] = f64::from(t.hour());
            row[4] = f64::from(t.minute());
            row[5] = f64::from(t.weekday().num_days_from_monday());
            row[6] = f64::from(t.ordinal());
            row[7] = f64::from(t.iso_week().week());
        }
        for (k, p) in [DAY_STEPS / 48, DAY_STEPS / 24].into_iter().enumerate() {
            // Rows j-day-p+1 ..= j-day, all present.
            if j + 1 >= day + p {
                let w = &values[j + 1 - day - p..=j - day];
                row[8 + 3 * k] = mean(w);
                row[9 + 3 * k] = median(w);
                row[10 + 3 * k] = std(w);
            }
        }
        if j >= lag3h {
            row[14] = values[j - lag3h];
        }
        if j > lag3h && j + 1 - lag3h < n {
            row[15] = 0.5 * values[j - lag3h] + 0.25 * (values[j - lag3h - 1] + values[j + 1 - lag3h]);
        }
        for (c, v) in row.into_iter().enumerate() {
            cols[c * n + j] = v;
        }
    }
    cols
}

/// Why the forecaster could not be trained.
#[derive(Debug, thiserror::Error)]
#[error("gradient-boosted forecaster: {0}")]
pub struct GbdtError(String);

/// Trains on the frame `history` (starting at `history_start_ms`) and forecasts every step of the frame
/// `test` (starting at `test_start_ms`), floored to whole nodes as CES does.
pub fn fit_predict(
    history_start_ms: i64,
    history: &[f64],
    test_start_ms: i64,
    test: &[f64],
) -> Result<Vec<f64>, GbdtError> {
    if history.len() < 2 * DAY_STEPS {
        return Err(GbdtError(format!("needs two days of history, has {} steps", history.len())));
    }
    let split = history.len() / 2;
    let x = features(history_start_ms, history);
    let rows = |r: std::ops::Range<usize>| -> Vec<f64> {
        (0..FEATURES).flat_map(|c| x[c * history.len() + r.start..c * history.len() + r.end].iter().copied()).collect()
    };
    let (x_train, x_valid) = (rows(0..split), rows(split..history.len()));
    let weights = vec![1.0; history.len()];
    let mut model = crate::forecast::gbdt::booster()
        .set_iterations(10_000)
        .set_sample_method(SampleMethod::Random)
        .set_subsample(0.85)
        .set_evaluation_metric(Some(Metric::RootMeanSquaredError))
        .set_early_stopping_rounds(Some(200));
    let valid = (Matrix::new(&x_valid, history.len() - split, FEATURES), &history[split..], &weights[split..]);
    model
        .fit(&Matrix::new(&x_train, split, FEATURES), &history[..split], &weights[..split], Some(vec![valid]))
        .map_err(|e| GbdtError(e.to_string()))?;
    let xt = features(test_start_ms, test);
    let p = model.predict(&Matrix::new(&xt, test.len(), FEATURES), false);
    Ok(p.into_iter().map(f64::floor).collect())
}

fn mean(w: &[f64]) -> f64 {
    w.iter().sum::<f64>() / w.len() as f64
}

fn median(w: &[f64]) -> f64 {
    let mut s = w.to_vec();
    s.sort_unstable_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 { s[m] } else { 0.5 * (s[m - 1] + s[m]) }
}

/// Sample standard deviation (n - 1), as pandas' `rolling().std()`.
fn std(w: &[f64]) -> f64 {
    let m = mean(w);
    (w.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (w.len() as f64 - 1.0)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_follow_helios_definitions() {
        // 2017-12-01 00:00 UTC, a Friday; values 0, 1, 2, …
        let start = 1_512_086_400_000;
        let x: Vec<f64> = (0..200).map(f64::from).collect();
        let f = features(start, &x);
        let at = |col: usize, row: usize| f[col * x.len() + row];
        assert_eq!(
            [at(0, 0), at(1, 0), at(2, 0), at(3, 0), at(5, 0), at(6, 0), at(7, 0)],
            [2017.0, 12.0, 1.0, 0.0, 4.0, 335.0, 48.0]
        );
        assert_eq!(at(4, 1), 10.0);
        // Row 150: the day-lagged 30-minute window is rows 4..=6, the 1-hour one rows 1..=6.
        assert_eq!([at(8, 150), at(9, 150), at(10, 150)], [5.0, 5.0, 1.0]);
        assert_eq!([at(11, 150), at(12, 150)], [3.5, 3.5]);
        assert!((at(13, 150) - 1.870_828_693).abs() < 1e-6);
        assert!(at(8, 145).is_nan() && !at(8, 146).is_nan() && at(11, 148).is_nan());
        assert_eq!((at(14, 18), at(15, 19)), (0.0, 1.0));
        assert!(at(14, 17).is_nan() && at(15, 18).is_nan());
    }

    #[test]
    fn learns_a_daily_pattern_deterministically() {
        let day = |j: usize| if (j % DAY_STEPS) < DAY_STEPS / 2 { 100.0 } else { 50.0 };
        let history: Vec<f64> = (0..7 * DAY_STEPS).map(day).collect();
        let test: Vec<f64> = (7 * DAY_STEPS..9 * DAY_STEPS).map(day).collect();
        let t0 = 7 * DAY_STEPS as i64 * STEP_MS;
        let p = fit_predict(0, &history, t0, &test).unwrap();
        let err = p.iter().zip(&test).map(|(p, t)| (p - t).abs()).sum::<f64>() / p.len() as f64;
        assert!(err < 5.0, "mean error {err}");
        assert_eq!(p, fit_predict(0, &history, t0, &test).unwrap());
        assert!(fit_predict(0, &history[..100], t0, &test).is_err());
    }
}
