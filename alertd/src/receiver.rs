//! Receivers: where notifications go. A receiver has integrations of several kinds, each a noun
//! named after what it talks to (`webhook`, `slack`, `dingtalk`, `feishu`, `wecom`, `email`,
//! `scheduler`); the kind is also its config key (`<kind>_configs`) and the middle of its
//! notification-log name.

use crate::deliver::template::BodyTemplate;
use argus_model::Secret;
use std::time::Duration;

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
    pub scheduler: Vec<crate::deliver::scheduler::SchedulerConfig>,
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

/// Default request timeout of every HTTP integration.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

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
