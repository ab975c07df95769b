//! The store backends against real servers on loopback. The same samples, written through a remote
//! backend and through the embedded one, read back equal: raw selects, PromQL instant and range
//! queries. Remotes: VictoriaMetrics single-node (remote write and line protocol), its cluster layout
//! and Mimir's and Thanos' (with their tenant headers) through a path-rewriting proxy, Prometheus 2.42,
//! and our own server. The InfluxDB 2 backend writes to VictoriaMetrics' and our `/api/v2/write` and is
//! read back through PromQL; its Flux reads meet a recorded reply. Errors say whether to retry.
//!
//! VictoriaMetrics and Prometheus come from Debian (scripts/install-peers.sh, which scripts/test.sh
//! runs first); a check needing one that is absent is skipped with a message.

use crate::support::server;

use crate::support::peers;

use argus_model::{Labels, MatchOp, Matcher, Sample, Shard};
use argus_store::backend::{
    self, BackendError, Embedded, Flavour, InfluxSpec, QueryValue, RemoteOptions, RemoteSpec, Secret, StoreBackend,
    WriteProtocol,
};
use argus_store::remote_write::WriteSeries;
use argus_store::{Db, Options, Series};
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::header::{AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use expect_test::expect;
use peers::{Peer, installed};
use server::{Server, free_port, now_ms};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

const SEC: i64 = 1000;
const STEP: i64 = 10 * SEC;

// === the data and the questions ===

/// Six samples 10 s apart from `t0` for four series; values VictoriaMetrics keeps exactly.
fn gpu_series(t0: i64) -> Vec<WriteSeries> {
    let s = |name: &str, host: &str, gpu: &str, values: [f64; 6]| WriteSeries {
        labels: Labels::from_pairs([("__name__", name), ("host", host), ("gpu", gpu)]),
        samples: values.iter().enumerate().map(|(i, v)| Sample::new(t0 + i as i64 * STEP, *v)).collect(),
    };
    vec![
        s("gpu_util", "a", "0", [0.5, 75.25, 100.0, 42.0, -3.0, 7.125]),
        s("gpu_util", "a", "1", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        s("gpu_util", "b", "0", [9.0, 8.0, 7.0, 6.0, 5.0, 4.0]),
        s("gpu_memory_used_bytes", "a", "0", [8e9, 8.5e9, 1.6e10, 0.0, 1024.0, 2048.0]),
    ]
}

fn m(name: &str, op: MatchOp, value: &str) -> Matcher {
    Matcher::new(name, op, value).expect("matcher")
}

/// Raw selects and PromQL queries the current engine supports, rendered with times relative to `t0`.
async fn answers(b: &dyn StoreBackend, t0: i64) -> Result<Vec<String>, BackendError> {
    use MatchOp::*;
    let mut out = Vec::new();
    let selects = [
        (vec![m("__name__", Equal, "gpu_util"), m("host", Equal, "a")], t0, t0 + 5 * STEP),
        (vec![m("__name__", RegexMatch, "gpu_.*"), m("gpu", NotEqual, "1")], t0 + STEP, t0 + 3 * STEP),
        (vec![m("__name__", Equal, "gpu_util"), m("host", RegexMatch, "b|c")], t0 + 2 * STEP, t0 + 2 * STEP),
        (vec![m("__name__", Equal, "no_such_metric")], t0, t0 + 5 * STEP),
    ];
    for (ms, start, end) in selects {
        let got = b.select(&ms, start, end).await?;
        let ms: Vec<String> = ms.iter().map(ToString::to_string).collect();
        out.push(format!("select {{{}}} [{}, {}]:{}", ms.join(","), start - t0, end - t0, series(&got, t0)));
    }
    for (q, t) in [
        (r#"gpu_util{host="a"}"#, t0 + 2 * STEP),
        ("gpu_memory_used_bytes", t0 + 5 * STEP),
        (r#"gpu_util{host="b"}[25s]"#, t0 + 5 * STEP),
    ] {
        out.push(format!("instant {q} @{}:{}", t - t0, value(b.query_instant(q, t).await?, t0)));
    }
    for (q, start, end) in [
        (r#"gpu_util{host="a"}"#, t0, t0 + 5 * STEP),
        (r#"gpu_memory_used_bytes{gpu="0"}"#, t0 + 5 * SEC, t0 + 45 * SEC),
    ] {
        let v = b.query_range(q, start, end, STEP).await?;
        out.push(format!("range {q} [{}, {}] step 10s:{}", start - t0, end - t0, value(v, t0)));
    }
    Ok(out)
}

fn series(s: &[Series], t0: i64) -> String {
    let mut lines: Vec<String> = s
        .iter()
        .map(|s| {
            let pts: Vec<String> = s.samples.iter().map(|x| format!("{}={}", x.t - t0, x.v)).collect();
            format!("\n  {} {}", s.labels, pts.join(" "))
        })
        .collect();
    lines.sort();
    lines.concat()
}

fn value(v: QueryValue, t0: i64) -> String {
    match v {
        QueryValue::Vector(v) => {
            let mut lines: Vec<String> = v.iter().map(|(l, x)| format!("\n  {l} {}={}", x.t - t0, x.v)).collect();
            lines.sort();
            format!(" vector{}", lines.concat())
        }
        QueryValue::Matrix(m) => format!(" matrix{}", series(&m, t0)),
        QueryValue::Scalar(x) => format!(" scalar {}={}", x.t - t0, x.v),
        QueryValue::String(t, s) => format!(" string {}={s:?}", t - t0),
    }
}

/// The embedded backend's answers, checked in full so that "equal to embedded" means something.
fn embedded_answers(rt: &Runtime, t0: i64) -> Vec<String> {
    let dir = tempfile::tempdir().expect("data dir");
    let db = Arc::new(Db::open(Options::new(dir.path().to_path_buf())).expect("open store"));
    let b = Embedded::new(db, argus_store::query::QueryLimits::default());
    let want = rt.block_on(async {
        b.write(gpu_series(t0)).await.expect("embedded write");
        answers(&b, t0).await.expect("embedded answers")
    });
    expect![[r#"
        select {__name__="gpu_util",host="a"} [0, 50000]:
          gpu_util{gpu="0", host="a"} 0=0.5 10000=75.25 20000=100 30000=42 40000=-3 50000=7.125
          gpu_util{gpu="1", host="a"} 0=1 10000=2 20000=3 30000=4 40000=5 50000=6
        select {__name__=~"gpu_.*",gpu!="1"} [10000, 30000]:
          gpu_memory_used_bytes{gpu="0", host="a"} 10000=8500000000 20000=16000000000 30000=0
          gpu_util{gpu="0", host="a"} 10000=75.25 20000=100 30000=42
          gpu_util{gpu="0", host="b"} 10000=8 20000=7 30000=6
        select {__name__="gpu_util",host=~"b|c"} [20000, 20000]:
          gpu_util{gpu="0", host="b"} 20000=7
        select {__name__="no_such_metric"} [0, 50000]:
        instant gpu_util{host="a"} @20000: vector
          gpu_util{gpu="0", host="a"} 20000=100
          gpu_util{gpu="1", host="a"} 20000=3
        instant gpu_memory_used_bytes @50000: vector
          gpu_memory_used_bytes{gpu="0", host="a"} 50000=2048
        instant gpu_util{host="b"}[25s] @50000: matrix
          gpu_util{gpu="0", host="b"} 30000=6 40000=5 50000=4
        range gpu_util{host="a"} [0, 50000] step 10s: matrix
          gpu_util{gpu="0", host="a"} 0=0.5 10000=75.25 20000=100 30000=42 40000=-3 50000=7.125
          gpu_util{gpu="1", host="a"} 0=1 10000=2 20000=3 30000=4 40000=5 50000=6
        range gpu_memory_used_bytes{gpu="0"} [5000, 45000] step 10s: matrix
          gpu_memory_used_bytes{gpu="0", host="a"} 5000=8000000000 15000=8500000000 25000=16000000000 35000=0 45000=1024"#]]
    .assert_eq(&want.join("\n"));
    want
}

/// Asks until the answers equal `want` (remote stores make writes visible within a second or so).
fn assert_answers(rt: &Runtime, b: &dyn StoreBackend, t0: i64, want: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match rt.block_on(answers(b, t0)) {
            Ok(got) if got == want => return,
            Ok(got) if Instant::now() > deadline => {
                assert_eq!(got.join("\n"), want.join("\n"), "{} answers differ from embedded", b.describe())
            }
            Err(e) if Instant::now() > deadline => panic!("{}: {e}", b.describe()),
            _ => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}

/// A time ten minutes back, on a 10 s boundary: inside every retention, old enough that no engine
/// holds it back as too recent, aligned with the range queries' steps.
fn t0() -> i64 {
    (now_ms() - 10 * 60 * SEC) / STEP * STEP
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

fn prometheus_backend(rt: &Runtime, spec: RemoteSpec) -> Arc<dyn StoreBackend> {
    let opts = spec.validate().expect("valid [store.remote]");
    rt.block_on(async { backend::connect(RemoteOptions::Prometheus(opts)) }).expect("backend")
}

fn remote(flavour: Flavour, url: &str, write: WriteProtocol) -> RemoteSpec {
    RemoteSpec { flavour, url: Some(url.into()), write, timeout: Some("10s".into()), ..Default::default() }
}

fn influx_backend(rt: &Runtime, url: &str, token: &str) -> Arc<dyn StoreBackend> {
    let spec = InfluxSpec {
        url: url.into(),
        org: "my-org".into(),
        bucket: "metrics".into(),
        token: Secret::new(token),
        timeout: Some("10s".into()),
        ca_file: None,
    };
    let opts = spec.validate().expect("valid [store.influxdb2]");
    rt.block_on(async { backend::connect(RemoteOptions::Influxdb2(opts)) }).expect("backend")
}

/// Serves an axum app on a loopback port of the runtime; returns its base URL.
fn serve_app(rt: &Runtime, app: Router) -> String {
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind");
    let addr = listener.local_addr().expect("addr");
    rt.spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

// === VictoriaMetrics ===

fn check_victoria_metrics(write: WriteProtocol) {
    let Some(vm) = Peer::victoria_metrics() else { return };
    let rt = runtime();
    let t0 = t0();
    let want = embedded_answers(&rt, t0);
    let b = prometheus_backend(&rt, remote(Flavour::VictoriaMetrics, &vm.base, write));
    rt.block_on(b.write(gpu_series(t0))).expect("write to victoriametrics");
    vm.flush();
    assert_answers(&rt, b.as_ref(), t0, &want);
}

#[test]
fn victoriametrics_by_remote_write_answers_as_embedded() {
    check_victoria_metrics(WriteProtocol::RemoteWrite);
}

#[test]
fn victoriametrics_by_line_protocol_answers_as_embedded() {
    check_victoria_metrics(WriteProtocol::LineProtocol);
}

/// Maps one flavour's paths of one tenant onto VictoriaMetrics single-node's, refusing all else: the
/// cluster layout (tenant in the path), Mimir's and Thanos' (tenant in a header, which must be there,
/// as a multi-tenant Mimir requires).
struct LayoutProxy {
    upstream: String,
    flavour: Flavour,
    tenant: String,
    http: reqwest::Client,
    seen: Mutex<Vec<String>>,
}

impl LayoutProxy {
    fn new(upstream: &str, flavour: Flavour, tenant: &str) -> LayoutProxy {
        let (upstream, tenant) = (upstream.to_string(), tenant.to_string());
        LayoutProxy { upstream, flavour, tenant, http: reqwest::Client::new(), seen: Mutex::default() }
    }

    fn single_node_path(&self, path: &str, headers: &HeaderMap) -> Option<String> {
        let api = |rest: &str| rest.strip_prefix("/api/v1/").map(|api| format!("/api/v1/{api}"));
        let tenant_header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()) == Some(&self.tenant);
        match self.flavour {
            Flavour::VictoriaMetricsCluster => {
                let (kind, rest) = path.strip_prefix('/')?.split_once('/')?;
                let (tenant, rest) = rest.split_once('/')?;
                if tenant != self.tenant {
                    return None;
                }
                match (kind, rest) {
                    ("insert", "prometheus/api/v1/write") => Some("/api/v1/write".into()),
                    ("insert", "influx/api/v2/write") => Some("/api/v2/write".into()),
                    ("select", r) => api(r.strip_prefix("prometheus")?),
                    _ => None,
                }
            }
            Flavour::Mimir if tenant_header("x-scope-orgid") => match path {
                "/api/v1/push" => Some("/api/v1/write".into()),
                p => api(p.strip_prefix("/prometheus")?),
            },
            Flavour::Thanos if tenant_header("thanos-tenant") => match path {
                "/api/v1/receive" => Some("/api/v1/write".into()),
                // Prometheus' own write path is not Receive's.
                "/api/v1/write" => None,
                p => api(p),
            },
            _ => None,
        }
    }
}

async fn forward(State(p): State<Arc<LayoutProxy>>, req: axum::extract::Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    p.seen.lock().expect("lock").push(path.clone());
    let Some(target) = p.single_node_path(&path, &parts.headers) else {
        let why = format!("not a {} path of tenant {}: {path}", p.flavour.name(), p.tenant);
        return (StatusCode::NOT_FOUND, why).into_response();
    };
    let query = parts.uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let body = axum::body::to_bytes(body, 64 << 20).await.expect("request body");
    let mut req = p.http.request(parts.method, format!("{}{target}{query}", p.upstream)).body(body);
    for h in [CONTENT_TYPE, CONTENT_ENCODING] {
        if let Some(v) = parts.headers.get(&h) {
            req = req.header(h, v);
        }
    }
    let resp = req.send().await.expect("upstream");
    let (status, ct) = (resp.status(), resp.headers().get(CONTENT_TYPE).cloned());
    let mut out = (status, resp.bytes().await.expect("upstream body")).into_response();
    if let Some(ct) = ct {
        out.headers_mut().insert(CONTENT_TYPE, ct);
    }
    out
}

/// Writes and reads through `flavour`'s paths for `tenant`, VictoriaMetrics single-node behind them,
/// and checks the answers and that only that layout's paths were asked for.
fn check_layout(flavour: Flavour, write: WriteProtocol, tenant: &str, write_path: &str, read_prefix: &str) {
    let rt = runtime();
    let t0 = t0();
    let want = embedded_answers(&rt, t0);
    let Some(vm) = Peer::victoria_metrics() else { return };
    let proxy = Arc::new(LayoutProxy::new(&vm.base, flavour, tenant));
    let url = serve_app(&rt, Router::new().fallback(forward).with_state(proxy.clone()));
    let spec = RemoteSpec { tenant: Some(tenant.into()), ..remote(flavour, &url, write) };
    let b = prometheus_backend(&rt, spec);
    rt.block_on(b.write(gpu_series(t0))).expect("write through the layout's paths");
    vm.flush();
    assert_answers(&rt, b.as_ref(), t0, &want);
    let seen = proxy.seen.lock().expect("lock").clone();
    assert!(seen.iter().any(|p| p == write_path), "{write_path} not among {seen:?}");
    assert!(seen.contains(&format!("{read_prefix}/api/v1/query_range")), "{seen:?}");
    assert!(seen.contains(&format!("{read_prefix}/api/v1/query")), "{seen:?}");
    let mut h = HeaderMap::new();
    let header = match flavour {
        Flavour::Mimir => Some("x-scope-orgid"),
        Flavour::Thanos => Some("thanos-tenant"),
        _ => None,
    };
    if let Some(name) = header {
        h.insert(name, tenant.parse().expect("header value"));
    }
    assert!(seen.iter().all(|p| proxy.single_node_path(p, &h).is_some()), "only the layout's paths: {seen:?}");
}

#[test]
fn victoriametrics_cluster_paths_answer_as_embedded() {
    if !installed("victoria-metrics", "-version") {
        return;
    }
    let cluster = Flavour::VictoriaMetricsCluster;
    let rw = WriteProtocol::RemoteWrite;
    check_layout(cluster, rw, "7:3", "/insert/7:3/prometheus/api/v1/write", "/select/7:3/prometheus");
    let lp = WriteProtocol::LineProtocol;
    check_layout(cluster, lp, "42", "/insert/42/influx/api/v2/write", "/select/42/prometheus");
}

/// Mimir and Thanos are not packaged here: their path layouts and tenant headers are checked against
/// a proxy that refuses anything else (and any request without the tenant header), in front of
/// VictoriaMetrics single-node, which speaks the same remote write and query API.
#[test]
fn mimir_and_thanos_paths_and_tenant_headers_answer_as_embedded() {
    if !installed("victoria-metrics", "-version") {
        return;
    }
    let rw = WriteProtocol::RemoteWrite;
    check_layout(Flavour::Mimir, rw, "team-a", "/api/v1/push", "/prometheus");
    check_layout(Flavour::Thanos, rw, "team-b", "/api/v1/receive", "");
}

// === Prometheus and our own server ===

#[test]
fn prometheus_answers_as_embedded() {
    let Some(prom) = Peer::prometheus() else { return };
    let base = &prom.base;
    let rt = runtime();
    let t0 = t0();
    let want = embedded_answers(&rt, t0);
    let b = prometheus_backend(&rt, remote(Flavour::Prometheus, base, WriteProtocol::RemoteWrite));
    rt.block_on(b.write(gpu_series(t0))).expect("remote write to prometheus");
    assert_answers(&rt, b.as_ref(), t0, &want);
}

#[test]
fn our_server_answers_as_embedded_and_checks_the_token() {
    // The SHA-256 of "tok", for reading and writing.
    let srv = Server::with_config(
        "[[auth.tokens]]\nname = \"backend\"\nscopes = [\"read\", \"write\"]\n\
         sha256 = \"1a7674eb4ee78df7e1ac439a93c3fa8e3c945784d4dec9fd8e3011738b2f1d62\"\n",
    );
    let rt = runtime();
    let t0 = t0();
    let want = embedded_answers(&rt, t0);
    let spec = |token: &str| RemoteSpec {
        bearer_token: Some(Secret::new(token)),
        ..remote(Flavour::Prometheus, srv.base(), WriteProtocol::RemoteWrite)
    };
    let denied = prometheus_backend(&rt, spec("wrong"));
    match rt.block_on(denied.write(gpu_series(t0))) {
        Err(e @ BackendError::Status { status: 401, .. }) => assert!(!e.is_retryable()),
        other => panic!("expected a 401, got {other:?}"),
    }
    let b = prometheus_backend(&rt, spec("tok"));
    rt.block_on(b.write(gpu_series(t0))).expect("remote write to argus");
    assert_answers(&rt, b.as_ref(), t0, &want);

    // A shard's range query is answered with that shard's series only, by the server itself: the
    // shards' answers partition the whole answer, and a raw request carries only the owned series.
    let (start, end, q) = (t0, t0 + 5 * STEP, "gpu_util or gpu_memory_used_bytes");
    let by = ["host".to_string(), "gpu".to_string()];
    let QueryValue::Matrix(all) = rt.block_on(b.query_range(q, start, end, STEP)).unwrap() else { panic!("matrix") };
    let mut union = Vec::new();
    for i in 0..2 {
        let shard = Shard::new(i, 2).unwrap();
        let QueryValue::Matrix(mine) = rt.block_on(b.query_range_shard(q, start, end, STEP, shard, &by)).unwrap()
        else {
            panic!("matrix")
        };
        let owned: Vec<&Series> = all.iter().filter(|s| shard.owns_series(&s.labels, &by)).collect();
        assert!(!owned.is_empty() && owned.len() < all.len(), "the test's series split over both shards");
        assert_eq!(mine.iter().collect::<Vec<_>>(), owned, "shard {shard}");
        let path = format!(
            "/api/v1/query_range?query={}&start={}&end={}&step=10&argus_shard={shard}&argus_shard_by=host,gpu",
            server::enc(q),
            server::secs(start),
            server::secs(end)
        );
        let raw = srv.get_with(&path, &[("Authorization", "Bearer tok")]);
        assert_eq!(server::matrix(&raw.success_data()).len(), owned.len(), "{}", raw.body);
        union.extend(mine);
    }
    union.sort_by(|a, b| a.labels.cmp(&b.labels));
    assert_eq!(union, all);
    for (params, complaint) in [
        ("argus_shard=2/2", "invalid parameter \"argus_shard\""),
        ("argus_shard_by=host", "given without argus_shard"),
        ("argus_shard=0/2&argus_shard_by=host,1x", "\"1x\" is not a label name"),
    ] {
        let r = srv.get_with(
            &format!("/api/v1/query_range?query=up&start=0&end=10&step=10&{params}"),
            &[("Authorization", "Bearer tok")],
        );
        assert_eq!(r.status, 400, "{params}: {}", r.body);
        let error: serde_json::Value = serde_json::from_str(&r.body).expect("a JSON error");
        assert!(error["error"].as_str().is_some_and(|e| e.contains(complaint)), "{params}: {}", r.body);
    }
}

// === InfluxDB 2 ===

#[test]
fn influxdb2_writes_read_back_through_promql() {
    let rt = runtime();
    let t0 = t0();
    let want = embedded_answers(&rt, t0);

    let srv = Server::with_config(INFLUX_TOKEN_CONFIG);
    let influx = influx_backend(&rt, srv.base(), "influx-token");
    rt.block_on(influx.write(gpu_series(t0))).expect("influxdb2 write to argus");
    let reader = prometheus_backend(&rt, remote(Flavour::Prometheus, srv.base(), WriteProtocol::RemoteWrite));
    assert_answers(&rt, reader.as_ref(), t0, &want);

    let Some(vm) = Peer::victoria_metrics() else { return };
    let influx = influx_backend(&rt, &vm.base, "any");
    rt.block_on(influx.write(gpu_series(t0))).expect("influxdb2 write to victoriametrics");
    vm.flush();
    let reader = prometheus_backend(&rt, remote(Flavour::VictoriaMetrics, &vm.base, WriteProtocol::RemoteWrite));
    assert_answers(&rt, reader.as_ref(), t0, &want);
}

/// Accepts "influx-token" (by its SHA-256) for writes; reads are anonymous.
const INFLUX_TOKEN_CONFIG: &str = "[auth]\nanonymous = [\"read\"]\n[[auth.tokens]]\nname = \"influx\"\n\
    scopes = [\"write\"]\nsha256 = \"230d23d9465e8a66f581437b4fb4ba44bcbe4e1b66fd8d1c5bbaeb664e255c9d\"\n";

/// One Flux request: its `Authorization` header, its query string and its JSON body.
type FluxRequest = (Option<String>, Option<String>, serde_json::Value);

/// What the recorded InfluxDB answered and what it was asked.
#[derive(Default)]
struct FluxMock {
    reply: Mutex<(u16, String)>,
    asked: Mutex<Vec<FluxRequest>>,
}

async fn flux_query(State(m): State<Arc<FluxMock>>, RawQuery(q): RawQuery, h: HeaderMap, body: String) -> Response {
    let auth = h.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).map(String::from);
    m.asked.lock().expect("lock").push((auth, q, serde_json::from_str(&body).unwrap_or_default()));
    let (status, text) = m.reply.lock().expect("lock").clone();
    (StatusCode::from_u16(status).expect("status"), [(CONTENT_TYPE, "text/csv; charset=utf-8")], text).into_response()
}

/// A reply in InfluxDB 2's annotated CSV (shape per
/// https://docs.influxdata.com/influxdb/v2/reference/syntax/annotated-csv/), for two series of the
/// query and one the filter should have kept out.
const FLUX_REPLY: &str = "#datatype,string,long,dateTime:RFC3339,double,string,string,string,string
#group,false,false,false,false,true,true,true,true
#default,_result,,,,,,,
,result,table,_time,_value,_field,_measurement,gpu,host
,,0,2024-01-01T00:00:00Z,0.5,util,gpu,0,a
,,0,2024-01-01T00:00:09.007Z,75.25,util,gpu,0,a
,,1,2024-01-01T00:00:00Z,1,util,gpu,1,a
,,2,2024-01-01T00:00:00Z,9,util,gpu,0,b
";

#[test]
fn influxdb2_selects_by_flux_and_has_no_promql() {
    let rt = runtime();
    let mock = Arc::new(FluxMock::default());
    *mock.reply.lock().expect("lock") = (200, FLUX_REPLY.into());
    let app = Router::new().route("/api/v2/query", axum::routing::post(flux_query)).with_state(mock.clone());
    let url = serve_app(&rt, app);
    let b = influx_backend(&rt, &url, "flux-token");
    let t = 1_704_067_200_000; // 2024-01-01T00:00:00Z
    let ms = [m("__name__", MatchOp::Equal, "gpu_util"), m("host", MatchOp::Equal, "a")];
    let got = rt.block_on(b.select(&ms, t, t + STEP)).expect("select");
    let want = "\n  gpu_util{gpu=\"0\", host=\"a\"} 0=0.5 9007=75.25\n  gpu_util{gpu=\"1\", host=\"a\"} 0=1";
    assert_eq!(series(&got, t), want, "host=\"b\" is filtered out on our side too");
    let asked = mock.asked.lock().expect("lock").clone();
    let (auth, query, body) = &asked[0];
    assert_eq!(auth.as_deref(), Some("Token flux-token"));
    assert_eq!(query.as_deref(), Some("org=my-org"));
    assert_eq!(body["type"], "flux");
    assert_eq!(body["dialect"]["annotations"], serde_json::json!(["datatype", "group", "default"]));
    expect![[r#"
        from(bucket: "metrics")
          |> range(start: 2024-01-01T00:00:00.000Z, stop: 2024-01-01T00:00:10.001Z)
          |> filter(fn: (r) => (r._measurement == "gpu" and r._field == "util") and r["host"] == "a")
          |> drop(columns: ["_start", "_stop"])"#]]
    .assert_eq(body["query"].as_str().expect("query text"));

    // An error table, as InfluxDB sends it after it has started answering 200.
    *mock.reply.lock().expect("lock") =
        (200, "#datatype,string,long\n,error,reference\n,Failed to parse query,897\n".into());
    let e = rt.block_on(b.select(&ms, t, t + STEP)).expect_err("error table");
    assert!(matches!(e, BackendError::BadQuery(_)) && !e.is_retryable(), "{e}");
    *mock.reply.lock().expect("lock") = (503, r#"{"code":"unavailable","message":"shutting down"}"#.into());
    let e = rt.block_on(b.select(&ms, t, t + STEP)).expect_err("503");
    assert!(e.is_retryable() && e.to_string().contains("shutting down"), "{e}");

    let e = rt.block_on(b.query_instant("gpu_util", t)).expect_err("no promql");
    assert!(matches!(e, BackendError::PromqlUnavailable { .. }) && !e.is_retryable(), "{e}");
    assert!(e.to_string().contains("need a prometheus-compatible backend"), "{e}");
    let e = rt.block_on(b.query_range("gpu_util", t, t + STEP, STEP)).expect_err("no promql");
    assert!(matches!(e, BackendError::PromqlUnavailable { .. }), "{e}");
}

// === errors ===

/// A server that answers every request with one status.
fn failing(rt: &Runtime, status: u16) -> String {
    let app = Router::new().fallback(move || async move {
        (StatusCode::from_u16(status).expect("status"), r#"{"status":"error","error":"mock refuses"}"#)
    });
    serve_app(rt, app)
}

#[test]
fn errors_say_whether_to_retry() {
    let rt = runtime();
    let t0 = t0();
    let ms = [m("__name__", MatchOp::Equal, "gpu_util")];
    let calls = |b: &dyn StoreBackend| {
        rt.block_on(async {
            vec![
                ("write", b.write(gpu_series(t0)).await.err()),
                ("select", b.select(&ms, t0, t0 + STEP).await.err()),
                ("instant", b.query_instant("gpu_util", t0).await.err()),
                ("range", b.query_range("gpu_util", t0, t0 + STEP, STEP).await.err()),
            ]
        })
    };

    // Nothing listens there: every call fails, and may succeed later.
    let closed = format!("http://127.0.0.1:{}", free_port());
    for (call, e) in
        calls(prometheus_backend(&rt, remote(Flavour::VictoriaMetrics, &closed, WriteProtocol::RemoteWrite)).as_ref())
    {
        let e = e.unwrap_or_else(|| panic!("{call} to a closed port succeeded"));
        assert!(matches!(e, BackendError::Unreachable { .. }) && e.is_retryable(), "{call}: {e}");
    }
    let e = rt.block_on(influx_backend(&rt, &closed, "t").write(gpu_series(t0))).expect_err("closed port");
    assert!(matches!(e, BackendError::Unreachable { .. }) && e.is_retryable(), "{e}");

    // 503 and 429: retry; 404: do not.
    for (status, retry) in [(503, true), (429, true), (404, false)] {
        let url = failing(&rt, status);
        for (call, e) in
            calls(prometheus_backend(&rt, remote(Flavour::Prometheus, &url, WriteProtocol::RemoteWrite)).as_ref())
        {
            let e = e.unwrap_or_else(|| panic!("{call} to a {status} server succeeded"));
            assert_eq!(e.is_retryable(), retry, "{call}: {e}");
            assert!(e.to_string().contains("mock refuses"), "{call}: {e}");
        }
    }

    // 400: a bad query or a bad batch fails again however often it is sent.
    let srv = Server::start();
    let b = prometheus_backend(&rt, remote(Flavour::Prometheus, srv.base(), WriteProtocol::RemoteWrite));
    let e = rt.block_on(b.query_instant("gpu_util{", t0)).expect_err("syntax error");
    assert!(matches!(e, BackendError::BadQuery(_)) && !e.is_retryable(), "{e}");
    let ahead = WriteSeries {
        labels: Labels::from_pairs([("__name__", "gpu_util")]),
        samples: vec![Sample::new(now_ms() + 3_600_000, 1.0)],
    };
    let e = rt.block_on(b.write(vec![ahead.clone()])).expect_err("timestamp an hour ahead");
    assert!(matches!(e, BackendError::InvalidWrite(_)) && !e.is_retryable(), "{e}");
    let e = rt.block_on(influx_backend(&rt, srv.base(), "t").write(vec![ahead])).expect_err("an hour ahead");
    assert!(matches!(e, BackendError::InvalidWrite(_)) && !e.is_retryable(), "{e}");
}

// === a store pair ===

/// Two Argus stores fed the same data (as every collector feeds both stores of a pair): a backend with
/// `url` on the first and `failover_urls` on the second answers from the first, goes on answering
/// (reads and writes) from the second once the first is killed, and does not try elsewhere what the
/// store refuses.
#[test]
fn a_store_pair_fails_over_to_the_next_healthy_store() {
    let rt = runtime();
    let t0 = t0();
    let (mut first, second) = (Server::start(), Server::start());
    for s in [&first, &second] {
        let direct = prometheus_backend(&rt, remote(Flavour::Prometheus, s.base(), WriteProtocol::RemoteWrite));
        rt.block_on(direct.write(gpu_series(t0))).expect("write to a store of the pair");
    }
    let mut spec = remote(Flavour::Prometheus, first.base(), WriteProtocol::RemoteWrite);
    spec.failover_urls = vec![second.base().to_string()];
    spec.timeout = Some("2s".into());
    let pair = prometheus_backend(&rt, spec);
    assert!(pair.describe().contains(second.base()), "{}", pair.describe());
    let want = rt.block_on(answers(pair.as_ref(), t0)).expect("answers from the first store");
    first.kill9();
    let got = rt.block_on(answers(pair.as_ref(), t0)).expect("answers once the first store is gone");
    assert_eq!(got, want, "the second store answers as the first did");
    let later = WriteSeries {
        labels: Labels::from_pairs([("__name__", "gpu_util"), ("host", "c"), ("gpu", "0")]),
        samples: vec![Sample::new(t0 + 6 * STEP, 1.0)],
    };
    rt.block_on(pair.write(vec![later])).expect("writes go to the second store");
    let direct = prometheus_backend(&rt, remote(Flavour::Prometheus, second.base(), WriteProtocol::RemoteWrite));
    let c = rt.block_on(direct.select(&[m("host", MatchOp::Equal, "c")], t0, t0 + 10 * STEP)).expect("select");
    assert_eq!(c.len(), 1, "the write reached the second store: {c:?}");
    let e = rt.block_on(pair.query_instant("gpu_util{", t0)).expect_err("a syntax error");
    assert!(matches!(e, BackendError::BadQuery(_)), "a refused query is the caller's: {e}");
    let mut bad = remote(Flavour::Prometheus, "http://a:1", WriteProtocol::RemoteWrite);
    bad.failover_urls = vec!["ftp://b".into()];
    assert!(bad.validate().unwrap_err().starts_with("failover_urls[0]: "), "the bad URL is named");
}

// === argus serve ===

#[test]
fn serve_with_a_remote_backend_opens_no_store() {
    let closed = format!("http://127.0.0.1:{}", free_port());
    let srv = Server::with_config(&format!(
        "[store]\nbackend = \"prometheus\"\n[store.remote]\nflavour = \"victoriametrics\"\nurl = \"{closed}\"\nbearer_token = \"very-secret\"\n"
    ));
    assert_eq!(srv.get("/-/ready").status, 200);
    assert_eq!(srv.get("/metrics").status, 200);
    // No embedded engine answers queries: they pass through to the remote store, closed here.
    let r = srv.get("/api/v1/query?query=up");
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains("the remote store") && !r.body.contains("very-secret"), "{}", r.body);
    assert_eq!(srv.get("/api/v2/alerts").status, 200, "alertd runs on the remote store");
    let mut entries: Vec<String> = std::fs::read_dir(srv.data_dir())
        .expect("data dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    for store_file in ["wal", "blocks", "head", "lock"] {
        assert!(!entries.iter().any(|e| e == store_file), "the embedded store was opened: {entries:?}");
    }
    assert!(entries.iter().any(|e| e.starts_with("alertd.db")), "alertd keeps its state here: {entries:?}");
    let log = srv.log();
    assert!(log.contains("store=victoriametrics") || log.contains("store=\"victoriametrics"), "{log}");
    assert!(log.contains(&format!("{closed}/api/v1/write")), "{log}");
    assert!(!log.contains("very-secret"), "{log}");
}
