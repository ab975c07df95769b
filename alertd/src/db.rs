//! alertd's state in SQLite (`alertd.db` in the data directory, WAL mode): silences, the
//! notification log, the engine's memory (open incidents, backoff and flap history), and alert /
//! incident / notification history. The schema is documented in
//! docs/format/alertd-db.md. Silences and the notification log are also kept in memory, loaded at
//! open and written through, so the pipeline's lookups never touch the disk.
//!
//! Other modules may keep their own tables in the same file over their own connection (the
//! delivery outbox does); this module owns only the tables below.

mod backup;
mod history;
mod memory;
mod remediation;
mod state;

pub use backup::{BackupError, backup};
pub use history::{Ack, HistoryNotifier, IncidentRow, NotificationRow, Range};
pub use memory::DbMemory;
pub use state::{DbLog, DbSilences};

use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The file name inside the data directory.
pub const FILE_NAME: &str = "alertd.db";

const SCHEMA_VERSION: i64 = 3;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS silences (
    id TEXT PRIMARY KEY,
    matchers TEXT NOT NULL,
    starts_at INTEGER NOT NULL,
    ends_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    comment TEXT NOT NULL,
    until_resolved INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS nflog (
    group_key TEXT NOT NULL,
    recipient TEXT NOT NULL,
    firing TEXT NOT NULL,
    resolved TEXT NOT NULL,
    timestamp INTEGER NOT NULL,
    PRIMARY KEY (group_key, recipient)
);
CREATE TABLE IF NOT EXISTS alert_history (
    fingerprint TEXT NOT NULL,
    starts_at INTEGER NOT NULL,
    ends_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    labels TEXT NOT NULL,
    annotations TEXT NOT NULL,
    generator_url TEXT NOT NULL,
    PRIMARY KEY (fingerprint, starts_at)
);
CREATE INDEX IF NOT EXISTS alert_history_updated ON alert_history (updated_at);
CREATE TABLE IF NOT EXISTS incidents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    engine_id INTEGER NOT NULL,
    opened_at INTEGER NOT NULL,
    group_key TEXT NOT NULL,
    receiver TEXT NOT NULL,
    probable_cause TEXT NOT NULL,
    cause_alert TEXT NOT NULL,
    alerts INTEGER NOT NULL,
    status TEXT NOT NULL,
    first_notified_at INTEGER NOT NULL,
    last_notified_at INTEGER NOT NULL,
    notifications INTEGER NOT NULL,
    acked_at INTEGER,
    acked_by TEXT,
    ack_comment TEXT,
    UNIQUE (group_key, engine_id, opened_at)
);
CREATE INDEX IF NOT EXISTS incidents_opened ON incidents (opened_at);
-- Version 3: the engine's memory (crate::memory), one row per item, its value as the cluster sends it.
CREATE TABLE IF NOT EXISTS memory (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS notifications (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    receiver TEXT NOT NULL,
    integration TEXT NOT NULL,
    group_key TEXT NOT NULL,
    status TEXT NOT NULL,
    alerts INTEGER NOT NULL,
    incident_id INTEGER REFERENCES incidents (id),
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS notifications_at ON notifications (at);
-- Remediation's ledger looks actions up by integration, fault key and outcome.
CREATE INDEX IF NOT EXISTS notifications_integration ON notifications (integration, group_key, status);
";

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("alertd database {path}: {source}")]
    Open { path: PathBuf, source: rusqlite::Error },
    #[error("alertd data directory {path}: {source}")]
    Dir { path: PathBuf, source: std::io::Error },
    #[error("alertd database {path}: schema version {found} is newer than this alertd ({SCHEMA_VERSION})")]
    TooNew { path: PathBuf, found: i64 },
    #[error("alertd database: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("alertd database: {what}: {reason}")]
    Corrupt { what: String, reason: String },
}

/// The open database: one connection, used under a lock (writes are small and rare next to the
/// pipeline's work).
pub struct Db {
    conn: Mutex<Connection>,
}

impl Db {
    /// Opens (creating when needed) `alertd.db` in `data_dir`.
    pub fn open(data_dir: &Path) -> Result<Db, DbError> {
        let path = data_dir.join(FILE_NAME);
        let open = |source| DbError::Open { path: path.clone(), source };
        std::fs::create_dir_all(data_dir).map_err(|source| DbError::Dir { path: data_dir.to_path_buf(), source })?;
        let conn = Connection::open(&path).map_err(open)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(open)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(open)?;
        // The outbox's connection may hold the write lock briefly.
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(open)?;
        let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(open)?;
        if found > SCHEMA_VERSION {
            return Err(DbError::TooNew { path, found });
        }
        conn.execute_batch(SCHEMA).map_err(open)?;
        if found == 1 {
            // Version 2 added silences until resolved.
            conn.execute_batch("ALTER TABLE silences ADD COLUMN until_resolved INTEGER NOT NULL DEFAULT 0")
                .map_err(open)?;
        }
        conn.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(open)?;
        Ok(Db { conn: Mutex::new(conn) })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // Every statement runs to completion under the lock, so a panic elsewhere cannot leave a
        // half-applied change behind it.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests;
