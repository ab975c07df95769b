//! The analyzer's own metrics (docs/metrics.md, "Analyzer").

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabel {
    rule: String,
}

#[derive(Clone)]
pub struct Metrics {
    evaluations: Family<RuleLabel, Counter>,
    failures: Family<RuleLabel, Counter>,
    series: Family<RuleLabel, Gauge>,
    anomalous: Family<RuleLabel, Gauge>,
    write_failures: Counter,
    alerts_sent: Counter,
    alerts_failed: Counter,
    tick: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            evaluations: Family::default(),
            failures: Family::default(),
            series: Family::default(),
            anomalous: Family::default(),
            write_failures: Counter::default(),
            alerts_sent: Counter::default(),
            alerts_failed: Counter::default(),
            tick: Histogram::new([0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]),
        }
    }
}

impl Metrics {
    pub fn register(&self, r: &mut Registry) {
        r.register("argus_analyzer_evaluations", "Rule evaluations by the analyzer", self.evaluations.clone());
        r.register("argus_analyzer_evaluation_failures", "Rule evaluations that failed", self.failures.clone());
        r.register("argus_analyzer_series", "Series each rule tracks", self.series.clone());
        r.register(
            "argus_analyzer_anomalous_series",
            "Series scored above 1 at the rule's last step",
            self.anomalous.clone(),
        );
        r.register(
            "argus_analyzer_write_failures",
            "Writes of analyzer results the store refused",
            self.write_failures.clone(),
        );
        r.register("argus_analyzer_alerts_sent", "Alerts posted to alertd", self.alerts_sent.clone());
        r.register("argus_analyzer_alerts_failed", "Alerts alertd could not be given", self.alerts_failed.clone());
        r.register("argus_analyzer_tick_seconds", "Time to evaluate every due rule once", self.tick.clone());
    }

    fn rule(name: &str) -> RuleLabel {
        RuleLabel { rule: name.to_string() }
    }

    pub(super) fn evaluated(&self, rule: &str, series: usize) {
        self.evaluations.get_or_create(&Self::rule(rule)).inc();
        self.series.get_or_create(&Self::rule(rule)).set(series as i64);
    }

    pub(super) fn failed(&self, rule: &str) {
        self.failures.get_or_create(&Self::rule(rule)).inc();
    }

    pub(super) fn anomalous(&self, rule: &str, n: usize) {
        self.anomalous.get_or_create(&Self::rule(rule)).set(n as i64);
    }

    pub(super) fn write_failed(&self) {
        self.write_failures.inc();
    }

    pub(super) fn alerts_sent(&self, n: usize) {
        self.alerts_sent.inc_by(n as u64);
    }

    pub(super) fn alerts_failed(&self, n: usize) {
        self.alerts_failed.inc_by(n as u64);
    }

    pub(super) fn tick_seconds(&self, s: f64) {
        self.tick.observe(s);
    }
}
