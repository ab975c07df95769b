use super::*;

/// Deterministic noise in [-1, 1] (a hash of the index, no generator state).
pub(crate) fn noise(i: usize) -> f64 {
    let mut x = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

fn scores(d: &mut Art, values: impl IntoIterator<Item = f64>) -> Vec<f64> {
    values.into_iter().enumerate().map(|(i, v)| d.update(i as i64, v).score).collect()
}

#[test]
fn a_step_after_a_noisy_flat_stretch_stands_out() {
    let mut d = Art::default();
    let flat = scores(&mut d, (0..2000).map(|i| 10.0 + 0.1 * noise(i)));
    assert!(flat[..300].iter().all(|&s| s == 0.0), "probation scores nothing");
    // White noise has no shape to learn: now and then a window lies a little beyond every one before it
    // (just above 1), never far (2 would be a strong finding on its own in the univariate ensemble).
    let worst = flat.iter().cloned().fold(0.0, f64::max);
    assert!(worst < 1.5, "flat part: {worst} at {:?}", flat.iter().position(|&s| s == worst));
    let step = scores(&mut d, (2000..2400).map(|i| 15.0 + 0.1 * noise(i)));
    assert!(step[0] > 2.0, "the step: {:?}", &step[..10]);
    // Once the window has moved past the step, the new level is learnt.
    let later = step[50..].iter().cloned().fold(0.0, f64::max);
    assert!(later < 1.0, "after the step: {later}");
}

#[test]
fn a_perfectly_flat_series_alarms_at_its_first_move() {
    let mut d = Art::default();
    let flat = scores(&mut d, std::iter::repeat_n(3.0, 1000));
    assert!(flat.iter().all(|&s| s == 0.0), "{flat:?}");
    assert!(d.update(1000, 3.5).score > 1.0);
}

#[test]
fn a_periodic_series_does_not_alarm_after_warm_up() {
    let mut d = Art::default();
    let wave = |i: usize| 50.0 + 20.0 * (i as f64 * std::f64::consts::TAU / 48.0).sin() + noise(i);
    let s = scores(&mut d, (0..6000).map(wave));
    let worst = s.iter().cloned().fold(0.0, f64::max);
    assert!(worst < 1.0, "{worst} at {:?}", s.iter().position(|&v| v == worst));
    // A glitch in the cycle does alarm.
    let glitch: Vec<f64> = (6000..6010)
        .map(|i| d.update(i as i64, if i == 6005 { 50.0 - 40.0 } else { wave(i as usize) }).score)
        .collect();
    assert!(glitch[5] > 1.0, "{glitch:?}");
}

#[test]
fn same_input_same_scores_also_after_a_save_and_restore() {
    let series = |i: usize| 5.0 + (i as f64 / 7.0).sin() + 0.3 * noise(i) + if i > 2500 { 3.0 } else { 0.0 };
    let mut a = Art::default();
    let mut b = Art::default();
    let first = scores(&mut a, (0..3000).map(series));
    assert_eq!(first, scores(&mut b, (0..3000).map(series)));
    assert!(first.iter().any(|&s| s > 1.0), "the shift at 2500 alarms");
    let json = serde_json::to_string(&a).unwrap();
    let mut back: Art = serde_json::from_str(&json).unwrap();
    assert_eq!(back, a);
    for i in 3000..4000 {
        assert_eq!(back.update(i, series(i as usize)), a.update(i, series(i as usize)), "point {i}");
    }
}

#[test]
fn the_range_comes_from_the_stream_and_widens_with_it() {
    let mut d = Art::default();
    scores(&mut d, (0..299).map(|i| f64::from(i as u32 % 10)));
    assert_eq!(d.range(), None);
    d.update(299, 9.0);
    assert_eq!(d.range(), Some((0.0, 9.0)));
    d.update(300, 19.0);
    let (lo, hi) = d.range().unwrap();
    assert_eq!(lo, 0.0);
    assert!((hi - 19.95).abs() < 1e-12, "{hi}");
    assert!(d.update(301, f64::NAN).score == 0.0);
}

#[test]
fn parameters_are_checked_and_named() {
    assert_eq!(ArtParams::default().validate(), Ok(()));
    let bad = ArtParams { window: 12, ..Default::default() };
    assert_eq!(bad.validate().unwrap_err(), "window = 12 must be a power of two from 2 to 64");
    let bad = ArtParams { rho: 1.0, ..Default::default() };
    assert_eq!(bad.validate().unwrap_err(), "rho = 1 must be in (0, 1)");
    let bad = ArtParams { warmup: 10, ..Default::default() };
    assert_eq!(bad.validate().unwrap_err(), "warmup = 10 must be at least twice the window's span (8 points)");
}
