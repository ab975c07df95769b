//! The forecast runtime end to end on the embedded store: history ingested → models fitted → forecasts
//! written (readable by PromQL) and served with their trajectory → the pool planned from them → state
//! saved, and a restart that resumes without refitting.

use argus_analyzer::capacity::{Action, CapacityReport, KedaMetrics};
use argus_analyzer::runtime::{Alert, AlertOut, Analyzer, Config, Metrics};
use argus_model::{Labels, Sample};
use argus_store::backend::{BoxFuture, Embedded, QueryValue, StoreBackend};
use argus_store::query::QueryLimits;
use argus_store::{Db, Options};
use argus_store_api::remote_write::WriteSeries;
use std::sync::Arc;

struct Discard;

impl AlertOut for Discard {
    fn send(&self, _alerts: Vec<Alert>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}

const MIN: i64 = 60_000;

const CONFIG: &str = r#"
[[rule]]
name = "unused"
query = "absent_series_for_rules"
detectors = ["ewma"]

[[forecast]]
name = "demand"
query = "sum by (cluster) (gpu_demand)"
horizon = "10m"
history = "10h"
retrain = "1h"

[[forecast]]
name = "per_gpu"
query = "gpu_demand"
horizon = "5m"
history = "5h"
models = ["naive", "linear"]

[[capacity]]
pool = "training"
demand = "demand"
current = "sum(pool_gpus)"
target_utilization = 0.8
reserve_fraction = 0.2
scale_up_cooldown = "1m"
"#;

/// Demand of one GPU at step `k`: a six-hour wave around 40 + 5 × gpu, with a little deterministic noise.
fn demand(gpu: i64, k: i64) -> f64 {
    let wave = (k as f64 / 360.0 * std::f64::consts::TAU).sin();
    let noise = ((k * 7919 + gpu * 104_729) % 13) as f64 * 0.05;
    40.0 + 5.0 * gpu as f64 + 8.0 * wave + noise
}

fn batch(from: i64, to: i64) -> Vec<WriteSeries> {
    let mut out: Vec<WriteSeries> = (0..3)
        .map(|gpu| WriteSeries {
            labels: Labels::from_pairs([
                ("__name__", "gpu_demand".to_string()),
                ("cluster", "a".to_string()),
                ("gpu", gpu.to_string()),
            ]),
            samples: (from / MIN..=to / MIN).map(|k| Sample { t: k * MIN, v: demand(gpu, k) }).collect(),
        })
        .collect();
    out.push(WriteSeries {
        labels: Labels::from_pairs([("__name__", "pool_gpus".to_string())]),
        samples: (from / MIN..=to / MIN).map(|k| Sample { t: k * MIN, v: 150.0 }).collect(),
    });
    out
}

fn wall_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

async fn instant(backend: &dyn StoreBackend, q: &str, t: i64) -> Vec<(Labels, f64)> {
    match backend.query_instant(q, t).await.unwrap() {
        QueryValue::Vector(v) => v.into_iter().map(|(l, s)| ((*l).clone(), s.v)).collect(),
        other => panic!("{q}: {other:?}"),
    }
}

fn metric_value(registry: &prometheus_client::registry::Registry, line_start: &str) -> Option<f64> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text.lines().find(|l| l.starts_with(line_start)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok())
}

async fn get(base: &str, path: &str) -> (u16, serde_json::Value) {
    let r = reqwest::get(format!("{base}{path}")).await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forecasts_are_written_served_planned_and_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Options::new(dir.path().join("data"))).unwrap());
    let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, QueryLimits::default()));
    let now = wall_ms() / MIN * MIN - 20 * MIN;
    backend.write(batch(now - 11 * 60 * MIN, now)).await.unwrap();
    let cfg: Config = toml::from_str(CONFIG).unwrap();
    let state = dir.path().join("analyzer");
    let metrics = Metrics::default();
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    let mut a =
        Analyzer::new(cfg.validate().unwrap(), backend.clone(), Arc::new(Discard), Some(state.clone()), metrics);
    a.tick(now + 1_000).await;

    // Written at the time made, one series per horizon, and readable by PromQL.
    let total: f64 = (0..3).map(|g| demand(g, now / MIN + 10)).sum();
    let yhat = instant(&*backend, "argus_yhat{metric=\"demand\",horizon=\"10m\"}", now).await;
    assert_eq!(yhat.len(), 1, "{yhat:?}");
    assert!((yhat[0].1 - total).abs() < 0.05 * total, "10m forecast {} vs actual {total}", yhat[0].1);
    assert_eq!(yhat[0].0.get("cluster"), Some("a"));
    let model = yhat[0].0.get("model").unwrap().to_string();
    for h in ["5m", "10m"] {
        for name in ["argus_yhat_lower", "argus_yhat_upper"] {
            let q = format!("{name}{{metric=\"demand\",horizon=\"{h}\"}}");
            assert_eq!(instant(&*backend, &q, now).await.len(), 1, "{q}");
        }
    }
    let per_gpu = instant(&*backend, "argus_yhat{metric=\"per_gpu\",horizon=\"5m\"}", now).await;
    assert_eq!(per_gpu.len(), 3, "{per_gpu:?}");
    assert!(per_gpu.iter().all(|(l, _)| ["naive", "linear", "ensemble"].contains(&l.get("model").unwrap())));
    // The pool: 150 GPUs now, for a demand of about 135 at 80 % utilisation plus the reservation.
    let rec = instant(&*backend, "argus_capacity_recommended{pool=\"training\"}", now).await;
    assert_eq!(rec.len(), 1);
    let demand_now: f64 = (0..3).map(|g| demand(g, now / MIN)).sum();
    let wanted = instant(&*backend, "argus_capacity_desired{pool=\"training\"}", now).await[0].1;
    assert!(wanted >= (demand_now / 0.8 / 0.8).floor(), "desired {wanted} for demand {demand_now}");
    let cur = instant(&*backend, "argus_capacity_current{pool=\"training\"}", now).await[0].1;
    assert_eq!(cur, 150.0);
    assert_eq!(metric_value(&registry, "argus_forecast_fits_total{target=\"demand\"}"), Some(1.0));
    assert_eq!(metric_value(&registry, "argus_forecast_fits_total{target=\"per_gpu\"}"), Some(3.0));
    let selected = format!("argus_forecast_model_selected{{metric=\"demand\",model=\"{model}\"}}");
    assert_eq!(metric_value(&registry, &selected), Some(1.0));
    assert!(metric_value(&registry, "argus_forecast_backtest_mae{metric=\"demand\",model=\"naive\"}").is_some());

    // The API, on a real listener.
    let router = argus_analyzer::runtime::forecasts::api::router(a.forecast_board());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let (code, body) = get(&base, "/api/v1/forecasts?metric=demand").await;
    assert_eq!(code, 200);
    assert_eq!(body["status"], "success");
    let data = body["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{body}");
    let f = &data[0];
    assert_eq!(f["metric"], "demand");
    assert_eq!(f["labels"]["cluster"], "a");
    assert_eq!(f["model"], model.as_str());
    assert_eq!(f["made_at"].as_f64(), Some(now as f64 / 1000.0));
    assert_eq!(f["step_seconds"].as_f64(), Some(60.0));
    assert!(f["backtest"]["mae"].as_f64().unwrap() <= f["backtest"]["naive_mae"].as_f64().unwrap());
    let points = f["points"].as_array().unwrap();
    assert_eq!(points.len(), 10);
    assert_eq!(points[9]["t"].as_f64(), Some((now + 10 * MIN) as f64 / 1000.0));
    assert!((points[9]["yhat"].as_f64().unwrap() - yhat[0].1).abs() < 1e-9);
    for p in points {
        assert!(p["lower"].as_f64() <= p["yhat"].as_f64() && p["yhat"].as_f64() <= p["upper"].as_f64(), "{p}");
    }
    let (_, body) = get(&base, "/api/v1/forecasts?match=%7Bgpu%3D~%221%7C2%22%7D").await;
    let gpus: Vec<&str> =
        body["data"].as_array().unwrap().iter().map(|e| e["labels"]["gpu"].as_str().unwrap()).collect();
    assert_eq!(gpus, ["1", "2"], "{body}");
    let (code, body) = get(&base, "/api/v1/forecasts?match=sum(").await;
    assert_eq!(code, 400, "{body}");
    assert!(body["error"].as_str().unwrap().starts_with("match:"), "{body}");
    let (_, body) = get(&base, "/api/v1/capacity").await;
    let report: CapacityReport = serde_json::from_value(body).unwrap();
    assert_eq!(report.data.len(), 1);
    assert_eq!(report.data[0].pool, "training");
    assert_eq!(report.data[0].current, 150);
    assert_eq!(report.data[0].action, if report.data[0].recommended > 150 { Action::ScaleUp } else { Action::Hold });
    let (_, body) = get(&base, "/api/v1/capacity/keda").await;
    let keda: KedaMetrics = serde_json::from_value(body).unwrap();
    assert_eq!(keda.pools["training"].recommended, report.data[0].recommended);

    // Saved and resumed: the next minute is forecast from the restored models, with no refit.
    a.checkpoint();
    drop(a);
    backend.write(batch(now + MIN, now + 3 * MIN)).await.unwrap();
    let metrics = Metrics::default();
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    let cfg: Config = toml::from_str(CONFIG).unwrap();
    let mut b = Analyzer::new(cfg.validate().unwrap(), backend.clone(), Arc::new(Discard), Some(state), metrics);
    for k in 1..=3 {
        b.tick(now + k * MIN + 1_000).await;
    }
    assert_eq!(metric_value(&registry, "argus_forecast_rounds_total{target=\"demand\"}"), Some(3.0));
    assert_eq!(metric_value(&registry, "argus_forecast_fits_total{target=\"demand\"}"), Some(0.0));
    assert_eq!(metric_value(&registry, "argus_forecast_fits_total{target=\"per_gpu\"}"), Some(0.0));
    let t = now + 3 * MIN;
    let total: f64 = (0..3).map(|g| demand(g, t / MIN + 10)).sum();
    let yhat = instant(&*backend, "argus_yhat{metric=\"demand\",horizon=\"10m\"}", t).await;
    assert!((yhat[0].1 - total).abs() < 0.05 * total, "resumed 10m forecast {} vs actual {total}", yhat[0].1);
    let board = b.forecast_board();
    assert_eq!(board.by_target.read()["demand"][0].made_at, t as f64 / 1000.0);
    assert_eq!(board.capacity.read()["training"].timestamp_ms, t);
}

#[test]
fn configuration_errors_name_the_target_and_key() {
    let bad = |text: &str| toml::from_str::<Config>(text).unwrap().validate().unwrap_err().to_string();
    let e = bad("[[forecast]]\nname = \"d\"\nquery = \"up\"\nhorizon = \"90s\"");
    assert!(e.contains("forecast \"d\".horizon") && e.contains("whole number of steps"), "{e}");
    let e = bad("[[forecast]]\nname = \"d\"\nquery = \"up\"\nmodels = [\"prophet\"]");
    assert!(e.contains("forecast \"d\".models") && e.contains("unknown model \"prophet\""), "{e}");
    let e = bad("[[forecast]]\nname = \"d\"\nquery = \"up\"\nhistory = \"1h\"");
    assert!(e.contains("forecast \"d\".history") && e.contains("750 steps"), "{e}");
    let e = bad("[[forecast]]\nname = \"d\"\nquery = \"rate(\"");
    assert!(e.contains("forecast \"d\".query") && e.contains("not valid PromQL"), "{e}");
    let e = bad("[[forecast]]\nname = \"d\"\nquery = \"up\"\nhorizons = [\"20m\"]");
    assert!(e.contains("forecast \"d\".horizons[0]") && e.contains("between one step and the horizon"), "{e}");
    let e = bad("[[capacity]]\npool = \"p\"\ndemand = \"nope\"\ncurrent = \"1\"");
    assert!(e.contains("capacity \"p\".demand") && e.contains("no forecast target is named \"nope\""), "{e}");
    let e = bad("[[capacity]]\npool = \"p\"\ndemand = \"gpu_busy\"\ncurrent = \"1\"\ntarget_utilization = 1.5");
    assert!(e.contains("capacity \"p\"") && e.contains("target_utilization"), "{e}");
    // No targets: the defaults over the collector's series validate, with 5m, 10m and 15m horizons.
    let ok = toml::from_str::<Config>("").unwrap().validate().unwrap();
    assert!(!ok.forecasts.is_empty());
    let labels: Vec<&str> = ok.forecasts[0].horizons.iter().map(|h| h.0.as_str()).collect();
    assert_eq!(labels, ["5m", "10m", "15m"]);
}

/// `argus serve` spawns the analyzer's loop on the runtime: its future must be `Send`.
#[allow(dead_code)]
fn the_loop_can_be_spawned(a: Analyzer) {
    fn send<T: Send>(_: T) {}
    send(a.run(async {}));
}
