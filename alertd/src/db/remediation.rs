//! Remediation's ledger in the notification history: each action is a `notifications` row with the
//! remediation integration, the fault's key as `group_key`, the outcome as `status` and the action
//! as `payload`, so `GET /api/v1/notifications` shows what was done to which node, and why.

use super::Db;
use crate::deliver::scheduler::remediation::{Action, Ledger};
use crate::time::Timestamp;
use rusqlite::params;

impl Ledger for Db {
    fn done(&self, integration: &str, key: &str, outcomes: &[&str]) -> bool {
        let conn = self.conn();
        outcomes.iter().any(|o| {
            conn.query_row(
                "SELECT 1 FROM notifications WHERE integration = ?1 AND group_key = ?2 AND status = ?3 LIMIT 1",
                params![integration, key, o],
                |_| Ok(()),
            )
            .is_ok()
        })
    }

    fn record(&self, at: Timestamp, receiver: &str, integration: &str, key: &str, action: &Action) {
        let payload = serde_json::to_string(action).unwrap_or_else(|_| "{}".into());
        let r = self.conn().execute(
            "INSERT INTO notifications (at, receiver, integration, group_key, status, alerts, incident_id, payload)
             VALUES (?1, ?2, ?3, ?4, ?5, 1, NULL, ?6)",
            params![at.0, receiver, integration, key, action.outcome, payload],
        );
        if let Err(error) = r {
            // The action itself is done (or failed); losing its record means it may be repeated.
            tracing::error!(%receiver, %integration, %error, "Remediation history write failed");
        }
    }
}
