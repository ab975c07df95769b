//! Sources: one module per thing read, each named after it (`gpu`, `host`, `disk`, `net`, `events`,
//! `training`, `scrape`, `replay`); that name is also its config key and its `source` label in self metrics.
//!
//! Push and stream sources (`training`'s endpoint and logs, `scrape`'s HTTP requests) are async [`Task`]s that hand batches to the same [`Emit`] the polled sources' loop uses.
//!
//! A source is synchronous: the agent calls [`Source::collect`] on a blocking thread with a deadline,
//! on the source's own interval. It writes what it could read into the batch even when part of it
//! failed, and reports the first failure; the agent keeps the points and marks the source unsuccessful.
//! A failing source never fails a collection of the others (node_exporter's rule).

use crate::batch::Batch;
use crate::config::Valid;
use crate::emit::Emit;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::watch;

pub mod disk;
pub mod events;
pub mod gpu;
pub mod host;
pub mod net;
mod procfile;
pub mod replay;
pub mod scrape;
pub mod tail;
pub mod training;

/// A polled source of points.
pub trait Source: Send {
    /// The config key and `source` label: `gpu`, `host`, `disk`, `net`, `events`.
    fn name(&self) -> &'static str;

    /// Reads once and appends points stamped `now` (milliseconds since the Unix epoch) to `batch`.
    fn collect(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError>;
}

/// A push or stream source: an async task that hands batches to `emit` until `stop` turns true. It
/// reports its own rounds (`Emit::report`) and never returns early on a failure it can outlive.
pub trait Task: Send {
    /// The config key and `source` label.
    fn name(&self) -> &'static str;

    fn run(self: Box<Self>, emit: Emit, stop: watch::Receiver<bool>) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// A source's clock: ticks on its interval (a missed tick is skipped, not made up) until the agent stops.
pub(crate) struct Ticker {
    tick: tokio::time::Interval,
    stop: watch::Receiver<bool>,
}

impl Ticker {
    pub(crate) fn new(every: Duration, stop: watch::Receiver<bool>) -> Ticker {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        Ticker { tick, stop }
    }

    /// Waits for the next tick; false once the agent stops.
    pub(crate) async fn next(&mut self) -> bool {
        tokio::select! {
            _ = self.tick.tick() => true,
            _ = self.stop.changed() => false,
        }
    }
}

/// Why a collection failed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The source cannot run on this machine (no NVIDIA library, no such file tree). The agent
    /// reports it once and stops polling the source; the rest keep working.
    #[error("unavailable: {0}")]
    Unavailable(String),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {reason}")]
    Parse { path: PathBuf, reason: String },
    /// A device or library call failed (NVML).
    #[error("{0}")]
    Backend(String),
}

impl SourceError {
    pub fn io(path: &Path, source: std::io::Error) -> SourceError {
        SourceError::Io { path: path.to_path_buf(), source }
    }

    pub fn parse(path: &Path, reason: impl std::fmt::Display) -> SourceError {
        SourceError::Parse { path: path.to_path_buf(), reason: reason.to_string() }
    }
}

/// A built source with its schedule.
pub struct Scheduled {
    pub source: Box<dyn Source>,
    pub interval: Duration,
    pub timeout: Duration,
}

/// Builds every source switched on in the config: the one list of sources. A source that cannot even
/// be built (NVML missing) is still returned; it reports `Unavailable` on its first collection.
pub fn build(cfg: &Valid) -> Vec<Scheduled> {
    let mut out = Vec::new();
    let mut add = |source: Box<dyn Source>, interval, timeout| out.push(Scheduled { source, interval, timeout });
    if let Some(s) = &cfg.gpu {
        let attribution = cfg.gpu_attribution.as_ref();
        add(
            Box::new(gpu::Gpu::build(&s.settings, s.timeout, &cfg.procfs_root, &cfg.labels, attribution)),
            s.interval,
            s.timeout,
        );
    }
    if let Some(s) = &cfg.host {
        add(Box::new(host::Host::new(&cfg.procfs_root)), s.interval, s.timeout);
    }
    if let Some(s) = &cfg.disk {
        add(Box::new(disk::Disk::new(&cfg.procfs_root, s.settings.clone())), s.interval, s.timeout);
    }
    if let Some(s) = &cfg.net {
        add(Box::new(net::Net::new(&cfg.procfs_root, &cfg.sysfs_root, s.settings.clone())), s.interval, s.timeout);
    }
    if let Some(s) = &cfg.events {
        add(Box::new(events::Events::new(&s.settings)), s.interval, s.timeout);
    }
    if let Some(s) = &cfg.replay {
        add(Box::new(replay::Replay::load(&s.settings)), s.interval, s.timeout);
    }
    out
}

/// Builds every push and stream source switched on in the config (no IO: listeners open in `run`).
pub fn tasks(cfg: &Valid) -> Vec<Box<dyn Task>> {
    let mut out: Vec<Box<dyn Task>> = Vec::new();
    if let Some(s) = &cfg.training {
        out.push(Box::new(training::Training::new(s.interval, s.settings.clone())));
    }
    if let Some(s) = &cfg.scrape {
        out.push(Box::new(scrape::Scrape::new(s.interval, s.timeout, s.settings.clone())));
    }
    out
}

#[cfg(test)]
pub(crate) mod golden;
