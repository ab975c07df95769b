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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Range;
    use crate::deliver::scheduler::remediation::Fault;

    #[test]
    fn actions_are_history_rows_and_answer_done() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let fault = Fault {
            node: "gpu-node-07".into(),
            reason: "xid-79".into(),
            alertname: "GpuXid".into(),
            fingerprint: "a1".into(),
            starts_at: Timestamp::from_millis(1_000),
        };
        let action = Action {
            target: "slurm",
            fault,
            request: "scontrol update NodeName=gpu-node-07 State=DRAIN".into(),
            outcome: "dry_run",
            error: None,
        };
        let it = "sched/remediation/0";
        assert!(!db.done(it, "remediation:k", &["dry_run"]));
        db.record(Timestamp::from_millis(5_000), "sched", it, "remediation:k", &action);
        assert!(db.done(it, "remediation:k", &["remediated", "dry_run"]));
        assert!(!db.done(it, "remediation:k", &["remediated"]), "a dry run is not a remediation");
        assert!(!db.done("other/remediation/0", "remediation:k", &["dry_run"]));
        let rows = db
            .notifications(Range { start: Timestamp(0), end: Timestamp(i64::MAX), limit: 10 }, Some("sched"))
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].integration.as_str(), rows[0].status.as_str()), (it, "dry_run"));
        assert_eq!(rows[0].payload["fault"]["node"], "gpu-node-07");
        assert_eq!(rows[0].payload["target"], "slurm");
        // The ledger's lookup is an index search, not a scan of the whole history.
        let plan: String = db
            .conn()
            .query_row(
                "EXPLAIN QUERY PLAN SELECT 1 FROM notifications WHERE integration = ?1 AND group_key = ?2 AND status = ?3 LIMIT 1",
                params![it, "remediation:k", "dry_run"],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("INDEX notifications_integration"), "{plan}");
    }
}
