//! argus-store owns the data: the embedded time-series engine (head, WAL, compressed blocks,
//! compaction, retention), the event log of string fields, and the HTTP APIs that write and read it
//! (InfluxDB line protocol, Prometheus remote write, the Prometheus query API), and the
//! [`backend::StoreBackend`] trait through which the analyzer and alertd reach it or a remote store.

pub mod backend;
pub mod block;
mod bytes;
pub mod chunk;
pub mod db;
pub mod head;
pub mod http;
pub mod metrics;
pub mod postings;
pub mod query;
pub mod wal;

pub use argus_store_api::remote_write;
pub(crate) use db::matches;
pub use db::{Db, DbError, Options, Series};
