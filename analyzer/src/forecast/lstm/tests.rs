use super::*;
use crate::forecast::{ForecastError, Forecaster, Regular};

const STEP_MS: i64 = 15 * 60_000;
/// 2020-05-04 00:00 UTC.
const START_MS: i64 = 1_588_550_400_000;

/// A daily season (96 steps of 15 minutes) on a rising trend, with a little seeded noise.
fn seasonal(n: usize) -> Vec<f64> {
    let mut rng = features::Rng::new(7);
    (0..n)
        .map(|i| {
            let day = std::f64::consts::TAU * i as f64 / 96.0;
            100.0 + 0.02 * i as f64 + 20.0 * day.sin() + (rng.unit() - 0.5)
        })
        .collect()
}

fn small(max_epochs: usize) -> LstmConfig {
    LstmConfig {
        horizon: 4,
        window: 16,
        hidden: 16,
        max_epochs,
        windows_per_epoch: 512,
        batch_size: 64,
        learning_rate: 1e-2,
        patience: 4,
        ..LstmConfig::default()
    }
}

fn fitted(values: &[f64], config: LstmConfig) -> LstmForecaster {
    let mut model = LstmForecaster::new(config).with_progress(Box::new(|_| {}));
    model.fit(Regular { start_ms: START_MS, step_ms: STEP_MS, values }).unwrap();
    model
}

#[test]
fn learns_a_daily_season_on_a_trend() {
    let values = seasonal(1400);
    let fit_len = 1000;
    let mut model = fitted(&values[..fit_len], small(25));
    let (mut lstm, mut naive, mut covered, mut n) = (0.0, 0.0, 0, 0);
    for origin in fit_len..values.len() - 4 {
        let f = model.forecast(4).unwrap();
        for h in 0..4 {
            let actual = values[origin + h];
            lstm += (f.mean[h] - actual).abs();
            naive += (values[origin - 1] - actual).abs();
            covered += usize::from(f.lower[h] <= actual && actual <= f.upper[h]);
            n += 1;
        }
        model.observe(values[origin]);
    }
    let (lstm, naive, coverage) = (lstm / n as f64, naive / n as f64, covered as f64 / n as f64);
    // Naive misses by the season's slope (about 2.4 on average over 1–4 steps); the network reads the
    // slope from the window and should land close to the noise level.
    assert!(lstm < 0.4 * naive, "lstm MAE {lstm:.3}, naive MAE {naive:.3}");
    assert!((0.5..=1.0).contains(&coverage), "80 % band covers {coverage:.2}");
}

#[test]
fn same_seed_same_forecast() {
    let values = seasonal(600);
    let a = fitted(&values, small(2)).forecast(4).unwrap();
    let b = fitted(&values, small(2)).forecast(4).unwrap();
    assert_eq!(a, b);
    let c = fitted(&values, LstmConfig { seed: 1, ..small(2) }).forecast(4).unwrap();
    assert_ne!(a, c, "a different seed should give different weights");
}

#[test]
fn save_and_load_forecast_the_same() {
    let values = seasonal(600);
    let mut model = fitted(&values[..590], small(2));
    let bytes = model.to_bytes().unwrap();
    let mut loaded = LstmForecaster::from_bytes(&bytes).unwrap();
    assert_eq!(loaded.config(), model.config());
    assert_eq!(loaded.report(), model.report());
    assert_eq!(loaded.forecast(4).unwrap(), model.forecast(4).unwrap());
    for &v in &values[590..] {
        model.observe(v);
        loaded.observe(v);
    }
    assert_eq!(loaded.forecast(3).unwrap(), model.forecast(3).unwrap());
}

#[test]
fn damaged_files_are_refused() {
    let values = seasonal(600);
    let bytes = fitted(&values, small(1)).to_bytes().unwrap();
    let err = |b: &[u8]| LstmForecaster::from_bytes(b).err().unwrap();
    assert_eq!(err(b"not a model file"), LoadError::BadMagic);
    assert_eq!(err(&bytes[..10]), LoadError::Truncated(10));
    let mut version = bytes.clone();
    version[8] = 9;
    assert_eq!(err(&version), LoadError::Version(9));
    let mut flipped = bytes.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(matches!(err(&flipped), LoadError::Checksum { .. }));
    assert!(matches!(err(&bytes[..bytes.len() - 1]), LoadError::Checksum { .. }));
}

#[test]
fn too_short_history_and_unfitted_use_are_errors() {
    let config = small(1);
    let need = config.min_history();
    let values = seasonal(need - 1);
    let mut model = LstmForecaster::new(config).with_progress(Box::new(|_| {}));
    assert!(matches!(model.forecast(4), Err(ForecastError::Model(_))));
    assert_eq!(
        model.fit(Regular { start_ms: START_MS, step_ms: STEP_MS, values: &values }),
        Err(ForecastError::TooShort { need, have: need - 1 })
    );
    let values = seasonal(need);
    model.fit(Regular { start_ms: START_MS, step_ms: STEP_MS, values: &values }).unwrap();
    assert_eq!(model.forecast(4).unwrap().mean.len(), 4);
    assert!(matches!(model.forecast(5), Err(ForecastError::Model(_))));
}

#[test]
fn progress_reports_every_batch_and_epoch() {
    let values = seasonal(600);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mut model =
        LstmForecaster::new(small(2)).with_progress(Box::new(move |p| sink.lock().unwrap().push(p.clone())));
    model.fit(Regular { start_ms: START_MS, step_ms: STEP_MS, values: &values }).unwrap();
    let seen = seen.lock().unwrap();
    // 512 windows in batches of 64: 8 batch reports, then the epoch's.
    assert_eq!(seen.len(), 2 * 9);
    assert_eq!(seen[7], Progress::Batch { epoch: 1, max_epochs: 2, batch: 8, batches: 8 });
    assert!(matches!(seen[17], Progress::Epoch { epoch: 2, stopping: true, .. }));
}
