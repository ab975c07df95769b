//! `Silences` and `NotificationLog` over the database: in memory for the pipeline, written through
//! to SQLite so both survive a restart.

use super::{Db, DbError};
use crate::alert::Fingerprint;
use crate::nflog::{Entry, NotificationLog};
use crate::silence::{Silence, Silences, StoreError, WireMatcher};
use crate::time::Timestamp;
use rusqlite::params;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// === impl DbSilences ===

/// Silences kept in SQLite.
pub struct DbSilences {
    db: Arc<Db>,
    cache: Mutex<Vec<Silence>>,
}

impl DbSilences {
    /// Loads every stored silence.
    pub fn load(db: Arc<Db>) -> Result<DbSilences, DbError> {
        let rows = {
            let conn = db.conn();
            let mut st = conn.prepare(
                "SELECT id, matchers, starts_at, ends_at, updated_at, created_by, comment, until_resolved FROM silences \
                 ORDER BY id",
            )?;
            st.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, String>(6)?,
                    r.get::<_, bool>(7)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?
        };
        let mut silences = Vec::with_capacity(rows.len());
        for (id, matchers, starts, ends, updated, created_by, comment, until_resolved) in rows {
            let corrupt = |reason: String| DbError::Corrupt { what: format!("silence {id} matchers"), reason };
            let wire: Vec<WireMatcher> = serde_json::from_str(&matchers).map_err(|e| corrupt(e.to_string()))?;
            let matchers = wire
                .iter()
                .map(WireMatcher::to_matcher)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| corrupt(e.to_string()))?;
            silences.push(Silence {
                id,
                matchers,
                starts_at: Timestamp(starts),
                ends_at: Timestamp(ends),
                updated_at: Timestamp(updated),
                created_by,
                comment,
                until_resolved,
            });
        }
        Ok(DbSilences { db, cache: Mutex::new(silences) })
    }

    fn write(&self, s: &Silence) -> Result<(), StoreError> {
        let matchers = serde_json::to_string(&s.matchers.iter().map(WireMatcher::from_matcher).collect::<Vec<_>>())
            .map_err(|e| StoreError(e.to_string()))?;
        self.db
            .conn()
            .execute(
                "INSERT INTO silences (id, matchers, starts_at, ends_at, updated_at, created_by, comment, until_resolved)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (id) DO UPDATE SET matchers = ?2, starts_at = ?3, ends_at = ?4, updated_at = ?5,
                     created_by = ?6, comment = ?7, until_resolved = ?8",
                params![
                    s.id,
                    matchers,
                    s.starts_at.0,
                    s.ends_at.0,
                    s.updated_at.0,
                    s.created_by,
                    s.comment,
                    s.until_resolved
                ],
            )
            .map_err(|e| StoreError(format!("writing silence {}: {e}", s.id)))?;
        Ok(())
    }
}

impl Silences for DbSilences {
    fn set(&self, s: Silence) -> Result<(), StoreError> {
        // Hold the cache lock over the write, so the cache and the table change in the same order.
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        self.write(&s)?;
        cache.retain(|x| x.id != s.id);
        cache.push(s);
        Ok(())
    }

    fn expire(&self, id: &str, now: Timestamp) -> Result<bool, StoreError> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let Some(i) = cache.iter().position(|x| x.id == id) else { return Ok(false) };
        let mut s = cache[i].clone();
        s.expire(now);
        self.write(&s)?;
        cache[i] = s;
        Ok(true)
    }

    fn list(&self) -> Vec<Silence> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn get(&self, id: &str) -> Option<Silence> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|s| s.id == id).cloned()
    }

    fn gc(&self, now: Timestamp, retention: Duration) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let cutoff = (now - retention).0;
        if let Err(error) = self.db.conn().execute("DELETE FROM silences WHERE ends_at <= ?1", params![cutoff]) {
            // Kept in memory too, so the next collection tries again.
            tracing::error!(%error, "Silence cleanup failed");
            return;
        }
        cache.retain(|s| now - s.ends_at < retention);
    }
}

// === impl DbLog ===

type Key = (String, String);

/// The notification log kept in SQLite.
pub struct DbLog {
    db: Arc<Db>,
    cache: Mutex<HashMap<Key, Entry>>,
}

fn fps_to_json(s: &BTreeSet<Fingerprint>) -> String {
    let v: Vec<String> = s.iter().map(|f| f.to_string()).collect();
    serde_json::Value::from(v).to_string()
}

fn fps_from_json(text: &str) -> Result<BTreeSet<Fingerprint>, String> {
    let v: Vec<String> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    v.iter()
        .map(|h| u64::from_str_radix(h, 16).map(Fingerprint).map_err(|e| format!("fingerprint {h:?}: {e}")))
        .collect()
}

impl DbLog {
    /// Loads every stored entry.
    pub fn load(db: Arc<Db>) -> Result<DbLog, DbError> {
        let rows = {
            let conn = db.conn();
            let mut st = conn.prepare("SELECT group_key, recipient, firing, resolved, timestamp FROM nflog")?;
            st.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, i64>(4)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?
        };
        let mut cache = HashMap::with_capacity(rows.len());
        for (group_key, recipient, firing, resolved, ts) in rows {
            let corrupt = |reason| DbError::Corrupt { what: format!("nflog entry {group_key} {recipient}"), reason };
            let entry = Entry {
                firing: fps_from_json(&firing).map_err(corrupt)?,
                resolved: fps_from_json(&resolved).map_err(corrupt)?,
                timestamp: Timestamp(ts),
            };
            cache.insert((group_key, recipient), entry);
        }
        Ok(DbLog { db, cache: Mutex::new(cache) })
    }
}

impl NotificationLog for DbLog {
    fn get(&self, group_key: &str, recipient: &str) -> Option<Entry> {
        let m = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        m.get(&(group_key.to_string(), recipient.to_string())).cloned()
    }

    fn log(&self, group_key: &str, recipient: &str, entry: Entry) {
        let mut m = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let res = self.db.conn().execute(
            "INSERT INTO nflog (group_key, recipient, firing, resolved, timestamp) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (group_key, recipient) DO UPDATE SET firing = ?3, resolved = ?4, timestamp = ?5",
            params![group_key, recipient, fps_to_json(&entry.firing), fps_to_json(&entry.resolved), entry.timestamp.0],
        );
        // The trait cannot fail: the pipeline has already sent. Keep the entry in memory so this
        // process still dedups; after a restart the notification may repeat (at least once).
        if let Err(error) = res {
            tracing::error!(group = group_key, recipient, %error, "Notification log write failed");
        }
        m.insert((group_key.to_string(), recipient.to_string()), entry);
    }

    fn gc(&self, now: Timestamp, retention: Duration) {
        let mut m = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        m.retain(|_, e| now - e.timestamp < retention);
        let cutoff = (now - retention).0;
        if let Err(error) = self.db.conn().execute("DELETE FROM nflog WHERE timestamp <= ?1", params![cutoff]) {
            tracing::error!(%error, "Notification log cleanup failed");
        }
    }

    fn entries(&self) -> Vec<(String, String, Entry)> {
        let m = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        m.iter().map(|((g, r), e)| (g.clone(), r.clone(), e.clone())).collect()
    }
}
