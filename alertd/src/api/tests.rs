use super::*;
use crate::clock::TokioClock;
use crate::db::{DbLog, DbSilences, HistoryNotifier};
use crate::engine::Engine;
use crate::notify::Recorder;
use axum::body::Body;
use axum::http::{Method, Request};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::Duration;
use tower::ServiceExt;

const T0: Timestamp = Timestamp(1_600_000_000_000);

const CONFIG: &str = r#"
route:
  receiver: team
  group_by: [alertname]
  group_wait: 30s
  group_interval: 1m
  repeat_interval: 1h
  routes:
    - matchers: ['severity="page"']
      receiver: pager
      continue: true
inhibit_rules:
  - source_matchers: ['alertname="HostDown"']
    target_matchers: ['alertname!="HostDown"']
    equal: [host]
receivers:
  - name: team
    webhook_configs: [{url: 'http://localhost:5001/'}]
  - name: pager
    webhook_configs: [{url: 'http://localhost:5002/'}]
argus:
  correlation: {}
"#;

struct Api {
    app: Router,
    state: State,
    _dir: tempfile::TempDir,
}

fn api(config: &str, max_body_bytes: usize) -> Api {
    api_with_limits(config, max_body_bytes, DEFAULT_MAX_ALERTS_PER_REQUEST, DEFAULT_MAX_LABELS_PER_ALERT)
}

fn api_with_limits(config: &str, max_body_bytes: usize, max_alerts: usize, max_labels: usize) -> Api {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path()).unwrap());
    let silences = Arc::new(DbSilences::load(db.clone()).unwrap());
    let nflog = Arc::new(DbLog::load(db.clone()).unwrap());
    let notifier = Arc::new(HistoryNotifier { inner: Arc::new(Recorder::default()), db: db.clone() });
    let cfg = crate::config::parse(config, "test.yml").unwrap();
    let engine = Engine::new(cfg, silences.clone(), nflog, notifier);
    let state = State {
        engine: Shared::new(engine, TokioClock::starting_at(T0)),
        silences,
        db,
        config_text: Arc::new(std::sync::RwLock::new(config.to_string())),
        reload: None,
        started: T0,
        max_body_bytes,
        max_alerts_per_request: max_alerts,
        max_labels_per_alert: max_labels,
        cluster: None,
    };
    Api { app: router(state.clone()), state, _dir: dir }
}

impl Api {
    async fn call(&self, method: Method, uri: &str, body: impl Into<Body>) -> (u16, Value) {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json")
            .body(body.into())
            .unwrap();
        let res = self.app.clone().oneshot(req).await.unwrap();
        let status = res.status().as_u16();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        let v = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() };
        (status, v)
    }

    async fn get(&self, uri: &str) -> Value {
        let (status, v) = self.call(Method::GET, uri, Body::empty()).await;
        assert_eq!(status, 200, "GET {uri}: {v}");
        v
    }

    async fn post(&self, uri: &str, body: Value) -> (u16, Value) {
        self.call(Method::POST, uri, body.to_string()).await
    }
}

/// `alertname@host:state` for each alert of a list.
fn brief(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|a| {
            format!("{}@{}:{}", a["labels"]["alertname"], a["labels"]["host"], a["status"]["state"]).replace('"', "")
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn alert_count_and_label_limits_name_the_limit() {
    let a = api_with_limits(CONFIG, DEFAULT_MAX_BODY_BYTES, 2, 3);
    let alert = |host: &str| json!({"labels": {"alertname": "A", "host": host}});
    let (status, body) = a.post("/api/v2/alerts", json!([alert("h1"), alert("h2"), alert("h3")])).await;
    assert_eq!(
        (status, body),
        (
            413,
            json!(
                "3 alerts exceed the limit of 2 per request (alertd.max_alerts_per_request); send them in smaller batches"
            )
        )
    );
    let wide = json!({"labels": {"alertname": "A", "host": "h1", "a": "1", "b": "2"}});
    let (status, body) = a.post("/api/v2/alerts", json!([alert("h1"), wide])).await;
    assert_eq!(
        (status, body),
        (400, json!("alert 1: 4 labels exceed the limit of 3 per alert (alertd.max_labels_per_alert)"))
    );
    assert_eq!(a.get("/api/v2/alerts").await, json!([]), "nothing of a refused request is taken in");
    assert_eq!(a.post("/api/v2/alerts", json!([alert("h1"), alert("h2")])).await.0, 200);
}

#[tokio::test(start_paused = true)]
async fn posted_alerts_come_back_in_alertmanagers_shape() {
    let a = api(CONFIG, DEFAULT_MAX_BODY_BYTES);
    let (status, body) = a
        .post(
            "/api/v2/alerts",
            json!([{"labels": {"alertname": "DiskFull", "host": "h1", "severity": "page"},
                    "annotations": {"summary": "disk full"}, "generatorURL": "http://prom/graph"}]),
        )
        .await;
    assert_eq!((status, body), (200, Value::Null));
    let got = a.get("/api/v2/alerts").await;
    expect_test::expect![[r#"
        [
          {
            "annotations": {
              "summary": "disk full"
            },
            "endsAt": "2020-09-13T12:31:40Z",
            "fingerprint": "a4d501e927cb3095",
            "generatorURL": "http://prom/graph",
            "labels": {
              "alertname": "DiskFull",
              "host": "h1",
              "severity": "page"
            },
            "receivers": [
              {
                "name": "pager"
              }
            ],
            "startsAt": "2020-09-13T12:26:40Z",
            "status": {
              "inhibitedBy": [],
              "silencedBy": [],
              "state": "active"
            },
            "updatedAt": "2020-09-13T12:26:40Z"
          }
        ]"#]]
    .assert_eq(&serde_json::to_string_pretty(&got).unwrap());
    let groups = a.get("/api/v2/alerts/groups").await;
    let shape: Vec<String> = groups
        .as_array()
        .unwrap()
        .iter()
        .map(|g| format!("{} {} {}", g["receiver"]["name"], g["labels"], g["alerts"].as_array().unwrap().len()))
        .collect();
    // A matching child route takes the alert from the root (continue only goes on to siblings).
    assert_eq!(shape, vec![r#""pager" {"alertname":"DiskFull"} 1"#]);
    assert_eq!(a.get("/api/v2/alerts/groups?receiver=pag.*").await.as_array().unwrap().len(), 1);
    assert_eq!(a.get("/api/v2/alerts/groups?receiver=pag").await.as_array().unwrap().len(), 0);
}

#[tokio::test(start_paused = true)]
async fn filters_select_by_matchers_receiver_and_state() {
    let a = api(CONFIG, DEFAULT_MAX_BODY_BYTES);
    let alerts = json!([
        {"labels": {"alertname": "HostDown", "host": "h1"}},
        {"labels": {"alertname": "GpuHot", "host": "h1"}},
        {"labels": {"alertname": "GpuHot", "host": "h2", "severity": "page"}},
        {"labels": {"alertname": "Old", "host": "h3"}, "startsAt": "2020-09-13T11:00:00Z", "endsAt": "2020-09-13T12:00:00Z"}
    ]);
    assert_eq!(a.post("/api/v2/alerts", alerts).await.0, 200);
    let (status, _) = a
        .post(
            "/api/v2/silences",
            json!({"matchers": [{"name": "host", "value": "h2", "isRegex": false}], "startsAt": "2020-09-13T12:00:00Z",
                   "endsAt": "2020-09-13T13:00:00Z", "createdBy": "ops", "comment": "swap"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        brief(&a.get("/api/v2/alerts").await),
        ["HostDown@h1:active", "GpuHot@h2:suppressed", "GpuHot@h1:suppressed"]
    );
    assert_eq!(brief(&a.get("/api/v2/alerts?silenced=false").await), ["HostDown@h1:active", "GpuHot@h1:suppressed"]);
    assert_eq!(brief(&a.get("/api/v2/alerts?inhibited=false&silenced=false").await), ["HostDown@h1:active"]);
    assert_eq!(brief(&a.get("/api/v2/alerts?active=false").await), ["GpuHot@h2:suppressed", "GpuHot@h1:suppressed"]);
    assert_eq!(
        brief(&a.get("/api/v2/alerts?filter=alertname%3D%22GpuHot%22&filter=host%3D~%22h.%22").await),
        ["GpuHot@h2:suppressed", "GpuHot@h1:suppressed"]
    );
    assert_eq!(brief(&a.get("/api/v2/alerts?receiver=pager").await), ["GpuHot@h2:suppressed"]);
    let inhibited = a.get("/api/v2/alerts?filter=alertname%3DGpuHot&filter=host%3Dh1").await;
    let down = &a.get("/api/v2/alerts?filter=alertname%3DHostDown").await[0]["fingerprint"];
    assert_eq!(inhibited[0]["status"]["inhibitedBy"], json!([down]));
}

#[tokio::test(start_paused = true)]
async fn bad_alerts_are_refused_whole_and_named() {
    let a = api(CONFIG, 1024);
    let cases = [
        (json!({"labels": {"a": "b"}}).to_string(), 400, "body is not a JSON array of alerts: invalid type: map"),
        ("[{".to_string(), 400, "body is not a JSON array of alerts: EOF while parsing"),
        (json!([{"labels": {"a": "b"}}, {"labels": {}}]).to_string(), 400, "alert 1: alert has no labels"),
        (json!([{"labels": {"a": "b"}, "foo": 1}]).to_string(), 400, "alert 0: unknown field `foo`"),
        (json!([{"annotations": {}}]).to_string(), 400, "alert 0: missing field `labels`"),
        (json!([{"labels": {"a-b": "c"}}]).to_string(), 400, "alert 0: invalid label name \"a-b\""),
        (json!([{"labels": {"a": "b"}, "startsAt": "yesterday"}]).to_string(), 400, "alert 0: invalid RFC 3339"),
        (
            json!([{"labels": {"a": "b"}, "startsAt": "2020-09-13T12:00:00Z", "endsAt": "2020-09-13T11:00:00Z"}])
                .to_string(),
            400,
            "alert 0: alert {a=\"b\"} ends before it starts",
        ),
        (
            format!("[{}]", vec![json!({"labels": {"a": "b"}}).to_string(); 100].join(",")),
            413,
            "request body larger than 1024 bytes",
        ),
    ];
    for (body, want_status, want) in cases {
        let (status, v) = a.call(Method::POST, "/api/v2/alerts", body.clone()).await;
        let msg = v.as_str().unwrap_or_default();
        assert!(status == want_status && msg.starts_with(want), "{body}: {status} {v}");
    }
    assert_eq!(a.get("/api/v2/alerts").await, json!([]), "nothing was stored");
    for uri in [
        "/api/v2/alerts?filter=a%3D~%22(%22",
        "/api/v2/alerts?filter=1a%3Db",
        "/api/v2/alerts?active=maybe",
        "/api/v2/alerts?receiver=(",
        "/api/v2/silences?filter=%7Ba",
    ] {
        let (status, v) = a.call(Method::GET, uri, Body::empty()).await;
        assert_eq!(status, 400, "{uri}: {v}");
        assert!(!v.as_str().unwrap().is_empty());
    }
    // Still serving.
    assert_eq!(a.post("/api/v2/alerts", json!([{"labels": {"a": "b"}}])).await.0, 200);
    assert_eq!(a.get("/api/v2/alerts").await.as_array().unwrap().len(), 1);
}

fn silence(extra: Value) -> Value {
    let mut s = json!({"matchers": [{"name": "host", "value": "h1", "isRegex": false, "isEqual": true}],
        "startsAt": "2020-09-13T12:26:40Z", "endsAt": "2020-09-13T14:00:00Z", "createdBy": "ops", "comment": "swap"});
    for (k, v) in extra.as_object().unwrap() {
        s[k] = v.clone();
    }
    s
}

#[tokio::test(start_paused = true)]
async fn silences_are_made_updated_listed_and_expired() {
    let a = api(CONFIG, DEFAULT_MAX_BODY_BYTES);
    let (status, v) = a.post("/api/v2/silences", silence(json!({}))).await;
    assert_eq!(status, 200, "{v}");
    let id = v["silenceID"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    let got = a.get(&format!("/api/v2/silence/{id}")).await;
    assert_eq!(got["status"]["state"], "active");
    assert_eq!(got["matchers"], json!([{"name": "host", "value": "h1", "isRegex": false, "isEqual": true}]));
    assert_eq!((got["createdBy"].as_str(), got["updatedAt"].as_str()), (Some("ops"), Some("2020-09-13T12:26:40Z")));
    // A later end, same matchers: updated in place.
    let (_, v) = a.post("/api/v2/silences", silence(json!({"id": id, "endsAt": "2020-09-13T15:00:00Z"}))).await;
    assert_eq!(v["silenceID"], id.as_str());
    // Other matchers: the old one expires, a new one is made.
    let other = json!([{"name": "host", "value": "h.*", "isRegex": true}]);
    let (_, v) = a.post("/api/v2/silences", silence(json!({"id": id, "matchers": other}))).await;
    let id2 = v["silenceID"].as_str().unwrap().to_string();
    assert_ne!(id2, id);
    let pending = silence(json!({"startsAt": "2020-09-14T00:00:00Z", "endsAt": "2020-09-15T00:00:00Z"}));
    assert_eq!(a.post("/api/v2/silences", pending).await.0, 200);
    let states: Vec<String> =
        a.get("/api/v2/silences").await.as_array().unwrap().iter().map(|s| s["status"]["state"].to_string()).collect();
    assert_eq!(states, [r#""active""#, r#""pending""#, r#""expired""#]);
    assert_eq!(a.get("/api/v2/silences?filter=host%3D%22h1%22").await.as_array().unwrap().len(), 2);
    assert_eq!(a.get("/api/v2/silences?filter=host%3D~%22h.%5C%5C*%22").await.as_array().unwrap().len(), 1);
    let (status, _) = a.call(Method::DELETE, &format!("/api/v2/silence/{id2}"), Body::empty()).await;
    assert_eq!(status, 200);
    assert_eq!(a.get(&format!("/api/v2/silence/{id2}")).await["status"]["state"], "expired");
    let (status, v) = a.call(Method::DELETE, "/api/v2/silence/nope", Body::empty()).await;
    assert_eq!((status, v.as_str()), (404, Some("silence nope not found")));
    assert_eq!(a.call(Method::GET, "/api/v2/silence/nope", Body::empty()).await.0, 404);
    assert_eq!(a.post("/api/v2/silences", silence(json!({"id": "nope"}))).await.0, 404);
}

#[tokio::test(start_paused = true)]
async fn bad_silences_are_refused() {
    let a = api(CONFIG, DEFAULT_MAX_BODY_BYTES);
    let cases = [
        (json!({"matchers": []}), "silence: at least one matcher required"),
        (
            json!({"matchers": [{"name": "a", "value": ".*", "isRegex": true}]}),
            "silence: at least one matcher must not match the empty string",
        ),
        (json!({"matchers": [{"name": "a", "value": "(", "isRegex": true}]}), "silence: matcher 0: invalid regex"),
        (
            json!({"matchers": [{"name": "1a", "value": "x", "isRegex": false}]}),
            "silence: matcher 0: invalid label name \"1a\"",
        ),
        (json!({"matchers": [{"name": "a", "value": "x"}]}), "silence: missing field `isRegex`"),
        (json!({"endsAt": "2020-09-13T12:00:00Z"}), "silence: end time must not be before start time"),
        (
            json!({"startsAt": "2020-09-13T11:00:00Z", "endsAt": "2020-09-13T12:00:00Z"}),
            "silence: end time can't be in the past",
        ),
        (json!({"comment": ""}), "silence: comment is required"),
        (json!({"owner": "x"}), "silence: unknown field `owner`"),
    ];
    for (extra, want) in cases {
        let (status, v) = a.post("/api/v2/silences", silence(extra.clone())).await;
        assert!(status == 400 && v.as_str().unwrap().starts_with(want), "{extra}: {status} {v}");
    }
    assert_eq!(a.get("/api/v2/silences").await, json!([]));
}

#[tokio::test(start_paused = true)]
async fn status_and_receivers() {
    let a = api(CONFIG, DEFAULT_MAX_BODY_BYTES);
    let s = a.get("/api/v2/status").await;
    assert_eq!(s["cluster"], json!({"name": "", "status": "disabled", "peers": []}));
    let shown = s["config"]["original"].as_str().expect("config text");
    assert_eq!(shown, crate::config::mask::masked(CONFIG));
    assert!(shown.contains("url: <secret>") && !shown.contains("localhost:500"), "{shown}");
    assert!(shown.contains("receiver: team"), "{shown}");
    assert_eq!(s["uptime"], "2020-09-13T12:26:40Z");
    assert_eq!(s["versionInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(a.get("/api/v2/receivers").await, json!([{"name": "pager"}, {"name": "team"}]));
}

#[tokio::test(start_paused = true)]
async fn notifications_and_incidents_are_recorded_and_acknowledged() {
    let a = api(CONFIG, DEFAULT_MAX_BODY_BYTES);
    let timers = tokio::spawn(crate::runner::run_shared(a.state.engine.clone()));
    let alerts =
        json!([{"labels": {"alertname": "HostDown", "host": "h1"}}, {"labels": {"alertname": "GpuHot", "host": "h2"}}]);
    assert_eq!(a.post("/api/v2/alerts", alerts).await.0, 200);
    tokio::time::sleep(Duration::from_secs(31)).await;
    let incidents = a.get("/api/v1/incidents").await;
    assert_eq!(incidents["status"], "success");
    let list = incidents["data"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{incidents}");
    let i = &list[0];
    assert_eq!((i["probableCause"].as_str(), i["alerts"].as_i64()), (Some("node_down"), Some(1)));
    assert_eq!((i["firstNotifiedAt"].as_str(), i["acknowledged"].is_null()), (Some("2020-09-13T12:27:10Z"), true));
    let id = i["id"].as_i64().unwrap();
    let (status, v) = a.post(&format!("/api/v1/incidents/{id}/ack"), json!({"by": "ana", "comment": "on it"})).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["data"]["acknowledged"], json!({"at": "2020-09-13T12:27:11Z", "by": "ana", "comment": "on it"}));
    // The first acknowledgement stands.
    let (_, v) = a.call(Method::POST, &format!("/api/v1/incidents/{id}/ack"), Body::empty()).await;
    assert_eq!(v["data"]["acknowledged"]["by"], "ana");
    let (status, v) = a.call(Method::POST, "/api/v1/incidents/999/ack", Body::empty()).await;
    assert_eq!((status, v["errorType"].as_str()), (404, Some("not_found")));
    assert_eq!(a.call(Method::POST, "/api/v1/incidents/x/ack", Body::empty()).await.0, 400);

    let n = a.get("/api/v1/notifications").await["data"].clone();
    let got: Vec<String> = n.as_array().unwrap().iter().map(|x| format!("{} {}", x["receiver"], x["at"])).collect();
    assert_eq!(got, [r#""team" "2020-09-13T12:27:10Z""#, r#""team" "2020-09-13T12:27:10Z""#]);
    assert!(n[0]["incidentId"].is_i64());
    assert_eq!(n[0]["payload"]["version"], "4");
    assert_eq!(a.get("/api/v1/notifications?limit=1").await["data"].as_array().unwrap().len(), 1);
    assert_eq!(a.get("/api/v1/notifications?start=1600000031").await["data"], json!([]));
    assert_eq!(a.get("/api/v1/notifications?end=2020-09-13T12:27:10Z").await["data"].as_array().unwrap().len(), 2);
    assert_eq!(a.get("/api/v1/notifications?receiver=pager").await["data"], json!([]));
    let (status, v) = a.call(Method::GET, "/api/v1/notifications?start=soon", Body::empty()).await;
    assert_eq!((status, v["errorType"].as_str()), (400, Some("bad_data")));
    timers.abort();
}

#[tokio::test(start_paused = true)]
async fn an_incident_silenced_until_resolved_is_unsilenced_when_it_resolves() {
    let a = api(CONFIG, DEFAULT_MAX_BODY_BYTES);
    let timers = tokio::spawn(crate::runner::run_shared(a.state.engine.clone()));
    let alerts = json!([{"labels": {"alertname": "GpuHot", "host": "h2"}}]);
    assert_eq!(a.post("/api/v2/alerts", alerts).await.0, 200);
    tokio::time::sleep(Duration::from_secs(31)).await;
    let id = a.get("/api/v1/incidents").await["data"][0]["id"].as_i64().unwrap();
    let body = json!({"until": "resolved", "comment": "known", "createdBy": "ana"});
    let (status, v) = a.post(&format!("/api/v1/incidents/{id}/silence"), body.clone()).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["data"]["endsAt"], "2020-09-20T12:27:11Z", "7 days by default");
    let sid = v["data"]["silenceID"].as_str().unwrap().to_string();
    let listed = a.get("/api/v2/silences").await;
    let s = &listed[0];
    assert_eq!((s["id"].as_str(), s["untilResolved"].as_bool()), (Some(sid.as_str()), Some(true)));
    assert_eq!(s["comment"], format!("known (incident {id}, until resolved)"));
    assert_eq!(s["status"]["state"], "active");
    assert_eq!(
        s["matchers"],
        json!([
            {"name": "alertname", "value": "GpuHot", "isRegex": false, "isEqual": true},
            {"name": "host", "value": "h2", "isRegex": true, "isEqual": true}
        ])
    );
    // Ordinary silences keep Alertmanager's shape.
    let (status, v) = a.post("/api/v2/silences", silence(json!({}))).await;
    assert_eq!(status, 200);
    let plain = a.get(&format!("/api/v2/silence/{}", v["silenceID"].as_str().unwrap())).await;
    assert!(plain.get("untilResolved").is_none(), "{plain}");

    let resolved = json!([{"labels": {"alertname": "GpuHot", "host": "h2"}, "endsAt": "2020-09-13T12:27:00Z"}]);
    assert_eq!(a.post("/api/v2/alerts", resolved).await.0, 200);
    let s = a.get(&format!("/api/v2/silence/{sid}")).await;
    assert_eq!((s["status"]["state"].as_str(), s["endsAt"].as_str()), (Some("expired"), Some("2020-09-13T12:27:11Z")));

    // Nothing fires now: neither form makes a silence that would end at once.
    let (status, v) = a.post(&format!("/api/v1/incidents/{id}/silence"), body).await;
    assert_eq!((status, v["errorType"].as_str()), (404, Some("not_found")), "{v}");
    let mut body = silence(json!({"untilResolved": true}));
    body.as_object_mut().unwrap().remove("endsAt");
    let (status, v) = a.post("/api/v2/silences", body).await;
    assert_eq!(status, 400, "{v}");
    assert!(v.as_str().unwrap().contains("untilResolved needs at least one firing alert"), "{v}");
    let bad = json!({"until": "tomorrow", "comment": "x", "createdBy": "y"});
    assert_eq!(a.post(&format!("/api/v1/incidents/{id}/silence"), bad).await.0, 400);
    timers.abort();
}

/// The document lists what `router` and `capacity::router` serve, as `routes!` registers it.
#[test]
fn the_document_lists_every_operation_served() {
    let doc = serde_json::to_value(openapi::document()).unwrap();
    let mut ops: Vec<String> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| item.as_object().unwrap().keys().map(move |m| format!("{} {path}", m.to_uppercase())))
        .collect();
    ops.sort();
    assert_eq!(
        ops,
        [
            "DELETE /api/v2/silence/{id}",
            "GET /api/v1/incidents",
            "GET /api/v1/notifications",
            "GET /api/v1/suppressed",
            "GET /api/v2/alerts",
            "GET /api/v2/alerts/groups",
            "GET /api/v2/receivers",
            "GET /api/v2/silence/{id}",
            "GET /api/v2/silences",
            "GET /api/v2/status",
            "POST /-/reload",
            "POST /api/v1/incidents/{id}/ack",
            "POST /api/v1/incidents/{id}/silence",
            "POST /api/v1/scheduler/capacity",
            "POST /api/v2/alerts",
            "POST /api/v2/silences",
        ]
    );
}

/// An incident that recurs an earlier one shows how (`recurrence`), as its first notification said;
/// one that does not has no `recurrence`.
#[tokio::test(start_paused = true)]
async fn a_recurring_incident_shows_what_it_recurs() {
    let config = "route: {receiver: team, group_by: [cluster], group_wait: 30s, group_interval: 1m, repeat_interval: 4h}\n\
         receivers: [{name: team, webhook_configs: [{url: 'http://localhost:5001/', send_resolved: false}]}]\n\
         argus:\n  correlation: {labels: [host], window: 10m, backoff_step: 1, recurrence_window: 1h}\n";
    let a = api(config, DEFAULT_MAX_BODY_BYTES);
    let timers = tokio::spawn(crate::runner::run_shared(a.state.engine.clone()));
    let disk = |severity: &str, from: u64| {
        let at = |s: u64| Timestamp(T0.0 + s as i64 * 1000).to_string();
        json!([{"labels": {"alertname": "DiskFull", "host": "h1", "severity": severity},
            "startsAt": at(from), "endsAt": at(from + 60)}])
    };
    assert_eq!(a.post("/api/v2/alerts", disk("warning", 0)).await.0, 200);
    // Resolved at 1m, closed at 11m; back at 20m, critical, so it pages although the backoff would
    // hold a warning.
    tokio::time::sleep(Duration::from_secs(1200)).await;
    assert_eq!(a.post("/api/v2/alerts", disk("critical", 1200)).await.0, 200);
    tokio::time::sleep(Duration::from_secs(60)).await;
    let list = a.get("/api/v1/incidents").await["data"].clone();
    let shown: Vec<(i64, Option<&Value>)> =
        list.as_array().unwrap().iter().map(|i| (i["engineId"].as_i64().unwrap(), i.get("recurrence"))).collect();
    let recurrence = json!({"occurrence": 2, "recurrence_of": 1, "recurrences_held": 0});
    assert_eq!(shown, [(2, Some(&recurrence)), (1, None)], "{list}");
    // The acknowledged incident is answered the same way.
    let id = list[0]["id"].as_i64().unwrap();
    let (status, v) = a.post(&format!("/api/v1/incidents/{id}/ack"), json!({"by": "ana"})).await;
    assert_eq!((status, &v["data"]["recurrence"]), (200, &recurrence), "{v}");
    timers.abort();
}

/// The incident list's schema has the history row's fields and the optional `recurrence`.
#[test]
fn the_document_describes_an_incidents_recurrence() {
    let doc = serde_json::to_value(openapi::document()).unwrap();
    let schemas = &doc["components"]["schemas"];
    let entry = &schemas["IncidentEntry"]["allOf"];
    assert_eq!(entry[0]["$ref"], "#/components/schemas/IncidentRow");
    let recurrence = &entry[1]["properties"]["recurrence"]["oneOf"][1]["$ref"];
    assert_eq!(recurrence, "#/components/schemas/IncidentRecurrence");
    assert!(entry[1].get("required").is_none(), "recurrence is optional: {entry}");
    let required = &schemas["IncidentRecurrence"]["required"];
    assert_eq!(required, &json!(["occurrence", "recurrence_of", "recurrences_held"]));
    let listed = &doc["paths"]["/api/v1/incidents"]["get"]["responses"]["200"]["content"]["application/json"];
    assert_eq!(listed["schema"]["$ref"], "#/components/schemas/Success_Vec_IncidentEntry");
}
