//! Stages that drop alerts: by a `Muter` (inhibition, silences) or by the route's time intervals.

use super::{Ctx, NotifyError, Stage};
use crate::alert::Alert;
use crate::mute::Muter;
use crate::suppressed::Reason;
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
        alerts.retain(|a| match self.muter.muted_by(&a.labels, ctx.now) {
            Some((reason, until)) => {
                ctx.hold(a, reason, until, false);
                false
            }
            None => true,
        });
        Ok(alerts)
    }
}

/// Those of the intervals `names` that contain now.
fn containing<'a>(ctx: &Ctx, names: &'a [String]) -> Vec<&'a String> {
    names
        .iter()
        .filter(|n| ctx.time_intervals.get(*n).is_some_and(|ts| ts.iter().any(|t| t.contains(ctx.now))))
        .collect()
}

/// Holds back every alert, naming the route's time intervals `field` that do it.
fn hold_all(ctx: &Ctx, alerts: &[Alert], field: &str, intervals: Vec<&String>) {
    for a in alerts {
        let reason = Reason::TimeInterval {
            field: field.to_string(),
            intervals: intervals.iter().map(|n| n.to_string()).collect(),
        };
        ctx.hold(a, reason, None, false);
    }
}

/// Passes nothing outside the route's `active_time_intervals` (when it has any).
pub struct TimeActiveStage;

impl Stage for TimeActiveStage {
    fn name(&self) -> &'static str {
        "time_active"
    }

    fn exec(&self, ctx: &Ctx, alerts: Vec<Alert>) -> Result<Vec<Alert>, NotifyError> {
        let names = &ctx.opts.active_time_intervals;
        if names.is_empty() || !containing(ctx, names).is_empty() {
            return Ok(alerts);
        }
        hold_all(ctx, &alerts, "active_time_intervals", names.iter().collect());
        Ok(Vec::new())
    }
}

/// Passes nothing inside the route's `mute_time_intervals`.
pub struct TimeMuteStage;

impl Stage for TimeMuteStage {
    fn name(&self) -> &'static str {
        "time_mute"
    }

    fn exec(&self, ctx: &Ctx, alerts: Vec<Alert>) -> Result<Vec<Alert>, NotifyError> {
        let muting = containing(ctx, &ctx.opts.mute_time_intervals);
        if muting.is_empty() {
            return Ok(alerts);
        }
        hold_all(ctx, &alerts, "mute_time_intervals", muting);
        Ok(Vec::new())
    }
}
