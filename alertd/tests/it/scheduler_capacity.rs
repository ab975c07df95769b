//! Capacity plans end to end: the analyzer plans a pool from its forecast on the embedded store and
//! hands changed plans to alertd's `POST /api/v1/scheduler/capacity` over HTTP; alertd queues them in
//! the outbox and the delivery worker posts a signed `capacity` message to a scheduler on loopback.
//! A round whose recommended capacity is unchanged sends nothing.

use argus_alertd::api::capacity;
use argus_alertd::deliver::scheduler::{Body, Kind};
use argus_alertd::deliver::webhook::sign_hex;
use argus_alertd::deliver::{self, Deliverer, RetryPolicy};
use argus_alertd::outbox::Outbox;
use argus_analyzer::runtime::forecasts::push::HttpCapacityOut;
use argus_analyzer::runtime::{Alert, AlertOut, Analyzer, Config, Metrics};
use argus_model::{Labels, Sample, Secret};
use argus_store::backend::{BoxFuture, Embedded, StoreBackend};
use argus_store::query::QueryLimits;
use argus_store::{Db, Options};
use argus_store_api::remote_write::WriteSeries;
use axum::body::Bytes;
use axum::http::HeaderMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Discard;

impl AlertOut for Discard {
    fn send(&self, _alerts: Vec<Alert>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}

const MIN: i64 = 60_000;

const ANALYZER: &str = r#"
[[forecast]]
name = "demand"
query = "sum(gpu_demand)"
horizon = "5m"
history = "5h"
models = ["naive"]

[[capacity]]
pool = "training"
demand = "demand"
current = "sum(pool_gpus)"
target_utilization = 0.8
scale_up_cooldown = "1m"
"#;

const ALERTD: &str = r#"
route: {receiver: sched}
receivers:
  - name: sched
    scheduler_configs:
      - url: URL
        hmac_secret: s3cret
        events: [capacity]
"#;

/// Demand `level` from `from` to `to`, and a pool of 100 GPUs.
fn batch(from: i64, to: i64, level: f64) -> Vec<WriteSeries> {
    let steps = || from / MIN..=to / MIN;
    let series = |name: &str, v: f64| WriteSeries {
        labels: Labels::from_pairs([("__name__", name.to_string())]),
        samples: steps().map(|k| Sample { t: k * MIN, v }).collect(),
    };
    vec![series("gpu_demand", level), series("pool_gpus", 100.0)]
}

type Got = Arc<Mutex<Vec<(HeaderMap, Vec<u8>)>>>;

async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_plans_reach_the_scheduler_signed_and_unchanged_ones_do_not() {
    // The scheduler.
    let got: Got = Got::default();
    let g = got.clone();
    let sched = serve(axum::Router::new().fallback(move |h: HeaderMap, b: Bytes| {
        let g = g.clone();
        async move { g.lock().unwrap().push((h, b.to_vec())) }
    }))
    .await;

    // alertd: the scheduler receiver, its outbox and worker, and the capacity route.
    let dir = tempfile::tempdir().unwrap();
    let cfg = argus_alertd::config::parse(&ALERTD.replace("URL", &format!("{sched}/capacity")), "alertd.yml").unwrap();
    let outbox = Arc::new(Outbox::open(&dir.path().join("alertd.db")).unwrap());
    let deliverer = Deliverer::new(outbox, deliver::build(&cfg).unwrap(), RetryPolicy::default());
    let _workers = deliverer.spawn();
    let alertd = serve(capacity::router(Arc::new(deliverer.notifier()), 1 << 20)).await;

    // The analyzer, handing plans over to that alertd.
    let db = Arc::new(Db::open(Options::new(dir.path().join("data"))).unwrap());
    let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, QueryLimits::default()));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let start = now / MIN * MIN - 30 * MIN;
    backend.write(batch(start - 6 * 60 * MIN, start + 10 * MIN, 40.0)).await.unwrap();
    let cfg: Config = toml::from_str(ANALYZER).unwrap();
    let mut a = Analyzer::new(cfg.validate().unwrap(), backend.clone(), Arc::new(Discard), None, Metrics::default())
        .with_capacity_out(Arc::new(HttpCapacityOut::new(std::slice::from_ref(&alertd)).unwrap()));
    let board = a.forecast_board();
    let recommended = || board.capacity.read()["training"].recommended;

    // First plan: sent.
    a.tick(start + 1_000).await;
    let first = recommended();
    until("the first plan", || got.lock().unwrap().len() == 1).await;
    // Steady demand: the same recommendation, nothing sent.
    a.tick(start + MIN + 1_000).await;
    a.tick(start + 2 * MIN + 1_000).await;
    assert_eq!(recommended(), first, "steady demand keeps the plan");
    // Demand doubles: a new recommendation, sent.
    backend.write(batch(start + 3 * MIN, start + 10 * MIN, 80.0)).await.unwrap();
    a.tick(start + 3 * MIN + 1_000).await;
    let second = recommended();
    assert!(second > first, "{second} after {first}");
    until("the changed plan", || got.lock().unwrap().len() == 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    let got = got.lock().unwrap().clone();
    assert_eq!(got.len(), 2, "unchanged plans are not sent");
    let mut keys = Vec::new();
    for ((headers, body), want) in got.iter().zip([first, second]) {
        let sig = format!("sha256={}", sign_hex(&Secret::new("s3cret"), body));
        assert_eq!(headers["x-argus-signature"], sig.as_str());
        let b: Body = serde_json::from_slice(body).unwrap();
        assert_eq!((b.version.as_str(), b.kind, b.receiver.as_str()), ("1", Kind::Capacity, "sched"));
        assert_eq!(headers["idempotency-key"], b.idempotency_key.as_str());
        let plan = b.capacity.unwrap();
        assert_eq!((plan.pool.as_str(), plan.recommended), ("training", want));
        assert!(plan.rest.contains_key("action") && plan.rest.contains_key("desired"), "{:?}", plan.rest);
        keys.push(b.idempotency_key);
    }
    assert_ne!(keys[0], keys[1]);
}
