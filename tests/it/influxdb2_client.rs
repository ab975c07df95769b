//! The real `influxdb2` client crate writing to our server (its escaping, its streamed chunked bodies,
//! its gzip and its `Token` header), read back through the Prometheus API with exact values.

use crate::support::server;

use futures::stream;
use influxdb2::api::write::TimestampPrecision;
use influxdb2::models::DataPoint;
use influxdb2::{Client, ClientBuilder, RequestError};
use serde_json::json;
use server::{Server, enc, lbl, now_ms, secs};

const TOKEN: &str = "influx-token";
const SEC: i64 = 1000;

fn server() -> Server {
    // TOKEN's SHA-256, for writes; reads are anonymous.
    Server::with_config(
        "[auth]\nanonymous = [\"read\"]\n[[auth.tokens]]\nname = \"influx\"\nscopes = [\"write\"]\n\
         sha256 = \"230d23d9465e8a66f581437b4fb4ba44bcbe4e1b66fd8d1c5bbaeb664e255c9d\"\n",
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

/// Points of `gpu` for two devices at `t0`, `t0+10s`, `t0+20s`, with timestamps in nanoseconds.
fn gpu_points(t0: i64, host: &str) -> Vec<DataPoint> {
    let mut out = Vec::new();
    for (i, (util, mem, throttled)) in
        [(0.5, 1024i64, false), (75.25, 2048, true), (100.0, -1, false)].into_iter().enumerate()
    {
        for dev in ["0", "1"] {
            let t_ns = (t0 + i as i64 * 10 * SEC) * 1_000_000 + 123_456;
            let p = DataPoint::builder("gpu")
                .tag("host", host)
                .tag("device", dev)
                .field("util", if dev == "0" { util } else { -util })
                .field("mem_mib", mem)
                .field("throttled", throttled)
                .timestamp(t_ns)
                .build()
                .expect("data point");
            out.push(p);
        }
    }
    out
}

fn check_gpu(srv: &Server, t0: i64, host: &str) {
    let sel = |m: &str| format!(r#"{m}{{host="{host}"}}"#);
    let range = |m: &str| srv.query_range(&sel(m), t0, t0 + 20 * SEC, "10s");
    let at = |v: [&str; 3]| {
        vec![(t0, v[0].to_string()), (t0 + 10 * SEC, v[1].to_string()), (t0 + 20 * SEC, v[2].to_string())]
    };
    let dev = |d: &str| lbl(&[("device", d), ("host", host)]);
    let strip = |v: Vec<server::SeriesPoints>| -> Vec<server::SeriesPoints> {
        v.into_iter()
            .map(|(mut l, p)| {
                l.remove("__name__");
                (l, p)
            })
            .collect()
    };
    assert_eq!(
        strip(range("gpu_util")),
        vec![(dev("0"), at(["0.5", "75.25", "100"])), (dev("1"), at(["-0.5", "-75.25", "-100"]))]
    );
    assert_eq!(
        strip(range("gpu_mem_mib")),
        vec![(dev("0"), at(["1024", "2048", "-1"])), (dev("1"), at(["1024", "2048", "-1"]))]
    );
    assert_eq!(strip(range("gpu_throttled")), vec![(dev("0"), at(["0", "1", "0"])), (dev("1"), at(["0", "1", "0"]))]);
}

#[test]
fn points_written_by_the_influxdb2_client_read_back_exactly() {
    let srv = server();
    let rt = runtime();
    let t0 = (now_ms() - 5 * 60 * SEC) / SEC * SEC;
    let client = Client::new(srv.base(), "my-org", TOKEN);
    rt.block_on(client.write("my-bucket", stream::iter(gpu_points(t0, "plain")))).expect("write");
    check_gpu(&srv, t0, "plain");

    // Gzip-compressed and streamed.
    let gz = ClientBuilder::new(srv.base(), "my-org", TOKEN).gzip(true).build().expect("client");
    rt.block_on(gz.write("my-bucket", stream::iter(gpu_points(t0, "gzip")))).expect("gzip write");
    check_gpu(&srv, t0, "gzip");
}

#[test]
fn the_clients_escaping_and_precisions_survive() {
    let srv = server();
    let rt = runtime();
    let t = (now_ms() - 60 * SEC) / SEC * SEC;
    let client = Client::new(srv.base(), "my-org", TOKEN);
    let tricky = "a b,c=d\\e";
    let text = "said \"hi\", then \\ left";
    let point = DataPoint::builder("esc")
        .tag("who", tricky)
        .field("n", 1.5)
        .field("msg", text)
        .timestamp(t / SEC)
        .build()
        .expect("data point");
    rt.block_on(client.write_with_precision("b", stream::iter([point]), TimestampPrecision::Seconds)).expect("write");
    let got = srv.raw_samples("esc_n", t + SEC, "1m");
    assert_eq!(got, vec![(lbl(&[("__name__", "esc_n"), ("who", tricky)]), vec![(t, "1.5".to_string())])]);
    let ev =
        srv.get(&format!("/api/v1/events?match[]={}&start={}&end={}", enc("esc_msg"), secs(t), secs(t))).success_data();
    assert_eq!(ev, json!([{"metric": {"__name__": "esc_msg", "who": tricky}, "events": [[t as f64 / 1000.0, text]]}]));

    for (precision, ts, v) in [
        (TimestampPrecision::Milliseconds, t + 1, "2"),
        (TimestampPrecision::Microseconds, (t + 2) * 1_000 + 999, "3"),
        (TimestampPrecision::Nanoseconds, (t + 3) * 1_000_000 + 1, "4"),
    ] {
        let p = DataPoint::builder("prec")
            .field("v", v.parse::<f64>().expect("number"))
            .timestamp(ts)
            .build()
            .expect("point");
        rt.block_on(client.write_with_precision("b", stream::iter([p]), precision)).expect("write");
    }
    let got = srv.raw_samples("prec_v", t + SEC, "1m");
    let want: Vec<(i64, String)> =
        [(t + 1, "2"), (t + 2, "3"), (t + 3, "4")].iter().map(|(t, v)| (*t, v.to_string())).collect();
    assert_eq!(got, vec![(lbl(&[("__name__", "prec_v")]), want)]);
}

#[test]
fn the_client_sees_our_errors() {
    let srv = server();
    let rt = runtime();
    let t = now_ms() - 60 * SEC;
    let point = || DataPoint::builder("denied").field("v", 1.0).timestamp(t * 1_000_000).build().expect("point");
    let cases = [
        (Client::new(srv.base(), "o", "wrong-token"), 401, "invalid token"),
        (Client::new(srv.base(), "o", ""), 401, "needs a token with the write scope"),
    ];
    for (client, status, message) in cases {
        match rt.block_on(client.write("b", stream::iter([point()]))) {
            Err(RequestError::Http { status: s, text }) => {
                assert_eq!(s.as_u16(), status, "{text}");
                assert!(text.contains(message), "{text}");
            }
            other => panic!("expected an HTTP error, got {other:?}"),
        }
    }
    // A point 11 minutes ahead: the batch is refused, naming the line.
    let client = Client::new(srv.base(), "o", TOKEN);
    let ahead = DataPoint::builder("denied")
        .field("v", 2.0)
        .timestamp((now_ms() + 11 * 60 * SEC) * 1_000_000)
        .build()
        .expect("point");
    match rt.block_on(client.write("b", stream::iter([point(), ahead]))) {
        Err(RequestError::Http { status, text }) => {
            assert_eq!(status.as_u16(), 400, "{text}");
            assert!(text.contains("line 2, column 1: timestamp more than 10m in the future"), "{text}");
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
    assert_eq!(srv.series("denied_v"), vec![]);
}
