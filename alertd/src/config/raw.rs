//! The YAML as written: Alertmanager's configuration format (the subset alertd supports) plus the
//! `argus:` extension section. Unknown keys are refused; keys Alertmanager has but alertd does not
//! support yet are read (`Unsupported`) so that validation can name them.

use serde::Deserialize;
use serde::de::IgnoredAny;
use std::collections::BTreeMap;

pub use crate::timeinterval::raw::{TimeInterval, TimeRange};

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
    pub http_config: Option<HttpConfig>,
    /// Defaults of every `email_configs` entry.
    pub smtp_from: Option<String>,
    pub smtp_hello: Option<String>,
    pub smtp_smarthost: Option<String>,
    pub smtp_auth_username: Option<String>,
    pub smtp_auth_password: Option<String>,
    pub smtp_auth_password_file: Option<String>,
    pub smtp_auth_secret: Unsupported,
    pub smtp_auth_identity: Unsupported,
    pub smtp_require_tls: Option<bool>,
    /// Default of every `slack_configs` entry's `api_url`.
    pub slack_api_url: Option<String>,
    pub slack_api_url_file: Option<String>,
    pub pagerduty_url: Option<String>,
    pub opsgenie_api_url: Option<String>,
    pub opsgenie_api_key: Option<String>,
    pub opsgenie_api_key_file: Option<String>,
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
    #[serde(default)]
    pub email_configs: Vec<Email>,
    #[serde(default)]
    pub slack_configs: Vec<Slack>,
    #[serde(default)]
    pub pagerduty_configs: Vec<PagerDuty>,
    #[serde(default)]
    pub opsgenie_configs: Vec<OpsGenie>,
    pub wechat_configs: Unsupported,
    pub pushover_configs: Unsupported,
    pub victorops_configs: Unsupported,
    pub sns_configs: Unsupported,
    pub telegram_configs: Unsupported,
    pub webex_configs: Unsupported,
    pub discord_configs: Unsupported,
    pub msteams_configs: Unsupported,
    /// alertd's own receivers: Chinese IM group robots.
    #[serde(default)]
    pub dingtalk_configs: Vec<Robot>,
    #[serde(default)]
    pub feishu_configs: Vec<Robot>,
    #[serde(default)]
    pub wecom_configs: Vec<Robot>,
    /// alertd's own receiver: capacity plans, critical events and remediation for a scheduler.
    #[serde(default)]
    pub scheduler_configs: Vec<Scheduler>,
    pub argus: Option<ReceiverArgus>,
}

/// `scheduler_configs[]` (alertd's own): a scheduler endpoint that takes critical events and
/// capacity plans as signed JSON, and the remediation alertd may carry out for it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scheduler {
    pub url: Option<String>,
    pub hmac_secret: Option<String>,
    pub hmac_secret_file: Option<String>,
    pub signature_header: Option<String>,
    pub http_config: Option<HttpConfig>,
    /// `critical` (alerts routed to the receiver), `capacity` (the analyzer's plans); default both.
    pub events: Option<Vec<String>>,
    pub send_resolved: Option<bool>,
    pub timeout: Option<String>,
    pub remediation: Option<Remediation>,
}

/// `scheduler_configs[].remediation`: cordoning nodes with GPU faults. Off unless a target is set
/// and `enabled: true`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Remediation {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub dry_run: bool,
    /// The label naming the node; default `node`, then `host`, then `instance` without its port.
    pub node_label: Option<String>,
    pub kubernetes: Option<Kubernetes>,
    pub slurm: Option<Slurm>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kubernetes {
    /// Default: in-cluster (`https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`).
    pub api_url: Option<String>,
    pub bearer_token_file: Option<String>,
    pub ca_file: Option<String>,
    /// `taint` (default) or `condition`.
    pub action: Option<String>,
    pub taint_key: Option<String>,
    pub taint_effect: Option<String>,
    pub timeout: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slurm {
    pub scontrol: Option<String>,
    pub timeout: Option<String>,
}

/// `receivers[].argus:` — storm control.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiverArgus {
    pub rate_limit: Option<RateLimit>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    pub max: u32,
    pub per: String,
}

/// Alertmanager's `http_config` (prometheus/common's HTTP client settings): in `global:` for every
/// HTTP receiver, or in one receiver's entry for it alone.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    pub authorization: Option<Authorization>,
    pub basic_auth: Option<BasicAuth>,
    pub bearer_token: Option<String>,
    pub bearer_token_file: Option<String>,
    pub tls_config: Option<TlsConfig>,
    pub proxy_url: Option<String>,
    pub no_proxy: Option<String>,
    pub proxy_from_environment: Option<bool>,
    pub follow_redirects: Option<bool>,
    /// Accepted and ignored: alertd speaks HTTP/1.1 to receivers.
    pub enable_http2: Option<bool>,
    pub oauth2: Unsupported,
    pub proxy_connect_header: Unsupported,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Authorization {
    /// Default `Bearer`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub credentials: Option<String>,
    pub credentials_file: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    pub username: Option<String>,
    pub username_file: Option<String>,
    pub password: Option<String>,
    pub password_file: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate authorities trusted besides the system's.
    pub ca_file: Option<String>,
    pub ca: Option<String>,
    /// A client certificate and its key (PEM), for receivers that require mutual TLS.
    pub cert: Option<String>,
    pub cert_file: Option<String>,
    pub key: Option<String>,
    pub key_file: Option<String>,
    pub insecure_skip_verify: Option<bool>,
    pub min_version: Option<String>,
    pub max_version: Option<String>,
    pub server_name: Unsupported,
}

/// Alertmanager's `slack_configs`; the attachment's text fields take notification templates.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slack {
    pub api_url: Option<String>,
    pub channel: Option<String>,
    pub username: Option<String>,
    pub icon_emoji: Option<String>,
    pub send_resolved: Option<bool>,
    pub api_url_file: Option<String>,
    pub http_config: Option<HttpConfig>,
    pub icon_url: Option<String>,
    pub color: Option<String>,
    pub title: Option<String>,
    pub title_link: Option<String>,
    pub pretext: Option<String>,
    pub text: Option<String>,
    pub fields: Unsupported,
    pub short_fields: Unsupported,
    pub footer: Option<String>,
    pub fallback: Option<String>,
    pub callback_id: Unsupported,
    pub image_url: Option<String>,
    pub thumb_url: Option<String>,
    pub link_names: Unsupported,
    pub mrkdwn_in: Unsupported,
    pub actions: Unsupported,
    pub argus: Option<ImArgus>,
}

/// Alertmanager's `email_configs`; `html`, `text` and the `Subject` header take notification
/// templates.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Email {
    pub to: Option<String>,
    pub from: Option<String>,
    pub smarthost: Option<String>,
    pub hello: Option<String>,
    pub auth_username: Option<String>,
    pub auth_password: Option<String>,
    pub require_tls: Option<bool>,
    pub send_resolved: Option<bool>,
    pub auth_password_file: Option<String>,
    pub auth_secret: Unsupported,
    pub auth_identity: Unsupported,
    pub tls_config: Unsupported,
    pub html: Option<String>,
    pub text: Option<String>,
    pub headers: Option<BTreeMap<String, String>>,
    pub argus: Option<ImArgus>,
}

/// Alertmanager's `pagerduty_configs`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PagerDuty {
    pub routing_key: Option<String>,
    pub routing_key_file: Option<String>,
    pub service_key: Option<String>,
    pub service_key_file: Option<String>,
    pub url: Option<String>,
    pub client: Option<String>,
    pub client_url: Option<String>,
    pub description: Option<String>,
    pub severity: Option<String>,
    pub source: Option<String>,
    pub class: Option<String>,
    pub component: Option<String>,
    pub group: Option<String>,
    pub details: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub links: Vec<PagerDutyLink>,
    pub images: Unsupported,
    pub send_resolved: Option<bool>,
    pub http_config: Option<HttpConfig>,
    pub timeout: Option<String>,
    pub argus: Option<ImArgus>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PagerDutyLink {
    pub href: String,
    #[serde(default)]
    pub text: String,
}

/// Alertmanager's `opsgenie_configs`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpsGenie {
    pub api_key: Option<String>,
    pub api_key_file: Option<String>,
    pub api_url: Option<String>,
    pub message: Option<String>,
    pub description: Option<String>,
    pub source: Option<String>,
    #[serde(default)]
    pub details: BTreeMap<String, String>,
    #[serde(default)]
    pub responders: Vec<OpsGenieResponder>,
    pub tags: Option<String>,
    pub note: Option<String>,
    pub priority: Option<String>,
    pub entity: Option<String>,
    pub actions: Option<String>,
    pub update_alerts: Option<bool>,
    pub visible_to: Unsupported,
    pub send_resolved: Option<bool>,
    pub http_config: Option<HttpConfig>,
    pub timeout: Option<String>,
    pub argus: Option<ImArgus>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpsGenieResponder {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub username: String,
}

/// `slack_configs[].argus:`, `email_configs[].argus:`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImArgus {
    /// `en` (default) or `zh`.
    pub language: Option<String>,
}

/// A group robot: `dingtalk_configs`, `feishu_configs`, `wecom_configs` (alertd's own keys).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Robot {
    pub url: Option<String>,
    pub secret: Option<String>,
    pub send_resolved: Option<bool>,
    pub language: Option<String>,
    pub timeout: Option<String>,
    pub http_config: Option<HttpConfig>,
    pub mentions: Option<Mentions>,
}

/// `<robot>_configs[].mentions`: who is @-mentioned in a firing notification.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mentions {
    #[serde(default)]
    pub mobiles: Vec<String>,
    #[serde(default)]
    pub user_ids: Vec<String>,
    #[serde(default)]
    pub all: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Webhook {
    pub url: Option<String>,
    pub send_resolved: Option<bool>,
    #[serde(default)]
    pub max_alerts: u64,
    pub url_file: Option<String>,
    pub http_config: Option<HttpConfig>,
    pub timeout: Option<String>,
    pub argus: Option<WebhookArgus>,
}

/// `webhook_configs[].argus:` — signing the body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookArgus {
    pub hmac_secret: Option<String>,
    pub signature_header: Option<String>,
    pub body_template: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeIntervalSet {
    pub name: String,
    #[serde(default)]
    pub time_intervals: Vec<TimeInterval>,
}

/// `argus:` — alertd's extensions. Alertmanager itself would refuse this key.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Argus {
    /// The URL alertd is reached at, sent as `externalURL` (Alertmanager's `--web.external-url`).
    pub external_url: Option<String>,
    pub flap: Option<Flap>,
    pub correlation: Option<Correlation>,
    #[serde(default)]
    pub escalation: Vec<Escalation>,
    pub rules: Option<Rules>,
    /// The longest a silence until resolved lasts when its alerts never resolve (default 7d).
    pub silence_until_resolved_max: Option<String>,
    /// How long incidents, notifications and alert history are kept (default 90d).
    pub history_retention: Option<String>,
}

/// `argus.escalation[]`: an unacknowledged incident notified to another receiver after a delay.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Escalation {
    /// Default `severity="critical"`.
    pub matchers: Option<Vec<String>>,
    pub after: Option<String>,
    pub receiver: Option<String>,
}

/// Prometheus rule evaluation against the store (`argus serve` only).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    /// Prometheus rule files; relative paths are read from the configuration file's directory.
    #[serde(default)]
    pub files: Vec<String>,
    pub resend_delay: Option<String>,
    pub for_grace_period: Option<String>,
    pub for_outage_tolerance: Option<String>,
    /// Prometheus' `global.external_labels`, for templates and the alerts sent.
    pub external_labels: Option<std::collections::BTreeMap<String, String>>,
    /// Prometheus' `--web.external-url`, for templates.
    pub external_url: Option<String>,
    /// The built-in Watchdog alert; default on.
    pub watchdog: Option<bool>,
    /// The built-in HostDown alert; default on.
    pub host_down: Option<bool>,
    pub host_down_metric: Option<String>,
    pub host_down_after: Option<String>,
    /// The default rule set built into the binary (config/rules/defaults.yml); default on.
    pub defaults: Option<bool>,
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
    pub update_interval: Option<String>,
    /// How long after an incident closes a new one at its place, with its alertnames, recurs it.
    pub recurrence_window: Option<String>,
    pub causes: Option<Vec<Cause>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cause {
    pub name: String,
    #[serde(default)]
    pub matchers: Vec<String>,
}
