//! Multivariate detection end to end: replayed host metrics with an injected fault in the embedded
//! store → per-entity isolation-forest models trained in the background → `argus_anomaly_score` above 1
//! written back → an alert naming the faulted metric at an Alertmanager v2 intake over HTTP.

use argus_analyzer::runtime::{Alert, Analyzer, Config, HttpAlertOut, Metrics};
use argus_model::{Labels, Sample};
use argus_store::backend::{Embedded, QueryValue, StoreBackend};
use argus_store::query::QueryLimits;
use argus_store::{Db, Options};
use argus_store_api::remote_write::WriteSeries;
use parking_lot::Mutex;
use std::sync::Arc;

const STEP: i64 = 10_000;

const CONFIG: &str = r#"
alert_after = 6
[[rule]]
name = "cpu"
query = "host_cpu_busy_ratio"
detectors = ["ewma"]
[[multivariate]]
name = "host_health"
metrics = ["host_cpu_busy_ratio", "host_temperature_celsius", "host_power_watts"]
entity = ["host"]
train_window = "2h"
retrain = "6h"
min_train_points = 300
severity = "critical"
labels = { team = "infra" }
[multivariate.params]
iforest = { n_trees = 50 }
threshold_quantile = 0.999
smooth = 20
"#;

/// Noise in [-0.5, 0.5), the same for the same arguments.
fn noise(seed: u64, i: i64) -> f64 {
    let mut z = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (seed << 40);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

/// Four hosts whose temperature and power follow their CPU load; from `fault`, host `h2` draws 150 W
/// more at the same load (a runaway process on an accelerator the CPU metric does not see).
fn replay(from: i64, to: i64, fault: i64) -> Vec<WriteSeries> {
    let mut out = Vec::new();
    for h in 0..4u64 {
        let host = format!("h{h}");
        let mut cpu = Vec::new();
        let mut temp = Vec::new();
        let mut power = Vec::new();
        for i in 0..=(to - from) / STEP {
            // Indexed from `from`, not the wall clock: every run sees the same data.
            let t = from + i * STEP;
            let load = 0.4 + 0.25 * ((i as f64) / 30.0 + h as f64).sin() + 0.08 * noise(h * 3, i);
            let extra = if h == 2 && t >= fault { 150.0 } else { 0.0 };
            cpu.push(Sample { t, v: load });
            temp.push(Sample { t, v: 35.0 + 35.0 * load + 1.5 * noise(h * 3 + 1, i) });
            power.push(Sample { t, v: 90.0 + 250.0 * load + 8.0 * noise(h * 3 + 2, i) + extra });
        }
        for (name, samples) in
            [("host_cpu_busy_ratio", cpu), ("host_temperature_celsius", temp), ("host_power_watts", power)]
        {
            out.push(WriteSeries {
                labels: Labels::from_pairs([("__name__", name), ("host", host.as_str())]),
                samples,
            });
        }
    }
    out
}

/// An Alertmanager v2 intake on loopback: every alert posted to `/api/v2/alerts`.
async fn intake() -> (String, Arc<Mutex<Vec<Alert>>>) {
    let got: Arc<Mutex<Vec<Alert>>> = Arc::default();
    let store = got.clone();
    let router = axum::Router::new().route(
        "/api/v2/alerts",
        axum::routing::post(move |axum::Json(alerts): axum::Json<Vec<Alert>>| {
            let store = store.clone();
            async move { store.lock().extend(alerts) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (base, got)
}

async fn score(backend: &dyn StoreBackend, host: &str, t: i64) -> f64 {
    let q = format!("argus_anomaly_score{{detector=\"iforest\", rule=\"host_health\", host=\"{host}\"}}");
    match backend.query_instant(&q, t).await.unwrap() {
        QueryValue::Vector(v) if v.len() == 1 => v[0].1.v,
        other => panic!("{q}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_fault_is_scored_above_one_and_alerted_with_its_top_features() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Options::new(dir.path().join("data"))).unwrap());
    let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, QueryLimits::default()));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64 / 60_000
        * 60_000
        - 10 * 60_000;
    let fault = now - 3 * 60_000;
    backend.write(replay(now - 150 * 60_000, now, fault)).await.unwrap();

    let (base, received) = intake().await;
    let cfg: Config = toml::from_str(CONFIG).unwrap();
    let out = Arc::new(HttpAlertOut::new(std::slice::from_ref(&base)).unwrap());
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = Metrics::default();
    metrics.register(&mut registry);
    let mut a =
        Analyzer::new(cfg.validate().unwrap(), backend.clone(), out, Some(dir.path().join("analyzer")), metrics);

    // The first step starts training in the background; its models are in use from the next step.
    let train_at = fault - 10 * 60_000;
    a.tick(train_at).await;
    a.settle().await;
    assert_eq!(a.multivariate_models()["host_health"], 4);
    let mut t = train_at + STEP;
    while t <= now {
        a.tick(t).await;
        t += STEP;
    }

    assert!(score(&*backend, "h2", now).await > 1.0);
    assert!(score(&*backend, "h2", fault - STEP).await < 1.0);
    for host in ["h0", "h1", "h3"] {
        assert!(score(&*backend, host, now).await < 1.0, "{host}");
    }
    let alerts = received.lock().clone();
    let ours: Vec<&Alert> = alerts.iter().filter(|a| a.labels["detector"] == "iforest").collect();
    assert!(!ours.is_empty(), "no multivariate alert at the intake: {alerts:#?}");
    assert!(ours.iter().all(|a| a.labels["host"] == "h2"), "{ours:#?}");
    let first = ours[0];
    assert_eq!(first.labels["alertname"], "AnomalyDetected");
    assert_eq!(first.labels["analyzer_rule"], "host_health");
    assert_eq!(first.labels["team"], "infra");
    assert_eq!(first.annotations["top_metric"], "host_power_watts", "{:#?}", first.annotations);
    let top = &first.annotations["top_features"];
    assert!(top.starts_with("host_power_watts "), "{top}");
    assert!(top.contains("training median"), "{top}");
    assert!(first.annotations["score"].parse::<f64>().unwrap() > 1.0);

    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains("argus_analyzer_multivariate_trainings_total{rule=\"host_health\"} 1"), "{text}");
    assert!(text.contains("argus_analyzer_multivariate_entities{rule=\"host_health\"} 4"), "{text}");
    assert!(dir.path().join("analyzer/multivariate/host_health.json").exists());
}
