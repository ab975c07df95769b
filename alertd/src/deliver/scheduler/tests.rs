//! The scheduler integration: its bodies against golden files (`UPDATE_GOLDEN=1` rewrites them, in
//! alertd/tests/golden/receivers/), and messages through the outbox to a local HTTP receiver that
//! checks the signature, the authorization and the idempotency key.

use super::super::tests::{Reply, fast_policy, receiver, until};
use super::super::{Deliverer, Integrations, Notifier, State};
use super::*;
use crate::alert::Status;
use crate::outbox::{self, Outbox, tests::notification};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn scheduler(url: &str, secret: Option<&str>, capacity: bool) -> Scheduler {
    Scheduler {
        receiver: "sched".into(),
        target: HttpTarget {
            authorization: Some(crate::receiver::Authorization::Scheme {
                scheme: "Bearer".into(),
                credentials: SecretSource::Inline(Secret::new("tok3n")),
            }),
            ..HttpTarget::new(reqwest::Client::new(), Secret::new(url), Duration::from_secs(5))
        },
        hmac_secret: secret.map(Secret::new),
        signature_header: super::super::webhook::SIGNATURE_HEADER.into(),
        capacity,
    }
}

fn event() -> Notification {
    let mut n = notification(
        "{}/{severity=\"critical\"}:{host=\"gpu-node-07\"}",
        "sched/scheduler/0",
        1_700_000_000_000,
        &[("a1", Status::Firing)],
    );
    n.receiver = "sched".into();
    n.message.receiver = "sched".into();
    let a = &mut n.message.alerts[0];
    a.labels.insert("alertname".into(), "GpuXid".into());
    a.labels.insert("code".into(), "79".into());
    a.labels.insert("host".into(), "gpu-node-07".into());
    a.labels.insert("severity".into(), "critical".into());
    a.annotations.insert("summary".into(), "Xid 79 on gpu-node-07".into());
    n
}

pub(crate) fn plan(pool: &str, at: i64, recommended: u64) -> CapacityPlan {
    let rest = serde_json::json!({
        "current": 8, "demand": 61.5, "forecast_upper": 70.2, "base": 10, "reservation": 1,
        "desired": recommended, "action": "scale_up",
    });
    let serde_json::Value::Object(rest) = rest else { unreachable!() };
    CapacityPlan { pool: pool.into(), timestamp_ms: at, recommended, rest }
}

fn golden(name: &str, body: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/receivers");
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    let got = serde_json::to_string_pretty(&v).unwrap() + "\n";
    let file = dir.join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&file, &got).unwrap();
    }
    let want = std::fs::read_to_string(&file).expect("golden file missing: run with UPDATE_GOLDEN=1");
    assert_eq!(got, want, "body differs from {}", file.display());
}

#[test]
fn bodies_match_golden_files() {
    let s = scheduler("http://127.0.0.1:1/", None, true);
    let n = event();
    let body = s.render(&n).unwrap();
    golden("scheduler.event.json", &body);
    let back: Body = serde_json::from_slice(&body).unwrap();
    assert_eq!(back.idempotency_key, outbox::idempotency_key(&n), "the body carries the outbox's key");
    let p = plan("train-a100", 1_700_000_060_000, 11);
    let body = s.render_capacity(&p, &capacity::key("sched/scheduler/0", &p)).unwrap().unwrap();
    golden("scheduler.capacity.json", &body);
    let back: Body = serde_json::from_slice(&body).unwrap();
    assert_eq!(back.capacity, Some(p.clone()), "the plan's fields pass through as they are");
    assert!(scheduler("http://127.0.0.1:1/", None, false).render_capacity(&p, "k").is_none());
}

#[test]
fn capacity_keys_name_integration_pool_and_plan_time() {
    let p = plan("a", 1, 3);
    let k = capacity::key("s/scheduler/0", &p);
    assert_eq!(k, capacity::key("s/scheduler/0", &plan("a", 1, 4)), "the same plan time is the same plan");
    assert_ne!(k, capacity::key("s/scheduler/1", &p));
    assert_ne!(k, capacity::key("s/scheduler/0", &plan("b", 1, 3)));
    assert_ne!(k, capacity::key("s/scheduler/0", &plan("a", 2, 3)));
}

struct Setup {
    _dir: tempfile::TempDir,
    outbox: Arc<Outbox>,
    deliverer: Deliverer,
    _workers: Vec<tokio::task::JoinHandle<()>>,
}

fn setup(its: Vec<(&str, Scheduler)>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let outbox = Arc::new(Outbox::open(&dir.path().join("alertd.db")).unwrap());
    let its: Integrations =
        its.into_iter().map(|(k, s)| (k.to_string(), Arc::new(s) as Arc<dyn Integration>)).collect();
    let deliverer = Deliverer::new(outbox.clone(), its, fast_policy());
    let workers = deliverer.spawn();
    Setup { _dir: dir, outbox, deliverer, _workers: workers }
}

#[tokio::test]
async fn events_are_signed_and_retried_under_one_key() {
    let (r, url) = receiver(vec![Reply::Status(503)]).await;
    let s = setup(vec![("sched/scheduler/0", scheduler(&url, Some("hmac-key"), true))]);
    let n = event();
    let key = outbox::idempotency_key(&n);
    s.deliverer.notifier().notify(n).unwrap();
    until("delivery", || s.outbox.count(State::Delivered).unwrap() == 1).await;
    let got = r.got();
    assert_eq!(got.len(), 2, "one 503 retried");
    for g in &got {
        assert_eq!(g.headers["idempotency-key"], key.as_str());
        assert_eq!(g.headers["authorization"], "Bearer tok3n");
        let sig = format!("sha256={}", sign_hex(&Secret::new("hmac-key"), &g.body));
        assert_eq!(g.headers["x-argus-signature"], sig.as_str());
        let body: Body = serde_json::from_slice(&g.body).unwrap();
        assert_eq!((body.kind, body.idempotency_key.as_str()), (Kind::Event, key.as_str()));
    }
}

#[tokio::test]
async fn capacity_plans_go_to_the_integrations_that_take_them_once() {
    let (r, url) = receiver(vec![]).await;
    let s = setup(vec![
        ("sched/scheduler/0", scheduler(&url, Some("k"), true)),
        ("events-only/scheduler/0", scheduler(&url, Some("k"), false)),
    ]);
    let p = plan("train-a100", 1_700_000_060_000, 11);
    let notifier = s.deliverer.notifier();
    assert_eq!(notifier.push_capacity(std::slice::from_ref(&p)).unwrap(), 1);
    assert_eq!(notifier.push_capacity(std::slice::from_ref(&p)).unwrap(), 0, "a repeated push queues nothing");
    until("delivery", || s.outbox.count(State::Delivered).unwrap() == 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let got = r.got();
    assert_eq!(got.len(), 1);
    let key = capacity::key("sched/scheduler/0", &p);
    assert_eq!(got[0].headers["idempotency-key"], key.as_str());
    assert_eq!(got[0].headers["x-argus-signature"], format!("sha256={}", sign_hex(&Secret::new("k"), &got[0].body)));
    let body: Body = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!((body.kind, body.receiver.as_str(), body.capacity), (Kind::Capacity, "sched", Some(p)));
}

#[test]
fn secrets_are_read_from_their_files_when_built() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hmac"), "from-file\n").unwrap();
    let mut cfg = SchedulerConfig {
        url: Secret::new("http://s/"),
        hmac_secret: Some(SecretSource::File(dir.path().join("hmac"))),
        signature_header: "X-Sig".into(),
        http: None,
        critical: true,
        capacity: true,
        send_resolved: true,
        timeout: Duration::from_secs(1),
        remediation: None,
    };
    let target = || HttpTarget::new(reqwest::Client::new(), Secret::new("http://s/"), Duration::from_secs(1));
    let s = Scheduler::build("sched", 0, &cfg, target()).unwrap();
    assert_eq!(s.hmac_secret.unwrap().expose(), "from-file");
    cfg.hmac_secret = Some(SecretSource::File(dir.path().join("missing")));
    let err = Scheduler::build("sched", 0, &cfg, target()).err().unwrap().to_string();
    assert!(err.starts_with("request failed: receivers \"sched\" scheduler_configs[0].hmac_secret: "), "{err}");
    assert!(err.contains("missing"), "the file is named: {err}");
}

#[test]
fn the_pipeline_sees_only_schedulers_taking_critical_events() {
    let src = "route: {receiver: s}\nreceivers:\n  - name: s\n    scheduler_configs:\n      - {url: 'http://a/', events: [capacity]}\n      - {url: 'http://b/'}\n";
    let c = crate::config::parse(src, "alertd.yml").unwrap();
    let kinds: Vec<_> = c.receivers["s"].integrations().iter().map(|i| format!("{}/{}", i.kind, i.index)).collect();
    assert_eq!(kinds, ["scheduler/1"]);
    assert_eq!(super::super::build(&c).unwrap().keys().collect::<Vec<_>>(), ["s/scheduler/0", "s/scheduler/1"]);
}

/// `POST /api/v1/scheduler/capacity` takes plans as every analyzer version sends them: without an
/// explanation (earlier ones) and with one, which reaches the scheduler as the analyzer wrote it.
#[tokio::test]
async fn capacity_bodies_with_and_without_an_explanation_are_taken_and_passed_on() {
    use argus_analyzer::capacity::{CapacityPlanner, Outlook, PlanInput, PlannerConfig};
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    let (r, url) = receiver(vec![]).await;
    let s = setup(vec![("sched/scheduler/0", scheduler(&url, None, true))]);
    let app = crate::api::capacity::router(Arc::new(s.deliverer.notifier()), 1 << 20);
    let post = |body: String| {
        let app = app.clone();
        async move {
            let req = Request::post("/api/v1/scheduler/capacity")
                .header("content-type", "application/json")
                .body(axum::body::Body::from(body))
                .unwrap();
            let res = app.oneshot(req).await.unwrap();
            let status = res.status();
            let bytes = http_body_util::BodyExt::collect(res.into_body()).await.unwrap().to_bytes();
            (status, serde_json::from_slice::<serde_json::Value>(&bytes).unwrap())
        }
    };

    let old = r#"{"plans":[{"pool":"old","timestamp_ms":1700000000000,"current":8,"demand":7.5,"forecast_upper":9.0,
        "base":10,"reservation":0,"desired":10,"recommended":10,"action":"scale_up"}]}"#;
    let (status, v) = post(old.to_string()).await;
    assert_eq!((status, &v["data"]["queued"]), (StatusCode::OK, &serde_json::json!(1)), "{v}");

    // What the analyzer sends now, from its own planner.
    let mut planner = CapacityPlanner::new("new", PlannerConfig::default()).unwrap();
    let rec = planner.plan(&PlanInput {
        timestamp_ms: 1_700_000_060_000,
        current: 80,
        demand: Outlook { now: 60.1, upper: 64.4 },
        low_priority: None,
    });
    let sent = serde_json::to_value(&rec).unwrap();
    assert_eq!(sent["explanation"]["rule"], "scale_up", "{sent}");
    let (status, v) = post(serde_json::json!({"plans": [sent]}).to_string()).await;
    assert_eq!((status, &v["data"]["queued"]), (StatusCode::OK, &serde_json::json!(1)), "{v}");

    until("delivery", || s.outbox.count(State::Delivered).unwrap() == 2).await;
    let mut plans: Vec<serde_json::Value> = r
        .got()
        .iter()
        .map(|g| serde_json::from_slice::<serde_json::Value>(&g.body).unwrap()["capacity"].clone())
        .collect();
    plans.sort_by_key(|p| p["pool"].as_str().unwrap().to_string());
    assert_eq!(plans[0]["pool"], "new");
    assert_eq!(plans[0], sent, "the plan reaches the scheduler as the analyzer wrote it");
    assert_eq!((plans[1]["pool"].as_str(), plans[1].get("explanation")), (Some("old"), None));
}
