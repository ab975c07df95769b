//! DingTalk custom robot: a markdown message, signed when a secret is set, at most 20 a minute.

use super::limit::Window;
use super::robot::check;
use super::sign::{base64, hmac_sha256};
use super::text::{self, Markup};
use super::{BoxFuture, DeliverError, HttpTarget, Integration};
use crate::alert::Status;
use crate::notify::Notification;
use crate::receiver::{Language, Mentions};
use argus_model::Secret;
use serde_json::json;

pub struct DingTalk {
    pub target: HttpTarget,
    pub secret: Option<Secret>,
    pub language: Language,
    pub limit: Window,
    /// @-mentioned when firing: the `at` object, and each `@mobile` / `@userid` written in the text, as
    /// DingTalk needs both to notify.
    pub mentions: Mentions,
}

/// errcode 130101: "send too fast" (the 20 a minute limit).
const TOO_FAST: &[i64] = &[130101];

impl Integration for DingTalk {
    fn render(&self, n: &Notification) -> Result<Vec<u8>, DeliverError> {
        let title = text::title(&n.message, self.language);
        let body = text::body(&n.message, self.language, Markup::Markdown);
        let mut text = format!("### {title}\n\n{body}");
        let m = &self.mentions;
        let mention = n.message.status == Status::Firing && !m.is_empty();
        if mention {
            let names: Vec<String> = m.mobiles.iter().chain(&m.user_ids).map(|x| format!("@{x}")).collect();
            text.push_str(&format!("\n\n{}", names.join(" ")));
        }
        let mut msg = json!({"msgtype": "markdown", "markdown": {"title": title, "text": text}});
        if mention {
            msg["at"] = json!({"atMobiles": m.mobiles, "atUserIds": m.user_ids, "isAtAll": m.all});
        }
        serde_json::to_vec(&msg).map_err(|e| DeliverError::Render(e.to_string()))
    }

    fn send<'a>(&'a self, body: &'a [u8], key: &'a str) -> BoxFuture<'a, Result<(), DeliverError>> {
        Box::pin(async move {
            self.limit.acquire().await;
            let mut url = reqwest::Url::parse(self.target.url()?.expose())
                .map_err(|e| DeliverError::Request(format!("robot url: {e}")))?;
            if let Some(secret) = &self.secret {
                let ts = super::now_millis();
                // Form-urlencoded, as the vendor's `quote_plus`.
                url.query_pairs_mut().append_pair("timestamp", &ts.to_string()).append_pair("sign", &sign(secret, ts));
            }
            let answer = self.target.post(url.as_str(), key, &[], body).await?;
            check(&answer, "errcode", "errmsg", TOO_FAST)
        })
    }
}

/// DingTalk's signature: HMAC-SHA256 keyed with the secret over `timestamp + "\n" + secret`, then
/// base64 (url-encoded when put in the query); `timestamp` in milliseconds.
pub fn sign(secret: &Secret, timestamp_ms: i64) -> String {
    let s = secret.expose();
    base64(&hmac_sha256(s.as_bytes(), format!("{timestamp_ms}\n{s}").as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_documented_algorithm() {
        // DingTalk's robot security settings page ("加签") gives this Python 3 sample:
        //   string_to_sign = '{}\n{}'.format(timestamp, secret)
        //   hmac_code = hmac.new(secret_enc, string_to_sign_enc, digestmod=hashlib.sha256).digest()
        //   sign = urllib.parse.quote_plus(base64.b64encode(hmac_code))
        // with secret 'this is secret'; that sample prints hmPWwU%2B7lVdm3ZZz0r9tSfx0L4Q26jWOZr9%2BGs6EZQM%3D
        // at this timestamp, which is the value below once url-encoded (checked in the sending test).
        let got = sign(&Secret::new("this is secret"), 1577262236757);
        assert_eq!(got, "hmPWwU+7lVdm3ZZz0r9tSfx0L4Q26jWOZr9+Gs6EZQM=");
        let mut url = reqwest::Url::parse("https://oapi.dingtalk.com/robot/send").unwrap();
        url.query_pairs_mut().append_pair("sign", &got);
        assert_eq!(url.query(), Some("sign=hmPWwU%2B7lVdm3ZZz0r9tSfx0L4Q26jWOZr9%2BGs6EZQM%3D"));
    }
}
