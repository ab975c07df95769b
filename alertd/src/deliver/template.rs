//! Custom webhook bodies (`webhook_configs[].argus.body_template`): JSON text with placeholders,
//! each replaced by a JSON value taken from the webhook v4 message, so the result stays JSON
//! whatever the values hold. Not Go templates: a fixed set of fields, no logic.
//!
//! `{{ . }}` the whole v4 message; `{{ .Receiver }}`, `{{ .Status }}`, `{{ .GroupKey }}`,
//! `{{ .ExternalURL }}`, `{{ .TruncatedAlerts }}`, `{{ .Alerts }}` (the array);
//! `{{ .GroupLabels.NAME }}`, `{{ .CommonLabels.NAME }}`, `{{ .CommonAnnotations.NAME }}` ("" when
//! absent); `{{ .Title }}` and `{{ .Text }}`, the default English message.
//!
//! The parsed template is a receiver setting (`receiver::template`); rendering it is here.

pub use crate::receiver::template::BodyTemplate;

use super::text::{self, Markup};
use crate::receiver::Language;
use crate::receiver::template::{Field, Part};
use crate::webhook::{Kv, Message};
use serde_json::{Value, json};

impl BodyTemplate {
    /// The body for `m`; an error when the result is not JSON.
    pub fn render(&self, m: &Message) -> Result<Vec<u8>, String> {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Field(f) => out.push_str(&value(f, m).to_string()),
            }
        }
        serde_json::from_str::<Value>(&out).map_err(|e| format!("body template does not give json: {e}"))?;
        Ok(out.into_bytes())
    }
}

fn value(f: &Field, m: &Message) -> Value {
    let get = |kv: &Kv, k: &str| json!(kv.get(k).map(String::as_str).unwrap_or(""));
    match f {
        Field::Whole => json!(m),
        Field::Receiver => json!(m.receiver),
        Field::Status => json!(m.status),
        Field::GroupKey => json!(m.group_key),
        Field::ExternalUrl => json!(m.external_url),
        Field::TruncatedAlerts => json!(m.truncated_alerts),
        Field::Alerts => json!(m.alerts),
        Field::Title => json!(text::title(m, Language::En)),
        Field::Text => json!(text::body(m, Language::En, Markup::Markdown)),
        Field::GroupLabel(l) => get(&m.group_labels, l),
        Field::CommonLabel(l) => get(&m.common_labels, l),
        Field::CommonAnnotation(l) => get(&m.common_annotations, l),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alert::Status;
    use crate::outbox::tests::notification;
    use expect_test::expect;

    #[test]
    fn placeholders_become_json_values() {
        let mut m = notification("g\"1", "t/webhook/0", 1_000, &[("01", Status::Firing)]).message;
        m.common_labels.insert("alertname".into(), "Gpu \"hot\"".into());
        let t = BodyTemplate::parse(
            r#"{"title": {{ .Title }}, "name": {{.CommonLabels.alertname}}, "none": {{ .GroupLabels.x }}, "key": {{ .GroupKey }}, "n": {{ .TruncatedAlerts }}, "fps": {{ .Alerts }}}"#,
        )
        .unwrap();
        let v: Value = serde_json::from_slice(&t.render(&m).unwrap()).unwrap();
        expect![[r#"{"fps":[{"annotations":{},"endsAt":"0001-01-01T00:00:00Z","fingerprint":"01","generatorURL":"","labels":{"alertname":"A01"},"startsAt":"1969-12-31T23:59:01Z","status":"firing"}],"key":"g\"1","n":0,"name":"Gpu \"hot\"","none":"","title":"[FIRING:1] Gpu \"hot\""}"#]]
            .assert_eq(&v.to_string());
    }

    #[test]
    fn bad_templates_are_refused() {
        assert_eq!(BodyTemplate::parse("{{ .Nope }}").unwrap_err(), "unknown placeholder {{ .Nope }}");
        assert_eq!(BodyTemplate::parse("{{ .Status").unwrap_err(), "a {{ is not closed");
        let m = notification("g", "t/webhook/0", 1_000, &[]).message;
        let e = BodyTemplate::parse("status={{ .Status }}").unwrap().render(&m).unwrap_err();
        assert!(e.starts_with("body template does not give json"), "{e}");
    }
}
