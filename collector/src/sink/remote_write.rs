//! Prometheus remote write 1.0 bodies for the sinks. The wire format itself (snappy around a protobuf
//! `prometheus.WriteRequest`) is argus-store-api's, the same code the store decodes with.

use argus_model::{Labels, Sample};
use argus_store_api::remote_write::{self, WriteSeries};
use std::collections::BTreeMap;

/// Encodes samples as one request: one time series per label set (labels sorted by name, as the spec
/// asks), its samples in time order.
pub fn encode(samples: &[(Labels, Sample)]) -> Vec<u8> {
    let mut by_series: BTreeMap<&Labels, Vec<Sample>> = BTreeMap::new();
    for (l, s) in samples {
        by_series.entry(l).or_default().push(*s);
    }
    let series: Vec<WriteSeries> = by_series
        .into_iter()
        .map(|(labels, mut samples)| {
            samples.sort_by_key(|s| s.t);
            WriteSeries { labels: labels.clone(), samples }
        })
        .collect();
    // Compression fails only past snappy's ~4 GiB input limit; batches are bounded by max_samples far
    // below it, so a failure leaves an empty body the server refuses (and the sink counts as dropped).
    remote_write::encode(&series).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_series_per_label_set_in_time_order() {
        let a = Labels::from_pairs([("__name__", "gpu_power_watts"), ("gpu", "0")]);
        let b = Labels::from_pairs([("__name__", "gpu_power_watts"), ("gpu", "1")]);
        let body = encode(&[
            (a.clone(), Sample::new(20, 2.0)),
            (b.clone(), Sample::new(10, 3.0)),
            (a.clone(), Sample::new(10, 1.0)),
        ]);
        let decoded = remote_write::decode(&body).unwrap();
        assert_eq!(
            decoded.series,
            vec![
                WriteSeries { labels: a, samples: vec![Sample::new(10, 1.0), Sample::new(20, 2.0)] },
                WriteSeries { labels: b, samples: vec![Sample::new(10, 3.0)] },
            ],
            "samples of a series in time order"
        );
    }
}
