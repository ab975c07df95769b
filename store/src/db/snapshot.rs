//! Snapshots: a consistent copy of the data directory, taken while the store runs, under
//! `<data_dir>/snapshots/<name>/` (`POST /api/v1/admin/tsdb/snapshot`, docs/operations.md). A snapshot
//! is a data directory of its own: stop the server, put the snapshot in the data directory's place and
//! start it, and the store answers what it answered when the snapshot was taken.
//!
//! How each file is taken follows from how it is written (docs/format/):
//! - a block is immutable once renamed into place, and replaced only by new files (a version 1 index
//!   is rewritten into a temporary file renamed over the old one): its files are hard-linked;
//! - a closed WAL segment is never written again: hard-linked; the open one is appended to, so only
//!   the part of it holding whole entries is copied, and the copy is what a restored store replays
//!   (and, were it torn, would cut in place: never the live file);
//! - the head's chunk file is left out: a store deletes it at open and rebuilds the head from the WAL.
//!
//! No flush or compaction runs while the snapshot is taken (both hold the flush lock, as the snapshot
//! does), so no block or WAL segment disappears from under it, and every sample is in a block or in
//! the WAL it copies. Retention takes blocks out of the list under its write lock before it deletes
//! them, so a block listed under the read lock is whole on disk until the lock is released.

use super::{Db, DbError};
use crate::wal::WalError;
use std::fs::{self, File};
use std::hash::BuildHasher;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The directory under the data directory that holds snapshots.
pub const SNAPSHOTS_DIR: &str = "snapshots";

/// A snapshot taken.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// `20261207T120000Z-<16 hex digits>`: the time it was taken (UTC) and a random part, as
    /// Prometheus names its snapshots.
    pub name: String,
    /// `<data_dir>/snapshots/<name>`.
    pub dir: PathBuf,
    pub blocks: usize,
    pub wal_segments: usize,
}

/// Something besides the store's own files that a snapshot includes (alertd's database, when alertd
/// runs in the same process): `copy` writes a consistent copy of it into the directory it is given.
#[derive(Clone)]
pub struct SnapshotPart {
    pub name: String,
    pub copy: CopyInto,
}

/// Writes a copy into the snapshot directory it is given; the error says what failed.
pub type CopyInto = Arc<dyn Fn(&Path) -> Result<(), String> + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error(transparent)]
    Wal(#[from] WalError),
    #[error("snapshot {name}: copying {part}: {reason}")]
    Part { name: String, part: String, reason: String },
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> SnapshotError + '_ {
    move |source| SnapshotError::Io { path: path.to_path_buf(), source }
}

impl Db {
    /// Takes a snapshot: every block and, unless `skip_head`, the WAL (what the head holds), then each
    /// of `parts`, into `<data_dir>/snapshots/<name>/`. The directory is written as `<name>.tmp`,
    /// synced, and renamed into place only once whole.
    pub fn snapshot(&self, skip_head: bool, parts: &[SnapshotPart]) -> Result<Snapshot, SnapshotError> {
        let root = self.shared.opts.data_dir.join(SNAPSHOTS_DIR);
        fs::create_dir_all(&root).map_err(io_at(&root))?;
        let name = fresh_name();
        let tmp = root.join(format!("{name}.tmp"));
        let dir = root.join(&name);
        let taken = self.take(&tmp, &name, skip_head, parts).and_then(|(blocks, wal_segments)| {
            fs::rename(&tmp, &dir).map_err(io_at(&dir))?;
            sync_dir(&root)?;
            Ok(Snapshot { name: name.clone(), dir: dir.clone(), blocks, wal_segments })
        });
        if taken.is_err() {
            let _ = fs::remove_dir_all(&tmp);
        }
        let s = taken?;
        tracing::info!(snapshot = %s.dir.display(), blocks = s.blocks, wal_segments = s.wal_segments, skip_head, "Took a snapshot");
        Ok(s)
    }

    /// Writes the snapshot into `tmp`; returns how many blocks and WAL segments it took.
    fn take(
        &self,
        tmp: &Path,
        name: &str,
        skip_head: bool,
        parts: &[SnapshotPart],
    ) -> Result<(usize, usize), SnapshotError> {
        fs::create_dir(tmp).map_err(io_at(tmp))?;
        let (blocks, wal_segments) = {
            let _no_flush = self.shared.flush_lock.lock();
            let blocks_dir = tmp.join("blocks");
            fs::create_dir(&blocks_dir).map_err(io_at(&blocks_dir))?;
            let blocks = {
                let blocks = self.shared.blocks.read();
                for b in blocks.iter() {
                    let Some(block_name) = b.dir.file_name() else { continue };
                    link_block(&b.dir, &blocks_dir.join(block_name))?;
                }
                blocks.len()
            };
            sync_dir(&blocks_dir)?;
            let wal_segments = match skip_head {
                true => 0,
                false => self.copy_wal(&tmp.join("wal"))?,
            };
            (blocks, wal_segments)
        };
        for p in parts {
            (p.copy)(tmp).map_err(|reason| SnapshotError::Part {
                name: name.to_string(),
                part: p.name.clone(),
                reason,
            })?;
        }
        sync_dir(tmp)?;
        Ok((blocks, wal_segments))
    }

    /// Closed segments linked, the open one copied up to its last whole entry; returns how many.
    fn copy_wal(&self, to: &Path) -> Result<usize, SnapshotError> {
        fs::create_dir(to).map_err(io_at(to))?;
        let (open, extent) = {
            let wal = self.shared.wal.lock();
            (wal.segment(), wal.extent()?)
        };
        for (n, path, len) in &extent {
            let Some(file_name) = path.file_name() else { continue };
            let dest = to.join(file_name);
            match *n == open {
                true => copy_prefix(path, &dest, *len)?,
                false => link_or_copy(path, &dest)?,
            }
        }
        sync_dir(to)?;
        Ok(extent.len())
    }
}

/// Removes what a snapshot interrupted by a crash left (`snapshots/*.tmp`); called at open, when no
/// snapshot can be under way.
pub(super) fn remove_incomplete(data_dir: &Path) -> Result<(), DbError> {
    let root = data_dir.join(SNAPSHOTS_DIR);
    let entries = match fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(DbError::Io { path: root, source }),
    };
    for e in entries {
        let path = e.map_err(|source| DbError::Io { path: root.clone(), source })?.path();
        if path.extension().is_some_and(|x| x == "tmp") {
            tracing::warn!(path = %path.display(), "Removing an incomplete snapshot left by a crash");
            fs::remove_dir_all(&path).map_err(|source| DbError::Io { path: path.clone(), source })?;
        }
    }
    Ok(())
}

/// A new snapshot's name: the time in UTC as Prometheus writes it (`20261207T120000Z`), and 64 random
/// bits so that two snapshots in one second differ.
fn fresh_name() -> String {
    let now = SystemTime::now();
    let stamp: String =
        humantime::format_rfc3339_seconds(now).to_string().chars().filter(|c| *c != '-' && *c != ':').collect();
    let nanos = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    // std's hasher keys are drawn from the operating system's random source.
    let random = std::collections::hash_map::RandomState::new().hash_one((nanos, std::process::id()));
    format!("{stamp}-{random:016x}")
}

/// Links every file of a block directory into a new directory of the same name.
fn link_block(from: &Path, to: &Path) -> Result<(), SnapshotError> {
    fs::create_dir(to).map_err(io_at(to))?;
    for e in fs::read_dir(from).map_err(io_at(from))? {
        let e = e.map_err(io_at(from))?;
        if e.file_type().map_err(io_at(from))?.is_file() {
            link_or_copy(&e.path(), &to.join(e.file_name()))?;
        }
    }
    sync_dir(to)
}

/// A hard link; a synced copy where the file system has none.
fn link_or_copy(from: &Path, to: &Path) -> Result<(), SnapshotError> {
    match fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(io_at(from)(e)),
        Err(_) => copy_prefix(from, to, u64::MAX),
    }
}

/// Copies the first `len` bytes of `from` (all of it, if shorter) into a new file, synced.
fn copy_prefix(from: &Path, to: &Path, len: u64) -> Result<(), SnapshotError> {
    let src = File::open(from).map_err(io_at(from))?;
    let mut dest = File::create_new(to).map_err(io_at(to))?;
    io::copy(&mut src.take(len), &mut dest).map_err(io_at(to))?;
    dest.flush().map_err(io_at(to))?;
    dest.sync_all().map_err(io_at(to))
}

fn sync_dir(dir: &Path) -> Result<(), SnapshotError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_at(dir))
}

#[cfg(test)]
mod tests;
