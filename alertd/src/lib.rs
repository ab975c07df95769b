//! argus-alertd owns the notification pipeline: alerts in Alertmanager's API v2 shape go through
//! routing, aggregation groups and their timers, inhibition, silences, time intervals, dedup against
//! a notification log, and out as webhook v4 messages — Alertmanager's semantics, in its words —
//! plus alertd's own flap suppression and incident correlation (`argus:` in the config).
//!
//! `Engine` is the whole pipeline as a deterministic state machine over explicit times; `runner`
//! drives it on tokio time and `replay` in virtual time.

pub mod alert;
pub mod api;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod db;
pub mod deliver;
pub mod dispatch;
pub mod engine;
pub mod escalate;
pub mod flap;
pub mod incident;
pub mod inhibit;
pub mod memory;
pub mod mute;
pub mod nflog;
pub mod notify;
pub mod outbox;
pub mod receiver;
pub mod replay;
pub mod route;
pub mod rules;
pub mod runner;
pub mod silence;
pub mod store;
pub mod suppressed;
pub mod time;
pub mod timeinterval;
pub mod webhook;

pub use alert::{Alert, Fingerprint, PostableAlert};
pub use config::{Config, ConfigError};
pub use engine::Engine;
pub use time::Timestamp;

/// The configuration the unit tests and the timeline tests start from.
#[cfg(test)]
#[path = "../tests/it/support/fixture.rs"]
mod fixture;
