//! The analyzer inside `argus serve`: `[analyzer]` validated, its state kept under the data
//! directory, its results written through the store backend and its anomalies handed to alertd in
//! this process (or posted to `alert_url`).

use anyhow::{Context, Result};
use argus_alertd::deliver::OutboxNotifier;
use argus_alertd::deliver::scheduler::capacity::CapacityPlan;
use argus_alertd::rules::group::AlertSink;
use argus_alertd::{PostableAlert, Timestamp};
use argus_analyzer::capacity::Recommendation;
use argus_analyzer::runtime::forecasts::push::{CapacityOut, HttpCapacityOut};
use argus_analyzer::runtime::{Alert, AlertOut, Analyzer, Config, HttpAlertOut, Metrics};
use argus_store::backend::{BoxFuture, StoreBackend};
use std::path::Path;
use std::sync::Arc;

/// Alerts given to alertd's engine directly, as if posted to `/api/v2/alerts`.
struct InProcess(Arc<dyn AlertSink>);

impl AlertOut for InProcess {
    fn send(&self, alerts: Vec<Alert>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let value = serde_json::to_value(&alerts).map_err(|e| e.to_string())?;
            let alerts: Vec<PostableAlert> = serde_json::from_value(value).map_err(|e| e.to_string())?;
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            self.0.send(Timestamp(now.as_millis() as i64), alerts);
            Ok(())
        })
    }
}

/// Capacity plans given to alertd's outbox directly, as if posted to `/api/v1/scheduler/capacity`.
struct InProcessCapacity(Arc<OutboxNotifier>);

impl CapacityOut for InProcessCapacity {
    fn push(&self, plans: Vec<Recommendation>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let value = serde_json::to_value(&plans).map_err(|e| e.to_string())?;
            let plans: Vec<CapacityPlan> = serde_json::from_value(value).map_err(|e| e.to_string())?;
            self.0.push_capacity(&plans).map(|_| ()).map_err(|e| e.to_string())
        })
    }
}

/// The analyzer ready to run, and its API's routes. None when `[analyzer]` is off.
pub struct Ready {
    pub analyzer: Analyzer,
    pub router: axum::Router,
}

pub fn build(
    cfg: &Config,
    data_dir: &Path,
    backend: Arc<dyn StoreBackend>,
    intake: Option<Arc<dyn AlertSink>>,
    capacity: Option<Arc<OutboxNotifier>>,
    registry: &mut prometheus_client::registry::Registry,
) -> Result<Option<Ready>> {
    let valid = cfg.validate()?;
    if !valid.enabled {
        return Ok(None);
    }
    let out: Arc<dyn AlertOut> = match (&valid.alert_url, intake) {
        (Some(url), _) => Arc::new(HttpAlertOut::new(url).map_err(anyhow::Error::msg).context("analyzer.alert_url")?),
        (None, Some(intake)) => Arc::new(InProcess(intake)),
        (None, None) => anyhow::bail!("[analyzer] needs alert_url when alertd is not running in this process"),
    };
    // Capacity plans go where the alerts go.
    let capacity_out: Option<Arc<dyn CapacityOut>> = match (&valid.alert_url, capacity) {
        (Some(url), _) if !valid.pools.is_empty() => {
            Some(Arc::new(HttpCapacityOut::new(url).map_err(anyhow::Error::msg).context("analyzer.alert_url")?))
        }
        (None, Some(notifier)) => Some(Arc::new(InProcessCapacity(notifier))),
        _ => None,
    };
    let metrics = Metrics::default();
    metrics.register(registry);
    let rules = valid.rules.len();
    let mut analyzer = Analyzer::new(valid, backend, out, Some(data_dir.join("analyzer")), metrics);
    if let Some(c) = capacity_out {
        analyzer = analyzer.with_capacity_out(c);
    }
    tracing::info!(rules, "Analyzer is up: anomalies at /api/v1/anomalies, forecasts at /api/v1/forecasts");
    let router = argus_analyzer::runtime::api::router(analyzer.board())
        .merge(argus_analyzer::runtime::forecasts::api::router(analyzer.forecast_board()));
    Ok(Some(Ready { analyzer, router }))
}
