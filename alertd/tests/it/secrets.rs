//! No receiver leaks its secret: webhook URL tokens and HMAC secrets, DingTalk and Feishu secrets
//! robot URL keys and the scheduler's URL token, HMAC secret and bearer credentials never appear in errors, logs, the outbox or `Debug` output — while every one of
//! those receivers fails, which is when secrets usually slip into messages. The run goes through the
//! whole pipeline: engine, outbox notifier, delivery workers, real HTTP receivers on loopback.

use argus_alertd::deliver::{self, Deliverer, RetryPolicy};
use argus_alertd::nflog::MemLog;
use argus_alertd::outbox::{Outbox, State};
use argus_alertd::silence::MemSilences;
use argus_alertd::{Engine, PostableAlert, Timestamp};
use axum::http::{StatusCode, Uri};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SECRETS: &[&str] = &[
    "WEBHOOKTOKEN",
    "HMACSECRET",
    "CLOSEDTOKEN",
    "DINGTOKEN",
    "DINGSECRET",
    "FEISHUTOKEN",
    "FEISHUSECRET",
    "WECOMKEY",
    "SLACKTOKEN",
    "SCHEDTOKEN",
    "SCHEDHMAC",
    "SCHEDBEARER",
];

/// Every path fails in its own way.
async fn answer(uri: Uri) -> (StatusCode, String) {
    let p = uri.path();
    if p.starts_with("/bad") {
        (StatusCode::BAD_REQUEST, "bad request".into())
    } else if p.starts_with("/dt") {
        (StatusCode::OK, r#"{"errcode":310000,"errmsg":"sign not match"}"#.into())
    } else if p.starts_with("/fs") {
        (StatusCode::OK, r#"{"code":19021,"msg":"sign match fail"}"#.into())
    } else if p.starts_with("/wc") {
        (StatusCode::OK, r#"{"errcode":93000,"errmsg":"invalid webhook url"}"#.into())
    } else {
        (StatusCode::FORBIDDEN, "invalid_token".into())
    }
}

#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn no_receiver_leaks_its_secret() {
    let logs = Logs::default();
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().fallback(answer)).await.unwrap() });
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let yaml = format!(
        r#"
route: {{receiver: leaky, group_wait: 0s}}
receivers:
  - name: leaky
    webhook_configs:
      - {{url: 'http://{addr}/bad?token=WEBHOOKTOKEN', argus: {{hmac_secret: HMACSECRET}}}}
      - {{url: 'http://127.0.0.1:{closed}/x?token=CLOSEDTOKEN'}}
    slack_configs: [{{api_url: 'http://{addr}/services/SLACKTOKEN', send_resolved: true}}]
    dingtalk_configs: [{{url: 'http://{addr}/dt?access_token=DINGTOKEN', secret: DINGSECRET}}]
    feishu_configs: [{{url: 'http://{addr}/fs/FEISHUTOKEN', secret: FEISHUSECRET, language: zh}}]
    wecom_configs: [{{url: 'http://{addr}/wc?key=WECOMKEY'}}]
    scheduler_configs:
      - {{url: 'http://{addr}/bad/sched?token=SCHEDTOKEN', hmac_secret: SCHEDHMAC, http_config: {{authorization: {{credentials: SCHEDBEARER}}}}}}
"#
    );
    let cfg = argus_alertd::config::parse(&yaml, "alertd.yml").unwrap();
    let mut seen = vec![format!("{cfg:?}")];

    let dir = tempfile::tempdir().unwrap();
    let outbox = Arc::new(Outbox::open(&dir.path().join("alertd.db")).unwrap());
    let policy = RetryPolicy {
        initial: Duration::from_millis(20),
        give_up_after: Duration::from_millis(500),
        ..RetryPolicy::default()
    };
    let deliverer = Deliverer::new(outbox.clone(), deliver::build(&cfg).unwrap(), policy);
    let _workers = deliverer.spawn();
    let mut engine =
        Engine::new(cfg, Arc::new(MemSilences::default()), Arc::new(MemLog::default()), Arc::new(deliverer.notifier()));
    let now = Timestamp::from_millis(deliver::now_millis());
    let alert = PostableAlert {
        labels: BTreeMap::from([("alertname".into(), "GpuXidError".into()), ("host".into(), "n1".into())]),
        annotations: BTreeMap::new(),
        starts_at: None,
        ends_at: None,
        generator_url: String::new(),
    };
    engine.post(now, vec![alert]).unwrap();
    engine.advance(now);

    let start = Instant::now();
    while outbox.count(State::Failed).unwrap() < 7 {
        assert!(start.elapsed() < Duration::from_secs(10), "not every integration failed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(outbox.count(State::Pending).unwrap(), 0);
    let db = rusqlite::Connection::open(dir.path().join("alertd.db")).unwrap();
    let mut stmt = db.prepare("SELECT integration, last_error FROM outbox").unwrap();
    let errors: Vec<String> = stmt
        .query_map([], |r| Ok(format!("{}: {}", r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(errors.len(), 7, "{errors:?}");
    let bodies: Vec<Vec<u8>> = db
        .prepare("SELECT body FROM outbox")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    seen.extend(errors.iter().cloned());
    seen.extend(bodies.iter().map(|b| String::from_utf8_lossy(b).into_owned()));
    let log = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(log.contains("Notification failed, giving up"), "failures were logged: {log}");
    seen.push(log);

    // Configuration errors about a secret-bearing value name the field, not the value.
    for bad in [
        "webhook_configs: [{url: 'ftp://host/WEBHOOKTOKEN'}]",
        "dingtalk_configs: [{url: 'DINGTOKEN', secret: DINGSECRET}]",
        "wecom_configs: [{url: 'http://h/?key=WECOMKEY', secret: DINGSECRET}]",
    ] {
        let src = format!("route: {{receiver: r}}\nreceivers:\n  - name: r\n    {bad}\n");
        let e = argus_alertd::config::parse(&src, "alertd.yml").unwrap_err();
        seen.push(format!("{e} {e:?}"));
    }
    for text in &seen {
        for s in SECRETS {
            assert!(!text.contains(s), "{s} leaked into: {text}");
        }
    }
    // The failures are the expected ones, so the checks above looked at real error paths.
    let joined = errors.join("\n");
    for want in [
        "leaky/webhook/0: receiver answered http status 400: bad request",
        "leaky/webhook/1: cannot connect",
        "leaky/slack/0: receiver answered http status 403: invalid_token",
        "leaky/dingtalk/0: receiver refused the message: errcode 310000: sign not match",
        "leaky/feishu/0: receiver refused the message: code 19021: sign match fail",
        "leaky/wecom/0: receiver refused the message: errcode 93000: invalid webhook url",
    ] {
        assert!(joined.contains(want), "missing {want:?} in\n{joined}");
    }
}
