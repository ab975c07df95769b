use super::*;
use crate::alert::Status;
use crate::outbox::tests::notification;

#[test]
fn data_follows_the_message() {
    let mut m = notification("g", "t/slack/0", 1_000, &[("01", Status::Firing), ("02", Status::Resolved)]).message;
    m.receiver = "ops (eu)".into();
    let d = data(&m);
    assert_eq!(d.receiver, "ops \\(eu\\)");
    assert_eq!(d.status, "firing");
    assert_eq!(d.alerts.iter().map(|a| a.status.as_str()).collect::<Vec<_>>(), ["firing", "resolved"]);
    assert_eq!(d.alerts[0].labels.get("alertname").map(String::as_str), Some("A01"));
}

#[test]
fn the_defaults_parse_and_files_are_checked() {
    let lib = library(&[]).unwrap();
    for name in [
        "__subject",
        "slack.default.title",
        "email.default.html",
        "pagerduty.default.description",
        "opsgenie.default.message",
    ] {
        assert!(lib.contains(name), "{name}");
    }
    let e = library(&[("x.tmpl".into(), "{{ define \"a\" }}{{ template \"b\" . }}{{ end }}".into())]).unwrap_err();
    assert_eq!(e.to_string(), "template: x.tmpl:1:17: no such template \"b\"");
}

#[test]
fn a_field_renders_or_names_itself_in_its_error() {
    let lib = library(&[]).unwrap();
    let mut m = notification("g", "t/slack/0", 1_000, &[("01", Status::Firing)]).message;
    m.common_labels = m.alerts[0].labels.clone();
    let title = Text::parse(&lib, "{{ template \"slack.default.title\" . }}").unwrap();
    let bad = Text::parse(&lib, "{{ index .Alerts 5 }}").unwrap();
    assert_eq!(format!("{title:?}"), "\"{{ template \\\"slack.default.title\\\" . }}\"");
    let mut r = Renderer::new(&m, "slack_configs[0]");
    assert_eq!(r.field("title", Some(&title)).unwrap().as_deref(), Some("[FIRING:1]  (A01)"));
    assert_eq!(r.field("text", None).unwrap(), None);
    let e = r.field("text", Some(&bad)).unwrap_err();
    assert!(
        e.starts_with(&format!("receiver {:?} slack_configs[0].text: template: :1:3: executing", m.receiver)),
        "{e}"
    );
}
