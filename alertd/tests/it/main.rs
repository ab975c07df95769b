//! alertd's integration tests, one binary: the engine, replay, receivers and the scheduler driven
//! through alertd's public API.

mod support;
mod timeline_harness;

mod email;
mod remediation_slurm;
mod replay;
mod scheduler_capacity;
mod secrets;
mod suppressed;
mod templates;
mod timeline;
mod tls;
