//! The collector's own metrics, on its `/metrics` (OpenMetrics text) and, for the per-source ones, in
//! the batches it ships (measurement `argus_collector`), so the store sees every node's health.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceLabel {
    pub source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SinkLabel {
    pub sink: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DropLabels {
    pub sink: String,
    /// `spool_full`, `rejected` (a 4xx other than 429), `no_endpoint` (events with nowhere to go),
    /// `spool_corrupt`, `spool_error`.
    pub reason: String,
}

/// Handles to every self metric; cheap to clone.
#[derive(Clone, Default)]
pub struct SelfMetrics {
    pub source_duration: Family<SourceLabel, Gauge<f64, AtomicU64>>,
    pub source_success: Family<SourceLabel, Gauge>,
    /// Samples and events delivered (2xx).
    pub points_sent: Family<SinkLabel, Counter>,
    /// Samples and events written to the spool.
    pub points_spooled: Family<SinkLabel, Counter>,
    pub points_dropped: Family<DropLabels, Counter>,
    pub spool_bytes: Family<SinkLabel, Gauge>,
    pub spool_records: Family<SinkLabel, Gauge>,
}

impl SelfMetrics {
    /// Sets a sink's spool gauges from its spool.
    pub fn spool(&self, label: &SinkLabel, bytes: u64, records: u64) {
        self.spool_bytes.get_or_create(label).set(bytes as i64);
        self.spool_records.get_or_create(label).set(records as i64);
    }

    pub fn register(&self, r: &mut Registry) {
        r.register(
            "argus_collector_source_duration_seconds",
            "Duration of the last collection of a source",
            self.source_duration.clone(),
        );
        r.register(
            "argus_collector_source_success",
            "Whether the last collection of a source succeeded",
            self.source_success.clone(),
        );
        r.register("argus_collector_points_sent", "Samples and events delivered by a sink", self.points_sent.clone());
        r.register(
            "argus_collector_points_spooled",
            "Samples and events written to a sink's spool",
            self.points_spooled.clone(),
        );
        r.register(
            "argus_collector_points_dropped",
            "Samples and events a sink gave up on",
            self.points_dropped.clone(),
        );
        r.register("argus_collector_spool_bytes", "Bytes a sink's spool takes on disk", self.spool_bytes.clone());
        r.register(
            "argus_collector_spool_records",
            "Records in a sink's spool not yet acknowledged by the store",
            self.spool_records.clone(),
        );
    }

    /// The metrics in OpenMetrics text, as `/metrics` serves them.
    pub fn encode(&self) -> String {
        let mut r = Registry::default();
        self.register(&mut r);
        let mut out = String::new();
        // Encoding into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &r);
        out
    }

    pub fn dropped(&self, sink: &str, reason: &str, n: u64) {
        if n > 0 {
            self.points_dropped.get_or_create(&DropLabels { sink: sink.into(), reason: reason.into() }).inc_by(n);
        }
    }
}
