//! The IM receivers: bodies against golden files (`UPDATE_GOLDEN=1` rewrites them, in
//! alertd/tests/golden/receivers/), and sending to local HTTP receivers that check signatures.

use super::tests::{Reply, fast_policy, receiver, until};
use super::*;
use crate::alert::Status;
use crate::outbox::tests::notification;
use crate::receiver::notification::Text;
use crate::receiver::{Language, Mentions};
use crate::webhook::{Extras, IncidentInfo};
use std::path::Path;

fn client() -> reqwest::Client {
    reqwest::Client::new()
}

fn target(url: &str) -> HttpTarget {
    HttpTarget::new(client(), Secret::new(url), Duration::from_secs(5))
}

/// A message with a firing and a resolved alert, an incident, a flapping alert and one left out.
fn sample() -> Notification {
    let mut n = notification(
        "{}/{team=\"gpu\"}:{host=\"gpu-node-07\"}",
        "team/x/0",
        1_700_000_000_000,
        &[("a1", Status::Firing), ("b2", Status::Resolved)],
    );
    let m = &mut n.message;
    m.group_labels.insert("host".into(), "gpu-node-07".into());
    m.external_url = "http://alertd.example:9700".into();
    m.truncated_alerts = 1;
    m.alerts[0].labels.insert("alertname".into(), "GpuXidError".into());
    m.alerts[0].labels.insert("gpu".into(), "3".into());
    m.alerts[0].annotations.insert("summary".into(), "Xid 79 on GPU 3".into());
    m.alerts[1].labels.insert("alertname".into(), "NcclTimeout".into());
    m.alerts[1].ends_at = crate::time::Timestamp::from_millis(1_699_999_990_000);
    m.argus = Some(Extras {
        incident: Some(IncidentInfo {
            id: 42,
            probable_cause: "gpu_fault".into(),
            cause_alert: "a1".into(),
            alerts: 3,
            opened_at: crate::time::Timestamp::from_millis(1_699_999_900_000),
        }),
        flapping: [("a1".to_string(), 5)].into(),
        batched: 0,
        escalation: None,
    });
    n
}

fn integrations(url: &str, secret: Option<&str>, lang: Language) -> Vec<(&'static str, Arc<dyn Integration>)> {
    let secret = secret.map(Secret::new);
    vec![
        (
            "slack",
            Arc::new(slack::Slack {
                target: target(url),
                channel: Some(Text::plain("#gpu-alerts")),
                username: Some(Text::plain("alertd")),
                icon_emoji: None,
                templates: Default::default(),
                language: lang,
            }),
        ),
        (
            "dingtalk",
            Arc::new(dingtalk::DingTalk {
                target: target(url),
                secret: secret.clone(),
                language: lang,
                limit: limit::Window::robot(),
                mentions: Mentions::default(),
            }),
        ),
        (
            "feishu",
            Arc::new(feishu::Feishu { target: target(url), secret, language: lang, mentions: Mentions::default() }),
        ),
        (
            "wecom",
            Arc::new(wecom::WeCom {
                target: target(url),
                language: lang,
                limit: limit::Window::robot(),
                mentions: Mentions::default(),
            }),
        ),
    ]
}

#[test]
fn bodies_match_golden_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/receivers");
    let n = sample();
    for lang in [Language::En, Language::Zh] {
        for (kind, it) in integrations("http://127.0.0.1:1/", None, lang) {
            let body: serde_json::Value = serde_json::from_slice(&it.render(&n).unwrap()).unwrap();
            let got = serde_json::to_string_pretty(&body).unwrap() + "\n";
            let file = dir.join(format!("{kind}.{}.json", if lang == Language::En { "en" } else { "zh" }));
            if std::env::var_os("UPDATE_GOLDEN").is_some() {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&file, &got).unwrap();
            }
            let want = std::fs::read_to_string(&file).expect("golden file missing: run with UPDATE_GOLDEN=1");
            assert_eq!(got, want, "{kind} body differs from {}", file.display());
        }
    }
}

#[tokio::test]
async fn robots_sign_and_read_vendor_answers() {
    let (r, url) = receiver(vec![]).await;
    let n = sample();
    let by_kind: BTreeMap<_, _> = integrations(&url, Some("SECabc"), Language::Zh).into_iter().collect();
    let ding = &by_kind["dingtalk"];
    let body = ding.render(&n).unwrap();
    ding.send(&body, "k1").await.unwrap_or_else(|e| panic!("{e}"));
    let got = r.got().pop().unwrap();
    assert_eq!(got.headers["idempotency-key"], "k1");
    // token=… from the configured URL, then timestamp and sign.
    let url = reqwest::Url::parse(&format!("http://h/?{}", got.query)).unwrap();
    let q: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
    let ts: i64 = q["timestamp"].parse().unwrap();
    assert!((now_millis() - ts).abs() < 10_000, "timestamp in milliseconds");
    assert_eq!(q["sign"], dingtalk::sign(&Secret::new("SECabc"), ts));
    assert_eq!(q["token"], "s3cr3t-token");

    let feishu = &by_kind["feishu"];
    feishu.send(&feishu.render(&n).unwrap(), "k2").await.unwrap();
    let v: serde_json::Value = serde_json::from_slice(&r.got().pop().unwrap().body).unwrap();
    let ts: i64 = v["timestamp"].as_str().unwrap().parse().unwrap();
    assert!((now_millis() / 1000 - ts).abs() < 10, "timestamp in seconds");
    assert_eq!(v["sign"], feishu::sign(&Secret::new("SECabc"), ts).as_str());
    assert_eq!(v["msg_type"], "interactive");
}

#[tokio::test]
async fn vendor_error_codes_are_refusals_or_throttling() {
    use super::robot::check;
    let refused = check(br#"{"errcode":310000,"errmsg":"sign not match"}"#, "errcode", "errmsg", &[130101]);
    let refused = refused.unwrap_err();
    assert!(!refused.is_retryable());
    assert_eq!(refused.to_string(), "receiver refused the message: errcode 310000: sign not match");
    let fast = check(br#"{"errcode":130101,"errmsg":"send too fast"}"#, "errcode", "errmsg", &[130101]).unwrap_err();
    assert!(fast.is_retryable());
    assert_eq!(fast.retry_after(), Some(Duration::from_secs(60)));
    assert!(check(br#"{"code":0,"msg":"success"}"#, "code", "msg", &[]).is_ok());
}

#[tokio::test]
async fn im_messages_go_through_the_outbox() {
    let (r, url) = receiver(vec![Reply::Status(502)]).await;
    let dir = tempfile::tempdir().unwrap();
    let outbox = Arc::new(Outbox::open(&dir.path().join("alertd.db")).unwrap());
    let its: Integrations =
        integrations(&url, None, Language::En).into_iter().map(|(kind, it)| (format!("team/{kind}/0"), it)).collect();
    let d = Deliverer::new(outbox.clone(), its, fast_policy());
    let _w = d.spawn();
    for kind in ["slack", "dingtalk", "feishu", "wecom"] {
        let mut n = sample();
        n.integration = format!("team/{kind}/0");
        d.notifier().notify(n).unwrap();
    }
    until("four deliveries", || outbox.count(outbox::State::Delivered).unwrap() == 4).await;
    assert_eq!(r.got().len(), 5, "one 502 retried");
}

#[test]
fn robots_mention_people_when_firing_only() {
    let src = "route: {receiver: r}\nreceivers:\n  - name: r\n    dingtalk_configs: [{url: 'http://d/', mentions: {mobiles: ['13800000000'], user_ids: [u1], all: true}}]\n    feishu_configs: [{url: 'http://f/', mentions: {user_ids: [ou_7d8a], all: true}}]\n    wecom_configs: [{url: 'http://w/', mentions: {user_ids: [zhangsan, lisi]}}]\n";
    let its = build(&crate::config::parse(src, "alertd.yml").unwrap()).unwrap();
    let firing = sample();
    let mut resolved = sample();
    resolved.message.status = Status::Resolved;
    let body = |kind: &str, n: &Notification| -> serde_json::Value {
        serde_json::from_slice(&its[&format!("r/{kind}/0")].render(n).unwrap()).unwrap()
    };
    let d = body("dingtalk", &firing);
    assert_eq!(d["at"], serde_json::json!({"atMobiles": ["13800000000"], "atUserIds": ["u1"], "isAtAll": true}));
    assert!(d["markdown"]["text"].as_str().unwrap().ends_with("\n\n@13800000000 @u1"), "{d}");
    let f = body("feishu", &firing);
    let content = f["card"]["elements"][0]["content"].as_str().unwrap();
    assert!(content.ends_with("\n<at id=ou_7d8a></at> <at id=all></at>"), "{content}");
    let w = body("wecom", &firing);
    assert!(w["markdown"]["content"].as_str().unwrap().ends_with("\n<@zhangsan> <@lisi>"), "{w}");
    // A resolution mentions nobody.
    assert!(body("dingtalk", &resolved).get("at").is_none());
    assert!(!body("feishu", &resolved).to_string().contains("<at id="));
    assert!(!body("wecom", &resolved).to_string().contains("<@"));

    let bad = |rx: &str| {
        let src = format!("route: {{receiver: r}}\nreceivers:\n  - name: r\n    {rx}\n");
        crate::config::parse(&src, "alertd.yml").unwrap_err().to_string()
    };
    assert_eq!(
        bad("feishu_configs: [{url: 'http://f/', mentions: {mobiles: ['138']}}]"),
        "alertd.yml:4: receivers[0].feishu_configs[0].mentions.mobiles: Feishu and WeCom robots mention by user id only: use user_ids"
    );
    assert_eq!(
        bad("wecom_configs: [{url: 'http://w/', mentions: {all: true}}]"),
        "alertd.yml:4: receivers[0].wecom_configs[0].mentions.all: WeCom markdown messages cannot mention everyone"
    );
}
