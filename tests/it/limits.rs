//! Limits added for hostile or runaway clients, over HTTP: each refusal names the limit and the
//! offending value or metric.

use crate::support::server;

use argus_model::{Labels, Sample};
use argus_store::remote_write::{WriteSeries, encode};
use server::{Server, now_ms};
use std::io::Write;
use std::time::Duration;

#[test]
fn series_per_metric_answers_400_naming_the_metric() {
    let srv = Server::with_config("[store]\nmax_series_per_metric = 2\n");
    let t = now_ms();
    assert_eq!(srv.write_ms(&format!("exploding,req=a v=1 {t}\nexploding,req=b v=1 {t}")).status, 204);
    let r = srv.write_ms(&format!("exploding,req=c v=1 {t}\nsteady,host=a v=1 {t}"));
    assert_eq!(r.status, 400, "{}", r.body);
    let j = r.json();
    assert_eq!(j["code"], "invalid");
    assert_eq!(
        j["message"],
        "series limit max_series_per_metric = 2 reached: metric \"exploding_v\" has 2 live series and this batch \
         adds 1; nothing stored"
    );
    assert_eq!(srv.series("steady_v"), vec![]);
    assert_eq!(srv.metric("argus_store_batches_rejected_total{reason=\"cardinality\"}"), Some(1.0));
}

#[test]
fn concurrent_requests_past_the_limit_get_503() {
    let srv = Server::with_config("[server]\nmax_concurrent_requests = 1\n");
    // A write whose body never finishes holds the one slot.
    let addr = srv.base().trim_start_matches("http://").to_string();
    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    write!(slow, "POST /api/v2/write?org=o&bucket=b HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nslow v=1")
        .unwrap();
    slow.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let r = srv.get("/api/v1/labels");
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.header("retry-after"), Some("1"));
    let j = r.json();
    assert_eq!(j["errorType"], "unavailable");
    assert_eq!(j["error"], "too many concurrent requests (server.max_concurrent_requests); retry later");
    assert_eq!(srv.get("/-/healthy").status, 200, "health checks are not counted");
    // The slot comes back when the slow request ends.
    drop(slow);
    let mut ok = false;
    for _ in 0..50 {
        if srv.get("/api/v1/labels").status == 200 {
            ok = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ok, "the slot was not released");
}

#[test]
fn lines_and_series_per_request_answer_413_naming_the_limit() {
    let srv = Server::with_config("[store]\nmax_lines_per_request = 3\nmax_series_per_request = 2\n");
    let t = now_ms();
    let body: String = (0..4).map(|i| format!("many,i={i} v=1 {t}\n")).collect();
    let r = srv.write_ms(&body);
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "4 lines exceed the limit of 3 per request (store.max_lines_per_request); nothing stored"
    );
    // Blank lines are not lines.
    let r = srv.write_ms(&format!("\n\nmany,i=0 v=1 {t}\n\nmany,i=1 v=1 {t}\nmany,i=2 v=1 {t}\n\n"));
    assert_eq!(r.status, 204, "{}", r.body);

    let series: Vec<WriteSeries> = (0..3)
        .map(|i| WriteSeries {
            labels: Labels::from_pairs([("__name__", "rw_many"), ("i", &*i.to_string())]),
            samples: vec![Sample::new(t, 1.0)],
        })
        .collect();
    let r = srv.post("/api/v1/write", &[], encode(&series).unwrap());
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "3 series exceed the limit of 2 per request (store.max_series_per_request); nothing stored"
    );
    assert_eq!(srv.series("rw_many"), vec![]);
}
