use expect_test::expect;
use rand::RngExt;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use super::*;

const INPUTS: [&str; 4] = ["cpu", "load", "net_in", "net_out"];

/// A host's metrics: a daily-ish cycle that cpu and load follow together and network in and out follow
/// together, plus noise. `faults` distort the points in their ranges: `(start, end, kind)`, kind 0 a cpu
/// spike, kind 1 network out decoupling from network in.
fn host(n: usize, seed: u64, faults: &[(usize, usize, u8)]) -> Vec<f64> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut rows = Vec::with_capacity(n * 4);
    for t in 0..n {
        let phase = t as f64 * std::f64::consts::TAU / 240.0;
        let busy = 0.5 + 0.3 * phase.sin();
        let traffic = 0.4 + 0.2 * (phase * 2.0).cos();
        let mut noise = || (rng.random::<f64>() - 0.5) * 0.04;
        let mut row = [busy + noise(), 2.0 * busy + noise(), traffic + noise(), 0.8 * traffic + noise()];
        for &(start, end, kind) in faults {
            if (start..end).contains(&t) {
                match kind {
                    0 => row[0] += 0.4,
                    _ => row[3] = 0.8 * (0.8 - traffic) + noise(),
                }
            }
        }
        rows.extend(row);
    }
    rows
}

fn inputs() -> Vec<String> {
    INPUTS.iter().map(|s| s.to_string()).collect()
}

fn model() -> MultivariateModel {
    MultivariateModel::train(&MultivariateParams::default(), inputs(), &host(3000, 1, &[])).unwrap()
}

/// Runs of points scoring above 1, as `start..end` (end exclusive), and each run's top metric at its
/// highest point.
fn windows(model: &MultivariateModel, rows: &[f64]) -> String {
    let mut scorer = model.scorer();
    let mut out = Vec::new();
    let mut run: Option<(usize, f64, String)> = None;
    for (t, row) in rows.chunks(4).enumerate() {
        let v = scorer.score(row);
        if v.score > 1.0 {
            let top = scorer.top_features(1)[0].0.to_string();
            match &mut run {
                Some((_, peak, name)) if v.score > *peak => (*peak, *name) = (v.score, top),
                Some(_) => {}
                None => run = Some((t, v.score, top)),
            }
        } else if let Some((start, _, name)) = run.take() {
            out.push(format!("{start}..{t} {name}"));
        }
    }
    if let Some((start, _, name)) = run {
        out.push(format!("{start}..{} {name}", rows.len() / 4));
    }
    out.join("\n")
}

#[test]
fn finds_the_injected_faults() {
    let model = model();
    let test = host(1200, 2, &[(300, 330, 0), (700, 760, 1)]);
    // Both faults are found, each named by the metric it hits, and end a smoothing window after the
    // fault does; the two short windows are false alarms on noise (2 of 1,200 points).
    expect![[r#"
        300..339 cpu
        614..615 net_out
        700..769 net_out
        1029..1030 net_in"#]]
    .assert_eq(&windows(&model, &test));
}

#[test]
fn quiet_on_normal_data() {
    let model = model();
    let mut scorer = model.scorer();
    let flagged = host(2000, 3, &[]).chunks(4).filter(|r| scorer.score(r).score > 1.0).count();
    // The level leaves a normal smoothed score 1 chance in 1 / spot.q of passing it; a smoothed score of
    // noise stays above it for a few points at a time.
    assert!(flagged < 40, "{flagged} of 2000 normal points flagged");
}

#[test]
fn seeded() {
    assert_eq!(model(), model());
    let mut params = MultivariateParams::default();
    params.iforest.seed = 9;
    assert_ne!(MultivariateModel::train(&params, inputs(), &host(3000, 1, &[])).unwrap(), model());
}

#[test]
fn serde_round_trip() {
    let model = model();
    let json = serde_json::to_string(&model).unwrap();
    let back: MultivariateModel = serde_json::from_str(&json).unwrap();
    assert_eq!(back, model);
    assert_eq!(back.version, MODEL_VERSION);
    let test = host(500, 4, &[(100, 120, 0)]);
    let (mut a, mut b) = (model.scorer(), back.scorer());
    for row in test.chunks(4) {
        assert_eq!(a.score(row), b.score(row));
    }
}

#[test]
fn too_small() {
    let err = MultivariateModel::train(&MultivariateParams::default(), inputs(), &[1.0; 4]).unwrap_err();
    assert_eq!(err, TrainError::TooSmall { rows: 1, inputs: 4 });
}

#[test]
fn quantile_interpolates() {
    assert_eq!(quantile(&[3.0, 1.0, 2.0, 4.0], 0.5), 2.5);
    assert_eq!(quantile(&[3.0, 1.0, 2.0, 4.0], 1.0), 4.0);
    assert_eq!(smooth(&[2.0, 4.0, 6.0, 8.0], 2), [2.0, 3.0, 5.0, 7.0]);
}

#[test]
fn spot_sets_the_level_and_fixed_keeps_the_training_quantile() {
    let spot = model();
    let calibrated = spot.spot().expect("the training window's scores have a tail");
    assert_eq!(calibrated.params(), &SpotParams::default());
    let fixed_params = MultivariateParams { alert_level: AlertLevel::Fixed, ..MultivariateParams::default() };
    let fixed = MultivariateModel::train(&fixed_params, inputs(), &host(3000, 1, &[])).unwrap();
    assert_eq!(fixed.spot(), None);
    assert_eq!(fixed.scorer().state.level(&fixed), fixed.threshold);
    assert_eq!(spot.scorer().state.level(&spot), calibrated.level());
    // Same ranking inputs, different levels: the scores differ by the ratio of the levels at the start.
    let rows = host(1, 5, &[]);
    let row = &rows[..4];
    let (a, b) = (spot.scorer().score(row), fixed.scorer().score(row));
    assert!((a.score * calibrated.level() - b.score * fixed.threshold).abs() < 1e-12);
}

#[test]
fn a_version_1_model_scores_against_its_training_quantile() {
    let fixed_params = MultivariateParams { alert_level: AlertLevel::Fixed, ..MultivariateParams::default() };
    let fixed = MultivariateModel::train(&fixed_params, inputs(), &host(3000, 1, &[])).unwrap();
    // A model as a build before SPOT wrote it: version 1, no `spot`, no `alert_level` or `spot` parameters.
    let mut json = serde_json::to_value(model()).unwrap();
    json["version"] = 1.into();
    json.as_object_mut().unwrap().remove("spot");
    let params = json["params"].as_object_mut().unwrap();
    params.remove("alert_level");
    params.remove("spot");
    let old: MultivariateModel = serde_json::from_value(json).unwrap();
    assert!(MODEL_VERSIONS_READ.contains(&old.version));
    assert_eq!(old.spot(), None);
    let (mut a, mut b) = (old.scorer(), fixed.scorer());
    for row in host(500, 4, &[(100, 120, 0)]).chunks(4) {
        assert_eq!(a.score(row), b.score(row));
    }
}
