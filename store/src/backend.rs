//! The store backends: implementations of [`StoreBackend`] (defined in argus-store-api, so that the
//! rules, the analyzer and alertd depend on the trait alone) for the embedded engine, a
//! Prometheus-compatible remote (VictoriaMetrics single-node or cluster, Prometheus, Mimir, Thanos) and
//! InfluxDB 2. Every one answers in the shapes the trait documents. Operator docs: docs/backends.md.

mod client;
pub mod embedded;
mod failover;
#[cfg(feature = "influxdb2")]
pub mod influxdb2;
mod lineproto;
mod options;
pub mod prometheus;

#[cfg(feature = "influxdb2")]
pub use self::influxdb2::Influxdb2;
pub use argus_store_api::backend::{BackendError, BoxFuture, QueryValue, Series, StoreBackend};
pub use embedded::Embedded;
pub use lineproto::split_name;
pub use options::{Auth, BasicAuth, Flavour, HttpOptions, InfluxSpec, Influxdb2Options, PrometheusOptions, RemoteSpec};
pub use options::{DEFAULT_TIMEOUT, Secret, WriteProtocol};
pub use prometheus::{Prometheus, ReadProxy};

use std::sync::Arc;

/// A remote backend, validated and ready to connect.
// Built once at startup and consumed by `connect`: the size difference costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum RemoteOptions {
    Prometheus(PrometheusOptions),
    Influxdb2(Influxdb2Options),
}

/// Builds the client of a remote backend (reads the CA file; no request is sent). Fails on an
/// unreadable CA file, and for InfluxDB 2 when this build lacks the `influxdb2` feature.
pub fn connect(opts: RemoteOptions) -> Result<Arc<dyn StoreBackend>, BackendError> {
    match opts {
        RemoteOptions::Prometheus(mut o) if !o.failover.is_empty() => {
            let rest = std::mem::take(&mut o.failover);
            let mut members: Vec<Box<dyn StoreBackend>> = vec![Box::new(Prometheus::new(o)?)];
            for f in rest {
                members.push(Box::new(Prometheus::new(f)?));
            }
            Ok(Arc::new(failover::Failover::new(members)))
        }
        RemoteOptions::Prometheus(o) => Ok(Arc::new(Prometheus::new(o)?)),
        #[cfg(feature = "influxdb2")]
        RemoteOptions::Influxdb2(o) => Ok(Arc::new(Influxdb2::new(o)?)),
        #[cfg(not(feature = "influxdb2"))]
        RemoteOptions::Influxdb2(_) => {
            Err(BackendError::Config("this build has no influxdb2 backend (cargo feature `influxdb2`)".into()))
        }
    }
}
