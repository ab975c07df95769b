//! The multivariate runtime on the embedded store: two hosts, a fault injected in one.

use super::*;
use argus_store::backend::Embedded;
use argus_store::query::QueryLimits;
use argus_store::{Db, Options};

const STEP: i64 = 10_000;
const CPU: &str = "host_cpu_busy_ratio";
const TEMP: &str = "host_temperature_celsius";
const POWER: &str = "host_power_watts";

const CONFIG: &str = r#"
alert_after = 3
resolve_after = 3
[[multivariate]]
name = "host_health"
metrics = ["host_cpu_busy_ratio", "host_temperature_celsius", "host_power_watts"]
entity = ["host"]
train_window = "2h"
min_train_points = 200
severity = "critical"
[multivariate.params]
iforest = { n_trees = 50, seed = 7 }
threshold_quantile = 0.999
# The training quantile: with SPOT, an entity's level after a restart starts again from its model's
# calibration, so it would differ from an uninterrupted run's.
alert_level = "fixed"
"#;

fn valid() -> super::super::Valid {
    let c: super::super::Config = toml::from_str(CONFIG).unwrap();
    c.validate().unwrap()
}

/// Noise in [-0.5, 0.5), the same for the same arguments.
fn noise(host: u64, metric: u64, i: i64) -> f64 {
    let mut z = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (host << 32) ^ (metric << 48);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

/// Hosts `a` and `b` every 10 s from `from` to `to`: temperature and power follow the CPU load. From
/// `fault` on, host `b` runs 20 °C hotter at the same load (a cooling fault: no one metric out of its
/// usual range for long, but the relation broken).
fn fixture(from: i64, to: i64, fault: i64) -> Vec<WriteSeries> {
    let mut out = Vec::new();
    for (h, host) in ["a", "b"].into_iter().enumerate() {
        let h = h as u64;
        let mut series: Vec<(&str, Vec<Sample>)> = vec![(CPU, vec![]), (TEMP, vec![]), (POWER, vec![])];
        for i in 0..=(to - from) / STEP {
            // Indexed from `from`, not the wall clock: every run sees the same data.
            let t = from + i * STEP;
            let load = 0.5 + 0.3 * ((i as f64) / 40.0).sin() + 0.1 * noise(h, 0, i);
            let hot = if host == "b" && t >= fault { 20.0 } else { 0.0 };
            series[0].1.push(Sample { t, v: load });
            series[1].1.push(Sample { t, v: 40.0 + 30.0 * load + 2.0 * noise(h, 1, i) + hot });
            series[2].1.push(Sample { t, v: 100.0 + 200.0 * load + 10.0 * noise(h, 2, i) });
        }
        for (name, samples) in series {
            out.push(WriteSeries { labels: Labels::from_pairs([("__name__", name), ("host", host)]), samples });
        }
    }
    out
}

async fn store() -> (tempfile::TempDir, Arc<dyn StoreBackend>, i64) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Options::new(dir.path().join("data"))).unwrap());
    let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, QueryLimits::default()));
    let now = super::super::now_ms() / 60_000 * 60_000 - 10 * 60_000;
    (dir, backend, now)
}

/// Every score written, by host, in time order.
fn scores(writes: &[WriteSeries]) -> BTreeMap<String, Vec<(i64, f64)>> {
    let mut out: BTreeMap<String, Vec<(i64, f64)>> = BTreeMap::new();
    for w in writes {
        assert_eq!(w.labels.get("detector"), Some("iforest"));
        assert_eq!(w.labels.get("rule"), Some("host_health"));
        let host = w.labels.get("host").unwrap().to_string();
        out.entry(host).or_default().extend(w.samples.iter().map(|s| (s.t, s.v)));
    }
    out
}

/// Trains at `train_at`, then ticks every step in `(train_at, to]`.
async fn run(m: &mut Multivariate, train_at: i64, to: i64) -> (Vec<WriteSeries>, Vec<Alert>) {
    let (mut writes, mut alerts) = (Vec::new(), Vec::new());
    m.tick(train_at, &mut writes, &mut alerts).await;
    m.settle().await;
    ticks(m, train_at + STEP, to, &mut writes, &mut alerts).await;
    (writes, alerts)
}

async fn ticks(m: &mut Multivariate, from: i64, to: i64, writes: &mut Vec<WriteSeries>, alerts: &mut Vec<Alert>) {
    let mut t = from;
    while t <= to {
        m.tick(t, writes, alerts).await;
        t += STEP;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_faulty_entity_scores_above_one_and_its_alert_names_the_faulted_metric() {
    let (dir, backend, now) = store().await;
    let fault = now - 3 * 60_000;
    backend.write(fixture(now - 150 * 60_000, now, fault)).await.unwrap();
    let mut m = Multivariate::new(&valid(), backend, Some(dir.path().join("analyzer")), Metrics::default());
    let train_at = fault - 10 * 60_000;
    let (writes, alerts) = run(&mut m, train_at, now).await;
    assert_eq!(m.modelled()["host_health"], 2);
    let scores = scores(&writes);
    let max = |host: &str, from: i64| scores[host].iter().filter(|(t, _)| *t >= from).map(|s| s.1).fold(0.0, f64::max);
    assert!(max("a", 0) < 1.0, "healthy host above 1: {:?}", scores["a"]);
    assert!(max("b", 0) > 1.0, "faulty host never above 1: {:?}", scores["b"]);
    assert!(scores["b"].iter().filter(|(t, _)| *t < fault).all(|s| s.1 < 1.0), "{:?}", scores["b"]);
    assert_eq!(scores["b"].last().unwrap().0, now);
    assert!(scores["b"].last().unwrap().1 > 1.0);

    assert!(!alerts.is_empty(), "no alert");
    assert!(alerts.iter().all(|a| a.labels["host"] == "b"), "{alerts:#?}");
    let a = &alerts[0];
    assert_eq!(a.labels["detector"], "iforest");
    assert_eq!(a.labels["severity"], "critical");
    assert_eq!(a.labels["analyzer_rule"], "host_health");
    assert_eq!(a.annotations["top_metric"], TEMP, "{:#?}", a.annotations);
    assert!(a.annotations["top_features"].starts_with(TEMP), "{:#?}", a.annotations);
    assert!(a.annotations["summary"].contains("training median"), "{:#?}", a.annotations);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_scores_with_the_saved_models_as_an_uninterrupted_run() {
    let (dir, backend, now) = store().await;
    backend.write(fixture(now - 150 * 60_000, now, now - 60_000)).await.unwrap();
    let train_at = now - 10 * 60_000;
    let restart = now - 5 * 60_000;
    let cfg = valid();
    // Uninterrupted, with its own state directory.
    let mut whole = Multivariate::new(&cfg, backend.clone(), Some(dir.path().join("whole")), Metrics::default());
    let (reference, _) = run(&mut whole, train_at, now).await;
    // Stopped at `restart`, then a new one on the saved models.
    let state = dir.path().join("analyzer");
    let mut first = Multivariate::new(&cfg, backend.clone(), Some(state.clone()), Metrics::default());
    run(&mut first, train_at, restart).await;
    drop(first);
    let mut second = Multivariate::new(&cfg, backend.clone(), Some(state.clone()), Metrics::default());
    assert_eq!(second.modelled()["host_health"], 2, "models loaded");
    let (mut writes, mut alerts) = (Vec::new(), Vec::new());
    ticks(&mut second, restart + STEP, now, &mut writes, &mut alerts).await;
    assert!(second.rules[0].job.is_none(), "retrained before the schedule");
    let after = |s: BTreeMap<String, Vec<(i64, f64)>>| -> BTreeMap<String, Vec<(i64, f64)>> {
        s.into_iter().map(|(h, v)| (h, v.into_iter().filter(|(t, _)| *t > restart).collect())).collect()
    };
    let resumed = after(scores(&writes));
    assert_eq!(resumed["a"].len(), 30);
    assert_eq!(resumed, after(scores(&reference)));

    // One entity's model of an unknown version: it alone is trained again.
    let path = state.join("multivariate").join("host_health.json");
    let mut file: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    file["entities"][1]["model"]["version"] = 99.into();
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    let mut third = Multivariate::new(&cfg, backend.clone(), Some(state.clone()), Metrics::default());
    assert_eq!(third.modelled()["host_health"], 1);
    let (mut writes, mut alerts) = (Vec::new(), Vec::new());
    third.tick(now, &mut writes, &mut alerts).await;
    assert!(third.rules[0].job.is_some(), "no training for the stale model");
    third.settle().await;
    assert_eq!(third.modelled()["host_health"], 2);
    assert_eq!(third.rules[0].trained_at, second.rules[0].trained_at, "a partial training is not the schedule's");

    // A file of an unknown version: everything is trained again.
    file["version"] = 2.into();
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    let fourth = Multivariate::new(&cfg, backend, Some(state), Metrics::default());
    assert_eq!(fourth.modelled()["host_health"], 0);
}

#[test]
fn rows_fill_gaps_forward_and_skip_what_cannot_be_filled() {
    let nan = f64::NAN;
    #[rustfmt::skip]
    let grid = Grid { from: 0, step: 10, n: 2, values: vec![
        nan, 1.0,   // b seen, a never: dropped
        2.0, nan,   // a seen, b filled
        nan, nan,   // nothing: no row
        3.0, 4.0,
    ] };
    let mut last = vec![nan; 2];
    let rows: Vec<(i64, Vec<f64>)> = grid.rows(&mut last).collect();
    assert_eq!(rows, [(10, vec![2.0, 1.0]), (30, vec![3.0, 4.0])]);
}
