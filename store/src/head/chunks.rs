//! A head series' samples as compressed chunks: one open Gorilla chunk taking new samples, and the
//! sealed chunks before it, written to the head's chunk file. Prometheus keeps its head the same way
//! (`chunks_head`); here the file is only a place to park bytes, never read at startup: the WAL
//! rebuilds the head, so the file is deleted on open (docs/format/head-chunks.md).
//!
//! A series' sealed chunks go into *runs*: room in the file reserved for several of its chunks in a
//! row (1, 4, then 16 chunks' worth as the series keeps sealing), so that memory holds one start
//! time and place (16 bytes) per run, not per chunk. A noisy series seals a chunk every 15 samples or
//! so; at 500,000 series every 10 s, a place per chunk grew the head by 80 KiB/s until the flush
//! (git show d87df420:bench/RESULTS.md, "head chunk runs"), and runs of 1, 2, 4 then 8 still by 52 MiB in the soak's
//! 25 minutes after warm-up: such a series opened two more runs in that time, and eight over a
//! two-hour head, against one and five now. The price is the unfilled end of each series' last run,
//! left as a hole in the file: at most 15 chunks' worth (2.5 KiB) per series.

use crate::chunk::{self, ChunkError, OpenChunk};
use argus_model::Sample;
use parking_lot::RwLock;
use smallvec::SmallVec;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of the open chunk's buffer, reserved at its first sample. A chunk is sealed before a sample
/// could overflow it, so the buffer never grows while the chunk file takes writes.
pub const OPEN_BYTES: usize = 160;
/// The most bytes one Gorilla sample can take (a 68-bit timestamp bucket and a 77-bit value), rounded up.
const MAX_SAMPLE_BYTES: usize = 19;
/// At most this many samples in one chunk, as in Prometheus' head.
pub const MAX_CHUNK_SAMPLES: usize = 120;
/// Bits of a run's place that hold its length; the rest hold its offset (16 TiB).
const LEN_BITS: u32 = 20;
const MAX_SEALED_LEN: usize = (1 << LEN_BITS) - 1;
/// Room for one chunk in a run: an open chunk's buffer, its header and trailing bits, and its length
/// prefix.
const SLOT_BYTES: usize = OPEN_BYTES + 8;
/// A run holds at most this many chunks' worth.
const MAX_RUN_SLOTS: usize = 16;
/// Runs whose places a series holds without an allocation of their own.
const INLINE_RUNS: usize = 3;

/// Why a head series could not be read or rewritten.
#[derive(Debug, thiserror::Error)]
pub enum ChunkReadError {
    #[error("reading the head chunk file {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("head chunk at {offset} in {path}: {source}")]
    Corrupt { path: PathBuf, offset: u64, source: ChunkError },
    #[error("open head chunk: {0}")]
    Open(ChunkError),
}

/// Where sealed head chunks go: a file in the head directory, or memory (a head without a directory,
/// as in tests). Bytes once written never change, so a reader holding a run's place can read it
/// after the head has moved on; the file is deleted when the last holder drops it.
pub struct ChunkFile {
    backing: Backing,
    /// Bytes reserved: the end of the last run.
    len: AtomicU64,
    /// Appends refused (a full disk).
    failures: AtomicU64,
}

enum Backing {
    Disk { file: File, path: PathBuf },
    Mem(RwLock<Vec<u8>>),
}

impl ChunkFile {
    /// Creates (truncating) the chunk file `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        let file = File::options().read(true).write(true).create(true).truncate(true).open(path)?;
        Ok(ChunkFile {
            backing: Backing::Disk { file, path: path.to_path_buf() },
            len: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        })
    }

    pub fn in_memory() -> Self {
        ChunkFile {
            backing: Backing::Mem(RwLock::new(Vec::new())),
            len: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }

    /// Bytes reserved for runs (written, or kept for the runs' next chunks).
    pub fn len(&self) -> u64 {
        self.len.load(Ordering::Relaxed)
    }

    /// Appends refused so far (each leaves a chunk open in memory for a while).
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Bytes this file holds in memory (all of them when it has no disk file, else none).
    pub fn memory_bytes(&self) -> usize {
        match &self.backing {
            Backing::Disk { .. } => 0,
            Backing::Mem(m) => m.read().capacity(),
        }
    }

    /// The room to reserve for a series' next run when it already has `runs`: four times the last, up
    /// to [`MAX_RUN_SLOTS`] chunks on disk; none beyond the chunk itself in memory, where a reservation
    /// would be memory held for nothing.
    fn run_bytes(&self, runs: usize) -> usize {
        match self.backing {
            Backing::Disk { .. } => SLOT_BYTES * MAX_RUN_SLOTS.min(1 << (2 * runs.min(8))),
            Backing::Mem(_) => 0,
        }
    }

    /// Starts a run of `room` bytes (at least `bytes.len()`) with `bytes` and returns its offset.
    /// Writes come from one writer at a time (under the head's write lock); on an error nothing is
    /// reserved and the next run reuses the space.
    fn start_run(&self, bytes: &[u8], room: usize) -> io::Result<u64> {
        let off = self.len();
        self.write_at(bytes, off)?;
        self.len.store(off + room.max(bytes.len()) as u64, Ordering::Relaxed);
        Ok(off)
    }

    /// Writes `bytes` at `off`, inside room already reserved (or at the end, for [`Self::start_run`]).
    fn write_at(&self, bytes: &[u8], off: u64) -> io::Result<()> {
        match &self.backing {
            Backing::Disk { file, .. } => file.write_all_at(bytes, off),
            Backing::Mem(m) => {
                let mut m = m.write();
                let off = usize::try_from(off).map_err(io::Error::other)?;
                if m.len() < off + bytes.len() {
                    m.resize(off + bytes.len(), 0);
                }
                m[off..off + bytes.len()].copy_from_slice(bytes);
                Ok(())
            }
        }
    }

    fn read(&self, off: u64, len: usize, buf: &mut Vec<u8>) -> Result<(), ChunkReadError> {
        buf.clear();
        buf.resize(len, 0);
        match &self.backing {
            Backing::Disk { file, path } => {
                file.read_exact_at(buf, off).map_err(|source| ChunkReadError::Io { path: path.clone(), source })
            }
            Backing::Mem(m) => {
                let m = m.read();
                let src = usize::try_from(off).ok().and_then(|o| m.get(o..o + len)).ok_or_else(|| {
                    ChunkReadError::Io { path: self.path().to_path_buf(), source: io::ErrorKind::UnexpectedEof.into() }
                })?;
                buf.copy_from_slice(src);
                Ok(())
            }
        }
    }

    fn path(&self) -> &Path {
        match &self.backing {
            Backing::Disk { path, .. } => path,
            Backing::Mem(_) => Path::new("<memory>"),
        }
    }
}

impl Drop for ChunkFile {
    fn drop(&mut self) {
        if let Backing::Disk { path, .. } = &self.backing
            && let Err(e) = std::fs::remove_file(path)
            && e.kind() != io::ErrorKind::NotFound
        {
            tracing::warn!(path = %path.display(), error = %e, "Could not delete a head chunk file");
        }
    }
}

/// A run of sealed chunks: its first timestamp and its place in the chunk file (offset and the length
/// written so far, packed). The run holds its chunks back to back, each after its length as a uvarint.
#[derive(Clone, Copy, Debug)]
struct Sealed {
    mint: i64,
    place: u64,
}

impl Sealed {
    fn offset(self) -> u64 {
        self.place >> LEN_BITS
    }

    fn len(self) -> usize {
        (self.place & MAX_SEALED_LEN as u64) as usize
    }
}

/// One series' samples, sorted by time, at most one per millisecond. Invariant: when it holds any
/// sample the open chunk holds at least one (a chunk is sealed only when the next sample arrives).
#[derive(Clone, Default)]
pub struct SeriesChunks {
    /// Runs, in time order; the first three inline. A series scraped every 10 s fills its runs of
    /// one chunk and four in its first 20 to 60 minutes and opens a third, which a two-hour head
    /// rarely outgrows. A vector of their own for the places was allocated as the series aged (24
    /// bytes here, 16 to 48 on the heap: the soak's head grew 39 MiB over 25 minutes with a million
    /// series, then 40 MiB as third runs opened with two inline); three inline cost 56 bytes.
    sealed: SmallVec<[Sealed; INLINE_RUNS]>,
    open: OpenChunk,
    count: u32,
    /// Bytes left in the last run's reservation (0 when it takes no more, as after a rewrite).
    room: u32,
}

/// What a change did to a series.
pub struct Put {
    /// Samples added (0 for a replaced or identical sample).
    pub added: usize,
    /// Whether the series changed (the tests check it against what was there).
    #[cfg_attr(not(test), allow(dead_code))]
    pub changed: bool,
    /// The change in the series' chunks, sealed and open (the head keeps their sum).
    pub chunks: i64,
}

impl SeriesChunks {
    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes held in memory.
    pub fn heap_bytes(&self) -> usize {
        let runs = if self.sealed.spilled() { self.sealed.capacity() * std::mem::size_of::<Sealed>() } else { 0 };
        runs + self.open.heap_bytes()
    }

    /// First and last timestamps.
    pub fn time_range(&self) -> Option<(i64, i64)> {
        let (first, last) = self.open.time_range()?;
        Some((self.sealed.first().map_or(first, |c| c.mint), last))
    }

    /// Adds a sample; an earlier time is inserted, and a sample at a time already held replaces it
    /// (an identical one changes nothing). Samples after the last go to the open chunk; others rewrite
    /// the chunks from the one holding their time on, which the head's writers rarely need.
    pub fn put(&mut self, file: &ChunkFile, t: i64, v: f64) -> Result<Put, ChunkReadError> {
        match self.open.last() {
            Some((last, _)) if t < last => {}
            Some((last, lv)) if t == last => {
                if lv.to_bits() == v.to_bits() {
                    return Ok(Put { added: 0, changed: false, chunks: 0 });
                }
            }
            _ => {
                let chunks = i64::from(self.push(file, t, v));
                return Ok(Put { added: 1, changed: true, chunks });
            }
        }
        // Rewrite from the chunk that holds `t` (or the first one after it).
        let from = match self.open.time_range() {
            Some((first, _)) if t >= first => self.sealed.len(),
            _ => self.sealed.partition_point(|c| c.mint <= t).saturating_sub(1),
        };
        let mut samples = Vec::new();
        let rewritten = self.decode_from(file, from, &mut samples)?;
        let mut put = match samples.binary_search_by(|s| s.t.cmp(&t)) {
            Ok(i) if samples[i].same_as(&Sample::new(t, v)) => return Ok(Put { added: 0, changed: false, chunks: 0 }),
            Ok(i) => {
                samples[i] = Sample::new(t, v);
                Put { added: 0, changed: true, chunks: 0 }
            }
            Err(i) => {
                samples.insert(i, Sample::new(t, v));
                Put { added: 1, changed: true, chunks: 0 }
            }
        };
        // The sealed chunks of the runs rewritten and the open chunk go; those written anew come.
        put.chunks = -(rewritten as i64) - 1;
        self.count -= (samples.len() - put.added) as u32;
        if from < self.sealed.len() {
            // The runs from `from` on are rewritten; the room of the run before is unknown now.
            self.sealed.truncate(from);
            self.room = 0;
        }
        self.open.clear();
        for s in samples {
            put.chunks += i64::from(self.push(file, s.t, s.v));
        }
        Ok(put)
    }

    /// Appends a sample after the last, sealing the open chunk first when it is full. When the chunk
    /// file refuses the write (a full disk) the chunk stays open and grows in memory, and sealing is
    /// tried again every 64 samples. True when the sample starts a chunk (the series has one more).
    fn push(&mut self, file: &ChunkFile, t: i64, v: f64) -> bool {
        if self.open.heap_bytes() == 0 {
            self.open = OpenChunk::with_capacity(OPEN_BYTES);
        }
        let full = self.open.len() >= MAX_CHUNK_SAMPLES || self.open.byte_len() + MAX_SAMPLE_BYTES > OPEN_BYTES;
        let retry = self.open.len() <= MAX_CHUNK_SAMPLES || self.open.len().is_multiple_of(64);
        if full && retry {
            self.seal(file);
        }
        // A sealed chunk was counted while open: only a sample into an empty open chunk adds one.
        let starts = self.open.is_empty();
        self.open.append(t, v);
        self.count += 1;
        starts
    }

    fn seal(&mut self, file: &ChunkFile) {
        let Some((mint, _)) = self.open.time_range() else { return };
        let mut chunk = Vec::with_capacity(self.open.byte_len() + 8);
        self.open.seal(&mut chunk);
        let mut record = Vec::with_capacity(chunk.len() + 3);
        crate::bytes::put_uvarint(&mut record, chunk.len() as u64);
        record.extend_from_slice(&chunk);
        let written = match self.sealed.last_mut() {
            Some(run) if record.len() <= self.room as usize => {
                file.write_at(&record, run.offset() + run.len() as u64).map(|()| {
                    run.place += record.len() as u64;
                    self.room -= record.len() as u32;
                })
            }
            _ if record.len() > MAX_SEALED_LEN => return,
            _ => {
                let room = file.run_bytes(self.sealed.len()).max(record.len());
                file.start_run(&record, room).map(|off| {
                    if self.sealed.len() == self.sealed.capacity() {
                        // Grow by half, not double: runs grow fourfold, so a series needs few more.
                        self.sealed.reserve_exact((self.sealed.len() / 2).max(1));
                    }
                    self.sealed.push(Sealed { mint, place: (off << LEN_BITS) | record.len() as u64 });
                    self.room = (room - record.len()) as u32;
                })
            }
        };
        match written {
            Ok(()) => {
                if self.open.heap_bytes() > OPEN_BYTES {
                    // Grown while the file refused writes: give the memory back.
                    self.open = OpenChunk::with_capacity(OPEN_BYTES);
                } else {
                    self.open.clear();
                }
            }
            Err(e) => {
                let n = file.failures.fetch_add(1, Ordering::Relaxed) + 1;
                if n.is_power_of_two() {
                    tracing::warn!(path = %file.path().display(), error = %e, failures = n,
                        "Could not write a head chunk; it stays in memory (the WAL holds its samples)");
                }
            }
        }
    }

    /// Appends every sample from run `from` on (and the open chunk) to `out`; returns the sealed
    /// chunks of those runs.
    fn decode_from(&self, file: &ChunkFile, from: usize, out: &mut Vec<Sample>) -> Result<usize, ChunkReadError> {
        let start = self.sealed.get(from).map(|c| c.mint).or(self.open.time_range().map(|(f, _)| f));
        self.read_counted(file, start.unwrap_or(i64::MIN), i64::MAX, out)
    }

    /// The runs that may hold samples in [mint, maxt], each with the time it ends before: the next
    /// run's start, for the last the open chunk's first sample.
    fn sealed_in(&self, mint: i64, maxt: i64) -> impl Iterator<Item = (Sealed, i64)> + '_ {
        let open_first = self.open.time_range().map_or(i64::MAX, |(f, _)| f);
        self.sealed.iter().enumerate().filter_map(move |(j, c)| {
            let upper = self.sealed.get(j + 1).map_or(open_first, |n| n.mint);
            (c.mint <= maxt && upper > mint).then_some((*c, upper))
        })
    }

    /// Whether the open chunk may hold samples in [mint, maxt].
    fn open_in(&self, mint: i64, maxt: i64) -> bool {
        self.open.time_range().is_some_and(|(first, last)| first <= maxt && last >= mint)
    }

    /// The chunks that may hold samples in [mint, maxt], for reading after the head's lock is let go.
    pub fn slice(&self, mint: i64, maxt: i64) -> SeriesChunks {
        if self.open.is_empty() {
            return SeriesChunks::default();
        }
        let sealed = self.sealed_in(mint, maxt).map(|(c, _)| c).collect();
        let open = if self.open_in(mint, maxt) { self.open.clone() } else { OpenChunk::default() };
        SeriesChunks { sealed, open, count: 0, room: 0 }
    }

    /// Whether any sample lies in [mint, maxt]. Chunks' first times and the last sample answer most
    /// questions; otherwise the candidate chunks are decoded (a chunk that cannot be read counts as a yes).
    pub fn any_in(&self, file: &ChunkFile, mint: i64, maxt: i64) -> bool {
        let Some((first, last)) = self.time_range() else { return false };
        if last < mint || first > maxt {
            return false;
        }
        let inside = |t: i64| t >= mint && t <= maxt;
        if inside(first) || inside(last) || self.sealed.iter().any(|c| inside(c.mint)) {
            return true;
        }
        if self.open.time_range().is_some_and(|(f, _)| inside(f)) {
            return true;
        }
        let mut out = Vec::new();
        self.read(file, mint, maxt, &mut out).map_or(true, |()| !out.is_empty())
    }

    /// Appends the samples in [mint, maxt] to `out`, in time order.
    pub fn read(&self, file: &ChunkFile, mint: i64, maxt: i64, out: &mut Vec<Sample>) -> Result<(), ChunkReadError> {
        self.read_counted(file, mint, maxt, out).map(drop)
    }

    /// Chunks, sealed and open, counted by reading every run (the head keeps the count as it goes).
    #[cfg(test)]
    pub fn count_chunks(&self, file: &ChunkFile) -> usize {
        let sealed = self.read_counted(file, i64::MIN, i64::MAX, &mut Vec::new()).expect("readable runs");
        sealed + usize::from(!self.open.is_empty())
    }

    /// [`SeriesChunks::read`], returning the sealed chunks of the runs it read.
    fn read_counted(
        &self,
        file: &ChunkFile,
        mint: i64,
        maxt: i64,
        out: &mut Vec<Sample>,
    ) -> Result<usize, ChunkReadError> {
        let mut scratch = Scratch::default();
        let mut chunks = 0;
        for (c, upper) in self.sealed_in(mint, maxt) {
            scratch.run(file, c, upper, mint, maxt)?;
            chunks += scratch.chunks.len();
            out.extend(scratch.samples().filter(|s| s.t >= mint && s.t <= maxt));
        }
        if self.open_in(mint, maxt) {
            scratch.open(&self.open).map_err(ChunkReadError::Open)?;
            out.extend(scratch.samples().filter(|s| s.t >= mint && s.t <= maxt));
        }
        Ok(chunks)
    }
}

/// Reused buffers for decoding.
#[derive(Default)]
struct Scratch {
    bytes: Vec<u8>,
    /// The chunks of the run in `bytes`: (start, end, first timestamp).
    chunks: Vec<(usize, usize, i64)>,
    ts: Vec<i64>,
    vals: Vec<f64>,
}

impl Scratch {
    /// Decodes the chunks of run `c` (which ends before `upper`) that may hold samples in [mint, maxt].
    fn run(&mut self, file: &ChunkFile, c: Sealed, upper: i64, mint: i64, maxt: i64) -> Result<(), ChunkReadError> {
        file.read(c.offset(), c.len(), &mut self.bytes)?;
        self.ts.clear();
        self.vals.clear();
        self.chunks.clear();
        let corrupt = |at: usize, source: ChunkError| ChunkReadError::Corrupt {
            path: file.path().to_path_buf(),
            offset: c.offset() + at as u64,
            source,
        };
        let mut r = crate::bytes::Reader::new(&self.bytes);
        while !r.is_empty() {
            let at = r.pos();
            let len = r.uvarint().map_err(|_| corrupt(at, ChunkError::Truncated))?;
            let start = r.pos();
            let chunk = usize::try_from(len)
                .ok()
                .and_then(|len| r.bytes(len).ok())
                .ok_or_else(|| corrupt(at, ChunkError::Truncated))?;
            let first = chunk::first_time(chunk)
                .map_err(|e| corrupt(start, e))?
                .ok_or_else(|| corrupt(start, ChunkError::Corrupt("empty chunk in a run")))?;
            self.chunks.push((start, r.pos(), first));
        }
        for (i, &(start, end, first)) in self.chunks.iter().enumerate() {
            let next = self.chunks.get(i + 1).map_or(upper, |c| c.2);
            if first <= maxt && next > mint {
                chunk::decode_into(&self.bytes[start..end], &mut self.ts, &mut self.vals)
                    .map_err(|e| corrupt(start, e))?;
            }
        }
        Ok(())
    }

    fn open(&mut self, open: &OpenChunk) -> Result<(), ChunkError> {
        self.ts.clear();
        self.vals.clear();
        open.decode_into(&mut self.ts, &mut self.vals)
    }

    fn samples(&self) -> impl Iterator<Item = Sample> + '_ {
        self.ts.iter().zip(&self.vals).map(|(&t, &v)| Sample::new(t, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(s: &SeriesChunks, f: &ChunkFile) -> Vec<(i64, f64)> {
        let mut out = Vec::new();
        s.read(f, i64::MIN, i64::MAX, &mut out).unwrap();
        out.iter().map(|s| (s.t, s.v)).collect()
    }

    #[test]
    fn in_order_samples_seal_into_the_file_and_read_back() {
        let f = ChunkFile::in_memory();
        let mut s = SeriesChunks::default();
        let want: Vec<(i64, f64)> = (0..1000).map(|i| (i * 10_000, (i as f64 * 0.37).sin())).collect();
        for &(t, v) in &want {
            assert_eq!(s.put(&f, t, v).unwrap().added, 1);
        }
        assert_eq!(s.len(), 1000);
        assert!(s.sealed.len() > 8, "{} chunks sealed", s.sealed.len());
        assert!(f.len() > 0);
        assert_eq!(all(&s, &f), want);
        assert_eq!(s.time_range(), Some((0, 9_990_000)));
        // A range read and the slice a reader takes give the same samples.
        let mut part = Vec::new();
        s.slice(1_234_567, 5_000_000).read(&f, 1_234_567, 5_000_000, &mut part).unwrap();
        let expect: Vec<(i64, f64)> =
            want.iter().copied().filter(|&(t, _)| (1_234_567..=5_000_000).contains(&t)).collect();
        assert_eq!(part.iter().map(|s| (s.t, s.v)).collect::<Vec<_>>(), expect);
        assert!(s.any_in(&f, 1_234_567, 1_240_000));
        assert!(!s.any_in(&f, 1_234_567, 1_239_999), "no sample between two 10 s steps");
        // The open chunk's buffer never grew past its reservation.
        assert_eq!(s.open.heap_bytes(), OPEN_BYTES);
    }

    #[test]
    fn a_series_first_runs_take_no_allocation_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let f = ChunkFile::create(&dir.path().join("chunks")).unwrap();
        let mut s = SeriesChunks::default();
        let mut i = 0;
        let mut seal_until = |s: &mut SeriesChunks, runs: usize| {
            while s.sealed.len() < runs {
                s.put(&f, i * 10_000, (i as f64 * 0.37).sin() * 1e3).unwrap();
                i += 1;
            }
        };
        seal_until(&mut s, INLINE_RUNS);
        assert!(!s.sealed.spilled());
        assert_eq!(s.heap_bytes(), OPEN_BYTES, "only the open chunk's buffer");
        seal_until(&mut s, INLINE_RUNS + 1);
        assert!(s.sealed.spilled());
        let places = (INLINE_RUNS + 1) * std::mem::size_of::<Sealed>();
        assert_eq!(s.heap_bytes(), OPEN_BYTES + places, "one more run: room for one more place");
        assert_eq!(std::mem::size_of::<SmallVec<[Sealed; INLINE_RUNS]>>(), 56, "three places and a length");
    }

    #[test]
    fn on_disk_chunks_share_runs_and_a_reader_sees_its_run_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let f = ChunkFile::create(&dir.path().join("chunks")).unwrap();
        let mut s = SeriesChunks::default();
        let noisy = |i: i64| (i as f64 * 0.37).sin() * 1e3;
        let mut want: Vec<(i64, f64)> = Vec::new();
        for i in 0..1000 {
            let (t, v) = (i * 10_000, noisy(i));
            s.put(&f, t, v).unwrap();
            want.push((t, v));
        }
        // About 15 noisy samples a chunk: some 65 chunks in runs of 1, 4, then 16.
        let chunks = 1000 / 16;
        assert!(s.sealed.len() <= 2 + chunks / MAX_RUN_SLOTS + 1, "{} runs", s.sealed.len());
        assert!(s.sealed.len() >= 2 + chunks / MAX_RUN_SLOTS / 2, "{} runs", s.sealed.len());
        assert_eq!(all(&s, &f), want);
        // Every range read, at chunk and run boundaries and inside them, gives exactly its samples.
        for (mint, maxt) in [(0, 0), (5_000, 155_000), (1_234_567, 5_000_000), (9_000_000, 9_990_000), (-5, 10)] {
            let mut got = Vec::new();
            s.read(&f, mint, maxt, &mut got).unwrap();
            let expect: Vec<(i64, f64)> = want.iter().copied().filter(|&(t, _)| (mint..=maxt).contains(&t)).collect();
            assert_eq!(got.iter().map(|s| (s.t, s.v)).collect::<Vec<_>>(), expect, "[{mint}, {maxt}]");
        }
        // A reader's slice, then more chunks sealed into the same last run: the slice reads what it saw.
        let seen = s.slice(i64::MIN, i64::MAX);
        let room = s.room;
        for i in 1000..1040 {
            s.put(&f, i * 10_000, noisy(i)).unwrap();
        }
        assert!(s.room < room, "the next chunks went into the same run");
        let mut got = Vec::new();
        seen.read(&f, i64::MIN, i64::MAX, &mut got).unwrap();
        assert_eq!(got.iter().map(|s| (s.t, s.v)).collect::<Vec<_>>(), want);
        // A rewrite inside a run: the runs from it on are written anew, and the file holds everything.
        s.put(&f, 4_321_000, 7.0).unwrap();
        want.extend((1000..1040).map(|i| (i * 10_000, noisy(i))));
        want.push((4_321_000, 7.0));
        want.sort_by_key(|w| w.0);
        for i in 1040..1100 {
            s.put(&f, i * 10_000, noisy(i)).unwrap();
            want.push((i * 10_000, noisy(i)));
        }
        assert_eq!(all(&s, &f), want);
        assert_eq!(s.len(), want.len());
    }

    #[test]
    fn a_damaged_run_is_an_error_that_names_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chunks");
        let f = ChunkFile::create(&path).unwrap();
        let mut s = SeriesChunks::default();
        for i in 0..100 {
            s.put(&f, i * 10_000, (i as f64 * 0.37).sin()).unwrap();
        }
        let run = s.sealed[1];
        // A record length pointing past the run's end.
        let file = File::options().write(true).open(&path).unwrap();
        file.write_all_at(&[0xff, 0x7f], run.offset()).unwrap();
        let err = s.read(&f, i64::MIN, i64::MAX, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, ChunkReadError::Corrupt { offset, .. } if offset == run.offset()), "{err}");
        assert!(err.to_string().contains("chunks"), "{err}");
    }

    #[test]
    fn out_of_order_inserts_replacements_and_rewrites_match_a_sorted_list() {
        let f = ChunkFile::in_memory();
        let mut s = SeriesChunks::default();
        let mut want = std::collections::BTreeMap::new();
        // A fixed pseudo-random order over 600 times, with repeats and changed values.
        let mut x: u64 = 7;
        for i in 0..3000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let t = ((x >> 33) % 600) as i64 * 1000;
            let v = if i % 3 == 0 { (x % 7) as f64 } else { (t / 1000) as f64 };
            let put = s.put(&f, t, v).unwrap();
            let old = want.insert(t, v);
            assert_eq!(put.added, usize::from(old.is_none()));
            assert_eq!(put.changed, old.is_none_or(|o: f64| o.to_bits() != v.to_bits()));
        }
        assert_eq!(s.len(), want.len());
        assert_eq!(all(&s, &f), want.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn a_refused_write_keeps_the_chunk_open_and_nothing_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let f = ChunkFile::create(&dir.path().join("chunks")).unwrap();
        // A read-only handle stands in for a full disk: every append fails.
        let ro = ChunkFile {
            backing: Backing::Disk {
                file: File::open(dir.path().join("chunks")).unwrap(),
                path: dir.path().join("ro"),
            },
            len: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        };
        let mut s = SeriesChunks::default();
        for i in 0..500 {
            s.put(&ro, i, i as f64).unwrap();
        }
        assert!(s.sealed.is_empty());
        assert!(ro.failures() > 0);
        assert!(s.open.heap_bytes() > OPEN_BYTES, "the open chunk grew in memory");
        assert_eq!(all(&s, &ro).len(), 500);
        // The disk takes writes again: the next seal goes out and the buffer shrinks back.
        for i in 500..600 {
            s.put(&f, i, i as f64).unwrap();
        }
        assert_eq!(s.sealed.len(), 1);
        assert!(!s.sealed.spilled(), "one run, held inline");
        assert_eq!(all(&s, &f), (0..600).map(|i| (i, i as f64)).collect::<Vec<_>>());
        drop(ro);
        drop(f);
        assert!(!dir.path().join("chunks").exists(), "a dropped chunk file is deleted");
    }
}
