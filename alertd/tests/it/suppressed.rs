//! Held-back alerts ("why wasn't I paged"): for each reason the pipeline, the dispatcher's timers
//! and delivery hold an alert back, the alert is recorded with that reason while held, and the
//! record ends when it is released. The engine runs on explicit times; delivery against a real
//! receiver on loopback.

use crate::support::fixture;

use argus_alertd::config;
use argus_alertd::nflog::MemLog;
use argus_alertd::notify::Recorder;
use argus_alertd::silence::{MemSilences, Silence, Silences};
use argus_alertd::suppressed::Record;
use argus_alertd::{Engine, PostableAlert, Timestamp};
use expect_test::expect;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const T0: Timestamp = Timestamp(1_600_000_000_000);

fn at(s: u64) -> Timestamp {
    T0 + Duration::from_secs(s)
}

fn secs(t: Timestamp) -> i64 {
    (t.0 - T0.0) / 1000
}

/// An alert with these labels; `ends` (seconds from T0) resolves it, else it fires for a day.
fn alert(labels: &[(&str, &str)], ends: Option<u64>) -> PostableAlert {
    PostableAlert {
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
        annotations: BTreeMap::new(),
        starts_at: None,
        ends_at: Some(at(ends.unwrap_or(86_400))),
        generator_url: String::new(),
    }
}

struct Run {
    engine: Engine,
    sent: Arc<Recorder>,
    silences: Arc<MemSilences>,
}

fn run(config: &str) -> Run {
    let cfg = config::parse(config, "test.yml").unwrap();
    let sent = Arc::new(Recorder::default());
    let silences = Arc::new(MemSilences::default());
    let engine = Engine::new(cfg, silences.clone(), Arc::new(MemLog::default()), sent.clone());
    Run { engine, sent, silences }
}

impl Run {
    fn post(&mut self, s: u64, alerts: Vec<PostableAlert>) {
        self.engine.advance(at(s));
        self.engine.post(at(s), alerts).unwrap();
        self.engine.advance(at(s));
    }

    /// Notifications so far: `offset receiver [alertnames]`.
    fn sent(&self) -> Vec<String> {
        self.sent
            .take()
            .iter()
            .map(|n| {
                let names: Vec<String> =
                    n.message.alerts.iter().map(|a| a.labels.get("alertname").cloned().unwrap_or_default()).collect();
                format!("{} {} [{}]", secs(n.at), n.receiver, names.join(" "))
            })
            .collect()
    }

    fn records(&self) -> Vec<Record> {
        let all = self.engine.suppressed().query(&[], Timestamp(i64::MIN), Timestamp(i64::MAX));
        let mut v: Vec<Record> = all.into_values().flatten().collect();
        v.sort_by_key(|r| (r.since, r.labels.get("alertname").map(str::to_owned), r.reason.kind()));
        v
    }

    /// One line per record: alert, reason (and timer), where, since, until, end.
    fn held(&self) -> String {
        self.records().iter().map(line).collect::<Vec<_>>().join("\n")
    }
}

fn line(r: &Record) -> String {
    let name = r.labels.get("alertname").unwrap_or("");
    let detail = match &r.reason {
        argus_alertd::suppressed::Reason::Grouped { timer, .. } => format!(" {}", json(timer).as_str().unwrap()),
        _ => String::new(),
    };
    let t = |x: Option<Timestamp>| x.map_or("-".to_string(), |t| format!("{}s", secs(t)));
    let place = if r.route.integration.is_empty() { r.route.receiver.clone() } else { r.route.integration.clone() };
    format!(
        "{name} {}{detail} @{place} since={}s until={} ended={}",
        r.reason.kind(),
        secs(r.since),
        t(r.until),
        t(r.ended)
    )
}

fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap()
}

#[test]
fn silenced_alert_is_recorded_with_its_silence_until_the_silence_ends() {
    let mut r = run(&fixture::config(&[]));
    let m = argus_alertd::config::matchers::parse(r#"alertname="A""#).unwrap();
    let s = Silence {
        id: "s-1".into(),
        matchers: m,
        starts_at: at(0),
        ends_at: at(120),
        updated_at: at(0),
        created_by: "alice".into(),
        comment: "maintenance of h1".into(),
        until_resolved: false,
    };
    r.silences.set(s).unwrap();
    r.post(0, vec![alert(&[("alertname", "A")], None)]);
    r.engine.advance(at(60));
    assert!(r.sent().is_empty());
    expect![[r#"
        A grouped group_wait @team since=0s until=30s ended=30s
        A silenced @team since=30s until=120s ended=-"#]]
    .assert_eq(&r.held());
    let silenced = r.records().into_iter().find(|x| x.reason.kind() == "silenced").unwrap();
    expect![[r#"{"comment":"maintenance of h1","createdBy":"alice","endsAt":"2020-09-13T12:28:40Z","id":"s-1","reason":"silenced","untilResolved":false}"#]]
    .assert_eq(&flat(&json(&silenced.reason)));
    // The silence ends at 120s; the group's next flush (30s + 5m) notifies the alert.
    r.engine.advance(at(400));
    assert_eq!(r.sent(), ["330 team [A]"]);
    expect![[r#"
        A grouped group_wait @team since=0s until=30s ended=30s
        A silenced @team since=30s until=120s ended=330s"#]]
    .assert_eq(&r.held());
}

/// `{"reason": …}` with its fields sorted, silences inlined: a stable one-line form.
fn flat(v: &serde_json::Value) -> String {
    let mut out = serde_json::Map::new();
    for (k, x) in v.as_object().unwrap() {
        match x.as_array().and_then(|a| a.first()).and_then(|f| f.as_object()) {
            Some(first) if k == "silences" => out.extend(first.clone()),
            _ => {
                out.insert(k.clone(), x.clone());
            }
        }
    }
    serde_json::to_string(&out).unwrap()
}

#[test]
fn inhibited_alert_names_the_rule_and_the_inhibiting_alert_until_that_resolves() {
    let cfg = format!(
        "{}inhibit_rules:\n  - source_matchers: ['alertname=\"HostDown\"']\n    target_matchers: ['alertname!=\"HostDown\"']\n    equal: [host]\n",
        fixture::config(&[])
    );
    let mut r = run(&cfg);
    r.post(0, vec![alert(&[("alertname", "HostDown"), ("host", "h1")], None)]);
    r.post(5, vec![alert(&[("alertname", "GpuLost"), ("host", "h1")], None)]);
    r.engine.advance(at(60));
    assert_eq!(r.sent(), ["30 team [HostDown]"]);
    let inhibited = r.records().into_iter().find(|x| x.reason.kind() == "inhibited").unwrap();
    assert_eq!(inhibited.labels.get("alertname"), Some("GpuLost"));
    assert!(inhibited.is_open());
    let source =
        argus_alertd::alert::fingerprint(&argus_model::Labels::from_pairs([("alertname", "HostDown"), ("host", "h1")]));
    let want = serde_json::json!({"reason": "inhibited", "rules": [{
        "rule": 0,
        "sourceMatchers": ["alertname=\"HostDown\""],
        "targetMatchers": ["alertname!=\"HostDown\""],
        "equal": ["host"],
        "alerts": [{"fingerprint": source.to_string(), "labels": {"alertname": "HostDown", "host": "h1"}}],
    }]});
    assert_eq!(json(&inhibited.reason), want);
    // HostDown resolves at 100s: GpuLost's group notifies it at its next flush (35s + 5m).
    r.post(100, vec![alert(&[("alertname", "HostDown"), ("host", "h1")], Some(100))]);
    r.engine.advance(at(400));
    let sent = r.sent();
    assert!(sent.contains(&"335 team [GpuLost]".to_string()), "{sent:?}");
    expect![[r#"
        HostDown grouped group_wait @team since=0s until=30s ended=30s
        GpuLost grouped group_wait @team since=5s until=35s ended=35s
        GpuLost inhibited @team since=35s until=- ended=335s"#]]
    .assert_eq(&r.held());
}

#[test]
fn flapping_alert_is_held_with_its_flap_state_until_it_settles() {
    let mut r = run("route:\n  receiver: team\n  group_by: [alertname]\n  group_wait: 30s\n  group_interval: 1m\n\
         receivers: [{name: team, webhook_configs: [{url: 'http://localhost:5001/', send_resolved: false}]}]\n\
         argus:\n  flap: {window: 10m, threshold: 3, settle: 10m}\n");
    // Fires at 0, 2m, 4m, 6m and resolves at 1m, 3m, 5m; then stays firing.
    for m in 0..7u64 {
        r.post(m * 60, vec![alert(&[("alertname", "Flappy")], (m % 2 == 1).then_some(m * 60))]);
    }
    r.engine.advance(at(7 * 60));
    // Each refiring is a new group (the resolved one was removed), held by flap suppression from its
    // first flush until it resolves.
    expect![[r#"
        Flappy grouped group_wait @team since=0s until=30s ended=30s
        Flappy grouped group_wait @team since=120s until=150s ended=150s
        Flappy flapping @team/webhook/0 since=150s until=720s ended=180s
        Flappy grouped group_wait @team since=240s until=270s ended=270s
        Flappy flapping @team/webhook/0 since=270s until=840s ended=300s
        Flappy grouped group_wait @team since=360s until=390s ended=390s
        Flappy flapping @team/webhook/0 since=390s until=960s ended=-"#]]
    .assert_eq(&r.held());
    let f = r.records().into_iter().find(Record::is_open).unwrap();
    assert_eq!(f.until, Some(at(6 * 60 + 600)), "released 10m after its last change");
    let reason = json(&f.reason);
    assert_eq!(reason["changes"], 7);
    assert_eq!((reason["threshold"].as_u64(), reason["windowSeconds"].as_u64()), (Some(3), Some(600)));
    assert_eq!(reason["lastChange"], json(&at(360)));
    r.engine.advance(at(17 * 60));
    assert_eq!(r.sent(), ["30 team [Flappy]", "990 team [Flappy]"]);
    let f = r.records().into_iter().rfind(|x| x.reason.kind() == "flapping").unwrap();
    assert_eq!(f.ended, Some(at(990)), "ended when it was notified");
}

#[test]
fn grouped_alerts_wait_for_group_wait_group_interval_and_repeat_interval() {
    let mut r = run(&fixture::config(&[]));
    r.post(0, vec![alert(&[("alertname", "A"), ("host", "h1")], None)]);
    r.post(60, vec![alert(&[("alertname", "A"), ("host", "h2")], None)]);
    r.engine.advance(at(60));
    expect![[r#"
        A grouped group_wait @team since=0s until=30s ended=30s
        A grouped group_interval @team since=60s until=330s ended=-"#]]
    .assert_eq(&r.held());
    let open = r.records().into_iter().find(Record::is_open).unwrap();
    assert_eq!(open.labels.get("host"), Some("h2"));
    assert_eq!((open.route.route.as_str(), open.route.group_key.as_str()), ("{}", "{}:{alertname=\"A\"}"));
    // Both notified at 330s; at 630s nothing is new, so they wait for the repeat interval (1h).
    r.engine.advance(at(630));
    assert_eq!(r.sent(), ["30 team [A]", "330 team [A A]"]);
    expect![[r#"
        A grouped group_wait @team since=0s until=30s ended=30s
        A grouped group_interval @team since=60s until=330s ended=330s
        A grouped repeat_interval @team/webhook/0 since=630s until=3930s ended=-
        A grouped repeat_interval @team/webhook/0 since=630s until=3930s ended=-"#]]
    .assert_eq(&r.held());
    r.engine.advance(at(4230));
    assert_eq!(r.sent(), ["4230 team [A A]"]);
    assert!(r.records().iter().all(|x| !x.is_open()), "{}", r.held());
}

#[test]
fn time_interval_muting_the_route_is_named_until_it_ends() {
    // T0 is 12:26:40 UTC; the interval mutes until 13:00.
    let cfg = fixture::config(&["{matchers: ['team=\"gpu\"'], receiver: pager, mute_time_intervals: [lunch]}"])
        + "time_intervals:\n  - name: lunch\n    time_intervals:\n      - times: [{start_time: '12:00', end_time: '13:00'}]\n";
    let mut r = run(&cfg);
    r.post(0, vec![alert(&[("alertname", "A"), ("team", "gpu")], None)]);
    r.engine.advance(at(600));
    assert!(r.sent().is_empty());
    let muted = r.records().into_iter().find(|x| x.reason.kind() == "time_interval").unwrap();
    assert_eq!(
        json(&muted.reason),
        serde_json::json!({"reason": "time_interval", "field": "mute_time_intervals", "intervals": ["lunch"]})
    );
    assert_eq!((muted.route.receiver.as_str(), muted.route.route.as_str()), ("pager", "{}/{team=\"gpu\"}"));
    // 13:00 is T0 + 2000s; the flush after it (30s + 7 × 5m = 2130s) notifies.
    r.engine.advance(at(2200));
    assert_eq!(r.sent(), ["2130 pager [A]"]);
    expect![[r#"
        A grouped group_wait @pager since=0s until=30s ended=30s
        A time_interval @pager since=30s until=- ended=2130s"#]]
    .assert_eq(&r.held());
}

#[test]
fn resolving_ends_what_held_the_alert() {
    let mut r = run(&fixture::config(&[]));
    r.post(0, vec![alert(&[("alertname", "A")], None)]);
    r.post(10, vec![alert(&[("alertname", "A")], Some(10))]);
    expect![[r#"A grouped group_wait @team since=0s until=30s ended=10s"#]].assert_eq(&r.held());
}

// === delivery: storm control and failing receivers ===

/// A webhook receiver on loopback answering `statuses` in turn, then 200; its URL and how many
/// requests it got.
async fn receiver(statuses: Vec<u16>) -> (String, Arc<std::sync::Mutex<usize>>) {
    use axum::http::StatusCode;
    let got = Arc::new(std::sync::Mutex::new(0usize));
    let script = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::from(statuses)));
    let (g, sc) = (got.clone(), script.clone());
    let app = axum::Router::new().fallback(move || {
        let (g, sc) = (g.clone(), sc.clone());
        async move {
            *g.lock().unwrap() += 1;
            let status = sc.lock().unwrap().pop_front().unwrap_or(200);
            StatusCode::from_u16(status).unwrap()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, got)
}

/// Waits until `f` holds, or fails after 10 s.
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

struct Delivery {
    engine: Engine,
    _dir: tempfile::TempDir,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

/// An engine notifying `url` through the outbox and its delivery workers, as `argus serve` runs it;
/// `argus` is the receiver's `argus:` section. The workers start once the groups of `alerts`,
/// posted at 0, have flushed at 30s.
fn deliver(url: &str, argus: &str, policy: argus_alertd::deliver::RetryPolicy, alerts: Vec<PostableAlert>) -> Delivery {
    use argus_alertd::deliver::{self, Deliverer};
    let text = format!(
        "route:\n  receiver: team\n  group_by: [alertname]\n  group_wait: 30s\n  group_interval: 5m\n\
         receivers:\n  - name: team\n    webhook_configs: [{{url: '{url}'}}]\n{argus}"
    );
    let cfg = config::parse(&text, "test.yml").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let outbox = Arc::new(argus_alertd::outbox::Outbox::open(&dir.path().join("alertd.db")).unwrap());
    let deliverer =
        Deliverer::new(outbox, deliver::build(&cfg).unwrap(), policy).with_rate_limits(deliver::rate_limits(&cfg));
    let notifier = Arc::new(deliverer.notifier());
    let mut engine = Engine::new(cfg, Arc::new(MemSilences::default()), Arc::new(MemLog::default()), notifier);
    engine.post(at(0), alerts).unwrap();
    engine.advance(at(30));
    Delivery { engine, _dir: dir, workers: deliverer.spawn() }
}

impl Delivery {
    fn records(&self, kind: &str) -> Vec<Record> {
        let all = self.engine.suppressed().query(&[], Timestamp(i64::MIN), Timestamp(i64::MAX));
        all.into_values().flatten().filter(|r| r.reason.kind() == kind).collect()
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        for w in &self.workers {
            w.abort();
        }
    }
}

#[tokio::test]
async fn storm_control_holds_alerts_until_the_rate_limit_lets_their_message_out() {
    let (url, got) = receiver(Vec::new()).await;
    let argus = "    argus: {rate_limit: {max: 1, per: 2s}}\n";
    let alerts = vec![alert(&[("alertname", "A")], None), alert(&[("alertname", "B")], None)];
    let d = deliver(&url, argus, Default::default(), alerts);
    until("a storm record", || !d.records("storm").is_empty()).await;
    let held = d.records("storm");
    assert_eq!(held.len(), 1, "one of the two messages waits: {held:?}");
    let h = &held[0];
    assert!(h.is_open());
    assert_eq!(
        json(&h.reason),
        serde_json::json!({"reason": "storm", "maxMessages": 1, "perSeconds": 2.0, "waiting": 1})
    );
    assert_eq!((h.route.receiver.as_str(), h.route.integration.as_str()), ("team", "team/webhook/0"));
    let name = h.labels.get("alertname").unwrap().to_string();
    assert_eq!(h.route.group_key, format!("{{}}:{{alertname=\"{name}\"}}"));
    assert!(h.until.is_some_and(|u| u > h.since), "until the next slot");
    until("the held message to go out", || *got.lock().unwrap() == 2).await;
    until("the storm record to end", || d.records("storm").iter().all(|r| !r.is_open())).await;
}

#[tokio::test]
async fn failing_delivery_is_recorded_with_its_error_until_a_retry_succeeds() {
    let (url, got) = receiver(vec![500]).await;
    let policy = argus_alertd::deliver::RetryPolicy {
        initial: Duration::from_millis(300),
        multiplier: 2.0,
        max: Duration::from_secs(1),
        jitter: 0.0,
        give_up_after: Duration::from_secs(60),
    };
    let d = deliver(&url, "", policy, vec![alert(&[("alertname", "A")], None)]);
    until("a delivery record", || !d.records("delivery").is_empty()).await;
    let h = d.records("delivery").remove(0);
    assert_eq!(
        json(&h.reason),
        serde_json::json!({"reason": "delivery", "error": "receiver answered http status 500: ", "attempts": 1, "gaveUp": false})
    );
    let next = h.until.expect("the next attempt");
    assert!(next.0 - h.since.0 >= 300, "the next attempt is the backoff away: {h:?}");
    until("the retry", || *got.lock().unwrap() == 2).await;
    until("the delivery record to end", || d.records("delivery").iter().all(|r| !r.is_open())).await;
}

#[tokio::test]
async fn delivery_that_gives_up_stays_recorded_until_the_alert_resolves() {
    let (url, _got) = receiver(vec![400]).await;
    let mut d = deliver(&url, "", Default::default(), vec![alert(&[("alertname", "A")], None)]);
    until("a delivery record", || !d.records("delivery").is_empty()).await;
    let h = d.records("delivery").remove(0);
    assert_eq!((json(&h.reason)["gaveUp"].as_bool(), h.until, h.is_open()), (Some(true), None, true));
    d.engine.post(at(60), vec![alert(&[("alertname", "A")], Some(60))]).unwrap();
    assert!(d.records("delivery").iter().all(|r| !r.is_open()), "resolved: nothing holds it back");
}

// === GET /api/v1/suppressed ===

async fn get(app: &axum::Router, uri: &str) -> (u16, serde_json::Value) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let req = axum::http::Request::builder().uri(uri).body(axum::body::Body::empty()).unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status().as_u16();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap())
}

/// The API over an engine holding A (silenced) and B and C (waiting for group_wait).
async fn api() -> (axum::Router, tempfile::TempDir) {
    use argus_alertd::api;
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(argus_alertd::db::Db::open(dir.path()).unwrap());
    let text = fixture::config(&[]);
    let silences = Arc::new(MemSilences::default());
    let cfg = config::parse(&text, "test.yml").unwrap();
    let engine = Engine::new(cfg, silences.clone(), Arc::new(MemLog::default()), Arc::new(Recorder::default()));
    let shared = argus_alertd::runner::Shared::new(engine, argus_alertd::clock::TokioClock::starting_at(T0));
    {
        let s = Silence::until_resolved(
            argus_alertd::config::matchers::parse(r#"alertname="A""#).unwrap(),
            "bob".into(),
            "known".into(),
            T0,
            Duration::from_secs(3600),
        );
        silences.set(s).unwrap();
        let mut e = shared.lock();
        let alerts = ["A", "B", "C"].map(|n| alert(&[("alertname", n), ("severity", "page")], None));
        e.post(at(0), alerts.to_vec()).unwrap();
        e.advance(at(30));
    }
    let state = api::State {
        engine: shared,
        silences,
        db,
        config_text: Arc::new(std::sync::RwLock::new(text)),
        reload: None,
        started: T0,
        max_body_bytes: api::DEFAULT_MAX_BODY_BYTES,
        max_alerts_per_request: api::DEFAULT_MAX_ALERTS_PER_REQUEST,
        max_labels_per_alert: api::DEFAULT_MAX_LABELS_PER_ALERT,
        cluster: None,
    };
    (api::router(state), dir)
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v["data"].as_array().unwrap().iter().map(|a| a["labels"]["alertname"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn suppressed_api_selects_alerts_by_match_and_shows_every_reason() {
    let (app, _dir) = api().await;
    let (status, all) = get(&app, "/api/v1/suppressed").await;
    assert_eq!(status, 200);
    assert_eq!(all["status"], "success");
    let mut got = names(&all);
    got.sort();
    assert_eq!(got, ["A", "B", "C"]);

    let (_, a) = get(&app, "/api/v1/suppressed?match[]=%7Balertname%3D%22A%22%7D").await;
    let a = &a["data"][0];
    assert_eq!((a["state"].as_str(), a["held"].as_bool()), (Some("firing"), Some(true)));
    let reasons: Vec<(&str, bool)> = a["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["reason"].as_str().unwrap(), r.get("endedAt").is_some()))
        .collect();
    assert_eq!(reasons, [("grouped", true), ("silenced", false)]);
    let silenced = &a["reasons"][1];
    assert_eq!((silenced["receiver"].as_str(), silenced["route"].as_str()), (Some("team"), Some("{}")));
    assert_eq!(silenced["silences"][0]["createdBy"], "bob");
    assert_eq!(silenced["silences"][0]["untilResolved"], true);
    assert_eq!(silenced["since"], "2020-09-13T12:27:10Z");

    // Matchers of one selector are ANDed, selectors ORed; a name before the braces is the alertname.
    let (_, v) =
        get(&app, "/api/v1/suppressed?match[]=B%7Bseverity%3D%22page%22%7D&match[]=%7Balertname%3D~%22C%7CZ%22%7D")
            .await;
    assert_eq!(names(&v), ["B", "C"]);
    let (_, v) = get(&app, "/api/v1/suppressed?match[]=%7Balertname%3D%22B%22%2Cseverity%3D%22none%22%7D").await;
    assert_eq!(names(&v), Vec::<String>::new());
    // Bounded in time: nothing was held before T0.
    let (_, v) = get(&app, "/api/v1/suppressed?end=1599999999").await;
    assert_eq!(names(&v), Vec::<String>::new());
}

#[tokio::test]
async fn a_bad_match_is_a_400_naming_the_parameter_and_the_parse_error() {
    let (app, _dir) = api().await;
    let (status, v) = get(&app, "/api/v1/suppressed?match[]=%7Balertname%3D%22A%22").await;
    assert_eq!(status, 400);
    assert_eq!((v["status"].as_str(), v["errorType"].as_str()), (Some("error"), Some("bad_data")));
    expect![[r#"invalid parameter "match[]": 1:15: parse error: unexpected end of input inside braces"#]]
        .assert_eq(v["error"].as_str().unwrap());
    let (status, v) = get(&app, "/api/v1/suppressed?match[]=rate(x%5B5m%5D)").await;
    assert_eq!(status, 400);
    expect![[r#"invalid parameter "match[]": "rate(x[5m])" is not a series selector"#]]
        .assert_eq(v["error"].as_str().unwrap());
    let (status, v) = get(&app, "/api/v1/suppressed?start=yesterday").await;
    assert_eq!(status, 400);
    assert!(v["error"].as_str().unwrap().starts_with("parameter start: "), "{v}");
}
