//! Replays, against the real `argus serve`, the exact HTTP requests Grafana's Prometheus data source sends,
//! and checks each answer has the shape Grafana parses.
//!
//! The requests are taken from Grafana's own source (the `grafana/grafana` repository, the 12.x line: the
//! root `package.json` of the stored tree reads `12.2.0-pre`; commits given per file):
//!
//! - "Save & test" is the backend's `CheckHealth`: `pkg/promlib/healthcheck.go` (eb5fa84c85a4) runs the
//!   instant query `1+1` with `RefID "__healthcheck__"` over the time range 1 s..4 s, so it is sent with
//!   `time=4`; then `pkg/promlib/heuristics.go` (0c2c8040437d) reads `api/v1/status/buildinfo` and calls the
//!   server Prometheus when `data.features` is empty (Mimir, with a ruler API, otherwise).
//! - How requests go on the wire: `pkg/promlib/client/client.go` (e75b5e7dd363): queries are form-encoded
//!   POSTs (`Content-Type: application/x-www-form-urlencoded`; the method defaults to POST in
//!   `pkg/promlib/querydata/request.go` (3582e99accb5), which also fixes `timeout=2m`), with Go's
//!   `url.Values.Encode` (keys sorted, `+` for spaces), times as `strconv.FormatFloat(unix seconds)` and the
//!   step as `FormatFloat(step.Seconds())`. Resource calls (label lookups) are POSTed with the frontend's
//!   body unless the path is in `endpointsSupportOnlyGet` (label values, metadata, …), which go as GET with
//!   the body moved to the URL; a 400 or 405 to a POST is retried as GET.
//! - The range panel: `pkg/promlib/models/query.go` (cbadecdd803b): the step is the larger of the interval
//!   (at least the 15 s scrape interval) and range/11000, `$__rate_interval` becomes
//!   `max(step + 15s, 4 × 15s)` written by Go's `Duration.String` (`1m0s`), and `TimeRange()` aligns start
//!   and end down to a multiple of the step.
//! - Query editor load: `packages/grafana-prometheus/src/language_provider.ts` (a8dd3a999efb) and
//!   `resource_clients.ts` (039aaf2ce0e4): metric names from `/api/v1/label/__name__/values`, label names
//!   from `/api/v1/labels`, metadata from `/api/v1/metadata`, each with `limit=40000`
//!   (`constants.ts` `DEFAULT_SERIES_LIMIT`) and start/end as whole seconds snapped to the minute
//!   (`language_utils.ts` `getRangeSnapInterval`); label values with an optional `match[]`; `/api/v1/series`
//!   with `match[]={__name__!=""}` where the series endpoint is chosen. `datasource.ts` (f743a851ea33) `init`
//!   also loads `/api/v1/rules` and probes `/api/v1/query_exemplars` with `query=test` and start/end in
//!   *milliseconds*.

use crate::support::server;

use serde_json::{Value, json};
use server::{Reply, Server, enc, now_ms};

const FORM: [(&str, &str); 1] = [("Content-Type", "application/x-www-form-urlencoded")];
const SEC: i64 = 1000;
const STEP: i64 = 15 * SEC;

/// Writes, for hosts a and b, a gauge and a counter every 15 s over the last hour, ending at `end`
/// (a whole 15 s). The counter grows by 30 per sample on a and 60 on b: rates of 2/s and 4/s.
fn write_fixture(srv: &Server, end: i64) {
    let mut lines = Vec::new();
    for i in 0..240 {
        let t = end - i * STEP;
        let k = 240 - i;
        lines.push(format!("gpu,host=a util={} {t}", 50 + k % 7));
        lines.push(format!("gpu,host=b util={} {t}", 20 + k % 3));
        lines.push(format!("gpu,host=a energy_joules_total={} {t}", 30 * k));
        lines.push(format!("gpu,host=b energy_joules_total={} {t}", 60 * k));
    }
    let r = srv.write_ms(&lines.join("\n"));
    assert_eq!(r.status, 204, "{}", r.body);
}

/// A recent time on a whole step, so aligned ranges end on a sample.
fn aligned_now() -> i64 {
    (now_ms() - 60 * SEC) / STEP * STEP
}

/// Go's `strconv.FormatFloat(float64(t.Unix())+float64(t.Nanosecond())/1e9, 'f', -1, 64)`.
fn go_time(ms: i64) -> String {
    let s = ms as f64 / 1000.0;
    format!("{s}")
}

/// The success envelope's `data`, asserting the JSON content type Grafana's client expects.
fn data(r: &Reply) -> Value {
    let ct = r.header("content-type").unwrap_or_default();
    assert!(ct.starts_with("application/json"), "content type {ct:?}: {}", r.body);
    r.success_data()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap_or_else(|| panic!("not a string: {s}")).to_string())
        .collect()
}

/// Asserts one `[<unix seconds as a number>, "<value as a string>"]` pair, as Grafana's converter
/// (`pkg/promlib/converter/prom.go`) reads it, and returns it as (ms, value).
fn pair(p: &Value) -> (i64, f64) {
    let a = p.as_array().unwrap_or_else(|| panic!("point not an array: {p}"));
    assert_eq!(a.len(), 2, "{p}");
    let t = a[0].as_f64().unwrap_or_else(|| panic!("time not a number: {p}"));
    let v = a[1].as_str().unwrap_or_else(|| panic!("value not a string: {p}"));
    ((t * 1000.0).round() as i64, v.parse().unwrap_or_else(|_| panic!("value not a float: {p}")))
}

#[test]
fn save_and_test_is_a_healthy_prometheus() {
    let srv = Server::start();

    // healthcheck.go: `1+1`, instant, evaluated at the range's end (4 s), timeout from request.go.
    let r = srv.post("/api/v1/query", &FORM, "query=1%2B1&time=4&timeout=2m");
    assert_eq!(data(&r), json!({"resultType": "scalar", "result": [4, "2"]}));

    // heuristics.go asks with the configured method (POST, no body) and falls back to GET on 400/405;
    // version-detect (resource.go) asks with GET. Both must answer, with no `features`.
    for r in [srv.post("/api/v1/status/buildinfo", &FORM, ""), srv.get("/api/v1/status/buildinfo")] {
        let d = data(&r);
        assert!(d.get("features").is_none(), "features make Grafana call this Mimir: {d}");
        let version = d["version"].as_str().expect("version");
        let parts: Vec<u64> = version.split('.').map(|p| p.parse().expect("semver part")).collect();
        assert_eq!(parts.len(), 3, "Grafana wants semver: {version}");
        // 2.24 is where Grafana starts using the labels-match API (datasource.ts hasLabelsMatchAPISupport).
        assert!(parts[0] == 2 && parts[1] >= 24, "{version}");
        assert_eq!(d["argusVersion"], env!("CARGO_PKG_VERSION"));
        for f in ["revision", "branch", "buildUser", "buildDate", "goVersion"] {
            assert!(d[f].is_string(), "{f} must be a string for BuildInfoResponseData: {d}");
        }
    }
}

#[test]
fn query_editor_load_gets_metric_names_labels_and_values() {
    let srv = Server::start();
    let end = aligned_now();
    write_fixture(&srv, end);
    // Default time range now-6h..now, snapped to whole minutes, as whole seconds.
    let start_s = (end - 6 * 3600 * SEC) / 60_000 * 60;
    let end_s = (end / 60_000 + 1) * 60;
    let range = format!("start={start_s}&end={end_s}");

    // datasource.ts init: rules (POSTed first by the backend, as "api/v1/rules" misses the GET-only list)…
    // A default server evaluates the built-in rule groups, and lists them.
    for r in [srv.post("/api/v1/rules", &FORM, ""), srv.get("/api/v1/rules")] {
        let groups = data(&r)["groups"].as_array().cloned().expect("groups");
        assert!(
            !groups.is_empty() && groups.iter().all(|g| g["rules"].is_array() && g["file"].is_string()),
            "{groups:?}"
        );
    }
    // …and the exemplar probe, its times in milliseconds, parameters in the URL, empty POST body.
    let (probe_start, probe_end) = (now_ms() - 30 * 60 * SEC, now_ms());
    let r = srv.post(&format!("/api/v1/query_exemplars?end={probe_end}&query=test&start={probe_start}"), &FORM, "");
    assert_eq!(data(&r), json!([]));

    // LabelsApiClient.start: metric names (label values are GET-only, body moved to the URL)…
    let r = srv.get(&format!("/api/v1/label/__name__/values?end={end_s}&limit=40000&start={start_s}"));
    assert_eq!(strings(&data(&r)), ["gpu_energy_joules_total", "gpu_util"]);
    // …label names (POSTed as the frontend sent them: limit first, then the time range)…
    let r = srv.post("/api/v1/labels", &FORM, format!("limit=40000&{range}"));
    assert_eq!(strings(&data(&r)), ["__name__", "host"]);
    // …and metadata (GET-only): a map, empty because nothing Argus ingests carries metadata.
    let r = srv.get("/api/v1/metadata?limit=40000");
    assert_eq!(data(&r), json!({}));

    // The builder after picking a metric: its label names and a label's values, filtered by it.
    let r = srv.post("/api/v1/labels", &FORM, format!("limit=40000&{range}&match%5B%5D=gpu_util"));
    assert_eq!(strings(&data(&r)), ["__name__", "host"]);
    let m = enc(r#"{__name__="gpu_util"}"#);
    let r = srv.get(&format!("/api/v1/label/host/values?end={end_s}&limit=40000&match%5B%5D={m}&start={start_s}"));
    assert_eq!(strings(&data(&r)), ["a", "b"]);
    let r = srv.get(&format!("/api/v1/label/job/values?end={end_s}&limit=40000&start={start_s}"));
    assert_eq!(strings(&data(&r)), Vec::<String>::new());

    // SeriesApiClient (data sources set to use the series endpoint): every series, as label maps.
    let r = srv.post("/api/v1/series", &FORM, format!("{range}&match%5B%5D={}&limit=40000", enc(r#"{__name__!=""}"#)));
    let series = data(&r);
    assert_eq!(series.as_array().map(Vec::len), Some(4), "{series}");
    assert!(series.as_array().into_iter().flatten().all(|s| s["__name__"].is_string() && s["host"].is_string()));

    // The limit Grafana sends is honoured, with Prometheus' warning when it cuts.
    let r = srv.get(&format!("/api/v1/label/__name__/values?end={end_s}&limit=1&start={start_s}"));
    assert_eq!(strings(&data(&r)), ["gpu_energy_joules_total"]);
    assert_eq!(r.json()["warnings"], json!(["results truncated due to limit"]));
}

#[test]
fn range_panel_gets_aligned_matrices() {
    let srv = Server::start();
    let now = aligned_now();
    write_fixture(&srv, now);
    // A "Last 1 hour" panel: step 15 s (the scrape interval beats 1h/11000), range aligned down to it.
    // The panel's `now` is a little past the last sample and not on a step.
    let (from, to) = (now - 3600 * SEC + 4_321, now + 4_321);
    let (start, end) = (from / STEP * STEP, to / STEP * STEP);
    let steps = ((end - start) / STEP + 1) as usize;
    let first_sample = now - 239 * STEP;

    // `sum by (host) (rate(gpu_energy_joules_total[$__rate_interval]))`, rate interval max(15s+15s, 60s).
    let q = "sum by (host) (rate(gpu_energy_joules_total[1m0s]))";
    let body = format!("end={}&query={}&start={}&step=15&timeout=2m", go_time(end), form_enc(q), go_time(start));
    let r = srv.post("/api/v1/query_range", &FORM, body);
    let d = data(&r);
    assert_eq!(d["resultType"], "matrix", "{d}");
    let result = d["result"].as_array().expect("result");
    assert_eq!(result.len(), 2, "{d}");
    for (s, (host, rate)) in result.iter().zip([("a", 2.0), ("b", 4.0)]) {
        assert_eq!(s["metric"], json!({"host": host}));
        let pts: Vec<(i64, f64)> = s["values"].as_array().expect("values").iter().map(pair).collect();
        // A rate needs two samples in its window: none at the steps before the second sample.
        let times: Vec<i64> = pts.iter().map(|p| p.0).collect();
        let want: Vec<i64> = (0..steps as i64).map(|i| start + i * STEP).filter(|t| *t > first_sample).collect();
        assert_eq!(times, want);
        // From the fourth sample on the window holds four samples and Prometheus' extrapolation is exact.
        for (t, v) in pts.iter().filter(|p| p.0 >= first_sample + 3 * STEP) {
            assert!((v - rate).abs() < 1e-9, "rate {v} at {t}, want {rate}");
        }
    }

    // The same panel in Explore ("Both"): the instant half at the unaligned `to`, in RFC 3339 too.
    let q = r#"gpu_util{host="b"}"#;
    let r = srv.post("/api/v1/query", &FORM, format!("query={}&time={}&timeout=2m", form_enc(q), go_time(to)));
    let d = data(&r);
    assert_eq!(d["resultType"], "vector", "{d}");
    let v = &d["result"][0];
    assert_eq!(v["metric"], json!({"__name__": "gpu_util", "host": "b"}));
    assert_eq!(pair(&v["value"]), (to, 20.0 + (240 % 3) as f64));
    let rfc3339 = humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(to as u64));
    let r = srv.get(&format!("/api/v1/query?query={}&time={}", enc(q), enc(&rfc3339.to_string())));
    assert_eq!(data(&r), d, "RFC 3339 and Unix times name the same instant");

    // With exemplars on, the backend also asks query_exemplars (no timeout) for the aligned range.
    let body = format!("end={}&query={}&start={}", go_time(end), form_enc(q), go_time(start));
    assert_eq!(data(&srv.post("/api/v1/query_exemplars", &FORM, body)), json!([]));
}

#[test]
fn every_read_endpoint_reads_a_form_body_and_errors_keep_the_envelope() {
    let srv = Server::start();
    let end = aligned_now();
    write_fixture(&srv, end);
    let only_b = enc(r#"{host="b"}"#);

    // Label values read the form body (they used to ignore it).
    let b_util = enc(r#"{__name__="gpu_util",host="b"}"#);
    let r = srv.post("/api/v1/label/host/values", &FORM, format!("match%5B%5D={b_util}"));
    assert_eq!(strings(&data(&r)), ["b"]);
    let r = srv.post("/api/v1/label/__name__/values", &FORM, format!("match%5B%5D={only_b}&limit=1"));
    assert_eq!(strings(&data(&r)), ["gpu_energy_joules_total"]);
    assert_eq!(r.json()["warnings"], json!(["results truncated due to limit"]));
    let r = srv.post("/api/v1/series", &FORM, format!("match%5B%5D={only_b}&match%5B%5D=gpu_util&limit=2"));
    assert_eq!(data(&r).as_array().map(Vec::len), Some(2));
    // A body that is not a form is not read, as Prometheus (Go's ParseForm) does not read it.
    let r = srv.post("/api/v1/query", &[("Content-Type", "application/json")], "query=1");
    assert_eq!((r.status, r.json()["errorType"].clone()), (400, json!("bad_data")), "{}", r.body);

    // Grafana escapes names that are not legacy Prometheus names (`escapeForUtf8Support`).
    let r = srv.write_ms(&format!("pod,k8s.ns=prod up=1 {end}"));
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(strings(&data(&srv.get("/api/v1/label/U__k8s_2e_ns/values"))), ["prod"]);

    // Unknown paths and methods under /api/v1 answer in the envelope; other APIs in their own shape.
    let r = srv.get("/api/v1/status/nope");
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.json()["status"], "error");
    assert_eq!(r.json()["errorType"], "not_found");
    let r = srv.send(reqwest::Method::DELETE, "/api/v1/query?query=1");
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(r.json()["errorType"], "bad_data");
    assert_eq!(allow(&r), "GET,HEAD,POST");
    // The write endpoints keep the InfluxDB error shape all their errors have.
    for path in ["/api/v1/write", "/api/v2/write", "/write"] {
        let r = srv.get(path);
        assert_eq!((r.status, allow(&r)), (405, "POST".into()), "{path}: {}", r.body);
        assert_eq!(r.json()["code"], "method not allowed", "{path}");
    }
    let r = srv.post("/metrics", &FORM, "");
    assert_eq!((r.status, allow(&r)), (405, "GET,HEAD".into()), "{}", r.body);

    // Parameters Grafana sends are checked like Prometheus checks them.
    for (path, want) in [
        ("/api/v1/labels?limit=-1", "invalid parameter \"limit\": limit must be non-negative"),
        ("/api/v1/query?query=1&timeout=soon", "invalid parameter \"timeout\""),
        ("/api/v1/query?query=1&time=yesterday", "invalid parameter \"time\""),
        ("/api/v1/metadata?limit=all", "invalid parameter \"limit\""),
        ("/api/v1/query_exemplars?query=up%7B", "invalid parameter \"query\""),
    ] {
        let r = srv.get(path);
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        assert_eq!(r.json()["errorType"], "bad_data", "{path}");
        assert!(r.json()["error"].as_str().is_some_and(|e| e.starts_with(want)), "{path}: {}", r.body);
    }
}

/// The `Allow` header without spaces.
fn allow(r: &Reply) -> String {
    r.header("allow").unwrap_or_default().replace(' ', "")
}

/// Go's `url.QueryEscape`, as `url.Values.Encode` writes values: spaces as `+`.
fn form_enc(s: &str) -> String {
    enc(s).replace("%20", "+")
}

/// A fleet-sized panel (above 65,536 points the answer is sent in parts as it is written, each series'
/// points let go once sent): the body is one whole, valid answer with every series and point, in label
/// order, and the server answers the next request.
#[test]
fn a_fleet_sized_range_panel_arrives_whole() {
    let srv = Server::start();
    let end = aligned_now();
    let (hosts, points) = (200, 400);
    let lines: Vec<String> = (0..points)
        .flat_map(|i| {
            (0..hosts).map(move |h| format!("gpu,host=h{h:03} util={} {}", (h * 7 + i) % 101, end - i * STEP))
        })
        .collect();
    let r = srv.write_ms(&lines.join("\n"));
    assert_eq!(r.status, 204, "{}", r.body);
    let start = end - (points - 1) * STEP;
    let r =
        srv.get(&format!("/api/v1/query_range?query=gpu_util&start={}&end={}&step=15", go_time(start), go_time(end)));
    assert_eq!(r.header("content-length"), None, "sent in parts, its length unknown when it starts");
    let got = server::matrix(&data(&r));
    assert_eq!(got.len(), hosts as usize);
    for (h, (labels, pts)) in got.iter().enumerate() {
        assert_eq!(labels["host"], format!("h{h:03}"), "series in label order");
        assert_eq!(pts.len(), points as usize, "h{h:03}");
        let (t, v) = &pts[0];
        assert_eq!((*t, v.as_str()), (start, format!("{}", (h as i64 * 7 + points - 1) % 101).as_str()));
    }
    still_answers(&srv, end);
}

fn still_answers(srv: &Server, at: i64) {
    let d = srv.query("count(gpu_util)", at);
    assert_eq!(d["result"][0]["value"][1], "200", "{d}");
}
