//! The agent: builds sources and sinks from a validated config, runs the sources of each interval in
//! rounds on a blocking thread, each with its own deadline (`rounds`), stamps the global labels, and
//! hands every batch to every sink.

use crate::batch::Batch;
use crate::config::Valid;
use crate::emit::{Emit, now_ms, self_points};
use crate::metrics::SelfMetrics;
use crate::sink::{Sink, SinkError};
use crate::source::{self, Scheduled, SourceError, Task};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

mod rounds;

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
        let mut by_interval: BTreeMap<Duration, Vec<Scheduled>> = BTreeMap::new();
        for s in self.sources {
            by_interval.entry(s.interval).or_default().push(s);
        }
        for (interval, sources) in by_interval {
            source_tasks.push(tokio::spawn(emit.clone().run_rounds(sources, interval, stop_rx.clone())));
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

/// This machine's hostname; "localhost" when it cannot be read.
fn hostname() -> String {
    let n = rustix::system::uname();
    let name = n.nodename().to_string_lossy().trim().to_string();
    if name.is_empty() { "localhost".into() } else { name }
}
