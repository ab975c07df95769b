//! argus-store-api: what the parts of Argus that read and write series need of a store, without the
//! store. The rules, the analyzer and alertd reach the configured store (the embedded engine or a
//! remote one) through [`backend::StoreBackend`]; the collector and the remote backends speak
//! [`remote_write`]; rule files and the analyzer's configuration are checked with [`promql`].
//!
//! It depends on no storage engine and no HTTP client or server, so a role that does not hold the
//! store builds and runs without it. The implementations of the trait live in argus-store.

pub mod backend;
pub mod openapi;
pub mod promql;
pub mod remote_write;
pub mod scope;
pub mod secret_file;

pub use backend::{BackendError, BoxFuture, QueryValue, Series, StoreBackend};
pub use remote_write::WriteSeries;
pub use scope::LabelScope;
pub use secret_file::{SecretFile, SecretSource};
