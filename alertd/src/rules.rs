//! Prometheus rule evaluation: rule files (`file`; `load_each` skips a refused file and reports
//! it), rule templates expanded as Prometheus expands them (`template`: Go's text/template language
//! with Prometheus' functions, `$labels`, `$value`, `$externalLabels`, `$externalURL`), each alerting
//! rule's pending → firing → resolved state (`alerting`), the groups evaluated on their interval
//! against a [`StoreBackend`](argus_store_api::backend::StoreBackend) (`group`), with alerts posted
//! into the engine as API v2 posts are, and what the running groups show of themselves for the
//! rules API (`status`).

pub mod alerting;
pub mod builtin;
pub mod file;
pub mod forecast;
pub mod group;
pub mod status;
pub mod template;

#[cfg(test)]
mod defaults_tests;

pub use file::{load, load_each, parse};

use crate::config::ConfigError;
use std::collections::BTreeMap;
use std::time::Duration;

/// Prometheus' `evaluation_interval` default, for groups that name no `interval`.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

/// A validated rule group.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleGroup {
    /// The file it was read from (for logs).
    pub file: String,
    pub name: String,
    pub interval: Duration,
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    Alerting(AlertingRule),
    Recording(RecordingRule),
}

/// `alert:` — fires when `expr` returns samples for `for`, keeps firing `keep_firing_for` after.
/// `forecast:` is one too, with `forecast` set and `expr` the band's selector.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertingRule {
    pub name: String,
    pub expr: String,
    /// A forecast-band rule's comparison, evaluated in place of `expr`.
    pub forecast: Option<forecast::ForecastSpec>,
    pub hold: Duration,
    pub keep_firing_for: Duration,
    /// Values are templates.
    pub labels: BTreeMap<String, String>,
    /// Values are templates.
    pub annotations: BTreeMap<String, String>,
}

/// `record:` — writes `expr`'s result as series named `record`.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordingRule {
    pub record: String,
    pub expr: String,
    pub labels: BTreeMap<String, String>,
}

/// How often the built-in group (Watchdog, HostDown) is evaluated.
pub const BUILTIN_INTERVAL: Duration = Duration::from_secs(15);

/// Rule files, each an error naming its file, line and field.
pub fn load_all(paths: &[std::path::PathBuf]) -> Result<Vec<RuleGroup>, ConfigError> {
    let mut groups = Vec::new();
    for p in paths {
        groups.extend(load(p)?);
    }
    Ok(groups)
}
