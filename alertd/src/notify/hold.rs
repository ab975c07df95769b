//! HoldStage (alertd's own): after dedup has found news, holds the notification when the only news
//! is alerts that are flapping, or — for a correlated incident — fewer new alerts than the
//! incident's backoff asks for (`Correlator::required_burst`). Resolutions and repeats pass.

use super::dedup::split;
use super::{Ctx, NotifyError, Stage};
use crate::alert::Alert;
use crate::nflog::NotificationLog;
use std::sync::Arc;

pub struct HoldStage {
    pub nflog: Arc<dyn NotificationLog>,
}

impl Stage for HoldStage {
    fn name(&self) -> &'static str {
        "hold"
    }

    fn exec(&self, ctx: &Ctx, alerts: Vec<Alert>) -> Result<Vec<Alert>, NotifyError> {
        if ctx.flap.is_none() && ctx.incident.is_none() {
            return Ok(alerts);
        }
        let (firing, _) = split(ctx, &alerts);
        let entry = self.nflog.get(ctx.group_key, &ctx.recipient);
        if let Some(e) = &entry
            && (e.is_firing_subset(&firing) || e.timestamp + ctx.opts.repeat_interval <= ctx.now)
        {
            // The news is resolutions or the repeat interval, not new firing alerts.
            return Ok(alerts);
        }
        let burst_start = ctx.incident.map(|(c, _)| ctx.now - c.cfg.burst_window);
        let (mut steady, mut flapping) = (0, 0);
        for a in &alerts {
            let fresh = !a.resolved_at(ctx.now)
                && entry.as_ref().is_none_or(|e| !e.firing.contains(&a.fingerprint()))
                && burst_start.is_none_or(|s| a.starts_at >= s);
            if !fresh {
                continue;
            }
            match ctx.flap.and_then(|f| f.flapping(a.fingerprint(), ctx.now)) {
                Some(_) => flapping += 1,
                None => steady += 1,
            }
        }
        // Flapping alerts never notify on their own, but those that begin together with steady
        // ones are part of the burst: an alert storm shows as many alerts beginning at once.
        let new = if steady > 0 { steady + flapping } else { 0 };
        let need = ctx.incident.map_or(1, |(c, i)| c.required_burst(&i.origin, ctx.now));
        if new >= need {
            Ok(alerts)
        } else {
            tracing::debug!(group = ctx.group_key, new, need, "Notification held");
            Ok(Vec::new())
        }
    }
}
