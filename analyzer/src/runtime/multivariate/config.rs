//! `[[analyzer.multivariate]]` models, as written and validated.
//!
//! ```toml
//! [[analyzer.multivariate]]
//! name = "gpu_health"
//! metrics = ["gpu_utilization_ratio", "gpu_temperature_celsius", "gpu_power_watts"]
//! entity = ["host", "gpu"]     # one model per distinct (host, gpu)
//! interval = "10s"             # default: [analyzer].interval
//! train_window = "6h"          # default 6h
//! retrain = "6h"               # default 6h
//! min_train_points = 360       # default 360
//! severity = "warning"
//! [analyzer.multivariate.params]   # the detector's parameters, as `argus eval anomaly` takes them
//! iforest = { n_trees = 100, sample_size = 256, seed = 0 }
//! ```

use crate::detect::multivariate::MultivariateParams;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

use super::super::config::{ConfigError, duration, err, params_table};

/// One `[[analyzer.multivariate]]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub name: String,
    /// PromQL queries, one per input metric: together they make an entity's feature vector. Each must
    /// give at most one series per entity (aggregate with `avg by (…)` where it would give more).
    #[serde(default)]
    pub metrics: Vec<String>,
    /// The labels that name an entity; every distinct combination of their values gets its own model.
    #[serde(default)]
    pub entity: Vec<String>,
    pub interval: Option<String>,
    /// The history a model is trained on.
    pub train_window: Option<String>,
    /// How often models are retrained (in the background).
    pub retrain: Option<String>,
    /// Complete rows an entity needs in its training window before it gets a model.
    pub min_train_points: Option<usize>,
    pub severity: Option<String>,
    /// Extra labels on the alerts of this model.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// [`MultivariateParams`]; unset keys take the runtime's defaults ([`runtime_params`]).
    pub params: Option<toml::Value>,
}

/// A validated model rule.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRule {
    pub name: String,
    pub metrics: Vec<String>,
    pub entity: Vec<String>,
    pub interval: Duration,
    pub train_window: Duration,
    pub retrain: Duration,
    pub min_train_points: usize,
    pub severity: String,
    pub labels: BTreeMap<String, String>,
    pub params: MultivariateParams,
}

impl ModelRule {
    pub fn step_ms(&self) -> i64 {
        self.interval.as_millis() as i64
    }

    /// Points fed to a fresh scoring state before its scores count: the rolling window and the smoothing.
    pub fn warm_steps(&self) -> i64 {
        (self.params.features.window.max(1) + self.params.smooth.max(1)) as i64
    }
}

/// The detector's parameters in the runtime when none are given: those of `argus eval anomaly`, with
/// first differences on (a sudden step is a feature of its own) and one training thread per fit (training
/// runs beside the scoring loop and must leave it cores).
pub fn runtime_params() -> MultivariateParams {
    let mut p = MultivariateParams::default();
    p.features.diff = true;
    p.iforest.threads = 1;
    p
}

pub fn validate(models: &[ModelConfig], interval: Duration) -> Result<Vec<ModelRule>, ConfigError> {
    let mut out: Vec<ModelRule> = Vec::with_capacity(models.len());
    for (i, m) in models.iter().enumerate() {
        let at = if m.name.is_empty() { format!("multivariate[{i}]") } else { format!("multivariate {:?}", m.name) };
        if m.name.is_empty() || !m.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(err(at, "name must be non-empty letters, digits, '_' or '-'"));
        }
        if out.iter().any(|o| o.name == m.name) {
            return Err(err(at, "the name is used by another multivariate model"));
        }
        if m.metrics.is_empty() {
            return Err(err(format!("{at}.metrics"), "names no metric"));
        }
        for (j, q) in m.metrics.iter().enumerate() {
            let key = format!("{at}.metrics[{j}]");
            if q.trim().is_empty() {
                return Err(err(key, "is empty"));
            }
            if let Err(e) = argus_store_api::promql::parse_expr(q) {
                return Err(err(key, format!("not valid PromQL: {e}")));
            }
            if m.metrics[..j].contains(q) {
                return Err(err(key, format!("{q:?} named twice")));
            }
        }
        if m.entity.is_empty() {
            return Err(err(format!("{at}.entity"), "names no label (e.g. [\"host\"] or [\"host\", \"gpu\"])"));
        }
        for (j, l) in m.entity.iter().enumerate() {
            if l.is_empty() || l == "__name__" || m.entity[..j].contains(l) {
                return Err(err(format!("{at}.entity[{j}]"), format!("{l:?} is not a usable entity label")));
            }
        }
        let step = duration(&format!("{at}.interval"), &m.interval, interval)?;
        if step < Duration::from_secs(1) || step.subsec_millis() != 0 {
            return Err(err(format!("{at}.interval"), "must be a whole number of seconds, at least 1s"));
        }
        let train_window = duration(&format!("{at}.train_window"), &m.train_window, Duration::from_secs(6 * 3600))?;
        let retrain = duration(&format!("{at}.retrain"), &m.retrain, Duration::from_secs(6 * 3600))?;
        if retrain < step {
            return Err(err(format!("{at}.retrain"), "must be at least one interval"));
        }
        let min_train_points = m.min_train_points.unwrap_or(360);
        let window_points = (train_window.as_millis() / step.as_millis()) as usize + 1;
        if min_train_points < 2 || min_train_points > window_points {
            return Err(err(
                format!("{at}.min_train_points"),
                format!("must be between 2 and the {window_points} points of train_window"),
            ));
        }
        let params = params(&format!("{at}.params"), m.params.as_ref())?;
        out.push(ModelRule {
            name: m.name.clone(),
            metrics: m.metrics.clone(),
            entity: m.entity.clone(),
            interval: step,
            train_window,
            retrain,
            min_train_points,
            severity: m.severity.clone().unwrap_or_else(|| "warning".into()),
            labels: m.labels.clone(),
            params,
        });
    }
    Ok(out)
}

/// The runtime defaults overlaid with what is written, each value checked.
fn params(at: &str, written: Option<&toml::Value>) -> Result<MultivariateParams, ConfigError> {
    let mut merged = toml::Value::try_from(runtime_params()).map_err(|e| err(at, e.to_string()))?;
    if let Some(w) = written {
        if !w.is_table() {
            return Err(err(at, "must be a table"));
        }
        overlay(&mut merged, w);
    }
    let p: MultivariateParams = params_table(merged).map_err(|e| err(at, e))?;
    let f = &p.features;
    if !(f.raw || f.diff || f.rolling_mean || f.rolling_std) {
        return Err(err(format!("{at}.features"), "turns every feature off"));
    }
    if f.window == 0 {
        return Err(err(format!("{at}.features.window"), "must be at least 1"));
    }
    if p.iforest.n_trees == 0 {
        return Err(err(format!("{at}.iforest.n_trees"), "must be at least 1"));
    }
    if p.iforest.sample_size < 2 {
        return Err(err(format!("{at}.iforest.sample_size"), "must be at least 2"));
    }
    if !(p.pca_variance > 0.0 && p.pca_variance <= 1.0) {
        return Err(err(format!("{at}.pca_variance"), "must be in (0, 1]"));
    }
    if p.smooth == 0 {
        return Err(err(format!("{at}.smooth"), "must be at least 1"));
    }
    for (key, q) in [("norm_quantile", p.norm_quantile), ("threshold_quantile", p.threshold_quantile)] {
        if !(q > 0.0 && q < 1.0) {
            return Err(err(format!("{at}.{key}"), "must be in (0, 1)"));
        }
    }
    p.spot.validate().map_err(|e| err(at, e))?;
    Ok(p)
}

/// Tables merge key by key; anything else replaces.
fn overlay(base: &mut toml::Value, top: &toml::Value) {
    match (base, top) {
        (toml::Value::Table(b), toml::Value::Table(t)) => {
            for (k, v) in t {
                match b.get_mut(k) {
                    Some(slot) => overlay(slot, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, t) => *b = t.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<Vec<ModelRule>, String> {
        #[derive(Deserialize)]
        struct Doc {
            multivariate: Vec<ModelConfig>,
        }
        let doc: Doc = toml::from_str(text).map_err(|e| e.to_string())?;
        validate(&doc.multivariate, Duration::from_secs(10)).map_err(|e| e.to_string())
    }

    const OK: &str = "[[multivariate]]\nname = \"gpu\"\nmetrics = [\"a\", \"rate(b[1m])\"]\nentity = [\"host\"]\n";

    #[test]
    fn defaults_and_overrides() {
        let m = &check(OK).unwrap()[0];
        assert_eq!(m.interval, Duration::from_secs(10));
        assert_eq!(m.train_window, Duration::from_secs(6 * 3600));
        assert_eq!(m.params, runtime_params());
        let text = format!("{OK}[multivariate.params]\nsmooth = 3\niforest = {{ n_trees = 20 }}\n");
        let m = &check(&text).unwrap()[0];
        assert_eq!((m.params.smooth, m.params.iforest.n_trees, m.params.iforest.sample_size), (3, 20, 256));
        assert!(m.params.features.diff, "unset keys keep the runtime defaults");
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            (OK.replace("[\"a\", \"rate(b[1m])\"]", "[]"), "multivariate \"gpu\".metrics: names no metric"),
            (OK.replace("rate(b[1m])", "rate(b["), "multivariate \"gpu\".metrics[1]: not valid PromQL"),
            (OK.replace("[\"host\"]", "[]"), "multivariate \"gpu\".entity: names no label"),
            (OK.replace("gpu", "a b"), "multivariate \"a b\": name must be"),
            (format!("{OK}retrain = \"1s\"\n"), "multivariate \"gpu\".retrain: must be at least one interval"),
            (format!("{OK}min_train_points = 5000\n"), "multivariate \"gpu\".min_train_points: must be between 2"),
            (
                format!("{OK}[multivariate.params]\nsmooth = 0\n"),
                "multivariate \"gpu\".params.smooth: must be at least",
            ),
            (format!("{OK}[multivariate.params]\ntrees = 5\n"), "multivariate \"gpu\".params: unknown field `trees`"),
            (
                format!("{OK}[multivariate.params]\niforest = {{ n_trees = -1 }}\n"),
                "multivariate \"gpu\".params: iforest.n_trees: invalid value: integer `-1`, expected usize",
            ),
            (format!("{OK}{OK}"), "the name is used by another multivariate model"),
        ];
        for (text, expected) in cases {
            let got = check(&text).unwrap_err();
            assert!(got.contains(expected), "{text}\n→ {got}\nexpected: {expected}");
        }
    }

    #[test]
    fn the_shipped_example_validates() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../config/argus.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let example: String = text
            .lines()
            .skip_while(|l| *l != "# [analyzer]")
            .map_while(|l| l.strip_prefix("# ").or((l == "#").then_some("")))
            .map(|l| format!("{l}\n"))
            .collect();
        #[derive(Deserialize)]
        struct Doc {
            analyzer: super::super::super::Config,
        }
        let doc: Doc = toml::from_str(&example).unwrap();
        let valid = doc.analyzer.validate().unwrap();
        assert_eq!(valid.multivariate.len(), 1);
        assert_eq!(valid.multivariate[0].entity, ["host", "gpu"]);
        assert_eq!(valid.multivariate[0].params, runtime_params(), "the example shows the defaults");
    }
}
