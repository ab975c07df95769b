use super::*;
use crate::eval::forecast::{Series, evaluate};
use crate::forecast::Forecaster;
use crate::forecast::baseline::Naive;
use crate::forecast::calibrate::Calibrated;

const STEP_MS: i64 = 300_000;
const DAY: usize = 288;

/// Three weeks of 5-minute demand: a daily swing of ±40 around 100, busier on weekdays, plus noise from a
/// fixed linear congruential generator.
fn daily_seasonal() -> Series {
    let mut state = 0x2545_f491_u64;
    let values = (0..21 * DAY)
        .map(|i| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let noise = ((state >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 6.0;
            let phase = 2.0 * std::f64::consts::PI * (i % DAY) as f64 / DAY as f64;
            let weekday = if (i / DAY) % 7 < 5 { 1.0 } else { 0.6 };
            100.0 + 40.0 * weekday * phase.sin() + noise
        })
        .collect();
    // 2020-05-04 00:00 UTC, a Monday.
    Series { start_ms: 1_588_550_400_000, step_ms: STEP_MS, values }
}

#[test]
fn anchors_double_up_to_the_horizon() {
    assert_eq!(anchors(1), [1]);
    assert_eq!(anchors(2), [1, 2]);
    assert_eq!(anchors(15), [1, 2, 4, 8, 15]);
    assert_eq!(anchors(360), [1, 2, 4, 8, 16, 32, 64, 128, 256, 360]);
}

#[test]
fn beats_naive_an_hour_ahead_on_a_daily_pattern() {
    let series = daily_seasonal();
    let mut gbdt = Calibrated::new("gbdt", Gbdt::new(12, STEP_MS), 12);
    let mut naive = Calibrated::new("naive", Naive::default(), 12);
    let report = evaluate(&series, 12, &mut [&mut naive, &mut gbdt], "gbdt").unwrap();
    let (_, scores) = report.models.iter().find(|(n, _)| n == "gbdt").unwrap();
    assert!(scores.rel_mae < 0.6, "gbdt MAE / naive's at 1 h: {}", scores.rel_mae);
    // The calibrated band holds about 80 % of what follows.
    assert!((0.65..0.95).contains(&scores.coverage_80), "coverage {}", scores.coverage_80);
}

#[test]
fn a_fit_is_a_pure_function_of_the_history() {
    let series = daily_seasonal();
    let history = Regular { values: &series.values[..10 * DAY], ..series.regular() };
    let fit = || {
        let mut m = Calibrated::new("gbdt", Gbdt::new(6, STEP_MS), 6);
        m.fit(history).unwrap();
        m
    };
    let (mut a, mut b) = (fit(), fit());
    assert_eq!(a.save(), b.save());
    for v in &series.values[10 * DAY..10 * DAY + 50] {
        a.observe(*v);
        b.observe(*v);
        assert_eq!(a.forecast(6).unwrap(), b.forecast(6).unwrap());
    }
}

#[test]
fn interpolates_between_anchors_and_holds_past_the_last() {
    let series = daily_seasonal();
    let mut m = Gbdt::new(15, STEP_MS);
    m.fit(Regular { values: &series.values[..8 * DAY], ..series.regular() }).unwrap();
    let mut out = vec![0.0; 20];
    m.point(&mut out);
    // Anchors 8 and 15: step 10 lies 2/7 of the way.
    let expected = out[7] + (out[14] - out[7]) * 2.0 / 7.0;
    assert!((out[9] - expected).abs() < 1e-9, "{} vs {expected}", out[9]);
    assert!(out[15..].iter().all(|v| *v == out[14]));
    // Too short a history is an error naming the need, not a panic.
    let mut short = Gbdt::new(15, STEP_MS);
    let err = short.fit(Regular { values: &series.values[..100], ..series.regular() }).unwrap_err();
    assert_eq!(err, ForecastError::TooShort { need: WARMUP + 15 + MIN_ROWS, have: 100 });
}
