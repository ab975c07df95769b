//! Clock skew: a sample further ahead of the server's clock than `[store] max_future` makes its whole
//! batch a 400 on every ingest path (InfluxDB v2 and v1 line protocol, Prometheus remote write),
//! naming the line or series and the limit, and nothing of the batch is stored. Up to the limit,
//! samples from a writer whose clock runs ahead are taken.

use crate::support::server;

use argus_model::{Labels, Sample};
use argus_store::remote_write::{WriteSeries, encode};
use server::{Server, now_ms};

const SEC: i64 = 1000;
const MIN: i64 = 60 * SEC;

/// Every series named `skew_*`, read over the last and the next few minutes.
fn stored(s: &Server) -> usize {
    let r = s.get(&format!(
        "/api/v1/series?match[]={}&start={}&end={}",
        server::enc("{__name__=~\"skew_.*\"}"),
        (now_ms() - 10 * MIN) / SEC,
        (now_ms() + 10 * MIN) / SEC
    ));
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"].as_array().map_or(0, Vec::len)
}

#[test]
fn future_samples_are_refused_on_every_ingest_path() {
    let s = Server::with_config("[store]\nmax_future = \"2m\"\n");
    let now = now_ms();
    let ahead = now + 3 * MIN;

    // InfluxDB v2 and v1 line protocol: the line and the limit, nothing of the batch stored.
    let body = format!("skew,host=a value=1 {now}\nskew,host=b value=2 {ahead}\n");
    for path in ["/api/v2/write?precision=ms", "/write?db=gpu&precision=ms"] {
        let r = s.post(path, &[], body.clone());
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        assert!(r.body.contains("line 2"), "{path}: {}", r.body);
        assert!(r.body.contains("timestamp more than 2m in the future"), "{path}: {}", r.body);
        assert_eq!(stored(&s), 0, "{path}: the valid line of a refused batch was stored");
    }
    // Nanoseconds (the default precision) are judged alike.
    let r = s.post("/api/v2/write", &[], format!("skew,host=c value=3 {}\n", ahead * 1_000_000));
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("line 1"), "{}", r.body);

    // Prometheus remote write: the series (its labels) and the limit.
    let series = vec![
        WriteSeries {
            labels: Labels::from_pairs([("__name__", "skew_ok"), ("gpu", "0")]),
            samples: vec![Sample::new(now, 1.0)],
        },
        WriteSeries {
            labels: Labels::from_pairs([("__name__", "skew_ahead"), ("gpu", "1")]),
            samples: vec![Sample::new(now, 1.0), Sample::new(ahead, 2.0)],
        },
    ];
    let headers = [("Content-Encoding", "snappy"), ("Content-Type", "application/x-protobuf")];
    let r = s.post("/api/v1/write", &headers, encode(&series).expect("encode"));
    assert_eq!(r.status, 400, "{}", r.body);
    let reason = r.json()["errors"][0]["reason"].as_str().unwrap_or_default().to_string();
    assert_eq!(
        reason,
        format!("series skew_ahead{{gpu=\"1\"}}: timestamp {ahead} more than 2m in the future (store.max_future)")
    );
    assert_eq!(stored(&s), 0, "remote write: the valid series of a refused request was stored");
    assert_eq!(s.metric("argus_store_batches_rejected_total{reason=\"invalid\"}"), Some(4.0));

    // Within the limit (a writer a minute ahead) everything is taken, on every path.
    let near = now + MIN;
    let r = s.post("/api/v2/write?precision=ms", &[], format!("skew,host=a value=1 {near}\n"));
    assert_eq!(r.status, 204, "{}", r.body);
    let r = s.post("/write?db=gpu&precision=ms", &[], format!("skew,host=b value=1 {near}\n"));
    assert_eq!(r.status, 204, "{}", r.body);
    let ok = vec![WriteSeries {
        labels: Labels::from_pairs([("__name__", "skew_ok"), ("gpu", "0")]),
        samples: vec![Sample::new(near, 1.0)],
    }];
    let r = s.post("/api/v1/write", &headers, encode(&ok).expect("encode"));
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(stored(&s), 3);
}
