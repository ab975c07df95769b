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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TargetLabel {
    target: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabels {
    metric: String,
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabel {
    pool: String,
}

#[derive(Clone)]
pub struct Metrics {
    forecast_rounds: Family<TargetLabel, Counter>,
    forecast_failures: Family<TargetLabel, Counter>,
    forecast_fits: Family<TargetLabel, Counter>,
    forecast_series: Family<TargetLabel, Gauge>,
    forecast_round: Histogram,
    model_selected: Family<ModelLabels, Gauge>,
    backtest_mae: Family<ModelLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    /// The (metric, model) pairs set last, per metric, so that choices no longer made are removed.
    model_keys: std::sync::Arc<parking_lot::Mutex<std::collections::HashMap<String, Vec<String>>>>,
    plan_failures: Family<PoolLabel, Counter>,
    evaluations: Family<RuleLabel, Counter>,
    failures: Family<RuleLabel, Counter>,
    series: Family<RuleLabel, Gauge>,
    anomalous: Family<RuleLabel, Gauge>,
    write_failures: Counter,
    alerts_sent: Counter,
    alerts_failed: Counter,
    tick: Histogram,
    mv_trainings: Family<RuleLabel, Counter>,
    mv_untrained: Family<RuleLabel, Gauge>,
    mv_entities: Family<RuleLabel, Gauge>,
    mv_anomalous: Family<RuleLabel, Gauge>,
    mv_training: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            forecast_rounds: Family::default(),
            forecast_failures: Family::default(),
            forecast_fits: Family::default(),
            forecast_series: Family::default(),
            forecast_round: Histogram::new([0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0]),
            model_selected: Family::default(),
            backtest_mae: Family::default(),
            model_keys: Default::default(),
            plan_failures: Family::default(),
            evaluations: Family::default(),
            failures: Family::default(),
            series: Family::default(),
            anomalous: Family::default(),
            write_failures: Counter::default(),
            alerts_sent: Counter::default(),
            alerts_failed: Counter::default(),
            tick: Histogram::new([0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]),
            mv_trainings: Family::default(),
            mv_untrained: Family::default(),
            mv_entities: Family::default(),
            mv_anomalous: Family::default(),
            mv_training: Histogram::new([0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0]),
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
        r.register("argus_forecast_rounds", "Forecast rounds of each target", self.forecast_rounds.clone());
        r.register("argus_forecast_failures", "Forecast rounds that failed", self.forecast_failures.clone());
        r.register("argus_forecast_fits", "Series (re)fitted by each target", self.forecast_fits.clone());
        r.register("argus_forecast_series", "Series each forecast target tracks", self.forecast_series.clone());
        r.register("argus_forecast_round_seconds", "Time of one target's forecast round", self.forecast_round.clone());
        r.register(
            "argus_forecast_model_selected",
            "Series of the target that forecast with each model",
            self.model_selected.clone(),
        );
        r.register(
            "argus_forecast_backtest_mae",
            "Backtest MAE of each candidate and of the choice, mean over the target's series",
            self.backtest_mae.clone(),
        );
        r.register(
            "argus_analyzer_multivariate_trainings",
            "Training rounds of each multivariate model (every entity, or the new ones)",
            self.mv_trainings.clone(),
        );
        r.register(
            "argus_analyzer_multivariate_training_seconds",
            "Time of one multivariate training round, reading included",
            self.mv_training.clone(),
        );
        r.register(
            "argus_analyzer_multivariate_entities",
            "Entities of each multivariate model that have a trained model",
            self.mv_entities.clone(),
        );
        r.register(
            "argus_analyzer_multivariate_untrained",
            "Entities seen by a multivariate model that could not be trained yet (too little history)",
            self.mv_untrained.clone(),
        );
        r.register(
            "argus_analyzer_multivariate_anomalous",
            "Entities of each multivariate model scored above 1 at its last step",
            self.mv_anomalous.clone(),
        );
        r.register("argus_capacity_plan_failures", "Planning steps of a pool that failed", self.plan_failures.clone());
    }

    pub(super) fn forecast_round(&self, target: &str, seconds: f64) {
        self.forecast_rounds.get_or_create(&TargetLabel { target: target.into() }).inc();
        self.forecast_round.observe(seconds);
    }

    pub(super) fn forecast_failed(&self, target: &str) {
        self.forecast_failures.get_or_create(&TargetLabel { target: target.into() }).inc();
    }

    pub(super) fn forecast_fits(&self, target: &str, fits: usize, series: usize) {
        let l = TargetLabel { target: target.into() };
        self.forecast_fits.get_or_create(&l).inc_by(fits as u64);
        self.forecast_series.get_or_create(&l).set(series as i64);
    }

    pub(super) fn plan_failed(&self, pool: &str) {
        self.plan_failures.get_or_create(&PoolLabel { pool: pool.into() }).inc();
    }

    /// The model each series of `metric` forecasts with, and the backtest of the ones that chose.
    pub(super) fn forecast_models<'a>(
        &self,
        metric: &str,
        series: impl Iterator<Item = (String, Option<&'a crate::forecast::select::Selection>)>,
    ) {
        let mut count: std::collections::BTreeMap<String, i64> = Default::default();
        let mut mae: std::collections::BTreeMap<String, (f64, usize)> = Default::default();
        for (model, selection) in series {
            *count.entry(model).or_default() += 1;
            if let Some(s) = selection {
                let e = mae.entry("selected".into()).or_default();
                e.0 += s.backtest_mae;
                e.1 += 1;
                for (name, m) in &s.candidates {
                    let e = mae.entry(name.clone()).or_default();
                    e.0 += m;
                    e.1 += 1;
                }
            }
        }
        let key = |model: &str| ModelLabels { metric: metric.into(), model: model.into() };
        let mut keys = self.model_keys.lock();
        for old in keys.remove(metric).unwrap_or_default() {
            self.model_selected.remove(&key(&old));
            self.backtest_mae.remove(&key(&old));
        }
        let mut set: Vec<String> = Vec::new();
        for (model, n) in &count {
            self.model_selected.get_or_create(&key(model)).set(*n);
            set.push(model.clone());
        }
        for (model, (sum, n)) in &mae {
            self.backtest_mae.get_or_create(&key(model)).set(sum / *n as f64);
            set.push(model.clone());
        }
        keys.insert(metric.to_string(), set);
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

    pub(crate) fn write_failed(&self) {
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

    pub(super) fn mv_trained(&self, rule: &str, seconds: f64, entities: usize, untrained: usize) {
        self.mv_trainings.get_or_create(&Self::rule(rule)).inc();
        self.mv_training.observe(seconds);
        self.mv_entities.get_or_create(&Self::rule(rule)).set(entities as i64);
        self.mv_untrained.get_or_create(&Self::rule(rule)).set(untrained as i64);
    }

    pub(super) fn mv_scored(&self, rule: &str, entities: usize, anomalous: usize) {
        self.mv_entities.get_or_create(&Self::rule(rule)).set(entities as i64);
        self.mv_anomalous.get_or_create(&Self::rule(rule)).set(anomalous as i64);
    }
}
