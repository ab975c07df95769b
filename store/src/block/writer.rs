//! Writing a block: chunks first, then the index and events, then `meta.json`; all into a `.tmp`
//! directory that is renamed into place only once every file is synced, so a crash never leaves a
//! half-written block that looks whole.

use super::{
    BlockError, CHUNKS_MAGIC, ChunkMeta, EVENTS_MAGIC, FILE_HEADER_LEN, INDEX_MAGIC, INDEX_VERSION, MAX_CHUNK_SAMPLES,
    Meta, file_header, io,
};
use crate::bytes::{put_str, put_uvarint, put_varint};
use crate::chunk::{self, Encoding};
use argus_model::{Event, Labels, Sample};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Builds one block from series handed over in any order. Chunks go to the block's `chunks` file
/// as they are encoded, so a writer holds only each series' labels and chunk positions, never its
/// samples; dropped unfinished, it removes its directory.
pub struct BlockWriter {
    encoding: Encoding,
    lineage: Lineage,
    blocks_dir: PathBuf,
    tmp: PathBuf,
    series: Vec<(Arc<Labels>, Vec<ChunkMeta>)>,
    chunks: BufWriter<File>,
    chunks_len: u64,
    events: Vec<Event>,
    min_time: i64,
    max_time: i64,
    samples: u64,
    nchunks: u64,
    buf: Vec<u8>,
    ts: Vec<i64>,
    vals: Vec<f64>,
    finished: bool,
}

impl BlockWriter {
    /// Starts block `lineage.id` in `blocks_dir/b-<id>.tmp/`.
    pub fn new(blocks_dir: &Path, encoding: Encoding, lineage: Lineage) -> Result<Self, BlockError> {
        let tmp = blocks_dir.join(format!("{}.tmp", block_name(lineage.id)));
        if tmp.exists() {
            fs::remove_dir_all(&tmp).map_err(io(&tmp))?;
        }
        fs::create_dir_all(&tmp).map_err(io(&tmp))?;
        let path = tmp.join("chunks");
        let created = File::create(&path).map_err(io(&path)).and_then(|f| {
            let mut w = BufWriter::with_capacity(1 << 20, f);
            w.write_all(&file_header(CHUNKS_MAGIC)).map_err(io(&path))?;
            Ok(w)
        });
        let chunks = match created {
            Ok(w) => w,
            Err(e) => {
                let _ = fs::remove_dir_all(&tmp);
                return Err(e);
            }
        };
        Ok(BlockWriter {
            encoding,
            lineage,
            blocks_dir: blocks_dir.to_path_buf(),
            tmp,
            series: Vec::new(),
            chunks,
            chunks_len: FILE_HEADER_LEN as u64,
            events: Vec::new(),
            min_time: i64::MAX,
            max_time: i64::MIN,
            samples: 0,
            nchunks: 0,
            buf: Vec::new(),
            ts: Vec::new(),
            vals: Vec::new(),
            finished: false,
        })
    }

    /// Adds one series. **Invariant:** samples are sorted by time without duplicates, and each series
    /// is added once.
    pub fn add_series(&mut self, labels: Arc<Labels>, samples: &[Sample]) -> Result<(), BlockError> {
        if samples.is_empty() {
            return Ok(());
        }
        let mut metas = Vec::with_capacity(samples.len().div_ceil(MAX_CHUNK_SAMPLES));
        for part in samples.chunks(MAX_CHUNK_SAMPLES) {
            self.ts.clear();
            self.vals.clear();
            self.ts.extend(part.iter().map(|s| s.t));
            self.vals.extend(part.iter().map(|s| s.v));
            self.buf.clear();
            chunk::encode(self.encoding, &self.ts, &self.vals, &mut self.buf);
            let path = || self.tmp.join("chunks");
            self.chunks.write_all(&self.buf).map_err(|e| BlockError::Io { path: path(), source: e })?;
            let (first, last) = (part[0].t, part[part.len() - 1].t);
            metas.push(ChunkMeta {
                min_time: first,
                max_time: last,
                offset: self.chunks_len,
                len: self.buf.len() as u32,
                crc: crc32fast::hash(&self.buf),
            });
            self.chunks_len += self.buf.len() as u64;
            self.min_time = self.min_time.min(first);
            self.max_time = self.max_time.max(last);
            self.nchunks += 1;
        }
        self.samples += samples.len() as u64;
        self.series.push((labels, metas));
        Ok(())
    }

    pub fn add_events(&mut self, events: impl IntoIterator<Item = Event>) {
        for e in events {
            self.min_time = self.min_time.min(e.t);
            self.max_time = self.max_time.max(e.t);
            self.events.push(e);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty() && self.events.is_empty()
    }

    /// Writes the index, events and meta, syncs them and renames the block into place as
    /// `blocks_dir/b-<id>`; returns its path and meta.
    pub fn finish(mut self) -> Result<(PathBuf, Meta), BlockError> {
        let mut series = std::mem::take(&mut self.series);
        series.sort_by(|a, b| a.0.cmp(&b.0));
        let mut events = std::mem::take(&mut self.events);
        events.sort_by(Event::cmp_by_time);
        events.dedup();
        let lineage = self.lineage.clone();
        let meta = Meta {
            version: super::FORMAT_VERSION,
            id: lineage.id,
            seq: lineage.seq,
            min_time: self.min_time,
            max_time: self.max_time,
            series: series.len() as u64,
            samples: self.samples,
            chunks: self.nchunks,
            events: events.len() as u64,
            level: lineage.level,
            sources: lineage.sources,
        };
        let tmp = self.tmp.clone();
        let chunks_path = tmp.join("chunks");
        self.chunks.flush().map_err(io(&chunks_path))?;
        self.chunks.get_ref().sync_all().map_err(io(&chunks_path))?;
        write_index(&tmp.join("index"), &series)?;
        write_synced(&tmp.join("events"), &encode_events(&events))?;
        let json = serde_json::to_vec_pretty(&meta)
            .map_err(|e| BlockError::Corrupt { path: tmp.clone(), reason: e.to_string() })?;
        write_synced(&tmp.join("meta.json"), &json)?;
        sync_dir(&tmp)?;
        let dst = self.blocks_dir.join(block_name(meta.id));
        fs::rename(&tmp, &dst).map_err(io(&dst))?;
        self.finished = true;
        sync_dir(&self.blocks_dir)?;
        Ok((dst, meta))
    }
}

impl Drop for BlockWriter {
    /// An unfinished block (an error, a full disk) does not keep the space it took.
    fn drop(&mut self) {
        if !self.finished {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

/// Block directories are named by a unique id, in creation order.
pub fn block_name(id: u64) -> String {
    format!("b-{id:012}")
}

/// Where a new block stands among the others (see `Meta`).
#[derive(Debug, Clone)]
pub struct Lineage {
    pub id: u64,
    pub seq: u64,
    pub level: u32,
    pub sources: Vec<u64>,
}

impl Lineage {
    /// A block cut from the head: its own priority, level 0, no sources.
    pub fn fresh(id: u64) -> Self {
        Lineage { id, seq: id, level: 0, sources: Vec::new() }
    }
}

/// Writes samples grouped by series (sorted, deduplicated) and events as one block, if non-empty.
pub fn write_block(
    blocks_dir: &Path,
    encoding: Encoding,
    lineage: Lineage,
    series: impl IntoIterator<Item = (Arc<Labels>, Vec<Sample>)>,
    events: Vec<Event>,
) -> Result<Option<(PathBuf, Meta)>, BlockError> {
    let mut w = BlockWriter::new(blocks_dir, encoding, lineage)?;
    for (labels, samples) in series {
        w.add_series(labels, &samples)?;
    }
    w.add_events(events);
    if w.is_empty() {
        return Ok(None);
    }
    w.finish().map(Some)
}

fn write_synced(path: &Path, data: &[u8]) -> Result<(), BlockError> {
    let f = File::create(path).map_err(io(path))?;
    let mut w = BufWriter::new(f);
    w.write_all(data).map_err(io(path))?;
    let f = w.into_inner().map_err(|e| BlockError::Io { path: path.to_path_buf(), source: e.into_error() })?;
    f.sync_all().map_err(io(path))
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), BlockError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// A file written through a buffer, with the CRC32 of everything after its header and its length so
/// far (the offsets the index records).
struct Sink {
    w: BufWriter<File>,
    crc: crc32fast::Hasher,
    pos: u64,
    path: PathBuf,
}

impl Sink {
    fn create(path: &Path, magic: &[u8; 4], version: u8) -> Result<Sink, BlockError> {
        let f = File::create(path).map_err(io(path))?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        let mut header = file_header(magic);
        header[4] = version;
        w.write_all(&header).map_err(io(path))?;
        Ok(Sink { w, crc: crc32fast::Hasher::new(), pos: FILE_HEADER_LEN as u64, path: path.to_path_buf() })
    }

    fn put(&mut self, b: &[u8]) -> Result<(), BlockError> {
        self.w.write_all(b).map_err(io(&self.path))?;
        self.crc.update(b);
        self.pos += b.len() as u64;
        Ok(())
    }

    /// Appends the CRC and syncs the file.
    fn finish(mut self) -> Result<(), BlockError> {
        let crc = self.crc.clone().finalize();
        self.w.write_all(&crc.to_le_bytes()).map_err(io(&self.path))?;
        let f = self.w.into_inner().map_err(|e| BlockError::Io { path: self.path.clone(), source: e.into_error() })?;
        f.sync_all().map_err(io(&self.path))
    }
}

fn too_large(path: &Path, what: &str) -> BlockError {
    BlockError::Corrupt { path: path.to_path_buf(), reason: format!("cannot write index: {what}") }
}

/// Writes a block index (docs/format/block.md, version 2) for series sorted by labels: symbols, series
/// records and their offsets, postings lists, the label-pair and label-name tables that find them, and
/// a table of contents, all read in place by [`super::Block`].
pub(super) fn write_index(path: &Path, series: &[(Arc<Labels>, Vec<ChunkMeta>)]) -> Result<(), BlockError> {
    let nseries = u32::try_from(series.len()).map_err(|_| too_large(path, "more than 2^32 series"))?;
    // Every label name and value once, sorted: a reference is the string's offset in the section, so
    // references sort as their strings do.
    let mut symbols: BTreeMap<&str, u32> = BTreeMap::new();
    for (labels, _) in series {
        for l in labels.iter() {
            symbols.insert(&l.name, 0);
            symbols.insert(&l.value, 0);
        }
    }
    let mut out = Sink::create(path, INDEX_MAGIC, INDEX_VERSION)?;
    let symbols_off = out.pos;
    let mut buf = Vec::new();
    for (s, r) in symbols.iter_mut() {
        *r = u32::try_from(out.pos - symbols_off).map_err(|_| too_large(path, "symbols over 4 GiB"))?;
        buf.clear();
        put_str(&mut buf, s);
        out.put(&buf)?;
    }
    let mut offsets = Vec::with_capacity(series.len());
    let mut postings: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
    for (id, (labels, chunks)) in (0..nseries).zip(series) {
        offsets.push(out.pos);
        buf.clear();
        put_uvarint(&mut buf, labels.len() as u64);
        for l in labels.iter() {
            let (n, v) = (symbols[l.name.as_str()], symbols[l.value.as_str()]);
            put_uvarint(&mut buf, u64::from(n));
            put_uvarint(&mut buf, u64::from(v));
            postings.entry((n, v)).or_default().push(id);
        }
        put_uvarint(&mut buf, chunks.len() as u64);
        for c in chunks {
            put_varint(&mut buf, c.min_time);
            put_uvarint(&mut buf, c.max_time.wrapping_sub(c.min_time) as u64);
            put_uvarint(&mut buf, c.offset);
            put_uvarint(&mut buf, u64::from(c.len));
            buf.extend_from_slice(&c.crc.to_le_bytes());
        }
        out.put(&buf)?;
    }
    let series_table = out.pos;
    for part in offsets.chunks(8192) {
        buf.clear();
        part.iter().for_each(|o| buf.extend_from_slice(&o.to_le_bytes()));
        out.put(&buf)?;
    }
    drop(offsets);
    let mut lists = Vec::with_capacity(postings.len());
    for ids in postings.values() {
        lists.push(out.pos);
        buf.clear();
        ids.iter().for_each(|id| buf.extend_from_slice(&id.to_le_bytes()));
        out.put(&buf)?;
    }
    // Pairs grouped by name, values ascending; each name's run found through the names table.
    let pairs_off = out.pos;
    let mut names: Vec<(u32, u32, u32)> = Vec::new();
    for (i, (((n, v), ids), list)) in (0u32..).zip(postings.iter().zip(&lists)) {
        match names.last_mut() {
            Some((name, _, count)) if name == n => *count += 1,
            _ => names.push((*n, i, 1)),
        }
        buf.clear();
        buf.extend_from_slice(&v.to_le_bytes());
        buf.extend_from_slice(&(ids.len() as u32).to_le_bytes());
        buf.extend_from_slice(&list.to_le_bytes());
        out.put(&buf)?;
    }
    let names_off = out.pos;
    for (n, first, count) in &names {
        buf.clear();
        for x in [n, first, count] {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        out.put(&buf)?;
    }
    buf.clear();
    let toc = [
        symbols_off,
        series_table,
        u64::from(nseries),
        pairs_off,
        postings.len() as u64,
        names_off,
        names.len() as u64,
    ];
    toc.iter().for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
    out.put(&buf)?;
    out.finish()
}

fn encode_events(events: &[Event]) -> Vec<u8> {
    let mut out = file_header(EVENTS_MAGIC).to_vec();
    put_uvarint(&mut out, events.len() as u64);
    for e in events {
        put_uvarint(&mut out, e.labels.len() as u64);
        for l in &e.labels {
            put_str(&mut out, &l.name);
            put_str(&mut out, &l.value);
        }
        put_varint(&mut out, e.t);
        put_str(&mut out, &e.text);
    }
    let crc = crc32fast::hash(&out[super::FILE_HEADER_LEN..]);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}
