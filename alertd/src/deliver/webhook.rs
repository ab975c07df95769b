//! The webhook integration: Alertmanager's webhook v4 body as JSON, with the `Idempotency-Key`
//! header and, when a secret is configured, an HMAC-SHA256 signature of the body.

pub use crate::receiver::SIGNATURE_HEADER;

use super::sign::{hex, hmac_sha256};
use super::template::BodyTemplate;
use super::{BoxFuture, DeliverError, HttpTarget, Integration};
use crate::notify::Notification;
use argus_model::Secret;

pub struct Webhook {
    pub target: HttpTarget,
    /// Signs bodies as `sha256=<hex of HMAC-SHA256(secret, body)>` in `signature_header`.
    pub hmac_secret: Option<Secret>,
    pub signature_header: String,
    pub body_template: Option<BodyTemplate>,
}

impl Integration for Webhook {
    fn render(&self, n: &Notification) -> Result<Vec<u8>, DeliverError> {
        match &self.body_template {
            Some(t) => t.render(&n.message).map_err(DeliverError::Render),
            None => serde_json::to_vec(&n.message).map_err(|e| DeliverError::Render(e.to_string())),
        }
    }

    fn send<'a>(&'a self, body: &'a [u8], key: &'a str) -> BoxFuture<'a, Result<(), DeliverError>> {
        Box::pin(async move {
            let mut headers = Vec::new();
            if let Some(secret) = &self.hmac_secret {
                headers.push((self.signature_header.as_str(), format!("sha256={}", sign_hex(secret, body))));
            }
            self.target.post_here(key, &headers, body).await?;
            Ok(())
        })
    }
}

/// Hex of HMAC-SHA256 over `body` keyed with the secret.
pub fn sign_hex(secret: &Secret, body: &[u8]) -> String {
    hex(&hmac_sha256(secret.expose().as_bytes(), body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc4231_case_2() {
        // RFC 4231 §4.3, test case 2: key "Jefe", data "what do ya want for nothing?".
        let got = sign_hex(&Secret::new("Jefe"), b"what do ya want for nothing?");
        assert_eq!(got, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }
}
