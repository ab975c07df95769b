//! The on-disk spool of a sink: request bodies that could not be delivered yet, kept in order, bounded
//! in bytes, dropping the oldest segment first. Format: docs/format/spool.md.
//!
//! **Invariant:** records are handed out in the order they were pushed, across restarts; a record is
//! removed only by `pop` (after its delivery) or by dropping its whole segment to stay in bounds.
//! Delivery is at least once: the acknowledged position is saved without fsync, so after a machine
//! crash some delivered records may be sent again (the store makes an identical rewrite a no-op).

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"ARGSPL01";
/// body length (4) + CRC-32 (4) + kind (1) + values (4)
const RECORD_HEADER: u64 = 13;
const ACK_FILE: &str = "ack";
/// The file held locked while the spool is open.
const LOCK_FILE: &str = "lock";

/// One request body waiting for delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub kind: Kind,
    /// Samples and events inside, for counting what is dropped.
    pub values: u32,
    pub body: Vec<u8>,
}

/// What a body is and where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Snappy-compressed remote-write protobuf, to the sink's `url`.
    RemoteWrite = 1,
    /// Gzip-compressed line protocol, to the sink's `url`.
    LineProtocol = 2,
    /// Gzip-compressed line protocol carrying events, to the sink's `events_url`.
    Events = 3,
}

#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error("spool {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(
        "spool {0} is in use by another process (another collector, or `argus serve`, with the same data_dir and sink name)"
    )]
    Locked(PathBuf),
}

struct Segment {
    seq: u64,
    /// File size, header included.
    bytes: u64,
    /// Values in records not yet acknowledged.
    values: u64,
    records: u64,
}

pub struct Spool {
    dir: PathBuf,
    max_bytes: u64,
    segment_bytes: u64,
    segments: VecDeque<Segment>,
    /// Open for appending: always the last segment, when there is one.
    writer: Option<File>,
    /// Reading position: the first segment and the offset of its next unacknowledged record.
    read_offset: u64,
    reader: Option<BufReader<File>>,
    /// The record at the reading position, read but not popped.
    front: Option<(Record, u64)>,
    /// Held locked while open: two processes on one spool would overwrite and delete each other's
    /// segments.
    _lock: File,
    /// The number the next new segment gets at the least. Kept here rather than read back from `ack`,
    /// whose writes may fail (a full disk): a stale ack would hand out the number of a segment it
    /// points into, and a restart would then skip that many bytes of the new one.
    next_seq: u64,
}

impl Spool {
    /// Opens (or creates) a spool directory. Returns the spool and the values lost to a torn or corrupt
    /// tail found while scanning.
    pub fn open(dir: &Path, max_bytes: u64, segment_bytes: u64) -> Result<(Spool, u64), SpoolError> {
        let io = |source| SpoolError::Io { path: dir.to_path_buf(), source };
        std::fs::create_dir_all(dir).map_err(io)?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = File::create(&lock_path).map_err(|source| SpoolError::Io { path: lock_path.clone(), source })?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(SpoolError::Locked(dir.to_path_buf())),
            Err(std::fs::TryLockError::Error(source)) => return Err(SpoolError::Io { path: lock_path, source }),
        }
        let mut seqs: Vec<u64> = std::fs::read_dir(dir)
            .map_err(io)?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".seg")?.parse().ok())
            .collect();
        seqs.sort_unstable();
        let (ack_seq, ack_offset) = read_ack(&dir.join(ACK_FILE)).unwrap_or((0, MAGIC.len() as u64));
        let mut spool = Spool {
            dir: dir.to_path_buf(),
            max_bytes,
            segment_bytes,
            segments: VecDeque::new(),
            writer: None,
            read_offset: MAGIC.len() as u64,
            reader: None,
            front: None,
            _lock: lock,
            next_seq: ack_seq.max(seqs.last().map_or(1, |s| s + 1)),
        };
        let mut lost = 0;
        for seq in seqs {
            let path = spool.path(seq);
            if seq < ack_seq {
                // Fully delivered before the last stop; deleting it was interrupted.
                let _ = std::fs::remove_file(&path);
                continue;
            }
            let skip_to = if seq == ack_seq { ack_offset } else { MAGIC.len() as u64 };
            let (seg, torn) =
                scan(&path, seq, skip_to).map_err(|source| SpoolError::Io { path: path.clone(), source })?;
            lost += torn;
            if spool.segments.is_empty() {
                spool.read_offset = skip_to.min(seg.bytes).max(MAGIC.len() as u64);
            }
            spool.segments.push_back(seg);
        }
        Ok((spool, lost))
    }

    pub fn is_empty(&self) -> bool {
        self.segments.iter().all(|s| s.records == 0)
    }

    /// Bytes on disk.
    pub fn bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.bytes).sum()
    }

    /// Records waiting.
    pub fn len(&self) -> u64 {
        self.segments.iter().map(|s| s.records).sum()
    }

    /// Appends a record. Returns the values dropped to stay within `max_bytes`: whole oldest
    /// segments, or the record itself when it alone is larger than the bound.
    pub fn push(&mut self, rec: &Record) -> Result<u64, SpoolError> {
        let size = RECORD_HEADER + rec.body.len() as u64;
        if size + MAGIC.len() as u64 > self.max_bytes {
            return Ok(u64::from(rec.values));
        }
        let mut dropped = 0;
        // Room for a new segment's header too, in case this record starts one.
        while self.bytes() + size + MAGIC.len() as u64 > self.max_bytes && !self.segments.is_empty() {
            dropped += self.drop_oldest()?;
        }
        let roll = match self.segments.back() {
            None => true,
            Some(s) => self.writer.is_none() || s.bytes + size > self.segment_bytes,
        };
        if roll {
            self.start_segment()?;
        }
        let mut buf = Vec::with_capacity(size as usize);
        buf.extend_from_slice(&(rec.body.len() as u32).to_le_bytes());
        buf.extend_from_slice(&checksum(rec).to_le_bytes());
        buf.push(rec.kind as u8);
        buf.extend_from_slice(&rec.values.to_le_bytes());
        buf.extend_from_slice(&rec.body);
        let path = self.path(self.segments.back().map_or(0, |s| s.seq));
        let end = self.segments.back().map_or(0, |s| s.bytes);
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| SpoolError::Io { path: path.clone(), source: std::io::Error::other("no open segment") })?;
        if let Err(source) = w.write_all(&buf) {
            // A full disk can take part of the record before refusing the rest. Cut that part off, or the
            // records written once space returns would sit behind an unreadable one and be lost with it;
            // if the cut fails too, the next record starts a new segment.
            if w.set_len(end).and_then(|()| w.seek(SeekFrom::Start(end))).is_err() {
                self.writer = None;
            }
            return Err(SpoolError::Io { path, source });
        }
        if let Some(s) = self.segments.back_mut() {
            s.bytes += size;
            s.values += u64::from(rec.values);
            s.records += 1;
        }
        Ok(dropped)
    }

    /// The oldest record not yet popped.
    pub fn front(&mut self) -> Result<Option<Record>, SpoolError> {
        if let Some((r, _)) = &self.front {
            return Ok(Some(r.clone()));
        }
        loop {
            let Some(first) = self.segments.front() else { return Ok(None) };
            if first.records == 0 {
                if self.segments.len() == 1 {
                    return Ok(None);
                }
                self.remove_first()?;
                continue;
            }
            let path = self.path(first.seq);
            let io = |source| SpoolError::Io { path: path.clone(), source };
            if self.reader.is_none() {
                let mut f = File::open(&path).map_err(io)?;
                f.seek(SeekFrom::Start(self.read_offset)).map_err(io)?;
                self.reader = Some(BufReader::new(f));
            }
            let reader = self.reader.as_mut().ok_or_else(|| io(std::io::Error::other("no reader")))?;
            match read_record(reader).map_err(io)? {
                Some((rec, size)) => {
                    self.front = Some((rec.clone(), size));
                    return Ok(Some(rec));
                }
                // Counted records but nothing readable: the file changed under us. Drop the segment.
                None => {
                    self.remove_first()?;
                }
            }
        }
    }

    /// Removes the front record after its delivery.
    pub fn pop(&mut self) -> Result<(), SpoolError> {
        if self.front.is_none() {
            self.front()?;
        }
        let Some((rec, size)) = self.front.take() else { return Ok(()) };
        self.read_offset += size;
        if let Some(s) = self.segments.front_mut() {
            s.records = s.records.saturating_sub(1);
            s.values = s.values.saturating_sub(u64::from(rec.values));
        }
        let done = self.segments.front().is_some_and(|s| s.records == 0) && self.segments.len() > 1;
        if done {
            self.remove_first()?;
        } else if let Some(s) = self.segments.front() {
            self.write_ack(s.seq, self.read_offset);
        }
        Ok(())
    }

    fn drop_oldest(&mut self) -> Result<u64, SpoolError> {
        let values = self.segments.front().map_or(0, |s| s.values);
        if self.segments.len() == 1 {
            self.writer = None;
        }
        self.remove_first()?;
        Ok(values)
    }

    fn remove_first(&mut self) -> Result<(), SpoolError> {
        let Some(seg) = self.segments.pop_front() else { return Ok(()) };
        self.reader = None;
        self.front = None;
        self.read_offset = MAGIC.len() as u64;
        if self.segments.is_empty() {
            self.writer = None;
        }
        let next = self.segments.front().map_or(seg.seq + 1, |s| s.seq);
        // The ack first: a crash between the two leaves a segment the next open deletes.
        self.write_ack(next, MAGIC.len() as u64);
        let path = self.path(seg.seq);
        std::fs::remove_file(&path)
            .or_else(|e| if e.kind() == ErrorKind::NotFound { Ok(()) } else { Err(e) })
            .map_err(|source| SpoolError::Io { path, source })
    }

    fn start_segment(&mut self) -> Result<(), SpoolError> {
        if let Some(w) = self.writer.take() {
            // A closed segment is complete: make it durable once rather than every record.
            let _ = w.sync_data();
        }
        let seq = self.segments.back().map_or(1, |s| s.seq + 1).max(self.next_seq);
        self.next_seq = seq + 1;
        let path = self.path(seq);
        let io = |source| SpoolError::Io { path: path.clone(), source };
        let mut f = OpenOptions::new().create(true).truncate(true).write(true).open(&path).map_err(io)?;
        f.write_all(MAGIC).map_err(io)?;
        if self.segments.is_empty() {
            self.read_offset = MAGIC.len() as u64;
            self.reader = None;
        }
        self.segments.push_back(Segment { seq, bytes: MAGIC.len() as u64, values: 0, records: 0 });
        self.writer = Some(f);
        Ok(())
    }

    fn path(&self, seq: u64) -> PathBuf {
        self.dir.join(format!("{seq:020}.seg"))
    }

    /// Best effort, without fsync: a lost ack only means records are sent again.
    fn write_ack(&self, seq: u64, offset: u64) {
        let mut buf = Vec::with_capacity(20);
        buf.extend_from_slice(&seq.to_le_bytes());
        buf.extend_from_slice(&offset.to_le_bytes());
        buf.extend_from_slice(&crc32fast::hash(&buf).to_le_bytes());
        let tmp = self.dir.join("ack.tmp");
        if std::fs::write(&tmp, &buf).and_then(|_| std::fs::rename(&tmp, self.dir.join(ACK_FILE))).is_err() {
            tracing::debug!(dir = %self.dir.display(), "Could not save the spool's acknowledged position");
        }
    }
}

fn checksum(rec: &Record) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&[rec.kind as u8]);
    h.update(&rec.values.to_le_bytes());
    h.update(&rec.body);
    h.finalize()
}

fn read_ack(path: &Path) -> Option<(u64, u64)> {
    let b = std::fs::read(path).ok()?;
    if b.len() != 20 || crc32fast::hash(&b[..16]).to_le_bytes() != b[16..20] {
        return None;
    }
    let seq = u64::from_le_bytes(b[0..8].try_into().ok()?);
    let off = u64::from_le_bytes(b[8..16].try_into().ok()?);
    Some((seq, off))
}

/// Reads one record; `None` at a clean end or at a torn or corrupt record.
fn read_record(r: &mut impl Read) -> std::io::Result<Option<(Record, u64)>> {
    let mut head = [0u8; RECORD_HEADER as usize];
    match r.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    let kind = match head[8] {
        1 => Kind::RemoteWrite,
        2 => Kind::LineProtocol,
        3 => Kind::Events,
        _ => return Ok(None),
    };
    let values = u32::from_le_bytes([head[9], head[10], head[11], head[12]]);
    let mut body = vec![0u8; len];
    match r.read_exact(&mut body) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let rec = Record { kind, values, body };
    if checksum(&rec) != crc {
        return Ok(None);
    }
    Ok(Some((rec, RECORD_HEADER + len as u64)))
}

/// Scans a segment from `from`: counts its good records, and cuts a torn or corrupt tail off. Returns
/// the segment and the values lost in the cut (counted from the record headers that could be read).
fn scan(path: &Path, seq: u64, from: u64) -> std::io::Result<(Segment, u64)> {
    let mut f = OpenOptions::new().read(true).write(true).open(path)?;
    let len = f.metadata()?.len();
    let mut magic = [0u8; 8];
    if len < MAGIC.len() as u64 || f.read_exact(&mut magic).is_err() || &magic != MAGIC {
        f.set_len(0)?;
        f.write_all(MAGIC)?;
        return Ok((Segment { seq, bytes: MAGIC.len() as u64, values: 0, records: 0 }, 0));
    }
    let start = from.max(MAGIC.len() as u64).min(len);
    let mut r = BufReader::new(f.try_clone()?);
    r.seek(SeekFrom::Start(start))?;
    let mut seg = Segment { seq, bytes: len, values: 0, records: 0 };
    let mut good_end = start;
    while let Some((rec, size)) = read_record(&mut r)? {
        seg.records += 1;
        seg.values += u64::from(rec.values);
        good_end += size;
    }
    let mut lost = 0;
    if good_end < len {
        tracing::warn!(path = %path.display(), at = good_end, bytes = len - good_end, "Cutting a torn or corrupt spool tail");
        let mut tail = [0u8; RECORD_HEADER as usize];
        r.seek(SeekFrom::Start(good_end))?;
        if r.read_exact(&mut tail).is_ok() {
            lost = u64::from(u32::from_le_bytes([tail[9], tail[10], tail[11], tail[12]]));
        }
        f.set_len(good_end)?;
        seg.bytes = good_end;
    }
    Ok((seg, lost))
}

#[cfg(test)]
mod tests;
