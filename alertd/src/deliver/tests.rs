//! Delivery against real HTTP receivers on loopback that fail, time out, throttle and refuse.

use super::*;
use crate::alert::Status;
use crate::outbox::tests::notification;
use argus_model::Secret;
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::collections::{BTreeSet, VecDeque};
use std::sync::Mutex;
use std::time::Instant;

/// What the test receiver does with the next request.
#[derive(Clone, Debug)]
pub(crate) enum Reply {
    Status(u16),
    /// 429 with `Retry-After: n` seconds.
    TooMany(u64),
    /// Answers 200 after this long.
    Slow(Duration),
}

/// A request as the receiver saw it.
#[derive(Clone, Debug)]
pub(crate) struct Got {
    pub at: Instant,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    pub query: String,
}

#[derive(Default)]
pub(crate) struct Receiver {
    script: Mutex<VecDeque<Reply>>,
    pub got: Mutex<Vec<Got>>,
}

impl Receiver {
    pub fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }
}

async fn handle(AxState(r): AxState<Arc<Receiver>>, uri: axum::http::Uri, headers: HeaderMap, body: Bytes) -> Response {
    let reply = r.script.lock().unwrap().pop_front().unwrap_or(Reply::Status(200));
    r.got.lock().unwrap().push(Got {
        at: Instant::now(),
        headers,
        body: body.to_vec(),
        query: uri.query().unwrap_or("").to_string(),
    });
    match reply {
        // A 2xx answers as the IM robots do; the webhook ignores it.
        Reply::Status(s) if s < 300 => (StatusCode::from_u16(s).unwrap(), OK_JSON).into_response(),
        Reply::Status(s) => (StatusCode::from_u16(s).unwrap(), format!("status {s}")).into_response(),
        Reply::TooMany(secs) => {
            (StatusCode::TOO_MANY_REQUESTS, [("retry-after", secs.to_string())], "slow down").into_response()
        }
        Reply::Slow(d) => {
            tokio::time::sleep(d).await;
            (StatusCode::OK, OK_JSON).into_response()
        }
    }
}

const OK_JSON: &str = r#"{"errcode":0,"errmsg":"ok"}"#;

/// Starts a receiver on 127.0.0.1:0 answering with `script`, then 200s; returns it and its URL.
pub(crate) async fn receiver(script: Vec<Reply>) -> (Arc<Receiver>, String) {
    let r = Arc::new(Receiver { script: Mutex::new(script.into()), got: Mutex::default() });
    let app = axum::Router::new().fallback(handle).with_state(r.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook?token=s3cr3t-token", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (r, url)
}

pub(crate) fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        initial: Duration::from_millis(20),
        multiplier: 2.0,
        max: Duration::from_millis(200),
        jitter: 0.0,
        give_up_after: Duration::from_secs(60),
    }
}

const HOOK: &str = "team/webhook/0";

fn webhook(url: &str, timeout: Duration, secret: Option<&str>) -> Integrations {
    let hook = webhook::Webhook {
        target: HttpTarget::new(reqwest::Client::new(), Secret::new(url), timeout),
        hmac_secret: secret.map(Secret::new),
        signature_header: webhook::SIGNATURE_HEADER.into(),
        body_template: None,
    };
    Integrations::from([(HOOK.to_string(), Arc::new(hook) as Arc<dyn Integration>)])
}

/// Waits until `f` holds, or fails the test after 10 s.
pub(crate) async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    outbox: Arc<Outbox>,
    deliverer: Deliverer,
}

fn setup(integrations: Integrations, policy: RetryPolicy) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let outbox = Arc::new(Outbox::open(&dir.path().join("alertd.db")).unwrap());
    let deliverer = Deliverer::new(outbox.clone(), integrations, policy);
    Setup { _dir: dir, outbox, deliverer }
}

fn alert_n(i: i64) -> Notification {
    notification("{}:{host=\"a\"}", HOOK, 1_000 + i, &[("01", Status::Firing)])
}

#[tokio::test]
async fn server_errors_are_retried_under_one_key_and_signed() {
    let (r, url) = receiver(vec![Reply::Status(500), Reply::Status(503)]).await;
    let s = setup(webhook(&url, Duration::from_secs(5), Some("hmac-key")), fast_policy());
    let _w = s.deliverer.spawn();
    let n = alert_n(0);
    let key = outbox::idempotency_key(&n);
    s.deliverer.notifier().notify(n.clone()).unwrap();
    until("delivery", || s.outbox.count(State::Delivered).unwrap() == 1).await;
    let got = r.got();
    assert_eq!(got.len(), 3, "two failures, then success");
    let body = serde_json::to_vec(&n.message).unwrap();
    for g in &got {
        assert_eq!(g.headers["idempotency-key"], key.as_str());
        assert_eq!(g.headers["content-type"], "application/json");
        assert_eq!(g.body, body);
        let sig = format!("sha256={}", webhook::sign_hex(&Secret::new("hmac-key"), &body));
        assert_eq!(g.headers["x-argus-signature"], sig.as_str());
    }
    // The backoff grows: 20 ms, then 40 ms.
    assert!(got[1].at - got[0].at >= Duration::from_millis(20));
    assert!(got[2].at - got[1].at >= Duration::from_millis(40));
    assert_eq!(s.outbox.state(&key).unwrap(), Some(("delivered".into(), None, 3)));
    let mut registry = prometheus_client::registry::Registry::default();
    s.deliverer.metrics().register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for line in [
        r#"argus_alertd_notifications_total{receiver="team",integration="webhook",outcome="retried"} 2"#,
        r#"argus_alertd_notifications_total{receiver="team",integration="webhook",outcome="delivered"} 1"#,
        r#"argus_alertd_notifications_total{receiver="team",integration="webhook",outcome="failed"} 0"#,
    ] {
        assert!(text.contains(line), "{line} missing in\n{text}");
    }
}

#[tokio::test]
async fn every_outcome_is_exported_at_zero_before_the_first_notification() {
    let (_r, url) = receiver(vec![]).await;
    let s = setup(webhook(&url, Duration::from_secs(5), None), fast_policy());
    let mut registry = prometheus_client::registry::Registry::default();
    s.deliverer.metrics().register(&mut registry);
    let _w = s.deliverer.spawn();
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for outcome in super::metrics::OUTCOMES {
        let line = format!(
            r#"argus_alertd_notifications_total{{receiver="team",integration="webhook",outcome="{outcome}"}} 0"#
        );
        assert!(text.contains(&line), "{line} missing in\n{text}");
    }
}

#[tokio::test]
async fn timeouts_are_retried() {
    let (r, url) = receiver(vec![Reply::Slow(Duration::from_secs(2))]).await;
    let s = setup(webhook(&url, Duration::from_millis(200), None), fast_policy());
    let _w = s.deliverer.spawn();
    let n = alert_n(0);
    s.deliverer.notifier().notify(n.clone()).unwrap();
    until("delivery", || s.outbox.count(State::Delivered).unwrap() == 1).await;
    assert_eq!(r.got().len(), 2);
    assert!(r.got()[0].headers.get("x-argus-signature").is_none(), "no secret, no signature");
}

#[tokio::test]
async fn too_many_requests_waits_for_retry_after() {
    let (r, url) = receiver(vec![Reply::TooMany(1)]).await;
    let s = setup(webhook(&url, Duration::from_secs(5), None), fast_policy());
    let _w = s.deliverer.spawn();
    s.deliverer.notifier().notify(alert_n(0)).unwrap();
    until("delivery", || s.outbox.count(State::Delivered).unwrap() == 1).await;
    let got = r.got();
    assert_eq!(got.len(), 2);
    let gap = got[1].at - got[0].at;
    assert!(gap >= Duration::from_millis(950), "retried after {gap:?}, not after Retry-After: 1");
}

#[tokio::test]
async fn a_retry_after_past_the_give_up_time_holds_nothing_behind_it() {
    // Ten days, then a value past any clock: the entry is retried at its give-up time and fails
    // there, and the next one goes out.
    let (r, url) = receiver(vec![Reply::TooMany(10 * 86_400), Reply::TooMany(u64::MAX / 2)]).await;
    let policy = RetryPolicy { give_up_after: Duration::from_millis(300), ..fast_policy() };
    let s = setup(webhook(&url, Duration::from_secs(5), None), policy);
    let _w = s.deliverer.spawn();
    let (n, next) = (alert_n(0), alert_n(1));
    s.deliverer.notifier().notify(n.clone()).unwrap();
    s.deliverer.notifier().notify(next.clone()).unwrap();
    until("both done", || s.outbox.count(State::Pending).unwrap() == 0).await;
    assert_eq!(s.outbox.state(&outbox::idempotency_key(&n)).unwrap().unwrap().0, "failed");
    assert_eq!(s.outbox.state(&outbox::idempotency_key(&next)).unwrap().unwrap().0, "delivered");
    assert_eq!(r.got().len(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let (r, url) = receiver(vec![Reply::Status(400)]).await;
    let s = setup(webhook(&url, Duration::from_secs(5), None), fast_policy());
    let _w = s.deliverer.spawn();
    let n = alert_n(0);
    let next = alert_n(1);
    s.deliverer.notifier().notify(n.clone()).unwrap();
    s.deliverer.notifier().notify(next.clone()).unwrap();
    until("both done", || s.outbox.count(State::Pending).unwrap() == 0).await;
    assert_eq!(r.got().len(), 2, "the 400 is not retried, the next entry goes on");
    let (state, error, attempts) = s.outbox.state(&outbox::idempotency_key(&n)).unwrap().unwrap();
    assert_eq!((state.as_str(), attempts), ("failed", 1));
    assert_eq!(error.unwrap(), "receiver answered http status 400: status 400");
    assert_eq!(s.outbox.state(&outbox::idempotency_key(&next)).unwrap().unwrap().0, "delivered");
}

#[tokio::test]
async fn connection_errors_are_retried_until_given_up() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let policy = RetryPolicy { give_up_after: Duration::from_millis(300), ..fast_policy() };
    let s = setup(webhook(&format!("http://127.0.0.1:{port}/?token=t0k3n"), Duration::from_secs(1), None), policy);
    let _w = s.deliverer.spawn();
    let n = alert_n(0);
    s.deliverer.notifier().notify(n.clone()).unwrap();
    until("giving up", || s.outbox.count(State::Failed).unwrap() == 1).await;
    let (_, error, attempts) = s.outbox.state(&outbox::idempotency_key(&n)).unwrap().unwrap();
    assert!(attempts >= 3, "retried: {attempts} attempts");
    let error = error.unwrap();
    assert!(error.starts_with("cannot connect"), "{error}");
    assert!(!error.contains("t0k3n"), "the URL's token leaked: {error}");
}

#[tokio::test]
async fn pending_entries_are_delivered_after_a_restart_with_their_keys() {
    // Slow answers leave time to stop the workers before the queue is done, even on a busy machine.
    let (r, url) = receiver((0..10).map(|_| Reply::Slow(Duration::from_millis(300))).collect()).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alertd.db");
    let ns: Vec<Notification> = (0..6).map(alert_n).collect();
    let keys: BTreeSet<String> = ns.iter().map(outbox::idempotency_key).collect();
    {
        let outbox = Arc::new(Outbox::open(&path).unwrap());
        let d = Deliverer::new(outbox.clone(), webhook(&url, Duration::from_secs(5), None), fast_policy());
        let workers = d.spawn();
        for n in &ns {
            d.notifier().notify(n.clone()).unwrap();
        }
        until("two deliveries", || outbox.count(State::Delivered).unwrap() >= 2).await;
        // Stopped mid-queue, maybe mid-request: that request may be repeated below.
        for w in workers {
            w.abort();
        }
        assert!(outbox.count(State::Pending).unwrap() >= 3, "the queue was not done");
    }
    let outbox = Arc::new(Outbox::open(&path).unwrap());
    let d = Deliverer::new(outbox.clone(), webhook(&url, Duration::from_secs(5), None), fast_policy());
    let _w = d.spawn();
    until("the rest", || outbox.count(State::Delivered).unwrap() == 6).await;
    // A notification the engine sends again after the restart is the same entry, not a new one.
    d.notifier().notify(ns[5].clone()).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let got: Vec<String> = r.got().iter().map(|g| g.headers["idempotency-key"].to_str().unwrap().to_string()).collect();
    assert!(got.len() >= 6 && got.len() <= 7, "each sent once, one maybe twice: {got:?}");
    assert_eq!(got.iter().cloned().collect::<BTreeSet<_>>(), keys, "every key arrived, and no other");
    let order: Vec<&String> = got.iter().fold(Vec::new(), |mut v, k| {
        if !v.contains(&k) {
            v.push(k);
        }
        v
    });
    let expect: Vec<String> = ns.iter().map(outbox::idempotency_key).collect();
    assert_eq!(order, expect.iter().collect::<Vec<_>>(), "sent in order");
}

#[tokio::test]
async fn a_rate_limit_batches_what_it_holds_into_one_message() {
    let (r, url) = receiver(vec![]).await;
    let s = setup(webhook(&url, Duration::from_secs(5), None), fast_policy());
    let limits = RateLimits::from([(HOOK.to_string(), (2, Duration::from_millis(400)))]);
    let d = s.deliverer.with_rate_limits(limits);
    let _w = d.spawn();
    let fps = ["01", "02", "03", "04", "05", "06"];
    let ns: Vec<Notification> = fps
        .iter()
        .enumerate()
        .map(|(i, fp)| notification("g", HOOK, 1_000 + i as i64, &[(fp, Status::Firing)]))
        .collect();
    for n in &ns {
        d.notifier().notify(n.clone()).unwrap();
    }
    until("all six", || s.outbox.count(State::Delivered).unwrap() == 6).await;
    let got = r.got();
    assert_eq!(got.len(), 3, "two within the limit, then one batch of the four held");
    let batch: serde_json::Value = serde_json::from_slice(&got[2].body).unwrap();
    let alerts: Vec<&str> =
        batch["alerts"].as_array().unwrap().iter().map(|a| a["fingerprint"].as_str().unwrap()).collect();
    assert_eq!(alerts, ["03", "04", "05", "06"]);
    assert_eq!(batch["argus"]["batched"], 4);
    let keys: Vec<String> = ns[2..].iter().map(outbox::idempotency_key).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    assert_eq!(got[2].headers["idempotency-key"], outbox::batch_key(&keys).as_str());
    assert!(got[2].at - got[0].at >= Duration::from_millis(390), "the batch waited for the window");
}

#[tokio::test]
async fn entries_of_an_integration_no_longer_configured_fail_at_start() {
    let s = setup(Integrations::new(), fast_policy());
    let n = alert_n(0);
    s.outbox.enqueue(&outbox::idempotency_key(&n), "team", "gone/webhook/0", b"{}", "{}", 0).unwrap();
    let _w = s.deliverer.spawn();
    let (state, error, _) = s.outbox.state(&outbox::idempotency_key(&n)).unwrap().unwrap();
    assert_eq!(
        (state.as_str(), error.as_deref()),
        ("failed", Some("integration gone/webhook/0 is no longer configured"))
    );
}

#[tokio::test]
async fn a_body_template_replaces_the_v4_message() {
    let (r, url) = receiver(vec![]).await;
    let template = template::BodyTemplate::parse(r#"{"msg": {{ .Title }}, "group": {{ .GroupKey }}}"#).unwrap();
    let hook = webhook::Webhook {
        target: HttpTarget::new(reqwest::Client::new(), Secret::new(url), Duration::from_secs(5)),
        hmac_secret: Some(Secret::new("k")),
        signature_header: "X-Sig".into(),
        body_template: Some(template),
    };
    let n = alert_n(0);
    let body = hook.render(&n).unwrap();
    hook.send(&body, "key-1").await.unwrap();
    let got = r.got().pop().unwrap();
    assert_eq!(String::from_utf8(got.body.clone()).unwrap(), r#"{"msg": "[FIRING:1]", "group": "{}:{host=\"a\"}"}"#);
    assert_eq!(got.headers["x-sig"], format!("sha256={}", webhook::sign_hex(&Secret::new("k"), &got.body)).as_str());
}

#[test]
fn a_receivers_rate_limit_applies_to_each_of_its_integrations() {
    let yaml = "route: {receiver: r}\nreceivers:\n  - name: r\n    argus: {rate_limit: {max: 20, per: 1m}}\n    webhook_configs: [{url: 'http://h/'}]\n    wecom_configs: [{url: 'http://h/'}]\n  - name: free\n    webhook_configs: [{url: 'http://h/'}]\n";
    let cfg = crate::config::parse(yaml, "alertd.yml").unwrap();
    let minute = Duration::from_secs(60);
    let want = RateLimits::from([("r/webhook/0".to_string(), (20, minute)), ("r/wecom/0".to_string(), (20, minute))]);
    assert_eq!(rate_limits(&cfg), want);
    assert_eq!(build(&cfg).unwrap().keys().collect::<Vec<_>>(), ["free/webhook/0", "r/webhook/0", "r/wecom/0"]);
}

#[test]
fn a_retargeted_notifier_feeds_the_new_receivers() {
    let cfg = |name: &str| {
        let yaml = format!(
            "route: {{receiver: {name}}}\nreceivers:\n  - name: {name}\n    webhook_configs: [{{url: 'http://h/'}}]\n"
        );
        build(&crate::config::parse(&yaml, "alertd.yml").unwrap()).unwrap()
    };
    let s = setup(cfg("old"), fast_policy());
    // Handed out once, as the in-process capacity path holds it, then a reload replaces the receivers.
    let notifier = s.deliverer.notifier();
    let n = |integration: &str| notification("{}:{}", integration, 1_000, &[("01", Status::Firing)]);
    assert!(notifier.notify(n("new/webhook/0")).is_err(), "unknown before the reload");
    let reloaded = Deliverer::new(s.outbox.clone(), cfg("new"), fast_policy());
    notifier.retarget(&reloaded);
    notifier.notify(n("new/webhook/0")).unwrap();
    assert!(notifier.notify(n("old/webhook/0")).is_err(), "the old receiver is gone");
    assert_eq!(s.outbox.pending_integrations().unwrap(), ["new/webhook/0"]);
}
