//! Tokens confined to a share of the series (`matchers = ['cluster="a"']`): team A reads and writes
//! nothing of team B through any endpoint, PromQL functions that could leak labels included; its
//! silences silence nothing of B's; and what cannot be confined is refused.

use crate::support::peers::Peer;
use crate::support::server;

use argus_model::{Labels, Sample};
use argus_store::remote_write::{WriteSeries, encode};
use serde_json::{Value, json};
use server::{Server, enc, now_ms, rfc3339, secs, token_digest};
use std::time::{Duration, Instant};

/// The tokens, `{a}`, `{b}` and `{ops}` standing for their digests.
const CONFIG: &str = r#"
[[auth.tokens]]
name = "team-a"
scopes = ["read", "write", "silence"]
matchers = ['cluster="a"']
sha256 = "{a}"

[[auth.tokens]]
name = "team-b"
scopes = ["read", "write"]
matchers = ['cluster=~"b|b2"']
sha256 = "{b}"

[[auth.tokens]]
name = "ops"
scopes = ["admin"]
sha256 = "{ops}"
"#;

const RULES: &str = r#"
groups:
  - name: teams
    interval: 1s
    rules:
      - alert: RackHotA
        expr: vector(1)
        labels: {cluster: a, severity: warning}
      - alert: RackHotB
        expr: vector(1)
        labels: {cluster: b, severity: warning}
"#;

const ALERTD: &str = "route:\n  receiver: none\nreceivers:\n- name: none\nargus:\n  rules:\n    files: [rules.yml]\n    defaults: false\n    watchdog: false\n    host_down: false\n";

const A: &str = "Bearer team-a-token";
const B: &str = "Bearer team-b-token";
const OPS: &str = "Bearer ops-token";

/// `CONFIG` with the tokens' digests filled in.
fn tokens() -> String {
    CONFIG
        .replace("{a}", &token_digest("team-a-token"))
        .replace("{b}", &token_digest("team-b-token"))
        .replace("{ops}", &token_digest("ops-token"))
}

/// The server with the three tokens and two rules, one per team, and its scratch directory.
fn start() -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("scratch dir");
    std::fs::write(dir.path().join("alertd.yml"), ALERTD).unwrap();
    std::fs::write(dir.path().join("rules.yml"), RULES).unwrap();
    let cfg = tokens();
    let alertd = dir.path().join("alertd.yml").display().to_string();
    (Server::with_config(&format!("{cfg}\n[alertd]\nconfig_file = {alertd:?}\n")), dir)
}

/// Nothing in `answer` names team B's series: its cluster, host, rack or metric.
fn assert_nothing_of_b(what: &str, answer: &str) {
    for secret in ["\"b\"", "cluster=\\\"b", "host-b", "rack-9", "secret_b_only", "RackHotB"] {
        assert!(!answer.contains(secret), "{what} shows {secret} to team A: {answer}");
    }
}

fn lines(t: i64) -> String {
    format!(
        "gpu,cluster=a,host=host-a util=1 {t}\n\
         gpu,cluster=b,host=host-b,rack=rack-9 util=2 {t}\n\
         secret_b,cluster=b only=3 {t}\n\
         xid,cluster=a,host=host-a msg=\"Xid 13\" {t}\n\
         xid,cluster=b,host=host-b msg=\"Xid 79\" {t}\n"
    )
}

fn post_lp(s: &Server, auth: &str, body: &str) -> server::Reply {
    s.post("/api/v2/write?org=o&bucket=b&precision=ms", &[("Authorization", auth)], body.to_string())
}

#[test]
fn a_confined_token_reads_and_writes_nothing_of_another_team() {
    let (s, _dir) = start();
    let t = now_ms() - 10_000;
    let r = post_lp(&s, OPS, &lines(t));
    assert_eq!(r.status, 204, "{}", r.body);
    let get = |path: &str, auth: &str| s.get_with(path, &[("Authorization", auth)]);
    let ok = |path: &str| {
        let r = get(path, A);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert_nothing_of_b(path, &r.body);
        r.json()
    };

    // PromQL: every selector is narrowed, whatever function wraps it.
    let now = secs(now_ms());
    let q = |query: &str| ok(&format!("/api/v1/query?query={}&time={now}", enc(query)))["data"]["result"].clone();
    assert_eq!(
        q("gpu_util").as_array().unwrap().len(),
        1,
        "{}",
        get(&format!("/api/v1/query?query=gpu_util&time={now}"), OPS).body
    );
    assert_eq!(q("sum(gpu_util)")[0]["value"][1], "1");
    assert_eq!(q(r#"count({__name__=~".+"})"#)[0]["value"][1], "1", "A has one series with samples");
    assert_eq!(q(r#"gpu_util{cluster="b"}"#), json!([]));
    assert_eq!(q(r#"label_replace(gpu_util{cluster="b"}, "x", "$1", "host", "(.*)")"#), json!([]));
    assert_eq!(q("secret_b_only or vector(0)")[0]["metric"], json!({}));
    assert_eq!(q("absent(secret_b_only)")[0]["metric"], json!({"cluster": "a"}), "absent: B's metric is absent to A");
    assert_eq!(q("max_over_time(gpu_util[5m:10s])").as_array().unwrap().len(), 1);
    assert_eq!(q("count by (cluster) (gpu_util) / on() group_left count(gpu_util)").as_array().unwrap().len(), 1);
    let r = s.post(
        "/api/v1/query",
        &[("Authorization", A), ("content-type", "application/x-www-form-urlencoded")],
        format!("query={}&time={now}", enc("sum(gpu_util)")),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["result"][0]["value"][1], "1", "a form body is narrowed too");
    // The same parameter in the URL and the body: both are narrowed.
    let r = s.post(
        &format!("/api/v1/query?query={}", enc("secret_b_only")),
        &[("Authorization", A), ("content-type", "application/x-www-form-urlencoded")],
        format!("query={}&time={now}", enc("secret_b_only")),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_nothing_of_b("a query in URL and body", &r.body);
    let range = ok(&format!(
        "/api/v1/query_range?query={}&start={}&end={now}&step=10",
        enc(r#"{__name__=~".+"}"#),
        secs(now_ms() - 60_000)
    ));
    assert_eq!(range["data"]["result"].as_array().unwrap().len(), 1, "{range}");
    let r = get(&format!("/api/v1/query?query={}", enc("sum(")), A);
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.json()["error"].as_str().unwrap().contains("parse error"), "{}", r.body);

    // Series and label lookups: `match[]` narrowed, or the scope itself without one.
    let all = enc(r#"{__name__=~".+"}"#);
    let series = ok(&format!("/api/v1/series?match[]={all}"))["data"].clone();
    assert_eq!(series.as_array().unwrap().len(), 1, "{series}");
    let names = ok("/api/v1/labels")["data"].clone();
    assert_eq!(names, json!(["__name__", "cluster", "host"]), "B's rack label is not A's to see");
    assert_eq!(ok(&format!("/api/v1/labels?match[]={all}"))["data"], names);
    assert_eq!(ok("/api/v1/label/host/values")["data"], json!(["host-a"]));
    assert_eq!(ok("/api/v1/label/cluster/values")["data"], json!(["a"]));
    assert_eq!(ok("/api/v1/label/__name__/values")["data"], json!(["gpu_util"]));
    let r = s.post(
        "/api/v1/label/host/values",
        &[("Authorization", A), ("content-type", "application/x-www-form-urlencoded")],
        format!("match[]={}", enc(r#"{host="host-b"}"#)),
    );
    assert_eq!(r.json()["data"], json!([]), "{}", r.body);
    let events = ok(&format!("/api/v1/events?match[]={}", enc(r#"{__name__=~"xid.*"}"#)))["data"].clone();
    assert_eq!(events.as_array().unwrap().len(), 1, "{events}");
    let tsdb = ok("/api/v1/status/tsdb")["data"].clone();
    assert_eq!(tsdb["headStats"]["numSeries"], 1, "{tsdb}");
    assert_eq!(tsdb["headStats"]["chunkCount"], 0, "the store-wide chunk count is not shown: {tsdb}");
    ok("/api/v1/status/buildinfo");
    ok(&format!("/api/v1/query_exemplars?query=gpu_util&start={}&end={now}", secs(now_ms() - 60_000)));

    // Team B sees its own.
    let r = get("/api/v1/label/__name__/values", B);
    assert_eq!(r.json()["data"], json!(["gpu_util", "secret_b_only"]), "{}", r.body);

    // Writes: one series outside the scope refuses the whole request, in every protocol.
    let t2 = now_ms();
    let r = post_lp(&s, A, &format!("mixed,cluster=a value=1 {t2}\nmixed,cluster=b value=2 {t2}\n"));
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        r#"line 2: series mixed_value is outside this token's scope {cluster="a"} (it fails cluster="a"); nothing stored"#
    );
    let r = post_lp(&s, A, &format!("nolabel value=1 {t2}\n"));
    assert_eq!(r.status, 403, "a series without the label is outside too: {}", r.body);
    let r = s.post("/write?db=x&precision=ms", &[("Authorization", A)], format!("v1,cluster=b value=1 {t2}\n"));
    assert_eq!(r.status, 403, "{}", r.body);
    let rw = |cluster: &str| {
        let body = encode(&[WriteSeries {
            labels: Labels::from_pairs([("__name__", "rw"), ("cluster", cluster)]),
            samples: vec![Sample::new(t2, 1.0)],
        }])
        .expect("encode");
        s.post(
            "/api/v1/write",
            &[("Authorization", A), ("content-encoding", "snappy"), ("content-type", "application/x-protobuf")],
            body,
        )
    };
    let r = rw("b");
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains(r#"series 1 (rw{cluster=\"b\"}) is outside"#), "{}", r.body);
    assert_eq!(rw("a").status, 204);
    let r = post_lp(&s, A, &format!("mine,cluster=a value=7 {t2}\n"));
    assert_eq!(r.status, 204, "{}", r.body);
    let ops_names = get("/api/v1/label/__name__/values", OPS).json()["data"].clone();
    assert!(!ops_names.as_array().unwrap().iter().any(|n| n == "mixed" || n == "mixed_value"), "{ops_names}");
    assert!(ops_names.as_array().unwrap().iter().any(|n| n == "mine_value"), "{ops_names}");

    // What cannot be confined is refused, naming why.
    assert_eq!(ok("/api/v1/metadata")["data"], json!({}), "Argus keeps no metadata: nothing to leak");
    for path in ["/metrics", "/api/v1/incidents", "/api/v1/notifications", "/api/v1/forecasts", "/api/v1/anomalies"] {
        let r = get(path, A);
        assert_eq!(r.status, 403, "{path}: {}", r.body);
        assert!(r.body.contains("cannot be confined"), "{path}: {}", r.body);
    }
    // A snapshot needs admin, which A lacks: refused for its scope before its labels matter.
    let r = s.post("/api/v1/admin/tsdb/snapshot", &[("Authorization", A)], "");
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("lacks the admin scope"), "{}", r.body);
    let metrics = get("/metrics", OPS).body;
    let refusals = metrics.lines().find_map(|l| l.strip_prefix(r#"argus_http_auth_refusals_total{reason="labels"} "#));
    assert_eq!(refusals.map(str::trim), Some("5"), "one refusal for each endpoint that cannot be confined");
}

#[test]
fn alerts_rules_and_silences_stay_within_a_team() {
    let (s, _dir) = start();
    let get = |path: &str, auth: &str| s.get_with(path, &[("Authorization", auth)]);
    let json_a = [("Authorization", A), ("content-type", "application/json")];
    let alert = |cluster: &str| json!([{"labels": {"alertname": "FanFail", "cluster": cluster}}]).to_string();

    // Alerts posted outside the scope are refused whole.
    let both = json!([{"labels": {"alertname": "FanFail", "cluster": "a"}}, {"labels": {"alertname": "FanFail", "cluster": "b"}}]);
    let r = s.post("/api/v2/alerts", &json_a, both.to_string());
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("alert 1 is outside this token's scope"), "{}", r.body);
    assert_eq!(s.post("/api/v2/alerts", &json_a, alert("a")).status, 200);
    let ops_json = [("Authorization", OPS), ("content-type", "application/json")];
    assert_eq!(s.post("/api/v2/alerts", &ops_json, alert("b")).status, 200);

    // Both rules fire; each team sees its own alerts, rules and groups.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let all = get("/api/v2/alerts", OPS).body;
        if all.contains("RackHotA") && all.contains("RackHotB") {
            break;
        }
        assert!(Instant::now() < deadline, "the rules did not fire: {all}\n{}", s.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    let names = |path: &str, auth: &str| -> Vec<String> {
        let r = get(path, auth);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        let mut v: Vec<String> = r
            .body
            .match_indices("\"alertname\":\"")
            .map(|(i, m)| {
                let rest = &r.body[i + m.len()..];
                rest[..rest.find('"').unwrap()].to_string()
            })
            .collect();
        v.sort();
        v.dedup();
        v
    };
    assert_eq!(names("/api/v2/alerts", A), ["FanFail", "RackHotA"]);
    assert_eq!(names("/api/v2/alerts", OPS), ["FanFail", "RackHotA", "RackHotB"]);
    assert_eq!(names("/api/v2/alerts?filter=cluster%3D%22b%22", A), Vec::<String>::new());
    assert_eq!(names("/api/v2/alerts/groups", A), ["FanFail", "RackHotA"]);
    assert_eq!(names("/api/v1/alerts", A), ["RackHotA"]);
    let rules = get("/api/v1/rules", A);
    assert_nothing_of_b("/api/v1/rules", &rules.body);
    assert!(rules.body.contains("RackHotA"), "{}", rules.body);
    assert_nothing_of_b("/api/v2/alerts", &get("/api/v2/alerts", A).body);

    // Silences: A's silence carries A's scope, so it silences nothing of B's.
    let now = now_ms() / 1000;
    let silence = |matchers: Value, id: Option<&str>| {
        let mut v = json!({
            "matchers": matchers,
            "startsAt": rfc3339(now - 60), "endsAt": rfc3339(now + 3600),
            "createdBy": "on-call", "comment": "fan swap"
        });
        if let Some(id) = id {
            v["id"] = json!(id);
        }
        v.to_string()
    };
    let fan = json!([{"name": "alertname", "value": "FanFail", "isRegex": false, "isEqual": true}]);
    let r = s.post("/api/v2/silences", &json_a, silence(fan.clone(), None));
    assert_eq!(r.status, 200, "{}", r.body);
    let a_id = r.json()["silenceID"].as_str().unwrap().to_string();
    let r = s.post("/api/v2/silences", &ops_json, silence(fan.clone(), None));
    let ops_id = r.json()["silenceID"].as_str().unwrap().to_string();
    let mine = get(&format!("/api/v2/silence/{a_id}"), A).json();
    let m: Vec<String> = mine["matchers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}={}", m["name"].as_str().unwrap(), m["value"].as_str().unwrap()))
        .collect();
    assert_eq!(m, ["alertname=FanFail", "cluster=a"], "{mine}");
    let statuses = |auth: &str| -> Vec<(String, String)> {
        let v = get("/api/v2/alerts?filter=alertname%3D%22FanFail%22", auth).json();
        let mut out: Vec<(String, String)> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["labels"]["cluster"].as_str().unwrap().to_string(), a["status"]["silencedBy"].to_string()))
            .collect();
        out.sort();
        out
    };
    let seen = statuses(OPS);
    assert!(
        seen[0].1.contains(&a_id) && seen[0].1.contains(&ops_id),
        "A's silence and ops' silence A's alert: {seen:?}"
    );
    assert!(!seen[1].1.contains(&a_id) && seen[1].1.contains(&ops_id), "A's silence leaves B's alert alone: {seen:?}");

    // The ops silence is not A's: A neither lists, reads, updates nor expires it.
    let listed = get("/api/v2/silences", A).body;
    assert!(listed.contains(&a_id) && !listed.contains(&ops_id), "{listed}");
    assert_eq!(get(&format!("/api/v2/silence/{ops_id}"), A).status, 404);
    let r = s.post("/api/v2/silences", &json_a, silence(fan.clone(), Some(&ops_id)));
    assert_eq!(r.status, 404, "{}", r.body);
    let del = |id: &str, auth: &str| {
        reqwest::blocking::Client::new()
            .delete(s.url(&format!("/api/v2/silence/{id}")))
            .header("Authorization", auth)
            .send()
            .expect("DELETE")
            .status()
            .as_u16()
    };
    assert_eq!(del(&ops_id, A), 404);
    assert_eq!(get(&format!("/api/v2/silence/{ops_id}"), OPS).json()["status"]["state"], "active");
    assert_eq!(del(&a_id, A), 200);
    // Team B may read and write but holds no silence scope.
    let r =
        s.post("/api/v2/silences", &[("Authorization", B), ("content-type", "application/json")], silence(fan, None));
    assert_eq!(r.status, 403, "{}", r.body);
}

/// On a remote store, Argus passes the read API through with the scope's matchers added, as
/// prom-label-proxy does: team A reads only its share of what VictoriaMetrics holds.
#[test]
fn on_victoriametrics_reads_pass_through_narrowed() {
    let Some(vm) = Peer::victoria_metrics() else { return };
    let t = now_ms() - 10_000;
    let import = format!(
        "gpu_util{{cluster=\"a\",host=\"host-a\"}} 1 {t}\n\
         gpu_util{{cluster=\"b\",host=\"host-b\",rack=\"rack-9\"}} 2 {t}\n\
         secret_b_only{{cluster=\"b\"}} 3 {t}\n"
    );
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/api/v1/import/prometheus", vm.base))
        .body(import)
        .send()
        .expect("import into VictoriaMetrics");
    assert!(r.status().is_success(), "{:?}", r.text());
    vm.flush();
    let tokens = tokens();
    let s = Server::with_config(&format!(
        "[store]\nbackend = \"prometheus\"\n[store.remote]\nflavour = \"victoriametrics\"\nurl = \"{}\"\n{tokens}",
        vm.base
    ));
    let get = |path: &str, auth: &str| {
        let r = s.get_with(path, &[("Authorization", auth)]);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        r
    };
    let now = secs(now_ms());
    let a = get(&format!("/api/v1/query?query={}&time={now}", enc(r#"{__name__=~".+"}"#)), A);
    assert_nothing_of_b("a query through to VictoriaMetrics", &a.body);
    assert_eq!(a.json()["data"]["result"].as_array().unwrap().len(), 1, "{}", a.body);
    let ops = get(&format!("/api/v1/query?query={}&time={now}", enc(r#"{__name__=~".+"}"#)), OPS);
    assert_eq!(ops.json()["data"]["result"].as_array().unwrap().len(), 3, "ops reads everything: {}", ops.body);
    let r = s.post(
        "/api/v1/query_range",
        &[("Authorization", A), ("content-type", "application/x-www-form-urlencoded")],
        format!(
            "query={}&start={}&end={now}&step=10",
            enc("sum(gpu_util) + count(secret_b_only or vector(0))"),
            secs(now_ms() - 60_000)
        ),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_nothing_of_b("a form query_range", &r.body);
    for path in ["/api/v1/labels", "/api/v1/label/__name__/values", "/api/v1/label/host/values"] {
        assert_nothing_of_b(path, &get(path, A).body);
    }
    assert_eq!(get("/api/v1/label/host/values", A).json()["data"], json!(["host-a"]));
    let series = get(&format!("/api/v1/series?match[]={}", enc(r#"{__name__=~".+"}"#)), A);
    assert_nothing_of_b("/api/v1/series", &series.body);
    assert_eq!(get("/api/v1/label/__name__/values", B).json()["data"], json!(["gpu_util", "secret_b_only"]));
}
