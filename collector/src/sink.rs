//! Sinks: ship batches to a store by Prometheus remote write or InfluxDB line protocol, batching by
//! size and time, and spool what cannot be delivered.
//!
//! Order and loss: a body goes straight to the network only while the spool is empty and no retry is
//! pending; otherwise it is appended to the spool, and the spool is drained front first. So bodies
//! arrive in the order they were made, and nothing is lost while the spool has room (1 GiB by default:
//! hours of a node's metrics). Retries back off exponentially with full jitter, and wait at least as
//! long as a 429/503's Retry-After says.

use crate::batch::Batch;
use crate::config::{SinkFormat, ValidSink};
use crate::metrics::{SelfMetrics, SinkLabel};
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::Write;
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

pub mod remote_write;
pub mod spool;

use spool::{Kind, Record, Spool};

/// Spool records sent per turn of the loop, so new batches keep being taken in while a long spool drains.
const DRAIN_PER_TURN: usize = 16;
/// The longest a Retry-After is honoured for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error(transparent)]
    Spool(#[from] spool::SpoolError),
    #[error("http client: {0}")]
    Client(String),
}

/// Why one request failed.
#[derive(Debug)]
enum SendError {
    /// Worth trying again later (connection refused, timeout, 429, 5xx), not before `retry_after`.
    Retry { reason: String, retry_after: Option<Duration> },
    /// The server refused the data itself; sending it again would fail again.
    Rejected(String),
    /// Nowhere to send this kind of body (events without an events URL).
    NoEndpoint,
}

pub struct Sink {
    cfg: ValidSink,
    client: reqwest::Client,
    spool: Spool,
    metrics: SelfMetrics,
    label: SinkLabel,
    pending: Batch,
    pending_samples: usize,
    pending_since: Option<Instant>,
    backoff: Duration,
    retry_at: Option<Instant>,
}

impl Sink {
    /// Opens the sink's spool under `data_dir/spool/<name>` (IO).
    pub fn build(cfg: ValidSink, data_dir: &Path, metrics: SelfMetrics) -> Result<Sink, SinkError> {
        let (spool, lost) =
            Spool::open(&data_dir.join("spool").join(&cfg.name), cfg.spool_max_bytes, cfg.spool_segment_bytes)?;
        metrics.dropped(&cfg.name, "spool_corrupt", lost);
        // No redirects: following one turns the POST into a GET without its body, whose 2xx would count
        // the batch as delivered. A redirect is answered as a failure that names where it points.
        let mut client =
            reqwest::Client::builder().timeout(cfg.timeout).no_proxy().redirect(reqwest::redirect::Policy::none());
        if let Some(path) = &cfg.ca_file {
            client = crate::source::scrape::trust_ca_file(client, path).map_err(SinkError::Client)?;
        }
        let client = client.build().map_err(|e| SinkError::Client(e.to_string()))?;
        let label = SinkLabel { sink: cfg.name.clone() };
        metrics.spool(&label, spool.bytes(), spool.len());
        let retry_at = (!spool.is_empty()).then(Instant::now);
        Ok(Sink {
            backoff: cfg.min_backoff,
            cfg,
            client,
            spool,
            metrics,
            label,
            pending: Batch::new(),
            pending_samples: 0,
            pending_since: None,
            retry_at,
        })
    }

    /// Runs until the sender side closes, then flushes what is pending (to the store or the spool).
    pub async fn run(mut self, mut rx: mpsc::Receiver<Batch>) {
        loop {
            let flush_at = self.pending_since.map(|t| t + self.cfg.flush_interval);
            tokio::select! {
                b = rx.recv() => match b {
                    Some(mut b) => {
                        self.pending_samples += b.samples();
                        self.pending.append(&mut b);
                        self.pending_since.get_or_insert_with(Instant::now);
                        if self.pending_samples >= self.cfg.max_samples {
                            self.flush().await;
                        }
                    }
                    None => break,
                },
                _ = sleep_until(flush_at) => self.flush().await,
                _ = sleep_until(self.retry_at) => self.drain().await,
            }
        }
        self.flush().await;
        // One last try, so a clean stop with the store up leaves an empty spool.
        if self.retry_at.is_some_and(|t| t <= Instant::now()) || !self.spool.is_empty() {
            self.retry_at = Some(Instant::now());
            self.drain_all_once().await;
        }
    }

    /// Encodes what is pending and sends it, or spools it to keep the order.
    async fn flush(&mut self) {
        self.pending_since = None;
        self.pending_samples = 0;
        if self.pending.is_empty() {
            return;
        }
        let mut batch = std::mem::take(&mut self.pending);
        if self.cfg.format == SinkFormat::LineProtocol {
            let gone = batch.retain_finite();
            self.metrics.dropped(&self.cfg.name, "not_finite", gone);
        }
        for rec in encode(&batch, self.cfg.format, self.cfg.max_samples) {
            if self.spool.is_empty() && self.retry_at.is_none() {
                match self.send(&rec).await {
                    Ok(()) => self.sent(&rec),
                    Err(SendError::Retry { reason, retry_after }) => {
                        tracing::warn!(sink = %self.cfg.name, %reason, "Store unreachable, spooling");
                        self.schedule_retry(retry_after);
                        self.spool_it(&rec);
                    }
                    Err(e) => self.give_up(&rec, e),
                }
            } else {
                self.spool_it(&rec);
            }
        }
    }

    /// Sends spooled records front first, a few per turn.
    async fn drain(&mut self) {
        for _ in 0..DRAIN_PER_TURN {
            let rec = match self.spool.front() {
                Ok(Some(r)) => r,
                Ok(None) => {
                    self.retry_at = None;
                    self.backoff = self.cfg.min_backoff;
                    return;
                }
                Err(error) => {
                    tracing::error!(sink = %self.cfg.name, %error, "Spool read failed");
                    self.schedule_retry(None);
                    return;
                }
            };
            match self.send(&rec).await {
                Ok(()) => {
                    self.sent(&rec);
                    self.pop();
                    self.backoff = self.cfg.min_backoff;
                }
                Err(SendError::Retry { reason, retry_after }) => {
                    tracing::debug!(sink = %self.cfg.name, %reason, "Store still unreachable");
                    self.schedule_retry(retry_after);
                    return;
                }
                Err(e) => {
                    self.give_up(&rec, e);
                    self.pop();
                }
            }
        }
        // More to send: come back at once, after taking in what arrived meanwhile.
        self.retry_at = Some(Instant::now());
    }

    async fn drain_all_once(&mut self) {
        while self.retry_at.is_some() {
            let before = self.spool.len();
            self.drain().await;
            if self.retry_at.is_some_and(|t| t > Instant::now()) || self.spool.len() == before {
                break;
            }
        }
    }

    async fn send(&self, rec: &Record) -> Result<(), SendError> {
        let (url, content_type, encoding) = match rec.kind {
            Kind::RemoteWrite => (&self.cfg.url, "application/x-protobuf", "snappy"),
            Kind::LineProtocol => (&self.cfg.url, "text/plain; charset=utf-8", "gzip"),
            Kind::Events => match &self.cfg.events_url {
                Some(u) => (u, "text/plain; charset=utf-8", "gzip"),
                None => return Err(SendError::NoEndpoint),
            },
        };
        let mut req = self
            .client
            .post(url)
            .header("Content-Type", content_type)
            .header("Content-Encoding", encoding)
            .body(rec.body.clone());
        if rec.kind == Kind::RemoteWrite {
            req = req.header("X-Prometheus-Remote-Write-Version", "0.1.0");
        }
        if let Some(t) = &self.cfg.token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.map_err(|e| SendError::Retry { reason: e.to_string(), retry_after: None })?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s).min(MAX_RETRY_AFTER));
        if status.is_redirection() {
            // A proxy or a moved URL: keep the data (spooled) until the sink's url is fixed.
            let to = resp.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("nowhere");
            return Err(SendError::Retry {
                reason: format!("{status}: redirected to {to}; set the sink's url to where the store answers"),
                retry_after,
            });
        }
        let body = resp.text().await.unwrap_or_default();
        let reason = format!("{status}: {}", body.chars().take(300).collect::<String>());
        if status.as_u16() == 429 || status.is_server_error() || status.as_u16() == 408 {
            Err(SendError::Retry { reason, retry_after })
        } else {
            Err(SendError::Rejected(reason))
        }
    }

    /// Backoff: exponential with full jitter, never shorter than the server's Retry-After.
    fn schedule_retry(&mut self, retry_after: Option<Duration>) {
        let jittered = self.backoff.mul_f64(0.5 + fastrand::f64() * 0.5);
        let wait = retry_after.map_or(jittered, |r| r.max(jittered));
        self.retry_at = Some(Instant::now() + wait);
        self.backoff = (self.backoff * 2).min(self.cfg.max_backoff);
    }

    fn spool_it(&mut self, rec: &Record) {
        match self.spool.push(rec) {
            Ok(dropped) => {
                self.metrics.points_spooled.get_or_create(&self.label).inc_by(u64::from(rec.values));
                if dropped > 0 {
                    tracing::warn!(sink = %self.cfg.name, dropped, "Spool full, dropped its oldest points");
                    self.metrics.dropped(&self.cfg.name, "spool_full", dropped);
                }
            }
            Err(error) => {
                tracing::error!(sink = %self.cfg.name, %error, "Spool write failed, points dropped");
                self.metrics.dropped(&self.cfg.name, "spool_error", u64::from(rec.values));
            }
        }
        if self.retry_at.is_none() {
            self.retry_at = Some(Instant::now());
        }
        self.metrics.spool(&self.label, self.spool.bytes(), self.spool.len());
    }

    fn pop(&mut self) {
        if let Err(error) = self.spool.pop() {
            tracing::error!(sink = %self.cfg.name, %error, "Spool acknowledge failed");
        }
        self.metrics.spool(&self.label, self.spool.bytes(), self.spool.len());
    }

    fn sent(&self, rec: &Record) {
        self.metrics.points_sent.get_or_create(&self.label).inc_by(u64::from(rec.values));
    }

    fn give_up(&self, rec: &Record, e: SendError) {
        let (reason, text) = match e {
            SendError::Rejected(r) => ("rejected", r),
            SendError::NoEndpoint => ("no_endpoint", "no events_url for events".to_string()),
            SendError::Retry { reason, .. } => ("rejected", reason),
        };
        tracing::error!(sink = %self.cfg.name, values = rec.values, reason = %text, "Store refused a batch, dropped");
        self.metrics.dropped(&self.cfg.name, reason, u64::from(rec.values));
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Request bodies for a batch: samples in chunks of at most `max_samples`, in the sink's format, and
/// (for remote write, which cannot carry text) events as line protocol for the events URL.
pub fn encode(batch: &Batch, format: SinkFormat, max_samples: usize) -> Vec<Record> {
    let mut out = Vec::new();
    match format {
        SinkFormat::RemoteWrite => {
            let (samples, _) = batch.to_series();
            for chunk in samples.chunks(max_samples.max(1)) {
                out.push(Record {
                    kind: Kind::RemoteWrite,
                    values: chunk.len() as u32,
                    body: remote_write::encode(chunk),
                });
            }
            let events: Vec<_> = batch
                .points
                .iter()
                .filter(|p| p.fields.iter().any(|(_, v)| matches!(v, crate::batch::FieldValue::Text(_))))
                .map(|p| {
                    let mut p = p.clone();
                    p.fields.retain(|(_, v)| matches!(v, crate::batch::FieldValue::Text(_)));
                    p
                })
                .collect();
            if !events.is_empty() {
                let b = Batch { points: events };
                out.push(Record {
                    kind: Kind::Events,
                    values: b.points.iter().map(|p| p.fields.len() as u32).sum(),
                    body: gzip(&b.to_line_protocol()),
                });
            }
        }
        SinkFormat::LineProtocol => {
            let mut chunk = Batch::new();
            let mut values = 0usize;
            for p in &batch.points {
                values += p.fields.len();
                chunk.points.push(p.clone());
                if values >= max_samples {
                    out.push(Record {
                        kind: Kind::LineProtocol,
                        values: values as u32,
                        body: gzip(&chunk.to_line_protocol()),
                    });
                    chunk = Batch::new();
                    values = 0;
                }
            }
            if !chunk.is_empty() {
                out.push(Record {
                    kind: Kind::LineProtocol,
                    values: values as u32,
                    body: gzip(&chunk.to_line_protocol()),
                });
            }
        }
    }
    out
}

fn gzip(text: &str) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::with_capacity(text.len() / 4), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = e.write_all(text.as_bytes());
    e.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests;
