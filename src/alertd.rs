//! `argus alertd …`: alertd's subcommands.

use anyhow::{Context, Result};
use clap::Subcommand;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum Cmd {
    /// Replays an alert stream through the notification pipeline in virtual time (no sleeping).
    /// Input lines: {"at": RFC3339, "alerts": [Alertmanager v2 alerts]}; output lines:
    /// {"at", "receiver", "payload"} with the webhook v4 body.
    Replay {
        /// alertd configuration (Alertmanager YAML with `argus:` extensions)
        #[arg(long)]
        config: PathBuf,
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        output: PathBuf,
    },
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Replay { config, input, output } => {
            let cfg = argus_alertd::config::load(&config)?;
            let inp = File::open(&input).with_context(|| format!("open {}", input.display()))?;
            let out = File::create(&output).with_context(|| format!("create {}", output.display()))?;
            let s = argus_alertd::replay::replay(cfg, BufReader::new(inp), BufWriter::new(out))
                .with_context(|| format!("replay {}", input.display()))?;
            eprintln!("replayed {} lines, {} alerts: {} notifications", s.lines, s.alerts, s.notifications);
            Ok(())
        }
    }
}

// === alertd in `argus serve` ===

mod reload;

use crate::config::Alertd;
use argus_alertd::api;
use argus_alertd::clock::TokioClock;
use argus_alertd::cluster;
use argus_alertd::db::{Db, DbLog, DbSilences, HistoryNotifier};
use argus_alertd::deliver::{self, Deliverer, RetryPolicy};
use argus_alertd::nflog::NotificationLog;
use argus_alertd::outbox::Outbox;
use argus_alertd::rules::RuleGroup;
use argus_alertd::rules::group::EvalOptions;
use argus_alertd::runner::Shared;
use argus_alertd::silence::Silences;
use argus_alertd::{Engine, Timestamp};
use argus_model::Shard;
use argus_store::backend::StoreBackend;
use std::path::Path;
use std::sync::Arc;

/// The default rule set (`argus.rules.defaults`), evaluated with the rule files.
pub const DEFAULT_RULES: &str = include_str!("../config/rules/defaults.yml");
const DEFAULT_RULES_FILE: &str = "built-in config/rules/defaults.yml";

/// The recommended configuration, used when no file is named and config/alertd.yml is absent.
const DEFAULT_CONFIG: &str = include_str!("../config/alertd.yml");
const DEFAULT_CONFIG_FILE: &str = "config/alertd.yml";

/// The alertd configuration `[alertd]` names, validated, and its text.
pub fn load_config(a: &Alertd) -> Result<(argus_alertd::Config, String)> {
    load_config_at(a.config_file.as_ref()).map(|(cfg, text, _)| (cfg, text))
}

/// `load_config` of `[alertd] config_file`, with the directory relative rule files are read from.
fn load_config_at(config_file: Option<&PathBuf>) -> Result<(argus_alertd::Config, String, PathBuf)> {
    let path = match config_file {
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from(DEFAULT_CONFIG_FILE)).filter(|p| p.exists()),
    };
    match path {
        Some(p) => {
            let text = std::fs::read_to_string(&p).with_context(|| format!("{}: cannot read", p.display()))?;
            let cfg = argus_alertd::config::parse(&text, &p.display().to_string())?;
            let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
            Ok((cfg, text, dir))
        }
        None => {
            let cfg = argus_alertd::config::parse(DEFAULT_CONFIG, "built-in config/alertd.yml")?;
            Ok((cfg, DEFAULT_CONFIG.into(), PathBuf::new()))
        }
    }
}

/// Validates an alertd YAML file and the rule files it names, or a Prometheus rule file (a
/// top-level `groups:` key, which alertd's YAML never has), for `argus check-config`.
pub fn check_file(path: &Path) -> Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    if text.lines().any(|l| l.starts_with("groups:")) {
        argus_alertd::rules::parse(&text, &path.display().to_string())?;
        return Ok(());
    }
    let cfg = argus_alertd::config::parse(&text, &path.display().to_string())?;
    rule_groups(&cfg, path.parent().unwrap_or(Path::new("")), Shard::ALL)?;
    Ok(())
}

/// The rule groups `argus.rules` names (files read from `dir` when relative) and the built-ins,
/// with the evaluation options, less the groups another `shard` evaluates (a group goes by the hash
/// of its name; every file is still read and checked). None when the section is absent.
fn rule_groups(cfg: &argus_alertd::Config, dir: &Path, shard: Shard) -> Result<Option<(Vec<RuleGroup>, EvalOptions)>> {
    let Some(r) = &cfg.rules else { return Ok(None) };
    let paths: Vec<PathBuf> = r.files.iter().map(|f| dir.join(f)).collect();
    let mut groups = argus_alertd::rules::load_all(&paths)?;
    if r.defaults {
        groups.extend(argus_alertd::rules::parse(DEFAULT_RULES, DEFAULT_RULES_FILE)?);
    }
    groups.extend(argus_alertd::rules::builtin::group(&r.builtins, argus_alertd::rules::BUILTIN_INTERVAL));
    groups.retain(|g| shard.owns([g.name.as_str()]));
    Ok(Some((groups, r.opts)))
}

/// alertd running inside `argus serve`: its routes, and the tasks that stop when it is dropped.
pub struct Running {
    pub router: axum::Router,
    /// The engine's intake, for alerts raised inside this process (the analyzer's).
    pub intake: Arc<dyn argus_alertd::rules::group::AlertSink>,
    /// Re-reads the configuration on `POST /-/reload` and SIGHUP.
    pub reloader: Arc<reload::Reloader>,
    /// The outbox's notifier, for capacity plans made inside this process (the analyzer's).
    pub capacity: Arc<deliver::OutboxNotifier>,
    /// This replica's cluster membership, when `[alertd.cluster]` is set.
    pub cluster: Option<cluster::Cluster>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        self.reloader.stop();
    }
}

/// Opens alertd's database, builds the engine and its receivers, and starts the timers, the
/// delivery workers and, with a `backend` (the rules role), the rule groups, whose alerts go to
/// `rule_sink` (None: this engine); their counters go to `registry`. None when `[alertd]` is off.
pub async fn start(
    a: &Alertd,
    server_data_dir: &Path,
    backend: Option<Arc<dyn StoreBackend>>,
    rule_sink: Option<Arc<dyn argus_alertd::rules::group::AlertSink>>,
    shard: Shard,
    registry: &mut prometheus_client::registry::Registry,
) -> Result<Option<Running>> {
    if !a.enabled {
        return Ok(None);
    }
    let (cfg, config_text, config_dir) = load_config_at(a.config_file.as_ref())?;
    // Rule files are read before anything starts, so a bad one stops startup with its error.
    let rules = rule_groups(&cfg, &config_dir, shard)?;
    let data_dir = a.data_dir.clone().unwrap_or_else(|| server_data_dir.to_path_buf());
    let db = Arc::new(Db::open(&data_dir)?);
    let silences: Arc<dyn Silences> = Arc::new(DbSilences::load(db.clone())?);
    let nflog: Arc<dyn NotificationLog> = Arc::new(DbLog::load(db.clone())?);
    // A replica of a cluster shares its silences and notification log with its peers.
    let cluster_settings = a.cluster.as_ref().map(|c| c.resolve()).transpose()?;
    let (silences, nflog, replicated) = match &cluster_settings {
        Some(settings) => {
            let outgoing = cluster::state::Outgoing::default();
            let s = Arc::new(cluster::state::ReplicatedSilences::new(silences, outgoing.clone()));
            let l = Arc::new(cluster::state::ReplicatedLog::new(nflog, outgoing.clone(), &settings.name));
            let parts = cluster::Replicated { silences: s.clone(), log: l.clone(), outgoing };
            (s as Arc<dyn Silences>, l as Arc<dyn NotificationLog>, Some(parts))
        }
        None => (silences, nflog, None),
    };
    // Notifications go to the durable outbox first; one worker per integration delivers them.
    let outbox = Arc::new(Outbox::open(&data_dir.join(argus_alertd::db::FILE_NAME))?);
    // A replica tells its peers once a notification has left its outbox (see ReplicatedLog).
    if let Some(parts) = &replicated {
        let log = parts.log.clone();
        outbox.observe(Arc::new(move |e, _| {
            let message: Option<serde_json::Value> = serde_json::from_str(&e.message).ok();
            if let Some(group_key) = message.as_ref().and_then(|m| m["groupKey"].as_str()) {
                log.confirm(group_key, &e.integration);
            }
        }));
    }
    // Remediation records its actions (and finds those done before a restart) in the history.
    let integrations = deliver::build_with_ledger(&cfg, db.clone())?;
    let delivery = Arc::new(deliver::metrics::Metrics::default());
    delivery.register(registry);
    let deliverer = Deliverer::new(outbox.clone(), integrations, RetryPolicy::default())
        .with_rate_limits(deliver::rate_limits(&cfg))
        .with_metrics(delivery.clone());
    let notifier = Arc::new(HistoryNotifier { inner: Arc::new(deliverer.notifier()), db: db.clone() });
    let capacity = Arc::new(deliverer.notifier());
    let mut engine = Engine::new(cfg, silences.clone(), nflog, notifier);
    engine.number_incidents_after(db.last_incident_number()?);
    if cluster_settings.is_some() {
        engine.join_cluster();
        // Alerts wait until the peers' state is merged (or the settle timeout passed).
        engine.hold_intake();
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).context("system clock")?;
    let started = Timestamp(now.as_millis() as i64);
    // The engine's memory (open incidents, acknowledgements, escalations, backoff and flap history)
    // is kept in alertd.db and, in a cluster, shared; what an earlier process kept comes back first.
    let kept = Arc::new(argus_alertd::db::DbMemory::new(db.clone()));
    let sink: Arc<dyn argus_alertd::memory::MemorySink> = match &replicated {
        Some(parts) => Arc::new(cluster::state::ReplicatedMemory::new(kept.clone(), parts.outgoing.clone())),
        None => kept.clone(),
    };
    engine.remember_with(sink);
    let remembered = kept.load(started)?;
    let restored = remembered.iter().filter(|m| engine.merge_memory(m, started)).count();
    if restored > 0 {
        tracing::info!(items = restored, "alertd restored its incidents, backoff and flap history");
    }
    let shared = Shared::new(engine, TokioClock::starting_at(started));
    let mut tasks = vec![tokio::spawn(argus_alertd::runner::run_shared(shared.clone()))];
    let cluster = match (&cluster_settings, replicated) {
        (Some(settings), Some(parts)) => Some(
            cluster::Cluster::start(settings, parts, shared.clone(), registry)
                .await
                .context("starting alertd's cluster member")?,
        ),
        _ => None,
    };
    let config_text = Arc::new(std::sync::RwLock::new(config_text));
    let reloader = Arc::new(reload::Reloader::new(
        a.config_file.clone(),
        shared.clone(),
        reload::Parts { outbox, db: db.clone(), delivery, backend, rule_sink, shard, capacity: capacity.clone() },
        config_text.clone(),
        registry,
    ));
    reloader.run(deliverer, rules);
    #[cfg(unix)]
    tasks.push(tokio::spawn(reload::on_sighup(reloader.clone())));
    let shared_for_intake = shared.clone();
    let for_api = reloader.clone();
    let state = api::State {
        engine: shared,
        silences,
        db,
        config_text,
        reload: Some(Arc::new(move || for_api.reload().map_err(|e| format!("{e:#}")))),
        started,
        max_body_bytes: a.max_body_bytes.unwrap_or(api::DEFAULT_MAX_BODY_BYTES),
        max_alerts_per_request: a.max_alerts_per_request.unwrap_or(api::DEFAULT_MAX_ALERTS_PER_REQUEST),
        max_labels_per_alert: a.max_labels_per_alert.unwrap_or(api::DEFAULT_MAX_LABELS_PER_ALERT),
        cluster: cluster.as_ref().map(|c| c.view()),
    };
    tracing::info!(data_dir = %data_dir.display(), "alertd is up: Alertmanager API v2 at /api/v2/alerts");
    let max_body = state.max_body_bytes;
    let router = api::router(state).merge(api::capacity::router(capacity.clone(), max_body));
    Ok(Some(Running { router, intake: Arc::new(shared_for_intake), reloader, capacity, cluster, tasks }))
}

// === the rules role without alertd ===

/// Rule alerts posted to every server of `[server] alert_urls`, in the order they were raised (one
/// sender task); a sender more than [`RULE_QUEUE`] evaluations behind drops the oldest-waiting
/// evaluation's alerts, as Prometheus' notifier queue does, since firing alerts are sent again.
pub struct PostedRules(tokio::sync::mpsc::Sender<Vec<argus_alertd::PostableAlert>>);

/// Evaluations' alert batches waiting for the sender.
const RULE_QUEUE: usize = 1_000;

impl PostedRules {
    /// The sink and its sender task.
    pub fn start(alert_urls: &[String]) -> Result<(Arc<PostedRules>, tokio::task::JoinHandle<()>)> {
        let out = argus_analyzer::runtime::HttpAlertOut::new(alert_urls)
            .map_err(anyhow::Error::msg)
            .context("server.alert_urls")?;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<argus_alertd::PostableAlert>>(RULE_QUEUE);
        let task = tokio::spawn(async move {
            while let Some(alerts) = rx.recv().await {
                if let Err(error) = out.post(&alerts).await {
                    tracing::warn!(%error, alerts = alerts.len(), "Rule alerts reached no alertd; they are sent again at the next evaluation while they fire");
                }
            }
        });
        Ok((Arc::new(PostedRules(tx)), task))
    }
}

impl argus_alertd::rules::group::AlertSink for PostedRules {
    fn send(&self, _now: Timestamp, alerts: Vec<argus_alertd::PostableAlert>) {
        if let Err(tokio::sync::mpsc::error::TrySendError::Full(dropped)) = self.0.try_send(alerts) {
            tracing::warn!(alerts = dropped.len(), "Rule alerts dropped: the alertd servers are not keeping up");
        }
    }
}

/// The rules role in a process without alertd: the rule groups of `[alertd] config_file`'s
/// `argus.rules`, evaluated against `backend`, their alerts handed to `sink`. Reading the files
/// happens here, so a bad one stops startup with its error. Empty when no rules are configured.
pub fn start_rules(
    a: &Alertd,
    backend: Arc<dyn StoreBackend>,
    sink: Arc<dyn argus_alertd::rules::group::AlertSink>,
    shard: Shard,
) -> Result<Vec<tokio::task::JoinHandle<()>>> {
    let (cfg, _, config_dir) = load_config_at(a.config_file.as_ref())?;
    let Some((groups, opts)) = rule_groups(&cfg, &config_dir, shard)? else {
        tracing::warn!("The rules role runs, but the alerting file has no argus.rules section: no rule to evaluate");
        return Ok(Vec::new());
    };
    let n: usize = groups.iter().map(|g| g.rules.len()).sum();
    tracing::info!(groups = groups.len(), rules = n, "Evaluating rules against the store");
    let evaluator = Arc::new(argus_alertd::rules::group::Evaluator { backend, sink, opts });
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).context("system clock")?;
    let clock = TokioClock::starting_at(Timestamp(now.as_millis() as i64));
    Ok(argus_alertd::rules::group::Groups::default().spawn(groups, evaluator, clock))
}
