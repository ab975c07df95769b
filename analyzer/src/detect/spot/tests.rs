use rand::RngExt;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use super::*;

/// `n` excesses drawn from a GPD by inverse transform: Y = σ/γ·(U^(−γ) − 1) (−σ·ln U when γ = 0).
fn gpd_sample(gamma: f64, sigma: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let g = Gpd { gamma, sigma };
    (0..n).map(|_| g.excess_quantile(1.0 - rng.random::<f64>())).collect()
}

/// A stream whose values below `t0` are uniform on [0, t0] (98 % of them) and whose excesses over `t0`
/// follow the GPD `tail` (the other 2 %), so its exact quantiles are known.
fn stream_with_tail(tail: Gpd, t0: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let u = rng.random::<f64>();
            if u < 0.98 { t0 * u / 0.98 } else { t0 + tail.excess_quantile((1.0 - u) / 0.02) }
        })
        .collect()
}

/// The value such a stream exceeds with probability `q` (< 0.02).
fn true_level(tail: Gpd, t0: f64, q: f64) -> f64 {
    t0 + tail.excess_quantile(q / 0.02)
}

#[test]
fn the_fit_recovers_a_known_gpd() {
    for (gamma, sigma) in [(0.3, 2.0), (0.0, 1.0), (-0.2, 1.5)] {
        let fit = Gpd::fit(&gpd_sample(gamma, sigma, 5000, 7)).unwrap();
        // Standard errors with 5,000 draws: about 0.02 for γ and 2–3 % of σ.
        assert!((fit.gamma - gamma).abs() < 0.07, "γ = {gamma}, σ = {sigma}: {fit:?}");
        assert!((fit.sigma / sigma - 1.0).abs() < 0.08, "γ = {gamma}, σ = {sigma}: {fit:?}");
        let truth = Gpd { gamma, sigma };
        let sample = gpd_sample(gamma, sigma, 5000, 7);
        assert!(fit.log_likelihood(&sample) >= truth.log_likelihood(&sample), "the fit maximises the likelihood");
    }
    assert_eq!(Gpd::fit(&[1.0, 2.0, 3.0]), None, "too few excesses");
    assert_eq!(Gpd::fit(&[1.0, 2.0, 3.0, 0.0, 5.0]), None, "an excess of 0");
    assert_eq!(Gpd::fit(&[1.0, 2.0, 3.0, f64::NAN, 5.0, 6.0]), None);
}

#[test]
fn the_alert_level_matches_the_true_quantile() {
    let params = SpotParams { max_peaks: 10_000, ..Default::default() };
    for (tail, q) in [(Gpd { gamma: 0.2, sigma: 1.0 }, 1e-4), (Gpd { gamma: 0.0, sigma: 2.0 }, 1e-3)] {
        let scores = stream_with_tail(tail, 10.0, 200_000, 11);
        let spot = Spot::calibrate(&SpotParams { q, ..params.clone() }, &scores).unwrap();
        assert!((spot.threshold() - 10.0).abs() < 0.1, "t = {}", spot.threshold());
        let truth = true_level(tail, 10.0, q);
        let rel = (spot.level() - truth) / (truth - 10.0);
        assert!(rel.abs() < 0.1, "{tail:?} q = {q}: z_q = {}, true {truth}", spot.level());
    }
}

#[test]
fn spot_alarms_at_the_rate_asked_and_does_not_learn_a_spike() {
    // Exponential scores: their tail is a GPD with γ = 0, so the level holds the alarm rate at q.
    let scores = gpd_sample(0.0, 1.0, 40_000, 3);
    let params = SpotParams { q: 1e-3, ..Default::default() };
    let mut spot = Spot::calibrate(&params, &scores[..10_000]).unwrap();
    let alarms = scores[10_000..].iter().filter(|&&s| spot.update(s) == Step::Alarm).count();
    // 30 expected in 30,000 points.
    assert!((10..=60).contains(&alarms), "{alarms} alarms");
    let before = spot.clone();
    assert_eq!(spot.update(40.0), Step::Alarm);
    assert_eq!(spot, before, "an alarm is not learnt");
    assert_eq!(spot.update(f64::NAN), Step::Normal);
    assert_eq!(spot, before, "a missing score is not learnt");
    let peak = spot.threshold() + (spot.level() - spot.threshold()) / 2.0;
    assert_eq!(spot.update(peak), Step::Peak);
    assert_eq!(spot.counts().0, before.counts().0.min(params.max_peaks - 1) + 1);
    assert_eq!(spot.update(0.1), Step::Normal);
}

#[test]
fn dspot_follows_drift_that_spot_takes_for_an_anomaly() {
    let noise = gpd_sample(0.0, 1.0, 12_000, 5);
    let drifting: Vec<f64> = noise.iter().enumerate().map(|(i, e)| 0.01 * i as f64 + e).collect();
    let spot = SpotParams { q: 1e-3, ..Default::default() };
    let dspot = SpotParams { depth: 50, ..spot.clone() };
    let alarms = |params: &SpotParams, stream: &[f64]| {
        let mut s = Spot::calibrate(params, &stream[..2000]).unwrap();
        stream[2000..].iter().map(|&x| s.update(x) == Step::Alarm).collect::<Vec<bool>>()
    };
    let fixed = alarms(&spot, &drifting);
    assert!(fixed[8000..].iter().all(|&a| a), "SPOT alone: the drift lifts every later score past its level");
    let moving = alarms(&dspot, &drifting);
    let count = moving.iter().filter(|&&a| a).count();
    assert!(count < 40, "DSPOT: {count} alarms in 10,000 drifting points");
    // And a spike on top of the drift still alarms.
    let mut spiked = drifting.clone();
    spiked[9000] += 25.0;
    assert!(alarms(&dspot, &spiked)[7000], "the spike");
}

#[test]
fn state_round_trips_and_resumes_identically() {
    let scores = gpd_sample(0.1, 1.0, 6000, 9);
    for depth in [0, 20] {
        let mut spot = Spot::calibrate(&SpotParams { depth, ..Default::default() }, &scores[..3000]).unwrap();
        for &s in &scores[3000..4000] {
            spot.update(s);
        }
        let text = serde_json::to_string(&spot).unwrap();
        let mut back: Spot = serde_json::from_str(&text).unwrap();
        assert_eq!(back, spot);
        for &s in &scores[4000..] {
            assert_eq!(back.update(s), spot.update(s));
        }
        assert_eq!(back, spot);
    }
}

#[test]
fn calibration_says_what_is_missing() {
    let p = SpotParams::default();
    assert_eq!(Spot::calibrate(&p, &[1.0; 100]), Err(SpotError::TooFew { points: 100, depth: 0 }));
    assert_eq!(Spot::calibrate(&p, &[1.0; 1000]), Err(SpotError::FewPeaks { peaks: 0, init_quantile: 0.98 }));
    assert_eq!(p.validate(), Ok(()));
    assert_eq!(SpotParams { q: 0.0, ..p.clone() }.validate(), Err("spot.q = 0 must be in (0, 1)".into()));
    assert_eq!(
        SpotParams { init_quantile: 1.0, ..p.clone() }.validate(),
        Err("spot.init_quantile = 1 must be in (0, 1)".into())
    );
    assert_eq!(
        SpotParams { refit_every: 0, ..p.clone() }.validate(),
        Err("spot.refit_every must be at least 1".into())
    );
    assert_eq!(SpotParams { max_peaks: 2, ..p }.validate(), Err("spot.max_peaks = 2 must be at least 5".into()));
}
