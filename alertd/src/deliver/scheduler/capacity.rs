//! Capacity plans pushed to schedulers: the analyzer hands a pool's plan over when its recommended
//! capacity changes, and every scheduler integration that takes capacity gets a `capacity` message
//! through the outbox, keyed by integration, pool and plan time — a plan handed over twice (a retried
//! push) is queued once.

use super::super::{DeliverError, OutboxNotifier, now_millis};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A pool's plan: the analyzer's `Recommendation` (`GET /api/v1/capacity`). alertd reads the fields
/// that identify it and passes the others on as they are, so a field the analyzer adds reaches the
/// scheduler without a change here, and a plan from an analyzer without it is taken as well (its
/// `explanation`, the rule that set the plan with its terms, is absent from earlier analyzers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CapacityPlan {
    pub pool: String,
    /// When the plan was made, in milliseconds since the epoch.
    pub timestamp_ms: i64,
    /// The capacity the pool should have.
    pub recommended: u64,
    /// The plan's other fields (`current`, `demand`, `desired`, `action`, `explanation`, …).
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

/// The outbox key of a plan for one integration.
pub fn key(integration: &str, plan: &CapacityPlan) -> String {
    let mut h = Sha256::new();
    for part in ["capacity", integration, &plan.pool, &plan.timestamp_ms.to_string()] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    crate::deliver::sign::hex(&h.finalize())
}

impl OutboxNotifier {
    /// Queues each plan for every integration that takes capacity plans and wakes their workers.
    /// Returns how many messages were newly queued (a repeat of a queued plan is not).
    pub fn push_capacity(&self, plans: &[CapacityPlan]) -> Result<usize, DeliverError> {
        let mut added = 0;
        let target = self.target();
        for (name, integration) in target.integrations.iter() {
            let receiver = name.rsplitn(3, '/').nth(2).unwrap_or(name);
            let mut takes = false;
            for plan in plans {
                let key = key(name, plan);
                let Some(body) = integration.render_capacity(plan, &key) else { break };
                takes = true;
                let body = body?;
                let message = serde_json::to_string(plan).map_err(|e| DeliverError::Render(e.to_string()))?;
                if self.outbox.enqueue(&key, receiver, name, &body, &message, now_millis())? {
                    added += 1;
                    tracing::debug!(%receiver, integration = %name, pool = %plan.pool, key, "Capacity plan queued");
                }
            }
            if takes {
                target.wake.wake(name);
            }
        }
        Ok(added)
    }
}
