//! Writes through every ingest API of the real server, read back through the Prometheus query API with
//! exact values and timestamps; durability across `kill -9`, SIGTERM and `force_flush`; rewrites and
//! out-of-order writes.

use crate::support::server;

use argus_model::{Labels, Sample};
use argus_store::remote_write::{WriteSeries, encode};
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::json;
use server::{SeriesPoints, Server, enc, lbl, matrix, now_ms, secs};
use std::collections::BTreeMap;
use std::io::Write;

const SEC: i64 = 1000;
const MIN: i64 = 60 * SEC;
const HOUR: i64 = 60 * MIN;

/// A recent time on a whole second, so every written timestamp is exact in the API's seconds.
fn recent() -> i64 {
    (now_ms() - 10 * MIN) / SEC * SEC
}

fn pts(v: &[(i64, &str)]) -> Vec<(i64, String)> {
    v.iter().map(|(t, s)| (*t, s.to_string())).collect()
}

/// Drops `__name__` from result labels (compared separately where it matters).
fn unnamed(mut v: Vec<SeriesPoints>) -> Vec<SeriesPoints> {
    for (l, _) in &mut v {
        l.remove("__name__");
    }
    v
}

/// Writes the `cpu` fixture of the query tests at `t0`, `t0+10s`, `t0+20s`.
fn write_cpu(srv: &Server, t0: i64) {
    let body = [
        format!("cpu,host=a,dc=x usage=0.5 {t0}"),
        format!("cpu,host=a,dc=x usage=1.25 {}", t0 + 10 * SEC),
        format!("cpu,host=a,dc=x usage=2 {}", t0 + 20 * SEC),
        format!("cpu,host=b,dc=x usage=-3,idle=97i {t0}"),
        format!("cpu,host=b,dc=x usage=4e3 {}", t0 + 20 * SEC),
    ]
    .join("\n");
    let r = srv.write_ms(&body);
    assert_eq!(r.status, 204, "{}", r.body);
}

#[test]
fn v2_write_reads_back_through_every_query_endpoint() {
    let srv = Server::start();
    let t0 = recent();
    write_cpu(&srv, t0);
    let a = lbl(&[("dc", "x"), ("host", "a")]);
    let b = lbl(&[("dc", "x"), ("host", "b")]);

    // Instant: the latest sample at or before the evaluation time, stamped with that time.
    let at = t0 + 15 * SEC;
    let got = unnamed(matrix(&srv.query("cpu_usage", at)));
    assert_eq!(got, vec![(a.clone(), pts(&[(at, "1.25")])), (b.clone(), pts(&[(at, "-3")]))]);

    // Range: one point per step, each the latest sample at or before it.
    let s = |n: i64| t0 + n * SEC;
    let got = unnamed(srv.query_range(r#"cpu_usage{host="a"}"#, t0, s(30), "5s"));
    let want = pts(&[
        (s(0), "0.5"),
        (s(5), "0.5"),
        (s(10), "1.25"),
        (s(15), "1.25"),
        (s(20), "2"),
        (s(25), "2"),
        (s(30), "2"),
    ]);
    assert_eq!(got, vec![(a.clone(), want)]);
    let got = unnamed(srv.query_range("cpu_usage", s(-10), s(30), "10s"));
    let want_b = pts(&[(s(0), "-3"), (s(10), "-3"), (s(20), "4000"), (s(30), "4000")]);
    let want_a = pts(&[(s(0), "0.5"), (s(10), "1.25"), (s(20), "2"), (s(30), "2")]);
    assert_eq!(got, vec![(a.clone(), want_a), (b.clone(), want_b)]);
    let got = unnamed(srv.query_range("cpu_idle", s(0), s(0), "1s"));
    assert_eq!(got, vec![(b.clone(), pts(&[(s(0), "97")]))]);

    // Raw samples of a range selector keep their own timestamps.
    let got = srv.raw_samples(r#"cpu_usage{host="b"}"#, s(30), "1m");
    let want = lbl(&[("__name__", "cpu_usage"), ("dc", "x"), ("host", "b")]);
    assert_eq!(got, vec![(want, pts(&[(s(0), "-3"), (s(20), "4000")]))]);

    // Series, over all time and over a window that only host a has a sample in.
    let named = |n: &str, host: &str| lbl(&[("__name__", n), ("dc", "x"), ("host", host)]);
    assert_eq!(
        srv.series(r#"{__name__=~"cpu_.*"}"#),
        vec![named("cpu_idle", "b"), named("cpu_usage", "a"), named("cpu_usage", "b")]
    );
    let r = srv.get(&format!("/api/v1/series?match[]=cpu_usage&start={}&end={}", secs(s(5)), secs(s(15))));
    assert_eq!(r.success_data(), json!([{"__name__": "cpu_usage", "dc": "x", "host": "a"}]));

    // Label names and values.
    assert_eq!(srv.get("/api/v1/labels").success_data(), json!(["__name__", "dc", "host"]));
    assert_eq!(srv.get("/api/v1/label/host/values").success_data(), json!(["a", "b"]));
    assert_eq!(srv.get("/api/v1/label/__name__/values").success_data(), json!(["cpu_idle", "cpu_usage"]));
    let r = srv.get(&format!("/api/v1/label/host/values?match[]={}", enc("cpu_idle")));
    assert_eq!(r.success_data(), json!(["b"]));
    assert_eq!(srv.get("/api/v1/label/nope/values").success_data(), json!([]));

    // The same queries as form-encoded POSTs.
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let r = srv.post("/api/v1/query", &form, format!("query={}&time={}", enc(r#"cpu_usage{host="a"}"#), secs(at)));
    assert_eq!(unnamed(matrix(&r.success_data())), vec![(a.clone(), pts(&[(at, "1.25")]))]);
    let r = srv.post(
        "/api/v1/query_range",
        &form,
        format!("query=cpu_idle&start={}&end={}&step=20", secs(s(0)), secs(s(20))),
    );
    assert_eq!(unnamed(matrix(&r.success_data())), vec![(b.clone(), pts(&[(s(0), "97"), (s(20), "97")]))]);
    let r = srv.post("/api/v1/series", &form, format!("match[]={}", enc(r#"cpu_usage{host="b"}"#)));
    assert_eq!(r.success_data(), json!([{"__name__": "cpu_usage", "dc": "x", "host": "b"}]));
    let r = srv.post("/api/v1/labels", &form, format!("match[]={}", enc("cpu_idle")));
    assert_eq!(r.success_data(), json!(["__name__", "dc", "host"]));
}

#[test]
fn plain_selector_results_keep_the_metric_name() {
    let srv = Server::start();
    let t0 = recent();
    write_cpu(&srv, t0);
    let want = lbl(&[("__name__", "cpu_idle"), ("dc", "x"), ("host", "b")]);
    assert_eq!(matrix(&srv.query("cpu_idle", t0)), vec![(want.clone(), pts(&[(t0, "97")]))]);
    assert_eq!(srv.query_range("cpu_idle", t0, t0, "1s"), vec![(want, pts(&[(t0, "97")]))]);
}

#[test]
fn v1_write_adds_db_label_unless_the_line_has_one() {
    let srv = Server::start();
    let t = recent();
    let body = format!("mem,host=a used=1 {t}\nmem,host=b,db=own used=2 {t}");
    let r = srv.post("/write?db=telegraf&precision=ms", &[], body);
    assert_eq!(r.status, 204, "{}", r.body);
    let r = srv.post("/write?precision=ms", &[], format!("mem,host=c used=3 {t}"));
    assert_eq!(r.status, 204, "{}", r.body);
    let r = srv.post("/api/v2/write?org=myorg&bucket=telegraf&precision=ms", &[], format!("mem,host=d used=4 {t}"));
    assert_eq!(r.status, 204, "{}", r.body);
    let got = srv.raw_samples("mem_used", t, "1m");
    let row = |l: &[(&str, &str)], v: &str| {
        let mut l = l.to_vec();
        l.push(("__name__", "mem_used"));
        (lbl(&l), pts(&[(t, v)]))
    };
    assert_eq!(
        got,
        vec![
            row(&[("db", "own"), ("host", "b")], "2"),
            row(&[("db", "telegraf"), ("host", "a")], "1"),
            row(&[("host", "c")], "3"),
            row(&[("host", "d")], "4"),
        ]
    );
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(data).expect("gzip");
    e.finish().expect("gzip")
}

#[test]
fn gzip_bodies_are_accepted_on_both_line_protocol_apis() {
    let srv = Server::start();
    let t = recent();
    let cases = [
        ("/api/v2/write?org=o&bucket=b&precision=ms", "gzip", "v2"),
        ("/write?db=d&precision=ms", "gzip", "v1"),
        ("/api/v2/write?org=o&bucket=b&precision=ms", "x-gzip", "x"),
    ];
    for (i, (path, encoding, api)) in cases.into_iter().enumerate() {
        let body = gzip(format!("gz,api={api} value={i} {t}\ngz,api={api} value={} {}", i + 10, t + SEC).as_bytes());
        let r = srv.post(path, &[("Content-Encoding", encoding)], body);
        assert_eq!(r.status, 204, "{api}: {}", r.body);
        let got = unnamed(srv.raw_samples(&format!(r#"gz_value{{api="{api}"}}"#), t + SEC, "1m"));
        assert_eq!(got.len(), 1, "{api}: {got:?}");
        assert_eq!(got[0].1, vec![(t, i.to_string()), (t + SEC, (i + 10).to_string())], "{api}");
    }
}

#[test]
fn every_precision_stores_the_same_millisecond() {
    let srv = Server::start();
    // On a whole hour, so minutes and hours are exact too.
    let t = (now_ms() - HOUR) / HOUR * HOUR;
    let v2 = |p: &str| format!("/api/v2/write?org=o&bucket=b&precision={p}");
    let v1 = |p: &str| format!("/write?precision={p}");
    // (case, path, timestamp as written): sub-unit digits of finer precisions must be cut off, not rounded.
    let cases: Vec<(&str, String, i64)> = vec![
        ("v2_ns", v2("ns"), t * 1_000_000 + 999_999),
        ("v2_us", v2("us"), t * 1_000 + 999),
        ("v2_ms", v2("ms"), t),
        ("v2_s", v2("s"), t / SEC),
        ("v2_default_ns", "/api/v2/write?org=o&bucket=b".into(), t * 1_000_000),
        ("v1_n", v1("n"), t * 1_000_000 + 1),
        ("v1_ns", v1("ns"), t * 1_000_000),
        ("v1_u", v1("u"), t * 1_000 + 500),
        ("v1_us", v1("us"), t * 1_000),
        ("v1_ms", v1("ms"), t),
        ("v1_s", v1("s"), t / SEC),
        ("v1_m", v1("m"), t / MIN),
        ("v1_h", v1("h"), t / HOUR),
        ("v1_default_ns", "/write".into(), t * 1_000_000 + 42),
    ];
    for (i, (case, path, ts)) in cases.iter().enumerate() {
        let r = srv.post(path, &[], format!("prec,case={case} value={i} {ts}"));
        assert_eq!(r.status, 204, "{case}: {}", r.body);
    }
    let got: BTreeMap<String, Vec<(i64, String)>> =
        srv.raw_samples("prec_value", now_ms(), "2h").into_iter().map(|(l, p)| (l["case"].clone(), p)).collect();
    let want: BTreeMap<String, Vec<(i64, String)>> =
        cases.iter().enumerate().map(|(i, (case, _, _))| (case.to_string(), vec![(t, i.to_string())])).collect();
    assert_eq!(got, want);

    // No timestamp: the server's clock at the time of the write, cut to the write's precision.
    for (case, path, unit) in [("ns", v2("ns"), 1), ("ms", v2("ms"), 1), ("s", v2("s"), SEC), ("v1_m", v1("m"), MIN)] {
        let before = now_ms();
        let r = srv.post(&path, &[], format!("stampless,case={case} value=1"));
        assert_eq!(r.status, 204, "{case}: {}", r.body);
        let after = now_ms();
        let got = srv.raw_samples(&format!(r#"stampless_value{{case="{case}"}}"#), after, "2m");
        assert_eq!(got.len(), 1, "{case}: {got:?}");
        let stamped = got[0].1[0].0;
        assert_eq!(stamped % unit, 0, "{case}: {stamped} is not a whole unit");
        assert!((before / unit * unit..=after).contains(&stamped), "{case}: {before} <= {stamped} <= {after}");
    }
}

fn flush(srv: &Server) {
    let r = srv.post("/internal/force_flush", &[], "");
    assert_eq!((r.status, r.body.as_str()), (200, "flushed\n"));
}

fn events(srv: &Server, selector: &str, start: i64, end: i64) -> serde_json::Value {
    srv.get(&format!("/api/v1/events?match[]={}&start={}&end={}", enc(selector), secs(start), secs(end))).success_data()
}

#[test]
fn string_fields_are_readable_as_events() {
    let srv = Server::start();
    let t = recent();
    let body = [
        format!(r#"deploy,svc=api msg="v1.2 rolled out",replicas=3i {t}"#),
        format!(r#"deploy,svc=api msg="rollback \"quick\", then\\retry" {}"#, t + SEC),
        format!(r#"deploy,svc=web msg="web up" {}"#, t + 2 * SEC),
    ]
    .join("\n");
    let r = srv.write_ms(&body);
    assert_eq!(r.status, 204, "{}", r.body);
    let want = json!([{
        "metric": {"__name__": "deploy_msg", "svc": "api"},
        "events": [[t as f64 / 1000.0, "v1.2 rolled out"], [(t + SEC) as f64 / 1000.0, "rollback \"quick\", then\\retry"]],
    }]);
    assert_eq!(events(&srv, r#"deploy_msg{svc="api"}"#, t, t + 10 * SEC), want);
    // The window is inclusive at both ends and excludes what lies outside it.
    let only_web = events(&srv, "deploy_msg", t + 2 * SEC, t + 2 * SEC);
    assert_eq!(
        only_web,
        json!([{"metric": {"__name__": "deploy_msg", "svc": "web"}, "events": [[(t + 2 * SEC) as f64 / 1000.0, "web up"]]}])
    );
    assert_eq!(events(&srv, "deploy_msg", t - MIN, t - SEC), json!([]));
    // Numeric fields of the same line are samples; the string field is not.
    let got = unnamed(srv.raw_samples("deploy_replicas", t + SEC, "1m"));
    assert_eq!(got, vec![(lbl(&[("svc", "api")]), pts(&[(t, "3")]))]);
    assert_eq!(srv.raw_samples("deploy_msg", t + 10 * SEC, "1m"), vec![]);
}

#[test]
fn identical_event_rewrite_is_a_noop() {
    let srv = Server::start();
    let t = recent();
    let line = format!(r#"deploy,svc=api msg="v1.2" {t}"#);
    for _ in 0..2 {
        let r = srv.write_ms(&line);
        assert_eq!(r.status, 204, "{}", r.body);
    }
    let want = json!([{"metric": {"__name__": "deploy_msg", "svc": "api"}, "events": [[t as f64 / 1000.0, "v1.2"]]}]);
    assert_eq!(events(&srv, "deploy_msg", t, t), want);
}

#[test]
fn remote_write_is_readable_back() {
    let srv = Server::start();
    let t = recent();
    let series = vec![
        WriteSeries {
            labels: Labels::from_pairs([("__name__", "up"), ("job", "node"), ("instance", "h1:9100")]),
            samples: vec![Sample::new(t, 1.0), Sample::new(t + 15 * SEC, 0.0), Sample::new(t + 30 * SEC, 1.0)],
        },
        WriteSeries {
            labels: Labels::from_pairs([("__name__", "gpu_temp_celsius"), ("gpu", "0")]),
            samples: vec![Sample::new(t + 1, 71.5), Sample::new(t + 15 * SEC + 1, -0.125)],
        },
    ];
    let body = encode(&series).expect("encode");
    let headers = [
        ("Content-Encoding", "snappy"),
        ("Content-Type", "application/x-protobuf"),
        ("X-Prometheus-Remote-Write-Version", "0.1.0"),
    ];
    let r = srv.post("/api/v1/write", &headers, body);
    assert_eq!(r.status, 204, "{}", r.body);
    let got = srv.raw_samples(r#"{__name__=~"up|gpu_temp_celsius"}"#, t + MIN, "2m");
    let want = vec![
        (lbl(&[("__name__", "gpu_temp_celsius"), ("gpu", "0")]), pts(&[(t + 1, "71.5"), (t + 15 * SEC + 1, "-0.125")])),
        (
            lbl(&[("__name__", "up"), ("instance", "h1:9100"), ("job", "node")]),
            pts(&[(t, "1"), (t + 15 * SEC, "0"), (t + 30 * SEC, "1")]),
        ),
    ];
    assert_eq!(got, want);
    let got = unnamed(srv.query_range("up", t, t + 30 * SEC, "10s"));
    let want = pts(&[(t, "1"), (t + 10 * SEC, "1"), (t + 20 * SEC, "0"), (t + 30 * SEC, "1")]);
    assert_eq!(got, vec![(lbl(&[("instance", "h1:9100"), ("job", "node")]), want)]);
}

/// The durability fixture: a few series over a few minutes, and a reader of all of it.
fn write_fixture(srv: &Server, t0: i64, tag: &str) {
    let body: Vec<String> = (0..5)
        .flat_map(|i| (0..3).map(move |h| (i, h)))
        .map(|(i, h)| format!("dur,host=h{h},round={tag} value={}.5 {}", i * 10 + h, t0 + i * MIN))
        .collect();
    let r = srv.write_ms(&body.join("\n"));
    assert_eq!(r.status, 204, "{}", r.body);
}

fn read_fixture(srv: &Server, t0: i64) -> Vec<SeriesPoints> {
    srv.raw_samples("dur_value", t0 + 10 * MIN, "1h")
}

fn fixture_expectation(t0: i64, rounds: &[&str]) -> Vec<SeriesPoints> {
    let mut out = Vec::new();
    for h in 0..3 {
        for round in rounds {
            let l = lbl(&[("__name__", "dur_value"), ("host", &format!("h{h}")), ("round", round)]);
            let p = (0..5).map(|i| (t0 + i * MIN, format!("{}.5", i * 10 + h))).collect();
            out.push((l, p));
        }
    }
    out
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    let mut srv = Server::start();
    let t0 = now_ms() - 20 * MIN;
    write_fixture(&srv, t0, "r1");
    let r = srv.write_ms(&format!(r#"crash,svc=api msg="before the crash" {t0}"#));
    assert_eq!(r.status, 204, "{}", r.body);
    srv.kill9();
    srv.restart();
    assert_eq!(read_fixture(&srv, t0), fixture_expectation(t0, &["r1"]));
    let want = json!([{"metric": {"__name__": "crash_msg", "svc": "api"}, "events": [[t0 as f64 / 1000.0, "before the crash"]]}]);
    assert_eq!(events(&srv, "crash_msg", t0, t0), want);
    // The recovered store takes writes, and a second crash loses neither round.
    write_fixture(&srv, t0, "r2");
    srv.kill9();
    srv.restart();
    assert_eq!(read_fixture(&srv, t0), fixture_expectation(t0, &["r1", "r2"]));
    srv.assert_healthy_and_writable(&[]);
}

#[test]
fn sigterm_exits_zero_and_leaves_the_data_in_blocks() {
    let mut srv = Server::start();
    let t0 = now_ms() - 20 * MIN;
    write_fixture(&srv, t0, "r1");
    let status = srv.terminate();
    assert_eq!(status.code(), Some(0), "exit status {status}; log:\n{}", srv.log());
    let blocks: Vec<String> = std::fs::read_dir(srv.data_dir().join("blocks"))
        .expect("blocks dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("b-"))
        .collect();
    assert!(!blocks.is_empty(), "no block written on shutdown");
    srv.restart();
    // Everything came back from blocks: the WAL had been truncated, so the head starts empty.
    assert_eq!(srv.metric("argus_store_head_samples"), Some(0.0));
    assert!(srv.metric("argus_store_blocks").unwrap_or(0.0) >= 1.0);
    assert_eq!(read_fixture(&srv, t0), fixture_expectation(t0, &["r1"]));
}

#[test]
fn force_flush_changes_no_answer() {
    let srv = Server::start();
    let t0 = recent();
    write_cpu(&srv, t0);
    let r = srv.write_ms(&format!(r#"note,svc=api msg="flushed soon" {t0}"#));
    assert_eq!(r.status, 204, "{}", r.body);
    let snapshot = |srv: &Server| {
        (
            srv.query_range("cpu_usage", t0, t0 + 30 * SEC, "5s"),
            srv.raw_samples(r#"{__name__=~"cpu_.*"}"#, t0 + MIN, "2m"),
            srv.series(r#"{__name__=~".+"}"#),
            srv.get("/api/v1/label/host/values").success_data(),
            events(srv, "note_msg", t0, t0),
        )
    };
    let before = snapshot(&srv);
    assert_eq!(before.1.len(), 3, "{:?}", before.1);
    assert_eq!(before.4.as_array().map(Vec::len), Some(1), "{}", before.4);
    flush(&srv);
    assert_eq!(srv.metric("argus_store_head_samples"), Some(0.0));
    assert!(srv.metric("argus_store_blocks").unwrap_or(0.0) >= 1.0);
    assert_eq!(snapshot(&srv), before);
}

#[test]
fn rewrites_at_the_same_millisecond_replace_the_old_value() {
    let mut srv = Server::start();
    let t = recent();
    let read = |srv: &Server| unnamed(srv.raw_samples("same_value", t + SEC, "1m"));
    let write = |srv: &Server, v: &str| {
        let r = srv.write_ms(&format!("same,k=v value={v} {t}"));
        assert_eq!(r.status, 204, "{}", r.body);
    };
    let one = |v: &str| vec![(lbl(&[("k", "v")]), pts(&[(t, v)]))];
    write(&srv, "1");
    write(&srv, "1");
    assert_eq!(read(&srv), one("1"), "identical rewrite");
    flush(&srv);
    assert_eq!(srv.metric("argus_store_head_samples"), Some(0.0));
    write(&srv, "1");
    assert_eq!(read(&srv), one("1"), "identical rewrite over a block");
    write(&srv, "2");
    assert_eq!(read(&srv), one("2"), "new value in the head");
    flush(&srv);
    assert_eq!(read(&srv), one("2"), "after a flush");
    write(&srv, "3");
    assert_eq!(read(&srv), one("3"), "head over block");
    srv.kill9();
    srv.restart();
    assert_eq!(read(&srv), one("3"), "WAL over block after a crash");
    flush(&srv);
    assert_eq!(read(&srv), one("3"), "newer block over older block");
}

#[test]
fn out_of_order_writes_are_accepted_and_readable() {
    let srv = Server::start();
    let now = recent();
    let (new, older, oldest) = (now, now - 3 * HOUR, now - 5 * HOUR);
    let write = |t: i64, v: &str| {
        let r = srv.write_ms(&format!("ooo,k=v value={v} {t}"));
        assert_eq!(r.status, 204, "{}", r.body);
    };
    write(new, "3");
    write(older, "2");
    write(older + SEC, "2.5");
    assert_eq!(
        unnamed(srv.raw_samples("ooo_value", now, "6h")),
        vec![(lbl(&[("k", "v")]), pts(&[(older, "2"), (older + SEC, "2.5"), (new, "3")]))]
    );
    // Older than what was already flushed to a block.
    flush(&srv);
    write(oldest, "1");
    let want = pts(&[(oldest, "1"), (older, "2"), (older + SEC, "2.5"), (new, "3")]);
    assert_eq!(unnamed(srv.raw_samples("ooo_value", now, "6h")), vec![(lbl(&[("k", "v")]), want)]);
    let got = unnamed(srv.query_range("ooo_value", oldest, oldest + 10 * MIN, "5m"));
    assert_eq!(got, vec![(lbl(&[("k", "v")]), pts(&[(oldest, "1"), (oldest + 5 * MIN, "1")]))]);
}
