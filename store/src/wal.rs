//! Write-ahead log: every acknowledged batch is one checksummed entry in a numbered segment file.
//! Format: docs/format/wal.md. Group commit lives in `commit.rs`; this module only writes, syncs, cuts
//! and replays segments.

mod record;

pub use record::{Record, RefSample, decode_entry, encode_events, encode_samples, encode_series};

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

const MAGIC: &[u8; 4] = b"ARGW";
const VERSION: u8 = 1;
const HEADER_LEN: usize = 8;
const ENTRY_HEADER_LEN: usize = 8;
/// Larger entries are refused on write and treated as corruption on read; the ingest limits keep
/// real batches far below this.
pub const MAX_ENTRY_BYTES: usize = 256 << 20;

/// When the WAL is fsynced. The default, `Always`, fsyncs each group commit before any write in it is
/// acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalSync {
    Always,
    /// At most this long after a write is acknowledged; a crash may lose that window.
    Interval(Duration),
    /// Leave it to the operating system; a crash of the machine (not of the process) may lose data.
    Never,
}

#[derive(Debug, thiserror::Error)]
pub enum WalError {
    #[error("wal io on {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("wal entry of {0} bytes exceeds the limit")]
    TooLarge(usize),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WalError + '_ {
    move |source| WalError::Io { path: path.to_path_buf(), source }
}

/// What opening found on disk.
#[derive(Debug, Default)]
pub struct ReplayReport {
    pub segments: usize,
    pub entries: usize,
    /// Bytes cut off a torn or corrupt tail, and where.
    pub truncated: Vec<(PathBuf, u64, String)>,
}

pub struct Wal {
    dir: PathBuf,
    segment: u64,
    path: PathBuf,
    out: BufWriter<File>,
    written: u64,
    /// How much of the segment is in the file for good: `written` as of the last successful flush
    /// (entries acknowledged without fsync) or sync. A failed write or fsync rolls back to it.
    flushed: u64,
    /// A rollback did not finish: nothing is appended until one does.
    poisoned: bool,
    segment_size: u64,
    /// Tests: the next fsync fails after the entries reached the file, as a failing disk's would.
    #[cfg(test)]
    fail_next_fsync: bool,
}

impl Wal {
    /// Opens the WAL in `dir`, handing every intact entry to `apply` in write order. A torn or corrupt
    /// entry is cut off with everything after it (such bytes were never acknowledged: an entry is
    /// acknowledged only once it is whole on disk) and reported; a segment with nothing readable is
    /// removed. Writing continues in a new segment.
    pub fn open(
        dir: &Path,
        segment_size: u64,
        mut apply: impl FnMut(Vec<Record>),
    ) -> Result<(Wal, ReplayReport), WalError> {
        fs::create_dir_all(dir).map_err(io(dir))?;
        let mut report = ReplayReport::default();
        let segments = list_segments(dir)?;
        let mut cut_rest = false;
        for (n, path) in &segments {
            if cut_rest {
                report.truncated.push((path.clone(), 0, "after an earlier corrupt segment".into()));
                fs::remove_file(path).map_err(io(path))?;
                continue;
            }
            report.segments += 1;
            let data = fs::read(path).map_err(io(path))?;
            let (entries, bad) = read_segment(&data, &mut apply);
            report.entries += entries;
            if let Some((offset, why)) = bad {
                if offset == 0 {
                    // Nothing in it is readable. Left as an empty file it would fail again at the next
                    // start, from the middle of the log by then, and cut off the segments written since.
                    // The new segment's creation below syncs the directory, so the removal is durable
                    // before anything is written after it.
                    fs::remove_file(path).map_err(io(path))?;
                } else {
                    let f = OpenOptions::new().write(true).open(path).map_err(io(path))?;
                    f.set_len(offset as u64).map_err(io(path))?;
                    f.sync_all().map_err(io(path))?;
                }
                report.truncated.push((path.clone(), (data.len() - offset) as u64, why));
                // A hole in the middle of the log would reorder history: drop what follows it. A segment
                // shorter than its header leaves no hole: it was torn while being created, and entries
                // are written only after the header is synced.
                let last = *n == segments.last().map(|s| s.0).unwrap_or(0);
                cut_rest = !last && data.len() >= HEADER_LEN;
            }
        }
        let next = segments.last().map(|s| s.0 + 1).unwrap_or(1);
        let (path, out) = create_segment(dir, next)?;
        let start = HEADER_LEN as u64;
        let wal = Wal {
            dir: dir.to_path_buf(),
            segment: next,
            path,
            out,
            written: start,
            flushed: start,
            poisoned: false,
            segment_size,
            #[cfg(test)]
            fail_next_fsync: false,
        };
        Ok((wal, report))
    }

    /// Buffers one entry. Not durable until `sync` (or `flush` for the OS cache) returns.
    pub fn append(&mut self, payload: &[u8]) -> Result<(), WalError> {
        if payload.len() > MAX_ENTRY_BYTES {
            return Err(WalError::TooLarge(payload.len()));
        }
        if self.poisoned {
            self.rollback()?;
        }
        let mut hdr = [0u8; ENTRY_HEADER_LEN];
        hdr[..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        hdr[4..].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
        self.out.write_all(&hdr).map_err(io(&self.path))?;
        self.out.write_all(payload).map_err(io(&self.path))?;
        self.written += (ENTRY_HEADER_LEN + payload.len()) as u64;
        Ok(())
    }

    /// Writes buffered entries to the OS.
    pub fn flush(&mut self) -> Result<(), WalError> {
        self.out.flush().map_err(io(&self.path))?;
        self.flushed = self.written;
        Ok(())
    }

    /// Forgets every entry appended since the last successful flush, in the buffer and in the file,
    /// after a write or sync of them failed (their requests are refused). Without it a full disk would
    /// leave a torn entry in the middle of the segment, and recovery would cut off everything
    /// acknowledged after it; or the buffer would write a refused entry out later.
    pub fn rollback(&mut self) -> Result<(), WalError> {
        let file = self.out.get_ref().try_clone().map_err(io(&self.path))?;
        self.poisoned = true;
        let old = std::mem::replace(&mut self.out, BufWriter::with_capacity(1 << 20, file));
        // `into_parts` hands back the unwritten bytes instead of writing them, as a drop would.
        let (mut file, _refused) = old.into_parts();
        file.set_len(self.flushed).map_err(io(&self.path))?;
        file.seek(SeekFrom::Start(self.flushed)).map_err(io(&self.path))?;
        self.written = self.flushed;
        self.poisoned = false;
        Ok(())
    }

    /// Writes buffered entries and fsyncs them. Only a sync that succeeds moves the point a rollback
    /// returns to: after a failed fsync the entries since the last good one are refused, and must go.
    pub fn sync(&mut self) -> Result<(), WalError> {
        self.out.flush().map_err(io(&self.path))?;
        #[cfg(test)]
        if std::mem::take(&mut self.fail_next_fsync) {
            return Err(io(&self.path)(std::io::Error::other("injected fsync failure")));
        }
        self.out.get_ref().sync_data().map_err(io(&self.path))?;
        self.flushed = self.written;
        Ok(())
    }

    /// Starts the next segment when this one has grown past the segment size. Called between groups of
    /// entries, never inside one, so that a refused group is rolled back out of one segment whole.
    pub fn cut_if_full(&mut self) -> Result<(), WalError> {
        if self.written > self.segment_size {
            self.cut()?;
        }
        Ok(())
    }

    /// Closes the current segment (synced) and starts the next; returns the new segment's number.
    pub fn cut(&mut self) -> Result<u64, WalError> {
        self.sync()?;
        let (path, out) = create_segment(&self.dir, self.segment + 1)?;
        self.segment += 1;
        self.path = path;
        self.out = out;
        self.written = HEADER_LEN as u64;
        self.flushed = HEADER_LEN as u64;
        Ok(self.segment)
    }

    /// The segments on disk, oldest first, each with how many of its bytes hold whole entries written
    /// out to the file: a closed segment all of them, the open one those up to its last flush or sync.
    /// Entries past that point may still be in the buffer, or belong to a group about to be refused and
    /// rolled back; the bytes before it never change again (a rollback only cuts back to it).
    pub fn extent(&self) -> Result<Vec<(u64, PathBuf, u64)>, WalError> {
        let mut out = Vec::new();
        for (n, path) in list_segments(&self.dir)? {
            let len = match n == self.segment {
                true => self.flushed,
                false => fs::metadata(&path).map_err(io(&path))?.len(),
            };
            out.push((n, path, len));
        }
        Ok(out)
    }

    /// The number of the segment being written.
    pub fn segment(&self) -> u64 {
        self.segment
    }

    /// Deletes every segment numbered below `segment`.
    pub fn remove_before(&mut self, segment: u64) -> Result<usize, WalError> {
        let mut n = 0;
        for (i, path) in list_segments(&self.dir)? {
            if i < segment {
                fs::remove_file(&path).map_err(io(&path))?;
                n += 1;
            }
        }
        Ok(n)
    }
}

fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>, WalError> {
    let mut v = Vec::new();
    for e in fs::read_dir(dir).map_err(io(dir))? {
        let e = e.map_err(io(dir))?;
        let name = e.file_name();
        if let Some(n) = name.to_str().filter(|s| s.len() == 8).and_then(|s| s.parse::<u64>().ok()) {
            v.push((n, e.path()));
        }
    }
    v.sort();
    Ok(v)
}

fn create_segment(dir: &Path, n: u64) -> Result<(PathBuf, BufWriter<File>), WalError> {
    let path = dir.join(format!("{n:08}"));
    let mut f = OpenOptions::new().create(true).write(true).truncate(true).open(&path).map_err(io(&path))?;
    let mut hdr = [0u8; HEADER_LEN];
    hdr[..4].copy_from_slice(MAGIC);
    hdr[4] = VERSION;
    let written = f.write_all(&hdr).and_then(|()| f.sync_all()).and_then(|()| File::open(dir)?.sync_all());
    if let Err(e) = written {
        // A segment without its header (a full disk) is not left behind for recovery to trip on.
        let _ = fs::remove_file(&path);
        return Err(io(&path)(e));
    }
    Ok((path.clone(), BufWriter::with_capacity(1 << 20, f)))
}

/// Applies each whole entry; returns how many, and where and why reading stopped early.
fn read_segment(data: &[u8], apply: &mut impl FnMut(Vec<Record>)) -> (usize, Option<(usize, String)>) {
    if data.len() < HEADER_LEN || &data[..4] != MAGIC {
        return (0, Some((0, "bad segment header".into())));
    }
    if data[4] != VERSION {
        return (0, Some((0, format!("unknown segment version {}", data[4]))));
    }
    let mut pos = HEADER_LEN;
    let mut n = 0;
    while pos < data.len() {
        if data.len() - pos < ENTRY_HEADER_LEN {
            return (n, Some((pos, "torn entry header".into())));
        }
        let len = u32::from_le_bytes([data[pos], data[pos + 1], data[pos + 2], data[pos + 3]]) as usize;
        let crc = u32::from_le_bytes([data[pos + 4], data[pos + 5], data[pos + 6], data[pos + 7]]);
        let start = pos + ENTRY_HEADER_LEN;
        if len > MAX_ENTRY_BYTES || data.len() - start < len {
            return (n, Some((pos, "torn entry".into())));
        }
        let payload = &data[start..start + len];
        if crc32fast::hash(payload) != crc {
            return (n, Some((pos, "checksum mismatch".into())));
        }
        match decode_entry(payload) {
            Ok(records) => apply(records),
            Err(e) => return (n, Some((pos, format!("undecodable entry: {e}")))),
        }
        n += 1;
        pos = start + len;
    }
    (n, None)
}

#[cfg(test)]
mod tests;
