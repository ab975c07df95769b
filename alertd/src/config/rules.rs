//! `argus.rules`, validated: the rule files, Prometheus' rule-evaluation flags, the external labels
//! and URL rule templates see, and the built-in rules.

use super::validate::Ctx;
use super::{Builtins, ConfigError, EvalOptions, RulesConfig, raw};
use argus_model::{Labels, valid_label_name};
use std::path::PathBuf;

/// The rules section, or the defaults when it is absent: the default rule set alone, the built-ins off.
pub(super) fn validate(c: &Ctx, rules: Option<&raw::Rules>) -> Result<Option<RulesConfig>, ConfigError> {
    let Some(r) = rules else {
        return Ok(Some(RulesConfig {
            files: Vec::new(),
            opts: EvalOptions::default(),
            builtins: Builtins { watchdog: false, host_down_metric: None, ..Builtins::default() },
            defaults: true,
        }));
    };
    let d = EvalOptions::default();
    let opts = EvalOptions {
        resend_delay: c.duration("argus.rules.resend_delay", "resend_delay", &r.resend_delay, d.resend_delay)?,
        for_grace_period: c.duration(
            "argus.rules.for_grace_period",
            "for_grace_period",
            &r.for_grace_period,
            d.for_grace_period,
        )?,
        outage_tolerance: c.duration(
            "argus.rules.for_outage_tolerance",
            "for_outage_tolerance",
            &r.for_outage_tolerance,
            d.outage_tolerance,
        )?,
        external_labels: external_labels(c, &r.external_labels)?,
        external_url: match &r.external_url {
            None => String::new(),
            Some(u) => external_url(u).map_err(|e| c.err("argus.rules.external_url", "external_url:", e))?,
        },
    };
    if let Some(i) = r.files.iter().position(|f| f.is_empty()) {
        return Err(c.err(format!("argus.rules.files[{i}]"), "files:", "must not be empty"));
    }
    let b = Builtins::default();
    let metric = r.host_down_metric.clone().or(b.host_down_metric);
    if metric.as_deref().is_some_and(|m| m.is_empty()) {
        return Err(c.err("argus.rules.host_down_metric", "host_down_metric:", "must not be empty"));
    }
    let builtins = Builtins {
        watchdog: r.watchdog.unwrap_or(b.watchdog),
        host_down_metric: metric.filter(|_| r.host_down.unwrap_or(true)),
        host_down_after: c.duration(
            "argus.rules.host_down_after",
            "host_down_after",
            &r.host_down_after,
            b.host_down_after,
        )?,
    };
    let files = r.files.iter().map(PathBuf::from).collect();
    Ok(Some(RulesConfig { files, opts, builtins, defaults: r.defaults.unwrap_or(true) }))
}

/// Prometheus' `global.external_labels`: label names as PromQL writes them, not reserved (`__`),
/// values not empty (an empty value would mean the label is absent).
fn external_labels(c: &Ctx, map: &Option<std::collections::BTreeMap<String, String>>) -> Result<Labels, ConfigError> {
    let Some(map) = map else { return Ok(Labels::default()) };
    for (k, v) in map {
        let field = format!("argus.rules.external_labels.{k}");
        if !valid_label_name(k) || k.starts_with("__") {
            return Err(c.err(field, k, format!("{k:?} is not a valid label name (reserved names start with __)")));
        }
        if v.is_empty() {
            return Err(c.err(field, k, "must not be empty"));
        }
    }
    Ok(Labels::from_pairs(map.iter().map(|(k, v)| (k.as_str(), v.as_str()))))
}

/// Prometheus' `--web.external-url`: an absolute http(s) URL, kept without a trailing `/` as
/// Prometheus hands it to templates.
fn external_url(u: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(u).map_err(|e| format!("invalid URL {u:?}: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("invalid URL {u:?}: the scheme must be http or https"));
    }
    Ok(u.trim_end_matches('/').to_string())
}
