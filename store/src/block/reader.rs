//! Reading a block. The index is read in place from its mapped file — series records, chunk
//! positions, postings and the tables that find them (docs/format/block.md) — so an open block holds
//! next to nothing on the heap however many series it has; chunks are read from disk on demand.

use super::{
    BlockError, CHUNKS_MAGIC, Cached, ChunkCache, ChunkMeta, EVENTS_MAGIC, FILE_HEADER_LEN, FORMAT_VERSION,
    INDEX_MAGIC, INDEX_TOC_LEN, INDEX_VERSION, Meta, io, writer,
};
use crate::bytes::{DecodeError, Reader};
use crate::chunk;
use crate::postings;
use argus_model::{Event, Labels, MatchOp, Matcher, Sample};
use memmap2::Mmap;
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Decoding buffers reused from one series to the next by a reader.
#[derive(Default)]
pub struct Scratch {
    buf: Vec<u8>,
    ts: Vec<i64>,
    vals: Vec<f64>,
    metas: Vec<ChunkMeta>,
}

pub struct Block {
    pub dir: PathBuf,
    pub meta: Meta,
    index: Index,
    chunks: File,
    /// Bytes of the chunks file: no chunk may reach past it.
    chunks_len: u64,
    /// Bytes of the block's files on disk.
    pub size: u64,
}

impl Block {
    /// Opens a block: checks its index's CRC (read through, not mapped, so that opening leaves none
    /// of it resident) and maps it. A version 1 index is first rewritten as version 2.
    pub fn open(dir: &Path) -> Result<Block, BlockError> {
        let meta_path = dir.join("meta.json");
        let meta: Meta = serde_json::from_slice(&fs::read(&meta_path).map_err(io(&meta_path))?)
            .map_err(|e| corrupt(&meta_path, e.to_string()))?;
        let index_path = dir.join("index");
        let index = match Index::open(&index_path)? {
            Some(index) => index,
            None => {
                upgrade_index(&index_path)?;
                Index::open(&index_path)?.ok_or_else(|| corrupt(&index_path, "still version 1 after rewrite".into()))?
            }
        };
        let chunks_path = dir.join("chunks");
        let chunks = File::open(&chunks_path).map_err(io(&chunks_path))?;
        let mut magic = [0u8; FILE_HEADER_LEN];
        chunks.read_exact_at(&mut magic, 0).map_err(io(&chunks_path))?;
        if &magic[..4] != CHUNKS_MAGIC {
            return Err(corrupt(&chunks_path, "bad magic".into()));
        }
        let chunks_len = chunks.metadata().map_err(io(&chunks_path))?.len();
        let mut size = 0;
        for e in fs::read_dir(dir).map_err(io(dir))? {
            size += e.and_then(|e| e.metadata()).map_err(io(dir))?.len();
        }
        Ok(Block { dir: dir.to_path_buf(), meta, index, chunks, chunks_len, size })
    }

    pub fn overlaps(&self, mint: i64, maxt: i64) -> bool {
        self.meta.min_time <= maxt && self.meta.max_time >= mint
    }

    /// How many series the block holds; their ids are `0..series_count()`, in label order.
    pub fn series_count(&self) -> u32 {
        self.index.toc.nseries
    }

    /// Ids of the series selected by the matchers that have chunks overlapping [mint, maxt], each
    /// with the number of such chunks (what reading it costs).
    pub fn lookup(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<Vec<(u32, usize)>, BlockError> {
        let ix = &self.index;
        let ids = ix.select(matchers).map_err(|e| ix.corrupt(e))?;
        let mut metas = Vec::new();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            ix.chunks(id, &mut metas).map_err(|e| ix.corrupt(e))?;
            let n = metas.iter().filter(|c| c.min_time <= maxt && c.max_time >= mint).count();
            if n > 0 {
                out.push((id, n));
            }
        }
        Ok(out)
    }

    /// The labels of series `id` (an id from [`Block::lookup`]), decoded from the index.
    pub fn labels(&self, id: u32) -> Result<Labels, BlockError> {
        self.index.labels(id).map_err(|e| self.index.corrupt(e))
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
        let Scratch { buf, ts, vals, metas } = scratch;
        self.index.chunks(id, metas).map_err(|e| self.index.corrupt(e))?;
        let chunks = metas.iter().filter(|c| c.min_time <= maxt && c.max_time >= mint);
        if let Some(cache) = cache.filter(|c| c.enabled()) {
            for c in chunks {
                let chunk = match cache.get(self.meta.id, c.offset) {
                    Some(chunk) => chunk,
                    None => {
                        ts.clear();
                        vals.clear();
                        self.read_chunk(c, buf, ts, vals)?;
                        let chunk = Arc::new(Cached::new(ts, vals));
                        cache.insert(self.meta.id, c.offset, chunk.clone());
                        chunk
                    }
                };
                // A chunk's samples are in time order, and so are a series' chunks.
                chunk.append_range(mint, maxt, out);
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
    pub fn select_labels(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<Vec<Labels>, BlockError> {
        self.lookup(matchers, mint, maxt)?.into_iter().map(|(id, _)| self.labels(id)).collect()
    }

    /// Every label name in the block, sorted.
    pub fn label_names(&self) -> Result<Vec<String>, BlockError> {
        self.index.label_names().map_err(|e| self.index.corrupt(e))
    }

    /// Every value of label `name` in the block, sorted.
    pub fn label_values(&self, name: &str) -> Result<Vec<String>, BlockError> {
        self.index.label_values(name).map_err(|e| self.index.corrupt(e))
    }

    fn read_chunk(
        &self,
        c: &ChunkMeta,
        buf: &mut Vec<u8>,
        ts: &mut Vec<i64>,
        vals: &mut Vec<f64>,
    ) -> Result<(), BlockError> {
        let path = || self.dir.join("chunks");
        // Checked before the buffer is sized: a damaged length must not become a huge allocation.
        if c.offset.checked_add(u64::from(c.len)).is_none_or(|end| end > self.chunks_len) {
            let reason =
                format!("chunk at {} of {} bytes runs past the file's {} bytes", c.offset, c.len, self.chunks_len);
            return Err(corrupt(&path(), reason));
        }
        buf.resize(c.len as usize, 0);
        self.chunks.read_exact_at(buf, c.offset).map_err(|e| BlockError::Io { path: path(), source: e })?;
        check_crc(&path(), c, buf)?;
        chunk::decode_into(buf, ts, vals).map_err(|e| corrupt(&path(), format!("chunk at {}: {e}", c.offset)))?;
        Ok(())
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
        let body = checked_body(&path, &data, EVENTS_MAGIC, FORMAT_VERSION)?;
        decode_events(body).map_err(|e| corrupt(&path, e.to_string()))
    }
}

/// Where the sections of a version 2 index start (offsets in the file) and how many entries each
/// fixed-width table has; read from the table of contents at the end.
#[derive(Debug, Clone, Copy)]
struct Toc {
    symbols: usize,
    series_table: usize,
    nseries: u32,
    pairs: usize,
    npairs: u32,
    names: usize,
    nnames: u32,
    /// Where the table of contents starts: every reference points before it.
    end: usize,
}

/// Bytes of one entry of the series table (u64 offset), the pairs table (value u32, count u32,
/// postings offset u64) and the names table (name u32, first pair u32, pairs u32).
const SERIES_ENTRY: usize = 8;
const PAIR_ENTRY: usize = 16;
const NAME_ENTRY: usize = 12;

/// A version 2 index, mapped. Every read is bounds-checked: a damaged file gives an error naming the
/// offset, never a panic.
struct Index {
    path: PathBuf,
    map: Mmap,
    toc: Toc,
}

impl Index {
    /// Opens and checks an index; `None` for a version 1 index, which must be rewritten first.
    fn open(path: &Path) -> Result<Option<Index>, BlockError> {
        let mut file = File::open(path).map_err(io(path))?;
        let len = file.metadata().map_err(io(path))?.len() as usize;
        let mut header = [0u8; FILE_HEADER_LEN];
        if len < FILE_HEADER_LEN + 4 || file.read_exact(&mut header).is_err() || &header[..4] != INDEX_MAGIC {
            return Err(corrupt(path, "bad magic or truncated".into()));
        }
        match header[4] {
            1 => return Ok(None),
            INDEX_VERSION => {}
            v => return Err(corrupt(path, format!("unknown format version {v}"))),
        }
        if len < FILE_HEADER_LEN + INDEX_TOC_LEN + 4 {
            return Err(corrupt(path, "truncated".into()));
        }
        // The CRC is checked by reading the file through a small buffer rather than through the map:
        // the pages stay in the page cache, not in this process's resident set.
        let mut crc = crc32fast::Hasher::new();
        let mut left = len - FILE_HEADER_LEN - 4;
        let mut buf = vec![0u8; (1 << 20).min(left.max(4))];
        while left > 0 {
            let n = left.min(buf.len());
            file.read_exact(&mut buf[..n]).map_err(io(path))?;
            crc.update(&buf[..n]);
            left -= n;
        }
        file.read_exact(&mut buf[..4]).map_err(io(path))?;
        if crc.finalize().to_le_bytes() != buf[..4] {
            return Err(corrupt(path, "checksum mismatch".into()));
        }
        // SAFETY: blocks are immutable: an index is written under a `.tmp` name, synced and renamed
        // into place, and never written again; it is removed by renaming its directory and unlinking,
        // which leaves an existing mapping readable. Only another process truncating the file under
        // us could invalidate the mapping, as for any mapped file.
        let map = unsafe { Mmap::map(&file) }.map_err(io(path))?;
        let end = len - 4 - INDEX_TOC_LEN;
        let mut r = Reader::at(&map[..len - 4], end);
        let mut next = || r.u64_le().map(|v| v as usize);
        let toc_err = |e: DecodeError| corrupt(path, format!("table of contents: {e}"));
        let (symbols, series_table, nseries) =
            (next().map_err(toc_err)?, next().map_err(toc_err)?, next().map_err(toc_err)?);
        let (pairs, npairs, names, nnames) =
            (next().map_err(toc_err)?, next().map_err(toc_err)?, next().map_err(toc_err)?, next().map_err(toc_err)?);
        let table_fits = |start: usize, n: usize, width: usize| {
            start >= FILE_HEADER_LEN
                && n.checked_mul(width).and_then(|b| b.checked_add(start)).is_some_and(|e| e <= end)
        };
        let counts = (u32::try_from(nseries), u32::try_from(npairs), u32::try_from(nnames));
        let (Ok(nseries), Ok(npairs), Ok(nnames)) = counts else {
            return Err(corrupt(path, "table of contents: a count over 2^32".into()));
        };
        if !(table_fits(symbols, 0, 0)
            && table_fits(series_table, nseries as usize, SERIES_ENTRY)
            && table_fits(pairs, npairs as usize, PAIR_ENTRY)
            && table_fits(names, nnames as usize, NAME_ENTRY))
        {
            return Err(corrupt(path, "table of contents points past its own start".into()));
        }
        let toc = Toc { symbols, series_table, nseries, pairs, npairs, names, nnames, end };
        Ok(Some(Index { path: path.to_path_buf(), map, toc }))
    }

    fn corrupt(&self, e: DecodeError) -> BlockError {
        corrupt(&self.path, e.to_string())
    }

    /// A reader at `pos` over everything before the table of contents.
    fn at(&self, pos: usize) -> Reader<'_> {
        Reader::at(&self.map[..self.toc.end], pos)
    }

    fn sym(&self, r: u64) -> Result<&str, DecodeError> {
        self.at(self.toc.symbols.saturating_add(r as usize)).str()
    }

    fn record(&self, id: u32) -> Result<Reader<'_>, DecodeError> {
        if id >= self.toc.nseries {
            return Err(DecodeError { what: "series id out of range", offset: self.toc.series_table });
        }
        let off = self.at(self.toc.series_table + id as usize * SERIES_ENTRY).u64_le()?;
        Ok(self.at(off as usize))
    }

    fn labels(&self, id: u32) -> Result<Labels, DecodeError> {
        let mut r = self.record(id)?;
        let n = r.uvarint()? as usize;
        let mut pairs = Vec::with_capacity(n.min(256));
        for _ in 0..n {
            let (name, value) = (r.uvarint()?, r.uvarint()?);
            pairs.push((self.sym(name)?, self.sym(value)?));
        }
        Ok(Labels::from_pairs(pairs))
    }

    /// Series `id`'s chunk positions into `out` (cleared first).
    fn chunks(&self, id: u32, out: &mut Vec<ChunkMeta>) -> Result<(), DecodeError> {
        out.clear();
        let mut r = self.record(id)?;
        let n = r.uvarint()?;
        for _ in 0..n.saturating_mul(2) {
            r.uvarint()?;
        }
        decode_chunk_metas(&mut r, out)
    }

    /// Entry `i` of the names table: the name's symbol, its first pair and how many pairs it has.
    fn name(&self, i: u32) -> Result<(u32, u32, u32), DecodeError> {
        let mut r = self.at(self.toc.names + i as usize * NAME_ENTRY);
        Ok((r.u32_le()?, r.u32_le()?, r.u32_le()?))
    }

    /// Entry `i` of the pairs table: the value's symbol, how many series carry the pair and where
    /// their ids are.
    fn pair(&self, i: u32) -> Result<(u32, u32, u64), DecodeError> {
        let mut r = self.at(self.toc.pairs + i as usize * PAIR_ENTRY);
        Ok((r.u32_le()?, r.u32_le()?, r.u64_le()?))
    }

    /// The entry among `range` of a table sorted by symbol whose symbol (`key(i)`) is `want`.
    fn search(
        &self,
        range: std::ops::Range<u32>,
        want: &str,
        key: impl Fn(u32) -> Result<u32, DecodeError>,
    ) -> Result<Option<u32>, DecodeError> {
        let (mut lo, mut hi) = (range.start, range.end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.sym(u64::from(key(mid)?))?.cmp(want) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Some(mid)),
            }
        }
        Ok(None)
    }

    /// The pairs of label `name`, as a range of the pairs table.
    fn find_name(&self, name: &str) -> Result<Option<std::ops::Range<u32>>, DecodeError> {
        let Some(i) = self.search(0..self.toc.nnames, name, |i| Ok(self.name(i)?.0))? else { return Ok(None) };
        let (_, first, n) = self.name(i)?;
        let end = first.checked_add(n).filter(|e| *e <= self.toc.npairs);
        let end = end.ok_or(DecodeError { what: "name's pairs out of range", offset: self.toc.names })?;
        Ok(Some(first..end))
    }

    /// Appends pair `i`'s series ids to `out`.
    fn list(&self, i: u32, out: &mut Vec<u32>) -> Result<(), DecodeError> {
        let (_, count, off) = self.pair(i)?;
        let bytes = self.at(off as usize).bytes(count as usize * 4)?;
        out.extend(bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])));
        Ok(())
    }

    fn select(&self, matchers: &[Matcher]) -> Result<Vec<u32>, DecodeError> {
        postings::select_with(self.toc.nseries, matchers, |m, want| self.union_matching(m, want))
    }

    /// Union of the lists of label `m.name` whose value the matcher accepts (`want` true) or rejects.
    fn union_matching(&self, m: &Matcher, want: bool) -> Result<Vec<u32>, DecodeError> {
        let Some(range) = self.find_name(&m.name)? else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        if m.op == MatchOp::Equal && want {
            // Values are sorted within their name: a binary search finds the one list.
            if let Some(i) = self.search(range, &m.value, |i| Ok(self.pair(i)?.0))? {
                self.list(i, &mut out)?;
            }
            return Ok(out);
        }
        let mut lists = 0;
        for i in range {
            if m.matches(self.sym(u64::from(self.pair(i)?.0))?) == want {
                self.list(i, &mut out)?;
                lists += 1;
            }
        }
        if lists > 1 {
            out.sort_unstable();
            out.dedup();
        }
        Ok(out)
    }

    fn label_names(&self) -> Result<Vec<String>, DecodeError> {
        (0..self.toc.nnames).map(|i| self.sym(u64::from(self.name(i)?.0)).map(str::to_string)).collect()
    }

    fn label_values(&self, name: &str) -> Result<Vec<String>, DecodeError> {
        let Some(range) = self.find_name(name)? else { return Ok(Vec::new()) };
        range.map(|i| self.sym(u64::from(self.pair(i)?.0)).map(str::to_string)).collect()
    }
}

/// Rewrites a version 1 index (symbols, then every series' labels and chunks, loaded whole by older
/// releases) as version 2, through a temporary file renamed over it: a crash leaves one or the other.
fn upgrade_index(path: &Path) -> Result<(), BlockError> {
    let data = fs::read(path).map_err(io(path))?;
    let body = checked_body(path, &data, INDEX_MAGIC, 1)?;
    let mut series = decode_index_v1(body).map_err(|e| corrupt(path, e.to_string()))?;
    // Version 2 is read assuming label order (compaction walks blocks in it): kept even for an index
    // that broke it.
    series.sort_by(|a, b| a.0.cmp(&b.0));
    let tmp = path.with_extension("v2.tmp");
    writer::write_index(&tmp, &series)?;
    fs::rename(&tmp, path).map_err(io(path))?;
    if let Some(dir) = path.parent() {
        writer::sync_dir(dir)?;
    }
    tracing::info!(index = %path.display(), series = series.len(), "Rewrote a version 1 block index as version 2");
    Ok(())
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
fn checked_body<'a>(path: &Path, data: &'a [u8], magic: &[u8; 4], version: u8) -> Result<&'a [u8], BlockError> {
    if data.len() < FILE_HEADER_LEN + 4 || &data[..4] != magic {
        return Err(corrupt(path, "bad magic or truncated".into()));
    }
    if data[4] != version {
        return Err(corrupt(path, format!("unknown format version {}", data[4])));
    }
    let (body, crc) = data[FILE_HEADER_LEN..].split_at(data.len() - FILE_HEADER_LEN - 4);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(corrupt(path, "checksum mismatch".into()));
    }
    Ok(body)
}

/// Each series' labels and chunk positions, as a version 1 index holds them.
type IndexEntries = Vec<(Arc<Labels>, Vec<ChunkMeta>)>;

fn decode_index_v1(body: &[u8]) -> Result<IndexEntries, DecodeError> {
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
        let mut chunks = Vec::new();
        decode_chunk_metas(&mut r, &mut chunks)?;
        series.push((Arc::new(Labels::from_pairs(pairs)), chunks));
    }
    Ok(series)
}

/// A series' chunk positions (`nchunks`, then each chunk's), the same in index versions 1 and 2.
fn decode_chunk_metas(r: &mut Reader<'_>, out: &mut Vec<ChunkMeta>) -> Result<(), DecodeError> {
    let nc = r.uvarint()?;
    for _ in 0..nc {
        let min_time = r.varint()?;
        let max_time = min_time.wrapping_add(r.uvarint()? as i64);
        let offset = r.uvarint()?;
        let len =
            u32::try_from(r.uvarint()?).map_err(|_| DecodeError { what: "chunk length over u32", offset: r.pos() })?;
        let crc = r.u32_le()?;
        out.push(ChunkMeta { min_time, max_time, offset, len, crc });
    }
    Ok(())
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
