//! Feishu/Lark custom bot: an interactive card, signed in the body when a secret is set.

use super::robot::check;
use super::sign::{base64, hmac_sha256};
use super::text::{self, Markup};
use super::{BoxFuture, DeliverError, HttpTarget, Integration};
use crate::alert::Status;
use crate::notify::Notification;
use crate::receiver::{Language, Mentions};
use argus_model::Secret;
use serde_json::json;

pub struct Feishu {
    pub target: HttpTarget,
    pub secret: Option<Secret>,
    pub language: Language,
    /// @-mentioned when firing: `<at id=…></at>` in the card (user ids are `open_id`s; `all` is `<at id=all>`).
    pub mentions: Mentions,
}

/// code 11232: the bot's frequency limit.
const TOO_FAST: &[i64] = &[11232];

impl Integration for Feishu {
    fn render(&self, n: &Notification) -> Result<Vec<u8>, DeliverError> {
        let title = text::title(&n.message, self.language);
        let color = if n.message.status == Status::Firing { "red" } else { "green" };
        let mut content = text::body(&n.message, self.language, Markup::Markdown);
        let m = &self.mentions;
        if n.message.status == Status::Firing && !m.is_empty() {
            let ids = m.user_ids.iter().map(String::as_str).chain(m.all.then_some("all"));
            let at: Vec<String> = ids.map(|id| format!("<at id={id}></at>")).collect();
            content.push_str(&format!("\n{}", at.join(" ")));
        }
        let msg = json!({
            "msg_type": "interactive",
            "card": {
                "header": {"title": {"tag": "plain_text", "content": title}, "template": color},
                "elements": [{"tag": "markdown", "content": content}],
            },
        });
        serde_json::to_vec(&msg).map_err(|e| DeliverError::Render(e.to_string()))
    }

    fn send<'a>(&'a self, body: &'a [u8], key: &'a str) -> BoxFuture<'a, Result<(), DeliverError>> {
        Box::pin(async move {
            let signed;
            let mut body = body;
            if let Some(secret) = &self.secret {
                // The signature goes in the body, and it carries the send time: added per attempt.
                let mut v: serde_json::Value =
                    serde_json::from_slice(body).map_err(|e| DeliverError::Render(e.to_string()))?;
                let ts = super::now_millis() / 1000;
                v["timestamp"] = json!(ts.to_string());
                v["sign"] = json!(sign(secret, ts));
                signed = serde_json::to_vec(&v).map_err(|e| DeliverError::Render(e.to_string()))?;
                body = &signed;
            }
            let answer = self.target.post_here(key, &[], body).await?;
            check(&answer, "code", "msg", TOO_FAST)
        })
    }
}

/// Feishu's signature: `timestamp + "\n" + secret` is the HMAC-SHA256 key over an empty message,
/// base64; `timestamp` in seconds.
pub fn sign(secret: &Secret, timestamp_s: i64) -> String {
    base64(&hmac_sha256(format!("{timestamp_s}\n{}", secret.expose()).as_bytes(), b""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_documented_algorithm() {
        // Feishu's custom bot guide ("签名校验") gives this Python 3 sample:
        //   string_to_sign = '{}\n{}'.format(timestamp, secret)
        //   hmac_code = hmac.new(string_to_sign.encode("utf-8"), digestmod=hashlib.sha256).digest()
        //   sign = base64.b64encode(hmac_code).decode('utf-8')
        // The expected value is that sample's output for secret "demo" at this timestamp.
        assert_eq!(sign(&Secret::new("demo"), 1599360473), "l1N0gAcBjdwBvGm1xMjOF0XSyaLRpR7tuO5dHfhAYc8=");
    }
}
