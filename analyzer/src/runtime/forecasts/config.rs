//! `[[analyzer.forecast]]` targets and `[[analyzer.capacity]]` pools, as written and validated.
//!
//! ```toml
//! [[analyzer.forecast]]
//! name = "gpu_busy"
//! query = "sum by (cluster) (gpu_utilization_ratio)"
//! step = "1m"          # default 1m
//! horizon = "15m"      # default 15m
//! history = "7d"       # history fitted on, default 7d
//! retrain = "1h"       # default 1h
//! models = ["naive", "ets"]   # default: every registered model
//!
//! [[analyzer.capacity]]
//! pool = "training"
//! demand = "gpu_demand"            # a forecast target with one series
//! current = "sum(gpu_powered)"     # PromQL: the capacity the pool has now
//! target_utilization = 0.9
//! ```
//!
//! With no target configured, [`default_targets`] forecast the collector's own series.

use crate::capacity::PlannerConfig;
use crate::forecast::select::MODELS;
use serde::Deserialize;
use std::time::Duration;

use super::super::config::{ConfigError, duration, err};

/// One `[[analyzer.forecast]]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    pub name: String,
    /// PromQL; every series it returns is forecast on its own.
    pub query: String,
    /// The `metric` label of the forecasts (default: the target's name).
    pub metric: Option<String>,
    pub step: Option<String>,
    pub horizon: Option<String>,
    /// The horizons written as `argus_yhat*` series (default: 5m, 10m and 15m up to `horizon`, and `horizon`).
    pub horizons: Option<Vec<String>>,
    pub history: Option<String>,
    pub retrain: Option<String>,
    /// Candidate models by name (default: every registered model).
    pub models: Option<Vec<String>>,
}

/// A validated target.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub name: String,
    pub query: String,
    pub metric: String,
    pub step: Duration,
    /// Steps ahead forecast.
    pub horizon_steps: usize,
    /// `(horizon label, steps ahead)` written as series, ascending.
    pub horizons: Vec<(String, usize)>,
    pub history: Duration,
    pub retrain: Duration,
    pub models: Option<Vec<String>>,
}

impl Target {
    pub fn step_ms(&self) -> i64 {
        self.step.as_millis() as i64
    }
}

/// One `[[analyzer.capacity]]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    pub pool: String,
    /// The forecast target of the pool's demand (running + pending); it must yield one series.
    pub demand: String,
    /// PromQL whose value (summed over its series) is the capacity the pool has now.
    pub current: String,
    /// A forecast target of the low-priority part of the demand, when known.
    pub low_priority: Option<String>,
    pub target_utilization: Option<f64>,
    pub reserve_fraction: Option<f64>,
    pub scale_down_margin: Option<f64>,
    pub scale_up_cooldown: Option<String>,
    pub scale_down_cooldown: Option<String>,
    pub min_capacity: Option<u64>,
    pub max_capacity: Option<u64>,
}

/// A validated pool.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    pub pool: String,
    pub demand: String,
    pub current: String,
    pub low_priority: Option<String>,
    pub planner: PlannerConfig,
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Steps of `step` in `d`, when `d` is a whole number of them.
fn steps(key: &str, d: Duration, step: Duration) -> Result<usize, ConfigError> {
    let (d, s) = (d.as_millis(), step.as_millis());
    if !d.is_multiple_of(s) {
        return Err(err(key, format!("must be a whole number of steps ({}s each)", s / 1000)));
    }
    Ok((d / s) as usize)
}

/// `15m`, `1h30m`, `90s`: a horizon's label.
fn label(d: Duration) -> String {
    humantime::format_duration(d).to_string().replace(' ', "")
}

pub fn validate_targets(targets: &[TargetConfig]) -> Result<Vec<Target>, ConfigError> {
    let targets = if targets.is_empty() { default_targets() } else { targets.to_vec() };
    let mut out: Vec<Target> = Vec::with_capacity(targets.len());
    for (i, t) in targets.iter().enumerate() {
        let at = if t.name.is_empty() { format!("forecast[{i}]") } else { format!("forecast {:?}", t.name) };
        if !valid_name(&t.name) {
            return Err(err(at, "name must be non-empty letters, digits, '_' or '-'"));
        }
        if out.iter().any(|o| o.name == t.name) {
            return Err(err(at, "the name is used by another forecast target"));
        }
        if t.query.trim().is_empty() {
            return Err(err(format!("{at}.query"), "is empty"));
        }
        if let Err(e) = argus_store_api::promql::parse_expr(&t.query) {
            return Err(err(format!("{at}.query"), format!("not valid PromQL: {e}")));
        }
        let step = duration(&format!("{at}.step"), &t.step, Duration::from_secs(60))?;
        if step < Duration::from_secs(1) || step.subsec_millis() != 0 {
            return Err(err(format!("{at}.step"), "must be a whole number of seconds, at least 1s"));
        }
        let horizon = duration(&format!("{at}.horizon"), &t.horizon, Duration::from_secs(15 * 60))?;
        let horizon_steps = steps(&format!("{at}.horizon"), horizon, step)?;
        if horizon_steps == 0 {
            return Err(err(format!("{at}.horizon"), "must be at least one step"));
        }
        let mut horizons = Vec::new();
        match &t.horizons {
            Some(list) => {
                for (j, h) in list.iter().enumerate() {
                    let key = format!("{at}.horizons[{j}]");
                    let d = duration(&key, &Some(h.clone()), horizon)?;
                    let n = steps(&key, d, step)?;
                    if n == 0 || n > horizon_steps {
                        return Err(err(key, "must be between one step and the horizon"));
                    }
                    horizons.push((label(d), n));
                }
                if horizons.is_empty() {
                    return Err(err(format!("{at}.horizons"), "names no horizon"));
                }
            }
            None => {
                for m in [5, 10, 15] {
                    let d = Duration::from_secs(m * 60);
                    if d < horizon && d.as_millis().is_multiple_of(step.as_millis()) {
                        horizons.push((label(d), (d.as_millis() / step.as_millis()) as usize));
                    }
                }
                horizons.push((label(horizon), horizon_steps));
            }
        }
        horizons.sort_by_key(|h| h.1);
        horizons.dedup_by_key(|h| h.1);
        let history = duration(&format!("{at}.history"), &t.history, Duration::from_secs(7 * 86_400))?;
        // The model choice backtests on the last fifth of the history, ten horizons at least.
        let need = 50 * horizon_steps;
        if ((history.as_millis() / step.as_millis()) as usize) < need {
            return Err(err(format!("{at}.history"), format!("must hold at least {need} steps (50 horizons)")));
        }
        let retrain = duration(&format!("{at}.retrain"), &t.retrain, Duration::from_secs(3600))?;
        if let Some(models) = &t.models {
            if models.is_empty() {
                return Err(err(format!("{at}.models"), "names no model"));
            }
            for m in models {
                if !MODELS.iter().any(|(n, _)| n == m) {
                    let known: Vec<&str> = MODELS.iter().map(|(n, _)| *n).collect();
                    return Err(err(
                        format!("{at}.models"),
                        format!("unknown model {m:?} (known: {})", known.join(", ")),
                    ));
                }
            }
        }
        out.push(Target {
            name: t.name.clone(),
            query: t.query.clone(),
            metric: t.metric.clone().unwrap_or_else(|| t.name.clone()),
            step,
            horizon_steps,
            horizons,
            history,
            retrain,
            models: t.models.clone(),
        });
    }
    Ok(out)
}

pub fn validate_pools(pools: &[PoolConfig], targets: &[Target]) -> Result<Vec<Pool>, ConfigError> {
    let mut out: Vec<Pool> = Vec::with_capacity(pools.len());
    for (i, p) in pools.iter().enumerate() {
        let at = if p.pool.is_empty() { format!("capacity[{i}]") } else { format!("capacity {:?}", p.pool) };
        if !valid_name(&p.pool) {
            return Err(err(at, "pool must be non-empty letters, digits, '_' or '-'"));
        }
        if out.iter().any(|o| o.pool == p.pool) {
            return Err(err(at, "the pool is planned by another [[analyzer.capacity]]"));
        }
        for (key, name) in [("demand", Some(&p.demand)), ("low_priority", p.low_priority.as_ref())] {
            if let Some(name) = name
                && !targets.iter().any(|t| &t.name == name)
            {
                return Err(err(format!("{at}.{key}"), format!("no forecast target is named {name:?}")));
            }
        }
        if let Err(e) = argus_store_api::promql::parse_expr(&p.current) {
            return Err(err(format!("{at}.current"), format!("not valid PromQL: {e}")));
        }
        let d = PlannerConfig::default();
        let planner = PlannerConfig {
            target_utilization: p.target_utilization.unwrap_or(d.target_utilization),
            reserve_fraction: p.reserve_fraction.unwrap_or(d.reserve_fraction),
            scale_down_margin: p.scale_down_margin.unwrap_or(d.scale_down_margin),
            scale_up_cooldown: duration(&format!("{at}.scale_up_cooldown"), &p.scale_up_cooldown, d.scale_up_cooldown)?,
            scale_down_cooldown: duration(
                &format!("{at}.scale_down_cooldown"),
                &p.scale_down_cooldown,
                d.scale_down_cooldown,
            )?,
            min_capacity: p.min_capacity.unwrap_or(d.min_capacity),
            max_capacity: p.max_capacity,
        };
        planner.validate().map_err(|e| err(at.clone(), e.to_string()))?;
        out.push(Pool {
            pool: p.pool.clone(),
            demand: p.demand.clone(),
            current: p.current.clone(),
            low_priority: p.low_priority.clone(),
            planner,
        });
    }
    Ok(out)
}

/// The targets forecast when `[analyzer]` names none: cluster-wide sums of the collector's GPU series
/// (docs/metrics.md) and the request load of scraped vLLM servers.
pub fn default_targets() -> Vec<TargetConfig> {
    let target =
        |name: &str, query: &str| TargetConfig { name: name.into(), query: query.into(), ..TargetConfig::default() };
    vec![
        // GPUs' worth of busy time: the demand the cluster's GPUs carry.
        target("gpu_busy", "sum by (cluster) (gpu_utilization_ratio)"),
        target("gpu_memory_used", "sum by (cluster) (gpu_memory_used_bytes)"),
        target("inference_requests", "sum by (cluster) (vllm:num_requests_running)"),
    ]
}
