//! Receivers: where notifications go. Only webhooks so far.

/// A named receiver and its integrations.
#[derive(Debug, Clone, PartialEq)]
pub struct Receiver {
    pub name: String,
    pub webhooks: Vec<WebhookConfig>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WebhookConfig {
    pub url: String,
    /// Whether resolved alerts are sent (Alertmanager's default: true).
    pub send_resolved: bool,
    /// At most this many alerts per message, the rest counted in `truncatedAlerts`; 0 = all.
    pub max_alerts: u64,
}

impl Receiver {
    /// Whether resolved alerts are sent: true when any integration sends them.
    pub fn send_resolved(&self) -> bool {
        self.webhooks.iter().any(|w| w.send_resolved)
    }
}
