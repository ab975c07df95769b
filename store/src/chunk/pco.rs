//! The pco payload: one pco "wrapped" header, the timestamps, then the values as a pco chunk of
//! one page. docs/format/chunk.md has the layout.
//!
//! The wrapped format, not standalone, because our chunk header already holds the count;
//! standalone repeats it per stream with ~14 more bytes. Timestamps on an exact grid (what a
//! collector ticking every N seconds writes) are stored as start and step: pco needs 40 bytes
//! of tables for them, which is most of a small chunk's cost.

use ::pco::data_types::Number;
use ::pco::errors::PcoError;
use ::pco::wrapped::{FileCompressor, FileDecompressor};
use ::pco::{ChunkConfig, DeltaSpec, ModeSpec, PagingSpec};

use super::ChunkError;
use super::varint;

/// Samples above this go to Gorilla: pco pages may hold 2^24 numbers, and a corrupt count
/// must not make the decoder allocate more than this many samples.
pub(crate) const MAX_SAMPLES: usize = 1 << 20;

/// Timestamps are `start`, `start + step`, ...
const TS_REGULAR: u8 = 0;
/// Timestamps are a pco chunk.
const TS_PCO: u8 = 1;

/// Level 4, not pco's default 8: on our data it costs 0.3-0.5 % in size and cuts the CPU of a block cut
/// by about a fifth (1 M points: 1.14-1.57 s against 1.48-1.84 s), and block cutting is the largest CPU
/// cost of ingest after parsing (git show d87df420:bench/RESULTS.md, "Ingest and storage").
const LEVEL: usize = 4;

/// Appends the payload to `out`. Fails only on what pco refuses (an empty or oversized
/// input); `out` may then hold a partial payload, which the caller truncates.
pub(crate) fn encode(ts: &[i64], vals: &[f64], out: &mut Vec<u8>) -> Result<(), PcoError> {
    let fc = FileCompressor::default();
    fc.write_header(&mut *out)?;
    let paging = PagingSpec::Exact(vec![ts.len()]);
    match super::regular_step(ts) {
        Some((start, step)) => {
            out.push(TS_REGULAR);
            varint::put_varint(out, start);
            varint::put_uvarint(out, step);
        }
        None => {
            out.push(TS_PCO);
            // First-order deltas: jitter is noise on the times, not on the intervals, so a
            // second order only widens the range (measured: 20-30 % larger).
            let config = ChunkConfig::default()
                .with_compression_level(LEVEL)
                .with_delta_spec(DeltaSpec::TryConsecutive(1))
                .with_paging_spec(paging.clone());
            let mut cc = fc.chunk_compressor(ts, &config)?;
            cc.write_meta(&mut *out)?;
            cc.write_page(0, &mut *out)?;
        }
    }
    // Auto picks FloatMult for decimal gauges and a delta order per chunk: 5 % smaller than
    // any fixed choice on the Alibaba trace, within 0.2 % of the best on the generated one.
    let config = ChunkConfig::default()
        .with_compression_level(LEVEL)
        .with_mode_spec(ModeSpec::Auto)
        .with_delta_spec(DeltaSpec::Auto)
        .with_paging_spec(paging);
    let start = out.len();
    write_stream(&fc, vals, &config, out)?;
    if let Some(base) = ratio_base(vals) {
        let mut alt = Vec::new();
        write_stream(&fc, vals, &config.with_mode_spec(ModeSpec::TryFloatMult(base)), &mut alt)?;
        if alt.len() < out.len() - start {
            out.truncate(start);
            out.extend_from_slice(&alt);
        }
    }
    Ok(())
}

fn write_stream<T: Number>(
    fc: &FileCompressor,
    nums: &[T],
    config: &ChunkConfig,
    out: &mut Vec<u8>,
) -> Result<(), PcoError> {
    let mut cc = fc.chunk_compressor(nums, config)?;
    cc.write_meta(&mut *out)?;
    cc.write_page(0, &mut *out)?;
    Ok(())
}

/// Odd denominators worth probing: ratios over limits such as 24/48/96 GiB (3·2^k),
/// 40/80 GiB (5·2^k), 144 GB (9·2^k).
const RATIO_DIVISORS: [f64; 5] = [3.0, 5.0, 7.0, 9.0, 15.0];

/// A base `2^-k / d` (d odd) of which the values look like integer multiples, when pco's own
/// FloatMult detection, which looks for decimal-like bases, would miss it: `used / limit`
/// ratios with a limit like 96 GiB. On Alibaba's pod_memory_util this halves the values
/// (4.36 → 2.22 B/pt). Only a hint: pco stays lossless whatever the base, and the caller keeps
/// the smaller stream.
pub(super) fn ratio_base(vals: &[f64]) -> Option<f64> {
    const SAMPLES: usize = 32;
    let stride = (vals.len() / SAMPLES).max(1);
    let sample: Vec<f64> =
        vals.iter().step_by(stride).copied().filter(|v| v.is_finite() && *v != 0.0).take(SAMPLES).collect();
    if sample.len() < 8 {
        return None;
    }
    // Values that are already dyadic with few bits gain nothing from a divisor.
    let dyadic = fraction_bits(&sample, 1.0);
    RATIO_DIVISORS.iter().find_map(|&d| {
        let k = fraction_bits(&sample, d)?;
        let denominator = d * f64::from(k).exp2();
        // pco already finds decimal bases (0.1 is 1 / (5·2)).
        let decimal = (10f64.powf(denominator.log10().round()) - denominator).abs() < 1e-9 * denominator;
        let better = dyadic.is_none_or(|k1| k + 8 < k1);
        (better && !decimal).then(|| 1.0 / denominator)
    })
}

/// The fewest fraction bits `k` such that every `v·d·2^k` in `sample` is a non-zero integer
/// below 10^12 (within float rounding).
fn fraction_bits(sample: &[f64], d: f64) -> Option<i32> {
    let mut most = i32::MIN;
    for v in sample {
        let x = v * d;
        let k = (-20..=60).find(|&k| {
            let y = x * f64::from(k).exp2();
            (0.5..1e12).contains(&y.abs()) && (y - y.round()).abs() < 1e-3
        })?;
        most = most.max(k);
    }
    Some(most)
}

/// Appends `n` samples decoded from `data` (exactly one payload) to `ts` and `vals`.
pub(crate) fn decode(data: &[u8], n: usize, ts: &mut Vec<i64>, vals: &mut Vec<f64>) -> Result<(), ChunkError> {
    if n == 0 || n > MAX_SAMPLES {
        return Err(ChunkError::Corrupt("pco chunk sample count out of range"));
    }
    let (fd, rest) = FileDecompressor::new(data)?;
    let (&kind, rest) = rest.split_first().ok_or(ChunkError::Truncated)?;
    let rest = match kind {
        TS_REGULAR => {
            let (start, len) = varint::uvarint(rest)?;
            let (step, len2) = varint::uvarint(&rest[len..])?;
            let (start, step) = (varint::unzigzag(start), step as i64);
            ts.reserve(n);
            ts.extend((0..n as i64).map(|i| start.wrapping_add(step.wrapping_mul(i))));
            &rest[len + len2..]
        }
        TS_PCO => read_stream(&fd, rest, n, ts)?,
        _ => return Err(ChunkError::Corrupt("unknown pco timestamp form")),
    };
    let rest = read_stream(&fd, rest, n, vals)?;
    if !rest.is_empty() {
        return Err(ChunkError::Corrupt("trailing bytes after pco payload"));
    }
    Ok(())
}

fn read_stream<'a, T: Number + Default>(
    fd: &FileDecompressor,
    src: &'a [u8],
    n: usize,
    dst: &mut Vec<T>,
) -> Result<&'a [u8], ChunkError> {
    let (mut cd, src) = fd.chunk_decompressor::<T, _>(src)?;
    let mut pd = cd.page_decompressor(src, n)?;
    let start = dst.len();
    dst.resize(start + n, T::default());
    let progress = pd.read(&mut dst[start..])?;
    if progress.n_processed != n || !progress.finished {
        return Err(ChunkError::Corrupt("pco page holds fewer samples than the header"));
    }
    Ok(pd.into_src())
}
