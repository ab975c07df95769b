//! What the group robots (DingTalk, Feishu, WeCom) share: a 200 answer can still be a refusal, told
//! by a JSON error code, and one of those codes means "too fast".

use super::DeliverError;
use std::time::Duration;

/// Reads `{"<code_key>": N, "<msg_key>": "..."}`: N = 0 is success, `too_fast` is retried after a
/// minute (the robots' limits are per minute), anything else is a refusal that is not retried.
pub fn check(body: &[u8], code_key: &str, msg_key: &str, too_fast: &[i64]) -> Result<(), DeliverError> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| DeliverError::Refused(format!("answer is not json: {e}")))?;
    let code = v.get(code_key).and_then(|c| c.as_i64()).unwrap_or(0);
    if code == 0 {
        return Ok(());
    }
    let msg = v.get(msg_key).and_then(|m| m.as_str()).unwrap_or("").to_string();
    if too_fast.contains(&code) {
        return Err(DeliverError::Status {
            status: 429,
            retry_after: Some(Duration::from_secs(60)),
            body: format!("{code_key} {code}: {msg}"),
        });
    }
    Err(DeliverError::Refused(format!("{code_key} {code}: {msg}")))
}
