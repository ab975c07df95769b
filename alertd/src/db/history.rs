//! Alert, incident and notification history, and incident acknowledgement.

use super::{Db, DbError};
use crate::alert::Alert;
use crate::notify::{Notification, Notifier, NotifyError};
use crate::time::Timestamp;
use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;
use std::sync::Arc;

/// A time range and a row limit for history queries; newest rows first.
#[derive(Debug, Clone, Copy)]
pub struct Range {
    pub start: Timestamp,
    pub end: Timestamp,
    pub limit: usize,
}

/// An acknowledgement.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Ack {
    pub at: Timestamp,
    pub by: String,
    pub comment: String,
}

impl From<Ack> for crate::memory::Acknowledgement {
    fn from(a: Ack) -> Self {
        crate::memory::Acknowledgement { at: a.at.0, by: a.by, comment: a.comment }
    }
}

/// One incident as `GET /api/v1/incidents` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct IncidentRow {
    pub id: i64,
    /// The engine's incident number (the webhook's `argus.incident.id`); numbers go on across
    /// restarts, but an incident of an earlier process is not the running engine's, so `id` is the
    /// stable one.
    #[serde(rename = "engineId")]
    pub engine_id: i64,
    #[serde(rename = "openedAt")]
    pub opened_at: Timestamp,
    #[serde(rename = "groupKey")]
    pub group_key: String,
    pub receiver: String,
    #[serde(rename = "probableCause")]
    pub probable_cause: String,
    #[serde(rename = "causeAlert")]
    pub cause_alert: String,
    /// Alerts in the incident at its last notification.
    pub alerts: i64,
    /// `firing` or `resolved`, as of its last notification.
    pub status: String,
    #[serde(rename = "firstNotifiedAt")]
    pub first_notified_at: Timestamp,
    #[serde(rename = "lastNotifiedAt")]
    pub last_notified_at: Timestamp,
    pub notifications: i64,
    pub acknowledged: Option<Ack>,
}

/// One notification as `GET /api/v1/notifications` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct NotificationRow {
    pub id: i64,
    pub at: Timestamp,
    pub receiver: String,
    pub integration: String,
    #[serde(rename = "groupKey")]
    pub group_key: String,
    pub status: String,
    pub alerts: i64,
    #[serde(rename = "incidentId")]
    pub incident_id: Option<i64>,
    /// The webhook v4 body sent.
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
}

fn status_str(n: &Notification) -> &'static str {
    match n.message.status {
        crate::alert::Status::Firing => "firing",
        crate::alert::Status::Resolved => "resolved",
    }
}

fn incident_row(r: &Row) -> rusqlite::Result<IncidentRow> {
    let acked_at: Option<i64> = r.get(12)?;
    Ok(IncidentRow {
        id: r.get(0)?,
        engine_id: r.get(1)?,
        opened_at: Timestamp(r.get(2)?),
        group_key: r.get(3)?,
        receiver: r.get(4)?,
        probable_cause: r.get(5)?,
        cause_alert: r.get(6)?,
        alerts: r.get(7)?,
        status: r.get(8)?,
        first_notified_at: Timestamp(r.get(9)?),
        last_notified_at: Timestamp(r.get(10)?),
        notifications: r.get(11)?,
        acknowledged: match acked_at {
            Some(at) => Some(Ack {
                at: Timestamp(at),
                by: r.get::<_, Option<String>>(13)?.unwrap_or_default(),
                comment: r.get::<_, Option<String>>(14)?.unwrap_or_default(),
            }),
            None => None,
        },
    })
}

const INCIDENT_COLUMNS: &str = "id, engine_id, opened_at, group_key, receiver, probable_cause, cause_alert, alerts, \
     status, first_notified_at, last_notified_at, notifications, acked_at, acked_by, ack_comment";

impl Db {
    /// Records alerts as stored after an update: one row per fingerprint and start, updated as the
    /// alert is updated and resolved.
    pub fn record_alerts(&self, alerts: &[Alert]) -> Result<(), DbError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        {
            let mut st = tx.prepare_cached(
                "INSERT INTO alert_history (fingerprint, starts_at, ends_at, updated_at, labels, annotations, generator_url)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (fingerprint, starts_at) DO UPDATE SET ends_at = ?3, updated_at = ?4, annotations = ?6,
                     generator_url = ?7",
            )?;
            for a in alerts {
                st.execute(params![
                    a.fingerprint().to_string(),
                    a.starts_at.0,
                    a.ends_at.0,
                    a.updated_at.0,
                    labels_json(&a.labels),
                    labels_json(&a.annotations),
                    a.generator_url,
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Deletes the history older than `before`: notifications sent, incidents last notified and
    /// alerts last updated before it (remediation records included: a fault that old is acted on
    /// again if it is still present). The rows deleted.
    pub fn prune_history(&self, before: Timestamp) -> Result<usize, DbError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let mut n = tx.execute("DELETE FROM notifications WHERE at < ?1", params![before.0])?;
        // An incident's last notification is as old as the incident row's `last_notified_at`, so
        // no notification kept names an incident deleted here.
        n += tx.execute("DELETE FROM incidents WHERE last_notified_at < ?1", params![before.0])?;
        n += tx.execute("DELETE FROM alert_history WHERE updated_at < ?1", params![before.0])?;
        tx.commit()?;
        Ok(n)
    }

    /// Records a notification sent, and the incident it notified (made on its first notification).
    pub fn record_notification(&self, n: &Notification) -> Result<(), DbError> {
        let payload = serde_json::to_string(&n.message)
            .map_err(|e| DbError::Corrupt { what: "notification payload".into(), reason: e.to_string() })?;
        let status = status_str(n);
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let incident_id: Option<i64> = match n.message.argus.as_ref().and_then(|x| x.incident.as_ref()) {
            Some(inc) => Some(tx.query_row(
                "INSERT INTO incidents (engine_id, opened_at, group_key, receiver, probable_cause, cause_alert, alerts,
                     status, first_notified_at, last_notified_at, notifications)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, 1)
                 ON CONFLICT (group_key, engine_id, opened_at) DO UPDATE SET probable_cause = ?5, cause_alert = ?6,
                     alerts = ?7, status = ?8, last_notified_at = ?9, notifications = notifications + 1
                 RETURNING id",
                params![
                    inc.id as i64,
                    inc.opened_at.0,
                    n.message.group_key,
                    n.receiver,
                    inc.probable_cause,
                    inc.cause_alert,
                    inc.alerts as i64,
                    status,
                    n.at.0
                ],
                |r| r.get(0),
            )?),
            None => None,
        };
        tx.execute(
            "INSERT INTO notifications (at, receiver, integration, group_key, status, alerts, incident_id, payload)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                n.at.0,
                n.receiver,
                n.integration,
                n.message.group_key,
                status,
                n.message.alerts.len() as i64,
                incident_id,
                payload
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Incidents opened within the range, newest first.
    pub fn incidents(&self, r: Range) -> Result<Vec<IncidentRow>, DbError> {
        let conn = self.conn();
        let mut st = conn.prepare_cached(&format!(
            "SELECT {INCIDENT_COLUMNS} FROM incidents WHERE opened_at >= ?1 AND opened_at <= ?2
             ORDER BY opened_at DESC, id DESC LIMIT ?3"
        ))?;
        let rows = st.query_map(params![r.start.0, r.end.0, r.limit as i64], incident_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The highest engine incident number recorded (0 for none).
    pub fn last_incident_number(&self) -> Result<u64, DbError> {
        let n: i64 = self.conn().query_row("SELECT COALESCE(MAX(engine_id), 0) FROM incidents", [], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    pub fn incident(&self, id: i64) -> Result<Option<IncidentRow>, DbError> {
        let conn = self.conn();
        let mut st = conn.prepare_cached(&format!("SELECT {INCIDENT_COLUMNS} FROM incidents WHERE id = ?1"))?;
        Ok(st.query_row(params![id], incident_row).optional()?)
    }

    /// Acknowledges an incident (the first acknowledgement stands). None when there is no such
    /// incident.
    pub fn ack_incident(&self, id: i64, ack: &Ack) -> Result<Option<IncidentRow>, DbError> {
        let changed = self.conn().execute(
            "UPDATE incidents SET acked_at = ?2, acked_by = ?3, ack_comment = ?4 WHERE id = ?1 AND acked_at IS NULL",
            params![id, ack.at.0, ack.by, ack.comment],
        )?;
        tracing::debug!(incident = id, changed, "Incident acknowledged");
        self.incident(id)
    }

    /// Notifications sent within the range (to `receiver` when given), newest first.
    pub fn notifications(&self, r: Range, receiver: Option<&str>) -> Result<Vec<NotificationRow>, DbError> {
        let conn = self.conn();
        let mut st = conn.prepare_cached(
            "SELECT id, at, receiver, integration, group_key, status, alerts, incident_id, payload FROM notifications
             WHERE at >= ?1 AND at <= ?2 AND (?4 IS NULL OR receiver = ?4) ORDER BY at DESC, id DESC LIMIT ?3",
        )?;
        let rows = st.query_map(params![r.start.0, r.end.0, r.limit as i64, receiver], |r| {
            Ok((
                NotificationRow {
                    id: r.get(0)?,
                    at: Timestamp(r.get(1)?),
                    receiver: r.get(2)?,
                    integration: r.get(3)?,
                    group_key: r.get(4)?,
                    status: r.get(5)?,
                    alerts: r.get(6)?,
                    incident_id: r.get(7)?,
                    payload: serde_json::Value::Null,
                },
                r.get::<_, String>(8)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (mut n, payload) = row?;
            n.payload = serde_json::from_str(&payload).map_err(|e| DbError::Corrupt {
                what: format!("notification {} payload", n.id),
                reason: e.to_string(),
            })?;
            out.push(n);
        }
        Ok(out)
    }
}

/// A label set as a JSON object, names in order (labels are kept sorted), written straight from the
/// borrowed labels: the alert history writes two per alert posted.
fn labels_json(l: &argus_model::Labels) -> String {
    struct Obj<'a>(&'a argus_model::Labels);
    impl serde::Serialize for Obj<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map(self.0.iter().map(|x| (&x.name, &x.value)))
        }
    }
    serde_json::to_string(&Obj(l)).unwrap_or_else(|_| "{}".into())
}

/// A notifier that records what its inner notifier sent in the history.
pub struct HistoryNotifier {
    pub inner: Arc<dyn Notifier>,
    pub db: Arc<Db>,
}

impl Notifier for HistoryNotifier {
    fn notify(&self, n: Notification) -> Result<(), NotifyError> {
        let recorded = n.clone();
        self.inner.notify(n)?;
        // History is for people; a failed write must not fail or repeat the notification.
        if let Err(error) = self.db.record_notification(&recorded) {
            tracing::error!(receiver = %recorded.receiver, group = %recorded.message.group_key, %error, "Notification history write failed");
        }
        Ok(())
    }

    fn gc(&self, now: Timestamp, retention: std::time::Duration) {
        self.inner.gc(now, retention);
    }

    fn suppressed(&self) -> Option<std::sync::Arc<crate::suppressed::Suppressed>> {
        self.inner.suppressed()
    }

    fn gc_history(&self, now: Timestamp, retention: std::time::Duration) {
        match self.db.prune_history(now - retention) {
            Ok(0) => {}
            Ok(rows) => tracing::info!(rows, "History pruned"),
            Err(error) => tracing::error!(%error, "History pruning failed"),
        }
    }
}
