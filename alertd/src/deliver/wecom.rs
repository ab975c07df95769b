//! WeCom (企业微信) group robot: a markdown message, at most 20 a minute.

use super::limit::Window;
use super::robot::check;
use super::text::{self, Markup};
use super::{BoxFuture, DeliverError, HttpTarget, Integration};
use crate::alert::Status;
use crate::notify::Notification;
use crate::receiver::{Language, Mentions};
use serde_json::json;

pub struct WeCom {
    pub target: HttpTarget,
    pub language: Language,
    pub limit: Window,
    /// @-mentioned when firing: `<@userid>` at the end of the markdown (kept within the size limit).
    pub mentions: Mentions,
}

/// errcode 45009: the API frequency limit.
const TOO_FAST: &[i64] = &[45009];
/// WeCom refuses markdown content over 4096 bytes.
const MAX_CONTENT: usize = 4096;

impl Integration for WeCom {
    fn render(&self, n: &Notification) -> Result<Vec<u8>, DeliverError> {
        let title = text::title(&n.message, self.language);
        let mut content = format!("### {title}\n{}", text::body(&n.message, self.language, Markup::Markdown));
        let at = if n.message.status == Status::Firing && !self.mentions.is_empty() {
            let ids: Vec<String> = self.mentions.user_ids.iter().map(|id| format!("<@{id}>")).collect();
            format!("\n{}", ids.join(" "))
        } else {
            String::new()
        };
        // The mentions are never cut off: the text before them is.
        let room = MAX_CONTENT.saturating_sub(at.len());
        if content.len() > room {
            let cut = (0..=room.saturating_sub(3)).rev().find(|&i| content.is_char_boundary(i)).unwrap_or(0);
            content.truncate(cut);
            content.push_str("...");
        }
        content.push_str(&at);
        let msg = json!({"msgtype": "markdown", "markdown": {"content": content}});
        serde_json::to_vec(&msg).map_err(|e| DeliverError::Render(e.to_string()))
    }

    fn send<'a>(&'a self, body: &'a [u8], key: &'a str) -> BoxFuture<'a, Result<(), DeliverError>> {
        Box::pin(async move {
            self.limit.acquire().await;
            let answer = self.target.post_here(key, &[], body).await?;
            check(&answer, "errcode", "errmsg", TOO_FAST)
        })
    }
}
