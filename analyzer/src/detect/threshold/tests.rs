//! Fixture series with injected anomalies → the windows where the score is above 1, checked against golden
//! files in `testdata/threshold/` (`UPDATE_GOLDEN=1` rewrites them).

use std::path::PathBuf;

use super::*;

/// Deterministic noise in [-0.5, 0.5) (splitmix64).
pub(crate) fn noise(i: usize) -> f64 {
    let mut z = (i as u64).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

/// A daily-like season of 48 points around 100, amplitude 20, noise ±1.
fn seasonal(n: usize) -> Vec<f64> {
    (0..n).map(|i| 100.0 + 20.0 * (i as f64 * std::f64::consts::TAU / 48.0).sin() + 2.0 * noise(i)).collect()
}

/// Runs of points scoring above 1 (gaps of up to 2 points merged), with each run's peak score.
fn windows(params: ThresholdParams, series: &[f64]) -> String {
    let mut d = Threshold::new(params);
    let scores: Vec<f64> = series.iter().enumerate().map(|(i, &v)| d.update(i as i64 * 60_000, v).score).collect();
    let mut out = format!("period {:?}\n", d.period());
    let mut run: Option<(usize, usize, f64)> = None;
    for (i, &s) in scores.iter().enumerate() {
        if s <= 1.0 {
            continue;
        }
        run = match run {
            Some((a, b, m)) if i <= b + 3 => Some((a, i, m.max(s))),
            Some((a, b, m)) => {
                out += &format!("{a}..={b} peak {m:.1}\n");
                Some((i, i, s))
            }
            None => Some((i, i, s)),
        };
    }
    if let Some((a, b, m)) = run {
        out += &format!("{a}..={b} peak {m:.1}\n");
    }
    out
}

fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/threshold").join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(actual, expected, "{} differs (UPDATE_GOLDEN=1 to rewrite)", path.display());
}

#[test]
fn seasonal_series_with_a_spike_and_a_dip() {
    let mut s = seasonal(3000);
    s[1500] += 30.0;
    (2200..2210).for_each(|i| s[i] -= 25.0);
    let w = windows(ThresholdParams::default(), &s);
    assert!(w.starts_with("period Some(48)\n"), "{w}");
    assert!(w.contains("1500..=1500") && w.contains("2200..="), "{w}");
    golden("seasonal_spike_dip", &w);
}

#[test]
fn level_shift_alarms_then_the_band_follows() {
    let mut s: Vec<f64> = (0..3000).map(|i| 50.0 + noise(i)).collect();
    (1800..3000).for_each(|i| s[i] += 10.0);
    let w = windows(ThresholdParams::default(), &s);
    assert!(w.starts_with("period Some(1)\n"), "{w}");
    assert!(w.contains("1800..="), "{w}");
    golden("level_shift", &w);
}

#[test]
fn direction_below_ignores_spikes_up() {
    let mut s = seasonal(3000);
    s[1200] += 40.0;
    s[1800] -= 40.0;
    let params = ThresholdParams { direction: Direction::Below, ..ThresholdParams::default() };
    let w = windows(params, &s);
    assert!(!w.contains("1200..=") && w.contains("1800..=1800"), "{w}");
    golden("below_only", &w);
}

#[test]
fn minimum_deviation_guard_keeps_a_flat_series_quiet() {
    // Flat for a long time, then a step far below the relative guard (1 % of the magnitude).
    let mut s = vec![1000.0; 3000];
    (2000..3000).for_each(|i| s[i] = 1000.5);
    assert_eq!(windows(ThresholdParams::default(), &s), "period Some(1)\n");
}

#[test]
fn band_and_expected_follow_the_season() {
    let s = seasonal(2000);
    let mut d = Threshold::new(ThresholdParams::default());
    let mut last = None;
    for (i, &v) in s.iter().enumerate() {
        last = Some((v, d.update(i as i64, v)));
    }
    let (v, verdict) = last.unwrap();
    let (lo, hi) = verdict.band.unwrap();
    assert!(lo < v && v < hi && (verdict.expected.unwrap() - v).abs() < 3.0, "{v} {verdict:?}");
}

#[test]
fn state_round_trips_through_json_from_the_start() {
    let d = Threshold::new(ThresholdParams::default());
    let back: Threshold = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
    assert_eq!(back, d);
}

#[test]
fn gaps_keep_the_season_in_phase() {
    let mut s = seasonal(3000);
    (1000..1010).for_each(|i| s[i] = f64::NAN);
    s[2000] += 30.0;
    let w = windows(ThresholdParams::default(), &s);
    assert_eq!(w, "period Some(48)\n2000..=2000 peak 7.3\n");
}
