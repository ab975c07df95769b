use super::*;
use crate::batch::Point;
use crate::config::Config;
use axum::http::{HeaderMap, StatusCode};
use std::sync::{Arc, Mutex};

/// A store stand-in: answers 503 with `Retry-After: 1` to the first `fail` requests, then 204, and
/// records the sample timestamps of every accepted remote-write body and the time of every request.
#[derive(Clone, Default)]
struct Fake {
    fail: Arc<Mutex<usize>>,
    accepted: Arc<Mutex<Vec<i64>>>,
    requests: Arc<Mutex<Vec<std::time::Instant>>>,
}

async fn serve(fake: Fake) -> String {
    let app = axum::Router::new().route(
        "/api/v1/write",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let f = fake.clone();
            async move {
                f.requests.lock().unwrap().push(std::time::Instant::now());
                assert_eq!(headers.get("content-encoding").unwrap(), "snappy");
                {
                    let mut fail = f.fail.lock().unwrap();
                    if *fail > 0 {
                        *fail -= 1;
                        return (StatusCode::SERVICE_UNAVAILABLE, [("retry-after", "1")]).into_response_parts();
                    }
                }
                let req = argus_store_api::remote_write::decode(&body).unwrap();
                let mut acc = f.accepted.lock().unwrap();
                for ts in req.series {
                    acc.extend(ts.samples.iter().map(|s| s.t));
                }
                (StatusCode::NO_CONTENT, [("retry-after", "0")]).into_response_parts()
            }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    format!("http://{addr}/api/v1/write")
}

trait Parts {
    fn into_response_parts(self) -> axum::response::Response;
}
impl<T: axum::response::IntoResponse> Parts for T {
    fn into_response_parts(self) -> axum::response::Response {
        self.into_response()
    }
}

fn sink_config(url: &str) -> ValidSink {
    let toml = format!(
        "[[collector.sink]]\nurl = \"{url}\"\nflush_interval = \"50ms\"\nmin_backoff = \"100ms\"\nmax_backoff = \"200ms\"\nmax_samples = 3"
    );
    Config::parse(&toml, "-").unwrap().validate("-").unwrap().sinks.remove(0)
}

fn batch(t: i64) -> Batch {
    let mut b = Batch::new();
    b.push(Point::new("host", t).field("load1", t as f64));
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_spools_then_delivers_everything_in_order_honouring_retry_after() {
    let fake = Fake::default();
    *fake.fail.lock().unwrap() = 2;
    let url = serve(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let metrics = SelfMetrics::default();
    let sink = Sink::build(sink_config(&url), dir.path(), metrics.clone()).unwrap();
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(sink.run(rx));
    for t in 1..=12 {
        tx.send(batch(t)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Enough for the Retry-After of both refusals.
    tokio::time::sleep(Duration::from_millis(2600)).await;
    drop(tx);
    task.await.unwrap();
    assert_eq!(*fake.accepted.lock().unwrap(), (1..=12).collect::<Vec<i64>>(), "all samples, in order");
    let req = fake.requests.lock().unwrap().clone();
    assert!(req[1] - req[0] >= Duration::from_millis(950), "Retry-After honoured: {:?}", req[1] - req[0]);
    assert!(req[2] - req[1] >= Duration::from_millis(950), "Retry-After honoured: {:?}", req[2] - req[1]);
    let text = metrics.encode();
    assert!(text.contains(r#"argus_collector_points_sent_total{sink="default"} 12"#), "{text}");
    assert!(!text.contains("argus_collector_points_dropped_total{"), "{text}");
    assert!(text.contains(r#"argus_collector_spool_records{sink="default"} 0"#), "drained: {text}");
}

#[tokio::test]
async fn a_stop_while_the_store_is_down_leaves_the_points_in_the_spool_for_the_next_start() {
    // Nothing listens on this port.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/api/v1/write");
    let dir = tempfile::tempdir().unwrap();
    let metrics = SelfMetrics::default();
    let sink = Sink::build(sink_config(&url), dir.path(), metrics.clone()).unwrap();
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(sink.run(rx));
    for t in 1..=5 {
        tx.send(batch(t)).await.unwrap();
    }
    drop(tx);
    task.await.unwrap();
    let text = metrics.encode();
    let waiting = text.lines().find_map(|l| l.strip_prefix(r#"argus_collector_spool_records{sink="default"} "#));
    assert!(waiting.is_some_and(|n| n != "0"), "the batches wait: {text}");
    assert_eq!(restart_against_a_store(dir.path(), Some(batch(6))).await, (1..=6).collect::<Vec<i64>>());
}

/// Starts a sink on the spool in `dir` against a store that takes everything, lets it drain for 300 ms,
/// sends `then` and stops it; the sample timestamps the store took, in order.
async fn restart_against_a_store(dir: &Path, then: Option<Batch>) -> Vec<i64> {
    let fake = Fake::default();
    let url = serve(fake.clone()).await;
    let sink = Sink::build(sink_config(&url), dir, SelfMetrics::default()).unwrap();
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(sink.run(rx));
    tokio::time::sleep(Duration::from_millis(300)).await;
    if let Some(b) = then {
        tx.send(b).await.unwrap();
    }
    drop(tx);
    task.await.unwrap();
    fake.accepted.lock().unwrap().clone()
}

#[tokio::test]
async fn a_redirect_is_not_a_delivery_and_the_points_wait_in_the_spool() {
    // An authenticating proxy: the POST is sent to a login page that answers a GET with 200.
    let app = axum::Router::new()
        .route("/api/v1/write", axum::routing::post(|| async { (StatusCode::FOUND, [("location", "/login")]) }))
        .route("/login", axum::routing::get(|| async { "sign in" }));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let metrics = SelfMetrics::default();
    let sink = Sink::build(sink_config(&format!("http://{addr}/api/v1/write")), dir.path(), metrics.clone()).unwrap();
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(sink.run(rx));
    tx.send(batch(1)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(tx);
    task.await.unwrap();
    let text = metrics.encode();
    assert!(!text.contains(r#"argus_collector_points_sent_total{sink="default"} 1"#), "{text}");
    assert!(!text.contains("argus_collector_points_dropped_total{"), "{text}");
    assert_eq!(restart_against_a_store(dir.path(), None).await, vec![1], "the spooled point reaches a store");
}

#[test]
fn line_protocol_leaves_out_values_it_cannot_carry_and_keeps_the_rest() {
    // A Go target's summary quantiles are often NaN; line protocol has no NaN or infinity.
    let mut b = Batch::new();
    b.push(Point::scraped("go_gc_duration_seconds".into(), f64::NAN, 5));
    b.push(Point::new("host", 5).field("load1", 0.5).field("load5", f64::INFINITY));
    assert_eq!(b.retain_finite(), 2);
    let recs = encode(&b, SinkFormat::LineProtocol, 100);
    let mut lp = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(recs[0].body.as_slice()), &mut lp).unwrap();
    assert_eq!(lp, "host load1=0.5 5\n");
    argus_model::lineprotocol::parse(&lp).expect("the store takes the body");
}

#[test]
fn remote_write_sends_events_as_line_protocol_beside_the_samples() {
    let mut b = Batch::new();
    b.push(Point::new("gpu", 5).tag("gpu", "0").field("power_watts", 1.0).text("xid", "Xid 79"));
    let recs = encode(&b, SinkFormat::RemoteWrite, 100);
    assert_eq!(
        recs.iter().map(|r| (r.kind, r.values)).collect::<Vec<_>>(),
        vec![(Kind::RemoteWrite, 1), (Kind::Events, 1)]
    );
    let mut lp = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(recs[1].body.as_slice()), &mut lp).unwrap();
    assert_eq!(lp, "gpu,gpu=0 xid=\"Xid 79\" 5\n");
}
