//! Delivery's self metrics, listed in docs/metrics.md.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
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
    /// Records in the held-back ledger (`GET /api/v1/suppressed`), open and ended.
    pub suppressed_records: Gauge,
    /// Records dropped from the ledger at its cap.
    pub suppressed_dropped: Counter,
}

impl Metrics {
    pub fn register(&self, r: &mut Registry) {
        let r = r.sub_registry_with_prefix("argus_alertd");
        r.register(
            "notifications",
            "Notification send attempts by receiver, integration kind and outcome",
            self.notifications.clone(),
        );
        r.register(
            "suppressed_records",
            "Held-back alert records kept for /api/v1/suppressed, open and ended",
            self.suppressed_records.clone(),
        );
        r.register(
            "suppressed_records_dropped",
            "Held-back alert records dropped at the ledger's cap, oldest ended first",
            self.suppressed_dropped.clone(),
        );
    }

    /// Counts one attempt for integration `name` (`receiver/kind/index`).
    pub fn count(&self, receiver: &str, name: &str, outcome: &str) {
        self.notifications.get_or_create(&labels(receiver, name, outcome)).inc();
    }

    /// Exports every outcome of integration `name` at 0 before its first attempt, so that a rate over
    /// the counters answers 0 rather than nothing while no notification has been sent yet.
    pub fn init(&self, name: &str) {
        let receiver = name.rsplitn(3, '/').nth(2).unwrap_or(name);
        for outcome in OUTCOMES {
            let _ = self.notifications.get_or_create(&labels(receiver, name, outcome));
        }
    }
}

/// Every value of the `outcome` label.
pub const OUTCOMES: [&str; 3] = ["delivered", "retried", "failed"];

fn labels(receiver: &str, name: &str, outcome: &str) -> Outcome {
    let kind = name.rsplit('/').nth(1).unwrap_or(name);
    Outcome { receiver: receiver.into(), integration: kind.into(), outcome: outcome.into() }
}
