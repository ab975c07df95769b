//! Receivers: where notifications go. A receiver has integrations of several kinds, each a noun
//! named after what it talks to (`webhook`, `slack`, `dingtalk`, `feishu`, `wecom`, `email`,
//! `scheduler`); the kind is also its config key (`<kind>_configs`) and the middle of its
//! notification-log name.
//!
//! These are settings only, validated by `config` and acted on by `deliver`; nothing here reaches
//! either, so both can build on it.

pub mod template;

use argus_model::Secret;
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

#[derive(Debug, Clone, PartialEq)]
pub struct WebhookConfig {
    /// A secret, as in Alertmanager: webhook URLs often carry tokens.
    pub url: Secret,
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

/// Slack's incoming webhook (Alertmanager's `slack_configs`, without its Go templates).
#[derive(Debug, Clone, PartialEq)]
pub struct SlackConfig {
    pub api_url: Secret,
    pub channel: Option<String>,
    pub username: Option<String>,
    pub icon_emoji: Option<String>,
    /// Alertmanager's default for Slack: false.
    pub send_resolved: bool,
    pub language: Language,
    pub timeout: Duration,
}

/// A group robot: DingTalk, Feishu/Lark or WeCom (`url`, an optional signing `secret`).
#[derive(Debug, Clone, PartialEq)]
pub struct RobotConfig {
    pub url: Secret,
    /// Signs requests (DingTalk and Feishu); WeCom robots have none.
    pub secret: Option<Secret>,
    pub send_resolved: bool,
    pub language: Language,
    pub timeout: Duration,
}

/// Email over SMTP (Alertmanager's `email_configs`, without templates and the global SMTP keys).
#[derive(Debug, Clone, PartialEq)]
pub struct EmailConfig {
    pub to: Vec<String>,
    pub from: String,
    pub host: String,
    pub port: u16,
    pub hello: Option<String>,
    pub auth_username: Option<String>,
    pub auth_password: Option<Secret>,
    pub tls: EmailTls,
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

/// A validated `scheduler_configs` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerConfig {
    /// A secret, as the webhook's: scheduler URLs may carry tokens.
    pub url: Secret,
    /// Signs each body with HMAC-SHA256 in `signature_header`.
    pub hmac_secret: Option<SecretSource>,
    pub signature_header: String,
    /// `http_config.authorization`: the `Authorization` header's scheme and credentials.
    pub authorization: Option<(String, SecretSource)>,
    /// `http_config.tls_config.ca_file`, trusted besides the global CAs.
    pub ca_file: Option<PathBuf>,
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
