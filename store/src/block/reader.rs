//! Reading a block: the index is loaded into memory at open (series, chunk positions, postings);
//! chunks are read from disk on demand.

use super::{BlockError, CHUNKS_MAGIC, ChunkCache, ChunkMeta, EVENTS_MAGIC, FILE_HEADER_LEN, INDEX_MAGIC, Meta, io};
use crate::bytes::{DecodeError, Reader};
use crate::chunk;
use crate::head::SeriesSamples;
use crate::postings::Postings;
use argus_model::{Event, Labels, Matcher, Sample};
use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Decoding buffers reused from one series to the next by a reader.
#[derive(Default)]
pub struct Scratch {
    buf: Vec<u8>,
    ts: Vec<i64>,
    vals: Vec<f64>,
}

pub struct Block {
    pub dir: PathBuf,
    pub meta: Meta,
    series: Vec<(Arc<Labels>, Vec<ChunkMeta>)>,
    postings: Postings,
    chunks: File,
    /// Bytes of the block's files on disk.
    pub size: u64,
    /// Memory its index holds while the block is open (labels, postings, chunk positions), charged
    /// to the store's memory budget.
    pub index_bytes: usize,
}

impl Block {
    pub fn open(dir: &Path) -> Result<Block, BlockError> {
        let meta_path = dir.join("meta.json");
        let meta: Meta = serde_json::from_slice(&fs::read(&meta_path).map_err(io(&meta_path))?)
            .map_err(|e| corrupt(&meta_path, e.to_string()))?;
        let index_path = dir.join("index");
        let data = fs::read(&index_path).map_err(io(&index_path))?;
        let body = checked_body(&index_path, &data, INDEX_MAGIC)?;
        let series = decode_index(body).map_err(|e| corrupt(&index_path, e.to_string()))?;
        let mut postings = Postings::default();
        for (i, (labels, _)) in series.iter().enumerate() {
            postings.add(i as u32, labels);
        }
        let chunks_path = dir.join("chunks");
        let chunks = File::open(&chunks_path).map_err(io(&chunks_path))?;
        let mut magic = [0u8; FILE_HEADER_LEN];
        chunks.read_exact_at(&mut magic, 0).map_err(io(&chunks_path))?;
        if &magic[..4] != CHUNKS_MAGIC {
            return Err(corrupt(&chunks_path, "bad magic".into()));
        }
        let mut size = 0;
        for e in fs::read_dir(dir).map_err(io(dir))? {
            size += e.and_then(|e| e.metadata()).map_err(io(dir))?.len();
        }
        let index_bytes =
            series.iter().map(|(l, c)| crate::head::series_bytes(l) + c.len() * std::mem::size_of::<ChunkMeta>()).sum();
        Ok(Block { dir: dir.to_path_buf(), meta, series, postings, chunks, size, index_bytes })
    }

    pub fn overlaps(&self, mint: i64, maxt: i64) -> bool {
        self.meta.min_time <= maxt && self.meta.max_time >= mint
    }

    /// Ids of the series selected by the matchers that have chunks overlapping [mint, maxt], each
    /// with the number of such chunks (what reading it costs).
    pub fn lookup(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Vec<(u32, usize)> {
        self.postings
            .select(matchers)
            .into_iter()
            .filter_map(|id| {
                let n = self.series[id as usize].1.iter().filter(|c| c.min_time <= maxt && c.max_time >= mint).count();
                (n > 0).then_some((id, n))
            })
            .collect()
    }

    /// The labels of series `id` (an id from [`Block::lookup`]).
    pub fn labels(&self, id: u32) -> &Arc<Labels> {
        &self.series[id as usize].0
    }

    /// Appends the samples of series `id` in [mint, maxt] to `out`, decoding each overlapping chunk
    /// once through `scratch`'s buffers, or taking it from `cache` (and keeping it there).
    pub fn read(
        &self,
        id: u32,
        mint: i64,
        maxt: i64,
        cache: Option<&ChunkCache>,
        scratch: &mut Scratch,
        out: &mut Vec<Sample>,
    ) -> Result<(), BlockError> {
        let Scratch { buf, ts, vals } = scratch;
        let chunks = self.series[id as usize].1.iter().filter(|c| c.min_time <= maxt && c.max_time >= mint);
        if let Some(cache) = cache.filter(|c| c.enabled()) {
            for c in chunks {
                let samples = match cache.get(self.meta.id, c.offset) {
                    Some(s) => s,
                    None => {
                        ts.clear();
                        vals.clear();
                        self.read_chunk(c, buf, ts, vals)?;
                        let s: Arc<[Sample]> = ts.iter().zip(vals.iter()).map(|(t, v)| Sample::new(*t, *v)).collect();
                        cache.insert(self.meta.id, c.offset, s.clone());
                        s
                    }
                };
                // A chunk's samples are in time order, and so are a series' chunks.
                let (a, b) = (samples.partition_point(|s| s.t < mint), samples.partition_point(|s| s.t <= maxt));
                out.extend_from_slice(&samples[a..b.max(a)]);
            }
            return Ok(());
        }
        ts.clear();
        vals.clear();
        for c in chunks {
            self.read_chunk(c, buf, ts, vals)?;
        }
        let (a, b) = (ts.partition_point(|t| *t < mint), ts.partition_point(|t| *t <= maxt));
        out.extend(ts[a..b.max(a)].iter().zip(&vals[a..b.max(a)]).map(|(t, v)| Sample::new(*t, *v)));
        Ok(())
    }

    /// Series selected by the matchers that have a chunk overlapping [mint, maxt].
    pub fn select_labels(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Vec<Arc<Labels>> {
        self.lookup(matchers, mint, maxt).into_iter().map(|(id, _)| self.labels(id).clone()).collect()
    }

    pub fn postings(&self) -> &Postings {
        &self.postings
    }

    fn read_chunk(
        &self,
        c: &ChunkMeta,
        buf: &mut Vec<u8>,
        ts: &mut Vec<i64>,
        vals: &mut Vec<f64>,
    ) -> Result<(), BlockError> {
        let path = || self.dir.join("chunks");
        buf.resize(c.len as usize, 0);
        self.chunks.read_exact_at(buf, c.offset).map_err(|e| BlockError::Io { path: path(), source: e })?;
        check_crc(&path(), c, buf)?;
        chunk::decode_into(buf, ts, vals).map_err(|e| corrupt(&path(), format!("chunk at {}: {e}", c.offset)))?;
        Ok(())
    }

    /// Every series with all its samples, for compaction.
    pub fn all_series(&self) -> Result<Vec<SeriesSamples>, BlockError> {
        let path = self.dir.join("chunks");
        let data = fs::read(&path).map_err(io(&path))?;
        let (mut ts, mut vals) = (Vec::new(), Vec::new());
        let mut out = Vec::with_capacity(self.series.len());
        for (labels, chunks) in &self.series {
            let mut samples = Vec::new();
            for c in chunks {
                let end = c.offset as usize + c.len as usize;
                let bytes = data
                    .get(c.offset as usize..end)
                    .ok_or_else(|| corrupt(&path, format!("chunk at {} past end", c.offset)))?;
                check_crc(&path, c, bytes)?;
                ts.clear();
                vals.clear();
                chunk::decode_into(bytes, &mut ts, &mut vals).map_err(|e| corrupt(&path, e.to_string()))?;
                samples.extend(ts.iter().zip(&vals).map(|(t, v)| Sample::new(*t, *v)));
            }
            out.push((labels.clone(), samples));
        }
        Ok(out)
    }

    /// The block's events in [mint, maxt] whose labels the matchers select.
    pub fn events(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<Vec<Event>, BlockError> {
        if self.meta.events == 0 || !self.overlaps(mint, maxt) {
            return Ok(Vec::new());
        }
        Ok(self
            .all_events()?
            .into_iter()
            .filter(|e| e.t >= mint && e.t <= maxt && crate::matches(matchers, &e.labels))
            .collect())
    }

    pub fn all_events(&self) -> Result<Vec<Event>, BlockError> {
        let path = self.dir.join("events");
        let data = fs::read(&path).map_err(io(&path))?;
        let body = checked_body(&path, &data, EVENTS_MAGIC)?;
        decode_events(body).map_err(|e| corrupt(&path, e.to_string()))
    }
}

fn check_crc(path: &Path, c: &ChunkMeta, bytes: &[u8]) -> Result<(), BlockError> {
    if crc32fast::hash(bytes) != c.crc {
        return Err(corrupt(path, format!("chunk at {}: checksum mismatch", c.offset)));
    }
    Ok(())
}

fn corrupt(path: &Path, reason: String) -> BlockError {
    BlockError::Corrupt { path: path.to_path_buf(), reason }
}

/// Checks magic, version and the trailing CRC32; returns the bytes between header and CRC.
fn checked_body<'a>(path: &Path, data: &'a [u8], magic: &[u8; 4]) -> Result<&'a [u8], BlockError> {
    if data.len() < FILE_HEADER_LEN + 4 || &data[..4] != magic {
        return Err(corrupt(path, "bad magic or truncated".into()));
    }
    if data[4] != super::FORMAT_VERSION {
        return Err(corrupt(path, format!("unknown format version {}", data[4])));
    }
    let (body, crc) = data[FILE_HEADER_LEN..].split_at(data.len() - FILE_HEADER_LEN - 4);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(corrupt(path, "checksum mismatch".into()));
    }
    Ok(body)
}

/// Each series' labels and chunk positions.
type IndexEntries = Vec<(Arc<Labels>, Vec<ChunkMeta>)>;

fn decode_index(body: &[u8]) -> Result<IndexEntries, DecodeError> {
    let mut r = Reader::new(body);
    let nsym = r.uvarint()? as usize;
    let mut symbols = Vec::with_capacity(nsym.min(body.len()));
    for _ in 0..nsym {
        symbols.push(r.str()?);
    }
    let sym = |r: &mut Reader<'_>| -> Result<&str, DecodeError> {
        let i = r.uvarint()? as usize;
        symbols.get(i).copied().ok_or(DecodeError { what: "symbol out of range", offset: r.pos() })
    };
    let nseries = r.uvarint()? as usize;
    let mut series = Vec::with_capacity(nseries.min(body.len()));
    for _ in 0..nseries {
        let nl = r.uvarint()? as usize;
        let mut pairs = Vec::with_capacity(nl.min(256));
        for _ in 0..nl {
            pairs.push((sym(&mut r)?, sym(&mut r)?));
        }
        let nc = r.uvarint()? as usize;
        let mut chunks = Vec::with_capacity(nc.min(body.len()));
        for _ in 0..nc {
            let min_time = r.varint()?;
            let max_time = min_time.wrapping_add(r.uvarint()? as i64);
            let offset = r.uvarint()?;
            let len = u32::try_from(r.uvarint()?)
                .map_err(|_| DecodeError { what: "chunk length over u32", offset: r.pos() })?;
            let crc = r.u32_le()?;
            chunks.push(ChunkMeta { min_time, max_time, offset, len, crc });
        }
        series.push((Arc::new(Labels::from_pairs(pairs)), chunks));
    }
    Ok(series)
}

fn decode_events(body: &[u8]) -> Result<Vec<Event>, DecodeError> {
    let mut r = Reader::new(body);
    let n = r.uvarint()? as usize;
    let mut out = Vec::with_capacity(n.min(body.len()));
    for _ in 0..n {
        let nl = r.uvarint()? as usize;
        let mut pairs = Vec::with_capacity(nl.min(256));
        for _ in 0..nl {
            pairs.push((r.str()?, r.str()?));
        }
        let t = r.varint()?;
        let text = r.str()?.to_string();
        out.push(Event { labels: Labels::from_pairs(pairs), t, text });
    }
    Ok(out)
}
