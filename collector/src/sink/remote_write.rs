//! Prometheus remote write 1.0 bodies: a snappy block (not the framed format) around a protobuf
//! `prometheus.WriteRequest` (spec: prometheus.io/docs/specs/prw/remote_write_spec/).
//!
//! The messages are written out here, encode-only, rather than shared with argus-store: the node agent
//! must not depend on the store, and the four messages are a few lines.

use argus_model::{Labels, Sample};
use prost::Message;
use std::collections::BTreeMap;

#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<ProtoSample>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProtoSample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// Encodes samples as one request: one time series per label set (labels sorted by name, as the spec
/// asks), its samples in time order.
pub fn encode(samples: &[(Labels, Sample)]) -> Vec<u8> {
    let mut by_series: BTreeMap<&Labels, Vec<Sample>> = BTreeMap::new();
    for (l, s) in samples {
        by_series.entry(l).or_default().push(*s);
    }
    let timeseries = by_series
        .into_iter()
        .map(|(labels, mut ss)| {
            ss.sort_by_key(|s| s.t);
            TimeSeries {
                labels: labels.iter().map(|l| Label { name: l.name.clone(), value: l.value.clone() }).collect(),
                samples: ss.iter().map(|s| ProtoSample { value: s.v, timestamp: s.t }).collect(),
            }
        })
        .collect();
    let proto = WriteRequest { timeseries }.encode_to_vec();
    // Compression fails only past snappy's ~4 GiB input limit; batches are bounded by max_samples far
    // below it, so a failure leaves an empty body the server refuses (and the sink counts as dropped).
    snap::raw::Encoder::new().compress_vec(&proto).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_snappy_and_protobuf() {
        let a = Labels::from_pairs([("__name__", "gpu_power_watts"), ("gpu", "0")]);
        let b = Labels::from_pairs([("__name__", "gpu_power_watts"), ("gpu", "1")]);
        let body = encode(&[(a.clone(), Sample::new(20, 2.0)), (b, Sample::new(10, 3.0)), (a, Sample::new(10, 1.0))]);
        let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
        let req = WriteRequest::decode(raw.as_slice()).unwrap();
        assert_eq!(req.timeseries.len(), 2);
        let first = &req.timeseries[0];
        assert_eq!(first.labels[0].name, "__name__");
        assert_eq!(first.labels[1].value, "0");
        let ts: Vec<(i64, f64)> = first.samples.iter().map(|s| (s.timestamp, s.value)).collect();
        assert_eq!(ts, vec![(10, 1.0), (20, 2.0)], "samples of a series in time order");
    }
}
