//! What a backend call can fail with, and whether trying again may help.

/// A failed backend call. URLs in messages never carry credentials (configuration refuses them).
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The backend could not be reached, or did not answer in time.
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// The backend answered with an error status other than a refused query or write.
    #[error("{url} answered {status}: {message}")]
    Status { url: String, status: u16, message: String },
    /// The query was refused: bad syntax, an unsupported construct, too many samples.
    #[error("query refused: {0}")]
    BadQuery(String),
    /// The write was refused as invalid; sending the same data again fails again.
    #[error("write refused: {0}")]
    InvalidWrite(String),
    /// The backend answered something we could not understand.
    #[error("unexpected answer from {url}: {reason}")]
    Decode { url: String, reason: String },
    /// The backend has no PromQL engine (InfluxDB 2).
    #[error(
        "promql is not available on the {backend} backend: rule evaluation and promql queries need a \
         prometheus-compatible backend (embedded or prometheus)"
    )]
    PromqlUnavailable { backend: &'static str },
    /// The embedded store refuses writes for now (its memory budget, or its WAL over an eighth of
    /// `max_disk_size`); it flushes and recovers.
    #[error("the embedded store is over its memory budget or its disk bound; retry later")]
    Overloaded,
    /// The embedded store failed to read or write (disk, shutdown).
    #[error("embedded store: {0}")]
    Storage(String),
    /// The backend could not be built from its configuration.
    #[error("backend configuration: {0}")]
    Config(String),
    /// A bug or a panic on our side.
    #[error("internal error: {0}")]
    Internal(String),
}

impl BackendError {
    /// Whether the same call may succeed later: connection failures, timeouts, 5xx, 429 and 408
    /// answers, an overloaded or failing embedded store. Refused queries and writes (4xx) are not.
    pub fn is_retryable(&self) -> bool {
        match self {
            BackendError::Unreachable { .. } | BackendError::Overloaded | BackendError::Storage(_) => true,
            BackendError::Status { status, .. } => *status >= 500 || *status == 429 || *status == 408,
            BackendError::BadQuery(_)
            | BackendError::InvalidWrite(_)
            | BackendError::Decode { .. }
            | BackendError::PromqlUnavailable { .. }
            | BackendError::Config(_)
            | BackendError::Internal(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_are_connection_errors_5xx_429_and_overload() {
        let status = |status| BackendError::Status { url: "u".into(), status, message: String::new() };
        assert!(BackendError::Unreachable { url: "u".into(), reason: "refused".into() }.is_retryable());
        assert!(status(500).is_retryable() && status(503).is_retryable() && status(429).is_retryable());
        assert!(!status(401).is_retryable() && !status(404).is_retryable());
        assert!(!BackendError::BadQuery("x".into()).is_retryable());
        assert!(!BackendError::InvalidWrite("x".into()).is_retryable());
        assert!(!BackendError::PromqlUnavailable { backend: "influxdb2" }.is_retryable());
        assert!(BackendError::Overloaded.is_retryable());
    }
}
