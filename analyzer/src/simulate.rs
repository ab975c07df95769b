//! `argus simulate`: replays a GPU pod trace on a cluster whose nodes take minutes to power up, under one
//! of three power policies, and reports what the capacity cost and what the pods waited.
//!
//! The scheduler ([`cluster`]) is the same for every policy: first-fit GPU allocation in inventory order,
//! shared pods (`gpu_milli < 1000`) packed onto GPUs already shared, `reserve` of the GPUs of running nodes
//! kept from low-priority pods, and high-priority pods (qos `LS`) preempting low-priority ones, which go back
//! to the queue and later resume where they stopped (checkpointed), so every policy runs the same work. Pods run for their trace duration once placed. Pods that ask for no
//! GPU run on CPU nodes outside this pool and are skipped; pods no node of the inventory could hold are
//! skipped too; both are counted.
//!
//! Policies:
//! - `static`: every node of the inventory is on from the start.
//! - `reactive`: when pods are pending, enough nodes for them are powered up at once; a node is powered
//!   down after `idle_off` with no pod.
//! - `forecast`: every `tick` the [`crate::capacity::CapacityPlanner`] turns a forecast of GPU demand
//!   (running + pending GPUs, per-minute peak, `horizon` ahead; total and low-priority) into the GPUs to
//!   keep powered; nodes are started to reach it and idle nodes powered down to it. Pods that fit on no
//!   running or starting node still start a node at once, as under `reactive`.
//!
//! The simulation is event-driven (arrivals, completions, node readiness, idle checks, planner ticks), so
//! the 149 days of the Alibaba v2023 trace run in seconds.

pub mod band;
pub mod ces;
pub mod cluster;
pub mod demand;
mod engine;
pub mod power;
pub mod power_gbdt;
pub mod trace;

use crate::capacity::PlannerConfig;
use crate::forecast::Forecaster;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;
use trace::{NodeSpec, Pod};

/// How nodes are powered on and off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    Static,
    Reactive,
    Forecast,
}

impl FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Policy, String> {
        match s {
            "static" => Ok(Policy::Static),
            "reactive" => Ok(Policy::Reactive),
            "forecast" => Ok(Policy::Forecast),
            _ => Err(format!("unknown policy `{s}`: expected static, reactive or forecast")),
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::Static => "static",
            Policy::Reactive => "reactive",
            Policy::Forecast => "forecast",
        })
    }
}

/// The simulated cluster's rules and the policies' settings.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub policy: Policy,
    /// Share of the GPUs of running nodes reserved for high-priority pods.
    pub reserve: f64,
    /// Time from power-up to a node taking pods.
    pub boot: Duration,
    /// `reactive`: a node with no pod for this long is powered down.
    pub idle_off: Duration,
    /// `forecast`: how often demand is sampled and the planner runs (the forecast step).
    pub tick: Duration,
    /// `forecast`: steps ahead the forecast covers.
    pub horizon_steps: usize,
    /// `forecast`: the forecaster is refitted every this many steps on the last `fit_window_steps`.
    pub refit_every_steps: usize,
    pub fit_window_steps: usize,
    /// `forecast`: the planner's settings; its `reserve_fraction` should match `reserve`.
    pub planner: PlannerConfig,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            policy: Policy::Forecast,
            reserve: 0.2,
            boot: Duration::from_secs(300),
            idle_off: Duration::from_secs(600),
            tick: Duration::from_secs(60),
            horizon_steps: 15,
            refit_every_steps: 60,
            fit_window_steps: 1440,
            planner: PlannerConfig::default(),
        }
    }
}

/// Figures of one run. Allocation is the GPU share handed to pods (a pod on half a GPU counts 0.5) over
/// the GPUs of powered nodes (starting ones included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub policy: Policy,
    /// The forecaster behind `forecast`'s planner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forecaster: Option<String>,
    /// Time-weighted mean, over the time any node is powered, of allocated GPUs / powered GPUs.
    pub mean_allocation: f64,
    /// Allocated GPU-hours / powered GPU-hours.
    pub gpu_hour_allocation: f64,
    /// Time-weighted mean of GPUs holding at least one pod / powered GPUs.
    pub mean_gpus_in_use: f64,
    pub pending_p50_seconds: f64,
    pub pending_p95_seconds: f64,
    pub pending_p99_seconds: f64,
    pub pending_mean_seconds: f64,
    pub powered_gpu_hours: f64,
    pub allocated_gpu_hours: f64,
    /// Pods simulated, pods that waited at all, preemptions, node power-ups.
    pub pods: usize,
    pub pods_waited: usize,
    pub preemptions: u64,
    pub power_ups: u64,
    /// Pods left out: no GPU asked, or no node could hold them.
    pub skipped_cpu_only: usize,
    pub skipped_unschedulable: usize,
    /// From the first arrival to the last completion.
    pub span_seconds: i64,
}

impl Report {
    /// The report as pretty JSON (`argus simulate --json`).
    pub fn to_json(&self) -> String {
        // A struct of plain fields always serializes.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

/// Why a simulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("no pod of the trace asks for a GPU that a node of the inventory can hold")]
    NothingToRun,
    #[error("invalid setting: {0}")]
    Config(String),
    #[error(transparent)]
    Planner(#[from] crate::capacity::ConfigError),
}

/// Runs the trace under `config`. `forecaster` builds a fresh model (one per demand class) for the
/// `forecast` policy, e.g. `|| Box::new(band::EmpiricalNaive::new(15))`.
pub fn run(
    pods: &[Pod],
    nodes: &[NodeSpec],
    config: &SimConfig,
    forecaster: &mut dyn FnMut() -> Box<dyn Forecaster>,
) -> Result<Report, SimError> {
    if !(0.0..1.0).contains(&config.reserve) {
        return Err(SimError::Config(format!("reserve must be in [0, 1), got {}", config.reserve)));
    }
    if config.tick.as_secs() == 0 || config.horizon_steps == 0 || config.fit_window_steps < config.horizon_steps + 2 {
        return Err(SimError::Config(
            "tick, horizon and fit window must be positive, the window above the horizon".into(),
        ));
    }
    engine::Sim::new(pods, nodes, config, forecaster)?.run()
}

/// [`run`], also returning a line per decision (pod started, preempted, finished; node powered up, ready,
/// powered down), each prefixed with the seconds since the first arrival.
pub fn run_with_log(
    pods: &[Pod],
    nodes: &[NodeSpec],
    config: &SimConfig,
    forecaster: &mut dyn FnMut() -> Box<dyn Forecaster>,
) -> Result<(Report, Vec<String>), SimError> {
    validate(config)?;
    let mut sim = engine::Sim::new(pods, nodes, config, forecaster)?;
    sim.log = Some(Vec::new());
    Ok(sim.run_logged())
}

fn validate(config: &SimConfig) -> Result<(), SimError> {
    if !(0.0..1.0).contains(&config.reserve) {
        return Err(SimError::Config(format!("reserve must be in [0, 1), got {}", config.reserve)));
    }
    if config.tick.as_secs() == 0 || config.horizon_steps == 0 || config.fit_window_steps < config.horizon_steps + 2 {
        return Err(SimError::Config(
            "tick, horizon and fit window must be positive, the window above the horizon".into(),
        ));
    }
    Ok(())
}

/// The default forecaster of `argus simulate --policy forecast`.
pub fn default_forecaster(horizon_steps: usize) -> Box<dyn Forecaster> {
    Box::new(band::EmpiricalNaive::new(horizon_steps))
}

#[cfg(test)]
mod tests;
