//! `argus serve`: opens the store, serves every API on one listener, runs upkeep, and on SIGTERM or
//! Ctrl-C stops accepting, flushes the head into blocks and exits 0.

use crate::auth::{self, Auth, Scope};
use crate::config::{self, Config};
use crate::roles::Roles;
use anyhow::{Context, Result};
use argus_store::Db;
use argus_store::backend::{self, RemoteOptions, StoreBackend};
use argus_store::query::memory::Caller;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

mod http_metrics;
mod selfmon;

#[derive(clap::Args)]
pub struct Args {
    /// Configuration file (argus.toml); without it the defaults apply.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:9700].
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Data directory [default: ./data].
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// How long samples are kept, from the wall clock [default: 35d].
    #[arg(long)]
    retention: Option<String>,
    /// How much disk the data directory may take (e.g. 500GiB); past it the oldest blocks go first
    /// [default: no bound].
    #[arg(long)]
    retention_size: Option<String>,
    /// The parts to run, comma-separated: store, rules, analyzer, alertd, collector, or all (the
    /// default). Without `store`, the others use the remote store `[store] backend` names.
    #[arg(long, value_delimiter = ',')]
    role: Vec<crate::roles::Role>,
    /// This process's share of the rules and the analyzer, `I/N` (0-based): rule groups by name, the
    /// analyzer's series by (cluster, host) or a peer rule's groups, forecast targets by name. N
    /// processes with shards 0/N … N-1/N share the work and nothing but the store.
    #[arg(long, value_parser = argus_model::Shard::parse)]
    shard: Option<argus_model::Shard>,
    /// Do not run the local node collector (the same as leaving `collector` out of --role).
    #[arg(long)]
    no_collector: bool,
    /// Also replay real GPU-cluster telemetry as a demo cluster (labelled `demo="true"`) with a fault
    /// injected; the data directory defaults to ./data-demo and notifications go to a log there.
    #[arg(long)]
    demo: bool,
    /// alertd's cluster gossip address, e.g. 0.0.0.0:9094 (`[alertd.cluster] listen`); with it,
    /// alertd runs as a replica of a cluster.
    #[arg(long = "cluster.listen-address")]
    cluster_listen: Option<String>,
    /// Another replica, `host:port` (repeatable; `[alertd.cluster] peers`).
    #[arg(long = "cluster.peer")]
    cluster_peer: Vec<String>,
    /// The address peers reach this replica at (`[alertd.cluster] advertise`).
    #[arg(long = "cluster.advertise-address")]
    cluster_advertise: Option<String>,
    /// Wait per position before notifying (`[alertd.cluster] peer_timeout`) [default: 15s].
    #[arg(long = "cluster.peer-timeout")]
    cluster_peer_timeout: Option<String>,
    /// Longest wait to merge the peers' state before answering ready (`[alertd.cluster]
    /// settle_timeout`) [default: 30s].
    #[arg(long = "cluster.settle-timeout")]
    cluster_settle_timeout: Option<String>,
}

impl Args {
    /// Applies the `--cluster.*` flags over `[alertd.cluster]`.
    fn apply_cluster_flags(&self, cfg: &mut Config) -> Result<()> {
        let any = self.cluster_listen.is_some()
            || !self.cluster_peer.is_empty()
            || self.cluster_advertise.is_some()
            || self.cluster_peer_timeout.is_some()
            || self.cluster_settle_timeout.is_some();
        if !any && cfg.alertd.cluster.is_none() {
            return Ok(());
        }
        let c = cfg.alertd.cluster.get_or_insert_with(Default::default);
        let set = |to: &mut Option<String>, from: &Option<String>| {
            if from.is_some() {
                to.clone_from(from);
            }
        };
        set(&mut c.listen, &self.cluster_listen);
        set(&mut c.advertise, &self.cluster_advertise);
        set(&mut c.peer_timeout, &self.cluster_peer_timeout);
        set(&mut c.settle_timeout, &self.cluster_settle_timeout);
        if !self.cluster_peer.is_empty() {
            c.peers.clone_from(&self.cluster_peer);
        }
        c.check()
    }
}

pub fn run(args: Args) -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let mut cfg = match &args.config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    args.apply_cluster_flags(&mut cfg)?;
    // A demo never mixes with real data: it has its own default data directory.
    let default_dir = if args.demo { "data-demo" } else { "data" };
    let mut opts = cfg.store_options(&PathBuf::from(default_dir))?;
    if let Some(d) = &args.data_dir {
        opts.data_dir = d.clone();
    }
    if let Some(r) = &args.retention {
        opts.retention = config::duration("--retention", r)?;
    }
    if let Some(r) = &args.retention_size {
        opts.max_disk_size = Some(config::bytes("--retention-size", r)?).filter(|&b| b > 0);
    }
    let listen: SocketAddr = match args.listen {
        Some(l) => l,
        None => cfg.server.listen.parse().context("server.listen")?,
    };
    // Both checked before anything is opened: a server that would be open to the network without
    // saying so does not start.
    let auth = Auth::resolve(&cfg.auth, listen)?;
    let tls = match cfg.server.tls()? {
        Some((cert, key)) => Some(crate::tls::server_config(cert, key)?),
        None => None,
    };
    let remote = cfg.remote_backend()?;
    let remote_name = remote.as_ref().map(|r| match r {
        RemoteOptions::Prometheus(p) => p.flavour.name(),
        RemoteOptions::Influxdb2(_) => "influxdb2",
    });
    let roles = Roles::resolve(&args.role, args.no_collector, remote_name)?;
    if args.demo && !roles.store {
        anyhow::bail!("--demo runs on the embedded store: it needs the store role and no remote [store] backend");
    }
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let max_concurrent = cfg.server.max_concurrent_requests;
    let listen = Listen { addr: listen, auth, tls, max_concurrent };
    let shard = args.shard.unwrap_or(argus_model::Shard::ALL);
    rt.block_on(serve(cfg, opts, listen, Mode { roles, remote, shard, demo: args.demo }))
}

/// The listener's address, access policy, TLS configuration and concurrency limit.
struct Listen {
    addr: SocketAddr,
    auth: Auth,
    tls: Option<Arc<rustls::ServerConfig>>,
    max_concurrent: usize,
}

/// Answers 503 with Retry-After when `server.max_concurrent_requests` are already being served
/// (health checks excepted), rather than queueing without bound.
async fn limit_concurrency(
    axum::extract::State(slots): axum::extract::State<Arc<tokio::sync::Semaphore>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if auth::required(req.method(), req.uri().path()).is_none() {
        return next.run(req).await;
    }
    match slots.clone().try_acquire_owned() {
        Ok(_permit) => next.run(req).await,
        Err(_) => {
            let mut r = auth::api_error(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                req.uri().path(),
                "unavailable",
                "too many concurrent requests (server.max_concurrent_requests); retry later".into(),
            );
            r.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from_static("1"));
            r
        }
    }
}

impl Listen {
    fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// Binds, and serves `app` behind the access check until `stop` resolves. Returns the address
    /// really bound (port 0 picks one) and the server's future.
    async fn start(
        self,
        app: axum::Router,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(SocketAddr, Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>)> {
        let addr = self.addr;
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("listening on {addr}"))?;
        let addr = listener.local_addr().unwrap_or(addr);
        if self.auth.is_open() {
            tracing::info!(%addr, "No authentication: every endpoint is open on this loopback address");
        }
        // The concurrency limit is the outer layer: a flood of unauthenticated requests is shed too.
        let app = app.layer(axum::middleware::from_fn_with_state(Arc::new(self.auth), auth::guard)).layer(
            axum::middleware::from_fn_with_state(
                Arc::new(tokio::sync::Semaphore::new(self.max_concurrent)),
                limit_concurrency,
            ),
        );
        let server: Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>> = match self.tls {
            Some(tls) => {
                let listener = crate::tls::TlsListener::new(listener, tls)?;
                Box::pin(axum::serve(listener, app).with_graceful_shutdown(stop).into_future())
            }
            None => Box::pin(axum::serve(listener, app).with_graceful_shutdown(stop).into_future()),
        };
        Ok((addr, server))
    }
}

/// `/-/ready` of an alertd replica: 503 while it settles, and which way it became ready.
async fn cluster_ready(
    axum::extract::State(view): axum::extract::State<argus_alertd::cluster::View>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if req.uri().path() != "/-/ready" {
        return next.run(req).await;
    }
    let r = view.snapshot().readiness;
    match r.is_ready() {
        true => format!("Argus is Ready. {}.\n", r.describe()).into_response(),
        false => (axum::http::StatusCode::SERVICE_UNAVAILABLE, format!("Argus is not ready: {}.\n", r.describe()))
            .into_response(),
    }
}

/// The parts this process runs, and the store they use when the store role is not among them.
struct Mode {
    roles: Roles,
    remote: Option<RemoteOptions>,
    shard: argus_model::Shard,
    demo: bool,
}

async fn serve(mut cfg: Config, opts: argus_store::Options, mut listen: Listen, mode: Mode) -> Result<()> {
    let Mode { roles, remote, shard, demo } = mode;
    let data_dir = opts.data_dir.clone();
    let db = match roles.store {
        true => {
            Some(Arc::new(tokio::task::spawn_blocking(move || Db::open(opts)).await?.context("opening the store")?))
        }
        // alertd's database, the analyzer's models and the collector's spool still live here.
        false => {
            std::fs::create_dir_all(&data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
            None
        }
    };
    // === demo: its receiver and alertd configuration first, and history before the analyzer warms up ===
    let demo = match (demo, &db) {
        (true, Some(db)) => {
            Some(crate::demo::prepare(&mut cfg, &data_dir, db.clone(), listen.addr, listen.tls.is_some()).await?)
        }
        _ => None,
    };
    let mut registry = prometheus_client::registry::Registry::default();
    listen.auth.register(&mut registry);
    crate::malloc::register_stats(&mut registry);
    let http_counts = http_metrics::HttpMetrics::new(&mut registry);
    let self_every = cfg.self_monitoring.every()?;
    let limits = cfg.limits()?;
    let collector_sink = match (&db, &remote) {
        (None, Some(RemoteOptions::Prometheus(p))) => Some(Box::new(p.clone())),
        _ => None,
    };
    // Without the embedded store, the read API is passed through to a Prometheus-compatible remote
    // one, so Grafana, the status page and tokens confined to a label scope read through Argus.
    let read_proxy = match &collector_sink {
        Some(p) => Some(Arc::new(backend::ReadProxy::new(p).context("building the read pass-through")?)),
        None => None,
    };
    // Queries of the API, of the rules and of the rest of the process (the analyzer) share one
    // memory budget, with a share kept for the rules (`[store] max_query_memory`).
    let with_caller = |caller| {
        let mut q = limits.query.clone();
        q.memory = q.memory.for_caller(caller);
        q
    };
    if let (Some(_), Some(budget)) = (&db, limits.query.memory.budget()) {
        budget.register(&mut registry);
    }
    let backend: Option<Arc<dyn StoreBackend>> = match (&db, remote) {
        (Some(db), _) => Some(Arc::new(backend::Embedded::new(db.clone(), with_caller(Caller::Internal)))),
        (None, Some(remote)) => Some(backend::connect(remote).context("building the store backend")?),
        (None, None) => None,
    };
    let store_name = backend.as_ref().map_or("none".to_string(), |b| format!("{} ({})", b.name(), b.describe()));
    let alert_urls = cfg.alert_urls()?;
    // === rules: in alertd's engine when both run here and no alert_urls are set, else posted ===
    let mut role_tasks = Vec::new();
    let rules_backend: Option<Arc<dyn StoreBackend>> = match (&db, &backend) {
        _ if !roles.rules => None,
        (Some(db), _) => Some(Arc::new(backend::Embedded::new(db.clone(), with_caller(Caller::Rules)))),
        (None, b) => b.clone(),
    };
    let posted_rules = match (&rules_backend, alert_urls.is_empty()) {
        (Some(_), false) => {
            let (sink, task) = crate::alertd::PostedRules::start(&alert_urls, cfg.alert_token()?)?;
            role_tasks.push(task);
            Some(sink as Arc<dyn argus_alertd::rules::group::AlertSink>)
        }
        _ => None,
    };
    if rules_backend.is_some() {
        argus_alertd::rules::group::RuleMetrics::register(&mut registry);
    }
    // === alertd ===
    let alertd = match roles.alertd {
        true => {
            let (backend, sink) = (rules_backend.clone(), posted_rules.clone());
            crate::alertd::start(&cfg.alertd, &data_dir, backend, sink, shard, &mut registry)
                .await
                .context("starting alertd")?
        }
        false => None,
    };
    // What the store's /api/v1/rules and /api/v1/alerts answer: the rules role of this process.
    let mut rules_api = alertd.as_ref().map(|a| a.rules.clone());
    if let (Some(b), None) = (&rules_backend, &alertd) {
        let Some(sink) = posted_rules.clone() else {
            anyhow::bail!(
                "the rules role needs [server] alert_urls when alertd does not run in this process (the alertd role)"
            );
        };
        let (tasks, api) = crate::alertd::start_rules(&cfg.alertd, b.clone(), sink, shard, &mut registry)?;
        role_tasks.extend(tasks);
        rules_api = Some(api);
    }
    // === analyzer ===
    let intake = alertd.as_ref().map(|a| a.intake.clone());
    let capacity = alertd.as_ref().map(|a| a.capacity.clone());
    let analyzer = match (roles.analyzer, &backend) {
        (true, Some(b)) => {
            let to =
                crate::analyze::AlertsTo { intake, capacity, alert_urls: &alert_urls, alert_token: cfg.alert_token()? };
            crate::analyze::build(&cfg.analyzer, &data_dir, b.clone(), to, shard, &mut registry)
                .context("starting the analyzer")?
        }
        _ => None,
    };
    // The router owns the registry; `encode` reads it as `/metrics` does, for self-monitoring.
    let (app, encode): (axum::Router, selfmon::Encode) = match &db {
        Some(db) => {
            let state = argus_store::http::State::new(db.clone(), limits, registry);
            if let Some(rules) = rules_api {
                state.serve_rules(rules);
            }
            if alertd.is_some() {
                state.include_in_snapshots(alertd_snapshot_part(&cfg, &data_dir));
            }
            let own = state.clone();
            let encode: selfmon::Encode = Arc::new(move || encode_metrics(&own.registry));
            (argus_store::http::router(state), encode)
        }
        None => {
            let registry = Arc::new(registry);
            let own = registry.clone();
            let encode: selfmon::Encode = Arc::new(move || encode_metrics(&own));
            let app = argus_store::http::health_router(registry);
            let app = match read_proxy.clone() {
                Some(p) => app.merge(argus_store::http::read_proxy_router(p)),
                None => app,
            };
            (app, encode)
        }
    };
    let proxied = db.is_none() && read_proxy.is_some();
    let app = match &alertd {
        Some(a) => app.merge(a.router.clone()),
        None => app,
    };
    let parts = crate::openapi::Parts {
        store: db.is_some(),
        read_proxy: proxied,
        alertd: alertd.is_some(),
        analyzer: analyzer.is_some(),
        demo: demo.is_some(),
    };
    let app = app.merge(crate::openapi::router(parts));
    let (analyzer_stop, analyzer_stopped) = tokio::sync::oneshot::channel::<()>();
    let app = app.merge(crate::status::router());
    let app = match &demo {
        Some(d) => app.merge(d.router()),
        None => app,
    };
    let (app, analyzer) = match analyzer {
        Some(a) => {
            let task = tokio::spawn(a.analyzer.run(async move {
                let _ = analyzer_stopped.await;
            }));
            (app.merge(a.router), Some(task))
        }
        None => (app, None),
    };
    // The embedded collector writes over loopback with a token that exists only in this process.
    let own_store = db.is_some() && cfg.collector.sinks.is_empty();
    let collector_token = match roles.collector && own_store && !listen.auth.is_open() {
        true => Some(listen.auth.add_internal("embedded-collector", &[Scope::Write])?),
        false => None,
    };
    // Inside the access check: what is counted is what was served.
    let app = app.layer(axum::middleware::from_fn_with_state(http_counts, http_metrics::track));
    // A replica of an alertd cluster answers ready once it merged its peers' state.
    let app = match alertd.as_ref().and_then(|a| a.cluster.as_ref()) {
        Some(c) => app.layer(axum::middleware::from_fn_with_state(c.view(), cluster_ready)),
        None => app,
    };
    let tls_cert = cfg.server.tls_cert.clone().filter(|_| listen.tls.is_some());
    let scheme = listen.scheme();
    let (server_stop, server_stopped) = tokio::sync::oneshot::channel::<()>();
    let (listen, server) = listen
        .start(app, async move {
            let _ = server_stopped.await;
        })
        .await?;
    let role_names = match shard.count() {
        1 => roles.names().join(","),
        _ => format!("{} (shard {shard})", roles.names().join(",")),
    };
    let on = if db.is_some() { "" } else { " on a remote store" };
    tracing::info!(
        listen = %listen,
        data_dir = %data_dir.display(),
        roles = %role_names,
        store = %store_name,
        "Argus is up{on}: {scheme}://{listen}/"
    );
    let base = format!("{scheme}://{listen}");
    println!("Argus is up{}", if demo.is_some() { " with the DEMO cluster (demo data, not yours)" } else { "" });
    println!("  roles          {role_names}");
    println!("  status page    {base}/");
    match (db.is_some(), alertd.is_some()) {
        (true, true) => {
            println!("  API            {base}/api/v1/query  (Prometheus), {base}/api/v2/alerts  (Alertmanager)")
        }
        (true, false) => println!("  API            {base}/api/v1/query  (Prometheus)"),
        (false, true) => println!("  API            {base}/api/v2/alerts  (Alertmanager)"),
        (false, false) => {}
    }
    if db.is_none() {
        println!("  store          {store_name}");
    }
    println!("  metrics        {base}/metrics");
    println!("  data dir       {}", data_dir.display());
    // === self-monitoring: this process's /metrics into the store, as job="argus" ===
    let self_scrape = match (self_every, &backend) {
        (Some(every), Some(b)) => {
            let instance = listen.to_string();
            Some(selfmon::SelfScrape { encode, backend: b.clone(), instance, every }.spawn())
        }
        // It holds the store's state: let go now, so the store can be closed at the end.
        _ => {
            drop(encode);
            None
        }
    };
    let demo_task = demo.map(|d| {
        d.print();
        d.start()
    });
    // The node collector of this machine: to this server's store over loopback remote write (so its
    // spool covers the store being busy or restarting), to the remote store, or to [collector] sinks.
    let (collector_stop, collector_stopped) = tokio::sync::oneshot::channel::<()>();
    let collector = match roles.collector {
        false => None,
        true => {
            let target = match (own_store, collector_sink) {
                (true, _) => CollectorTarget::ThisServer { listen, token: collector_token, tls_cert },
                (false, Some(p)) => CollectorTarget::Remote(p),
                (false, None) => CollectorTarget::Configured,
            };
            let agent = collector_agent(&cfg, &data_dir, target)?;
            Some(tokio::spawn(agent.run(async move {
                let _ = collector_stopped.await;
            })))
        }
    };
    let upkeep = db.clone().map(|upkeep_db| {
        tokio::spawn(async move {
            // Every second, so a head filling fast is flushed before writes must be refused.
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let d = upkeep_db.clone();
                if let Ok(Err(e)) = tokio::task::spawn_blocking(move || d.maintain()).await {
                    tracing::error!(error = %e, "Store upkeep failed");
                }
            }
        })
    });
    let mut server = tokio::spawn(server);
    let early = tokio::select! {
        _ = shutdown_signal() => None,
        r = &mut server => Some(r),
    };
    // The collector stops first, so its last batches reach the store while it still listens.
    if let Some(c) = collector {
        let _ = collector_stop.send(());
        match c.await {
            Ok(Err(error)) => tracing::error!(%error, "Collector stopped with an error"),
            Err(error) => tracing::error!(%error, "Collector task failed"),
            Ok(Ok(())) => {}
        }
    }
    // The analyzer saves its detectors' state before the store closes.
    if let Some(a) = analyzer {
        let _ = analyzer_stop.send(());
        let _ = a.await;
    }
    let _ = server_stop.send(());
    match early {
        Some(r) => r??,
        None => server.await??,
    }
    if let Some(u) = upkeep {
        u.abort();
    }
    // Waited for, since it holds the store's state until it is dropped.
    if let Some(s) = self_scrape {
        s.abort();
        let _ = s.await;
    }
    for t in role_tasks {
        t.abort();
    }
    if let Some(d) = demo_task {
        d.abort();
    }
    drop(alertd);
    if let Some(db) = db {
        tracing::info!("Shutting down: flushing the head into blocks");
        let d = db.clone();
        tokio::task::spawn_blocking(move || d.flush()).await?.context("final flush")?;
        if let Ok(db) = Arc::try_unwrap(db) {
            db.close();
        }
    }
    tracing::info!("Stopped cleanly");
    Ok(())
}

/// A registry in the exposition format, as `/metrics` answers it.
fn encode_metrics(registry: &prometheus_client::registry::Registry) -> Result<String, String> {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry).map_err(|e| e.to_string())?;
    Ok(out)
}

/// alertd's database in the store's snapshots, copied by SQLite (`argus_alertd::db::backup`) into the
/// snapshot's top directory, where a restored data directory has it.
fn alertd_snapshot_part(cfg: &Config, data_dir: &Path) -> argus_store::SnapshotPart {
    let dir = cfg.alertd.data_dir.clone().unwrap_or_else(|| data_dir.to_path_buf());
    argus_store::SnapshotPart {
        name: argus_alertd::db::FILE_NAME.to_string(),
        copy: Arc::new(move |snapshot: &Path| {
            argus_alertd::db::backup(&dir, &snapshot.join(argus_alertd::db::FILE_NAME)).map_err(|e| e.to_string())
        }),
    }
}

/// Where the collector inside `argus serve` writes when `[collector]` names no sinks of its own.
enum CollectorTarget {
    /// This server's store, over loopback, with a token that exists only in this process.
    ThisServer { listen: SocketAddr, token: Option<String>, tls_cert: Option<PathBuf> },
    /// The remote store of `[store.remote]`, by remote write.
    Remote(Box<argus_store::backend::PrometheusOptions>),
    /// The sinks `[collector]` names.
    Configured,
}

/// The `[collector]` section as `serve` runs it: without sinks of its own it writes to `target`, and
/// it spools under the server's data directory. Over TLS to this server it connects to `localhost` and
/// trusts the server's own certificate file, so that certificate must name localhost (else configure
/// a sink with the server's name).
fn collector_agent(
    cfg: &Config,
    data_dir: &std::path::Path,
    target: CollectorTarget,
) -> Result<argus_collector::Agent> {
    let mut c = cfg.collector.clone();
    if c.sinks.is_empty() {
        c.sinks.push(match target {
            CollectorTarget::ThisServer { listen, token, tls_cert } => {
                let ip = if listen.ip().is_unspecified() { std::net::Ipv4Addr::LOCALHOST.into() } else { listen.ip() };
                let url = match &tls_cert {
                    Some(_) => format!("https://localhost:{}/api/v1/write", listen.port()),
                    None => format!("http://{}/api/v1/write", SocketAddr::new(ip, listen.port())),
                };
                argus_collector::config::SinkConfig { url: Some(url), token, ca_file: tls_cert, ..Default::default() }
            }
            CollectorTarget::Remote(p) => remote_sink(&p)?,
            CollectorTarget::Configured => anyhow::bail!(
                "the collector role has nowhere to write: this process runs no store, and [collector] names no \
                 sinks (add [[collector.sink]], or run with --no-collector)"
            ),
        });
    }
    if c.data_dir.is_none() {
        c.data_dir = Some(data_dir.join("collector"));
    }
    let valid = c.validate("[collector]")?;
    Ok(argus_collector::Agent::build(valid))
}

/// The collector's sink for a VictoriaMetrics store (single-node or cluster): remote write to its
/// write URL with its bearer token (or token file) and CA file, and events (text fields) as line protocol beside it.
/// Any other store, or one that needs what a sink cannot send (basic auth), is refused with the
/// reason: name the sink in [collector] instead.
fn remote_sink(p: &argus_store::backend::PrometheusOptions) -> Result<argus_collector::config::SinkConfig> {
    let refuse = |why: &str| {
        anyhow::anyhow!(
            "the collector cannot write to [store.remote] by itself ({why}): add [[collector.sink]] for it, or run \
             with --no-collector"
        )
    };
    let Some(events) = &p.line_protocol_url else {
        return Err(refuse(&format!("flavour \"{}\" stores no events", p.flavour.name())));
    };
    if p.write != backend::WriteProtocol::RemoteWrite {
        return Err(refuse("it is written with line protocol"));
    }
    // A token file is handed on as a file, which the sink reads at its start.
    let (token, token_file) = match (&p.http.auth, p.http.auth.file()) {
        (backend::Auth::None, _) => (None, None),
        (backend::Auth::Bearer(_), Some(f)) => (None, Some(f.path.clone())),
        (backend::Auth::Bearer(t), None) => (t.current().map(|t| t.expose().to_string()), None),
        (backend::Auth::Basic { .. }, _) => return Err(refuse("it uses basic auth")),
    };
    Ok(argus_collector::config::SinkConfig {
        url: Some(p.write_url.to_string()),
        events_url: Some(events.to_string()),
        token,
        token_file,
        ca_file: p.http.ca_file.clone(),
        ..Default::default()
    })
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "Cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = term => {},
        _ = tokio::signal::ctrl_c() => {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_collector_writes_to_the_remote_store_with_its_token_or_its_token_file() {
        let opts = |auth: &str| {
            let spec: backend::RemoteSpec = toml::from_str(&format!("url = \"http://vm:8428\"\n{auth}")).unwrap();
            spec.validate().unwrap()
        };
        let s = remote_sink(&opts("bearer_token_file = \"/run/secrets/store-token\"")).unwrap();
        assert_eq!((s.token, s.token_file), (None, Some(PathBuf::from("/run/secrets/store-token"))));
        let s = remote_sink(&opts("bearer_token = \"argus_t\"")).unwrap();
        assert_eq!((s.token.as_deref(), s.token_file), (Some("argus_t"), None));
        let e = remote_sink(&opts("basic_auth = { username = \"u\", password_file = \"/run/p\" }")).unwrap_err();
        assert!(e.to_string().contains("(it uses basic auth)"), "{e}");
    }
}
