//! Which notification failures the pipeline tries again: against a real webhook receiver on
//! loopback, through the dedup, send and notification-log stages the engine runs.

use super::*;
use crate::deliver::{HttpTarget, Integration as DeliverIntegration, webhook};
use crate::nflog::MemLog;
use crate::route::GroupBy;
use argus_model::Secret;
use axum::http::StatusCode;
use expect_test::expect;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn an_integration_error_is_retryable_as_its_delivery_error() {
    let status = |status| DeliverError::Status { status, retry_after: None, body: format!("status {status}") };
    let rows = [
        NotifyError::integration("team", status(400)),
        NotifyError::integration("team", status(429)),
        NotifyError::integration("team", status(503)),
        NotifyError::integration("team", DeliverError::Timeout),
        NotifyError::integration("team", DeliverError::Render("template: no such field".into())),
        NotifyError::integration("team", DeliverError::Unknown("team/webhook/3".into())),
        NotifyError::ChannelClosed { receiver: "team".into() },
    ];
    let got: Vec<String> = rows.iter().map(|e| format!("{}: {e}", e.is_retryable())).collect();
    expect![[r#"
        false: receiver team: receiver answered http status 400: status 400
        true: receiver team: receiver answered http status 429: status 429
        true: receiver team: receiver answered http status 503: status 503
        true: receiver team: request timed out
        false: receiver team: cannot render the message: template: no such field
        false: receiver team: integration team/webhook/3 is no longer configured
        true: receiver team: delivery channel closed"#]]
    .assert_eq(&got.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_answering_400_is_not_tried_again() {
    let (requests, url) = receiver(vec![400]).await;
    let flushes = Flushes::new(&url);

    let first = flushes.run(0).expect("a 400 does not fail the flush");
    assert!(!first, "nothing was delivered");
    let second = flushes.run(1).expect("the next flush");
    assert!(!second, "the same alerts are not sent again");
    assert_eq!(requests.lock().unwrap().len(), 1, "one request: the 400 is not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_answering_503_is_tried_again_at_the_next_flush() {
    let (requests, url) = receiver(vec![503]).await;
    let flushes = Flushes::new(&url);

    let error = flushes.run(0).expect_err("a 503 fails the flush");
    assert!(error.is_retryable(), "{error}");
    assert_eq!(error.to_string(), "receiver team: receiver answered http status 503: status 503");
    assert!(flushes.run(1).expect("the receiver is back"), "the next flush delivers");
    assert_eq!(requests.lock().unwrap().len(), 2, "the 503, then the delivery");
}

/// Hands each notification straight to a real integration, so its delivery errors reach the
/// pipeline as a notifier that sends synchronously would see them.
struct Direct(Arc<dyn DeliverIntegration>);

impl Notifier for Direct {
    fn notify(&self, n: Notification) -> Result<(), NotifyError> {
        let failed = |e| NotifyError::integration(&n.receiver, e);
        let body = self.0.render(&n).map_err(failed)?;
        let key = crate::outbox::idempotency_key(&n);
        let send = self.0.send(&body, &key);
        tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(send)).map_err(failed)
    }
}

/// Group flushes of one firing alert to receiver `team`'s webhook, five minutes apart.
struct Flushes {
    pipeline: Pipeline,
    receiver: Receiver,
    opts: RouteOpts,
    labels: Labels,
    intervals: BTreeMap<String, Vec<TimeInterval>>,
}

impl Flushes {
    fn new(url: &str) -> Flushes {
        let hook = webhook::Webhook {
            target: HttpTarget::new(reqwest::Client::new(), Secret::new(url), Duration::from_secs(5)),
            hmac_secret: None,
            signature_header: webhook::SIGNATURE_HEADER.into(),
            body_template: None,
        };
        let nflog: Arc<dyn crate::nflog::NotificationLog> = Arc::new(MemLog::default());
        let pipeline = Pipeline {
            stages: vec![
                Box::new(DedupStage { nflog: nflog.clone() }),
                Box::new(SendStage { notifier: Arc::new(Direct(Arc::new(hook))), nflog: nflog.clone() }),
                Box::new(SetNotifiesStage { nflog }),
            ],
        };
        let opts = RouteOpts {
            receiver: "team".into(),
            group_by: GroupBy::Labels(vec!["alertname".into()]),
            group_wait: Duration::from_secs(30),
            group_interval: Duration::from_secs(300),
            repeat_interval: Duration::from_secs(4 * 3600),
            mute_time_intervals: vec![],
            active_time_intervals: vec![],
        };
        Flushes {
            pipeline,
            receiver: Receiver { name: "team".into(), ..Receiver::default() },
            opts,
            labels: Labels::from_pairs([("alertname", "GpuDown")]),
            intervals: BTreeMap::new(),
        }
    }

    /// Runs the `n`th flush; true when a notification was delivered.
    fn run(&self, n: i64) -> Result<bool, NotifyError> {
        let now = Timestamp(60_000 + n * 300_000);
        let integration = Integration { kind: "webhook", index: 0, send_resolved: true, max_alerts: 0 };
        let ctx = Ctx {
            now,
            receiver: &self.receiver,
            integration,
            recipient: "team/webhook/0".into(),
            group_key: "{}:{alertname=\"GpuDown\"}",
            group_labels: &self.labels,
            opts: &self.opts,
            time_intervals: &self.intervals,
            external_url: "http://alertd:9700",
            flap: None,
            incident: None,
            escalation: None,
            sent: Cell::new(false),
            group_id: "0:{alertname=\"GpuDown\"}",
            route: "{}",
            holds: RefCell::default(),
        };
        let alert = Alert {
            labels: Labels::from_pairs([("alertname", "GpuDown"), ("host", "gpu-node-1")]),
            annotations: Labels::default(),
            starts_at: Timestamp(0),
            ends_at: Timestamp(now.0 + 3_600_000),
            generator_url: String::new(),
            updated_at: now,
            timeout: false,
        };
        self.pipeline.exec(&ctx, vec![alert])
    }
}

type Requests = Arc<std::sync::Mutex<Vec<Vec<u8>>>>;

/// Starts a webhook receiver on 127.0.0.1:0 answering each request with the next status of
/// `script`, then 200; returns the bodies it got and its URL.
async fn receiver(script: Vec<u16>) -> (Requests, String) {
    let script = Arc::new(std::sync::Mutex::new(VecDeque::from(script)));
    let requests = Requests::default();
    let got = requests.clone();
    let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
        got.lock().unwrap().push(body.to_vec());
        let status = script.lock().unwrap().pop_front().unwrap_or(200);
        async move { (StatusCode::from_u16(status).unwrap(), format!("status {status}")) }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (requests, url)
}
