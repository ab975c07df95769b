//! One HTTP POST and what its outcome means for retries; shared by every HTTP receiver.

use super::DeliverError;
use argus_model::Secret;
use std::time::Duration;

/// A URL to post to. The URL is a secret: robot and webhook URLs carry access tokens.
#[derive(Debug, Clone)]
pub struct HttpTarget {
    pub client: reqwest::Client,
    pub url: Secret,
    pub timeout: Duration,
}

/// At most this much of an error response body is kept, for the log.
const ERROR_BODY: usize = 256;

impl HttpTarget {
    /// Posts the JSON `body` to `url` (the target's URL, or one derived from it, such as a signed
    /// one) with the `Idempotency-Key` header and `headers`; returns the body of a 2xx answer.
    pub async fn post(
        &self,
        url: &str,
        key: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Result<Vec<u8>, DeliverError> {
        let mut req = self
            .client
            .post(url)
            .timeout(self.timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("Idempotency-Key", key)
            .body(body.to_vec());
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let resp = req.send().await.map_err(classify)?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = resp.bytes().await.map_err(classify)?;
        if status.is_success() {
            return Ok(bytes.to_vec());
        }
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if text.len() > ERROR_BODY {
            let cut = (0..=ERROR_BODY).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            text.truncate(cut);
        }
        Err(DeliverError::Status { status: status.as_u16(), retry_after, body: text })
    }
}

/// reqwest's errors print the URL, which may hold a token: it is cut off before anything is kept.
pub(super) fn classify(e: reqwest::Error) -> DeliverError {
    let timeout = e.is_timeout();
    let connect = e.is_connect();
    let e = e.without_url();
    // The whole chain of causes: a TLS failure is only named at the bottom ("client error (Connect)",
    // then "invalid peer certificate: UnknownIssuer").
    let mut causes = Vec::new();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let text = c.to_string();
        if causes.last() != Some(&text) {
            causes.push(text);
        }
        cause = c.source();
    }
    let text = if causes.is_empty() { e.to_string() } else { causes.join(": ") };
    if timeout {
        DeliverError::Timeout
    } else if connect {
        DeliverError::Connect(text)
    } else {
        DeliverError::Request(text)
    }
}
