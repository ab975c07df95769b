//! PagerDuty and Opsgenie against a local HTTP receiver standing in for their APIs: the requests
//! Alertmanager would make for a group's trigger and resolve, keys kept out of the outbox.

use super::tests::receiver;
use super::*;
use crate::alert::Status;
use crate::config::parse;
use crate::outbox::tests::notification;
use serde_json::{Value, json};

const GROUP: &str = "{}/{team=\"gpu\"}:{host=\"gpu-node-07\"}";

fn firing(integration: &str) -> Notification {
    let mut n = notification(GROUP, integration, 1_700_000_000_000, &[("a1", Status::Firing)]);
    let m = &mut n.message;
    m.group_labels.insert("host".into(), "gpu-node-07".into());
    m.common_labels.insert("alertname".into(), "GpuXid".into());
    m.common_labels.insert("host".into(), "gpu-node-07".into());
    m.external_url = "http://alertd.example:9700".into();
    m.alerts[0].labels.insert("host".into(), "gpu-node-07".into());
    m.alerts[0].annotations.insert("summary".into(), "Xid 79 on GPU 3".into());
    n
}

fn resolved(integration: &str) -> Notification {
    let mut n = firing(integration);
    n.message.status = Status::Resolved;
    n.message.alerts[0].status = Status::Resolved;
    n
}

fn integrations(receivers: &str) -> Integrations {
    let src = format!("route: {{receiver: pager}}\nreceivers:\n  - name: pager\n{receivers}");
    build(&parse(&src, "alertd.yml").unwrap()).unwrap()
}

fn json(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap()
}

#[tokio::test]
async fn pagerduty_v2_triggers_and_resolves_one_incident() {
    let (r, url) = receiver(vec![]).await;
    let pd = integrations(&format!(
        "    pagerduty_configs:\n      - {{routing_key: R0UT1NG, url: '{url}', severity: critical, component: gpu, links: [{{href: 'http://runbook/xid', text: runbook}}]}}\n"
    ))
    .remove("pager/pagerduty/0")
    .unwrap();
    for n in [firing("pager/pagerduty/0"), resolved("pager/pagerduty/0")] {
        let body = pd.render(&n).unwrap();
        assert!(!String::from_utf8_lossy(&body).contains("R0UT1NG"), "the key stays out of the outbox");
        pd.send(&body, "k").await.unwrap();
    }
    let got: Vec<Value> = r.got().iter().map(|g| json(&g.body)).collect();
    assert_eq!(got.len(), 2);
    let dedup = pagerduty::key_hash(GROUP);
    assert_eq!(dedup.len(), 64);
    let t = &got[0];
    assert_eq!(t["routing_key"], "R0UT1NG");
    assert_eq!(t["event_action"], "trigger");
    assert_eq!(t["dedup_key"], dedup.as_str());
    assert_eq!(t["payload"]["summary"], "[FIRING:1] GpuXid host=gpu-node-07");
    assert_eq!(t["payload"]["severity"], "critical");
    assert_eq!(t["payload"]["source"], "Argus alertd");
    assert_eq!(t["payload"]["component"], "gpu");
    assert_eq!(t["payload"]["custom_details"]["num_firing"], "1");
    let instances = t["payload"]["custom_details"]["firing"].as_str().unwrap();
    assert!(instances.contains(" - host = gpu-node-07\n") && instances.contains(" - summary = Xid 79 on GPU 3\n"));
    assert_eq!(t["client_url"], "http://alertd.example:9700");
    assert_eq!(t["links"][0]["href"], "http://runbook/xid");
    assert_eq!(
        (got[1]["event_action"].as_str(), got[1]["dedup_key"].as_str()),
        (Some("resolve"), Some(dedup.as_str()))
    );
    assert_eq!(got[1]["payload"]["custom_details"]["num_resolved"], "1");
}

#[tokio::test]
async fn pagerduty_v1_service_key_from_a_file() {
    let (r, url) = receiver(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("pd.key");
    std::fs::write(&key, "SERV1CE\n").unwrap();
    let pd = integrations(&format!(
        "    pagerduty_configs:\n      - {{service_key_file: '{}', url: '{url}', description: GPU fault}}\n",
        key.display()
    ))
    .remove("pager/pagerduty/0")
    .unwrap();
    pd.send(&pd.render(&firing("pager/pagerduty/0")).unwrap(), "k").await.unwrap();
    let got = json(&r.got()[0].body);
    assert_eq!(got["service_key"], "SERV1CE");
    assert_eq!(got["event_type"], "trigger");
    assert_eq!(got["description"], "GPU fault");
    assert_eq!(got["incident_key"], pagerduty::key_hash(GROUP).as_str());
}

#[tokio::test]
async fn opsgenie_creates_updates_and_closes_by_alias() {
    let (r, url) = receiver(vec![]).await;
    let root = url.split("/hook").next().unwrap();
    let og = integrations(&format!(
        "    opsgenie_configs:\n      - {{api_url: '{root}/og', priority: P2, tags: 'gpu, xid', update_alerts: true, details: {{runbook: 'http://runbook/xid'}}, responders: [{{type: teams, name: 'infra, ml'}}, {{type: user, username: 'oncall@x.org'}}]}}\nglobal:\n  opsgenie_api_key: G3N1E\n  http_config: {{bearer_token: not-for-opsgenie}}\n"
    ))
    .remove("pager/opsgenie/0")
    .unwrap();
    for n in [firing("pager/opsgenie/0"), resolved("pager/opsgenie/0")] {
        let body = og.render(&n).unwrap();
        assert!(!String::from_utf8_lossy(&body).contains("G3N1E"), "the key stays out of the outbox");
        og.send(&body, "k").await.unwrap();
    }
    let got = r.got();
    let alias = pagerduty::key_hash(GROUP);
    let paths: Vec<String> = got.iter().map(|g| g.query.clone()).collect();
    assert_eq!(paths, ["", "identifierType=alias", "identifierType=alias", "identifierType=alias"]);
    for g in &got {
        assert_eq!(g.headers.get_all("authorization").iter().collect::<Vec<_>>(), ["GenieKey G3N1E"]);
    }
    let create = json(&got[0].body);
    assert_eq!(create["alias"], alias.as_str());
    assert_eq!(create["message"], "[FIRING:1] GpuXid host=gpu-node-07");
    assert_eq!(create["priority"], "P2");
    assert_eq!(create["tags"], serde_json::json!(["gpu", "xid"]));
    assert_eq!(create["details"]["host"], "gpu-node-07");
    assert_eq!(create["details"]["runbook"], "http://runbook/xid");
    assert_eq!(create["source"], "http://alertd.example:9700");
    assert_eq!(
        create["responders"],
        serde_json::json!([{"type": "team", "name": "infra"}, {"type": "team", "name": "ml"}, {"type": "user", "username": "oncall@x.org"}])
    );
    assert_eq!(json(&got[1].body)["message"], create["message"]);
    assert_eq!(json(&got[2].body)["description"], create["description"]);
    assert_eq!(json(&got[3].body), serde_json::json!({"source": "http://alertd.example:9700"}));
}

#[tokio::test]
async fn paging_services_retry_as_alertmanager() {
    use super::tests::Reply;
    let (_r, url) = receiver(vec![Reply::TooMany(1), Reply::Status(500), Reply::Status(400)]).await;
    let pd = integrations(&format!("    pagerduty_configs:\n      - {{routing_key: k, url: '{url}'}}\n"))
        .remove("pager/pagerduty/0")
        .unwrap();
    let body = pd.render(&firing("pager/pagerduty/0")).unwrap();
    let errors: Vec<bool> = [
        pd.send(&body, "k").await.unwrap_err(),
        pd.send(&body, "k").await.unwrap_err(),
        pd.send(&body, "k").await.unwrap_err(),
    ]
    .iter()
    .map(DeliverError::is_retryable)
    .collect();
    assert_eq!(errors, [true, true, false], "429 and 5xx are retried, 400 is not");
}

/// Templated fields render over Alertmanager's data; unset ones keep alertd's own; a template that
/// fails while rendering is a permanent render error naming the receiver and the field.
#[test]
fn templated_fields_render_and_failures_are_not_retried() {
    let its = integrations(concat!(
        "    pagerduty_configs:\n      - routing_key: R\n        description: '{{ template \"pagerduty.default.description\" . }}'\n",
        "        client: '{{ template \"pagerduty.default.client\" . }}'\n        details: {n: '{{ .Alerts.Firing | len }}', s: '{{ .CommonLabels.alertname | toLower }}'}\n",
        "    opsgenie_configs:\n      - api_key: K\n        message: '{{ .CommonLabels.alertname }} on {{ .GroupLabels.host }}'\n",
        "        note: '{{ range .Alerts }}{{ .Annotations.summary }}{{ end }}'\n        details: {team: '{{ .GroupLabels.SortedPairs.Names | join \",\" }}'}\n",
        "    slack_configs:\n      - api_url: 'http://s/'\n        username: '{{ template \"slack.default.username\" . }}'\n        channel: '#{{ .GroupLabels.host }}'\n        title: '{{ template \"slack.default.title\" . }}'\n        footer: '{{ .ExternalURL }}'\n        pretext: '{{ if false }}x{{ end }}'\n",
        "      - api_url: 'http://s/'\n        text: '{{ index .Alerts 3 }}'\n",
        "    email_configs:\n      - to: a@x.org\n        from: b@x.org\n        smarthost: 'h:25'\n        headers: {Subject: '{{ template \"email.default.subject\" . }}'}\n        html: '{{ template \"email.default.html\" . }}'\n",
    ));
    let render = |name: &str| its[name].render(&firing(name));
    let pd = json(&render("pager/pagerduty/0").unwrap());
    assert_eq!(pd["payload"]["summary"], "[FIRING:1] gpu-node-07 (GpuXid)");
    assert_eq!(pd["client"], "Alertmanager");
    assert_eq!(pd["payload"]["custom_details"], serde_json::json!({"n": "1", "s": "gpuxid"}));
    assert_eq!(pd["client_url"], "http://alertd.example:9700", "unset: alertd's own");
    let og = json(&render("pager/opsgenie/0").unwrap());
    let create = &og[0]["body"];
    assert_eq!(create["message"], "GpuXid on gpu-node-07");
    assert_eq!(create["note"], "Xid 79 on GPU 3");
    assert_eq!(create["details"]["team"], "host");
    assert_eq!(create["details"]["alertname"], "GpuXid", "over the common labels");
    let slack = json(&render("pager/slack/0").unwrap());
    let a = &slack["attachments"][0];
    assert_eq!(a["title"], "[FIRING:1] gpu-node-07 (GpuXid)");
    assert_eq!((&slack["username"], &slack["channel"]), (&json!("Alertmanager"), &json!("#gpu-node-07")));
    assert_eq!(a["footer"], "http://alertd.example:9700");
    assert!(a.get("pretext").is_none(), "an empty field is left out: {a}");
    assert_eq!(a["color"], "danger", "unset: alertd's own");
    assert!(a["text"].as_str().unwrap().contains("Xid 79 on GPU 3"), "unset: alertd's own");
    let email = json(&render("pager/email/0").unwrap());
    assert_eq!(email["subject"], "[FIRING:1] gpu-node-07 (GpuXid)");
    assert!(email["html"].as_str().unwrap().contains("<title>[FIRING:1] gpu-node-07 (GpuXid)</title>"));
    match render("pager/slack/1") {
        Err(e @ DeliverError::Render(_)) => {
            assert!(!e.is_retryable());
            let msg = e.to_string();
            assert!(msg.contains("receiver \"team\" slack_configs.text: template: :1:3: executing \"\" at <index .Alerts 3>: error calling index: index out of range: 3"), "{msg}");
        }
        other => panic!("{:?}", other.map(|b| String::from_utf8_lossy(&b).into_owned())),
    }
}
