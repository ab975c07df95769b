//! Slack incoming webhook: one attachment, red while firing and green when resolved. The fields a
//! configuration writes as notification templates replace alertd's own, one by one; those with no
//! value of alertd's own (`pretext`, `title_link`, `footer`, …) are sent when set and not empty, as
//! Alertmanager leaves empty ones out.

use super::text::{self, Markup};
use super::{BoxFuture, DeliverError, HttpTarget, Integration};
use crate::alert::Status;
use crate::notify::Notification;
use crate::receiver::notification::{Renderer, Text};
use crate::receiver::{Language, SlackTemplates};
use serde_json::json;

pub struct Slack {
    pub target: HttpTarget,
    pub channel: Option<Text>,
    pub username: Option<Text>,
    pub icon_emoji: Option<Text>,
    pub templates: SlackTemplates,
    pub language: Language,
}

impl Integration for Slack {
    fn render(&self, n: &Notification) -> Result<Vec<u8>, DeliverError> {
        let t = &self.templates;
        let mut r = Renderer::new(&n.message, "slack_configs");
        let mut field = |name: &str, v| r.field(name, v).map_err(DeliverError::Render);
        let own_title = || text::title(&n.message, self.language);
        let title = field("title", t.title.as_ref())?.unwrap_or_else(own_title);
        let fallback = field("fallback", t.fallback.as_ref())?.unwrap_or_else(own_title);
        let own_color = if n.message.status == Status::Firing { "danger" } else { "good" };
        let color = field("color", t.color.as_ref())?.unwrap_or_else(|| own_color.into());
        let body = match field("text", t.text.as_ref())? {
            Some(b) => b,
            None => text::body(&n.message, self.language, Markup::Slack),
        };
        let mut msg = json!({
            "attachments": [{
                "color": color,
                "title": title,
                "fallback": fallback,
                "text": body,
                "mrkdwn_in": ["text"],
            }],
        });
        // Sent only when set and not empty: the attachment's (true) and the message's own.
        let optional = [
            ("title_link", &t.title_link, true),
            ("pretext", &t.pretext, true),
            ("footer", &t.footer, true),
            ("image_url", &t.image_url, true),
            ("thumb_url", &t.thumb_url, true),
            ("channel", &self.channel, false),
            ("username", &self.username, false),
            ("icon_emoji", &self.icon_emoji, false),
            ("icon_url", &t.icon_url, false),
        ];
        for (k, v, in_attachment) in optional {
            if let Some(v) = field(k, v.as_ref())?.filter(|v| !v.is_empty()) {
                let at = if in_attachment { &mut msg["attachments"][0] } else { &mut msg };
                at[k] = json!(v);
            }
        }
        serde_json::to_vec(&msg).map_err(|e| DeliverError::Render(e.to_string()))
    }

    fn send<'a>(&'a self, body: &'a [u8], key: &'a str) -> BoxFuture<'a, Result<(), DeliverError>> {
        Box::pin(async move {
            self.target.post_here(key, &[], body).await?;
            Ok(())
        })
    }
}
