//! `argus simulate --demand`: node power decisions against a demand series, scored as Helios' CES scores
//! them, so `reactive`, `ces` and Argus' own planner (`forecast`) are compared on the same accounting.
//!
//! Accounting, the same for every policy, over the test window (the last 14 whole days,
//! [`DemandSeries::test_window`]), one 10-minute step at a time:
//! - each step the policy sees the demand up to and including the step and the nodes powered so far, and
//!   decides the nodes to have powered; that count is paid for from this step on (powered-off node-hours
//!   = Σ (fleet − powered) × step);
//! - nodes powered up at a step serve demand from the end of the step plus `boot` (a power-down is at
//!   once, booting nodes first), so shortfall = Σ over steps of ∫ (demand − nodes ready)⁺ dt;
//! - a power-up is a step whose decision is above the step before's;
//! - the first hour is a warm-up: its decisions are ready at once, no shortfall or power-up is counted
//!   (CES' own first hour);
//! - utilisation of powered = Σ demand / Σ powered.

use super::demand::{DemandSeries, STEP_MS};
use crate::capacity::{CapacityPlanner, ConfigError, Outlook, PlanInput, PlannerConfig};
use crate::forecast::{Forecast, Forecaster, Regular};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::time::Duration;

/// Steps of warm-up at the start of the test window: one hour.
pub const WARM_UP_STEPS: usize = 6;

/// What a policy sees at one step.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// Step within the test window, from 0.
    pub step: usize,
    pub timestamp_ms: i64,
    /// Demand (nodes) from the start of the series up to and including this step.
    pub demand: &'a [f64],
    /// The fleet at this step.
    pub total: u64,
    /// Nodes powered (booting included) before this step's decision.
    pub powered: u64,
    /// The step is in the warm-up hour.
    pub warm_up: bool,
}

impl View<'_> {
    /// Demand at this step.
    pub fn now(&self) -> f64 {
        self.demand.last().copied().unwrap_or(0.0)
    }
}

/// A node power policy.
pub trait PowerPolicy {
    /// `reactive`, `ces`, `forecast`.
    fn name(&self) -> String;
    /// The nodes to have powered after this step (capped at the fleet by the simulator).
    fn decide(&mut self, view: &View<'_>) -> u64;
    /// The forecaster behind the policy, if any.
    fn forecaster(&self) -> Option<String> {
        None
    }
}

/// The figures of one run (`argus simulate --demand … --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerReport {
    pub policy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forecaster: Option<String>,
    /// Test window: first step (Unix ms) and number of 10-minute steps.
    pub test_start_ms: i64,
    pub steps: usize,
    pub boot_seconds: u64,
    pub powered_off_node_hours: f64,
    pub shortfall_node_minutes: f64,
    pub power_ups: u64,
    pub utilisation_of_powered: f64,
    /// Mean nodes powered off, mean fleet, mean demand.
    pub powered_off_mean: f64,
    pub total_mean: f64,
    pub demand_mean: f64,
}

impl PowerReport {
    pub fn to_json(&self) -> String {
        // A struct of plain fields always serializes.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

/// Why a demand simulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum PowerError {
    #[error("the series needs 14 whole days for the test window and at least a day before it")]
    TooShort,
    #[error(transparent)]
    Planner(#[from] ConfigError),
    #[error(transparent)]
    Gbdt(#[from] super::power_gbdt::GbdtError),
}

/// Runs `policy` over the test window of `series`, nodes taking `boot` to serve after a power-up.
pub fn run(series: &DemandSeries, policy: &mut dyn PowerPolicy, boot: Duration) -> Result<PowerReport, PowerError> {
    let window = series.test_window().ok_or(PowerError::TooShort)?;
    let boot_ms = i64::try_from(boot.as_millis()).unwrap_or(i64::MAX / 4);
    let step_min = STEP_MS as f64 / 60_000.0;
    let mut ready: u64 = series.total[window.start].max(0.0) as u64;
    let mut booting: VecDeque<(i64, u64)> = VecDeque::new();
    let (mut off, mut shortfall, mut ups) = (0.0, 0.0, 0u64);
    let (mut powered_sum, mut demand_sum, mut total_sum) = (0.0, 0.0, 0.0);
    for (k, i) in window.clone().enumerate() {
        let t0 = series.start_ms + i as i64 * STEP_MS;
        let t1 = t0 + STEP_MS;
        let demand = series.demand[i];
        let total = series.total[i].max(0.0) as u64;
        let before = ready + booting.iter().map(|b| b.1).sum::<u64>();
        let warm_up = k < WARM_UP_STEPS;
        let view = View { step: k, timestamp_ms: t0, demand: &series.demand[..=i], total, powered: before, warm_up };
        let after = policy.decide(&view).min(total);
        if warm_up {
            ready = after;
            booting.clear();
        } else {
            // Demand over the step meets the nodes ready at its start and those finishing their boot in it.
            let (mut t, mut have) = (t0, ready);
            for &(at, n) in booting.iter().take_while(|b| b.0 < t1) {
                shortfall += (demand - have as f64).max(0.0) * (at - t) as f64 / 60_000.0;
                (t, have) = (at, have + n);
            }
            shortfall += (demand - have as f64).max(0.0) * (t1 - t) as f64 / 60_000.0;
            if after > before {
                ups += 1;
                booting.push_back((t1 + boot_ms, after - before));
            } else {
                let mut cut = before - after;
                while cut > 0 {
                    match booting.back_mut() {
                        Some(b) if b.1 > cut => (b.1, cut) = (b.1 - cut, 0),
                        Some(b) => {
                            cut -= b.1;
                            booting.pop_back();
                        }
                        None => (ready, cut) = (ready.saturating_sub(cut), 0),
                    }
                }
            }
            while booting.front().is_some_and(|b| b.0 <= t1) {
                ready += booting.pop_front().map_or(0, |b| b.1);
            }
        }
        off += (total as f64 - after as f64) * step_min / 60.0;
        powered_sum += after as f64;
        demand_sum += demand;
        total_sum += total as f64;
    }
    let steps = window.len() as f64;
    Ok(PowerReport {
        policy: policy.name(),
        forecaster: policy.forecaster(),
        test_start_ms: series.start_ms + window.start as i64 * STEP_MS,
        steps: window.len(),
        boot_seconds: boot.as_secs(),
        powered_off_node_hours: off,
        shortfall_node_minutes: shortfall,
        power_ups: ups,
        utilisation_of_powered: if powered_sum > 0.0 { demand_sum / powered_sum } else { 0.0 },
        powered_off_mean: off * 60.0 / step_min / steps,
        total_mean: total_sum / steps,
        demand_mean: demand_sum / steps,
    })
}

/// Argus' capacity planner driving power: each step the forecaster looks `horizon` steps ahead, the
/// planner turns the top of its upper band into the nodes wanted (target utilisation, reserve, hysteresis
/// and cooldowns, `crate::capacity`), and the powered count goes to the planner's recommendation, or at
/// once to the demand when demand exceeds it. The forecaster is fitted on the last `fit_window` steps and
/// refitted every `refit_every` steps on the demand seen so far.
pub struct PlannerPolicy {
    planner: CapacityPlanner,
    model: Box<dyn Forecaster>,
    horizon: usize,
    refit_every: usize,
    fit_window: usize,
    since_fit: Option<usize>,
}

impl PlannerPolicy {
    pub fn new(
        config: PlannerConfig,
        model: Box<dyn Forecaster>,
        horizon: usize,
        refit_every: usize,
        fit_window: usize,
    ) -> Result<PlannerPolicy, ConfigError> {
        Ok(PlannerPolicy {
            planner: CapacityPlanner::new("demand", config)?,
            model,
            horizon: horizon.max(1),
            refit_every: refit_every.max(1),
            fit_window: fit_window.max(horizon + 2),
            since_fit: None,
        })
    }
}

impl PowerPolicy for PlannerPolicy {
    fn name(&self) -> String {
        "forecast".into()
    }

    fn forecaster(&self) -> Option<String> {
        Some(self.model.name().to_string())
    }

    fn decide(&mut self, view: &View<'_>) -> u64 {
        let now = view.now();
        match self.since_fit {
            Some(n) if n < self.refit_every => {
                self.model.observe(now);
                self.since_fit = Some(n + 1);
            }
            _ => {
                let from = view.demand.len().saturating_sub(self.fit_window);
                let history = Regular {
                    start_ms: view.timestamp_ms - (view.demand.len() - 1 - from) as i64 * STEP_MS,
                    step_ms: STEP_MS,
                    values: &view.demand[from..],
                };
                // A failed fit keeps the last model, which has seen every point but this one.
                if self.model.fit(history).is_err() {
                    self.model.observe(now);
                }
                self.since_fit = Some(1);
            }
        }
        let forecast = self.model.forecast(self.horizon).unwrap_or_else(|_| Forecast {
            mean: vec![now],
            lower: vec![now],
            upper: vec![now],
        });
        let rec = self.planner.plan(&PlanInput {
            timestamp_ms: view.timestamp_ms,
            current: view.powered,
            demand: Outlook::from_forecast(now, &forecast),
            low_priority: None,
        });
        if now > view.powered as f64 { rec.recommended.max(now.ceil() as u64) } else { rec.recommended }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::demand::DAY_STEPS;

    /// Powers a fixed plan: `plan[k]` at test step `k`.
    struct Fixed(Vec<u64>);

    impl PowerPolicy for Fixed {
        fn name(&self) -> String {
            "fixed".into()
        }
        fn decide(&mut self, view: &View<'_>) -> u64 {
            self.0[view.step]
        }
    }

    fn series(test: &[f64], total: f64) -> DemandSeries {
        let mut demand = vec![0.0; DAY_STEPS];
        demand.extend(std::iter::repeat_n(test[0], 14 * DAY_STEPS - test.len()));
        demand.extend_from_slice(test);
        // Test window = the last 14 days; put `test` at its start instead.
        let n = demand.len();
        demand[DAY_STEPS..].rotate_right(test.len());
        assert_eq!(n, 15 * DAY_STEPS);
        DemandSeries { start_ms: 0, total: vec![total; n], demand }
    }

    #[test]
    fn accounts_as_ces_does() {
        // Warm-up at 10 nodes, then demand 12 at step 6 against 10 powered: 2 nodes short for 10 minutes,
        // then 15 powered from step 6 on.
        let mut test = vec![8.0; 14 * DAY_STEPS];
        test[6] = 12.0;
        let s = series(&test, 20.0);
        let mut plan = vec![10; 6];
        plan.extend(vec![15; 14 * DAY_STEPS - 6]);
        let r = run(&s, &mut Fixed(plan.clone()), Duration::ZERO).unwrap();
        assert_eq!(r.steps, 14 * DAY_STEPS);
        assert_eq!((r.shortfall_node_minutes, r.power_ups), (20.0, 1));
        let off = (6.0 * 10.0 + (14.0 * 144.0 - 6.0) * 5.0) / 6.0;
        assert!((r.powered_off_node_hours - off).abs() < 1e-9);
        // With a 5-minute boot the new nodes serve from 5 minutes into step 7: 2 more nodes short for 5
        // minutes only if demand is still above 10, which it is not (8).
        let r5 = run(&s, &mut Fixed(plan), Duration::from_secs(300)).unwrap();
        assert_eq!(r5.shortfall_node_minutes, 20.0);
        let mut test2 = test.clone();
        test2[7] = 14.0;
        let mut plan2 = vec![10; 6];
        plan2.extend(vec![15; 14 * DAY_STEPS - 6]);
        let s2 = series(&test2, 20.0);
        let b0 = run(&s2, &mut Fixed(plan2.clone()), Duration::ZERO).unwrap();
        let b5 = run(&s2, &mut Fixed(plan2), Duration::from_secs(300)).unwrap();
        assert_eq!(b0.shortfall_node_minutes, 20.0);
        assert_eq!(b5.shortfall_node_minutes, 20.0 + 4.0 * 5.0);
    }

    #[test]
    fn power_down_cancels_booting_nodes_first() {
        let mut test = vec![8.0; 14 * DAY_STEPS];
        test[7] = 14.0;
        let s = series(&test, 20.0);
        // Up to 16 at step 6 (booting 20 minutes), back to 12 at step 7: demand 14 at step 7 meets the 10
        // ready nodes for the whole step.
        let mut plan = vec![10; 6];
        plan.extend([16, 12]);
        plan.extend(vec![12; 14 * DAY_STEPS - 8]);
        let r = run(&s, &mut Fixed(plan), Duration::from_secs(1200)).unwrap();
        assert_eq!(r.shortfall_node_minutes, 40.0);
        assert_eq!(r.power_ups, 1);
    }
}
