//! Writing a block: chunks first, then the index and events, then `meta.json`; all into a `.tmp`
//! directory that is renamed into place only once every file is synced, so a crash never leaves a
//! half-written block that looks whole.

use super::{BlockError, CHUNKS_MAGIC, ChunkMeta, EVENTS_MAGIC, INDEX_MAGIC, MAX_CHUNK_SAMPLES, Meta, file_header, io};
use crate::bytes::{put_str, put_uvarint, put_varint};
use crate::chunk::{self, Encoding};
use argus_model::{Event, Labels, Sample};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Builds one block from series handed over in any order.
pub struct BlockWriter {
    encoding: Encoding,
    series: Vec<(Arc<Labels>, Vec<ChunkMeta>)>,
    chunks: Vec<u8>,
    events: Vec<Event>,
    min_time: i64,
    max_time: i64,
    samples: u64,
    nchunks: u64,
    ts: Vec<i64>,
    vals: Vec<f64>,
}

impl BlockWriter {
    pub fn new(encoding: Encoding) -> Self {
        BlockWriter {
            encoding,
            series: Vec::new(),
            chunks: file_header(CHUNKS_MAGIC).to_vec(),
            events: Vec::new(),
            min_time: i64::MAX,
            max_time: i64::MIN,
            samples: 0,
            nchunks: 0,
            ts: Vec::new(),
            vals: Vec::new(),
        }
    }

    /// Adds one series. **Invariant:** samples are sorted by time without duplicates, and each series
    /// is added once.
    pub fn add_series(&mut self, labels: Arc<Labels>, samples: &[Sample]) {
        if samples.is_empty() {
            return;
        }
        let mut metas = Vec::with_capacity(samples.len().div_ceil(MAX_CHUNK_SAMPLES));
        for part in samples.chunks(MAX_CHUNK_SAMPLES) {
            self.ts.clear();
            self.vals.clear();
            self.ts.extend(part.iter().map(|s| s.t));
            self.vals.extend(part.iter().map(|s| s.v));
            let offset = self.chunks.len() as u64;
            chunk::encode(self.encoding, &self.ts, &self.vals, &mut self.chunks);
            let (first, last) = (part[0].t, part[part.len() - 1].t);
            let crc = crc32fast::hash(&self.chunks[offset as usize..]);
            metas.push(ChunkMeta {
                min_time: first,
                max_time: last,
                offset,
                len: (self.chunks.len() as u64 - offset) as u32,
                crc,
            });
            self.min_time = self.min_time.min(first);
            self.max_time = self.max_time.max(last);
            self.nchunks += 1;
        }
        self.samples += samples.len() as u64;
        self.series.push((labels, metas));
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

    /// Writes the block as `dir/<name>` and returns its path and meta.
    pub fn finish(mut self, blocks_dir: &Path, lineage: Lineage) -> Result<(PathBuf, Meta), BlockError> {
        self.series.sort_by(|a, b| a.0.cmp(&b.0));
        self.events.sort_by(Event::cmp_by_time);
        self.events.dedup();
        let meta = Meta {
            version: super::FORMAT_VERSION,
            id: lineage.id,
            seq: lineage.seq,
            min_time: self.min_time,
            max_time: self.max_time,
            series: self.series.len() as u64,
            samples: self.samples,
            chunks: self.nchunks,
            events: self.events.len() as u64,
            level: lineage.level,
            sources: lineage.sources,
        };
        let name = block_name(meta.id);
        let tmp = blocks_dir.join(format!("{name}.tmp"));
        let dst = blocks_dir.join(&name);
        if tmp.exists() {
            fs::remove_dir_all(&tmp).map_err(io(&tmp))?;
        }
        let written = (|| {
            fs::create_dir_all(&tmp).map_err(io(&tmp))?;
            write_synced(&tmp.join("chunks"), &self.chunks)?;
            write_synced(&tmp.join("index"), &encode_index(&self.series))?;
            write_synced(&tmp.join("events"), &encode_events(&self.events))?;
            let json = serde_json::to_vec_pretty(&meta)
                .map_err(|e| BlockError::Corrupt { path: tmp.clone(), reason: e.to_string() })?;
            write_synced(&tmp.join("meta.json"), &json)?;
            sync_dir(&tmp)
        })();
        if let Err(e) = written {
            // A full disk: the partial block is not left taking the space that is short.
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
        fs::rename(&tmp, &dst).map_err(io(&dst))?;
        sync_dir(blocks_dir)?;
        Ok((dst, meta))
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

/// Writes samples grouped by series (sorted, deduplicated) and events as one block, if non-empty.
pub fn write_block(
    blocks_dir: &Path,
    encoding: Encoding,
    lineage: Lineage,
    series: impl IntoIterator<Item = (Arc<Labels>, Vec<Sample>)>,
    events: Vec<Event>,
) -> Result<Option<(PathBuf, Meta)>, BlockError> {
    let mut w = BlockWriter::new(encoding);
    for (labels, samples) in series {
        w.add_series(labels, &samples);
    }
    w.add_events(events);
    if w.is_empty() {
        return Ok(None);
    }
    w.finish(blocks_dir, lineage).map(Some)
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

/// Symbols are interned so that each label name and value is stored once per block.
fn encode_index(series: &[(Arc<Labels>, Vec<ChunkMeta>)]) -> Vec<u8> {
    let mut symbols: BTreeMap<&str, u64> = BTreeMap::new();
    for (labels, _) in series {
        for l in labels.iter() {
            symbols.insert(&l.name, 0);
            symbols.insert(&l.value, 0);
        }
    }
    for (i, v) in symbols.values_mut().enumerate() {
        *v = i as u64;
    }
    let mut out = file_header(INDEX_MAGIC).to_vec();
    put_uvarint(&mut out, symbols.len() as u64);
    for s in symbols.keys() {
        put_str(&mut out, s);
    }
    put_uvarint(&mut out, series.len() as u64);
    for (labels, chunks) in series {
        put_uvarint(&mut out, labels.len() as u64);
        for l in labels.iter() {
            put_uvarint(&mut out, symbols[l.name.as_str()]);
            put_uvarint(&mut out, symbols[l.value.as_str()]);
        }
        put_uvarint(&mut out, chunks.len() as u64);
        for c in chunks {
            put_varint(&mut out, c.min_time);
            put_uvarint(&mut out, (c.max_time - c.min_time) as u64);
            put_uvarint(&mut out, c.offset);
            put_uvarint(&mut out, u64::from(c.len));
            out.extend_from_slice(&c.crc.to_le_bytes());
        }
    }
    let crc = crc32fast::hash(&out[super::FILE_HEADER_LEN..]);
    out.extend_from_slice(&crc.to_le_bytes());
    out
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
