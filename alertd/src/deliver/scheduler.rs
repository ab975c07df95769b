//! The scheduler integration (`scheduler_configs`, alertd's own): critical events and the analyzer's
//! capacity plans to a cluster scheduler's endpoint, as one versioned JSON shape
//! (docs/format/scheduler.md) signed like the webhook's (`sha256=<hex HMAC-SHA256>`), with the
//! outbox's idempotency key in both the `Idempotency-Key` header and the body. Everything goes
//! through the outbox and its retries, as for every other receiver. Remediation of GPU faults, when
//! enabled, is an integration of its own beside it ([`remediation`]).

pub mod capacity;
pub mod remediation;

pub use crate::receiver::{SchedulerConfig, SecretSource};

use super::webhook::sign_hex;
use super::{BoxFuture, DeliverError, HttpTarget, Integration};
use crate::notify::Notification;
use crate::time::Timestamp;
use crate::webhook::Message;
use argus_model::Secret;
use capacity::CapacityPlan;
use serde::{Deserialize, Serialize};

/// The version of the body's shape; a change that breaks a reader gets a new one.
pub const VERSION: &str = "1";

/// What a message is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A group notification of alerts routed to the receiver.
    Event,
    /// A pool's capacity plan that changed.
    Capacity,
    /// GPU faults to take nodes out of scheduling for (kept in the outbox, carried out by alertd).
    Remediation,
}

/// The body sent to a scheduler (docs/format/scheduler.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Body {
    /// Always [`VERSION`].
    pub version: String,
    pub kind: Kind,
    /// The same as the `Idempotency-Key` header: a repeat carries the same key.
    #[serde(rename = "idempotencyKey")]
    pub idempotency_key: String,
    pub receiver: String,
    /// When the notification was made, or the plan's time.
    pub at: Timestamp,
    /// `kind: event`: the group notification, as the webhook's v4 message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Message>,
    /// `kind: capacity`: the plan, as `GET /api/v1/capacity` shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityPlan>,
    /// `kind: remediation`: the faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<remediation::Request>,
}

/// One scheduler endpoint.
pub struct Scheduler {
    pub receiver: String,
    pub target: HttpTarget,
    pub hmac_secret: Option<Secret>,
    pub signature_header: String,
    /// Whether it takes capacity plans.
    pub capacity: bool,
}

impl Scheduler {
    /// The integration of `receiver`'s scheduler config `i`, posting to `target`: its secrets read.
    pub fn build(receiver: &str, i: usize, s: &SchedulerConfig, target: HttpTarget) -> Result<Scheduler, DeliverError> {
        let hmac_secret = s.hmac_secret.as_ref().map(|h| h.read()).transpose().map_err(|e| {
            DeliverError::Request(format!("receivers {receiver:?} scheduler_configs[{i}].hmac_secret: {e}"))
        })?;
        Ok(Scheduler {
            receiver: receiver.to_string(),
            target,
            hmac_secret,
            signature_header: s.signature_header.clone(),
            capacity: s.capacity,
        })
    }

    fn body(&self, b: &Body) -> Result<Vec<u8>, DeliverError> {
        serde_json::to_vec(b).map_err(|e| DeliverError::Render(e.to_string()))
    }
}

impl Integration for Scheduler {
    fn render(&self, n: &Notification) -> Result<Vec<u8>, DeliverError> {
        self.body(&Body {
            version: VERSION.into(),
            kind: Kind::Event,
            idempotency_key: crate::outbox::idempotency_key(n),
            receiver: n.receiver.clone(),
            at: n.at,
            event: Some(n.message.clone()),
            capacity: None,
            remediation: None,
        })
    }

    fn render_capacity(&self, plan: &CapacityPlan, key: &str) -> Option<Result<Vec<u8>, DeliverError>> {
        if !self.capacity {
            return None;
        }
        Some(self.body(&Body {
            version: VERSION.into(),
            kind: Kind::Capacity,
            idempotency_key: key.to_string(),
            receiver: self.receiver.clone(),
            at: Timestamp::from_millis(plan.timestamp_ms),
            event: None,
            capacity: Some(plan.clone()),
            remediation: None,
        }))
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

#[cfg(test)]
mod tests;
