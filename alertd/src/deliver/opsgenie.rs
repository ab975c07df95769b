//! Opsgenie's Alert API, as Alertmanager uses it: a firing group creates (or adds to) the alert
//! whose alias is the SHA-256 of the group key; a resolved group closes it. With `update_alerts`, an
//! open alert's message and description are updated too. The API key goes in the `Authorization`
//! header when sent, never into the outbox.

use super::pagerduty::{description as description_of, key_hash};
use super::text;
use super::{BoxFuture, DeliverError, HttpTarget, Integration};
use crate::alert::Status;
use crate::notify::Notification;
use crate::receiver::OpsGenieConfig;
use crate::receiver::notification::Renderer;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Opsgenie keeps at most this many characters of a message.
const MAX_MESSAGE: usize = 130;

pub struct OpsGenie {
    pub target: HttpTarget,
    pub cfg: OpsGenieConfig,
}

/// What the outbox keeps: the requests, in order, relative to the API root.
#[derive(Debug, Serialize, Deserialize)]
struct Requests(Vec<Request>);

#[derive(Debug, Serialize, Deserialize)]
struct Request {
    method: String,
    /// Path and query under `api_url`, e.g. `v2/alerts`.
    path: String,
    body: Value,
}

impl Integration for OpsGenie {
    fn render(&self, n: &Notification) -> Result<Vec<u8>, DeliverError> {
        let (c, m) = (&self.cfg, &n.message);
        let alias = key_hash(&m.group_key);
        let source = c.source.clone().unwrap_or_else(|| m.external_url.clone());
        let mut out = Vec::new();
        if m.status == Status::Resolved {
            let path = format!("v2/alerts/{alias}/close?identifierType=alias");
            out.push(Request { method: "POST".into(), path, body: json!({"source": source}) });
        } else {
            let mut r = Renderer::new(m, "opsgenie_configs");
            let message: String = {
                let full = r.field("message", c.message.as_ref()).map_err(DeliverError::Render)?;
                full.unwrap_or_else(|| text::title(m, c.language)).chars().take(MAX_MESSAGE).collect()
            };
            let description = r.field("description", c.description.as_ref()).map_err(DeliverError::Render)?;
            let description = description.unwrap_or_else(|| description_of(m, c.language));
            let mut details: serde_json::Map<String, Value> =
                m.common_labels.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            for (k, t) in &c.details {
                let v = r.field(&format!("details.{k}"), Some(t)).map_err(DeliverError::Render)?;
                details.insert(k.clone(), json!(v.unwrap_or_default()));
            }
            let note = r.field("note", c.note.as_ref()).map_err(DeliverError::Render)?;
            let mut create = json!({
                "alias": alias,
                "message": message,
                "description": description,
                "details": details,
                "source": source,
            });
            if !c.responders.is_empty() {
                create["responders"] = json!(c.responders);
            }
            for (k, v) in [("tags", &c.tags), ("actions", &c.actions)] {
                if !v.is_empty() {
                    create[k] = json!(v);
                }
            }
            for (k, v) in [("note", &note), ("priority", &c.priority), ("entity", &c.entity)] {
                if let Some(v) = v {
                    create[k] = json!(v);
                }
            }
            out.push(Request { method: "POST".into(), path: "v2/alerts".into(), body: create });
            if c.update_alerts {
                out.push(Request {
                    method: "PUT".into(),
                    path: format!("v2/alerts/{alias}/message?identifierType=alias"),
                    body: json!({"message": message}),
                });
                out.push(Request {
                    method: "PUT".into(),
                    path: format!("v2/alerts/{alias}/description?identifierType=alias"),
                    body: json!({"description": description}),
                });
            }
        }
        serde_json::to_vec(&Requests(out)).map_err(|e| DeliverError::Render(e.to_string()))
    }

    fn send<'a>(&'a self, body: &'a [u8], key: &'a str) -> BoxFuture<'a, Result<(), DeliverError>> {
        Box::pin(async move {
            let Requests(list) = serde_json::from_slice(body).map_err(|e| DeliverError::Render(e.to_string()))?;
            let api_key = self.cfg.api_key.read().map_err(|e| DeliverError::Request(format!("api_key_file {e}")))?;
            let auth = [("Authorization", format!("GenieKey {}", api_key.expose()))];
            for r in list {
                let method = reqwest::Method::from_bytes(r.method.as_bytes())
                    .map_err(|_| DeliverError::Render(format!("method {:?}", r.method)))?;
                let url = format!("{}{}", self.cfg.api_url, r.path);
                let body = serde_json::to_vec(&r.body).map_err(|e| DeliverError::Render(e.to_string()))?;
                self.target.request(method, &url, key, &auth, &body).await?;
            }
            Ok(())
        })
    }
}
