//! PagerDuty's Events API: v2 (`routing_key`) or v1 (`service_key`), as Alertmanager sends them.
//! The event is deduplicated by the SHA-256 of the group key, so a group's trigger and resolve meet
//! in one PagerDuty incident. The key is put into the body when it is sent, never kept in the outbox.

use super::text::{self, Markup};
use super::{BoxFuture, DeliverError, HttpTarget, Integration};
use crate::alert::Status;
use crate::notify::Notification;
use crate::receiver::notification::Renderer;
use crate::receiver::{PagerDutyConfig, PagerDutyKey, SecretSource};
use crate::webhook::{Message, MessageAlert};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write;

/// PagerDuty refuses events larger than this; the details are dropped to fit, as Alertmanager does.
const MAX_EVENT: usize = 512_000;
/// The summary is cut at this many characters.
const MAX_SUMMARY: usize = 1024;

pub struct PagerDuty {
    pub target: HttpTarget,
    pub cfg: PagerDutyConfig,
}

/// The hex SHA-256 of a group key: Alertmanager's `dedup_key`, `incident_key` and Opsgenie alias.
pub fn key_hash(group_key: &str) -> String {
    super::sign::hex(&Sha256::digest(group_key.as_bytes()))
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// One alert as Alertmanager's `pagerduty.default.instances` lists it.
fn instance(out: &mut String, a: &MessageAlert) {
    out.push_str("Labels:\n");
    for (k, v) in a.labels.iter() {
        writeln!(out, " - {k} = {v}").ok();
    }
    out.push_str("Annotations:\n");
    for (k, v) in a.annotations.iter() {
        writeln!(out, " - {k} = {v}").ok();
    }
    writeln!(out, "Source: {}", a.generator_url).ok();
}

/// The default `details`: the firing and resolved alerts and their counts.
fn default_details(m: &Message) -> BTreeMap<String, String> {
    let (mut firing, mut resolved) = (String::new(), String::new());
    let (mut nf, mut nr) = (0, 0);
    for a in &m.alerts {
        if a.status == Status::Firing {
            instance(&mut firing, a);
            nf += 1;
        } else {
            instance(&mut resolved, a);
            nr += 1;
        }
    }
    BTreeMap::from([
        ("firing".to_string(), firing),
        ("resolved".to_string(), resolved),
        ("num_firing".to_string(), nf.to_string()),
        ("num_resolved".to_string(), nr.to_string()),
    ])
}

impl PagerDuty {
    /// The event for `m`; the error names the field whose template failed.
    fn event(&self, m: &Message) -> Result<Value, String> {
        let c = &self.cfg;
        let resolved = m.status == Status::Resolved;
        let mut r = Renderer::new(m, "pagerduty_configs");
        let description = r.field("description", c.description.as_ref())?;
        let summary = cut(&description.unwrap_or_else(|| text::title(m, c.language)), MAX_SUMMARY);
        let details = match &c.details {
            None => default_details(m),
            Some(d) => {
                let mut out = BTreeMap::new();
                for (k, t) in d {
                    out.insert(k.clone(), r.field(&format!("details.{k}"), Some(t))?.unwrap_or_default());
                }
                out
            }
        };
        let client = r.field("client", Some(&c.client))?.unwrap_or_default();
        let client_url = r.field("client_url", c.client_url.as_ref())?.unwrap_or_else(|| m.external_url.clone());
        let dedup = key_hash(&m.group_key);
        match c.key {
            PagerDutyKey::Routing(_) => {
                let mut payload = json!({
                    "summary": summary,
                    "source": c.source.clone().unwrap_or_else(|| client.clone()),
                    "severity": c.severity,
                    "custom_details": details,
                });
                for (k, v) in [("class", &c.class), ("component", &c.component), ("group", &c.group)] {
                    if let Some(v) = v {
                        payload[k] = json!(v);
                    }
                }
                let links: Vec<Value> =
                    c.links.iter().map(|(href, text)| json!({"href": href, "text": text})).collect();
                Ok(json!({
                    "event_action": if resolved { "resolve" } else { "trigger" },
                    "dedup_key": dedup,
                    "payload": payload,
                    "client": client,
                    "client_url": client_url,
                    "links": links,
                }))
            }
            PagerDutyKey::Service(_) => {
                let mut v = json!({
                    "event_type": if resolved { "resolve" } else { "trigger" },
                    "incident_key": dedup,
                    "description": summary,
                    "details": details,
                });
                if !resolved {
                    v["client"] = json!(client);
                    v["client_url"] = json!(client_url);
                }
                Ok(v)
            }
        }
    }

    fn key(&self) -> (&'static str, &SecretSource) {
        match &self.cfg.key {
            PagerDutyKey::Routing(k) => ("routing_key", k),
            PagerDutyKey::Service(k) => ("service_key", k),
        }
    }
}

impl Integration for PagerDuty {
    fn render(&self, n: &Notification) -> Result<Vec<u8>, DeliverError> {
        let mut event = self.event(&n.message).map_err(DeliverError::Render)?;
        let encoded = |e: &Value| serde_json::to_vec(e).map_err(|e| DeliverError::Render(e.to_string()));
        let mut body = encoded(&event)?;
        if body.len() > MAX_EVENT {
            let note = format!("the details were removed: the event exceeded PagerDuty's {MAX_EVENT} bytes");
            let slot = if event.get("payload").is_some() {
                &mut event["payload"]["custom_details"]
            } else {
                &mut event["details"]
            };
            *slot = json!({"error": note});
            body = encoded(&event)?;
        }
        Ok(body)
    }

    fn send<'a>(&'a self, body: &'a [u8], key: &'a str) -> BoxFuture<'a, Result<(), DeliverError>> {
        Box::pin(async move {
            let mut event: Value = serde_json::from_slice(body).map_err(|e| DeliverError::Render(e.to_string()))?;
            let (field, secret) = self.key();
            let secret = secret.read().map_err(|e| DeliverError::Request(format!("{field}_file {e}")))?;
            event[field] = json!(secret.expose());
            let body = serde_json::to_vec(&event).map_err(|e| DeliverError::Render(e.to_string()))?;
            self.target.post(&self.cfg.url, key, &[], &body).await?;
            Ok(())
        })
    }
}

/// The markdown body, for integrations that show one besides the summary (Opsgenie's description).
pub fn description(m: &Message, lang: crate::receiver::Language) -> String {
    text::body(m, lang, Markup::Markdown)
}
