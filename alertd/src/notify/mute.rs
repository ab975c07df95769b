//! Stages that drop alerts: by a `Muter` (inhibition, silences) or by the route's time intervals.

use super::{Ctx, NotifyError, Stage};
use crate::alert::Alert;
use crate::mute::Muter;
use std::sync::Arc;

/// Drops the alerts a muter mutes.
pub struct MuteStage {
    pub name: &'static str,
    pub muter: Arc<dyn Muter>,
}

impl Stage for MuteStage {
    fn name(&self) -> &'static str {
        self.name
    }

    fn exec(&self, ctx: &Ctx, mut alerts: Vec<Alert>) -> Result<Vec<Alert>, NotifyError> {
        alerts.retain(|a| !self.muter.mutes(&a.labels, ctx.now));
        Ok(alerts)
    }
}

fn in_any(ctx: &Ctx, names: &[String]) -> bool {
    names.iter().filter_map(|n| ctx.time_intervals.get(n)).flatten().any(|t| t.contains(ctx.now))
}

/// Passes nothing outside the route's `active_time_intervals` (when it has any).
pub struct TimeActiveStage;

impl Stage for TimeActiveStage {
    fn name(&self) -> &'static str {
        "time_active"
    }

    fn exec(&self, ctx: &Ctx, alerts: Vec<Alert>) -> Result<Vec<Alert>, NotifyError> {
        let names = &ctx.opts.active_time_intervals;
        Ok(if names.is_empty() || in_any(ctx, names) { alerts } else { Vec::new() })
    }
}

/// Passes nothing inside the route's `mute_time_intervals`.
pub struct TimeMuteStage;

impl Stage for TimeMuteStage {
    fn name(&self) -> &'static str {
        "time_mute"
    }

    fn exec(&self, ctx: &Ctx, alerts: Vec<Alert>) -> Result<Vec<Alert>, NotifyError> {
        Ok(if in_any(ctx, &ctx.opts.mute_time_intervals) { Vec::new() } else { alerts })
    }
}
