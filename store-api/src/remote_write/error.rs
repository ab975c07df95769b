//! What can be wrong with a remote write request.

/// Why a remote write body was refused. Every variant is the sender's fault, so none is retryable:
/// Prometheus drops a batch answered with a 4xx instead of resending it forever.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteWriteError {
    /// The body is not a snappy block (remote write uses the block format, not the framed one).
    #[error("invalid snappy block: {0}")]
    Snappy(String),
    /// The snappy header claims more bytes than the limit; nothing was allocated for them.
    #[error("decompressed body of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge { limit: usize, size: usize },
    /// The decompressed bytes are not a `prometheus.WriteRequest`.
    #[error("invalid protobuf: {0}")]
    Protobuf(String),
    /// Series `index` (its position in the request) is well-formed protobuf but not a valid series.
    #[error("invalid series {index}: {reason}")]
    InvalidSeries { index: usize, reason: String },
}

impl RemoteWriteError {
    /// The HTTP status to answer with: 413 for an oversized body, 400 for everything else.
    pub fn http_status(&self) -> u16 {
        match self {
            RemoteWriteError::TooLarge { .. } => 413,
            RemoteWriteError::Snappy(_) | RemoteWriteError::Protobuf(_) | RemoteWriteError::InvalidSeries { .. } => 400,
        }
    }
}
