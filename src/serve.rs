//! `argus serve`: opens the store, serves every API on one listener, runs upkeep, and on SIGTERM or
//! Ctrl-C stops accepting, flushes the head into blocks and exits 0.

use crate::config::{self, Config};
use anyhow::{Context, Result};
use argus_store::Db;
use argus_store::backend::{self, RemoteOptions, StoreBackend};
use std::net::SocketAddr;
use std::path::PathBuf;
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
    let mut opts = cfg.store_options(&PathBuf::from("data"))?;
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
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(serve(cfg, opts, listen, args.no_collector))
}

async fn serve(cfg: Config, opts: argus_store::Options, listen: SocketAddr, no_collector: bool) -> Result<()> {
    if let Some(remote) = cfg.remote_backend()? {
        return serve_remote(remote, listen).await;
    }
    let data_dir = opts.data_dir.clone();
    let db = tokio::task::spawn_blocking(move || Db::open(opts)).await?.context("opening the store")?;
    let db = Arc::new(db);
    let mut registry = prometheus_client::registry::Registry::default();
    // === alertd ===
    let limits = cfg.limits()?;
    let backend: Arc<dyn StoreBackend> = Arc::new(backend::Embedded::new(db.clone(), limits.query.clone()));
    let alertd =
        crate::alertd::start(&cfg.alertd, &data_dir, backend.clone(), &mut registry).context("starting alertd")?;
    // === analyzer ===
    let intake = alertd.as_ref().map(|a| a.intake.clone());
    let analyzer = crate::analyze::build(&cfg.analyzer, &data_dir, backend, intake, &mut registry)
        .context("starting the analyzer")?;
    let state = argus_store::http::State::new(db.clone(), limits, cfg.auth.tokens.clone(), registry);
    let app = argus_store::http::router(state);
    let app = match &alertd {
        Some(a) => app.merge(a.router.clone()),
        None => app,
    };
    let (analyzer_stop, analyzer_stopped) = tokio::sync::oneshot::channel::<()>();
    let (app, analyzer) = match analyzer {
        Some(a) => {
            let task = tokio::spawn(a.analyzer.run(async move {
                let _ = analyzer_stopped.await;
            }));
            (app.merge(a.router), Some(task))
        }
        None => (app, None),
    };
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("listening on {listen}"))?;
    // With port 0 the system picks one: report the real address.
    let listen = listener.local_addr().unwrap_or(listen);
    tracing::info!(
        listen = %listen,
        data_dir = %data_dir.display(),
        backend = "embedded",
        "Argus is up: write to http://{listen}/api/v2/write, query at http://{listen}/api/v1/query, metrics at http://{listen}/metrics"
    );
    // The node collector of this machine, shipping to this server over loopback remote write (so its
    // spool covers the store being busy or restarting) unless [collector] names its own sinks.
    let (collector_stop, collector_stopped) = tokio::sync::oneshot::channel::<()>();
    let collector = if no_collector {
        None
    } else {
        let agent = collector_agent(&cfg, listen, &data_dir)?;
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
    let (server_stop, server_stopped) = tokio::sync::oneshot::channel::<()>();
    let mut server = tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = server_stopped.await;
            })
            .into_future(),
    );
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
/// (loopback when listening on all addresses, with the first write token), and spools under the
/// store's data directory.
fn collector_agent(cfg: &Config, listen: SocketAddr, data_dir: &std::path::Path) -> Result<argus_collector::Agent> {
    let mut c = cfg.collector.clone();
    if c.sinks.is_empty() {
        let ip = if listen.ip().is_unspecified() { std::net::Ipv4Addr::LOCALHOST.into() } else { listen.ip() };
        c.sinks.push(argus_collector::config::SinkConfig {
            url: Some(format!("http://{}/api/v1/write", SocketAddr::new(ip, listen.port()))),
            token: cfg.auth.tokens.first().cloned(),
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
async fn serve_remote(remote: RemoteOptions, listen: SocketAddr) -> Result<()> {
    let backend: Arc<dyn StoreBackend> = backend::connect(remote).context("building the store backend")?;
    let app = argus_store::http::health_router(Default::default());
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("listening on {listen}"))?;
    let listen = listener.local_addr().unwrap_or(listen);
    tracing::info!(
        listen = %listen,
        backend = backend.name(),
        store = %backend.describe(),
        "Argus is up on a remote store: health at http://{listen}/-/healthy, metrics at http://{listen}/metrics"
    );
    axum::serve(listener, app).with_graceful_shutdown(shutdown_signal()).await?;
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
