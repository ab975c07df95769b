//! argus-collector owns the node agent: polled sources (`gpu`, `host`, `disk`, `net`, `events`, `replay`)
//! and push/stream tasks (`training`, `scrape`) write points into batches, the agent stamps the global
//! labels on them, and sinks ship them by Prometheus remote write or InfluxDB line protocol, spooling to
//! disk while the store is unreachable.
//!
//! Shape (see ARCHITECTURE.md): `config` is parsed, then validated, then built; a [`Source`] is a
//! synchronous poller run on a blocking thread with a deadline, a [`source::Task`] an async task feeding
//! the same [`emit::Emit`]; a failing source never fails a collection; sinks are async and deliver at
//! least once, in order.

pub mod agent;
pub mod batch;
pub mod config;
pub mod emit;
pub mod metrics;
pub mod sink;
pub mod source;

#[cfg(test)]
mod metrics_doc;

pub use agent::{Agent, AgentError};
pub use batch::{Batch, FieldValue, Point};
pub use config::{Config, ConfigError, Valid};
pub use metrics::SelfMetrics;
pub use source::{Source, SourceError};

/// The collector's own endpoints: `GET /metrics` with its self metrics.
pub fn router(metrics: SelfMetrics) -> axum::Router {
    axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let m = metrics.clone();
            async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
                    m.encode(),
                )
            }
        }),
    )
}
