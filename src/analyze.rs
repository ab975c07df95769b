//! The analyzer inside `argus serve`: `[analyzer]` validated, its state kept under the data
//! directory, its results written through the store backend and its anomalies handed to alertd in
//! this process (or posted to every server of `[server] alert_urls`).

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

/// Where the analyzer's alerts and capacity plans go: the alertd of this process (its intake and
/// notifier), unless `alert_urls` names servers.
pub struct AlertsTo<'a> {
    pub intake: Option<Arc<dyn AlertSink>>,
    pub capacity: Option<Arc<OutboxNotifier>>,
    pub alert_urls: &'a [String],
    /// `[server] alert_token_file`: the token sent to `alert_urls`.
    pub alert_token: Option<argus_store_api::SecretFile>,
}

/// The analyzer of `[analyzer]` for share `shard` of the work, its state under `data_dir`.
pub fn build(
    cfg: &Config,
    data_dir: &Path,
    backend: Arc<dyn StoreBackend>,
    to: AlertsTo<'_>,
    shard: argus_model::Shard,
    registry: &mut prometheus_client::registry::Registry,
) -> Result<Option<Ready>> {
    let AlertsTo { intake, capacity, alert_urls, alert_token } = to;
    let valid = cfg.validate()?.for_shard(shard);
    if !valid.enabled {
        return Ok(None);
    }
    // The alertd of this process when there is one and no list is set; otherwise every listed server.
    let remote = !alert_urls.is_empty() || intake.is_none();
    let out: Arc<dyn AlertOut> = match intake {
        Some(intake) if !remote => Arc::new(InProcess(intake)),
        _ if alert_urls.is_empty() => anyhow::bail!(
            "[analyzer] needs [server] alert_urls when alertd does not run in this process (the alertd role)"
        ),
        _ => Arc::new(
            HttpAlertOut::new(alert_urls)
                .map_err(anyhow::Error::msg)
                .context("server.alert_urls")?
                .with_token(alert_token.clone()),
        ),
    };
    // Capacity plans go where the alerts go (over HTTP, to the first alertd that takes them).
    let capacity_out: Option<Arc<dyn CapacityOut>> = match capacity {
        Some(notifier) if !remote => Some(Arc::new(InProcessCapacity(notifier))),
        _ if remote && !valid.pools.is_empty() => Some(Arc::new(
            HttpCapacityOut::new(alert_urls)
                .map_err(anyhow::Error::msg)
                .context("server.alert_urls")?
                .with_token(alert_token),
        )),
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
