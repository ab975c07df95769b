//! Analyzer: learns what normal looks like and what is coming.
//!
//! - [`detect`] — anomaly detectors: dynamic thresholds per series, a multivariate isolation forest per
//!   entity, peer outliers within a job or pool. Each scores so that above 1 means anomalous.
//! - [`forecast`] — demand forecasters (naive, seasonal naive, ETS, MSTL, LSTM) behind one trait, and the
//!   per-series model choice by rolling-origin backtest.
//! - [`eval`] — the evaluation commands (`argus eval nab|anomaly|forecast`), running the same code as the
//!   runtime.
//!
//! The runtime (reading series from the store, writing scores and forecasts back, posting anomalies to
//! alertd) lives beside these and reaches the store only through `argus_store_api::backend::StoreBackend`.

pub mod capacity;
pub mod detect;
pub mod eval;
pub mod forecast;
pub mod runtime;
pub mod simulate;
