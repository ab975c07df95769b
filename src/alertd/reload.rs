//! Reloading alertd's configuration inside `argus serve` (`POST /-/reload`, SIGHUP), as Alertmanager
//! does: the whole new configuration — the alerting file, the rule files it names, its receivers — is
//! read and validated first; only then is it swapped in, so a bad file changes nothing.
//!
//! What a reload does, once the new configuration is valid:
//! - the engine rebuilds its dispatcher over the alerts it holds (`Engine::reload`), keeping silences
//!   and the notification log, so a group whose route remains does not notify again what it sent;
//! - the delivery workers are replaced by workers for the new receivers, over the same outbox:
//!   pending notifications are kept (a send cut short is sent again, with the same idempotency key);
//!   those of receivers no longer configured fail, as at a restart; the capacity path of the
//!   analyzer in the same process sends to the new receivers too;
//! - rule groups restart; each rule left unchanged (same file, group and definition) keeps its
//!   pending and firing alerts with their `for` timers, as in Prometheus; changed and new rules
//!   start fresh (`argus_alertd::rules::group::Groups`).

use super::{load_config_at, rule_groups};
use anyhow::Result;
use argus_alertd::db::{Db, HistoryNotifier};
use argus_alertd::deliver::{self, Deliverer, RetryPolicy};
use argus_alertd::outbox::Outbox;
use argus_alertd::rules::RuleGroup;
use argus_alertd::rules::group::{AlertSink, EvalOptions, Evaluator, Groups};
use argus_alertd::runner::Shared;
use argus_store::backend::StoreBackend;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};
use tokio::task::JoinHandle;

/// What a reload builds the new delivery and rule evaluation over.
pub struct Parts {
    pub outbox: Arc<Outbox>,
    pub db: Arc<Db>,
    /// The delivery counters, registered once and kept across reloads.
    pub delivery: Arc<deliver::metrics::Metrics>,
    /// The store the rules are evaluated against; None when the rules role does not run here.
    pub backend: Option<Arc<dyn StoreBackend>>,
    /// Where rule alerts go: None for this alertd's engine, else the `alert_urls` sink.
    pub rule_sink: Option<Arc<dyn AlertSink>>,
    /// The share of the rule groups this process evaluates (`--shard`).
    pub shard: argus_model::Shard,
    /// The notifier handed to the in-process capacity path (the analyzer's); a reload points it at
    /// the new receivers.
    pub capacity: Arc<deliver::OutboxNotifier>,
}

pub struct Reloader {
    config_file: Option<PathBuf>,
    shared: Shared,
    parts: Parts,
    config_text: Arc<RwLock<String>>,
    /// The running delivery workers and rule groups; held while a reload swaps them, so two
    /// reloads never interleave.
    live: Mutex<Vec<JoinHandle<()>>>,
    /// The rule groups' states, carried from one configuration to the next.
    groups: Groups,
    successful: Gauge,
    success_time: Gauge<f64, AtomicU64>,
}

impl Reloader {
    pub fn new(
        config_file: Option<PathBuf>,
        shared: Shared,
        parts: Parts,
        config_text: Arc<RwLock<String>>,
        registry: &mut Registry,
    ) -> Reloader {
        let r = Reloader {
            config_file,
            shared,
            parts,
            config_text,
            live: Mutex::new(Vec::new()),
            groups: Groups::default(),
            successful: Gauge::default(),
            success_time: Gauge::default(),
        };
        // Alertmanager's names, so its dashboards and alerts on failed reloads apply unchanged.
        registry.register(
            "alertmanager_config_last_reload_successful",
            "Whether the last alertd configuration reload attempt was successful",
            r.successful.clone(),
        );
        registry.register(
            "alertmanager_config_last_reload_success_timestamp_seconds",
            "Timestamp of the last successful alertd configuration reload (or of the start)",
            r.success_time.clone(),
        );
        r
    }

    /// Starts the delivery workers and rule groups of the configuration loaded at startup.
    pub fn run(&self, deliverer: Deliverer, rules: Option<(Vec<RuleGroup>, EvalOptions)>) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.extend(self.spawn(deliverer, rules));
        self.succeeded();
    }

    /// Re-reads the configuration and applies it, or leaves everything as it was and says why.
    pub fn reload(&self) -> Result<()> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let built = (|| {
            let (cfg, text, dir) = load_config_at(self.config_file.as_ref())?;
            let rules = rule_groups(&cfg, &dir, self.parts.shard)?;
            let integrations = deliver::build_with_ledger(&cfg, self.parts.db.clone())?;
            anyhow::Ok((cfg, text, rules, integrations))
        })();
        let (cfg, text, rules, integrations) = match built {
            Ok(b) => b,
            Err(error) => {
                self.successful.set(0);
                tracing::error!(
                    error = format!("{error:#}"),
                    "Configuration reload failed; the running configuration stays"
                );
                return Err(error);
            }
        };
        // Nothing below can fail: the old workers stop before the new ones start, so no
        // integration ever has two.
        for t in live.drain(..) {
            t.abort();
        }
        let p = &self.parts;
        let deliverer = Deliverer::new(p.outbox.clone(), integrations, RetryPolicy::default())
            .with_rate_limits(deliver::rate_limits(&cfg))
            .with_metrics(p.delivery.clone());
        let notifier = Arc::new(HistoryNotifier { inner: Arc::new(deliverer.notifier()), db: p.db.clone() });
        p.capacity.retarget(&deliverer);
        let now = self.shared.now();
        {
            let mut engine = self.shared.lock();
            engine.reload(cfg, notifier, now);
            engine.advance(now);
        }
        self.shared.changed();
        live.extend(self.spawn(deliverer, rules));
        *self.config_text.write().unwrap_or_else(|e| e.into_inner()) = text;
        self.succeeded();
        tracing::info!(file = ?self.config_file, "Configuration reloaded");
        Ok(())
    }

    fn spawn(&self, deliverer: Deliverer, rules: Option<(Vec<RuleGroup>, EvalOptions)>) -> Vec<JoinHandle<()>> {
        let mut tasks = deliverer.spawn();
        if let (Some((groups, opts)), Some(backend)) = (rules, &self.parts.backend) {
            let n: usize = groups.iter().map(|g| g.rules.len()).sum();
            tracing::info!(groups = groups.len(), rules = n, "Evaluating rules against the store");
            let sink = match &self.parts.rule_sink {
                Some(s) => s.clone(),
                None => Arc::new(self.shared.clone()),
            };
            let evaluator = Arc::new(Evaluator { backend: backend.clone(), sink, opts });
            tasks.extend(self.groups.spawn(groups, evaluator, self.shared.clock.clone()));
        }
        tasks
    }

    fn succeeded(&self) {
        self.successful.set(1);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        self.success_time.set(now.as_secs_f64());
    }

    /// Stops the delivery workers and rule groups.
    pub fn stop(&self) {
        for t in self.live.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            t.abort();
        }
    }
}

/// Reloads on every SIGHUP, as Alertmanager does.
#[cfg(unix)]
pub async fn on_sighup(reloader: Arc<Reloader>) {
    let mut hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(s) => s,
        Err(error) => {
            tracing::warn!(%error, "SIGHUP handler not installed; reload with POST /-/reload");
            return;
        }
    };
    while hup.recv().await.is_some() {
        let r = reloader.clone();
        // An error is logged and counted by `reload`.
        let _ = tokio::task::spawn_blocking(move || r.reload()).await;
    }
}
