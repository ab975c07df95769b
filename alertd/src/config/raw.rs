//! The YAML as written: Alertmanager's configuration format (the subset alertd supports) plus the
//! `argus:` extension section. Unknown keys are refused; keys Alertmanager has but alertd does not
//! support yet are read (`Unsupported`) so that validation can name them.

use serde::Deserialize;
use serde::de::IgnoredAny;
use std::collections::BTreeMap;

/// A key Alertmanager knows that alertd does not support yet.
pub type Unsupported = Option<IgnoredAny>;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    #[serde(default)]
    pub global: Global,
    pub route: Option<Route>,
    #[serde(default)]
    pub inhibit_rules: Vec<InhibitRule>,
    #[serde(default)]
    pub receivers: Vec<Receiver>,
    #[serde(default)]
    pub time_intervals: Vec<TimeIntervalSet>,
    /// The older name of `time_intervals`.
    #[serde(default)]
    pub mute_time_intervals: Vec<TimeIntervalSet>,
    #[serde(default)]
    pub templates: Vec<String>,
    pub tracing: Unsupported,
    pub argus: Option<Argus>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Global {
    pub resolve_timeout: Option<String>,
    pub http_config: Unsupported,
    pub smtp_from: Unsupported,
    pub smtp_hello: Unsupported,
    pub smtp_smarthost: Unsupported,
    pub smtp_auth_username: Unsupported,
    pub smtp_auth_password: Unsupported,
    pub smtp_auth_password_file: Unsupported,
    pub smtp_auth_secret: Unsupported,
    pub smtp_auth_identity: Unsupported,
    pub smtp_require_tls: Unsupported,
    pub slack_api_url: Unsupported,
    pub slack_api_url_file: Unsupported,
    pub pagerduty_url: Unsupported,
    pub opsgenie_api_url: Unsupported,
    pub opsgenie_api_key: Unsupported,
    pub opsgenie_api_key_file: Unsupported,
    pub wechat_api_url: Unsupported,
    pub wechat_api_secret: Unsupported,
    pub wechat_api_corp_id: Unsupported,
    pub victorops_api_url: Unsupported,
    pub victorops_api_key: Unsupported,
    pub victorops_api_key_file: Unsupported,
    pub telegram_api_url: Unsupported,
    pub webex_api_url: Unsupported,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    pub receiver: Option<String>,
    pub group_by: Option<Vec<String>>,
    #[serde(default)]
    pub matchers: Vec<String>,
    /// Deprecated in Alertmanager, still accepted: equality matchers.
    #[serde(rename = "match", default)]
    pub match_eq: BTreeMap<String, String>,
    /// Deprecated in Alertmanager, still accepted: regex matchers.
    #[serde(default)]
    pub match_re: BTreeMap<String, String>,
    #[serde(rename = "continue", default)]
    pub continue_: bool,
    pub group_wait: Option<String>,
    pub group_interval: Option<String>,
    pub repeat_interval: Option<String>,
    #[serde(default)]
    pub mute_time_intervals: Vec<String>,
    #[serde(default)]
    pub active_time_intervals: Vec<String>,
    #[serde(default)]
    pub routes: Vec<Route>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InhibitRule {
    #[serde(default)]
    pub source_matchers: Vec<String>,
    #[serde(default)]
    pub target_matchers: Vec<String>,
    #[serde(default)]
    pub source_match: BTreeMap<String, String>,
    #[serde(default)]
    pub source_match_re: BTreeMap<String, String>,
    #[serde(default)]
    pub target_match: BTreeMap<String, String>,
    #[serde(default)]
    pub target_match_re: BTreeMap<String, String>,
    #[serde(default)]
    pub equal: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receiver {
    pub name: String,
    #[serde(default)]
    pub webhook_configs: Vec<Webhook>,
    pub email_configs: Unsupported,
    pub slack_configs: Unsupported,
    pub pagerduty_configs: Unsupported,
    pub opsgenie_configs: Unsupported,
    pub wechat_configs: Unsupported,
    pub pushover_configs: Unsupported,
    pub victorops_configs: Unsupported,
    pub sns_configs: Unsupported,
    pub telegram_configs: Unsupported,
    pub webex_configs: Unsupported,
    pub discord_configs: Unsupported,
    pub msteams_configs: Unsupported,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Webhook {
    pub url: Option<String>,
    pub send_resolved: Option<bool>,
    #[serde(default)]
    pub max_alerts: u64,
    pub url_file: Unsupported,
    pub http_config: Unsupported,
    pub timeout: Unsupported,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeIntervalSet {
    pub name: String,
    #[serde(default)]
    pub time_intervals: Vec<TimeInterval>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeInterval {
    #[serde(default)]
    pub times: Vec<TimeRange>,
    #[serde(default)]
    pub weekdays: Vec<String>,
    #[serde(default)]
    pub days_of_month: Vec<String>,
    #[serde(default)]
    pub months: Vec<String>,
    #[serde(default)]
    pub years: Vec<String>,
    pub location: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeRange {
    pub start_time: String,
    pub end_time: String,
}

/// `argus:` — alertd's extensions. Alertmanager itself would refuse this key.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Argus {
    /// The URL alertd is reached at, sent as `externalURL` (Alertmanager's `--web.external-url`).
    pub external_url: Option<String>,
    pub flap: Option<Flap>,
    pub correlation: Option<Correlation>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flap {
    pub window: Option<String>,
    pub threshold: Option<u32>,
    pub settle: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Correlation {
    pub labels: Option<Vec<String>>,
    pub window: Option<String>,
    pub burst_window: Option<String>,
    pub backoff_window: Option<String>,
    pub backoff_step: Option<u32>,
    pub causes: Option<Vec<Cause>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cause {
    pub name: String,
    #[serde(default)]
    pub matchers: Vec<String>,
}
