//! `argus serve`: opens the store, serves every API on one listener, runs upkeep, and on SIGTERM or
//! Ctrl-C stops accepting, flushes the head into blocks and exits 0.

use crate::auth::{self, Auth, Scope};
use crate::config::{self, Config};
use anyhow::{Context, Result};
use argus_store::Db;
use argus_store::backend::{self, RemoteOptions, StoreBackend};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

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
    /// Do not run the local node collector.
    #[arg(long)]
    no_collector: bool,
    /// Also replay real GPU-cluster telemetry as a demo cluster (labelled `demo="true"`) with a fault
    /// injected; the data directory defaults to ./data-demo and notifications go to a log there.
    #[arg(long)]
    demo: bool,
}

pub fn run(args: Args) -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cfg = match &args.config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    // A demo never mixes with real data: it has its own default data directory.
    let default_dir = if args.demo { "data-demo" } else { "data" };
    let mut opts = cfg.store_options(&PathBuf::from(default_dir))?;
    if let Some(d) = &args.data_dir {
        opts.data_dir = d.clone();
    }
    if let Some(r) = &args.retention {
        opts.retention = config::duration("--retention", r)?;
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
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let max_concurrent = cfg.server.max_concurrent_requests;
    let listen = Listen { addr: listen, auth, tls, max_concurrent };
    rt.block_on(serve(cfg, opts, listen, Mode { no_collector: args.no_collector, demo: args.demo }))
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

/// What runs besides the store and the APIs.
struct Mode {
    no_collector: bool,
    demo: bool,
}

async fn serve(mut cfg: Config, opts: argus_store::Options, mut listen: Listen, mode: Mode) -> Result<()> {
    let no_collector = mode.no_collector;
    if let Some(remote) = cfg.remote_backend()? {
        if mode.demo {
            anyhow::bail!("--demo runs on the embedded store; the configuration names a remote one");
        }
        return serve_remote(remote, listen).await;
    }
    let data_dir = opts.data_dir.clone();
    let db = tokio::task::spawn_blocking(move || Db::open(opts)).await?.context("opening the store")?;
    let db = Arc::new(db);
    // === demo: its receiver and alertd configuration first, and history before the analyzer warms up ===
    let demo = match mode.demo {
        true => Some(crate::demo::prepare(&mut cfg, &data_dir, db.clone(), listen.addr, listen.tls.is_some()).await?),
        false => None,
    };
    let mut registry = prometheus_client::registry::Registry::default();
    listen.auth.register(&mut registry);
    crate::malloc::register_stats(&mut registry);
    // === alertd ===
    let limits = cfg.limits()?;
    let backend: Arc<dyn StoreBackend> = Arc::new(backend::Embedded::new(db.clone(), limits.query.clone()));
    let alertd =
        crate::alertd::start(&cfg.alertd, &data_dir, backend.clone(), &mut registry).context("starting alertd")?;
    // === analyzer ===
    let intake = alertd.as_ref().map(|a| a.intake.clone());
    let capacity = alertd.as_ref().map(|a| a.capacity.clone());
    let analyzer = crate::analyze::build(&cfg.analyzer, &data_dir, backend, intake, capacity, &mut registry)
        .context("starting the analyzer")?;
    let state = argus_store::http::State::new(db.clone(), limits, registry);
    let app = argus_store::http::router(state);
    let app = match &alertd {
        Some(a) => app.merge(a.router.clone()),
        None => app,
    };
    let parts = crate::openapi::Parts { alertd: alertd.is_some(), analyzer: analyzer.is_some(), demo: demo.is_some() };
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
    let collector_token = match no_collector || listen.auth.is_open() || !cfg.collector.sinks.is_empty() {
        true => None,
        false => Some(listen.auth.add_internal("embedded-collector", &[Scope::Write])?),
    };
    let tls_cert = cfg.server.tls_cert.clone().filter(|_| listen.tls.is_some());
    let scheme = listen.scheme();
    let (server_stop, server_stopped) = tokio::sync::oneshot::channel::<()>();
    let (listen, server) = listen
        .start(app, async move {
            let _ = server_stopped.await;
        })
        .await?;
    tracing::info!(
        listen = %listen,
        data_dir = %data_dir.display(),
        backend = "embedded",
        "Argus is up: write to {scheme}://{listen}/api/v2/write, query at {scheme}://{listen}/api/v1/query, metrics at {scheme}://{listen}/metrics"
    );
    let base = format!("{scheme}://{listen}");
    println!("Argus is up{}", if demo.is_some() { " with the DEMO cluster (demo data, not yours)" } else { "" });
    println!("  status page    {base}/");
    println!("  API            {base}/api/v1/query  (Prometheus), {base}/api/v2/alerts  (Alertmanager)");
    println!("  metrics        {base}/metrics");
    println!("  data dir       {}", data_dir.display());
    let demo_task = demo.map(|d| {
        d.print();
        d.start()
    });
    // The node collector of this machine, shipping to this server over loopback remote write (so its
    // spool covers the store being busy or restarting) unless [collector] names its own sinks.
    let (collector_stop, collector_stopped) = tokio::sync::oneshot::channel::<()>();
    let collector = if no_collector {
        None
    } else {
        let agent = collector_agent(&cfg, listen, &data_dir, collector_token, tls_cert)?;
        Some(tokio::spawn(agent.run(async move {
            let _ = collector_stopped.await;
        })))
    };
    let upkeep_db = db.clone();
    let upkeep = tokio::spawn(async move {
        // Every second, so a head filling fast is flushed before writes must be refused.
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            let d = upkeep_db.clone();
            if let Ok(Err(e)) = tokio::task::spawn_blocking(move || d.maintain()).await {
                tracing::error!(error = %e, "Store upkeep failed");
            }
        }
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
    upkeep.abort();
    if let Some(d) = demo_task {
        d.abort();
    }
    drop(alertd);
    tracing::info!("Shutting down: flushing the head into blocks");
    let d = db.clone();
    tokio::task::spawn_blocking(move || d.flush()).await?.context("final flush")?;
    if let Ok(db) = Arc::try_unwrap(db) {
        db.close();
    }
    tracing::info!("Stopped cleanly");
    Ok(())
}

/// The `[collector]` section as `serve` runs it: without sinks of its own it writes to this server
/// (loopback when listening on all addresses, with `token`), and spools under the store's data
/// directory. Over TLS it connects to `localhost` and trusts the server's own certificate file, so
/// that certificate must name localhost (else configure a sink with the server's name).
fn collector_agent(
    cfg: &Config,
    listen: SocketAddr,
    data_dir: &std::path::Path,
    token: Option<String>,
    tls_cert: Option<PathBuf>,
) -> Result<argus_collector::Agent> {
    let mut c = cfg.collector.clone();
    if c.sinks.is_empty() {
        let ip = if listen.ip().is_unspecified() { std::net::Ipv4Addr::LOCALHOST.into() } else { listen.ip() };
        let url = match &tls_cert {
            Some(_) => format!("https://localhost:{}/api/v1/write", listen.port()),
            None => format!("http://{}/api/v1/write", SocketAddr::new(ip, listen.port())),
        };
        c.sinks.push(argus_collector::config::SinkConfig {
            url: Some(url),
            token,
            ca_file: tls_cert,
            ..Default::default()
        });
    }
    if c.data_dir.is_none() {
        c.data_dir = Some(data_dir.join("collector"));
    }
    let valid = c.validate("[collector]")?;
    Ok(argus_collector::Agent::build(valid))
}

/// With a remote store the embedded engine is not opened (no data directory is created). Until the
/// collector, analyzer and alertd that write and read through the backend exist, only health and self
/// metrics are served.
async fn serve_remote(remote: RemoteOptions, listen: Listen) -> Result<()> {
    let backend: Arc<dyn StoreBackend> = backend::connect(remote).context("building the store backend")?;
    let app = argus_store::http::health_router(Default::default());
    let scheme = listen.scheme();
    let (listen, server) = listen.start(app, shutdown_signal()).await?;
    tracing::info!(
        listen = %listen,
        backend = backend.name(),
        store = %backend.describe(),
        "Argus is up on a remote store: health at {scheme}://{listen}/-/healthy, metrics at {scheme}://{listen}/metrics"
    );
    server.await?;
    tracing::info!("Stopped cleanly");
    Ok(())
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
