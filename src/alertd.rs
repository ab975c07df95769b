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
use argus_alertd::rules::group::{AlertSink, EvalOptions};
use argus_alertd::rules::status::{GroupStatus, RulesView};
use argus_alertd::runner::Shared;
use argus_alertd::silence::Silences;
use argus_alertd::{Engine, Timestamp};
use argus_model::Shard;
use argus_store::backend::StoreBackend;
use prometheus_client::metrics::gauge::Gauge;
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
    // Strict, unlike a server: every rule file must load.
    rule_groups_with(&cfg, path.parent().unwrap_or(Path::new("")), Shard::ALL, Refused::Fail)?;
    Ok(())
}

/// The rule groups `argus.rules` names (files read from `dir` when relative) and the built-ins,
/// with the evaluation options, less the groups another `shard` evaluates (a group goes by the hash
/// of its name; every file is still read and checked). None when the section is absent. A rule
/// file that is refused is logged and skipped, and counted in [`RULE_FILES`]: one bad file never
/// keeps a server from starting, or a reload from applying, with the others.
fn rule_groups(cfg: &argus_alertd::Config, dir: &Path, shard: Shard) -> Result<Option<(Vec<RuleGroup>, EvalOptions)>> {
    rule_groups_with(cfg, dir, shard, Refused::Skip)
}

/// What to do with a rule file that is refused.
#[derive(Clone, Copy, PartialEq)]
enum Refused {
    /// Fail with its error (`argus check-config`).
    Fail,
    /// Log it, count it and go on with the others (a server).
    Skip,
}

fn rule_groups_with(
    cfg: &argus_alertd::Config,
    dir: &Path,
    shard: Shard,
    refused: Refused,
) -> Result<Option<(Vec<RuleGroup>, EvalOptions)>> {
    let Some(r) = &cfg.rules else {
        if refused == Refused::Skip {
            RULE_FILES.loaded(0);
        }
        return Ok(None);
    };
    let paths: Vec<PathBuf> = r.files.iter().map(|f| dir.join(f)).collect();
    let mut groups = match refused {
        Refused::Fail => argus_alertd::rules::load_all(&paths)?,
        Refused::Skip => {
            // `load_each` logs each refusal with its file, line and field.
            let (groups, errors) = argus_alertd::rules::load_each(&paths);
            if !errors.is_empty() {
                tracing::error!(
                    refused = errors.len(),
                    files = paths.len(),
                    "Rule files refused and skipped; the other rule files are evaluated"
                );
            }
            RULE_FILES.loaded(errors.len());
            groups
        }
    };
    if r.defaults {
        groups.extend(argus_alertd::rules::parse(DEFAULT_RULES, DEFAULT_RULES_FILE)?);
    }
    groups.extend(argus_alertd::rules::builtin::group(&r.builtins, argus_alertd::rules::BUILTIN_INTERVAL));
    groups.retain(|g| shard.owns([g.name.as_str()]));
    Ok(Some((groups, r.opts.clone())))
}

/// The outcome of the last load of the rule files, as Prometheus reports its configuration's.
/// One per process: the rule files are those of this process's alertd configuration, read at
/// start and at each reload.
static RULE_FILES: std::sync::LazyLock<RuleFileMetrics> = std::sync::LazyLock::new(RuleFileMetrics::default);

#[derive(Default)]
struct RuleFileMetrics {
    refused: Gauge,
    successful: Gauge,
}

impl RuleFileMetrics {
    fn register(&self, registry: &mut prometheus_client::registry::Registry) {
        registry.register(
            "argus_rules_files_refused",
            "Rule files refused (and skipped) at the last load of the rule files",
            self.refused.clone(),
        );
        registry.register(
            "argus_rules_last_reload_successful",
            "Whether every rule file loaded at the last load of the rule files",
            self.successful.clone(),
        );
    }

    fn loaded(&self, refused: usize) {
        self.refused.set(refused as i64);
        self.successful.set(i64::from(refused == 0));
    }
}

// === the rule groups for the store's /api/v1/rules and /api/v1/alerts ===

/// The rule groups evaluated in this process, for the store's Prometheus API: empty until the
/// rules role starts its groups here, and empty for good where it runs in another process.
#[derive(Default)]
pub struct RulesApi(std::sync::OnceLock<RulesView>);

impl RulesApi {
    fn from_view(view: RulesView) -> RulesApi {
        let api = RulesApi::default();
        let _ = api.0.set(view);
        api
    }
}

impl argus_store::http::RuleSource for RulesApi {
    fn rule_groups(&self) -> Vec<argus_store::http::RuleGroupInfo> {
        let Some(view) = self.0.get() else { return Vec::new() };
        view.groups().into_iter().map(group_info).collect()
    }
}

fn group_info(g: GroupStatus) -> argus_store::http::RuleGroupInfo {
    use argus_store::http::{AlertInfo, AlertingInfo, RuleInfo};
    let pairs = |l: &argus_model::Labels| l.iter().map(|l| (l.name.clone(), l.value.clone())).collect();
    let rules = g
        .rules
        .into_iter()
        .map(|r| RuleInfo {
            name: r.name,
            query: r.query,
            labels: r.labels,
            health: r.health.as_str(),
            last_error: r.last_error,
            last_evaluation_ms: r.last_evaluation.map(|t| t.0),
            evaluation_time: r.evaluation_time,
            alerting: r.alerting.map(|a| AlertingInfo {
                state: a.state().as_str(),
                duration: a.hold,
                keep_firing_for: a.keep_firing_for,
                alerts: a
                    .alerts
                    .iter()
                    .map(|x| AlertInfo {
                        labels: pairs(&x.labels),
                        annotations: pairs(&x.annotations),
                        state: x.state.as_str(),
                        active_at_ms: x.active_at.0,
                        value: x.value,
                    })
                    .collect(),
                annotations: a.annotations,
            }),
        })
        .collect();
    argus_store::http::RuleGroupInfo {
        name: g.name,
        file: g.file,
        interval: g.interval,
        last_evaluation_ms: g.last_evaluation.map(|t| t.0),
        evaluation_time: g.evaluation_time,
        rules,
    }
}

/// Rule alerts handed on to `inner`; told where the rule groups' statuses are, it keeps that for
/// [`RulesApi`] (the groups are (re)started by the reloader, which owns them).
struct Observed {
    inner: Arc<dyn AlertSink>,
    api: Arc<RulesApi>,
}

impl AlertSink for Observed {
    fn send(&self, now: Timestamp, alerts: Vec<argus_alertd::PostableAlert>) {
        self.inner.send(now, alerts);
    }

    fn running(&self, groups: &RulesView) {
        // The same view follows every reload: the first one told is the one.
        let _ = self.api.0.set(groups.clone());
    }
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
    /// The rule groups of the rules role, when it runs in this process, for the store's API.
    pub rules: Arc<RulesApi>,
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
    // A refused rule file is reported and skipped: the others are evaluated.
    let rules = rule_groups(&cfg, &config_dir, shard)?;
    RULE_FILES.register(registry);
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
    // Rule alerts go to `rule_sink`, or this engine; the groups' statuses are kept for the store's API.
    let rules_api = Arc::new(RulesApi::default());
    let rule_sink: Arc<dyn AlertSink> = Arc::new(Observed {
        inner: rule_sink.unwrap_or_else(|| Arc::new(shared.clone()) as Arc<dyn AlertSink>),
        api: rules_api.clone(),
    });
    let rule_sink = Some(rule_sink);
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
    Ok(Some(Running {
        router,
        intake: Arc::new(shared_for_intake),
        reloader,
        capacity,
        cluster,
        rules: rules_api,
        tasks,
    }))
}

// === the rules role without alertd ===

/// Rule alerts posted to every server of `[server] alert_urls`, in the order they were raised (one
/// sender task); a sender more than [`RULE_QUEUE`] evaluations behind drops the oldest-waiting
/// evaluation's alerts, as Prometheus' notifier queue does, since firing alerts are sent again.
pub struct PostedRules(tokio::sync::mpsc::Sender<Vec<argus_alertd::PostableAlert>>);

/// Evaluations' alert batches waiting for the sender.
const RULE_QUEUE: usize = 1_000;

impl PostedRules {
    /// The sink and its sender task; every post carries `token` (`[server] alert_token_file`).
    pub fn start(
        alert_urls: &[String],
        token: Option<argus_store_api::SecretFile>,
    ) -> Result<(Arc<PostedRules>, tokio::task::JoinHandle<()>)> {
        let out = argus_analyzer::runtime::HttpAlertOut::new(alert_urls)
            .map_err(anyhow::Error::msg)
            .context("server.alert_urls")?
            .with_token(token);
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
/// `argus.rules`, evaluated against `backend`, their alerts handed to `sink`, and their statuses
/// for the store's API. A refused rule file is reported and skipped (its count goes to
/// `registry`). No groups when no rules are configured.
pub fn start_rules(
    a: &Alertd,
    backend: Arc<dyn StoreBackend>,
    sink: Arc<dyn AlertSink>,
    shard: Shard,
    registry: &mut prometheus_client::registry::Registry,
) -> Result<(Vec<tokio::task::JoinHandle<()>>, Arc<RulesApi>)> {
    let (cfg, _, config_dir) = load_config_at(a.config_file.as_ref())?;
    let rules = rule_groups(&cfg, &config_dir, shard)?;
    RULE_FILES.register(registry);
    let Some((groups, opts)) = rules else {
        tracing::warn!("The rules role runs, but the alerting file has no argus.rules section: no rule to evaluate");
        return Ok((Vec::new(), Arc::new(RulesApi::default())));
    };
    let n: usize = groups.iter().map(|g| g.rules.len()).sum();
    tracing::info!(groups = groups.len(), rules = n, "Evaluating rules against the store");
    let evaluator = Arc::new(argus_alertd::rules::group::Evaluator { backend, sink, opts });
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).context("system clock")?;
    let clock = TokioClock::starting_at(Timestamp(now.as_millis() as i64));
    let running = argus_alertd::rules::group::Groups::default();
    let tasks = running.spawn(groups, evaluator, clock);
    Ok((tasks, Arc::new(RulesApi::from_view(running.view()))))
}
