//! Prometheus remote write 1.0: the body Prometheus, vmagent and our own collector POST to
//! `/api/v1/write`, a snappy block (`Content-Encoding: snappy`, not the framed format) around a
//! protobuf `prometheus.WriteRequest`.
//!
//! Spec: <https://prometheus.io/docs/specs/prw/remote_write_spec/>. Messages: [`proto`].
//!
//! What we accept, and why:
//! - Float samples are kept exactly as sent: order, duplicates and NaN payloads (the stale marker
//!   `0x7ff0000000000002` must survive bit for bit), timestamps in milliseconds.
//! - Label names are checked leniently, like VictoriaMetrics: any non-empty UTF-8 name passes, since
//!   OpenTelemetry and Prometheus 3 send names outside `[a-zA-Z_][a-zA-Z0-9_]*`. A series without
//!   `__name__` passes too, as in Prometheus. Empty values mean "absent" and are dropped.
//! - A series with an empty label set, an empty label name or a repeated label name fails the whole
//!   request with a 400, so the sender sees it instead of losing data silently.
//! - Native histograms and exemplars are dropped and counted in [`Decoded`]; the store holds floats
//!   only, and refusing them would make Prometheus drop the float samples of the same batch.
//!   Metadata is advisory and ignored.

mod error;
pub mod proto;
mod wire;

#[cfg(test)]
mod tests;

use argus_model::{Labels, Sample};
use prost::Message;

pub use error::RemoteWriteError;

/// The default cap on a decompressed body. Prometheus sends at most a few thousand samples per request
/// (a few hundred KiB); 32 MiB matches VictoriaMetrics' `-maxInsertRequestSize`.
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 32 << 20;

/// One series of a write request with its float samples.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteSeries {
    pub labels: Labels,
    pub samples: Vec<Sample>,
}

/// A decoded write request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decoded {
    /// The series that carry float samples, in request order. Series with none are left out.
    pub series: Vec<WriteSeries>,
    /// Native histogram samples dropped; callers should count them in a metric.
    pub skipped_histograms: usize,
    /// Exemplars dropped.
    pub skipped_exemplars: usize,
}

/// Decodes a remote write body with the default size cap ([`DEFAULT_MAX_DECOMPRESSED_BYTES`]).
pub fn decode(body: &[u8]) -> Result<Decoded, RemoteWriteError> {
    decode_with_limit(body, DEFAULT_MAX_DECOMPRESSED_BYTES)
}

/// Decodes a remote write body, refusing one whose snappy header claims more than
/// `max_decompressed_bytes`. The claim is checked before anything is allocated, so a few bytes cannot
/// make us reserve gigabytes. Decoding then holds up to about 25 times the decompressed size (a series
/// of thousands of 2-byte empty labels), so keep the cap near what real senders need.
pub fn decode_with_limit(body: &[u8], max_decompressed_bytes: usize) -> Result<Decoded, RemoteWriteError> {
    let snappy = |e: snap::Error| RemoteWriteError::Snappy(e.to_string());
    let size = snap::raw::decompress_len(body).map_err(snappy)?;
    if size > max_decompressed_bytes {
        return Err(RemoteWriteError::TooLarge { limit: max_decompressed_bytes, size });
    }
    let request = snap::raw::Decoder::new().decompress_vec(body).map_err(snappy)?;

    let mut out = Decoded::default();
    for (index, encoded) in wire::Series::new(&request).enumerate() {
        let series = proto::TimeSeries::decode(encoded?)
            .map_err(|e| RemoteWriteError::Protobuf(format!("series {index}: {e}")))?;
        out.skipped_histograms += series.histograms.len();
        out.skipped_exemplars += series.exemplars.len();
        let labels = labels(series.labels).map_err(|reason| RemoteWriteError::InvalidSeries { index, reason })?;
        if series.samples.is_empty() {
            continue;
        }
        let samples = series.samples.iter().map(|s| Sample::new(s.timestamp, s.value)).collect();
        out.series.push(WriteSeries { labels, samples });
    }
    Ok(out)
}

/// Encodes series as a remote write body (protobuf in a snappy block), labels sorted by name as the
/// spec asks of senders. A -0.0 goes out as 0.0: proto3 leaves out fields equal to their default.
/// Fails only past snappy's input limit of about 4 GiB.
pub fn encode(series: &[WriteSeries]) -> Result<Vec<u8>, RemoteWriteError> {
    let request = proto::WriteRequest { timeseries: series.iter().map(to_proto).collect(), metadata: Vec::new() };
    snap::raw::Encoder::new()
        .compress_vec(&request.encode_to_vec())
        .map_err(|e| RemoteWriteError::Snappy(e.to_string()))
}

// === impl helpers ===

/// Checks a series' labels and builds its label set; the error is the reason for `InvalidSeries`.
fn labels(sent: Vec<proto::Label>) -> Result<Labels, String> {
    // Only for messages: a best-effort rendering of what was sent.
    let describe = |sent: &[proto::Label]| {
        Labels::from_pairs(sent.iter().map(|l| (l.name.as_str(), l.value.as_str()))).to_string()
    };
    if sent.iter().any(|l| l.name.is_empty()) {
        return Err(format!("empty label name in {}", describe(&sent)));
    }
    let mut names: Vec<&str> = sent.iter().map(|l| l.name.as_str()).collect();
    names.sort_unstable();
    if let Some(pair) = names.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(format!("duplicate label name {:?} in {}", pair[0], describe(&sent)));
    }
    let labels = Labels::from_pairs(sent.into_iter().map(|l| (l.name, l.value)));
    if labels.is_empty() {
        return Err("empty label set".to_string());
    }
    Ok(labels)
}

fn to_proto(series: &WriteSeries) -> proto::TimeSeries {
    proto::TimeSeries {
        labels: series.labels.iter().map(|l| proto::Label { name: l.name.clone(), value: l.value.clone() }).collect(),
        samples: series.samples.iter().map(|s| proto::Sample { value: s.v, timestamp: s.t }).collect(),
        exemplars: Vec::new(),
        histograms: Vec::new(),
    }
}
