//! The analyzer's integration tests, one binary: its runtimes driven through the public API.

mod forecast_runtime;
mod multivariate_runtime;
mod runtime;
