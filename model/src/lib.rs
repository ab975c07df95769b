//! argus-model owns the vocabulary every other crate speaks: labels and series identity, samples,
//! events, label matchers, and the InfluxDB line protocol with its mapping to series.
//!
//! It is pure: no IO, no async runtime, no clocks. Everything here is a value or a function of values.

pub mod event;
pub mod labels;
pub mod lineprotocol;
pub mod matcher;
pub mod memo;
pub mod sample;
pub mod secret;
pub mod shard;
pub mod units;

pub use event::Event;
pub use labels::{Label, Labels, METRIC_NAME, valid_label_name};
pub use matcher::{MatchOp, Matcher, MatcherError};
pub use sample::Sample;
pub use secret::Secret;
pub use shard::Shard;
pub use units::FieldError;
