//! Delivery's self metrics, listed in docs/metrics.md.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Outcome {
    pub receiver: String,
    /// The integration's kind (`webhook`, `slack`, `dingtalk`, …), not its full name.
    pub integration: String,
    /// `delivered`, `retried` or `failed`.
    pub outcome: String,
}

#[derive(Default)]
pub struct Metrics {
    pub notifications: Family<Outcome, Counter>,
}

impl Metrics {
    pub fn register(&self, r: &mut Registry) {
        let r = r.sub_registry_with_prefix("argus_alertd");
        r.register(
            "notifications",
            "Notification send attempts by receiver, integration kind and outcome",
            self.notifications.clone(),
        );
    }

    /// Counts one attempt for integration `name` (`receiver/kind/index`).
    pub fn count(&self, receiver: &str, name: &str, outcome: &str) {
        let kind = name.rsplit('/').nth(1).unwrap_or(name);
        let labels = Outcome { receiver: receiver.into(), integration: kind.into(), outcome: outcome.into() };
        self.notifications.get_or_create(&labels).inc();
    }
}
