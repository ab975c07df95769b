//! The capacity planner: turns a pool's demand forecast into the capacity the pool should have.
//!
//! Per pool, the capacity wanted is `ceil(peak / target_utilization)`, where `peak` is the larger of the
//! demand seen now and the highest point of the forecast's upper band over the horizon, plus a reservation
//! for critical (high-priority) work: `reserve_fraction` of the capacity is kept from low-priority work, so
//! the capacity must also hold the low-priority peak within the remaining `1 - reserve_fraction`. Critical
//! work may use the reserved share, so the reservation adds only what critical demand does not already
//! fill; without a low-priority split every unit is taken as low priority and the reservation is the full
//! `reserve_fraction`.
//!
//! The planner does not flap: it keeps a standing recommendation and moves it up at once (after
//! `scale_up_cooldown` since the last change) but down only to the highest capacity wanted over the last
//! `scale_down_cooldown` (Kubernetes' scale-down stabilization window), only when that is below the
//! standing one by more than `scale_down_margin`, and only when `scale_down_cooldown` has passed since the
//! last change in either direction.
//! It is pure and clock-free: the caller passes the time with every call, so the runtime and
//! `argus simulate` drive it alike.
//!
//! Every recommendation carries its [`Explanation`] (`explain.rs`): the rule that set it, a sentence, the
//! arithmetic and each term used, made from the same values the planner decided with.
//!
//! What the runtime publishes from a [`Recommendation`]: the `argus_capacity_*` series (docs/metrics.md),
//! `GET /api/v1/capacity` ([`CapacityReport`]), KEDA's `metrics-api` scaler JSON ([`KedaMetrics`]) and the
//! scheduler webhook body ([`Recommendation`] itself, in a [`CapacityReport`]).

mod explain;

pub use explain::{Bound, Explanation, ForecastPeak, Rule};

use crate::forecast::Forecast;
use explain::{Decision, Sizing};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// How a pool's capacity is planned. Capacity is counted in whole units (GPUs, nodes, replicas).
#[derive(Debug, Clone, PartialEq)]
pub struct PlannerConfig {
    /// The share of capacity the demand peak may fill, in (0, 1].
    pub target_utilization: f64,
    /// The share of capacity kept from low-priority work for critical jobs, in [0, 1).
    pub reserve_fraction: f64,
    /// Scale down only when the wanted capacity is below the standing one by more than this share, in [0, 1).
    pub scale_down_margin: f64,
    /// Least time between the last change and a scale-up.
    pub scale_up_cooldown: Duration,
    /// Least time between the last change (up or down) and a scale-down; also the window whose highest
    /// wanted capacity a scale-down goes to.
    pub scale_down_cooldown: Duration,
    /// Bounds on the recommendation.
    pub min_capacity: u64,
    pub max_capacity: Option<u64>,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        PlannerConfig {
            target_utilization: 0.9,
            reserve_fraction: 0.2,
            scale_down_margin: 0.1,
            scale_up_cooldown: Duration::from_secs(60),
            scale_down_cooldown: Duration::from_secs(600),
            min_capacity: 0,
            max_capacity: None,
        }
    }
}

/// A planner setting out of range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("target_utilization must be in (0, 1], got {0}")]
    TargetUtilization(f64),
    #[error("reserve_fraction must be in [0, 1), got {0}")]
    ReserveFraction(f64),
    #[error("scale_down_margin must be in [0, 1), got {0}")]
    ScaleDownMargin(f64),
    #[error("max_capacity {max} is below min_capacity {min}")]
    Bounds { min: u64, max: u64 },
}

impl PlannerConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let t = self.target_utilization;
        if !(t > 0.0 && t <= 1.0) {
            return Err(ConfigError::TargetUtilization(t));
        }
        if !(0.0..1.0).contains(&self.reserve_fraction) {
            return Err(ConfigError::ReserveFraction(self.reserve_fraction));
        }
        if !(0.0..1.0).contains(&self.scale_down_margin) {
            return Err(ConfigError::ScaleDownMargin(self.scale_down_margin));
        }
        if let Some(max) = self.max_capacity
            && max < self.min_capacity
        {
            return Err(ConfigError::Bounds { min: self.min_capacity, max });
        }
        Ok(())
    }
}

/// Demand of one class now and its expected peak over the horizon (the top of the forecast's upper band).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Outlook {
    pub now: f64,
    pub upper: f64,
}

impl Outlook {
    /// The demand seen now and the highest upper-band point of `forecast` (NaN points are skipped).
    pub fn from_forecast(now: f64, forecast: &Forecast) -> Outlook {
        let upper = forecast.upper.iter().copied().filter(|v| v.is_finite()).fold(f64::NEG_INFINITY, f64::max);
        Outlook { now, upper: if upper.is_finite() { upper } else { now } }
    }

    fn peak(self) -> f64 {
        let p = self.now.max(self.upper);
        if p.is_finite() { p.max(0.0) } else { 0.0 }
    }
}

/// What the planner is fed at each step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanInput {
    /// Unix milliseconds.
    pub timestamp_ms: i64,
    /// The capacity the pool has now (units powered or provisioned, starting ones included).
    pub current: u64,
    /// All demand (running + pending).
    pub demand: Outlook,
    /// The low-priority part of `demand`, when known.
    pub low_priority: Option<Outlook>,
}

/// What the recommendation asks of the pool, compared with its current capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    ScaleUp,
    ScaleDown,
    Hold,
}

/// Why the recommendation stayed where it was although the wanted capacity differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HeldBy {
    /// Wanted capacity is below the standing one, but not by more than the margin.
    Hysteresis,
    /// Too soon after the last change.
    Cooldown,
    /// Wanted capacity is below the standing one, but was not over the whole scale-down window.
    Window,
}

/// One planning step's outcome for a pool. This is the JSON of `GET /api/v1/capacity` entries and of the
/// scheduler webhook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Recommendation {
    pub pool: String,
    pub timestamp_ms: i64,
    /// Capacity the pool has now.
    pub current: u64,
    /// Demand now (running + pending).
    pub demand: f64,
    /// Peak of the forecast's upper band over the horizon.
    pub forecast_upper: f64,
    /// `ceil(max(demand, forecast_upper) / target_utilization)`.
    pub base: u64,
    /// Units added so low-priority work leaves `reserve_fraction` of the capacity to critical jobs.
    pub reservation: u64,
    /// `base + reservation`, within the configured bounds: the capacity wanted now.
    pub desired: u64,
    /// The standing recommendation after hysteresis and cooldown: what the pool should have.
    pub recommended: u64,
    /// `recommended` against `current`.
    pub action: Action,
    /// Set when `recommended` differs from `desired` (a scale-down to the window's highest wanted capacity
    /// above `desired` is not a hold).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_by: Option<HeldBy>,
    /// Why `recommended` is what it is. Always set by the planner; absent only in a recommendation saved
    /// or sent by an earlier version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
}

/// `GET /api/v1/capacity`: the latest recommendation of every pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CapacityReport {
    pub status: String,
    pub data: Vec<Recommendation>,
}

impl CapacityReport {
    pub fn new(data: Vec<Recommendation>) -> CapacityReport {
        CapacityReport { status: "success".into(), data }
    }
}

/// KEDA `metrics-api` scaler body: `{"pools": {POOL: {"recommended": N, "desired": N, "current": N}}}`;
/// a ScaledObject points `valueLocation` at `pools.POOL.recommended`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct KedaMetrics {
    pub pools: BTreeMap<String, KedaPool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct KedaPool {
    pub recommended: u64,
    pub desired: u64,
    pub current: u64,
}

impl KedaMetrics {
    pub fn from_recommendations<'a>(recs: impl IntoIterator<Item = &'a Recommendation>) -> KedaMetrics {
        let pools = recs
            .into_iter()
            .map(|r| (r.pool.clone(), KedaPool { recommended: r.recommended, desired: r.desired, current: r.current }))
            .collect();
        KedaMetrics { pools }
    }
}

/// The planner of one pool.
#[derive(Debug, Clone)]
pub struct CapacityPlanner {
    pool: String,
    config: PlannerConfig,
    /// The standing recommendation and when it last changed.
    standing: Option<(u64, i64)>,
    /// Wanted capacity over the last `scale_down_cooldown`, oldest first.
    recent: VecDeque<(i64, u64)>,
}

/// What a planner remembers between steps, saved across restarts (docs/format/analyzer-forecast-state.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlannerState {
    /// The standing recommendation and when (ms) it last changed.
    pub standing: Option<(u64, i64)>,
    /// `(ms, wanted capacity)` over the scale-down window, oldest first.
    pub recent: Vec<(i64, u64)>,
}

// === impl CapacityPlanner ===

impl CapacityPlanner {
    pub fn new(pool: impl Into<String>, config: PlannerConfig) -> Result<CapacityPlanner, ConfigError> {
        config.validate()?;
        Ok(CapacityPlanner { pool: pool.into(), config, standing: None, recent: VecDeque::new() })
    }

    pub fn config(&self) -> &PlannerConfig {
        &self.config
    }

    /// The memory to save.
    pub fn state(&self) -> PlannerState {
        PlannerState { standing: self.standing, recent: self.recent.iter().copied().collect() }
    }

    /// Picks up where a saved planner stopped.
    pub fn restore(&mut self, state: PlannerState) {
        self.standing = state.standing;
        self.recent = state.recent.into();
    }

    /// The capacity wanted for `input`, before hysteresis and cooldown: `(base, reservation, desired)`.
    pub fn wanted(&self, input: &PlanInput) -> (u64, u64, u64) {
        let s = self.sizing(input);
        (s.base, s.reservation, s.desired)
    }

    fn sizing(&self, input: &PlanInput) -> Sizing {
        let c = &self.config;
        let peak = input.demand.peak();
        let base = units(peak / c.target_utilization);
        let low_peak = input.low_priority.map_or(peak, Outlook::peak);
        let low_capacity = units(low_peak / (c.target_utilization * (1.0 - c.reserve_fraction)));
        let reservation = low_capacity.saturating_sub(base);
        let wanted = base + reservation;
        let (desired, clamped) = match c.max_capacity {
            _ if wanted < c.min_capacity => (c.min_capacity, Some(Bound::Min)),
            Some(max) if wanted > max => (max, Some(Bound::Max)),
            _ => (wanted, None),
        };
        Sizing { peak, low_peak, low_capacity, base, reservation, wanted, desired, clamped }
    }

    /// One planning step at `input.timestamp_ms`. Times must not go backwards.
    pub fn plan(&mut self, input: &PlanInput) -> Recommendation {
        let sizing = self.sizing(input);
        let Sizing { base, reservation, desired, .. } = sizing;
        let now = input.timestamp_ms;
        let window = millis(self.config.scale_down_cooldown);
        while self.recent.front().is_some_and(|&(t, _)| t < now.saturating_sub(window)) {
            self.recent.pop_front();
        }
        while self.recent.back().is_some_and(|&(_, d)| d <= desired) {
            // A later, larger want shadows earlier smaller ones for the window's maximum.
            self.recent.pop_back();
        }
        self.recent.push_back((now, desired));
        let down_to = self.recent.front().map_or(desired, |&(_, d)| d);
        let (standing, changed_at) = *self.standing.get_or_insert((input.current, NEVER));
        let since = now.saturating_sub(changed_at);
        let keep = standing as f64 * (1.0 - self.config.scale_down_margin);
        let (recommended, held_by, rule) = if desired > standing {
            if since >= millis(self.config.scale_up_cooldown) {
                (desired, None, Rule::ScaleUp)
            } else {
                (standing, Some(HeldBy::Cooldown), Rule::ScaleUpHeldByCooldown)
            }
        } else if desired < standing {
            if desired as f64 >= keep {
                (standing, Some(HeldBy::Hysteresis), Rule::ScaleDownWithinMargin)
            } else if since < window {
                (standing, Some(HeldBy::Cooldown), Rule::ScaleDownHeldByCooldown)
            } else if down_to as f64 >= keep {
                (standing, Some(HeldBy::Window), Rule::ScaleDownHeldByWindow)
            } else if down_to > desired {
                (down_to, None, Rule::ScaleDownToWindowMax)
            } else {
                (down_to, None, Rule::ScaleDown)
            }
        } else {
            (standing, None, Rule::Unchanged)
        };
        if recommended != standing {
            self.standing = Some((recommended, now));
        }
        let action = match recommended.cmp(&input.current) {
            std::cmp::Ordering::Greater => Action::ScaleUp,
            std::cmp::Ordering::Less => Action::ScaleDown,
            std::cmp::Ordering::Equal => Action::Hold,
        };
        let mut rec = Recommendation {
            pool: self.pool.clone(),
            timestamp_ms: now,
            current: input.current,
            demand: input.demand.now,
            forecast_upper: input.demand.upper,
            base,
            reservation,
            desired,
            recommended,
            action,
            held_by,
            explanation: None,
        };
        let changed = |t: i64| (t != NEVER).then_some(t);
        let decision = Decision {
            rule,
            previous: standing,
            changed_before: changed(changed_at),
            changed_after: self.standing.and_then(|(_, t)| changed(t)),
            window_max: down_to,
            keep,
        };
        rec.explanation = Some(explain::explain(&self.config, input, &sizing, &decision, &rec));
        rec
    }
}

/// The time of the standing recommendation's last change before it has changed.
const NEVER: i64 = i64::MIN;

/// Whole units holding `x`; a hair over an integer (float noise) does not cost a unit.
fn units(x: f64) -> u64 {
    if !x.is_finite() || x <= 0.0 {
        return 0;
    }
    (x - 1e-9).ceil().max(0.0) as u64
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests;
