//! Rule evaluation metrics under Prometheus' own names (`prometheus_rule_*`), with its
//! `rule_group="file;group"` label, so that the Prometheus mixin's rule alerts and dashboards
//! (`PrometheusRuleFailures`, `PrometheusMissingRuleEvaluations`) apply to Argus unchanged.
//!
//! One set per process, as Prometheus has one rule manager: groups started again by a reload keep
//! counting into the same series, and a group a reload removes has its series removed.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::LazyLock;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// The rule metrics of this process.
pub static RULE_METRICS: LazyLock<RuleMetrics> = LazyLock::new(RuleMetrics::default);

/// Prometheus' default summary objectives are replaced by buckets (a histogram aggregates across
/// replicas and shards, a summary does not): from a cached instant query to a slow one over a fleet.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupLabel {
    /// `file;group`, as Prometheus writes it.
    pub rule_group: String,
}

impl GroupLabel {
    pub fn new(file: &str, group: &str) -> GroupLabel {
        GroupLabel { rule_group: format!("{file};{group}") }
    }
}

type FloatGauge = Gauge<f64, AtomicU64>;

pub struct RuleMetrics {
    evaluation_duration: Histogram,
    evaluations: Family<GroupLabel, Counter>,
    failures: Family<GroupLabel, Counter>,
    iterations: Family<GroupLabel, Counter>,
    missed: Family<GroupLabel, Counter>,
    last_duration: Family<GroupLabel, FloatGauge>,
    last_samples: Family<GroupLabel, Gauge>,
    last_timestamp: Family<GroupLabel, FloatGauge>,
    interval: Family<GroupLabel, FloatGauge>,
    rules: Family<GroupLabel, Gauge>,
}

impl Default for RuleMetrics {
    fn default() -> Self {
        RuleMetrics {
            evaluation_duration: Histogram::new(BUCKETS),
            evaluations: Family::default(),
            failures: Family::default(),
            iterations: Family::default(),
            missed: Family::default(),
            last_duration: Family::default(),
            last_samples: Family::default(),
            last_timestamp: Family::default(),
            interval: Family::default(),
            rules: Family::default(),
        }
    }
}

/// One evaluation of a group, as [`RuleMetrics::evaluated`] records it.
pub struct Evaluation<'a> {
    pub group: &'a GroupLabel,
    /// Each rule's evaluation time.
    pub rule_durations: &'a [Duration],
    pub failures: usize,
    /// Samples the group's rules wrote (their results, stale markers not counted).
    pub samples: usize,
    pub took: Duration,
    /// The evaluation time, ms since the epoch.
    pub at_ms: i64,
}

impl RuleMetrics {
    /// Registers the rule metrics of this process in `registry` (once per registry).
    pub fn register(registry: &mut Registry) {
        let m = &*RULE_METRICS;
        let r = registry;
        r.register(
            "prometheus_rule_evaluation_duration_seconds",
            "The duration of each rule evaluation",
            m.evaluation_duration.clone(),
        );
        r.register("prometheus_rule_evaluations", "The total number of rule evaluations", m.evaluations.clone());
        r.register(
            "prometheus_rule_evaluation_failures",
            "The total number of rule evaluation failures",
            m.failures.clone(),
        );
        r.register(
            "prometheus_rule_group_iterations",
            "The total number of scheduled rule group evaluations, whether executed or missed",
            m.iterations.clone(),
        );
        r.register(
            "prometheus_rule_group_iterations_missed",
            "The total number of rule group evaluations missed due to slow rule group evaluation",
            m.missed.clone(),
        );
        r.register(
            "prometheus_rule_group_last_duration_seconds",
            "The duration of the last rule group evaluation",
            m.last_duration.clone(),
        );
        r.register(
            "prometheus_rule_group_last_evaluation_samples",
            "The number of samples returned during the last rule group evaluation",
            m.last_samples.clone(),
        );
        r.register(
            "prometheus_rule_group_last_evaluation_timestamp_seconds",
            "The timestamp of the last rule group evaluation in seconds",
            m.last_timestamp.clone(),
        );
        r.register("prometheus_rule_group_interval_seconds", "The interval of a rule group", m.interval.clone());
        r.register("prometheus_rule_group_rules", "The number of rules", m.rules.clone());
    }

    /// A group is running with `rules` rules every `interval`.
    pub fn started(&self, group: &GroupLabel, rules: usize, interval: Duration) {
        self.interval.get_or_create(group).set(interval.as_secs_f64());
        self.rules.get_or_create(group).set(rules as i64);
        // Present at 0 from the start, so `rate()` and `increase()` see the first failure.
        let _ = self.failures.get_or_create(group);
        let _ = self.missed.get_or_create(group);
        let _ = self.evaluations.get_or_create(group);
        let _ = self.iterations.get_or_create(group);
    }

    /// A group's evaluation, done.
    pub fn evaluated(&self, e: Evaluation<'_>) {
        for d in e.rule_durations {
            self.evaluation_duration.observe(d.as_secs_f64());
        }
        self.evaluations.get_or_create(e.group).inc_by(e.rule_durations.len() as u64);
        self.failures.get_or_create(e.group).inc_by(e.failures as u64);
        self.iterations.get_or_create(e.group).inc();
        self.last_duration.get_or_create(e.group).set(e.took.as_secs_f64());
        self.last_samples.get_or_create(e.group).set(e.samples as i64);
        self.last_timestamp.get_or_create(e.group).set(e.at_ms as f64 / 1000.0);
    }

    /// `n` scheduled evaluations of a group did not run: the one before took longer than the
    /// interval. They count as iterations too, as in Prometheus.
    pub fn missed(&self, group: &GroupLabel, n: u64) {
        self.missed.get_or_create(group).inc_by(n);
        self.iterations.get_or_create(group).inc_by(n);
    }

    /// A group a reload removed: its series go.
    pub fn forget(&self, group: &GroupLabel) {
        self.evaluations.remove(group);
        self.failures.remove(group);
        self.iterations.remove(group);
        self.missed.remove(group);
        self.last_duration.remove(group);
        self.last_samples.remove(group);
        self.last_timestamp.remove(group);
        self.interval.remove(group);
        self.rules.remove(group);
    }
}
