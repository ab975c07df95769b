//! The collector across a store outage: `argus serve` is killed while the collector keeps collecting,
//! then restarted on the same port; every sample collected (as recorded by a second, always-up sink)
//! must be in the store afterwards, and every event too.

use crate::support::server;

use argus_collector::{Agent, Config};
use argus_model::lineprotocol::{self, Precision};
use server::{Server, enc};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The witness: a line-protocol endpoint that is never down and keeps every body it gets.
async fn witness(bodies: Arc<Mutex<Vec<String>>>) -> String {
    let app = axum::Router::new().route(
        "/api/v2/write",
        axum::routing::post(move |body: axum::body::Bytes| {
            let bodies = bodies.clone();
            async move {
                let mut text = String::new();
                flate2::read::GzDecoder::new(&body[..]).read_to_string(&mut text).expect("gzip body");
                bodies.lock().unwrap().push(text);
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    url
}

#[test]
fn every_collected_sample_and_event_arrives_across_a_store_outage() {
    let mut store = Server::start();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let witness_url = rt.block_on(witness(bodies.clone()));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("collector/tests/fixtures");
    let f = fixtures.display();
    let spool = tempfile::tempdir().unwrap();
    let toml = format!(
        r#"
[collector]
interval = "250ms"
procfs_root = "{f}/node/proc"
sysfs_root = "{f}/infiniband/sys"
data_dir = "{data}"
[collector.labels]
host = "outage-test"
[collector.gpu]
backend = "fake"
fake_fixture = "{f}/gpu/h100.json"
kernel_log = ""
[collector.disk]
enabled = false
[collector.events]
enabled = false
[[collector.sink]]
name = "store"
url = "{base}/api/v1/write"
flush_interval = "200ms"
min_backoff = "100ms"
max_backoff = "400ms"
timeout = "2s"
[[collector.sink]]
name = "witness"
url = "{witness_url}/api/v2/write"
format = "line_protocol"
flush_interval = "200ms"
"#,
        data = spool.path().display(),
        base = store.base(),
    );
    let valid = Config::parse(&toml, "test").unwrap().validate("test").unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let agent = Agent::build(valid);
    let metrics = agent.metrics().clone();
    let run = rt.spawn(agent.run(async {
        let _ = stop_rx.await;
    }));

    std::thread::sleep(Duration::from_millis(1500));
    store.kill9();
    std::thread::sleep(Duration::from_secs(3));
    let spooled_during_outage = metrics.encode();
    store.restart_same_port();
    std::thread::sleep(Duration::from_millis(2500));
    stop_tx.send(()).unwrap();
    rt.block_on(run).unwrap().unwrap();

    assert!(
        spooled_during_outage.contains(r#"argus_collector_points_spooled_total{sink="store"}"#),
        "the outage was noticed and points were spooled:\n{spooled_during_outage}"
    );
    let text = bodies.lock().unwrap().join("");
    let lines = lineprotocol::parse(&text).expect("witness bodies parse");
    let collected = lineprotocol::to_series(&lines, Precision::Milliseconds, 0, &[]).unwrap();
    let collections: BTreeSet<i64> = collected.samples.iter().map(|(_, s)| s.t).collect();
    assert!(collections.len() >= 20, "collections every 250 ms for 7 s, got {}", collections.len());

    let end = server::now_ms() + 1000;
    let data = store.query(r#"{host="outage-test"}[10m]"#, end);
    let stored: BTreeSet<(String, i64, u64)> = server::matrix(&data)
        .into_iter()
        .flat_map(|(labels, points)| {
            let name = format!("{labels:?}");
            points.into_iter().map(move |(t, v)| (name.clone(), t, v.parse::<f64>().unwrap().to_bits()))
        })
        .collect();
    let mut missing = Vec::new();
    for (labels, s) in &collected.samples {
        let map: std::collections::BTreeMap<String, String> =
            labels.iter().map(|l| (l.name.clone(), l.value.clone())).collect();
        let key = (format!("{map:?}"), s.t, s.v.to_bits());
        if !stored.contains(&key) {
            missing.push(key);
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {} samples missing, e.g. {:?}",
        missing.len(),
        collected.samples.len(),
        &missing[..missing.len().min(5)]
    );

    let r =
        store.get(&format!("/api/v1/events?match[]={}&start=0&end={}", enc(r#"{host="outage-test"}"#), end / 1000 + 1));
    let events = r.success_data();
    let stored_events: usize = events.as_array().unwrap().iter().map(|s| s["events"].as_array().unwrap().len()).sum();
    // The fixture's three Xids: Xid 48 twice on one GPU is one event with its count.
    assert_eq!(collected.events.len(), 2, "{:?}", collected.events);
    assert!(collected.events.iter().any(|e| e.labels.get("count") == Some("2")), "{:?}", collected.events);
    assert_eq!(stored_events, collected.events.len(), "{events}");
}
