//! The engine's memory (`crate::memory`) in the `memory` table: written as it changes, read at
//! start, so a lone alertd keeps its open incidents, acknowledgements, escalation timers, backoff
//! and flap history across a restart. Also reads, for the incident list, how a notified incident
//! recurred (`Db::incident_recurrence`).

use super::{Db, DbError};
use crate::memory::{Memory, MemorySink};
use crate::time::Timestamp;
use rusqlite::{OptionalExtension, params};
use std::sync::Arc;

pub struct DbMemory {
    db: Arc<Db>,
}

impl DbMemory {
    pub fn new(db: Arc<Db>) -> DbMemory {
        DbMemory { db }
    }

    /// Every item not expired at `now`, in key order. A row that cannot be read is an error naming
    /// its key; a key of a kind this alertd does not know (written by a newer one) is skipped.
    pub fn load(&self, now: Timestamp) -> Result<Vec<Memory>, DbError> {
        let rows: Vec<(String, String)> = {
            let conn = self.db.conn();
            let mut st = conn.prepare("SELECT key, value FROM memory WHERE expires_at > ?1 ORDER BY key")?;
            st.query_map([now.0], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?
        };
        let mut out = Vec::with_capacity(rows.len());
        for (key, value) in rows {
            match Memory::decode(&key, &value) {
                Ok(Some(m)) => out.push(m),
                Ok(None) => tracing::warn!(%key, "Engine memory item of an unknown kind skipped"),
                Err(reason) => return Err(DbError::Corrupt { what: "engine memory".into(), reason }),
            }
        }
        Ok(out)
    }
}

impl MemorySink for DbMemory {
    fn remember(&self, m: &Memory) {
        let conn = self.db.conn();
        let r = conn.execute(
            "INSERT INTO memory (key, value, expires_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET value = ?2, expires_at = ?3",
            params![m.key(), m.value(), m.expires_at().0],
        );
        if let Err(error) = r {
            tracing::error!(key = %m.key(), %error, "Engine memory not stored");
        }
        // An acknowledgement made on a peer shows in this replica's history of the incident too
        // (made here, the row has it already: the first one stands).
        if let Memory::Incident(i) = m
            && let Some(ack) = &i.ack
            && let Ok(engine_id) = i64::try_from(i.id)
        {
            let r = conn.execute(
                "UPDATE incidents SET acked_at = ?2, acked_by = ?3, ack_comment = ?4
                 WHERE engine_id = ?1 AND acked_at IS NULL",
                params![engine_id, ack.at, ack.by, ack.comment],
            );
            if let Err(error) = r {
                tracing::error!(incident = i.id, %error, "Acknowledgement not recorded in the history");
            }
        }
    }

    fn gc(&self, now: Timestamp) {
        if let Err(error) = self.db.conn().execute("DELETE FROM memory WHERE expires_at <= ?1", [now.0]) {
            tracing::error!(%error, "Engine memory not garbage-collected");
        }
    }
}

// === impl Db (recurrences in the history) ===

/// How an incident of the history recurs an earlier one, as its first notification said
/// (`Recurrence::annotations`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NotifiedRecurrence {
    pub occurrence: u32,
    /// The engine number of the occurrence it recurs.
    pub of: u64,
    pub held: u32,
}

impl Db {
    /// How incident `id` (the history's id, first notified at `first_notified_at`) recurs an earlier
    /// one, read from the annotations its first notification carried; None when it does not recur.
    /// The notification is found through the index on its time.
    pub fn incident_recurrence(
        &self,
        id: i64,
        first_notified_at: Timestamp,
    ) -> Result<Option<NotifiedRecurrence>, DbError> {
        let conn = self.conn();
        let mut st = conn.prepare_cached(
            "SELECT json_extract(payload, '$.commonAnnotations.argus_occurrence'),
                    json_extract(payload, '$.commonAnnotations.argus_recurrence_of'),
                    json_extract(payload, '$.commonAnnotations.argus_recurrences_held')
             FROM notifications WHERE at = ?2 AND incident_id = ?1 ORDER BY id LIMIT 1",
        )?;
        let row = st
            .query_row(params![id, first_notified_at.0], |r| {
                Ok((r.get::<_, Option<String>>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, Option<String>>(2)?))
            })
            .optional()?;
        let Some((Some(occurrence), Some(of), held)) = row else { return Ok(None) };
        // Annotations an alert's sender set itself, not a number, are not alertd's.
        let (Ok(occurrence), Ok(of)) = (occurrence.parse(), of.parse()) else { return Ok(None) };
        let held = held.and_then(|h| h.parse().ok()).unwrap_or(0);
        Ok(Some(NotifiedRecurrence { occurrence, of, held }))
    }
}
