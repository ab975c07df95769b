//! argus-store owns the data: the embedded time-series engine (head, WAL, compressed blocks,
//! compaction, retention), the event log of string fields, and the HTTP APIs that write and read it
//! (InfluxDB line protocol, Prometheus remote write, the Prometheus query API), and the
//! implementations of argus-store-api's `StoreBackend` (`backend`) for it and for remote stores.
//!
//! The engine's internals (head, postings, WAL, metrics) are private; `block` and `chunk` stay public
//! for the fuzz targets and the compression example, which exercise them directly.

pub mod backend;
pub mod block;
mod bytes;
pub mod chunk;
mod db;
mod float_text;
mod head;
pub mod http;
mod metrics;
mod postings;
pub mod query;
mod wal;

pub use argus_store_api::remote_write;
pub(crate) use db::matches;
pub use db::{
    Db, DbError, Options, Pressure, SNAPSHOTS_DIR, Series, Snapshot, SnapshotError, SnapshotPart, WriteError,
    WriteStats, now_ms,
};
pub use wal::WalSync;
