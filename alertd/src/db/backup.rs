//! A consistent copy of `alertd.db` taken while alertd runs: what `argus serve`'s snapshots
//! (`POST /api/v1/admin/tsdb/snapshot`, docs/operations.md) include beside the store.
//!
//! SQLite's `VACUUM INTO` writes the copy from one read transaction on a connection of its own: in
//! WAL mode that sees the database as of one commit and holds up neither alertd's writes nor the
//! outbox's, and the copy is a complete database file (schema version included) with no `-wal` file
//! beside it. Copying the file with `cp` instead could take it between a commit and its checkpoint.

use super::FILE_NAME;
use rusqlite::Connection;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("backing up alertd database {from} into {to}: {source}")]
    Sql { from: PathBuf, to: PathBuf, source: rusqlite::Error },
    #[error("backing up alertd database into {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("backing up alertd database: the path {0} is not UTF-8, which SQLite needs")]
    NotUtf8(PathBuf),
}

/// Copies `alertd.db` of `data_dir` into the new file `dest` (which must not exist), synced.
pub fn backup(data_dir: &Path, dest: &Path) -> Result<(), BackupError> {
    let from = data_dir.join(FILE_NAME);
    let sql = |source| BackupError::Sql { from: from.clone(), to: dest.to_path_buf(), source };
    let to = dest.to_str().ok_or_else(|| BackupError::NotUtf8(dest.to_path_buf()))?;
    if !from.exists() {
        return Err(BackupError::Io {
            path: from.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such database"),
        });
    }
    let conn = Connection::open(&from).map_err(sql)?;
    // A writer holds the write lock only briefly; a read transaction waits at most this for it.
    conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(sql)?;
    conn.execute("VACUUM INTO ?1", [to]).map_err(sql)?;
    drop(conn);
    let io = |source| BackupError::Io { path: dest.to_path_buf(), source };
    std::fs::File::open(dest).and_then(|f| f.sync_all()).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::super::Db;
    use super::*;

    fn silence_ids(conn: &Connection) -> Vec<String> {
        let mut st = conn.prepare("SELECT id FROM silences ORDER BY id").unwrap();
        st.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    }

    fn insert(conn: &Connection, id: &str) {
        conn.execute(
            "INSERT INTO silences (id, matchers, starts_at, ends_at, updated_at, created_by, comment)
             VALUES (?1, '[]', 0, 1, 0, 'ops', 'fan swap')",
            [id],
        )
        .unwrap();
    }

    #[test]
    fn the_copy_holds_what_was_committed_and_opens_as_alertd_db() {
        let live = tempfile::tempdir().unwrap();
        let db = Db::open(live.path()).unwrap();
        insert(&db.conn(), "committed");
        // Another connection in the middle of a transaction, as the outbox's may be.
        let other = Connection::open(live.path().join(FILE_NAME)).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        insert(&other, "uncommitted");

        let copy = tempfile::tempdir().unwrap();
        backup(live.path(), &copy.path().join(FILE_NAME)).unwrap();
        other.execute_batch("COMMIT").unwrap();
        insert(&db.conn(), "after");

        assert!(!copy.path().join(format!("{FILE_NAME}-wal")).exists());
        let restored = Db::open(copy.path()).unwrap();
        assert_eq!(silence_ids(&restored.conn()), vec!["committed"]);
        let version: i64 = restored.conn().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(version, super::super::SCHEMA_VERSION);
        assert_eq!(silence_ids(&db.conn()), vec!["after", "committed", "uncommitted"]);

        let e = backup(live.path(), &copy.path().join(FILE_NAME)).unwrap_err().to_string();
        assert!(e.starts_with("backing up alertd database ") && e.contains(FILE_NAME), "{e}");
        let e = backup(copy.path().join("nowhere").as_path(), &copy.path().join("x.db")).unwrap_err().to_string();
        assert!(e.contains("nowhere/alertd.db") && e.contains("no such database"), "{e}");
    }
}
