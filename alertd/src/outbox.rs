//! The durable outbox: every notification is written to SQLite before it is sent, with an
//! idempotency key, and stays `pending` until a delivery worker marks it `delivered` or `failed`.
//! After a restart the pending entries are sent again under the same key, so delivery is at least
//! once and a repeat is recognisable. The table is documented in docs/format/outbox.md.

use crate::notify::Notification;
use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// One outbox row.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: i64,
    pub key: String,
    pub receiver: String,
    pub integration: String,
    pub body: Vec<u8>,
    /// The webhook v4 message the body was rendered from (JSON), for batching.
    pub message: String,
    /// Milliseconds since the epoch.
    pub created_at: i64,
    pub attempts: u32,
    pub next_attempt_at: i64,
}

/// What became of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Pending,
    Delivered,
    Failed,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Delivered => "delivered",
            State::Failed => "failed",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error("outbox {path}: {source}")]
    Sqlite { path: String, source: rusqlite::Error },
}

impl OutboxError {
    /// SQLite errors here are a locked or full disk: worth another try later.
    pub fn is_retryable(&self) -> bool {
        true
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key TEXT    NOT NULL UNIQUE,
    receiver        TEXT    NOT NULL,
    integration     TEXT    NOT NULL,
    body            BLOB    NOT NULL,
    message         TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    state           TEXT    NOT NULL DEFAULT 'pending',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT,
    done_at         INTEGER
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (integration, state, next_attempt_at);
";

const COLUMNS: &str =
    "id, idempotency_key, receiver, integration, body, message, created_at, attempts, next_attempt_at";

fn row(r: &rusqlite::Row) -> rusqlite::Result<Entry> {
    Ok(Entry {
        id: r.get(0)?,
        key: r.get(1)?,
        receiver: r.get(2)?,
        integration: r.get(3)?,
        body: r.get(4)?,
        message: r.get(5)?,
        created_at: r.get(6)?,
        attempts: r.get(7)?,
        next_attempt_at: r.get(8)?,
    })
}

/// The outbox table on its own connection to the alertd database.
pub struct Outbox {
    path: String,
    conn: Mutex<Connection>,
    /// Told of every entry that leaves `pending` (a cluster replica confirms its notification log
    /// entry to its peers then).
    observer: std::sync::RwLock<Option<Observer>>,
    /// The alerts its delivery workers hold back (rate limits, failing receivers), in the ledger
    /// the engine that feeds this outbox records into too.
    suppressed: Arc<crate::suppressed::Suppressed>,
}

/// Called with each entry that was delivered or failed for good.
pub type Observer = Arc<dyn Fn(&Entry, State) + Send + Sync>;

impl Outbox {
    /// Opens (creating when missing) the database at `path` and the outbox table in it.
    pub fn open(path: &Path) -> Result<Outbox, OutboxError> {
        let p = path.display().to_string();
        let conn = Connection::open(path).map_err(|source| OutboxError::Sqlite { path: p.clone(), source })?;
        let outbox =
            Outbox { path: p, conn: Mutex::new(conn), observer: Default::default(), suppressed: Default::default() };
        outbox.with(|c| {
            // WAL lets the other tables' writers in the same file work beside the delivery workers.
            c.pragma_update(None, "journal_mode", "WAL")?;
            c.busy_timeout(std::time::Duration::from_secs(5))?;
            c.execute_batch(SCHEMA)
        })?;
        Ok(outbox)
    }

    /// The held-back ledger of this outbox's delivery (and of the engine that feeds it).
    pub fn suppressed(&self) -> &Arc<crate::suppressed::Suppressed> {
        &self.suppressed
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, OutboxError> {
        let c = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        f(&c).map_err(|source| OutboxError::Sqlite { path: self.path.clone(), source })
    }

    /// Adds a pending entry due at `now`. False when the key is already there (a repeat of a
    /// notification the outbox has, which keeps its first body and state).
    pub fn enqueue(
        &self,
        key: &str,
        receiver: &str,
        integration: &str,
        body: &[u8],
        message: &str,
        now: i64,
    ) -> Result<bool, OutboxError> {
        let n = self.with(|c| {
            c.execute(
                "INSERT OR IGNORE INTO outbox
                 (idempotency_key, receiver, integration, body, message, created_at, next_attempt_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
                params![key, receiver, integration, body, message, now],
            )
        })?;
        Ok(n == 1)
    }

    /// The oldest pending entry of `integration` (due or not): first in, first out, so a resolved
    /// message never overtakes the firing one before it.
    pub fn next(&self, integration: &str) -> Result<Option<Entry>, OutboxError> {
        self.with(|c| {
            c.query_row(
                &format!(
                    "SELECT {COLUMNS} FROM outbox WHERE integration = ?1 AND state = 'pending' ORDER BY id LIMIT 1"
                ),
                params![integration],
                row,
            )
            .optional()
        })
    }

    /// Up to `limit` pending entries of `integration` due at `now`, oldest first.
    pub fn due(&self, integration: &str, now: i64, limit: usize) -> Result<Vec<Entry>, OutboxError> {
        self.with(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM outbox WHERE integration = ?1 AND state = 'pending' AND next_attempt_at <= ?2
                 ORDER BY id LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![integration, now, limit as i64], row)?;
            rows.collect()
        })
    }

    /// The integrations that have pending entries.
    pub fn pending_integrations(&self) -> Result<Vec<String>, OutboxError> {
        self.with(|c| {
            let mut stmt = c.prepare("SELECT DISTINCT integration FROM outbox WHERE state = 'pending'")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect()
        })
    }

    /// Fails every pending entry of `integration`.
    pub fn fail_pending(&self, integration: &str, error: &str, now: i64) -> Result<usize, OutboxError> {
        self.with(|c| {
            c.execute(
                "UPDATE outbox SET state = 'failed', last_error = ?2, done_at = ?3
                 WHERE integration = ?1 AND state = 'pending'",
                params![integration, error, now],
            )
        })
    }

    /// Ends an entry as delivered or failed.
    pub fn finish(&self, id: i64, state: State, error: Option<&str>, now: i64) -> Result<(), OutboxError> {
        self.with(|c| {
            c.execute(
                "UPDATE outbox SET state = ?2, attempts = attempts + 1, last_error = ?3, done_at = ?4 WHERE id = ?1",
                params![id, state.as_str(), error, now],
            )
        })?;
        Ok(())
    }

    /// Calls `f` with every entry the delivery workers finish from now on.
    pub fn observe(&self, f: Observer) {
        *self.observer.write().unwrap_or_else(|e| e.into_inner()) = Some(f);
    }

    /// Tells the observer that `e` was finished as `state` (the workers call it after `finish`).
    pub fn finished(&self, e: &Entry, state: State) {
        if let Some(f) = self.observer.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
            f(e, state);
        }
    }

    /// Counts a failed attempt and sets when to try again.
    pub fn retry_at(&self, id: i64, at: i64, error: &str) -> Result<(), OutboxError> {
        self.with(|c| {
            c.execute(
                "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ?2, last_error = ?3 WHERE id = ?1",
                params![id, at, error],
            )
        })?;
        Ok(())
    }

    /// How many entries are in `state`.
    pub fn count(&self, state: State) -> Result<u64, OutboxError> {
        self.with(|c| c.query_row("SELECT COUNT(*) FROM outbox WHERE state = ?1", [state.as_str()], |r| r.get(0)))
    }

    /// The state and last error of the entry with `key`.
    pub fn state(&self, key: &str) -> Result<Option<(String, Option<String>, u32)>, OutboxError> {
        self.with(|c| {
            c.query_row("SELECT state, last_error, attempts FROM outbox WHERE idempotency_key = ?1", [key], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
        })
    }

    /// Drops finished entries older than `before` (pending ones are kept whatever their age).
    pub fn gc(&self, before: i64) -> Result<usize, OutboxError> {
        self.with(|c| c.execute("DELETE FROM outbox WHERE state != 'pending' AND done_at < ?1", [before]))
    }
}

/// The idempotency key of a notification: the same group, integration, previous notification (the
/// notification log's entry it follows) and alerts with the same statuses give the same key, whenever
/// and however often it is computed, so a flush repeated after a crash queues nothing new.
pub fn idempotency_key(n: &Notification) -> String {
    let mut h = Sha256::new();
    let previous = n.previous.map_or_else(|| "-".to_string(), |t| t.millis().to_string());
    for part in [n.message.group_key.as_str(), n.integration.as_str(), &previous] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    // An escalation is a notification of its own, even to the incident's own receiver.
    if let Some(e) = n.message.argus.as_ref().and_then(|x| x.escalation.as_ref()) {
        h.update(format!("escalation after {}s", e.unacknowledged_seconds).as_bytes());
        h.update([0]);
    }
    let mut alerts: Vec<(&str, &str)> =
        n.message.alerts.iter().map(|a| (a.fingerprint.as_str(), status_str(a.status))).collect();
    alerts.sort_unstable();
    for (fp, status) in alerts {
        h.update(fp.as_bytes());
        h.update(b"=");
        h.update(status.as_bytes());
        h.update([0]);
    }
    format!("{:x}", h.finalize())
}

/// The key of a batch: made of its members' keys, so the same batch sent again has the same key.
pub fn batch_key(keys: &[&str]) -> String {
    let mut h = Sha256::new();
    h.update(b"batch\0");
    for k in keys {
        h.update(k.as_bytes());
        h.update([0]);
    }
    format!("{:x}", h.finalize())
}

fn status_str(s: crate::alert::Status) -> &'static str {
    match s {
        crate::alert::Status::Firing => "firing",
        crate::alert::Status::Resolved => "resolved",
    }
}

#[cfg(test)]
pub(crate) mod tests;
