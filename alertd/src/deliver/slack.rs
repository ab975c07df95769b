//! Slack incoming webhook: one attachment, red while firing and green when resolved.

use super::text::{self, Markup};
use super::{BoxFuture, DeliverError, HttpTarget, Integration};
use crate::alert::Status;
use crate::notify::Notification;
use crate::receiver::Language;
use serde_json::json;

pub struct Slack {
    pub target: HttpTarget,
    pub channel: Option<String>,
    pub username: Option<String>,
    pub icon_emoji: Option<String>,
    pub language: Language,
}

impl Integration for Slack {
    fn render(&self, n: &Notification) -> Result<Vec<u8>, DeliverError> {
        let title = text::title(&n.message, self.language);
        let color = if n.message.status == Status::Firing { "danger" } else { "good" };
        let mut msg = json!({
            "attachments": [{
                "color": color,
                "title": title,
                "fallback": title,
                "text": text::body(&n.message, self.language, Markup::Slack),
                "mrkdwn_in": ["text"],
            }],
        });
        for (k, v) in [("channel", &self.channel), ("username", &self.username), ("icon_emoji", &self.icon_emoji)] {
            if let Some(v) = v {
                msg[k] = json!(v);
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
