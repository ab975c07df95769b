//! Evaluation commands: NAB, multivariate anomaly benchmarks and forecasting, each running the same
//! detectors and forecasters as the runtime.

pub mod anomaly;
pub mod forecast;
mod forecast_plot;
pub mod metrics;
pub mod nab;
