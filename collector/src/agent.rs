//! The agent: builds sources and sinks from a validated config, runs each source on its own interval
//! on a blocking thread with a deadline, stamps the global labels, and hands every batch to every sink.

use crate::batch::Batch;
use crate::config::Valid;
use crate::emit::{Emit, now_ms, self_points};
use crate::metrics::{SelfMetrics, SourceLabel};
use crate::sink::{Sink, SinkError};
use crate::source::{self, Scheduled, Source, SourceError, Task, Ticker};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{mpsc, watch};

/// Batches a sink may hold in its queue before sources wait for it.
const SINK_QUEUE: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("sink {name}: {source}")]
    Sink { name: String, source: SinkError },
    #[error("listening on {addr}: {source}")]
    Listen { addr: std::net::SocketAddr, source: std::io::Error },
}

pub struct Agent {
    cfg: Valid,
    global: Arc<Vec<(String, String)>>,
    sources: Vec<Scheduled>,
    tasks: Vec<Box<dyn Task>>,
    metrics: SelfMetrics,
}

impl Agent {
    /// Builds every source (IO: the hostname, NVML). Sinks are opened by `run`.
    pub fn build(mut cfg: Valid) -> Agent {
        if !cfg.labels.contains_key("host") {
            cfg.labels.insert("host".into(), hostname());
        }
        let global = Arc::new(cfg.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
        let sources = source::build(&cfg);
        let tasks = source::tasks(&cfg);
        Agent { cfg, global, sources, tasks, metrics: SelfMetrics::default() }
    }

    pub fn metrics(&self) -> &SelfMetrics {
        &self.metrics
    }

    /// One collection of every polled source, in order, without deadlines: for `argus collect --once`.
    /// Push and stream sources (`training`, `scrape`) have no "once" and are left out.
    /// Returns the stamped batch and each failed source with its error.
    pub fn collect_once(&mut self) -> (Batch, Vec<(&'static str, SourceError)>) {
        let now = now_ms();
        let mut batch = Batch::new();
        let mut errors = Vec::new();
        for s in &mut self.sources {
            let started = Instant::now();
            let r = s.source.collect(now, &mut batch);
            let ok = r.is_ok();
            self_points(s.source.name(), now, started.elapsed(), ok, &mut batch);
            if let Err(e) = r {
                errors.push((s.source.name(), e));
            }
        }
        batch.stamp(&self.global);
        (batch, errors)
    }

    /// Runs until `shutdown` completes, then stops the sources and lets every sink flush (to its store
    /// or its spool).
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), AgentError> {
        let mut senders = Vec::new();
        let mut sink_tasks = Vec::new();
        for s in self.cfg.sinks.clone() {
            let name = s.name.clone();
            let sink = Sink::build(s, &self.cfg.data_dir, self.metrics.clone())
                .map_err(|source| AgentError::Sink { name, source })?;
            let (tx, rx) = mpsc::channel(SINK_QUEUE);
            senders.push(tx);
            sink_tasks.push(tokio::spawn(sink.run(rx)));
        }
        let listener = match self.cfg.listen {
            Some(addr) => {
                Some(tokio::net::TcpListener::bind(addr).await.map_err(|source| AgentError::Listen { addr, source })?)
            }
            None => None,
        };
        let (stop_tx, stop_rx) = watch::channel(false);
        if let Some(l) = listener {
            let app = crate::router(self.metrics.clone());
            let mut stop = stop_rx.clone();
            tokio::spawn(async move {
                let _ = axum::serve(l, app)
                    .with_graceful_shutdown(async move {
                        let _ = stop.changed().await;
                    })
                    .await;
            });
        }
        let emit = Emit { global: self.global.clone(), metrics: self.metrics.clone(), senders };
        let mut source_tasks = Vec::new();
        for s in self.sources {
            source_tasks.push(tokio::spawn(emit.clone().run_polled(s, stop_rx.clone())));
        }
        for t in self.tasks {
            source_tasks.push(tokio::spawn(t.run(emit.clone(), stop_rx.clone())));
        }
        drop(emit);
        tracing::info!(
            sources = source_tasks.len(),
            sinks = sink_tasks.len(),
            labels = ?self.cfg.labels,
            "Collector running"
        );
        shutdown.await;
        let _ = stop_tx.send(true);
        for t in source_tasks {
            let _ = t.await;
        }
        for t in sink_tasks {
            let _ = t.await;
        }
        Ok(())
    }
}

/// What a collection on the blocking pool hands back: the source, its points, and how it went.
type Collected = (Box<dyn Source>, Batch, Result<(), SourceError>);

// The polled sources' loop: it needs `source`'s scheduling, so it lives here, not in `emit`.
impl Emit {
    async fn run_polled(self, s: Scheduled, stop: watch::Receiver<bool>) {
        let Scheduled { source, interval, timeout } = s;
        let name = source.name();
        let label = SourceLabel { source: name.to_string() };
        let mut slot: Option<Box<dyn Source>> = Some(source);
        let mut late: Option<tokio::task::JoinHandle<Collected>> = None;
        let mut ticker = Ticker::new(interval, stop);
        while ticker.next().await {
            // A collection that overran its deadline still holds the source: wait for it to come back,
            // dropping what it read (it is late), and skip this tick.
            if let Some(h) = late.take() {
                if !h.is_finished() {
                    late = Some(h);
                    continue;
                }
                match h.await {
                    Ok((src, _, _)) => slot = Some(src),
                    Err(_) => return,
                }
            }
            let Some(mut src) = slot.take() else { return };
            let now = now_ms();
            let started = Instant::now();
            let handle = tokio::task::spawn_blocking(move || {
                let mut b = Batch::new();
                let r = src.collect(now, &mut b);
                (src, b, r)
            });
            let mut handle = handle;
            let (mut batch, result) = match tokio::time::timeout(timeout, &mut handle).await {
                Ok(Ok((src, b, r))) => {
                    slot = Some(src);
                    (b, r)
                }
                // The source panicked: it is gone; the others go on.
                Ok(Err(error)) => {
                    tracing::error!(source = name, %error, "Source panicked, stopped");
                    self.metrics.source_success.get_or_create(&label).set(0);
                    return;
                }
                Err(_) => {
                    late = Some(handle);
                    (Batch::new(), Err(SourceError::Backend(format!("collection took longer than {timeout:?}"))))
                }
            };
            let elapsed = started.elapsed();
            let ok = result.is_ok();
            let unavailable = matches!(result, Err(SourceError::Unavailable(_)));
            if let Err(error) = result {
                if unavailable {
                    tracing::warn!(source = name, %error, "Source unavailable on this machine; not polled again");
                } else {
                    tracing::warn!(source = name, %error, "Collection failed");
                }
            }
            self.report(name, now, elapsed, ok, &mut batch);
            if !self.send(batch).await {
                return;
            }
            if unavailable {
                return;
            }
        }
    }
}

/// This machine's hostname; "localhost" when it cannot be read.
fn hostname() -> String {
    let n = rustix::system::uname();
    let name = n.nodename().to_string_lossy().trim().to_string();
    if name.is_empty() { "localhost".into() } else { name }
}
