//! alertd's configuration: Alertmanager's YAML (the supported subset) plus the `argus:` section.
//! Parsed (unknown keys refused), then validated into types that cannot be invalid; every error
//! names the file, the line where it can be found, and the field.

pub mod duration;
mod http;
mod im;
mod locate;
pub mod mask;
pub mod matchers;
mod paging;
pub mod raw;
mod rules;
mod scheduler;
mod templates;
mod validate;

pub use locate::Positions;
pub(crate) use locate::line as locate;

use crate::flap::FlapConfig;
use crate::incident::CorrelationConfig;
use crate::inhibit::InhibitRule;
use crate::receiver::Receiver;
use crate::route::Route;
use crate::timeinterval::TimeInterval;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::time::Duration;

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// `global.http_config`: the HTTP settings of every HTTP receiver without its own (a private
    /// CA in front of an internal webhook, a proxy to the internet, a token).
    pub http: crate::receiver::HttpSettings,
    pub resolve_timeout: Duration,
    pub route: Route,
    pub inhibit_rules: Vec<InhibitRule>,
    pub receivers: BTreeMap<String, Receiver>,
    pub time_intervals: BTreeMap<String, Vec<TimeInterval>>,
    pub external_url: String,
    /// Flap suppression; off when the `argus.flap` section is absent.
    pub flap: Option<FlapConfig>,
    /// Incident correlation; off when the `argus.correlation` section is absent.
    pub correlation: Option<CorrelationConfig>,
    /// Escalation of unacknowledged incidents (`argus.escalation`); needs correlation.
    pub escalation: Vec<crate::escalate::EscalationRule>,
    /// Rule evaluation; off when the `argus.rules` section is absent.
    pub rules: Option<RulesConfig>,
    /// `argus.silence_until_resolved_max`: the lifetime bound of a silence until resolved.
    pub silence_until_resolved_max: Duration,
    /// `argus.history_retention`: how long the history database keeps incidents, notifications and
    /// alert history.
    pub history_retention: Duration,
}

/// `argus.history_retention` when not given.
pub const DEFAULT_HISTORY_RETENTION: Duration = Duration::from_secs(90 * 24 * 3600);

/// `argus.silence_until_resolved_max` when not given.
pub const DEFAULT_SILENCE_UNTIL_RESOLVED_MAX: Duration = Duration::from_secs(7 * 24 * 3600);

/// `argus.rules`: the rule files `argus serve` evaluates against its store, and Prometheus' flags.
#[derive(Debug, Clone, PartialEq)]
pub struct RulesConfig {
    /// As written; relative paths are read from the configuration file's directory.
    pub files: Vec<std::path::PathBuf>,
    pub opts: EvalOptions,
    pub builtins: Builtins,
    /// Whether the default rule set built into the binary is evaluated too.
    pub defaults: bool,
}

/// Prometheus' defaults for the flags of the same names.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalOptions {
    /// `--rules.alert.resend-delay`: how often a firing alert is sent again.
    pub resend_delay: Duration,
    /// `--rules.alert.for-grace-period`: the least time left before a restored alert fires.
    pub for_grace_period: Duration,
    /// `--rules.alert.for-outage-tolerance`: how old an `ALERTS_FOR_STATE` sample may be to restore from.
    pub outage_tolerance: Duration,
    /// `global.external_labels`: what templates see as `$externalLabels`, and added to each alert
    /// sent (where it lacks the label), never to the alert's own labels or to `ALERTS`.
    pub external_labels: argus_model::Labels,
    /// `--web.external-url`, without a trailing `/`: what templates see as `$externalURL`.
    pub external_url: String,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            resend_delay: Duration::from_secs(60),
            for_grace_period: Duration::from_secs(10 * 60),
            outage_tolerance: Duration::from_secs(60 * 60),
            external_labels: argus_model::Labels::default(),
            external_url: String::new(),
        }
    }
}

/// `argus.rules` built-ins, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Builtins {
    pub watchdog: bool,
    /// HostDown's input: a metric every collector sends each collection. None: no HostDown.
    pub host_down_metric: Option<String>,
    /// How long a host may be silent before HostDown fires.
    pub host_down_after: Duration,
}

impl Default for Builtins {
    fn default() -> Self {
        Builtins {
            watchdog: true,
            host_down_metric: Some("host_cpu_seconds_total".into()),
            host_down_after: Duration::from_secs(120),
        }
    }
}

/// A configuration error: `file:line: field: reason` (the line when it can be found), and the
/// further errors found in the same file, one per line after it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ConfigError {
    pub file: String,
    pub line: Option<usize>,
    pub field: String,
    pub reason: String,
    pub also: Vec<ConfigError>,
}

impl ConfigError {
    /// One error at `field` of `file`.
    pub fn new(
        file: impl Into<String>,
        line: Option<usize>,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        ConfigError { file: file.into(), line, field: field.into(), reason: reason.into(), also: Vec::new() }
    }

    /// This error and the further ones, in order.
    pub fn all(&self) -> impl Iterator<Item = &ConfigError> {
        std::iter::once(self).chain(&self.also)
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if self.field.is_empty() {
            write!(f, ": {}", self.reason)?;
        } else {
            write!(f, ": {}: {}", self.field, self.reason)?;
        }
        for e in &self.also {
            write!(f, "\n{e}")?;
        }
        Ok(())
    }
}

/// Reads and validates a configuration file.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let (src, file) = read(path)?;
    parse(&src, &file)
}

/// A file's text and its name for errors.
pub(crate) fn read(path: &Path) -> Result<(String, String), ConfigError> {
    let file = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(src) => Ok((src, file)),
        Err(e) => Err(ConfigError::new(file, None, "", format!("cannot read: {e}"))),
    }
}

/// Parses and validates configuration text; `file` names it in errors, and the template files
/// `templates:` names are read from its directory.
pub fn parse(src: &str, file: &str) -> Result<Config, ConfigError> {
    let raw: raw::File = if src.trim().is_empty() {
        raw::File::default()
    } else {
        serde_norway::from_str(src).map_err(|e| from_serde(&e, file))?
    };
    let lib = templates::load(&raw.templates, src, file)?;
    validate::validate(raw, src, file, &lib)
}

/// serde_norway's message is `path: reason at line L column C`; split it into our fields.
pub(crate) fn from_serde(e: &serde_norway::Error, file: &str) -> ConfigError {
    let mut msg = e.to_string();
    let line = e.location().map(|l| l.line());
    if let Some(i) = msg.find(" at line ") {
        msg.truncate(i);
    }
    let (field, reason) = match msg.split_once(": ") {
        Some((p, r)) if !p.contains(' ') => (p.to_string(), r.to_string()),
        _ => (String::new(), msg),
    };
    ConfigError::new(file, line, field, reason)
}

#[cfg(test)]
mod tests;
