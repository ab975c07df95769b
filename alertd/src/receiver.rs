//! Receivers: where notifications go. A receiver has integrations of several kinds, each a noun
//! named after what it talks to (`webhook`, `slack`, `dingtalk`, `feishu`, `wecom`, `email`,
//! `scheduler`); the kind is also its config key (`<kind>_configs`) and the middle of its
//! notification-log name.
//!
//! These are settings only, validated by `config` and acted on by `deliver`; nothing here reaches
//! either, so both can build on it.

pub mod notification;
pub mod template;

use argus_model::Secret;
use notification::Text;
use std::path::PathBuf;
use std::time::Duration;
use template::BodyTemplate;

/// A named receiver and its integrations.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Receiver {
    pub name: String,
    pub webhooks: Vec<WebhookConfig>,
    pub slack: Vec<SlackConfig>,
    pub dingtalk: Vec<RobotConfig>,
    pub feishu: Vec<RobotConfig>,
    pub wecom: Vec<RobotConfig>,
    pub email: Vec<EmailConfig>,
    pub pagerduty: Vec<PagerDutyConfig>,
    pub opsgenie: Vec<OpsGenieConfig>,
    /// `scheduler_configs` (alertd's own): events and capacity plans to a cluster scheduler.
    pub scheduler: Vec<SchedulerConfig>,
    /// `argus.rate_limit`: each integration sends at most `max` messages per `per`; what the limit
    /// holds goes out batched as one message.
    pub rate_limit: Option<(u32, Duration)>,
}

/// What the pipeline needs to know of one integration, whatever its kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Integration {
    pub kind: &'static str,
    /// Its place among the receiver's integrations of this kind.
    pub index: usize,
    /// Whether resolved alerts are sent.
    pub send_resolved: bool,
    /// At most this many alerts per message, the rest counted in `truncatedAlerts`; 0 = all.
    pub max_alerts: u64,
}

/// Alertmanager's `http_config` of one HTTP integration: how alertd authenticates, which TLS it
/// accepts and which proxy it goes through. An integration with none uses `global.http_config`
/// (Alertmanager's rule: a receiver's `http_config` replaces the global one, it is not merged).
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    /// The `Authorization` header: `authorization`, `basic_auth` or `bearer_token`.
    pub authorization: Option<Authorization>,
    pub tls: TlsSettings,
    pub proxy: ProxySettings,
    /// Default true, as Alertmanager's.
    pub follow_redirects: bool,
    /// Where the settings are written, for errors met when they are used (`global.http_config`,
    /// `receivers "team" webhook_configs[0].http_config`).
    pub field: String,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            authorization: None,
            tls: TlsSettings::default(),
            proxy: ProxySettings::Environment,
            follow_redirects: true,
            field: "global.http_config".into(),
        }
    }
}

/// The `Authorization` header an HTTP integration sends. Files are read at every request, so a
/// rotated token (a Kubernetes projected secret) is used without a reload.
#[derive(Debug, Clone, PartialEq)]
pub enum Authorization {
    /// `authorization: {type, credentials | credentials_file}` and `bearer_token(_file)`.
    Scheme { scheme: String, credentials: SecretSource },
    /// `basic_auth: {username | username_file, password | password_file}`.
    Basic { username: SecretSource, password: Option<SecretSource> },
}

/// `http_config.tls_config`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TlsSettings {
    /// `ca` / `ca_file`: PEM certificate authorities trusted besides the system's.
    pub ca: Option<SecretSource>,
    /// `cert` / `cert_file` and `key` / `key_file`: a client certificate (mutual TLS).
    pub client: Option<(SecretSource, SecretSource)>,
    pub insecure_skip_verify: bool,
    /// `min_version` / `max_version`: `TLS10` … `TLS13`.
    pub min_version: Option<TlsVersion>,
    pub max_version: Option<TlsVersion>,
}

/// A TLS protocol version as Alertmanager spells it (`TLS12`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    Tls10,
    Tls11,
    Tls12,
    Tls13,
}

/// Which proxy HTTP requests go through.
#[derive(Debug, Clone, PartialEq)]
pub enum ProxySettings {
    /// `HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` from the environment, when set: alertd's
    /// behaviour with no proxy configured, and `proxy_from_environment: true`.
    Environment,
    /// `proxy_url` (a secret: it may carry credentials), except for the hosts in `no_proxy`.
    Url { url: Secret, no_proxy: Option<String> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct WebhookConfig {
    /// A secret, as in Alertmanager: webhook URLs often carry tokens (`url` or `url_file`).
    pub url: SecretSource,
    /// Its own `http_config`; None: `global.http_config`.
    pub http: Option<HttpSettings>,
    /// Whether resolved alerts are sent (Alertmanager's default: true).
    pub send_resolved: bool,
    pub max_alerts: u64,
    /// Alertmanager's `timeout`; alertd's default is 10 s.
    pub timeout: Duration,
    /// `argus.hmac_secret`: sign each body with HMAC-SHA256.
    pub hmac_secret: Option<Secret>,
    /// `argus.signature_header`: where the signature goes.
    pub signature_header: String,
    /// `argus.body_template`: a custom JSON body instead of the v4 message.
    pub body_template: Option<BodyTemplate>,
}

/// Message language of the IM receivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Language {
    #[default]
    En,
    Zh,
}

/// Slack's incoming webhook (Alertmanager's `slack_configs`).
#[derive(Debug, Clone, PartialEq)]
pub struct SlackConfig {
    /// `api_url` / `api_url_file`, else `global.slack_api_url` / `slack_api_url_file`.
    pub api_url: SecretSource,
    pub http: Option<HttpSettings>,
    /// `channel`, `username`, `icon_emoji`: notification templates, sent when they render non-empty.
    pub channel: Option<Text>,
    pub username: Option<Text>,
    pub icon_emoji: Option<Text>,
    /// The fields written as notification templates; each one unset keeps alertd's own.
    pub templates: SlackTemplates,
    /// Alertmanager's default for Slack: false.
    pub send_resolved: bool,
    pub language: Language,
    pub timeout: Duration,
}

/// Slack's templated fields: the message's `icon_url` and the attachment's others.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SlackTemplates {
    pub title: Option<Text>,
    pub title_link: Option<Text>,
    pub pretext: Option<Text>,
    pub text: Option<Text>,
    pub fallback: Option<Text>,
    pub color: Option<Text>,
    pub footer: Option<Text>,
    pub icon_url: Option<Text>,
    pub image_url: Option<Text>,
    pub thumb_url: Option<Text>,
}

/// A group robot: DingTalk, Feishu/Lark or WeCom (`url`, an optional signing `secret`).
#[derive(Debug, Clone, PartialEq)]
pub struct RobotConfig {
    pub url: Secret,
    /// Its own `http_config` (a proxy to the internet, most often); None: `global.http_config`.
    pub http: Option<HttpSettings>,
    /// Signs requests (DingTalk and Feishu); WeCom robots have none.
    pub secret: Option<Secret>,
    pub send_resolved: bool,
    pub language: Language,
    pub timeout: Duration,
    /// Who is @-mentioned when the notification is firing (never on resolution).
    pub mentions: Mentions,
}

/// `mentions`: DingTalk mentions by mobile number and user id, Feishu by user id (`open_id`), WeCom
/// by user id; `all` mentions everyone (DingTalk, Feishu).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Mentions {
    pub mobiles: Vec<String>,
    pub user_ids: Vec<String>,
    pub all: bool,
}

impl Mentions {
    pub fn is_empty(&self) -> bool {
        self.mobiles.is_empty() && self.user_ids.is_empty() && !self.all
    }
}

/// Email over SMTP (Alertmanager's `email_configs`; unset keys come from the global `smtp_*` ones).
#[derive(Debug, Clone, PartialEq)]
pub struct EmailConfig {
    pub to: Vec<String>,
    pub from: String,
    pub host: String,
    pub port: u16,
    pub hello: Option<String>,
    pub auth_username: Option<String>,
    /// `auth_password` / `auth_password_file`, read at every send.
    pub auth_password: Option<SecretSource>,
    pub tls: EmailTls,
    /// The `Subject` header, `text` and `html` written as notification templates; each one unset
    /// keeps alertd's own.
    pub subject: Option<Text>,
    pub text: Option<Text>,
    pub html: Option<Text>,
    /// Alertmanager's default for email: false.
    pub send_resolved: bool,
    pub language: Language,
    pub timeout: Duration,
}

/// How the SMTP connection is secured: Alertmanager's rule is implicit TLS on port 465, else
/// STARTTLS when `require_tls` (the default), else none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmailTls {
    Implicit,
    StartTls,
    None,
}

/// PagerDuty's Events API (Alertmanager's `pagerduty_configs`; `client`, `client_url`,
/// `description` and the `details` values take notification templates).
#[derive(Debug, Clone, PartialEq)]
pub struct PagerDutyConfig {
    /// `routing_key` (Events API v2) or `service_key` (v1), each also from a file.
    pub key: PagerDutyKey,
    /// The events endpoint; default v2's (or `global.pagerduty_url`), v1's for a service key.
    pub url: String,
    pub http: Option<HttpSettings>,
    /// `client` (default "Argus alertd") and `client_url` (default the external URL).
    pub client: Text,
    pub client_url: Option<Text>,
    /// `description`: the summary; default the notification's title.
    pub description: Option<Text>,
    /// `severity` (default `error`), `source` (default `client`), `class`, `component`, `group`.
    pub severity: String,
    pub source: Option<String>,
    pub class: Option<String>,
    pub component: Option<String>,
    pub group: Option<String>,
    /// `details`; default the firing and resolved alerts and their counts, as Alertmanager's.
    pub details: Option<std::collections::BTreeMap<String, Text>>,
    pub links: Vec<(String, String)>,
    /// Default true.
    pub send_resolved: bool,
    pub language: Language,
    pub timeout: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PagerDutyKey {
    Routing(SecretSource),
    Service(SecretSource),
}

/// PagerDuty's Events API v2 endpoint.
pub const PAGERDUTY_V2_URL: &str = "https://events.pagerduty.com/v2/enqueue";
/// PagerDuty's Events API v1 endpoint, for service keys.
pub const PAGERDUTY_V1_URL: &str = "https://events.pagerduty.com/generic/2010-04-15/create_event.json";

/// Opsgenie's Alert API (Alertmanager's `opsgenie_configs`; `message`, `description`, `note` and
/// the `details` values take notification templates).
#[derive(Debug, Clone, PartialEq)]
pub struct OpsGenieConfig {
    /// `api_key` / `api_key_file`, else the global ones: sent as `Authorization: GenieKey …`.
    pub api_key: SecretSource,
    /// Ends in `/`; default `https://api.opsgenie.com/` or `global.opsgenie_api_url`.
    pub api_url: String,
    pub http: Option<HttpSettings>,
    /// `message` (default the title, at most 130 characters) and `description` (default the text).
    pub message: Option<Text>,
    pub description: Option<Text>,
    /// `source` (default the external URL).
    pub source: Option<String>,
    /// Merged over the common labels, as Alertmanager's.
    pub details: std::collections::BTreeMap<String, Text>,
    /// `(type, id, name, username)`; type `teams` names several teams, comma-separated.
    pub responders: Vec<OpsGenieResponder>,
    pub tags: Vec<String>,
    pub note: Option<Text>,
    /// `P1` … `P5`.
    pub priority: Option<String>,
    pub entity: Option<String>,
    pub actions: Vec<String>,
    /// Also update an open alert's message and description (two more requests).
    pub update_alerts: bool,
    pub send_resolved: bool,
    pub language: Language,
    pub timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct OpsGenieResponder {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
}

/// Opsgenie's API root.
pub const OPSGENIE_API_URL: &str = "https://api.opsgenie.com/";

/// A validated `scheduler_configs` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerConfig {
    /// A secret, as the webhook's: scheduler URLs may carry tokens.
    pub url: Secret,
    /// Signs each body with HMAC-SHA256 in `signature_header`.
    pub hmac_secret: Option<SecretSource>,
    pub signature_header: String,
    /// Its own `http_config`; None: `global.http_config`.
    pub http: Option<HttpSettings>,
    /// `events: [critical]`: alerts routed to the receiver.
    pub critical: bool,
    /// `events: [capacity]`: the analyzer's capacity plans, on change.
    pub capacity: bool,
    /// Default true, as the webhook's.
    pub send_resolved: bool,
    pub timeout: Duration,
    /// GPU fault remediation; None unless enabled with a target.
    pub remediation: Option<RemediationConfig>,
}

/// A secret written in the configuration, or the file it is read from when receivers are built.
#[derive(Debug, Clone, PartialEq)]
pub enum SecretSource {
    Inline(Secret),
    File(PathBuf),
}

impl SecretSource {
    /// The bytes as written or in the file (a PEM certificate or key).
    pub fn read_bytes(&self) -> Result<Vec<u8>, String> {
        match self {
            SecretSource::Inline(s) => Ok(s.expose().as_bytes().to_vec()),
            SecretSource::File(p) => std::fs::read(p).map_err(|e| format!("{}: {e}", p.display())),
        }
    }

    /// Where it comes from, for errors: the file's path, or "inline" (never the value).
    pub fn describe(&self) -> String {
        match self {
            SecretSource::Inline(_) => "inline".into(),
            SecretSource::File(p) => p.display().to_string(),
        }
    }

    /// The secret; a file's trailing newline is not part of it.
    pub fn read(&self) -> Result<Secret, String> {
        match self {
            SecretSource::Inline(s) => Ok(s.clone()),
            SecretSource::File(p) => match std::fs::read_to_string(p) {
                Ok(s) => Ok(Secret::new(s.trim_end_matches(['\n', '\r']))),
                Err(e) => Err(format!("{}: {e}", p.display())),
            },
        }
    }
}

/// A validated `remediation` section with at least one target.
#[derive(Debug, Clone, PartialEq)]
pub struct RemediationConfig {
    /// Record what would be done, do nothing.
    pub dry_run: bool,
    /// The label naming the node; when unset `node`, then `host`, then `instance` without its port.
    pub node_label: Option<String>,
    pub kubernetes: Option<KubernetesConfig>,
    pub slurm: Option<SlurmConfig>,
}

/// The service account's files in a pod.
pub const IN_CLUSTER_TOKEN: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";
pub const IN_CLUSTER_CA: &str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
/// The API server's name inside a cluster.
pub const IN_CLUSTER_URL: &str = "https://kubernetes.default.svc";
pub const DEFAULT_TAINT_KEY: &str = "argus.io/gpu-fault";

#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesConfig {
    pub api_url: String,
    pub bearer_token_file: PathBuf,
    /// None: the system's CAs only.
    pub ca_file: Option<PathBuf>,
    pub action: NodeAction,
    pub timeout: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeAction {
    /// `<key>=<reason>:<effect>`; effect `NoSchedule` or `NoExecute`.
    Taint { key: String, effect: String },
    /// Condition `ArgusGPUFault=True` with the fault as its reason.
    Condition,
}

pub const DEFAULT_SCONTROL: &str = "scontrol";

#[derive(Debug, Clone, PartialEq)]
pub struct SlurmConfig {
    /// The `scontrol` program: a path, or a name looked up in `PATH`.
    pub scontrol: PathBuf,
    pub timeout: Duration,
}

/// Default request timeout of every HTTP integration.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The signature header when the config names none.
pub const SIGNATURE_HEADER: &str = "X-Argus-Signature";

impl Receiver {
    /// Every integration that notifications go to, in a fixed order: webhook, slack, dingtalk,
    /// feishu, wecom, email, scheduler (those taking critical events; the others take capacity plans
    /// only, which do not go through the pipeline), remediation (schedulers with it enabled).
    pub fn integrations(&self) -> Vec<Integration> {
        let mut out = Vec::new();
        let mut add = |kind: &'static str, list: &mut dyn Iterator<Item = (bool, u64)>| {
            for (index, (send_resolved, max_alerts)) in list.enumerate() {
                out.push(Integration { kind, index, send_resolved, max_alerts });
            }
        };
        add("webhook", &mut self.webhooks.iter().map(|w| (w.send_resolved, w.max_alerts)));
        add("slack", &mut self.slack.iter().map(|s| (s.send_resolved, 0)));
        for (kind, list) in [("dingtalk", &self.dingtalk), ("feishu", &self.feishu), ("wecom", &self.wecom)] {
            add(kind, &mut list.iter().map(|r| (r.send_resolved, 0)));
        }
        add("email", &mut self.email.iter().map(|e| (e.send_resolved, 0)));
        add("pagerduty", &mut self.pagerduty.iter().map(|p| (p.send_resolved, 0)));
        add("opsgenie", &mut self.opsgenie.iter().map(|o| (o.send_resolved, 0)));
        for (index, s) in self.scheduler.iter().enumerate().filter(|(_, s)| s.critical) {
            out.push(Integration { kind: "scheduler", index, send_resolved: s.send_resolved, max_alerts: 0 });
        }
        // Remediation acts on firing faults only.
        for (index, _) in self.scheduler.iter().enumerate().filter(|(_, s)| s.remediation.is_some()) {
            out.push(Integration { kind: "remediation", index, send_resolved: false, max_alerts: 0 });
        }
        out
    }

    /// Whether resolved alerts are sent: true when any integration sends them.
    pub fn send_resolved(&self) -> bool {
        self.integrations().iter().any(|i| i.send_resolved)
    }
}
