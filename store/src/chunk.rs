//! Immutable compressed chunks: the timestamps and values of one series over a span of time.
//!
//! A chunk is self-describing: one encoding byte, the sample count as a uvarint, then the
//! encoding's payload (docs/format/chunk.md). The caller stores each chunk's length. Blocks
//! written with either encoding stay readable whatever `DEFAULT_ENCODING` is.
//!
//! **Invariant:** values round-trip bit for bit (NaN payloads such as Prometheus' stale
//! marker, -0.0, infinities, subnormals); decoding corrupt or truncated input returns an error
//! and never panics.

mod bits;
mod gorilla;
mod pco;
#[cfg(test)]
mod tests;
mod varint;

/// How a chunk's payload is compressed; the discriminant is the chunk's first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Encoding {
    /// Facebook's Gorilla, laid out as Prometheus' XOR chunk.
    Gorilla = 1,
    /// `pco`-compressed values, with timestamps as start and step when on a grid and as a
    /// second pco stream otherwise.
    Pco = 2,
}

/// What the store writes: pco, smaller than Gorilla on both the generated GPU workload and the
/// Alibaba trace at every measured chunk size (docs/performance.md, "Chunk compression").
pub const DEFAULT_ENCODING: Encoding = Encoding::Pco;

/// Why a chunk could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    #[error("chunk is truncated")]
    Truncated,
    #[error("corrupt chunk: {0}")]
    Corrupt(&'static str),
    #[error("unknown chunk encoding {0}")]
    UnknownEncoding(u8),
    #[error("corrupt pco payload: {}", .0.message)]
    Pco(#[from] ::pco::errors::PcoError),
}

impl Encoding {
    /// The encoding byte on disk.
    pub fn tag(self) -> u8 {
        self as u8
    }

    pub fn from_tag(tag: u8) -> Option<Self> {
        match tag {
            1 => Some(Self::Gorilla),
            2 => Some(Self::Pco),
            _ => None,
        }
    }
}

/// Appends one chunk holding `ts` (milliseconds, strictly increasing) and `vals` to `out`.
///
/// `Encoding::Pco` writes a Gorilla chunk instead where that is smaller (tiny or near-constant
/// chunks, where pco's tables outweigh its savings) or where pco cannot be used (no samples,
/// more than 2^20). Mismatched lengths are a caller bug; the longer slice is cut.
pub fn encode(enc: Encoding, ts: &[i64], vals: &[f64], out: &mut Vec<u8>) {
    debug_assert_eq!(ts.len(), vals.len(), "timestamps and values differ in length");
    let n = ts.len().min(vals.len());
    let (ts, vals) = (&ts[..n], &vals[..n]);
    let start = out.len();
    if enc == Encoding::Pco && (1..=pco::MAX_SAMPLES).contains(&n) {
        out.push(Encoding::Pco.tag());
        varint::put_uvarint(out, n as u64);
        if pco::encode(ts, vals, out).is_ok() {
            // Gorilla costs a few percent of pco's encode time; trying it is cheaper than
            // guessing when it wins.
            let gorilla_start = out.len();
            encode_gorilla(ts, vals, out);
            if out.len() - gorilla_start < gorilla_start - start {
                out.drain(start..gorilla_start);
            } else {
                out.truncate(gorilla_start);
            }
            return;
        }
        out.truncate(start);
    }
    encode_gorilla(ts, vals, out);
}

fn encode_gorilla(ts: &[i64], vals: &[f64], out: &mut Vec<u8>) {
    out.push(Encoding::Gorilla.tag());
    varint::put_uvarint(out, ts.len() as u64);
    gorilla::encode(ts, vals, out);
}

/// Decodes a whole chunk (exactly the bytes `encode` appended).
pub fn decode(data: &[u8]) -> Result<(Vec<i64>, Vec<f64>), ChunkError> {
    let (mut ts, mut vals) = (Vec::new(), Vec::new());
    decode_into(data, &mut ts, &mut vals)?;
    Ok((ts, vals))
}

/// Appends a chunk's samples to `ts` and `vals` and returns how many; on error both are left
/// as they were.
pub fn decode_into(data: &[u8], ts: &mut Vec<i64>, vals: &mut Vec<f64>) -> Result<usize, ChunkError> {
    let (ts_len, vals_len) = (ts.len(), vals.len());
    let result = decode_appending(data, ts, vals);
    if result.is_err() {
        ts.truncate(ts_len);
        vals.truncate(vals_len);
    }
    result
}

/// A Gorilla chunk still taking samples, as the head keeps each series' newest samples: about two
/// bytes a sample where a plain list costs sixteen. [`OpenChunk::seal`] gives the finished chunk in
/// the format [`decode`] reads.
#[derive(Clone, Default)]
pub struct OpenChunk {
    payload: Vec<u8>,
    app: gorilla::Appender,
    first_t: i64,
}

impl OpenChunk {
    /// An empty chunk whose buffer holds `bytes` before it grows.
    pub fn with_capacity(bytes: usize) -> Self {
        OpenChunk { payload: Vec::with_capacity(bytes), ..Default::default() }
    }

    /// Appends a sample; its time should be after the last one's (earlier times still round-trip).
    pub fn append(&mut self, t: i64, v: f64) {
        if self.app.len() == 0 {
            self.first_t = t;
        }
        self.app.append(&mut self.payload, t, v);
    }

    pub fn len(&self) -> usize {
        self.app.len() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.app.len() == 0
    }

    /// Payload bytes written so far.
    pub fn byte_len(&self) -> usize {
        self.payload.len()
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.payload.capacity()
    }

    /// First and last timestamps, when not empty.
    pub fn time_range(&self) -> Option<(i64, i64)> {
        (!self.is_empty()).then(|| (self.first_t, self.app.last_t()))
    }

    /// The last sample, when not empty.
    pub fn last(&self) -> Option<(i64, f64)> {
        (!self.is_empty()).then(|| (self.app.last_t(), self.app.last_v()))
    }

    /// The chunk as it stands, in the format [`decode`] reads, appended to `out`.
    pub fn seal(&self, out: &mut Vec<u8>) {
        out.push(Encoding::Gorilla.tag());
        varint::put_uvarint(out, u64::from(self.app.len()));
        out.extend_from_slice(&self.payload);
        self.app.finish(out);
    }

    /// Appends the samples to `ts` and `vals`.
    pub fn decode_into(&self, ts: &mut Vec<i64>, vals: &mut Vec<f64>) -> Result<(), ChunkError> {
        let mut payload = Vec::with_capacity(self.payload.len() + 1);
        payload.extend_from_slice(&self.payload);
        self.app.finish(&mut payload);
        gorilla::decode(&payload, self.len(), ts, vals)
    }

    /// Empties the chunk, keeping its buffer.
    pub fn clear(&mut self) {
        self.payload.clear();
        self.app = gorilla::Appender::default();
    }
}

/// A chunk's first timestamp without decoding it (a Gorilla chunk holds it right after its header;
/// other encodings are decoded); `None` for a chunk of no samples.
pub fn first_time(data: &[u8]) -> Result<Option<i64>, ChunkError> {
    let enc = encoding_of(data)?;
    let (n, len) = varint::uvarint(&data[1..])?;
    if n == 0 {
        return Ok(None);
    }
    match enc {
        Encoding::Gorilla => Ok(Some(varint::unzigzag(varint::uvarint(&data[1 + len..])?.0))),
        Encoding::Pco => Ok(decode(data)?.0.first().copied()),
    }
}

/// The encoding of a chunk, read from its first byte.
pub fn encoding_of(data: &[u8]) -> Result<Encoding, ChunkError> {
    let &tag = data.first().ok_or(ChunkError::Truncated)?;
    Encoding::from_tag(tag).ok_or(ChunkError::UnknownEncoding(tag))
}

fn decode_appending(data: &[u8], ts: &mut Vec<i64>, vals: &mut Vec<f64>) -> Result<usize, ChunkError> {
    let enc = encoding_of(data)?;
    let (n, len) = varint::uvarint(&data[1..])?;
    let n = usize::try_from(n).map_err(|_| ChunkError::Corrupt("sample count overflows"))?;
    let payload = &data[1 + len..];
    match enc {
        Encoding::Gorilla => gorilla::decode(payload, n, ts, vals)?,
        Encoding::Pco => pco::decode(payload, n, ts, vals)?,
    }
    Ok(n)
}

/// `(start, step)` when every interval is the same (any series of one or two samples).
pub(crate) fn regular_step(ts: &[i64]) -> Option<(i64, u64)> {
    let start = *ts.first()?;
    let step = ts.get(1).map_or(0, |t| t.wrapping_sub(start));
    // Wrapping both here and in the decoder keeps any input exact, even out-of-contract ones.
    let on_grid = ts.windows(2).all(|w| w[1].wrapping_sub(w[0]) == step);
    on_grid.then_some((start, step as u64))
}
