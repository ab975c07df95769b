//! One sample of one series.

/// A value at a time. Timestamps are milliseconds since the Unix epoch, as in Prometheus.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub t: i64,
    pub v: f64,
}

impl Sample {
    pub fn new(t: i64, v: f64) -> Self {
        Sample { t, v }
    }

    /// True when both samples carry the same bits: a rewrite of such a sample is a no-op.
    /// NaN payloads are compared bit for bit, so a stale marker is never confused with a NaN value.
    pub fn same_as(&self, other: &Sample) -> bool {
        self.t == other.t && self.v.to_bits() == other.v.to_bits()
    }
}
